"""The training monitor: form validation, uploads, worker processes, and live training in a real headless Chromium."""

import csv
import io
import os
import threading
import time

import numpy as np
import pandas as pd
import panel as pn
import psutil
import pytest

from conftest import (PAGE_BOXES_JS, WEBSOCKET_MAX_MESSAGE, PanelServer, count_canvases, forkservers, screenshot,
                      serve_command, wait_for_canvases)
from cofiviz.dashboards._shared import model_names
from cofiviz.dashboards.monitor import UPLOAD, UPLOAD_LIMIT_MB, TrainingMonitor
from cofiviz.background.training_process import COLUMNS, TrainingJob, TrainingProcess
from cofiviz.dashboards.monitor_run import MonitorRun
from cofiviz.models import available_models, get_model_class
from cofiviz.protocols import OFFERED, PROTOCOLS, parameters
from playwright.sync_api import expect

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


# the number of rows of each Bokeh data source with an "iteration" column, smallest first: the metric curves'
# source (the iterations scored), the loss curve's and the table's (every iteration)
SOURCES_JS = """() => { const n = [];
    for (const doc of (window.Bokeh ? Bokeh.documents : [])) {
        const models = doc._all_models ? Array.from(doc._all_models.values()) : Array.from(doc.all_models);
        for (const m of models) {
            const d = m.data;
            if (d && d.iteration && typeof d.iteration.length === 'number') n.push(d.iteration.length);
        }
    }
    return n.sort((a, b) => a - b); }"""


#: a small data set and a fast model, for the tests that are about the page's machinery, not the first Run
QUICK = {"data": "Synthetic: small (300 users, 200 items)", "model": "regsvd"}


def _wait(condition, timeout=60.0):
    """Poll ``condition`` until it is true or ``timeout`` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def _shown_form_title(m):
    return m._form_of(m.model)[0][0].object


def test_any_registered_model_can_be_chosen_up_front():
    assert TrainingMonitor(model="cofirank").model == "cofirank"
    assert "CofiRank" in _shown_form_title(TrainingMonitor(model="cofirank"))
    with pytest.raises(ValueError, match="nosuch"):
        TrainingMonitor(model="nosuch")


@pytest.mark.parametrize("name", model_names())
def test_every_model_can_start_from_its_form_at_the_defaults(name):
    """A parameter whose default is None (CofiRank's bias_reg, GAPfm's ymax...) is left empty in the form and
    accepted as None."""
    m = TrainingMonitor(model=name, max_iter=3)
    job = m._job()
    assert job.model == name and job.params["max_iter"] == 3 and not m._error.visible


def test_the_form_opens_folded_and_its_widgets_reach_the_page_when_unfolded():
    """A page opens with the model's form folded away under a title naming the model: none of its widgets is made,
    in Python or in the session's document, and a Run trains the form's values all the same; unfolded, the chosen
    model's widgets are in the document."""
    from bokeh.document import Document

    m = TrainingMonitor()
    doc = Document()
    m.controls().server_doc(doc)
    folded = len(doc.models)
    assert m._form_card.collapsed and m._form_card.title == "▸ Model parameters: LCR" and m._forms == {}
    job = m._job()
    assert job.params == {**{k: w.value for k, w in m._form_widgets.items()}, "max_iter": m.max_iter}
    assert all(job.params[k] == v for k, v in get_model_class("lcr").first_run.items())
    assert all(not w._models for w in m._form_widgets.values())     # made for the Run, not put into the page
    m.model = "regsvd"
    assert m._form_card.title == "▸ Model parameters: RegSVD" and m._form.objects == []
    m._form_card.collapsed = False
    widgets = m._form_widgets
    assert m._form_card.title == "▾ Model parameters: RegSVD"
    assert m._form.objects == [m._forms["regsvd"][0]] and m._forms["regsvd"][0].visible
    assert all(w._models for w in widgets.values()) and len(doc.models) >= folded + 2 * len(widgets)


def test_a_form_is_built_once_and_shown_again():
    m = TrainingMonitor(model="regsvd")
    m._form_card.collapsed = False
    first = m._forms["regsvd"][0]
    m.model = "lcr"
    assert "LCR" in _shown_form_title(m)
    m._form_widgets["rank"].value = 7               # the visitor's edit is kept while another model is shown
    m.model = "regsvd"
    assert m._forms["regsvd"][0] is first and first.visible and not m._forms["lcr"][0].visible
    m.model = "lcr"
    assert m._form_widgets["rank"].value == 7
    assert [f.visible for f in m._form.objects] == [False, True]


def test_where_the_curves_will_be_the_page_says_what_brings_them_as_the_run_goes():
    """Before a Run the page asks for one; once a run is on (waiting in the queue or starting) it says the run's
    curves are coming; when the run ends without rows (it left the queue) it asks again. The queue's real run is in
    ``test_runs_pressed_together_wait_in_the_queue_the_page_shows``."""
    from bokeh.document import Document

    m = TrainingMonitor()
    m.results().server_doc(Document())
    text = lambda: m._plot_boxes[0].objects[0].object  # noqa: E731
    assert text() == m.NO_CURVES
    m.training.running = True
    assert text() == m.CURVES_TO_COME
    assert len(m.results().objects) and all(b.objects[0].object == m.CURVES_TO_COME for b in m._plot_boxes)
    m.training.running = False
    assert text() == m.NO_CURVES


