"""The papers' tables on data sets read from the user's own files: EachMovie, the Netflix Prize and Yelp.

Small copies of each format are written with ``write_netflix_prize``, ``write_eachmovie`` and ``write_yelp``, and
``cofiviz reproduce NAME --data NAME=PATH --quick`` runs the table's rows on them beside the published numbers of
that data set; without the files, the error names them; a store key identifies the folder and its content.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cofiviz import Ratings, datasets
from cofiviz import reproductions as R
from cofiviz.cli import main
from cofiviz.util.errors import DataError
from cofiviz.engine.experiment import Experiment
from cofiviz.reproductions.run import files_needed, one_sweep, preview, stored_runs, views
from cofiviz.reproductions.spec import data_spec
from cofiviz.engine.store import ResultsStore

OTHER_TABLES = Path(__file__).resolve().parents[2] / "shared" / "reference" / "paper_tables_other_data.csv"
#: the shared table's names of the data sets, and cofiviz's
SHARED_NAMES = {"netflix": "netflix-prize", "eachmovie": "eachmovie", "yelp": "yelp"}


def _netflix_like(seed: int = 0) -> Ratings:
    return datasets.netflix_like(n_ratings=40_000, n_users=250, n_items=400, seed=seed)


@pytest.fixture(scope="module")
def netflix(tmp_path_factory) -> Path:
    """A Netflix Prize folder (training_set/, probe.txt, movie_titles.txt) of 250 customers and 40,000 ratings, 6 % of
    them in the probe set (GAPfm's protocol tests the customers with 5 probe ratings)."""
    return datasets.write_netflix_prize(_netflix_like(), tmp_path_factory.mktemp("netflix") / "nf",
                                        probe_fraction=0.06)


@pytest.fixture(scope="module")
def eachmovie(tmp_path_factory) -> Path:
    """EachMovie's Vote.txt: 300 people, 120 movies, scores of six levels (1..6 stars written as 0, 0.2, …, 1)."""
    r = datasets.synthetic(kind="popularity", n_users=300, n_items=120, density=0.35, seed=1)
    stars = np.where((r.ratings == 5) & (np.arange(len(r)) % 2 == 0), 6.0, r.ratings)
    six = Ratings(r.users, r.items, stars, user_ids=r.user_ids, item_ids=r.item_ids, scale=(1, 6))
    return datasets.write_eachmovie(six, tmp_path_factory.mktemp("eachmovie") / "Vote.txt")


@pytest.fixture(scope="module")
def yelp(tmp_path_factory) -> Path:
    """Yelp's review JSON lines: 200 users, 150 businesses, 9,000 reviews."""
    r = datasets.synthetic(kind="local_low_rank", n_users=200, n_items=150, density=0.3, seed=2)
    return datasets.write_yelp(r, tmp_path_factory.mktemp("yelp") / "yelp_academic_dataset_review.json")


# ------------------------------------------------------------------ the published numbers
def _other_cells() -> pd.DataFrame:
    ours = R.paper_table()
    return ours[ours["dataset"] != "movielens-100k"].reset_index(drop=True)


def test_the_other_data_sets_cells_are_in_the_reproductions():
    """What the papers print on EachMovie, Netflix and Yelp, held by the reproduction of each table."""
    ours = _other_cells()
    counts = ours.groupby(["paper", "table", "dataset"]).size().to_dict()
    assert counts == {("cofirank-nips07", "2", "eachmovie"): 9, ("cofirank-nips07", "2", "netflix-prize"): 4,
                      ("cofirank-nips07", "3", "eachmovie"): 18, ("lcr-www14", "2", "eachmovie"): 42,
                      ("lcr-www14", "2", "yelp"): 42, ("gapfm", "2", "netflix-prize"): 36,
                      ("gapfm", "3", "netflix-prize"): 15}
    netflix = ours[(ours["paper"] == "cofirank-nips07") & (ours["dataset"] == "netflix-prize")]
    assert set(netflix["n_train"]) == {10, 20} and netflix["std"].isna().all()       # no N = 50 column, no ±
    assert R.get("cofirank-table2").other("netflix-prize").ns == [10, 20]
    # each table's rows on each data set are methods of its reproduction bound to that data set
    for name in ("cofirank-table2", "cofirank-table3", "lcr-table2", "gapfm-table2", "gapfm-table3"):
        for other in R.get(name).other_data:
            rep = R.get(name).on_dataset(other.dataset)
            assert {c.method for c in other.paper_numbers} <= {m.paper for m in rep.methods}, (name, other.dataset)
            assert {c.dataset for c in other.paper_numbers} == {other.dataset}
            assert {c.n_train for c in other.paper_numbers} <= set(rep.ns)
    assert (R.get("gapfm-table3").other("netflix-prize").paper_numbers[-1].method == "GAPfm+AdaptiveSelection")


@pytest.mark.skipif(not OTHER_TABLES.is_file(), reason="the papers' numbers as distributed beside the project")
def test_the_other_data_sets_cells_are_the_published_ones():
    """Every number on EachMovie, Netflix and Yelp is the shared table's, and every one of its numbers is held."""
    published = pd.read_csv(OTHER_TABLES, dtype={"table": str})
    published["dataset"] = published["dataset"].map(SHARED_NAMES)
    ours = _other_cells()
    key = ["paper", "table", "dataset", "protocol", "method", "metric", "n_train"]
    merged = ours.merge(published, on=key, how="outer", suffixes=("", "_published"), indicator=True)
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"]
    assert (merged["value"] == merged["value_published"]).all(), merged[merged["value"] != merged["value_published"]]
    same_std = (merged["std"] == merged["std_published"]) | (merged["std"].isna() & merged["std_published"].isna())
    assert same_std.all(), merged[~same_std]


# ------------------------------------------------------------------ binding a table to the user's files
def test_a_table_bound_to_the_users_files_takes_that_data_sets_rows(tmp_path, monkeypatch):
    base = R.get("cofirank-table2")
    assert base.on() is base and base.on(None).dataset == "movielens-100k"
    monkeypatch.setenv("HOME", str(tmp_path))
    rep = base.on({"name": "NetflixPrize", "path": "~/nf"})
    assert rep.dataset == {"name": "netflix-prize", "path": str(tmp_path / "nf")}       # absolute, the name canonical
    assert rep.ns == [10, 20] and rep.seeds == [0] and "Netflix" in rep.title
    assert [m.label for m in rep.methods] == ["CofiRank-NDCG", "CofiRank-Regression", "PopRec", "ItemMean"]
    assert all(not m.original for m in rep.methods)       # the authors' code's MovieLens numbers stay off these rows
    assert rep.command(True) == f"cofiviz reproduce cofirank-table2 --data netflix-prize={tmp_path / 'nf'} --quick"
    lcr = R.get("lcr-table2").on({"name": "eachmovie", "path": "Vote.txt"})
    assert lcr.threshold == 5.0 and lcr.ns == [10, 20, 50] and lcr.seeds == [0, 1, 2]
    assert R.get("lcr-table2").on({"name": "yelp", "path": "r.json"}).threshold == 4.0
    em3 = R.get("cofirank-table3").on({"name": "eachmovie", "path": "Vote.txt"})
    mmmf = next(m for m in em3.methods if m.label == "MMMF")
    assert mmmf.fixed["reg"] == pytest.approx(1 / 1.9)      # §6: λ = 1/1.9 on EachMovie
    # a data set of the papers the table has no rows on: no published numbers beside it
    nf = R.get("lcr-table2").on({"name": "netflix-prize", "path": "x"})
    assert nf.paper_numbers == [] and "no numbers" in nf.title
    # a smoke test on synthetic data keeps the reproduction's rows and numbers
    assert R.get("cofirank-table2").on({"name": "synthetic"}).paper_numbers == base.paper_numbers
    assert data_spec("movielens-100k") == {"name": "movielens-100k"}


def test_without_the_files_the_error_names_them(tmp_path, capsys):
    with pytest.raises(DataError, match=r"--data netflix-prize=FOLDER, FOLDER being a folder with training_set/"):
        R.get("gapfm-table2").on()
    with pytest.raises(DataError, match="probe.txt"):
        R.reproduce("gapfm-table3", quick=True, store=tmp_path / "s", log=lambda m: None)
    with pytest.raises(DataError, match="cofirank-table2 on the Netflix Prize reads your own copy"):
        R.get("cofirank-table2").on({"name": "netflix-prize"})
    with pytest.raises(DataError, match="rows on the Netflix Prize only"):
        R.get("gapfm-table2").on({"name": "synthetic"})
    assert main(["reproduce", "gapfm-table2", "--store", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "--data netflix-prize=FOLDER" in err and "training_set/" in err and "probe.txt" in err
    assert main(["reproduce", "cofirank-table2", "--data", "netflix-prize"]) == 2
    assert "--data netflix-prize=FOLDER" in capsys.readouterr().err
    assert main(["reproduce", "cofirank-table2", "--data", "movielens-1m=x"]) == 2
    assert "NAME=PATH is for the data sets read from your own files" in capsys.readouterr().err


def test_reproduce_list_marks_the_rows_that_need_the_users_files(capsys):
    assert main(["reproduce", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    gapfm2 = next(line for line in lines if line.startswith("gapfm-table2:"))
    assert "[needs your files: --data netflix-prize=FOLDER" in gapfm2 and "probe.txt" in gapfm2
    at = lines.index(next(line for line in lines if line.startswith("cofirank-table2:")))
    assert "needs your files" not in lines[at]
    assert lines[at + 1].strip().startswith("+ rows on EachMovie (N = 10, 20, 50) need your files: --data eachmovie=PATH")
    assert lines[at + 2].strip().startswith("+ rows on the Netflix Prize (N = 10, 20) need your files: "
                                            "--data netflix-prize=FOLDER")
    assert not lines[lines.index(gapfm2) + 1].startswith("    +")          # all of its rows need them: said once


def test_store_keys_identify_the_folder_and_its_content(netflix, tmp_path):
    """Two folders never share a cell: another path, or the same path with other ratings, gives other keys."""
    def keys(folder):
        rep = R.get("cofirank-table2").on({"name": "netflix-prize", "path": str(folder)})
        exps, _ = rep.experiments(quick=True)
        return [k for _, exp in exps for _, k in exp.keys()]

    original = keys(netflix)
    assert len(set(original)) == len(original) == 4
    assert keys(netflix) == original                                       # the same folder, the same keys
    copy = shutil.copytree(netflix, tmp_path / "copy")
    assert not set(keys(copy)) & set(original)                               # another folder: other keys
    changed = _netflix_like()
    changed.ratings[0] = 6 - changed.ratings[0]                              # one rating changed
    other = datasets.write_netflix_prize(changed, tmp_path / "changed", probe_fraction=0.06)
    assert not set(keys(other)) & set(original)


def test_the_data_version_covers_the_probe_set(tmp_path):
    """The same ratings with another probe set are other data to GAPfm's protocol, which tests on the probe set: their
    data versions differ; the same folder read twice has one version."""
    from cofiviz.engine.loading import data_version

    r = _netflix_like()
    a = datasets.write_netflix_prize(r, tmp_path / "a", probe_fraction=0.06, seed=0)
    b = datasets.write_netflix_prize(r, tmp_path / "b", probe_fraction=0.06, seed=1)
    va, vb = (data_version({"name": "netflix-prize", "path": str(f)}) for f in (a, b))
    assert va != vb
    assert data_version({"name": "netflix-prize", "path": str(a), "probe": True}) == va


def test_one_sweep_merges_a_tables_rows_with_their_keys():
    rep = R.get("cofirank-table2").on({"name": "synthetic", "kind": "popularity", "n_users": 60, "n_items": 40,
                                       "density": 0.5})
    exps = [exp for _, exp in rep.experiments(quick=True)[0]]
    merged = one_sweep(exps)
    assert len(merged) == 1 and isinstance(merged[0], Experiment)
    assert [k for _, k in merged[0].keys()] == [k for exp in exps for _, k in exp.keys()]
    figures = [exp for _, exp in R.get("lcr-figures").experiments(quick=True)[0]]
    assert len(one_sweep(figures)) == len({(e.trace_every, tuple(e.trace_metrics)) for e in figures})


# ------------------------------------------------------------------ end to end on the written files
def _run(tmp_path, name: str, data: str, *extra: str) -> dict:
    out = tmp_path / "out.json"
    code = main(["reproduce", name, "--data", data, "--quick", "--store", str(tmp_path / "store"), "--html",
                 str(tmp_path / "r.html"), "--json", str(out), "--no-progress", *extra])
    assert code == 0
    return json.loads(out.read_text())


def _check(payload: dict, name: str, dataset: str, html: Path, capsys=None):
    """The report holds every row of the table on ``dataset`` with its published number, cofiviz's value and the
    paired tests."""
    rep = R.get(name).on_dataset(dataset)
    table = pd.DataFrame(payload["table"])
    n = rep.ns[0]
    assert set(table["method"]) == {m.label for m in rep.methods} and set(table["N"]) == {n}
    assert (table["status"] == "ok").all(), table[table["status"] != "ok"]
    assert table["cofiviz"].between(0, 1).all()
    published = {(c.method, c.metric): c.value for c in rep.paper_numbers if c.n_train == n}
    for row in table.itertuples():
        m = next(x for x in rep.methods if x.label == row.method)
        want = published.get((m.paper, row.metric))
        assert (row.paper == pytest.approx(want)) if want is not None else pd.isna(row.paper), row
    for _, g in table.groupby(["metric", "N"]):
        assert (g["vs_best"] == 0).sum() == 1 and g.loc[g["vs_best"] != 0, "wilcoxon_p"].between(0, 1).all()
    notes = " ".join(payload["notes"])
    assert "data version" in notes and "QUICK" in notes
    text = html.read_text()
    assert rep.title in text and f"--data {dataset}=" in text


@pytest.mark.parametrize("name", ["cofirank-table2", "gapfm-table2", "gapfm-table3"])
def test_netflix_rows_end_to_end(name, netflix, tmp_path, capsys):
    payload = _run(tmp_path, name, f"netflix-prize={netflix}")
    out = capsys.readouterr().out
    _check(payload, name, "netflix-prize", tmp_path / "r.html")
    assert "the Netflix Prize" in out.splitlines()[0]
    table = pd.DataFrame(payload["table"])
    if name == "cofirank-table2":
        assert table.loc[table["method"] == "CofiRank-NDCG", "paper"].iloc[0] == pytest.approx(0.6081)
    else:
        assert list(dict.fromkeys(table["metric"])) == ["p@5", "ndcg@5", "gap@5"]
        gap = table[(table["metric"] == "gap@5") & (table["method"] == "GAPfm")]
        assert gap["paper"].iloc[0] == pytest.approx(0.195 if name == "gapfm-table2" else 0.219)
        assert any("the paper: GAPfm above all three" in note for note in payload["notes"])
    # the run is found in the store from its cells' manifests, and read again without loading the files
    runs = stored_runs(name, quick=True, store=tmp_path / "store")
    assert len(runs) == 1 and runs[0].n_done == len(runs[0].cells) and runs[0].reproduction.data_name == "netflix-prize"
    assert runs[0].reproduction.dataset == {"name": "netflix-prize", "path": str(netflix.resolve())}


@pytest.mark.parametrize("name", ["cofirank-table2", "cofirank-table3", "lcr-table2"])
def test_eachmovie_rows_end_to_end(name, eachmovie, tmp_path):
    payload = _run(tmp_path, name, f"eachmovie={eachmovie}")
    _check(payload, name, "eachmovie", tmp_path / "r.html")
    store = ResultsStore(tmp_path / "store")
    configs = [store.manifest(k)["config"] for k in store.done_keys()]
    assert {c["data"]["name"] for c in configs} == {"eachmovie"}
    if name == "lcr-table2":       # AP counts the top two of EachMovie's six grades relevant
        assert {c["threshold"] for c in configs} == {5.0}


def test_yelp_rows_end_to_end(yelp, tmp_path):
    payload = _run(tmp_path, "lcr-table2", f"yelp={yelp.parent}")           # the folder of the review file
    _check(payload, "lcr-table2", "yelp", tmp_path / "r.html")
    table = pd.DataFrame(payload["table"])
    assert table.loc[(table["method"] == "LCR") & (table["metric"] == "ap"), "paper"].iloc[0] == pytest.approx(0.7903)


def test_a_dask_scheduler_runs_the_netflix_rows_in_one_sweep(netflix, tmp_path):
    """``--scheduler`` sends every row's cells to that scheduler as one sweep; the cells land in the store."""
    from distributed import Client

    from cofiviz.engine.sweep import local_cluster

    lines = []
    with local_cluster(1, numba_threads=1, dashboard_address=None) as cluster, Client(cluster):
        report = R.reproduce("cofirank-table2", quick=True, store=tmp_path / "store", html_path=tmp_path / "r.html",
                             data={"name": "netflix-prize", "path": str(netflix)}, scheduler=cluster.scheduler_address,
                             log=lines.append)
    sweeps = [line for line in lines if "one Dask sweep" in line]
    assert sweeps == ["cofirank-table2: one Dask sweep of 4 cells (4 model entries)"]
    assert (report.table["status"] == "ok").all()
    assert len(ResultsStore(tmp_path / "store").done_keys()) == 4


# ------------------------------------------------------------------ what the comparisons page reads
def test_views_preview_and_the_files_needed(netflix, tmp_path):
    store = tmp_path / "store"
    found = views("gapfm-table3", quick=True, store=store)
    assert [v.dataset for v in found] == ["netflix-prize"] and "not run yet" in found[0].label
    st = found[0].read("gapfm-table3", quick=True, store=store)
    assert st.needs == "--data netflix-prize=FOLDER" and not st.cells
    assert (st.table["status"] == "needs your files: --data netflix-prize=FOLDER").all()
    assert st.table["paper"].notna().sum() == 21 and st.table["cofiviz"].isna().all()
    assert preview("cofirank-table2", "netflix-prize", quick=True).table["N"].unique().tolist() == [10]
    assert preview("cofirank-table2", "netflix-prize").table["N"].unique().tolist() == [10, 20]
    needed = files_needed("cofirank-table2")
    assert len(needed) == 2 and "`cofiviz reproduce cofirank-table2 --data eachmovie=PATH`" in needed[0]
    assert "(CofiRank-NDCG, CofiRank-Regression; N = 10, 20)" in needed[1] and "probe.txt" in needed[1]
    assert files_needed("cofirank-table2", have={"eachmovie", "netflix-prize"}) == []
