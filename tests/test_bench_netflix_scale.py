"""``benchmarks/bench_netflix_scale.py``: its split cache, its budget, and its shipped run against the README
(behaviour and the shipped numbers' consistency only: nothing is timed here)."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from cofiviz import protocols
from cofiviz.datasets import netflix_like
from cofiviz.models import available_models, get_model_class

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
bench = importlib.import_module("bench_netflix_scale")
SHIPPED = ROOT / "benchmarks" / "bench_netflix_scale.json"
MARK = "<!-- bench_netflix_scale table: benchmarks/bench_netflix_scale.json -->"
END = "<!-- /bench_netflix_scale table -->"


def test_a_kept_split_loads_back_as_made(tmp_path):
    ratings = netflix_like(20_000, seed=3)
    name, params = bench.PROTOCOL
    split = protocols.make(name, ratings, seed=0, **params)
    bench.save_split(split, tmp_path)
    back = bench.load_split(tmp_path)
    for part in bench.PARTS:
        a, b = getattr(split, part), getattr(back, part)
        assert (a.n_users, a.n_items) == (b.n_users, b.n_items)
        for f in ("users", "items", "ratings", "indptr"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert back.protocol["name"] == split.protocol["name"]
    assert back.train.scale == split.train.scale


def test_the_estimate_scales_the_fit_by_its_work_and_the_evaluation_by_the_test_ratings():
    small = {"setup_seconds": 1.0, "seconds_per_iteration": 2.0, "evaluate_seconds": 3.0}
    assert bench.estimate(small, 10.0, 5.0, 3) == pytest.approx(10.0 + 3 * 20.0 + 15.0)


def test_a_model_is_left_out_unrun_only_when_heavy_or_its_state_alone_is_over_the_limit():
    for model in available_models():
        klass = get_model_class(model)
        assert (bench.unrun_reason(model, 200, 300) is not None) == klass.scale.heavy, model
        sizes = klass().state_size(477_893, 17_770)
        over = 8 * sum(sizes.values()) > bench.STATE_LIMIT_MB * 2**20
        assert (bench.unrun_reason(model, 477_893, 17_770) is not None) == (klass.scale.heavy or over), model
    # GPR keeps one coefficient per training rating and reads its kernel from the items' features
    assert bench.unrun_reason("gpr", 477_893, 17_770) is None
    assert bench.unrun_reason("cofirank", 477_893, 17_770) is None


@pytest.fixture(scope="module")
def shipped() -> dict:
    return json.loads(SHIPPED.read_text())


def test_the_shipped_run_covers_every_registered_model_at_every_size(shipped):
    assert set(shipped["models"]) == set(available_models())
    assert shipped["sizes"] == list(bench.SIZES)
    assert shipped["protocol"] == {"name": bench.PROTOCOL[0], **bench.PROTOCOL[1]}
    rows = {(r["model"], r["size"]) for r in shipped["rows"]}
    assert rows == {(m, s) for m in shipped["models"] for s in shipped["sizes"]}
    for r in shipped["rows"]:
        unrun = bench.unrun_reason(r["model"], shipped["prepared"][r["size"]]["users"],
                                   shipped["prepared"][r["size"]]["items"])
        if unrun:
            assert r.get("skipped") == unrun, (r["model"], r["size"], r.get("skipped"))
        else:   # measured, or skipped for the time its smaller fit predicts
            assert "delta_mb" in r or "budget" in r["skipped"], (r["model"], r["size"], r.get("skipped"))
        assert not r.get("error"), (r["model"], r["size"], r["error"])


def test_every_fit_measured_over_the_memory_goal_is_named_beside_the_table(shipped):
    measured = [r for r in shipped["rows"] if "delta_mb" in r]
    assert measured
    table = bench.markdown(shipped)
    for r in measured:
        baseline = r.get("baseline_mb", shipped["baselines"][r["size"]]["peak_mb"])   # its own run's baseline
        assert r["delta_mb"] == pytest.approx(r["peak_mb"] - baseline)
        named = f"{r['model']} at {r['size']} (" in table
        assert named == (r["delta_mb"] > bench.MEMORY_GOAL_MB), (r["model"], r["size"], r["delta_mb"])


def test_the_readme_table_is_the_shipped_run(shipped):
    text = (ROOT / "README.md").read_text()
    block = re.search(re.escape(MARK) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert block, "the README has no bench_netflix_scale table"
    assert block.group(1).strip() == bench.markdown(shipped).strip()


def test_a_later_run_replaces_the_rows_of_its_models_and_sizes_only():
    earlier = {"budget": 300.0, "rows": [{"model": "a", "size": "1M", "x": 1}, {"model": "b", "size": "1M", "x": 2}]}
    later = {"budget": 900.0, "rows": [{"model": "b", "size": "1M", "x": 3}, {"model": "b", "size": "10M", "x": 4}]}
    got = bench.merged(earlier, later)
    assert got["budget"] == 300.0
    assert [(r["model"], r["size"], r["x"]) for r in got["rows"]] == [("a", "1M", 1), ("b", "1M", 3), ("b", "10M", 4)]
