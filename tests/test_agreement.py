"""How a recomputed cell is compared with the shipped one: distances in ulp, and one readable line per cell."""

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from cofiviz.reproductions.agreement import KINDS, LOSS_ULP, compare, ulps
from cofiviz.engine.results import Results


def steps(x: float, n: int) -> float:
    for _ in range(abs(n)):
        x = math.nextafter(x, math.inf if n > 0 else -math.inf)
    return x


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e300, 1e300, allow_nan=False), st.integers(-50, 50))
def test_ulps_counts_the_doubles_between_two_values(x, n):
    y = steps(x, n)
    assert int(ulps([x], [y])[0]) == abs(n)
    assert int(ulps([y], [x])[0]) == abs(n)


def test_ulps_of_zeros_nans_and_opposite_signs():
    tiny = 5e-324
    d = ulps([0.0, -0.0, np.nan, np.nan, -tiny, 1.0, -1.0], [-0.0, tiny, np.nan, 1.0, tiny, 1.0, 1.0])
    assert d[0] == 0 and d[1] == 1 and d[2] == 0 and d[3] == np.iinfo(np.uint64).max and d[4] == 2 and d[5] == 0
    # from -1 to 1: twice the doubles from 0 to 1
    assert int(d[6]) == 2 * int(ulps([0.0], [1.0])[0])


def results(value=0.5, loss=0.25, valid=0.75, iterations=3):
    res = pd.DataFrame({"part": ["test", "valid"], "metric": ["ndcg@10", "ndcg@10"], "value": [value, valid],
                        "std": [0.1, 0.2], "n_users": [10, 10], "n_skipped": [0, 0], "iterations": [iterations] * 2,
                        "best_iteration": [2, 2], "stopped_reason": ["max_iter", "max_iter"]})
    traces = pd.DataFrame({"iteration": [1, 1, 2, 2], "part": ["train", "valid", "train", "valid"],
                           "metric": ["loss", "ndcg@10", "loss", "ndcg@10"], "value": [1.0, 0.7, loss, valid]})
    per_user = pd.DataFrame({"user": [0, 1], "metric": ["ndcg@10", "ndcg@10"], "value": [0.4, 0.6]})
    return Results(res, traces, per_user)


def test_identical_cells_agree_to_the_last_bit():
    got = compare("k", "a cell", results(), results())
    assert got.status == "exact" and got.ok and got.line().endswith("agrees to the last bit")


def test_a_training_loss_a_few_ulp_away_agrees_within_its_tolerance_and_says_where():
    got = compare("k", "a cell", results(), results(loss=steps(0.25, 3)))
    assert got.status == "within" and got.ok
    line = got.line()
    assert "agrees within 3 ulp" in line and "traces.value" in line and "training losses" in line
    assert "iteration 2, part train, metric loss" in line and "relative difference" in line
    beyond = compare("k", "a cell", results(), results(loss=steps(0.25, LOSS_ULP + 1)))
    assert beyond.status == "differs" and "DIFFERS" in beyond.line()


def test_a_metric_one_ulp_away_differs_with_the_column_the_row_and_both_values():
    assert KINDS["metrics"] == KINDS["curves"] == KINDS["per-user values"] == 0
    got = compare("k", "a cell", results(), results(value=steps(0.5, 1)))
    assert not got.ok
    line = got.line()
    assert "DIFFERS" in line and "results.value" in line and "part test, metric ndcg@10" in line
    assert repr(0.5) in line and repr(steps(0.5, 1)) in line and "1 ulp" in line
    moved = results()
    moved.traces.loc[3, "value"] = steps(0.75, -1)
    curve = compare("k", "a cell", results(), moved)
    assert not curve.ok and "curves (traces.value) at iteration 2, part valid, metric ndcg@10" in curve.line()


def test_a_changed_count_or_missing_row_differs_in_words():
    count = compare("k", "a cell", results(), results(iterations=4))
    assert not count.ok and "results.iterations" in count.line() and "shipped 3, recomputed 4" in count.line()
    # a count and a value both changed: the count is named (a whole number has no distance in ulp)
    both = compare("k", "a cell", results(), results(iterations=4, value=steps(0.5, 7)))
    assert not both.ok and "results.iterations" in both.line()
    assert {d.column for d in both.differences} == {"value", "iterations"}
    short = results()
    short.traces = short.traces.iloc[:3]
    rows = compare("k", "a cell", results(), short)
    assert not rows.ok and "4 rows shipped, 3 recomputed" in rows.line()
