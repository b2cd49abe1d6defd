"""``benchmarks/bench_tuning_ceiling.py``'s settings and summaries (behaviour only: no real data is fitted)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from cofiviz.models import GCR, ItemMean

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
bench = importlib.import_module("bench_tuning_ceiling")


def trial(kind, valid, test):
    return {"kind": kind, "valid": {"ndcg@10": valid}, "test": test}


def test_summary_of_picked_reference_and_ceiling():
    trials = [trial("configured", 0.80, 0.70), trial("anchor", 0.82, 0.69), trial("draw", 0.85, 0.68),
              trial("draw", 0.79, 0.72)]
    got = bench.summarise(trials, itemmean_test=0.70)
    assert got["picked"] == pytest.approx(-0.02)      # the best on validation is the third
    assert got["reference"] == pytest.approx(-0.01)   # the anchor beats the configured model on validation
    assert got["ceiling"] == pytest.approx(0.02)      # the last is best on test
    assert got["rho"] == pytest.approx(-1.0)      # validation ranks 2 3 4 1, test ranks 3 2 1 4


def test_settings_are_the_configured_model_its_anchors_then_seeded_draws():
    got = bench.settings(GCR, draws=5, seed=3)
    assert [k for k, _ in got] == ["configured"] + ["anchor"] * len(GCR.tune_anchors) + ["draw"] * 5
    assert got[0][1] == {} and got[1][1] == dict(GCR.tune_anchors[0])
    assert got == bench.settings(GCR, draws=5, seed=3)
    assert got != bench.settings(GCR, draws=5, seed=4)
    assert all(set(p) <= set(GCR.search_space) for kind, p in got if kind == "draw")


def test_a_model_without_a_search_space_has_no_draws():
    space = getattr(ItemMean, "search_space", {}) or {}
    got = bench.settings(ItemMean, draws=5, seed=0)
    assert len([k for k, _ in got if k == "draw"]) == (5 if space else 0)


def test_help_runs():
    out = subprocess.run([sys.executable, str(BENCH / "bench_tuning_ceiling.py"), "--help"], capture_output=True,
                         text=True, check=True)
    assert "--draws" in out.stdout and "--json" in out.stdout