def test_the_first_view_has_no_figure_and_the_figures_come_once_at_run():
    """A page opens without figures or the table of iterations (a session's first document stays small); a run's
    first rows put them into every display of the monitor, once, drawing every row so far; a display made while
    there are curves gets them at once."""
    from types import SimpleNamespace

    from bokeh.document import Document
    from bokeh.plotting import figure

    m = TrainingMonitor()
    doc = Document()
    m.results().server_doc(doc)
    assert not [x for x in doc.models if isinstance(x, figure)] and m._sources == []
    assert m.NO_CURVES in str(m._plot_boxes[0].objects[0].object)
    m._draw_figures()
    box = m._plot_boxes[0]
    flexbox = box.objects[0]
    assert isinstance(flexbox, pn.FlexBox) and len(flexbox.objects) == 5 and m._table in box.objects
    assert len([x for x in doc.models if isinstance(x, figure)]) == 5
    m._draw_figures()                                      # a second Run keeps the figures it has
    assert box.objects[0] is flexbox and len(m._sources) == 1
    # the two clicks of a double click, handled in two threads, make the figures of a new page once
    twice = TrainingMonitor()
    twice.results()
    clicks = [threading.Thread(target=twice._draw_figures) for _ in range(2)]
    for click in clicks:
        click.start()
    for click in clicks:
        click.join()
    assert len(twice._sources) == 1
    # a display made once a run has drawn curves (JupyterLab shows the monitor again) gets its figures at once
    later = TrainingMonitor()
    assert not isinstance(later.results().objects[-1].objects[0], pn.FlexBox)
    later.training._frame = pd.DataFrame({c: [1.0] for c in COLUMNS})
    assert isinstance(later.results().objects[-1].objects[0], pn.FlexBox)
    # a Run pressed makes no figure (it may wait in the queue); its first rows do, and they are drawn once
    run = TrainingMonitor(max_iter=2, **QUICK)
    box = run.results().objects[-1]
    run.training.submit(run._job(), "…")
    assert run.training.join(120) and len(run.history) == 2
    every, scored = run._sources[0]
    assert list(every.data["iteration"]) == [1, 2] and list(scored.data["iteration"]) == [1, 2]
    assert isinstance(box.objects[0], pn.FlexBox) and len(run._sources) == 1
    rows = pd.DataFrame({c: [9.0] for c in COLUMNS})
    run.training._frame = pd.concat([run.training._frame, rows], ignore_index=True)
    run._show_batch(SimpleNamespace(new=rows))                 # a later batch is streamed into them
    assert list(every.data["iteration"]) == [1, 2, 9] and len(run._sources) == 1


def test_the_table_of_iterations_shows_the_newest_first_and_the_last_rows_while_a_run_goes():
    from types import SimpleNamespace

    m = TrainingMonitor()
    n = m.LIVE_TABLE_ROWS + 50
    frame = pd.DataFrame({c: np.arange(1.0, n + 1) for c in COLUMNS})
    m.training._frame = frame
    m._show_batch(SimpleNamespace(new=frame.tail(10)))
    shown = m._table.value
    assert len(shown) == m.LIVE_TABLE_ROWS and list(shown["iteration"][:3]) == [n, n - 1, n - 2]
    assert shown["iteration"].dtype.kind == "i"
    # the next batches reach the curves at once and the table LIVE_TABLE_EVERY seconds later (each update sends
    # its rows again)
    m.training._frame = pd.DataFrame({c: np.arange(1.0, n + 2) for c in COLUMNS})
    m._show_batch(SimpleNamespace(new=m.training._frame.tail(1)))
    assert m._table.value["iteration"].iloc[0] == n
    m._table_at -= m.LIVE_TABLE_EVERY
    m._show_batch(SimpleNamespace(new=m.training._frame.tail(1)))
    assert m._table.value["iteration"].iloc[0] == n + 1
    n += 1
    m._show_history()
    assert list(m._table.value["iteration"]) == list(range(n, 0, -1))


def test_the_page_opens_on_a_ranking_model_on_movielens_100k():
    m = TrainingMonitor()
    assert (m.data, m.model, m.protocol, m.n) == ("MovieLens 100K", "lcr", "weak", 50)
    for name, value in get_model_class("lcr").first_run.items():
        assert m._form_widgets[name].value == value


def test_the_first_forms_and_the_offered_protocols_are_ones_the_library_takes():
    """Every class's ``first_run`` builds its model; every offered protocol is registered and takes its settings."""
    for name in available_models():
        klass = get_model_class(name)
        assert set(klass.first_run) <= set(klass.param_names()), name
        klass(**klass.first_run)
    assert "weak" in OFFERED and list(TrainingMonitor.param.protocol.objects) == list(OFFERED)
    for name, offered in OFFERED.items():
        assert name in PROTOCOLS
        assert set(offered.fixed) | ({offered.size} - {None}) <= set(parameters(name)), name


