"""The loss-shapes dashboard: its numbers, and the app in a real headless Chromium."""

import re
import time

import numpy as np
import pytest

from conftest import count_canvases, screenshot, wait_for_canvases
from cofiviz.dashboards.losses import LossShapes
from cofiviz.losses.surrogates import surrogate_shape
from playwright.sync_api import expect


def test_viewer_follows_gamma_and_reports_bad_lists():
    v = LossShapes()
    before = v._fig4_table.object.copy()
    v.gamma = 1.0
    after = v._fig4_table.object
    row = after[after["loss at Δf = 0"] == "Log[M]"].iloc[0]
    assert row["ΔM=2"] == pytest.approx(float(surrogate_shape("log_m", 0.0, 2.0, 1.0)), abs=1e-4)
    assert not after.equals(before)
    v.scores = "1, 2"
    assert v._bound_error.visible and "expected 6 numbers" in v._bound_error.object
    v.scores = "1, 2, 3, 4, 5, 6"
    assert not v._bound_error.visible and "F E D C B A" in v._bound_text.object
    v.grades = "0 0 0 0 0 0"
    assert v._bound_error.visible
    v.family = "Hinge"
    assert set(v._fig4_table.object["loss at Δf = 0"]) == {"Hinge[M]", "Hinge[A]"}
    v.__panel__()


def _figures(root):
    return [m for m in root.references() if type(m).__name__ == "figure"]


@pytest.mark.parametrize("panel, change", [
    ("surrogates_panel", {"gamma": 1.0}), ("surrogates_panel", {"family": "Exp"}), ("bound_panel", {"k": 3}),
    ("gapfm_panel", {"scale": 2.0}), ("ties_panel", {"theta": 3.0}), ("ties_panel", {"tie_range": 3.0}),
    ("plackett_luce_panel", {"pl_scores": "3, 2, 1, 0, -1, -2"})])
def test_the_plots_redraw_in_place_as_an_input_changes(panel, change):
    """A change redraws the curves of the plots already there: the same Bokeh figures, with new data and their
    titles or axes following; no figure is replaced."""
    from bokeh.models import ColumnDataSource

    v = LossShapes()
    root = getattr(v, panel)().get_root()
    figures = _figures(root)
    assert figures
    looks = [(f.title.text, f.x_range.start, f.x_range.end, f.y_range.start, f.y_range.end) for f in figures]
    sources = [m for m in root.references() if isinstance(m, ColumnDataSource)]
    data = [{k: np.array(c, dtype=object) for k, c in src.data.items()} for src in sources]
    v.param.update(**change)
    assert sorted(id(f) for f in _figures(root)) == sorted(id(f) for f in figures)   # references() has no order
    assert looks != [(f.title.text, f.x_range.start, f.x_range.end, f.y_range.start, f.y_range.end) for f in figures]
    assert any(set(d) != set(src.data) or any(not np.array_equal(d[k], np.array(src.data[k], dtype=object))
                                                for k in d) for d, src in zip(data, sources))


@pytest.mark.parametrize("panel, heading", [
    ("surrogates_panel", "LCR Figure 4"), ("bound_panel", "CofiRank: convex upper bound"),
    ("gapfm_panel", "GAPfm: logistic smoothing"), ("smoothed_rank_panel", "The smoothed rank"),
    ("ties_panel", "Ties: Rao–Kupper and Davidson"), ("plackett_luce_panel", "Plackett–Luce: the listwise loss")])
def test_each_panel_shows_alone_for_a_notebook_and_is_a_section_of_the_app(panel, heading):
    shapes = LossShapes()
    alone = getattr(shapes, panel)()
    alone.get_root()                                             # it renders on its own
    assert heading in alone[0].object or heading in alone[1].object
    full = shapes.__panel__()                                    # the app holds the same section
    texts = [o.object for tab in full for section in tab for o in section if hasattr(o, "object")]
    assert any(isinstance(t, str) and heading in t for t in texts)


