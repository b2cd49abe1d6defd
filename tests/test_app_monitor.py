"""The training monitor: form validation, uploads, and live training in a real headless Chromium."""

import time

import pytest

from conftest import PanelServer, screenshot
from cofiviz.dashboards.monitor import UPLOAD, TrainingMonitor

# the largest number of rows any Bokeh data source with an "iteration" column holds: the points drawn
POINTS_JS = """() => { let best = 0;
    for (const doc of (window.Bokeh ? Bokeh.documents : [])) {
        const models = doc._all_models ? Array.from(doc._all_models.values()) : Array.from(doc.all_models);
        for (const m of models) {
            const d = m.data;
            if (d && d.iteration && typeof d.iteration.length === 'number') best = Math.max(best, d.iteration.length);
        }
    }
    return best; }"""


def test_any_registered_model_can_be_chosen_up_front():
    assert TrainingMonitor(model="cofirank").model == "cofirank"
    assert "CofiRank" in TrainingMonitor(model="cofirank")._form.objects[0].object
    with pytest.raises(ValueError, match="nosuch"):
        TrainingMonitor(model="nosuch")


def test_monitor_trains_in_a_worker_and_validates_input():
    m = TrainingMonitor(max_iter=4)
    m._on_run()
    assert m._work.thread is not None and m._work.join(120)
    assert list(m.history["iteration"]) == [1, 2, 3, 4]
    assert m.history[["train_ndcg@10", "valid_ap", "test_gap"]].notna().all().all()
    assert m._csv_bytes().read().startswith(b"iteration,")
    # out-of-range parameter: a message, no run
    name = next(n for n, w in m._form_widgets.items() if n == "reg")
    m._form_widgets[name].value = -1.0
    assert m._error.visible and "below its lower bound" in m._error.object
    m._on_run()
    assert "Cannot start" in m._error.object
    m._form_widgets[name].value = 0.05
    # malformed upload: a clear message naming the file and the row
    m.data = UPLOAD
    m._upload.filename = "mine.csv"
    m._upload.value = b"user,item,rating\n1,2,x\n"
    assert m._error.visible and "mine.csv" in m._error.object and "line 2" in m._error.object
    assert "/tmp" not in m._error.object


@pytest.fixture(scope="module")
def server():
    srv = PanelServer(["apps/monitor.py"])
    yield srv
    srv.close()


def _open(chromium, page_errors, server):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1100}))
    t0 = time.monotonic()
    page.goto(f"{server.url}/monitor", wait_until="networkidle")
    page.get_by_text("Ready.").first.wait_for(timeout=30_000)
    return page, time.monotonic() - t0


def _fill(page, label: str, value):
    box = page.locator(".bk-input-group").filter(has_text=label).locator("input").first
    box.fill(str(value))
    box.press("Enter")


def _set_long_run(page, max_iter: int = 5000):
    """Many iterations and no convergence test, so that the run lasts until Stop."""
    _fill(page, "Max iter", max_iter)
    _fill(page, "tol [", 0)
    page.wait_for_timeout(300)


def _wait_points(page, n, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pts = page.evaluate(POINTS_JS)
        if pts >= n:
            return pts
        time.sleep(0.25)
    return page.evaluate(POINTS_JS)


@pytest.mark.browser
def test_monitor_run_draws_points_and_stop_stops(server, chromium, page_errors):
    page, first_view = _open(chromium, page_errors, server)
    _set_long_run(page)
    page.get_by_role("button", name="Run").click()
    pts = _wait_points(page, 3)
    assert pts >= 3, f"only {pts} points drawn"
    screenshot(page, "monitor-running")
    page.get_by_role("button", name="Stop").click()
    page.get_by_text("stopped by a callback").first.wait_for(timeout=30_000)
    stopped_at = page.evaluate(POINTS_JS)
    time.sleep(1.5)
    assert page.evaluate(POINTS_JS) == stopped_at, "points kept arriving after Stop"
    assert stopped_at < 5000
    page.get_by_role("button", name="CSV").first.wait_for(timeout=10_000)
    screenshot(page, "monitor-stopped")
    assert page_errors.errors == [], page_errors.errors
    assert first_view < 15, f"first view took {first_view:.1f} s"


@pytest.mark.browser
def test_monitor_two_sessions_stay_independent_and_responsive(server, chromium, page_errors):
    a, _ = _open(chromium, page_errors, server)
    b, _ = _open(chromium, page_errors, server)
    _set_long_run(a)
    a.get_by_role("button", name="Run").click()
    assert _wait_points(a, 3) >= 3
    # session B responds within 1 s while A trains: choosing "Uploaded file" shows B's file input
    assert not b.locator("input[type=file]").first.is_visible()
    t0 = time.monotonic()
    b.locator(".bk-input-group").filter(has_text="Data").locator("select").first.select_option(UPLOAD)
    b.locator("input[type=file]").first.wait_for(state="visible", timeout=30_000)
    response = time.monotonic() - t0
    print(f"B responded in {response:.2f} s while A trained")
    # and B's model form still follows B's own choices
    b.locator(".bk-input-group").filter(has_text="Model").locator("select").first.select_option("poprec")
    b.locator("strong", has_text="PopRec").first.wait_for(timeout=30_000)
    # B saw none of A's training
    assert b.evaluate(POINTS_JS) == 0
    assert b.get_by_text("Ready.").count() >= 1
    screenshot(b, "monitor-second-session")
    a.get_by_role("button", name="Stop").click()
    try:
        a.get_by_text("stopped by a callback").first.wait_for(timeout=30_000)
    finally:
        screenshot(a, "monitor-first-session")
        print("A status:", a.locator(".cofiviz-monitor-status").first.inner_text(), a.locator(".cofiviz-monitor-status p").all_inner_texts())
    assert response < 1.0, f"the second session took {response:.2f} s to respond"
    assert page_errors.errors == [], page_errors.errors


def test_closing_the_session_stops_the_worker():
    m = TrainingMonitor(max_iter=10_000)
    m._form_widgets["tol"].value = 0.0
    m._on_run()
    deadline = time.monotonic() + 60
    while len(m._pending) + len(m._frame) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    m._work._on_destroyed(None)  # what Bokeh calls when the browser tab's session is destroyed
    assert m._work.join(30)
    assert "stopped by a callback" in m._status.object
    assert len(m.history) < 10_000
