"""The Comparisons dashboard: cached results from the store at once, a missing cell computed from the page."""

import json
import shutil
import time

import pytest

from conftest import PanelServer, count_canvases, heading_sizes, screenshot
from cofiviz import reproductions as R
from cofiviz.dashboards.comparisons import Comparisons
from cofiviz.reproductions import cached_status
from cofiviz.engine.store import ResultsStore

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 150, "n_items": 100, "density": 0.4}


def _populate(root):
    """Quick CofiRank Table 2 and LCR figures in a store; then one cell (ItemMean's) removed again."""
    for name in ("cofirank-table2", "lcr-figures"):
        R.reproduce(name, quick=True, store=root, html_path=root.parent / f"{name}.html", data=DATA,
                    log=lambda m: None)
    st = R.status("cofirank-table2", quick=True, store=root, data=DATA)
    cell, key, _ = next(x for x in st.cells if x[0].model == "itemmean")
    ResultsStore(root).delete(key)
    return cell


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("comparisons") / "store"
    _populate(root)
    return root


def test_cached_results_show_and_a_missing_cell_is_computed(store, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(store, root)
    c = Comparisons(store=str(root), quick=True, data=DATA, reproduction="cofirank-table2")
    t = c._table.value
    ndcg = t[t["method"] == "CofiRank-NDCG"].iloc[0]
    assert ndcg["status"] == "ok" and 0 < ndcg["cofiviz"] <= 1 and ndcg["paper"] == pytest.approx(0.64)
    assert t.loc[t["method"] == "ItemMean", "status"].iloc[0] == "not run"
    assert "**1 missing**" in c._summary.object and len(c._pending_select.options) == 1
    # the plot draws the paper beside cofiviz
    bars = c._plots.objects
    sources = {str(v) for el in bars for v in el.dimension_values("source")}
    assert sources == {"paper", "cofiviz"}
    c._pending_select.value = 0
    c._on_compute(False)
    assert c.wait(300)
    assert "Every cell is there" in c._summary.object and "Done: 1 of 1" in c._progress.object
    t = c._table.value
    assert t.loc[t["method"] == "ItemMean", "status"].iloc[0] == "ok"
    # the figures: curves per run, the final values in the table
    c.reproduction = "lcr-figures"
    assert set(c.param.metric.objects) == {"zero_one", "ap", "ndcg@10"}
    assert list(c._table.value["run"]) == ["rank=5", "rank=10"]
    c.figure = "Figure 3"
    assert len(c._table.value) == 2 and c._table.value["run"].str.contains("loss=").all()
    c.figure = "Figure 5"     # not in the quick version: said, not drawn empty
    assert "No run of Figure 5" in str(c._plots.objects[0].data)


def test_a_reproduction_is_read_once_until_a_cell_is_written(store, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(store, root)
    first = cached_status("cofirank-table2", quick=True, store=root, data=DATA)
    assert cached_status("cofirank-table2", quick=True, store=root, data=DATA) is first
    assert cached_status("cofirank-table2", quick=False, store=root, data=DATA) is not first   # other arguments
    cell, key = first.pending[0]
    R.compute_cell(cell, key, root, first.version)
    again = cached_status("cofirank-table2", quick=True, store=root, data=DATA)
    assert again is not first and again.n_done == first.n_done + 1 and not again.pending
    ResultsStore(root).delete(key)                   # a removed cell is seen too
    assert cached_status("cofirank-table2", quick=True, store=root, data=DATA).n_done == first.n_done


def test_bad_input_is_a_message(tmp_path, monkeypatch):
    c = Comparisons(store=str(tmp_path / "s"), quick=True, data={"name": "nosuchdata"},
                    reproduction="gapfm-table4")
    assert c._error.visible and "nosuchdata" in c._error.object and "Traceback" not in c._error.object
    c.data = DATA          # and the page keeps working
    n_cells = len(R.status("gapfm-table4", quick=True, store=tmp_path / "s", data=DATA).cells)
    assert not c._error.visible and f"0 of {n_cells} cells" in c._summary.object
    monkeypatch.setenv("COFIVIZ_COMPARISONS_DATA", "{not json")
    with pytest.raises(Exception, match="COFIVIZ_COMPARISONS_DATA is not JSON"):
        Comparisons.from_environment()


@pytest.fixture(scope="module")
def server(store):
    srv = PanelServer(["apps/comparisons.py"], env={"COFIVIZ_STORE": str(store), "COFIVIZ_QUICK": "1",
                                                     "COFIVIZ_COMPARISONS_DATA": json.dumps(DATA)})
    yield srv
    srv.close()


@pytest.mark.browser
def test_comparisons_in_the_browser(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1200}))
    page.goto(f"{server.url}/comparisons", wait_until="domcontentloaded")
    page.get_by_text("4 of 4 cells").first.wait_for(timeout=60_000)      # cached LCR figures, at once
    deadline = time.monotonic() + 30
    while count_canvases(page) == 0 and time.monotonic() < deadline:
        time.sleep(0.25)
    assert count_canvases(page) > 0, "no plot canvas rendered"
    page.get_by_text("rank=10").first.wait_for(timeout=30_000)
    screenshot(page, "comparisons-lcr-figures")
    title_size = heading_sizes(page, "h3")
    # CofiRank's losses against the paper: cached rows at once, one missing cell computed from the page
    page.locator(".bk-input-group").filter(has_text="Reproduction").locator("select").first.select_option(
        label=next(k for k in (f"{r.name} — {r.title}" for r in R.REPRODUCTIONS.values())
                   if k.startswith("cofirank-table2")))
    # the figures' content leaves with the choice: the next thing shown is the new reproduction (or that it is read)
    t0 = time.monotonic()
    page.locator("h3").filter(has_text=R.REPRODUCTIONS["cofirank-table2"].title).first.wait_for(timeout=30_000)
    titled = time.monotonic() - t0
    page.wait_for_function("() => !document.body.innerText.includes('rank=10')", timeout=30_000)
    # shadow roots too: the runs' names in the table and the legend
    deadline = time.monotonic() + 30
    while page.get_by_text("rank=10").count() and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert page.get_by_text("rank=10").count() == 0, "the previous reproduction's runs are still shown"
    print(f"comparisons: the new title {titled:.2f} s after the choice, the old runs gone {time.monotonic() - t0:.2f} s")
    page.get_by_text("CofiRank-Ordinal").first.wait_for(timeout=30_000)
    page.get_by_text("1 missing").first.wait_for(timeout=30_000)
    assert heading_sizes(page, "h3") == title_size    # the changed title keeps its size (Bootstrap's h3 is larger)
    screenshot(page, "comparisons-cofirank-cached")
    page.get_by_role("button", name="Compute selected").click()
    page.get_by_text("Every cell is there").first.wait_for(timeout=120_000)
    page.wait_for_function("() => !document.body.innerText.includes('not run')", timeout=30_000)
    screenshot(page, "comparisons-cofirank-computed")
    assert page_errors.errors == [], page_errors.errors