def test_the_bound_panel_orders_ties_and_scores_regret_as_the_metrics_do():
    """Equal scores: the page's order and its 1 − NDCG@k are those of cofiviz.metrics (lower grade first), not the
    order in which the items are listed; and the convex bound stays above that regret along the whole curve."""
    from cofiviz import metrics as M

    v = LossShapes()
    v.grades, v.scores, v.k = "5 4 3 2 1 0", "1 1 1 1 1 1", 5
    y, f = np.array([5, 4, 3, 2, 1, 0.0]), np.ones(6)
    regret = 1 - M.ndcg(y, f, k=5)
    assert regret == pytest.approx(0.7601, abs=1e-4)
    text = v._bound_text.object
    assert "F E D C B A" in text and f"= **{regret:.4f}**" in text and "lower grade first" in text
    overlay = v._bound.object[()]                                 # the plot as the page draws it now
    bound, curve = (overlay.get(i).dframe()["bound_loss"].to_numpy() for i in (0, 1))
    assert np.all(bound >= curve - 1e-12) and curve.max() == pytest.approx(regret)
    # untied scores: the same order and value as the metrics give
    v.scores = "0.5, 0.9, 0.1, 0.3, -0.2, -0.6"
    f = np.array([0.5, 0.9, 0.1, 0.3, -0.2, -0.6])
    order = " ".join("ABCDEF"[j] for j in M.rank_order(y, f))
    assert order in v._bound_text.object and f"= **{1 - M.ndcg(y, f, k=5):.4f}**" in v._bound_text.object
    assert "lower grade first" not in v._bound_text.object


def test_smoothed_rank_panel_draws_the_pair_loss_for_a_few_gammas():
    from cofiviz.dashboards.losses import SR_GAMMAS, smoothed_rank_summary
    from cofiviz.losses import smoothed_rank_loss

    v = LossShapes()
    table = v._smoothed_table.object
    assert set(table["γ"]) == {f"{g:g}" for g in SR_GAMMAS} and len(table) == 3 * len(SR_GAMMAS)
    row = table[(table["γ"] == "2") & (table["Δf"] == "0")].iloc[0]
    assert row["loss"] == pytest.approx(smoothed_rank_loss([0.0, 0.0], [1.0, 0.0], 2.0)[0], abs=1e-4)
    # far from Δf = 0 the sharp γ is flatter than the smooth one: the blog post's caveat
    far = smoothed_rank_summary(gammas=(0.5, 5.0), deltas=(-4.0,))
    assert abs(far["slope"].iloc[1]) < abs(far["slope"].iloc[0])
    assert len(v._smoothed.objects) == 2
    v.__panel__()


@pytest.fixture(scope="module")
def server(quiet_pages):
    return quiet_pages


def _table_numbers(page, table: str = ".cofiviz-fig4-table"):
    """The numbers of one of the page's tables, in reading order."""
    cells = page.locator(f"{table} td")
    cells.first.wait_for(timeout=30_000)
    return [float(x) for x in re.findall(r"-?\d+\.\d+", " ".join(cells.all_inner_texts()))]


@pytest.mark.browser
def test_losses_gamma_changes_the_curves(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1200}))
    page.goto(f"{server.url}/losses", wait_until="networkidle")
    page.locator(".cofiviz-fig4-table td").first.wait_for(timeout=120_000)
    wait_for_canvases(page, 3)
    assert count_canvases(page) >= 3
    before = _table_numbers(page)
    assert 0.6931 in before  # Log[M] at Δf = 0, ΔM = 1, γ = 0: log 2
    screenshot(page, "losses-gamma0")

    # γ = 1 through the slider's text box: the curves' values at Δf = 0 change
    box = page.locator(".cofiviz-gamma input").first
    box.fill("1")
    box.press("Enter")
    deadline = time.monotonic() + 60
    while _table_numbers(page) == before and time.monotonic() < deadline:
        time.sleep(0.2)
    after = _table_numbers(page)
    assert after != before and 1.3133 in after  # Log[M] at γ = 1: log(1 + e)
    page.wait_for_timeout(1000)
    screenshot(page, "losses-gamma1")

    # γ = 99 is above the slider's range: the page draws γ = 3, shows 3 in the box and says why beside it
    box.fill("99")
    box.press("Enter")
    page.get_by_text("γ (margin) = 99 is above its upper bound 3; set to 3.").first.wait_for(timeout=60_000)
    deadline = time.monotonic() + 60
    while 3.0486 not in _table_numbers(page) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert 3.0486 in _table_numbers(page)       # Log[M] at γ = 3: log(1 + e³)
    expect(box).to_have_value("3", timeout=60_000)
    screenshot(page, "losses-gamma-refused")

    # a malformed score list shows a message, and the page keeps working
    scores = page.locator(".cofiviz-scores input").first
    scores.fill("1, 2, three")
    scores.press("Enter")
    page.get_by_text("is not a number").first.wait_for(timeout=60_000)
    scores.fill("1, 2, 3, 4, 5, 6")
    scores.press("Enter")
    page.get_by_text("F E D C B A").first.wait_for(timeout=60_000)
    screenshot(page, "losses-bound")
    assert page_errors.errors == [], page_errors.errors


