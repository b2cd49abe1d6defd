"""``benchmarks/bench_scale.py``'s counts of work and its command line (behaviour only: nothing is timed)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cofiviz import Ratings
from cofiviz.datasets import tiny
from cofiviz.models import available_models

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
bench = importlib.import_module("bench_scale")


def slow_counts(r: Ratings) -> dict:
    """Every pair of each user's ratings, one by one."""
    pairs = item_pairs = 0
    squares = cubes = 0.0
    for u in range(r.n_users):
        ys = r.ratings[r.user_slice(u)]
        n = len(ys)
        cubes += float(n) ** 3
        squares += float(n) ** 2
        for a in range(n):
            for b in range(a + 1, n):
                item_pairs += 1
                pairs += ys[a] != ys[b]
    return {"pairs": pairs, "item_pairs": item_pairs, "user_squares": squares, "user_cubes": cubes}


def random_table(seed: int) -> Ratings:
    rng = np.random.default_rng(seed)
    n_users, n_items = 9, 15
    cells = rng.choice(n_users * n_items, size=70, replace=False)
    users = cells // n_items
    users[users == 4] = 3                           # user 4 has no rating
    cells = np.unique(users * n_items + cells % n_items)
    return Ratings(cells // n_items, cells % n_items, rng.choice([1.0, 2.0, 2.5, 4.0, 5.0], size=len(cells)),
                   user_ids=np.arange(n_users), item_ids=np.arange(n_items))


@pytest.mark.parametrize("table", [tiny(), random_table(0), random_table(1)], ids=["tiny", "random0", "random1"])
def test_work_counts_match_a_pair_by_pair_count(table):
    got = bench.work_counts(table)
    want = slow_counts(table)
    assert got["pairs"] == want["pairs"]
    assert got["item_pairs"] == want["item_pairs"]
    assert got["user_cubes"] == want["user_cubes"]
    assert got["user_squares"] == want["user_squares"]
    assert bench.work_of("cofirank", got) == want["user_squares"]
    assert bench.work_of("wlt", got) == want["user_squares"]
    assert got["ratings"] == len(table)
    assert got["users"] == int(np.count_nonzero(table.user_counts()))


def test_a_user_whose_ratings_are_all_equal_has_no_preference_pair():
    r = Ratings([0, 0, 0, 1, 1], [0, 1, 2, 0, 1], [3, 3, 3, 1, 5], user_ids=[0, 1], item_ids=[0, 1, 2])
    assert bench.work_counts(r)["pairs"] == 1
    assert bench.work_counts(r)["item_pairs"] == 4


def test_every_registered_model_is_a_case_in_order():
    names = [c[0] for c in bench._cases(None)]
    assert set(available_models()) <= set(names)
    assert len(names) == len(set(names))
    assert names.index("poprec") < names.index("cgpor")


def test_cofirank_fixed_case_keeps_lambda_as_given():
    from cofiviz.models import CofiRank

    r = Ratings([0, 0, 1, 1, 2], [0, 1, 0, 2, 1], [5, 3, 4, 1, 2], user_ids=[0, 1, 2], item_ids=[0, 1, 2])
    name, model, params, splits = next(c for c in bench._cases(None) if c[0] == bench.COFIRANK_FIXED)
    got = bench.fit_params(CofiRank, params, 4, r)
    assert model == "cofirank" and set(splits) == set(bench.SPLITS)
    assert got == {"max_iter": 4, "patience": 0, "reg_users": None}
    assert bench.fit_params(CofiRank, {}, 4, r) == {"max_iter": 4, "patience": 0}
    fixed = CofiRank(**got).fit(r)
    assert fixed.reg_effective_ == CofiRank.param["reg"].default
    assert bench.CONTRAST == {name}  # shown beside the defaults, not counted in the linearity goal


def test_models_with_passes_compare_time_per_pass():
    small = {"seconds_per_iteration": 0.04, "seconds_per_pass": 0.02}
    big = {"seconds_per_iteration": 2.0, "seconds_per_pass": 0.25}  # its median iteration made 8 passes
    assert bench.time_ratio(big, small) == pytest.approx(12.5)
    assert bench.time_ratio({"seconds_per_iteration": 0.3}, {"seconds_per_iteration": 0.1}) == pytest.approx(3.0)


def test_the_quickest_run_counts_with_every_run_and_the_highest_peak_kept():
    runs = [{"seconds_per_iteration": 0.30, "peak_mb": 500.0, "iterations": 5},
            {"seconds_per_iteration": 0.21, "peak_mb": 480.0, "iterations": 5},
            {"seconds_per_iteration": 0.25, "peak_mb": 510.0, "iterations": 5}]
    got = bench.quickest(runs)
    assert got["seconds_per_iteration"] == 0.21 and got["repeats"] == 3
    assert got["run_seconds"] == [0.30, 0.21, 0.25] and got["peak_mb"] == 510.0
    passes = [{"seconds_per_iteration": 0.5, "seconds_per_pass": 0.25, "peak_mb": 1.0},
              {"seconds_per_iteration": 0.4, "seconds_per_pass": 0.2, "peak_mb": 1.0}]
    assert bench.quickest(passes)["seconds_per_pass"] == 0.2


def test_help_runs():
    out = subprocess.run([sys.executable, str(BENCH / "bench_scale.py"), "--help"], capture_output=True, text=True,
                         check=True)
    assert "--iterations" in out.stdout and "--json" in out.stdout