def test_the_controller_trains_and_keeps_its_results_without_a_page():
    """:class:`MonitorRun` holds no widget: a run is started, followed and read through its parameters."""
    run = MonitorRun()
    batches, statuses = [], []
    run.param.watch(lambda e: batches.append(len(e.new)), "batch")
    run.param.watch(lambda e: statuses.append(e.new), "status")
    assert run.claim() and not run.claim()          # one claim at a time
    run.start(TrainingJob("regsvd", {"max_iter": 3}, "weak", {"n_train": 50, "n_valid": 5, "min_test": 5},
                          QUICK["data"]), "Training **regsvd** …")
    assert run.join(120) and not run.busy and not run.running
    assert list(run.history["iteration"]) == [1, 2, 3] and sum(batches) == 3
    assert statuses[0] == "Training **regsvd** …"
    assert statuses[-1].startswith("Finished after **3** iterations.")
    assert run.error == "" and run.story and run.trials == []
    assert not [v for v in vars(run).values() if isinstance(v, pn.viewable.Viewable)]
    assert run.csv_bytes().read().startswith(b"iteration,")


def test_batches_come_further_apart_as_the_curves_grow():
    """A browser redraws every point of a curve on each batch: the batches of a fast model's long run are spaced by
    :meth:`MonitorRun.flush_interval` of the rows already drawn, which grows with them up to its cap."""
    steps = [MonitorRun.flush_interval(n) for n in range(0, 10 * MonitorRun.DRAW_RATE, 50)]
    assert steps[0] == MonitorRun.FLUSH_EVERY and steps[-1] == MonitorRun.FLUSH_AT_MOST
    assert all(a <= b for a, b in zip(steps, steps[1:]))
    run = MonitorRun()
    batches = []                                   # (time, rows drawn before the batch, rows in it)
    run.param.watch(lambda e: batches.append((time.monotonic(), sum(b[2] for b in batches), len(e.new))), "batch")
    assert run.claim()
    run.start(TrainingJob("regsvd", {"max_iter": 10_000, "tol": 0.0, "patience": 0}, "weak",
                          {"n_train": 50, "n_valid": 5, "min_test": 5}, QUICK["data"]), "Training **regsvd** …")
    # until a batch comes after more rows than a second's drawing: its interval is past the shortest, however large
    # a loaded machine makes the batches before it
    assert _wait(lambda: any(drawn > MonitorRun.DRAW_RATE for _, drawn, _ in batches), 240), "the run was too slow"
    run.stop()
    assert run.join(120)
    # the follower hands a batch to the event loop when the interval has passed; the loop may run it later, never
    # earlier (the last batch, the run's end, comes at once)
    for (t0, _, _), (t1, drawn, _) in zip(batches[:-2], batches[1:-1]):
        assert t1 - t0 >= 0.9 * MonitorRun.flush_interval(drawn), (t1 - t0, drawn)
    assert any(MonitorRun.flush_interval(drawn) > MonitorRun.FLUSH_EVERY for _, drawn, _ in batches[1:-1])


def test_monitor_trains_in_a_worker_process_and_validates_input():
    m = TrainingMonitor(max_iter=4, **QUICK)
    m._on_run()
    assert m.training.join(120)
    assert m.training._process is not None and m.training._process.process.pid != os.getpid()
    assert m.training._process.process.exitcode == 0
    assert list(m.history["iteration"]) == [1, 2, 3, 4]
    assert m.history[["train_ndcg@10", "valid_ap", "test_gap"]].notna().all().all()
    assert "Finished after **4** iterations. Ran the 4 iterations Max iter allows." in m._status.object
    assert len(m._table.value) == 4
    assert m.training.csv_bytes().read().startswith(b"iteration,")
    # out-of-range parameter: a message, no run
    m._form_widgets["reg"].value = -1.0
    assert m._error.visible and "below its lower bound" in m._error.object
    m._on_run()
    assert "Cannot start" in m._error.object and not m.training.busy
    m._form_widgets["reg"].value = 0.05
    # malformed upload: a clear message naming the file and the row
    m.data = UPLOAD
    m._upload.value = {"mine.csv": "user,item,rating\n1,2,x\n"}
    assert m._error.visible and "mine.csv" in m._error.object and "line 2" in m._error.object
    assert "/tmp" not in m._error.object
    # an empty file says so
    m._upload.value = {"empty.csv": b""}
    assert "empty.csv: the file is empty" in m._error.object
    # one that parses: its size in the status, and no copy of its bytes left in the widget
    m._upload.value = {"mine.tsv": "".join(f"{u}\t{i}\t{1 + (u + i) % 5}\n" for u in range(3) for i in range(4))}
    assert not m._error.visible and "12 ratings, 3 users, 4 items" in m._status.object
    assert m._upload.value == {}


def test_an_upload_up_to_the_limit_is_one_chunk_of_panels_own_file_dropper():
    """A server with several threads may handle one session's events concurrently: a file in several chunks
    could be joined out of order, so every file allowed travels as one chunk, in one websocket message that the
    server accepts (the 50 MB file of ``test_uploads_large_too_large_and_empty`` goes through a served page)."""
    m = TrainingMonitor(data=UPLOAD)
    assert type(m._upload) is pn.widgets.FileDropper
    assert m._upload.chunk_size >= UPLOAD_LIMIT_MB * 1_000_000
    assert m._upload.max_file_size == f"{UPLOAD_LIMIT_MB}MB" and not m._upload.multiple
    assert WEBSOCKET_MAX_MESSAGE > m._upload.chunk_size
    assert "--num-threads" in serve_command() and str(WEBSOCKET_MAX_MESSAGE) in serve_command()