# ---------------------------------------------------------------------------------------------- ties & Plackett–Luce tab
def test_ties_tab_follows_theta_nu_and_the_list():
    from cofiviz.losses import plackett_luce_loss

    v = LossShapes()
    table = v._ties_table.object
    at0 = table[table["Δf"] == "0"]
    np.testing.assert_allclose(at0[["P(win)", "P(tie)", "P(loss)"]].sum(axis=1), 1.0, atol=2e-4)  # rounded to 4 places
    v.theta = 3.0                              # Rao–Kupper at Δf = 0: P(tie) = (θ − 1)/(θ + 1)
    row = v._ties_table.object.iloc[0]
    assert row["model"] == "Rao–Kupper θ=3" and row["P(tie)"] == pytest.approx(0.5)
    v.nu = 2.0                                 # Davidson at Δf = 0: P(tie) = ν/(2 + ν)
    dav = v._ties_table.object[v._ties_table.object["model"] == "Davidson ν=2"].iloc[0]
    assert dav["P(tie)"] == pytest.approx(0.5)
    before = v._pl_text.object
    v.pl_scores = "3, 2, 1, 0, -1, -2"
    expected = plackett_luce_loss([3, 2, 1, 0, -1, -2], [5, 4, 4, 3, 3, 1])[0]
    assert f"{expected:.4f}" in v._pl_text.object and v._pl_text.object != before
    v.pl_ties = "efron"
    assert "(efron)" in v._pl_text.object
    v.pl_grades = "5, 4, x, 3, 3, 1"
    assert v._pl_error.visible and "is not a number" in v._pl_error.object
    v.pl_grades = "5, 4, 4, 3, 3, 1"
    assert not v._pl_error.visible
    v.__panel__()


@pytest.mark.browser
def test_ties_tab_renders_and_theta_changes_the_plot(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1200}))
    page.goto(f"{server.url}/losses", wait_until="networkidle")
    page.locator(".cofiviz-fig4-table td").first.wait_for(timeout=30_000)
    page.get_by_text("Ties & Plackett–Luce", exact=True).first.click()
    before = _table_numbers(page, ".cofiviz-ties-table")
    assert 0.3333 in before                    # θ = 2 and ν = 1 at Δf = 0: a third each
    # the tab's two plot rows (Rao–Kupper and Davidson; the Plackett–Luce curve and gradient bars) are drawn
    wait_for_canvases(page, 3)
    page.get_by_text("Order by score").first.wait_for(timeout=30_000)
    screenshot(page, "losses-ties-theta2")

    box = page.locator(".cofiviz-theta input").first
    box.fill("3")
    box.press("Enter")
    deadline = time.monotonic() + 30
    while _table_numbers(page, ".cofiviz-ties-table") == before and time.monotonic() < deadline:
        time.sleep(0.2)
    after = _table_numbers(page, ".cofiviz-ties-table")
    assert after != before and 0.5 in after   # Rao–Kupper θ = 3 at Δf = 0: P(tie) = 1/2

    scores = page.locator(".cofiviz-pl-scores input").first
    scores.fill("3, 2, 1, 0, -1, -2")
    scores.press("Enter")
    page.get_by_text("A B C D E F").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1000)
    screenshot(page, "losses-ties-theta3")
    assert page_errors.errors == [], page_errors.errors
