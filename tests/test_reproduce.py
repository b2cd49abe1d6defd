"""`cofiviz reproduce`: registry, paper vs cofiviz table, missing methods, the HTML report, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cofiviz import reproductions as R
from cofiviz.cli import main
from cofiviz.util.errors import ParameterError
from cofiviz.reproductions.cofirank import AUTHORS_CODE, AUTHORS_CODE_STRONG, AUTHORS_CODE_TOPN, AUTHORS_MMMF
from cofiviz.evaluation.significance import holm

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 150, "n_items": 100, "density": 0.4}
NAMES = ["cofirank-table2", "cofirank-table3", "lcr-table2", "lcr-figures", "gapfm-table4", "gapfm-topn"]


def test_registry_and_paper_table():
    assert set(NAMES) <= set(R.REPRODUCTIONS)
    ref = R.paper_table()
    assert {"paper", "table", "method", "metric", "n_train", "value"} <= set(ref.columns)
    # the definitions follow the papers' protocols
    assert R.REPRODUCTIONS["cofirank-table2"].protocol == "cofirank-weak"
    assert R.REPRODUCTIONS["cofirank-table3"].protocol == "strong"
    assert R.REPRODUCTIONS["lcr-table2"].protocol == "lcr-weak"
    assert R.REPRODUCTIONS["gapfm-table4"].ns == [10, 20, 30, 40]
    assert R.REPRODUCTIONS["gapfm-topn"].threshold == 5.0
    # every paper row of the tables is a method of its reproduction
    for name in ("cofirank-table2", "cofirank-table3", "lcr-table2", "gapfm-table4"):
        rep = R.REPRODUCTIONS[name]
        rows = ref[(ref["paper"] == rep.paper) & (ref["table"].astype(str) == rep.table)]
        assert set(rows["method"]) <= {m.paper for m in rep.methods}, name


@pytest.mark.parametrize("name", ["cofirank-table2", "lcr-table2", "gapfm-topn", "lcr-figures"])
def test_quick_reproduction_writes_report(name, tmp_path):
    rep = R.reproduce(name, quick=True, store=tmp_path / "store", html_path=tmp_path / "r.html", data=DATA,
                      log=lambda m: None)
    html = (tmp_path / "r.html").read_text()
    assert "<script" in html and '<script src="http' not in html and "<script type=\"text/javascript\" src=" not in html
    assert "QUICK" in " ".join(rep.notes)
    if name == "lcr-figures":
        assert rep.results.traces["part"].eq("test").any()
        assert "Figure 1" in html
        return
    t = rep.table
    assert {"metric", "N", "method", "paper", "cofiviz", "diff", "status"} <= set(t.columns)
    ok = t[t["status"] == "ok"]
    assert len(ok) and ok["cofiviz"].between(0, 1).all()
    with_paper = ok[ok["paper"].notna()]
    assert ((with_paper["cofiviz"] - with_paper["paper"] - with_paper["diff"]).abs() < 1e-12).all()
    # each (metric, N) has one best method; every other one carries its paired tests against it
    for (metric, n), g in ok.groupby(["metric", "N"]):
        assert (g["vs_best"] == 0).sum() == 1, (metric, n)
        best = g.loc[g["vs_best"] == 0, "cofiviz"].iloc[0]
        assert best == g["cofiviz"].max()
        others = g[g["vs_best"] != 0]
        assert others["wilcoxon_p"].between(0, 1).all() and others["vs_best"].notna().all()
        assert (others["p_holm"] >= others["wilcoxon_p"] - 1e-15).all()
    tested = t["wilcoxon_p"].notna()
    assert t.loc[tested, "p_holm"].tolist() == pytest.approx(holm(t.loc[tested, "wilcoxon_p"].tolist()).tolist())
    if name == "cofirank-table2":
        mmmf = t[t["method"] == "MMMF"]
        assert mmmf["status"].eq("ok").all() and mmmf["paper"].iloc[0] == pytest.approx(0.6061)
        assert mmmf["original"].iloc[0] == pytest.approx(AUTHORS_MMMF[10])   # the MATLAB code under Octave
        assert t.loc[t["method"] == "CofiRank-NDCG", "paper"].iloc[0] == pytest.approx(0.64)
        # the authors' code's own numbers sit beside the paper's on the rows it was run for
        item_order = t[t["method"] == "CofiRank-NDCG (item-id order)"]
        assert item_order["original"].iloc[0] == pytest.approx(AUTHORS_CODE["ndcg"][10])
        # the paper's ordinal form has no counterpart in that code; the original form's row has it
        assert t.loc[t["method"] == "CofiRank-Ordinal", "original"].isna().all()
        assert t.loc[t["method"] == "CofiRank-Ordinal (original form)", "original"].iloc[0] == pytest.approx(
            AUTHORS_CODE["ordinal"][10])
        assert "original" in R.format_table(t).splitlines()[2]
        strong = R.status("cofirank-table3", quick=True, store=tmp_path / "empty", data=DATA).table
        strong_item_order = strong[strong["method"] == "CofiRank-NDCG (item-id order)"]
        assert strong_item_order["original"].iloc[0] == pytest.approx(AUTHORS_CODE_STRONG["ndcg"][10])
        assert strong.loc[strong["method"] == "CofiRank-NDCG", "original"].isna().all()
    elif name == "gapfm-topn":
        assert t["paper"].isna().all()       # no published MovieLens numbers for this protocol
        # the authors' CofiRank program, on its row and for the first metric only
        gap = t[t["metric"] == "gap@5"]
        assert gap.loc[gap["method"] == "CofiRank", "original"].iloc[0] == pytest.approx(AUTHORS_CODE_TOPN[10])
        assert gap.loc[gap["method"] != "CofiRank", "original"].isna().all()
        assert t.loc[t["metric"] != "gap@5", "original"].isna().all()
    else:
        assert t["original"].isna().all() and "original" not in R.format_table(t)
    if name == "lcr-table2":                 # every column has its fits, early-stopped on its own metric
        assert not t["status"].eq("not run").any(), t[t["status"] == "not run"]
    # a second run reads every cell from the store
    again = R.reproduce(name, quick=True, store=tmp_path / "store", html_path=tmp_path / "r2.html", data=DATA,
                        log=lambda m: None)
    pd.testing.assert_frame_equal(again.table, rep.table)


def test_unregistered_model_is_a_missing_row(tmp_path, monkeypatch):
    base = R.REPRODUCTIONS["gapfm-table4"]
    rep = R.Reproduction(**{**base.__dict__, "name": "test-missing",
                            "methods": [R.Method("GAPfm", "nosuchmodel", "GAPfm"),
                                        R.Method("ItemMean", "itemmean", None)]})
    monkeypatch.setitem(R.REPRODUCTIONS, "test-missing", rep)
    out = R.reproduce("test-missing", quick=True, store=tmp_path / "s", html_path=tmp_path / "r.html", data=DATA,
                      log=lambda m: None)
    row = out.table[out.table["method"] == "GAPfm"].iloc[0]
    assert row["status"] == "missing: model 'nosuchmodel' is not registered" and pd.notna(row["paper"])
    assert (out.table[out.table["method"] == "ItemMean"]["status"] == "ok").all()


def test_errors(tmp_path):
    with pytest.raises(ParameterError, match="lcr-table2"):
        R.reproduce("nosuch", quick=True, store=tmp_path)


SHARED_TABLES = Path(__file__).resolve().parents[2] / "shared" / "reference" / "paper_tables.csv"


#: the plain-text copies of the papers, for the cells the shared table leaves out
PAPER_TEXTS = {"cofirank-nips07": SHARED_TABLES.parents[1] / "papers" / "001_0c0e6fa3313a6f17.txt"}


def _printed_in_paper(cell) -> bool:
    """Whether the paper's text prints ``value ± std`` for the cell: in the MovieLens block of its table, on the
    method's line, in the column of its N (the tables' columns are N = 10, 20, 50)."""
    lines = PAPER_TEXTS[cell.paper].read_text().splitlines()
    caption = next(i for i, line in enumerate(lines) if line.startswith(f"Table {cell.table}:"))
    block = next(i for i in range(caption, -1, -1) if "MovieLens" in lines[i])
    for line in lines[block:caption]:
        cells = [c.strip() for c in line.split("\t")]
        if cell.method in cells:
            printed = cells[cells.index(cell.method) + 1:]
            column = [10, 20, 50].index(int(cell.n_train))
            return printed[column] == f"{cell.value:.4f} ± {cell.std:.4f}"
    return False


@pytest.mark.skipif(not SHARED_TABLES.is_file(), reason="the papers' numbers as distributed beside the project")
def test_the_paper_numbers_are_the_published_ones():
    """Every number the reproductions hold is the published one, and every published one is held.

    The shared table leaves out CofiRank Table 3's Gaussian-process rows (the numbers CofiRank quotes from Yu et al.
    2006); those cells are checked against the paper's text instead.
    """
    ours = R.paper_table()
    ours = ours[ours["dataset"] == "movielens-100k"]      # the other data sets': tests/test_reproduce_other_data.py
    published = pd.read_csv(SHARED_TABLES, dtype={"table": str})
    key = ["paper", "table", "dataset", "protocol", "method", "metric", "n_train"]
    merged = ours.merge(published, on=key, how="outer", suffixes=("", "_published"), indicator=True)
    assert not (merged["_merge"] == "right_only").any(), merged[merged["_merge"] == "right_only"]
    only_ours = merged[merged["_merge"] == "left_only"]
    assert set(only_ours["method"]) <= {"GPR", "CGPR", "GPOR", "CGPOR"}, only_ours
    assert len(only_ours) in (0, 12)
    for cell in only_ours.itertuples():
        assert PAPER_TEXTS[cell.paper].is_file() and _printed_in_paper(cell), cell
    merged = merged[merged["_merge"] == "both"]
    assert (merged["value"] == merged["value_published"]).all()
    same_std = (merged["std"] == merged["std_published"]) | (merged["std"].isna() & merged["std_published"].isna())
    assert same_std.all(), merged[~same_std]


def test_cli_reproduce(tmp_path, capsys):
    assert main(["reproduce", "list"]) == 0
    out = capsys.readouterr().out
    for name in NAMES:
        assert name in out
    # a reproduction whose results ship says how many cells ship
    from cofiviz.reproductions import shipped as S
    lines = {line.split(":")[0]: line for line in out.splitlines()}
    for name in NAMES:
        sh = S.load(name)
        assert (f"[ships {sh.provenance['n_cells']} cells]" in lines[name]) if sh is not None else "[ships" not in lines[name]
    js = tmp_path / "t.json"
    code = main(["reproduce", "gapfm-table4", "--quick", "--store", str(tmp_path / "s"), "--html",
                 str(tmp_path / "g.html"), "--data", json.dumps(DATA), "--json", str(js), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "ndcg@5" in out and "WLT" in out and "paper" in out and "diff" in out
    payload = json.loads(js.read_text())
    assert payload["quick"] is True and payload["table"]
    wlt = [row for row in payload["table"] if row["method"] == "WLT"]
    assert len(wlt) == 3 and all(row["status"] == "ok" and row["paper"] is not None for row in wlt)
    assert (tmp_path / "g.html").is_file()
    assert main(["reproduce", "nosuch"]) == 2


def test_union_grid_and_per_metric_early_stopping(tmp_path, monkeypatch):
    """A method's grid may be a union of grids; with stop_per_metric each column is chosen among the fits
    whose early stopping watched that column's metric."""
    m = R.Method("GCR", "gcr", "GCR", {"patience": 2, "max_iter": 4, "rank": 5, "loss": "log_m"},
                 [{"lr": [0.1]}, {"lr": [0.3], "reg": [0.3]}], stop_per_metric=True)
    grids = m.grids(quick=False, metrics=["ap", "ndcg@10"])
    assert len(grids) == 2 and grids[1]["reg"] == [0.3] and "reg" not in grids[0]
    assert all(g["valid_metric"] == ["ap", "ndcg@10"] for g in grids)
    base = R.REPRODUCTIONS["lcr-table2"]
    rep = R.Reproduction(**{**base.__dict__, "name": "test-union", "ns": [10], "seeds": [0], "methods": [m]})
    monkeypatch.setitem(R.REPRODUCTIONS, "test-union", rep)
    out = R.reproduce("test-union", store=tmp_path / "s", html_path=tmp_path / "r.html", data=DATA,
                      log=lambda msg: None)
    res = out.results.results
    assert res["cell"].nunique() == 4           # 2 grids x 2 watched metrics
    for metric in ("ap", "ndcg@10"):
        row = out.table[out.table["metric"] == metric].iloc[0]
        assert row["status"] == "ok"
        assert json.loads(row["setting"])["valid_metric"] == metric
        # the reported value is the test value of the fit chosen on validation among those watching `metric`
        fits = res[res["setting"].map(lambda s: json.loads(s)["valid_metric"] == metric)]
        valid = fits[(fits["part"] == "valid") & (fits["metric"] == metric)].set_index("setting")["value"]
        best = valid.idxmax()
        test = fits[(fits["part"] == "test") & (fits["metric"] == metric) & (fits["setting"] == best)]["value"]
        assert row["cofiviz"] == pytest.approx(float(test.iloc[0]))