def test_tune_searches_in_the_worker_then_trains_the_chosen_setting():
    m = TrainingMonitor(max_iter=6, budget=5, **QUICK)
    m._on_run(tune=True)
    assert m.training.join(180)
    trials = m._trials.value
    assert m._trials.visible and len(trials) >= 2 and list(trials["trial"]) == list(range(len(trials)))
    assert trials["valid ndcg@10"].notna().any()
    chosen = trials[trials["note"] == "chosen"]
    assert len(chosen) == 1
    # the chosen setting is in the form, and it is what was trained
    for name in ("rank", "reg", "lr"):
        assert m._form_widgets[name].value == pytest.approx(chosen[name].iloc[0], abs=1e-5), name   # rounded
    assert len(m.history) >= 1 and "Finished after" in m._status.object
    # the search's verdict stays beside the end of the run
    assert m.training.tuned["summary"] in m._status.object
    # Stop while tuning ends the run without training
    m2 = TrainingMonitor(max_iter=6, budget=600, **QUICK)
    m2._on_run(tune=True)
    deadline = time.monotonic() + 120
    while not len(m2.training.trials) and time.monotonic() < deadline:
        time.sleep(0.1)
    m2._on_stop()
    assert m2.training.join(120)
    assert "Stopped while tuning, after" in m2._status.object and "nothing was trained" in m2._status.object
    assert len(m2.history) == 0


def test_out_of_bounds_n_and_max_iter_are_reset_with_a_reason():
    m = TrainingMonitor()
    n, max_iter = m._bounded["n"], m._bounded["max_iter"]
    n.widget.value = 500
    assert m.n == 100 and n.widget.value == 100
    assert n.note.visible and n.note.object == "N = 500 is above its upper bound 100; set to 100."
    n.widget.value = 20                           # a valid value: kept, and the stale note goes
    assert m.n == 20 and not n.note.visible
    max_iter.widget.value = 0
    assert m.max_iter == 1 and "Max iter = 0 is below its lower bound 1; set to 1." == max_iter.note.object
    max_iter.widget.value = None
    assert m.max_iter == 1 and "Max iter needs a number; kept 1." == max_iter.note.object
    m.max_iter = 12                               # set from Python: the input follows
    assert max_iter.widget.value == 12


def test_two_concurrent_runs_start_one():
    """Run called from two threads at once (a double click on a server with several threads) starts one run."""
    m = TrainingMonitor(max_iter=2, **QUICK)
    for _ in range(12):
        barrier = threading.Barrier(2)

        def click():
            barrier.wait()
            m._on_run()

        clicks = [threading.Thread(target=click) for _ in range(2)]
        for t in clicks:
            t.start()
        for t in clicks:
            t.join()
        assert m.training.join(120)
        assert list(m.history["iteration"]) == [1, 2], m.history
        assert not m.training.busy
    finished = m._status.object
    m._on_stop()                                   # a Stop that arrives after the run ended changes nothing
    assert m._status.object == finished


def test_worker_errors_come_back_as_messages():
    m = TrainingMonitor(data=UPLOAD, max_iter=3, model="regsvd")
    m._upload.value = {"tiny.csv": "".join(f"{u},{i},{1 + i % 5}\n" for u in range(4) for i in range(5))}
    m._on_run()                                    # 5 ratings per user: too few for N = 10
    assert m.training.join(120)
    assert m._error.visible and m._error.object.startswith("Training failed:")
    assert "every user was dropped" in m._error.object
    assert m._status.object == "Failed before the first iteration: the message above says why."
    assert len(m.history) == 0


def _long_run(m):
    m._form_widgets["tol"].value = 0.0
    m._form_widgets["patience"].value = 0
    m._on_run()
    assert _wait(lambda: len(m.training._pending) + len(m.training.history) >= 2), "no iteration arrived"


def test_a_choice_made_during_a_run_says_the_run_keeps_its_own():
    m = TrainingMonitor(max_iter=10_000, **QUICK)
    _long_run(m)
    assert not m._during_run.visible
    m.protocol = [p for p in m.param.protocol.objects if p != m.protocol][0]
    assert m._during_run.visible and "goes on with the data, protocol and model it started with" in \
        m._during_run.object
    m._on_stop()
    assert m.training.join(60)
    assert not m._during_run.visible
    m.n = 20                                      # no run: nothing to say
    assert not m._during_run.visible


def test_closing_the_session_stops_the_worker():
    m = TrainingMonitor(max_iter=10_000, **QUICK)
    _long_run(m)
    m.training._work._on_destroyed(None)  # what Bokeh calls when the browser tab's session is destroyed
    assert m.training.join(30)
    assert ", as asked. The model keeps that iteration" in m._status.object
    assert len(m.history) < 10_000
    assert m.training._process.process.exitcode == 0        # it stopped by itself, within its grace period


