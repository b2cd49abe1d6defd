"""``benchmarks/bench_tuning_goal.py``'s verdicts and table (behaviour only: no real data is fitted)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
bench = importlib.import_module("bench_tuning_goal")


def row(model, n, seed, diff, p, **extra):
    return {"model": model, "N": n, "seed": seed, "picked": 0.70 + diff, "itemmean": 0.70, "diff": diff, "p": p,
            **extra}


def test_the_models_are_the_ranking_models_the_registry_can_reduce_to_the_item_mean():
    assert sorted(bench.MODELS) == ["bilinear", "cofirank", "gapfm", "gcr", "lcr", "llorma", "mmmf", "wlt"]


def test_a_cell_is_below_only_when_its_difference_is_negative_and_significant():
    assert bench.below(row("gcr", 10, 0, -0.01, 0.01))
    assert not bench.below(row("gcr", 10, 0, -0.01, 0.2))       # not significant
    assert not bench.below(row("gcr", 10, 0, +0.01, 0.001))     # significant, but above


def test_the_report_counts_cells_below_and_models_above_at_n_50():
    rows = [row("gcr", 10, 0, -0.02, 0.001), row("gcr", 10, 1, 0.0, 0.9), row("gcr", 50, 0, 0.004, 0.3),
            row("mmmf", 50, 0, -0.001, 0.6, item_mean_chosen=True)]
    text = bench.report(rows, ["gcr", "mmmf"], [10, 50])
    assert ("4 cells, 1 significantly below the item mean (1 after Holm's adjustment over the 4 cells, the family a "
            "reader scans); above it on average at N = 50: 1 of 2 models") in text
    # p = 0.04 is below 0.05 alone, not once adjusted over four cells (4 × 0.04)
    chance = bench.report([row("gcr", 10, s, d, p) for s, d, p in ((0, -0.003, 0.04), (1, 0.0, 0.9), (2, 0.001, 0.5),
                                                                   (3, 0.002, 0.3))], ["gcr"], [10])
    assert "1 significantly below the item mean (0 after Holm's adjustment over the 4 cells" in chance
    assert "-0.0100 (1/2)" in text                              # gcr at N = 10: mean of -0.02 and 0
    lines = [line for line in text.splitlines() if line.startswith("mmmf") and "item mean chosen" in line]
    assert len(lines) == 1