def test_long_method_names_lie_the_bars_down(tmp_path):
    """Method names longer than 16 characters read beside horizontal bars (upright ones overlap their neighbours'
    names); short names keep upright bars. Both from the shipped tables, nothing computed."""
    import holoviews as hv

    def lying(name):
        plots = Comparisons(reproduction=name, store=str(tmp_path / "store"))._plots.objects
        bars = [b for p in plots for b in p.traverse(lambda x: x, [hv.Bars])]
        assert bars, name
        return {bool(hv.Store.lookup_options("bokeh", b, "plot").kwargs.get("invert_axes", False)) for b in bars}

    assert lying("cofirank-tuned") == {True}      # "CofiRank-NDCG at cofiviz's defaults"
    assert lying("cofirank-table2") == {True}     # "CofiRank-Ordinal (original form)"
    assert lying("ml1m") == {False}               # "Bilinear", "LLORMA", ...


def test_lying_bars_ask_for_room_for_their_names_and_the_plots_are_made_again_only_then(tmp_path):
    """Lying bars' method names take the left of each plot: each plot asks for that much more width beside
    :data:`PLOT_MIN_WIDTH` of bars, so that fewer stand side by side (still shrinking to it on a phone); a change of
    that width makes new panes (a drawn pane's styles are not changed), an unchanged one updates them in place."""
    from cofiviz.dashboards.comparisons import LABEL_PIXELS_PER_CHAR
    from cofiviz.dashboards.theme import PLOT_MIN_WIDTH

    page = Comparisons(reproduction="cofirank-tuned", store=str(tmp_path / "store"))
    longest = len("CofiRank-NDCG (rank, λ, offsets on validation)")
    assert page._plots.basis == PLOT_MIN_WIDTH + LABEL_PIXELS_PER_CHAR * longest
    panes = list(page._plots._box.objects)
    assert {p.styles["flex"] for p in panes} == {f"1 1 {page._plots.basis}px"}
    assert {p.min_width for p in panes} == {PLOT_MIN_WIDTH}
    page._plots.basis = page._plots.basis                      # the same width: the same panes, new plots
    page._plots.objects = [o.opts(title="again") for o in page._plots.objects]
    assert [id(p) for p in page._plots._box.objects] == [id(p) for p in panes]
    page.reproduction = "ml1m"                                 # short names, upright bars: new panes, narrower
    assert page._plots.basis == PLOT_MIN_WIDTH
    assert not {id(p) for p in page._plots._box.objects} & {id(p) for p in panes}
    assert {p.styles["flex"] for p in page._plots._box.objects} == {f"1 1 {PLOT_MIN_WIDTH}px"}