def test_a_closed_session_whose_run_does_not_stop_has_its_process_ended(monkeypatch):
    monkeypatch.setattr(TrainingProcess, "KILL_GRACE", 0.0)   # no time to finish the iteration
    m = TrainingMonitor(max_iter=10_000, **QUICK)
    _long_run(m)
    m.training._work._on_destroyed(None)
    assert m.training.join(30)
    assert "The session closed and its training process was ended." in m._status.object
    assert not m.training._process.alive and m.training._process.process.exitcode != 0


@pytest.fixture(scope="module")
def server():
    srv = PanelServer(["apps/monitor.py"])
    yield srv
    srv.close()


def _open(chromium, page_errors, server):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1100}))
    page.goto(f"{server.url}/monitor", wait_until="networkidle")
    page.get_by_text("Ready.").first.wait_for(timeout=30_000)
    return page


@pytest.fixture
def open_page(chromium, page_errors, server):
    """Opens monitor sessions in the shared browser, and closes them when the test ends (an open page
    that keeps drawing would take the machine's time from the tests after it)."""
    pages = []

    def open_():
        pages.append(_open(chromium, page_errors, server))
        return pages[-1]

    yield open_
    for page in pages:
        page.close()


def _input(page, label: str):
    return page.locator(".bk-input-group").filter(has_text=label).locator("input").filter(visible=True).first


def _fill(page, label: str, value):
    box = _input(page, label)
    box.fill(str(value))
    box.press("Enter")


def _select(page, label: str, value: str):
    box = page.locator(".bk-input-group").filter(has_text=label).locator("select").filter(visible=True).first
    box.select_option(value)


def _choose(page, data: str, model: str = "regsvd", title: str = "RegSVD"):
    """Choose a data set and a model, and wait for the folded form's title to name the model."""
    _select(page, "Data", data)
    _select(page, "Model", model)
    page.get_by_text(f"Model parameters: {title}").first.wait_for(state="visible", timeout=30_000)


def _unfold_form(page):
    """Unfold the chosen model's form and wait for its widgets."""
    page.get_by_text("Model parameters: ").first.click()
    page.locator(".cofiviz-monitor-form strong").filter(visible=True).first.wait_for(timeout=30_000)


def _set_long_run(page, max_iter: int = 5000):
    """Many iterations, no convergence test and no early stopping, so that the run lasts until Stop."""
    _fill(page, "Max iter", max_iter)
    _unfold_form(page)
    _fill(page, "tol [", 0)
    _fill(page, "patience [", 0)
    page.wait_for_timeout(300)


def _settled_points(page, timeout=15):
    """The points drawn once the browser has applied every update already sent (a busy browser may draw the last
    rows of a finished run a moment after the status says so): the count once it is unchanged for half a second."""
    last = page.evaluate(POINTS_JS)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page.wait_for_timeout(500)
        now = page.evaluate(POINTS_JS)
        if now == last:
            return now
        last = now
    return last


def _wait_points(page, n, timeout=60):
    return _wait(lambda: page.evaluate(POINTS_JS) >= n, timeout) and page.evaluate(POINTS_JS)


@pytest.mark.browser
def test_monitor_run_draws_points_and_stop_stops(open_page, page_errors):
    page = open_page()
    # the larger synthetic set and the most iterations allowed: the run is still going when Stop is pressed
    _choose(page, "Synthetic: locally low-rank")
    _set_long_run(page, 10_000)
    # no figure before the first Run: the page says where the curves will be
    assert count_canvases(page) == 0
    assert page.locator(".cofiviz-monitor-no-curves").first.is_visible()
    page.get_by_role("button", name="Run").click()
    assert wait_for_canvases(page, 5, timeout=60_000) >= 5        # NDCG, AP, GAP, loss, seconds
    assert not page.locator(".cofiviz-monitor-no-curves").count()
    pts = _wait_points(page, 3)
    assert pts >= 3, f"only {pts} points drawn"
    # the page draws a fast model's iterations as they come: on a loaded machine it may take long to hand a click
    # to the button
    page.get_by_role("button", name="Stop").click(timeout=120_000)
    page.get_by_text(", as asked.").first.wait_for(timeout=180_000)
    stopped_at = _settled_points(page)
    screenshot(page, "monitor-stopped-run")
    page.wait_for_timeout(1500)
    assert page.evaluate(POINTS_JS) == stopped_at, "points kept arriving after Stop"
    assert stopped_at < 10_000
    page.get_by_role("button", name="CSV").first.wait_for(timeout=10_000)
    # the table of iterations counts them in whole numbers
    cells = page.locator('.tabulator-cell[tabulator-field="iteration"]')
    cells.first.wait_for(timeout=10_000)
    shown = [c.strip() for c in cells.all_inner_texts()]
    assert shown and all(c.replace(",", "").isdigit() for c in shown), shown
    screenshot(page, "monitor-stopped")
    assert page_errors.errors == [], page_errors.errors


