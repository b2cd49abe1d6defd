"""The metric playground: its numbers against the library, and the app in a real headless Chromium."""

import time

import numpy as np
import pytest

from conftest import count_canvases, forkservers, screenshot, wait_for_canvases
from conftest import playground_ndcg as _ndcg
from cofiviz import metrics as M
from cofiviz.dashboards.playground import ITEMS, METRICS, PRESETS, MetricPlayground, contributions, metric_values


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize("k,threshold", [(1, 4), (5, 4), (8, 1), (3, 5)])
def test_contributions_add_up_to_the_library_metrics(name, k, threshold):
    grades, scores = PRESETS[name]
    values = metric_values(grades, scores, k, threshold)
    _, terms, _ = contributions(grades, scores, k, threshold)
    for m in METRICS:
        if np.isnan(values[m]):
            assert np.all(np.isnan(terms[m]))
        else:
            assert np.sum(terms[m]) == pytest.approx(values[m], abs=1e-12), m


def test_ndcg_gap_preset_disagrees_with_the_real_metrics():
    (ga, sa), (gb, sb) = PRESETS["NDCG vs GAP: A (NDCG@5 prefers)"], PRESETS["NDCG vs GAP: B (GAP prefers)"]
    assert M.ndcg(ga, sa, k=5) > M.ndcg(gb, sb, k=5) + 0.1
    assert M.gap(ga, sa, ymax=5) + 0.1 < M.gap(gb, sb, ymax=5)


def test_viewer_moves_and_rejects_bad_text():
    p = MetricPlayground()
    before = p._values.object
    first = int(M.rank_order(np.array(p.grades, float), np.array(p.scores, float))[0])
    p.move(first, +1)
    assert p._values.object != before
    assert int(M.rank_order(np.array(p.grades, float), np.array(p.scores, float))[1]) == first
    p._grades_in.value = "1, 2"
    assert p._error.visible and "expected 8 numbers" in p._error.object
    p._scores_in.value = "1 1 1 1 2 2 2 2"
    assert not p._error.visible and p.scores == (1, 1, 1, 1, 2, 2, 2, 2)
    assert "Tie rule" in p._rows.objects[-1].object


def test_each_bar_chart_shows_the_order_it_draws_after_a_move():
    """Moving an item relabels the positions; each chart's axis holds exactly the new labels (an axis linked across
    the charts kept the old ones beside them)."""
    from bokeh.document import Document
    from bokeh.models import FactorRange
    from panel.io.state import set_curdoc

    doc = Document()
    with set_curdoc(doc):
        p = MetricPlayground()
        root = p.__panel__().get_root(doc)

        def axes():
            return [list(r.factors) for r in root.references() if isinstance(r, FactorRange)]

        def labels():
            order = M.rank_order(np.array(p.grades, float), np.array(p.scores, float))
            return [f"{k + 1}:{ITEMS[i]}" for k, i in enumerate(order)]

        assert axes() and all(a == labels() for a in axes())
        before = labels()
        first = int(M.rank_order(np.array(p.grades, float), np.array(p.scores, float))[0])
        p.move(first, +1)
        assert labels() != before and all(a == labels() for a in axes()), axes()


@pytest.fixture(scope="module")
def server(quiet_pages):
    return quiet_pages


@pytest.mark.browser
def test_playground_moving_an_item_changes_ndcg(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1100}))
    page.goto(f"{server.url}/playground", wait_until="networkidle")
    page.locator(".cofiviz-metric-values").first.wait_for(timeout=30_000)
    wait_for_canvases(page, 1)
    assert count_canvases(page) >= 1
    assert _ndcg(page) == "0.542"  # NDCG@5 of the default preset
    screenshot(page, "playground-initial")

    # move the item at position 1 down: NDCG@5 changes from 0.542
    page.get_by_role("button", name="▼").first.click()
    deadline = time.monotonic() + 30
    while _ndcg(page) == "0.542" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ndcg(page) not in ("0.542", None)
    page.wait_for_timeout(1500)  # let the bar charts redraw before the screenshot
    screenshot(page, "playground-moved")

    # a preset with ties highlights them and states the rule
    page.locator("select").first.select_option(label="Ties")
    page.get_by_text("Tie rule").first.wait_for(timeout=30_000)
    screenshot(page, "playground-ties")

    # bad input: a clear message, and the app keeps working
    box = page.locator("input[type=text]").first
    box.fill("1, 2")
    box.press("Enter")
    page.get_by_text("expected 8 numbers").first.wait_for(timeout=30_000)
    page.locator("select").first.select_option(label="Ideal order")
    deadline = time.monotonic() + 30
    while _ndcg(page) != "1.000" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ndcg(page) == "1.000"
    assert page_errors.errors == [], page_errors.errors


def test_a_server_of_pages_that_train_nothing_starts_no_training_worker(server):
    """The playground, losses and overview pages train nothing: their server, warm, holds no forkserver (a server of
    the monitor does: ``test_app_monitor``); a notebook served, which may train, counts as a page that does."""
    from cofiviz.dashboards.catalog import APPS, needs_workers

    assert forkservers(server) == []
    assert not needs_workers(["playground", "losses", "overview"]) and not needs_workers([])
    assert needs_workers(["playground", "monitor"]) and needs_workers(["recommendations"])
    assert needs_workers(["01-ranking-metrics"]) and needs_workers(None)
    assert {name for name, entry in APPS.items() if entry.trains} == {"monitor", "recommendations"}
