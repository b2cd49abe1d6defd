"""``benchmarks/bench_tuning_ceiling.py``'s settings and summaries (behaviour only: no real data is fitted)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cofiviz.models import GCR, ItemMean
from cofiviz.search.tuning import ITEM_MEAN_DAMPINGS

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


def test_summary_tests_the_picked_and_the_ceiling_settings_per_user_against_the_item_mean():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.5, 0.9, size=200)
    same = base.copy()                                   # the picked setting: the item mean's values exactly
    better = base + 0.05 + rng.normal(0, 0.01, size=200)  # the ceiling: above the item mean for every user
    trials = [trial("configured", 0.9, float(same.mean())), trial("draw", 0.8, float(better.mean()))]
    got = bench.summarise(trials, float(base.mean()), [same, better], base)
    assert got["picked"] == pytest.approx(0.0) and got["picked_t_p"] == 1.0 and got["picked_w_p"] == 1.0
    assert got["ceiling"] == pytest.approx(0.05, abs=0.005)
    assert got["ceiling_t_p"] < 1e-10 and got["ceiling_w_p"] < 1e-10
    noisy = base + rng.normal(0, 0.1, size=200)          # no real difference: the tests must not call it one
    got = bench.summarise([trial("configured", 0.9, float(noisy.mean()))], float(base.mean()), [noisy], base)
    assert got["ceiling_t_p"] > 0.01 and got["ceiling_w_p"] > 0.01
    assert "ceiling_t_p" not in bench.summarise(trials, float(base.mean()))


def test_settings_are_the_configured_model_its_anchors_then_seeded_draws():
    got = bench.settings(GCR, draws=5, seed=3)
    n_anchors = len(GCR.tune_anchors) + len(ITEM_MEAN_DAMPINGS)  # the item mean alone at each damping
    assert [k for k, _ in got] == ["configured"] + ["anchor"] * n_anchors + ["draw"] * 5
    assert got[0][1] == {} and got[1][1] == dict(GCR.tune_anchors[0])
    assert got[-6][1] == {**GCR.item_mean_setting, "prior_damping": ITEM_MEAN_DAMPINGS[-1]}
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