@pytest.mark.browser
def test_monitor_on_movielens_1m_draws_points_as_the_model_trains(open_page, page_errors):
    page = open_page()
    _choose(page, "MovieLens 1M")
    _set_long_run(page)
    page.get_by_role("button", name="Run").click()
    # the worker loads MovieLens 1M (on first use) and splits it before the first iteration
    assert _wait_points(page, 2, timeout=600) >= 2, page.evaluate(POINTS_JS)
    # the curves advance while the model trains: more points at a second look
    seen = page.evaluate(POINTS_JS)
    assert _wait_points(page, seen + 3, timeout=300) >= seen + 3, "the curves stopped advancing"
    screenshot(page, "monitor-ml1m-training")
    # a page drawing a live run on a loaded machine may take long to hand a click to the button
    page.get_by_role("button", name="Stop").click(timeout=120_000)
    page.get_by_text(", as asked.").first.wait_for(timeout=120_000)
    rows, scored = _downloaded_run(page, "regsvd")
    assert scored[0]["iteration"] == "1"              # the first iteration is always scored
    screenshot(page, "monitor-ml1m-stopped")
    assert page_errors.errors == [], page_errors.errors


@pytest.mark.browser
def test_monitor_on_movielens_1m_scores_cofirank_between_its_iterations(open_page, page_errors):
    page = open_page()
    _select(page, "Data", "MovieLens 1M")
    _select(page, "Model", "cofirank")
    page.get_by_text("Model parameters: CofiRank").first.wait_for(state="visible", timeout=30_000)
    _fill(page, "Max iter", 6)
    page.wait_for_timeout(300)
    page.get_by_role("button", name="Run").click()
    assert _wait_points(page, 2, timeout=600) >= 2, page.evaluate(POINTS_JS)
    seen = page.evaluate(POINTS_JS)
    assert _wait_points(page, seen + 1, timeout=300) > seen, "the curves stopped advancing"
    page.get_by_text("Finished after 6 iterations.").first.wait_for(timeout=600_000)
    rows, scored = _downloaded_run(page, "cofirank")
    assert len(rows) == 6 and scored[0]["iteration"] == "1" and scored[-1]["iteration"] == "6"
    screenshot(page, "monitor-ml1m-cofirank")
    assert page_errors.errors == [], page_errors.errors


def _downloaded_run(page, model: str):
    """The run's CSV (every iteration, with its loss and seconds) and its scored rows, checked against the plots:
    the loss curves (and the table) hold every iteration, the metric curves the scored ones."""
    with page.expect_download() as download:
        page.get_by_role("button", name="CSV").first.click()
    rows = list(csv.DictReader(io.StringIO(open(download.value.path()).read())))
    assert [int(float(r["iteration"])) for r in rows] == list(range(1, len(rows) + 1))
    assert all(r["loss"] and r["seconds"] for r in rows)
    scored = [r for r in rows if r["test_ndcg@10"] not in ("", "nan", "NaN")]
    assert scored
    sizes = page.evaluate(SOURCES_JS)
    assert sizes[0] == len(scored) and sizes[-1] == len(rows) and set(sizes) <= {len(scored), len(rows)}, sizes
    elapsed = float(rows[-1]["elapsed"]) - float(rows[0]["elapsed"])
    if elapsed > 0:
        print(f"MovieLens 1M, {model}: {len(rows)} iterations, {len(scored)} scored, "
              f"{(len(rows) - 1) / elapsed:.1f} points per second of the fit's own time")
    return rows, scored


@pytest.mark.browser
def test_tune_in_the_page_lists_its_trials_then_trains(open_page, page_errors):
    page = open_page()
    _choose(page, QUICK["data"])
    _fill(page, "Tune budget", 5)
    _fill(page, "Max iter", 5)
    page.wait_for_timeout(300)
    page.get_by_role("button", name="Tune").click()
    page.get_by_text("Finished after").first.wait_for(timeout=120_000)
    assert page.locator(".tabulator-row").count() >= 2     # the trials, and the iterations' table
    assert page.get_by_text("valid ndcg@10").count() >= 1
    assert page.evaluate(POINTS_JS) >= 1
    screenshot(page, "monitor-tuned")
    assert page_errors.errors == [], page_errors.errors


@pytest.mark.browser
def test_the_first_run_learns_overfits_and_is_put_back_each_said_in_a_sentence(open_page, page_errors):
    """Run double-clicked on the page's defaults starts one run: LCR on MovieLens 100K learns, overfits and is put
    back to its best iterate, each said in a plain sentence; the table of iterations fills while it runs."""
    page = open_page()
    page.get_by_role("button", name="Run").dblclick()
    page.get_by_text("Validation ranks each user's 5 validation ratings").first.wait_for(timeout=120_000)
    page.locator('.tabulator-cell[tabulator-field="iteration"]').first.wait_for(timeout=60_000)
    assert page.get_by_text("Finished after").count() == 0, "the table filled only at the end"
    screenshot(page, "monitor-first-run-training")
    page.get_by_text("Finished after").first.wait_for(timeout=600_000)
    status = page.get_by_text("Finished after").first.inner_text()
    assert "Stopped early" in status and "put back to iteration" in status, status
    assert page.get_by_text("Overfitting: since iteration").count() >= 1
    with page.expect_download() as download:
        page.get_by_role("button", name="CSV").first.click()
    rows = list(csv.DictReader(io.StringIO(open(download.value.path()).read())))
    assert [int(r["iteration"]) for r in rows] == list(range(1, len(rows) + 1))     # one run, not two
    assert _settled_points(page) == len(rows)
    assert f"Finished after {len(rows)} iterations." in status
    print(f"first Run: {len(rows)} iterations in {float(rows[-1]['elapsed']):.1f} s of fitting")
    screenshot(page, "monitor-first-run")
    assert page_errors.errors == [], page_errors.errors


