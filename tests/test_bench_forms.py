"""``benchmarks/bench_forms.py``: each model's slower forms against its defaults. Its run on a slice behaves as
documented; the shipped run (``benchmarks/bench_forms.json``) is of the forms and defaults the models declare now,
every default is level with its slower forms, and the README shows its table. Nothing here is timed."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from cofiviz.models import available_models, get_model_class

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_forms  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "benchmarks" / "bench_forms.json"


def test_each_declared_form_is_compared_under_each_setting_that_reads_it():
    assert bench_forms.comparisons("regsvd") == [({}, "dtype", "float64"), ({}, "sgd_loss", "after"),
                                                 ({"solver": "als"}, "dtype", "float64"),
                                                 ({"solver": "als"}, "als_solve", "cholesky")]
    assert bench_forms.comparisons("cofirank") == [({}, "assignment_start", "scores")]
    assert bench_forms.comparisons("itemmean") == []


@pytest.mark.parametrize("diff, p, level", [(0.0, 1.0, True), (-0.0019, 0.5, True), (-0.0021, 0.5, False),
                                            (-0.001, 0.01, False), (0.01, 0.001, True)])
def test_level_means_within_the_tolerance_and_not_significantly_below(diff, p, level):
    assert bench_forms.level({"diff": diff, "t_test_p": p}) is level


def test_a_run_on_a_slice_gives_a_row_per_comparison_with_its_paired_test():
    result = bench_forms.run(["movielens-100k"], seeds=[0, 1], n_train=10, models=["svdpp"], users=60, repeats=1,
                             log=lambda line: None)
    (row,) = result["rows"]
    assert (row["model"], row["param"], row["default"], row["slower"]) == ("svdpp", "sgd_loss", "during", "after")
    assert row["pairs"] > 60 and 0 < row["ndcg_default"] <= 1 and 0 < row["ndcg_slower"] <= 1
    assert math.isclose(row["diff"], row["ndcg_default"] - row["ndcg_slower"], abs_tol=1e-12)
    assert row["seconds_default"] > 0 and math.isclose(row["ratio"], row["seconds_slower"] / row["seconds_default"])
    assert row["level"] == bench_forms.level(row)
    assert result["with_forms"] == [m for m in available_models() if get_model_class(m).speed_forms]


def test_the_shipped_run_is_of_the_current_forms_and_every_default_is_level():
    """A changed default or a new slower form fails here until the benchmark is run again and shipped; every row
    of the run is level on both data sets, and the default was the quicker form."""
    result = json.loads(SHIPPED.read_text())
    want = [(d, m, s, p, v) for d in ("movielens-100k", "movielens-1m") for m in result["with_forms"]
            for s, p, v in bench_forms.comparisons(m)]
    got = [(r["data"], r["model"], r["setting"], r["param"], r["slower"]) for r in result["rows"]]
    assert got == want
    assert result["with_forms"] == [m for m in available_models() if get_model_class(m).speed_forms]
    for r in result["rows"]:
        assert r["default"] == get_model_class(r["model"]).param[r["param"]].default, r
        assert r["seeds"] == [0, 1, 2] and r["level"] and bench_forms.level(r), r
        assert r["seconds_slower"] > r["seconds_default"], r


def test_a_later_run_replaces_the_rows_of_its_models_and_keeps_the_order():
    def row(data, model, param):
        return {"data": data, "model": model, "param": param, "ndcg_default": 0.5}

    earlier = {"models": ["a", "b", "c"], "rows": [row("d1", "a", "x"), row("d1", "b", "y"), row("d2", "a", "x"),
                                                   row("d2", "b", "y")]}
    later = {"models": ["a", "b", "c"], "rows": [{**row("d1", "a", "x"), "ndcg_default": 0.6},
                                                 {**row("d2", "a", "x"), "ndcg_default": 0.7}]}
    out = bench_forms.merged(earlier, later)
    assert [(r["data"], r["model"], r["ndcg_default"]) for r in out["rows"]] == [
        ("d1", "a", 0.6), ("d1", "b", 0.5), ("d2", "a", 0.7), ("d2", "b", 0.5)]


def test_the_readme_shows_the_table_of_the_shipped_run():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- bench_forms table: benchmarks/bench_forms.json -->\n", 1)[1]
    assert block.split("<!-- /bench_forms table -->", 1)[0] == bench_forms.markdown(json.loads(SHIPPED.read_text()))
