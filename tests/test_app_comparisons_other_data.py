"""The Comparisons dashboard and the tables' rows on the user's own files: a run of them that the store holds is
shown (its Data choice), and the rows not run yet show their published numbers with the files and the command
that run them."""

from __future__ import annotations

import json
import time

import pytest

from conftest import PanelServer, count_canvases, screenshot
from cofiviz import datasets
from cofiviz import reproductions as R
from cofiviz.dashboards.comparisons import Comparisons

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 150, "n_items": 100, "density": 0.4}


@pytest.fixture(scope="module")
def netflix_store(tmp_path_factory):
    """A store holding the quick GAPfm Table 2 on a small folder in the Netflix Prize's layout, and that folder."""
    root = tmp_path_factory.mktemp("comparisons-netflix")
    folder = datasets.write_netflix_prize(datasets.netflix_like(n_ratings=40_000, n_users=250, n_items=400, seed=0),
                                          root / "nf", probe_fraction=0.06)
    R.reproduce("gapfm-table2", quick=True, store=root / "store", html_path=root / "r.html",
                data={"name": "netflix-prize", "path": str(folder)}, log=lambda m: None)
    return root / "store", folder


def test_the_page_shows_a_run_on_the_users_files_and_says_what_the_others_need(netflix_store):
    store, folder = netflix_store
    c = Comparisons(store=str(store), quick=True, reproduction="gapfm-table2")
    assert c._data_select.options == [f"the Netflix Prize: {folder.resolve()} (data version "
                                      f"{c._status.version[:8]})"]
    assert f"They ran on the Netflix Prize from `{folder.resolve()}`" in c._summary.object
    assert "Every cell is there" in c._summary.object and not c._files.visible
    t = c._table.value
    gap = t[t["method"] == "GAPfm"]
    assert c.metric == "gap@5"                          # the page opens a table without NDCG@10 on its last metric
    assert gap["status"].eq("ok").all() and gap["paper"].iloc[0] == pytest.approx(0.195)
    # Table 3 has no run here: its published numbers, the files it needs and the command
    c.reproduction = "gapfm-table3"
    assert "run `cofiviz reproduce gapfm-table3 --data netflix-prize=FOLDER --quick`" in c._summary.object
    assert c._files.visible and "probe.txt" in c._files.object and "training_set/" in c._files.object
    assert "(PopRec, SVD++, CofiRank, GAPfm, GAPfm+AdaptiveSelection; N = 50)" in c._files.object
    t = c._table.value
    assert t["paper"].notna().any() and t["cofiviz"].isna().all()
    assert t["status"].str.startswith("needs your files: --data netflix-prize=FOLDER").all()
    assert c._compute.disabled and c._compute_all.disabled and not c._error.visible
    # CofiRank's Table 2: its own data set first, the Netflix rows not run yet, the EachMovie rows too
    c.data = DATA
    c.reproduction = "cofirank-table2"
    assert c._data_select.options == ["synthetic", "EachMovie: not run yet (needs your files)",
                                      "the Netflix Prize: not run yet (needs your files)"]
    assert c._data_select.visible and "Rows that need your files" in c._files.object
    assert "`cofiviz reproduce cofirank-table2 --data eachmovie=PATH`" in c._files.object
    c._data_select.value = "the Netflix Prize: not run yet (needs your files)"
    assert "weak generalization on the Netflix Prize" in c._summary.object
    assert set(c._table.value["N"]) == {10}
    assert c._table.value.loc[c._table.value["method"] == "CofiRank-NDCG", "paper"].iloc[0] == pytest.approx(0.6081)
    c._data_select.value = "synthetic"
    assert "on MovieLens 100K" in c._summary.object and c._table.value["status"].eq("not run").all()


@pytest.fixture(scope="module")
def server(netflix_store):
    store, _ = netflix_store
    srv = PanelServer(["apps/comparisons.py"], env={"COFIVIZ_STORE": str(store), "COFIVIZ_QUICK": "1",
                                                     "COFIVIZ_COMPARISONS_DATA": json.dumps(DATA)})
    yield srv
    srv.close()


def _choose(page, label_start: str):
    select = page.locator(".bk-input-group").filter(has_text="Reproduction").locator("select").first
    select.select_option(label=next(f"{r.name} — {r.title}" for r in R.REPRODUCTIONS.values()
                                    if f"{r.name} — {r.title}".startswith(label_start)))


@pytest.mark.browser
def test_the_netflix_rows_in_the_browser(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1200}))
    page.goto(f"{server.url}/comparisons", wait_until="domcontentloaded")
    page.get_by_text("cells are in the results store").first.wait_for(timeout=60_000)
    # a table that runs only on the user's files, not run: what it needs and the command
    _choose(page, "gapfm-table3")
    page.get_by_text("Rows that need your files").first.wait_for(timeout=30_000)
    page.get_by_text("cofiviz reproduce gapfm-table3 --data netflix-prize=FOLDER").first.wait_for(timeout=30_000)
    page.get_by_text("These rows run on your own copy of the Netflix Prize").first.wait_for(timeout=30_000)
    page.get_by_text("needs your files: --data netflix-prize=FOLDER").first.wait_for(timeout=30_000)
    screenshot(page, "comparisons-netflix-not-run")
    # the run the store holds: shown with its data, the paper beside it
    _choose(page, "gapfm-table2")
    page.get_by_text("They ran on the Netflix Prize from").first.wait_for(timeout=30_000)
    deadline = time.monotonic() + 30
    while count_canvases(page) == 0 and time.monotonic() < deadline:
        time.sleep(0.25)
    assert count_canvases(page) > 0, "no plot canvas rendered"
    assert page.get_by_text("Rows that need your files").count() == 0 or not page.get_by_text(
        "Rows that need your files").first.is_visible()
    screenshot(page, "comparisons-netflix-run")
    # a table with rows on the paper's own data and on the user's files: the Data choice switches to the Netflix rows
    _choose(page, "cofirank-table2")
    page.get_by_text("The rows on EachMovie").first.wait_for(timeout=30_000)
    data = page.locator(".cofiviz-comparisons-data select").first
    data.wait_for(timeout=30_000)
    data.select_option(label="the Netflix Prize: not run yet (needs your files)")
    # the page reads the table's cells for that data in a thread of its session: on a machine whose cores are
    # busy with other work that takes longer than the other steps
    page.get_by_text("weak generalization on the Netflix Prize").first.wait_for(timeout=90_000)
    page.get_by_text("cofiviz reproduce cofirank-table2 --data netflix-prize=FOLDER").first.wait_for(timeout=90_000)
    page.get_by_text("needs your files: --data netflix-prize=FOLDER").first.wait_for(timeout=90_000)
    screenshot(page, "comparisons-cofirank-netflix-rows")
    assert page_errors.errors == [], page_errors.errors