@pytest.mark.browser
def test_monitor_two_sessions_stay_independent(open_page, page_errors):
    a = open_page()
    b = open_page()
    _set_long_run(a, 10_000)        # the first Run's LCR: iterations slow enough to keep A's plots light
    a.get_by_role("button", name="Run").click()
    assert _wait_points(a, 3) >= 3
    # while A trains, B follows B's own choices: the file input, then the model form
    assert not b.locator("input[type=file]").first.is_visible()
    _select(b, "Data", UPLOAD)
    b.get_by_text("Drag & Drop").first.wait_for(state="visible", timeout=30_000)
    _select(b, "Model", "poprec")
    b.get_by_text("Model parameters: PopRec").first.wait_for(state="visible", timeout=30_000)
    # B saw none of A's training, and A kept training meanwhile
    assert b.evaluate(POINTS_JS) == 0
    assert b.get_by_text("Ready.").count() >= 1
    before = a.evaluate(POINTS_JS)
    assert _wait_points(a, before + 2) >= before + 2, "A stopped progressing"
    screenshot(b, "monitor-second-session")
    # A has drawn for a while: on a loaded machine its page may take long to hand a click to the button
    a.get_by_role("button", name="Stop").click(timeout=120_000)
    a.get_by_text(", as asked.").first.wait_for(timeout=30_000)
    screenshot(a, "monitor-first-session")
    assert page_errors.errors == [], page_errors.errors


@pytest.mark.browser
def test_out_of_bounds_n_is_reset_with_a_message_in_the_page(open_page, page_errors):
    page = open_page()
    _fill(page, "N [", 500)
    page.get_by_text("N = 500 is above its upper bound 100; set to 100.").first.wait_for(timeout=30_000)
    expect(_input(page, "N [")).to_have_value("100", timeout=30_000)   # the box follows the message
    screenshot(page, "monitor-n-reset")
    assert page_errors.errors == [], page_errors.errors