def test_a_best_method_without_per_user_values_leaves_its_rows_untested():
    """The best of a (metric, N) is the best mean of every row, not of the rows whose per-user values are at hand:
    without the best's values no row is tested against a runner-up in its place."""
    from types import SimpleNamespace

    from cofiviz.reproductions.report import add_paired_tests

    rng = np.random.default_rng(0)
    users = np.arange(40)
    per_user = pd.concat([pd.DataFrame({"cell": cell, "metric": "ndcg@10", "seed": 0, "user": users,
                                        "value": rng.uniform(0, 1, len(users)) + shift})
                          for cell, shift in (("b", 0.0), ("c", -0.1))], ignore_index=True)
    table = pd.DataFrame({"metric": "ndcg@10", "N": 10, "method": ["A", "B", "C"], "cofiviz": [0.9, 0.6, 0.5],
                          "status": "ok", "cells": ["a", "b", "c"]})
    out = add_paired_tests(table, SimpleNamespace(per_user=per_user))
    assert out[["vs_best", "t_test_p", "wilcoxon_p"]].isna().all().all()
    # with the best's values, each other row is tested against it
    best = per_user[per_user["cell"] == "b"].assign(cell="a", value=lambda d: d["value"] + 0.3)
    out = add_paired_tests(table, SimpleNamespace(per_user=pd.concat([per_user, best], ignore_index=True)))
    assert out.loc[0, "vs_best"] == 0 and out.loc[[1, 2], "vs_best"].lt(0).all()
    assert out.loc[[1, 2], "wilcoxon_p"].between(0, 1).all()