def _ratings_file(path, target_bytes: int):
    """A tab-separated ratings file of about ``target_bytes``: each user rates 100 distinct items."""
    per_user = 100
    n_users = max(1, target_bytes // (per_user * 12))   # about 12.5 bytes a line
    users = np.repeat(np.arange(n_users), per_user)
    k = np.tile(np.arange(per_user), n_users)
    items = (users * 7 + k * 13) % 5000
    ratings = 1 + (users + k) % 5
    with open(path, "w") as fh:
        fh.write("\n".join(f"{u}\t{i}\t{r}" for u, i, r in zip(users.tolist(), items.tolist(), ratings.tolist())))
        fh.write("\n")
    return len(users)


def _upload_page(open_page):
    """A new session with the upload zone open (each file below gets a drop zone of its own: what FilePond's
    item shows after an upload, "uploading 100 %" or "revert", depends on how busy the machine is)."""
    page = open_page()
    _select(page, "Data", UPLOAD)
    page.get_by_text("Drag & Drop").first.wait_for(state="visible", timeout=30_000)
    return page


@pytest.mark.browser
def test_uploads_large_too_large_and_empty(open_page, page_errors, tmp_path):
    page = _upload_page(open_page)
    # about 50 MB: read in full, its size in the status
    big = tmp_path / "big.tsv"
    n = _ratings_file(big, 50_000_000)
    assert 50e6 <= big.stat().st_size <= UPLOAD_LIMIT_MB * 1e6
    page.locator("input[type=file]").first.set_input_files(str(big))
    page.get_by_text(f"{n:,} ratings").first.wait_for(timeout=180_000)
    screenshot(page, "monitor-upload-50mb")
    # the worker process trains on it
    _select(page, "Model", "poprec")
    page.get_by_text("Model parameters: PopRec").first.wait_for(state="visible", timeout=30_000)
    page.get_by_role("button", name="Run").click()
    page.get_by_text("Finished after 1 iteration. Fitted in one pass").first.wait_for(timeout=300_000)
    assert page.evaluate(POINTS_JS) == 1
    # larger than the limit: the browser refuses it and says why
    page.close()
    page = _upload_page(open_page)
    huge = tmp_path / "huge.csv"
    with open(huge, "wb") as fh:
        fh.truncate(UPLOAD_LIMIT_MB * 1_000_000 + 5_000_000)
    page.locator("input[type=file]").first.set_input_files(str(huge))
    page.get_by_text("File is too large").first.wait_for(timeout=30_000)
    assert page.get_by_text(f"Maximum file size is {UPLOAD_LIMIT_MB} MB").count() >= 1
    screenshot(page, "monitor-upload-too-large")
    # empty: said in the page
    page.close()
    page = _upload_page(open_page)
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    page.locator("input[type=file]").first.set_input_files(str(empty))
    page.get_by_text("empty.csv: the file is empty").first.wait_for(timeout=30_000)
    screenshot(page, "monitor-upload-empty")
    assert page_errors.errors == [], page_errors.errors


@pytest.mark.browser
def test_a_server_of_the_monitor_starts_its_training_workers_at_once(server):
    """A server of a page that trains starts the training workers' forkserver in its setup, before any Run."""
    assert len(forkservers(server)) == 1


def test_a_stopped_server_leaves_no_worker_process(chromium, page_errors):
    srv = PanelServer(["apps/monitor.py"], setup=False)
    try:
        page = _open(chromium, page_errors, srv)
        _set_long_run(page)
        page.get_by_role("button", name="Run").click()
        assert _wait_points(page, 2) >= 2
        workers = psutil.Process(srv.proc.pid).children(recursive=True)
        found = forkservers(srv)
        assert len(found) == 1 and found[0].children(), "no training process under the forkserver"
        page.close()
    finally:
        srv.close()
    gone, alive = psutil.wait_procs(workers, timeout=60)
    assert alive == [], [p.pid for p in alive]


def test_a_combination_the_model_refuses_is_said_before_a_run_starts():
    m = TrainingMonitor(max_iter=2, **{**QUICK, "model": "bpmf"})     # its Wishart prior needs nu0 >= rank
    m._form_widgets["rank"].value = 10
    m._form_widgets["nu0"].value = 5
    m._on_run()
    assert "Cannot start" in m._error.object
    assert "nu0 must be >= rank (10)" in m._error.object and "nu0=5" in m._error.object
    assert m._error.visible and not m.training.busy


@pytest.fixture(scope="module")
def one_slot_server():
    """A server that trains one run at a time (``--run-slots 1``), so that two Runs make a queue."""
    srv = PanelServer(["apps/monitor.py"], env={"COFIVIZ_RUN_SLOTS": "1"})
    yield srv
    srv.close()


#: the space above a notice's text and below it, in pixels (evaluated on the notice's element)
NOTICE_GAPS_JS = """host => { const h = host.getBoundingClientRect(), ps = [...host.shadowRoot.querySelectorAll('p')];
                            return [ps[0].getBoundingClientRect().top - h.top,
                                    h.bottom - ps[ps.length - 1].getBoundingClientRect().bottom]; }"""


@pytest.mark.browser
def test_runs_pressed_together_wait_in_the_queue_the_page_shows(chromium, page_errors, one_slot_server):
    """Three pages on a one-slot server: A trains, B's Run waits 1st and C's (a phone, 390 px) 2nd, each page says so;
    when A stops, B trains and then C, each told how long it waited; B at 1440 px and C are kept as screenshots."""
    a, b = (_open(chromium, page_errors, one_slot_server) for _ in range(2))
    b.set_viewport_size({"width": 1440, "height": 900})
    c = page_errors(chromium.new_page(viewport={"width": 390, "height": 844}))
    pages = [a, b, c]
    try:
        c.goto(f"{one_slot_server.url}/monitor", wait_until="networkidle")
        c.get_by_text("Ready.").first.wait_for(timeout=30_000)
        _choose(a, "Synthetic: locally low-rank")
        _set_long_run(a, 10_000)
        a.get_by_role("button", name="Run").click()
        assert _wait_points(a, 2) >= 2
        for page, place in ((b, "1st"), (c, "2nd")):
            if page is c:                                      # on a phone the form is in the drawer
                c.locator("#sidebar-toggle").click()
            _choose(page, QUICK["data"])
            _fill(page, "Max iter", 5)
            page.get_by_role("button", name="Run").click()
            if page is c:
                c.locator("#sidebar-toggle").click()
            page.get_by_text(f"{place} in the queue").first.wait_for(timeout=60_000)
            assert page.evaluate(POINTS_JS) == 0                   # nothing trains while it waits
            # where the curves will be, the page no longer asks for a Run: it says the run's curves are coming
            page.get_by_text("Your run's curves are drawn here from its first iterations").first.wait_for(timeout=30_000)
            assert not page.get_by_text("the curves are drawn here once a run starts").count()
        assert b.get_by_text("This server trains 1 run at once; 1 is training.").count()
        assert c.get_by_text("This server trains 1 run at once; 1 is training and 1 waits ahead of yours").count()
        # the notice's text has the box's padding above and below it, no paragraph's margin more under it
        gaps = b.locator(".cofiviz-monitor-queue").first.evaluate(NOTICE_GAPS_JS)
        assert abs(gaps[0] - gaps[1]) <= 2, gaps
        b.mouse.move(1000, 10)                                     # no tooltip in the picture
        screenshot(b, "monitor-queue-1440")
        c.wait_for_timeout(500)
        assert c.evaluate(PAGE_BOXES_JS)["sidebar"] is False               # the drawer closed again: the notice shows
        screenshot(c, "monitor-queue-390")
        a.get_by_role("button", name="Stop").click(timeout=120_000)
        a.get_by_text(", as asked.").first.wait_for(timeout=60_000)
        for page in (b, c):
            page.get_by_text("in the queue first.").first.wait_for(timeout=120_000)   # Finished after …
            assert _settled_points(page) >= 5
            assert not page.locator(".cofiviz-monitor-queue").first.is_visible()
        # the figures made at Run lie inside the phone's screen, one under the other, none narrower than 320 px
        plots = c.evaluate(PAGE_BOXES_JS)["plots"]
        assert len(plots) >= 5 and all(-1 <= left and right <= 391 and width >= 320
                                       for left, right, width in plots), plots
        assert page_errors.errors == [], page_errors.errors
    finally:
        for page in pages:
            page.close()


