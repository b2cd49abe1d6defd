"""The per-iteration recorder: what it scores, and that scoring never changes what a model learns."""

import math

import numpy as np
import pytest

from cofiviz import protocols
from cofiviz.datasets import synthetic
from cofiviz.util.errors import ParameterError
from cofiviz.models import RegSVD
from cofiviz.engine.trace import Trace

METRICS = ["ndcg@10", "ap"]


@pytest.fixture(scope="module")
def split():
    r = synthetic(kind="local_low_rank", n_users=300, n_items=200, n_ratings=12000, seed=0)
    return protocols.make("weak", r, n_train=10, n_valid=5, min_test=5, seed=0)


def _fit(split, trace=None, max_iter=30):
    model = RegSVD(max_iter=max_iter, tol=0.0, patience=0, seed=0)
    model.fit(split.train, split.valid, callbacks=[trace] if trace is not None else [])
    return model


def _trace(split, **kw):
    parts = {"train": split.train, "valid": split.valid, "test": split.candidates("test")}
    return Trace(parts, METRICS, train=split.train, **kw)


def _scored(trace):
    return [r["iteration"] for r in trace.records if r["values"]]


def test_scoring_spaced_out_keeps_the_first_and_last_and_changes_nothing_learned(split):
    plain = _fit(split)
    every = _trace(split)
    spaced = _trace(split, throttle=0.0)
    a, b = _fit(split, every), _fit(split, spaced)
    assert _scored(every) == list(range(1, 31))
    # scoring three parts takes far longer than an iteration of RegSVD on 3,000 ratings: once two scorings are
    # timed, most iterations are not scored
    assert _scored(spaced)[:2] == [1, 2] and _scored(spaced)[-1] == 30 and len(_scored(spaced)) < 30
    assert [r["iteration"] for r in spaced.records] == list(range(1, 31))   # every iteration still recorded
    for model in (a, b):
        assert [h["loss"] for h in model.history_] == [h["loss"] for h in plain.history_]
        np.testing.assert_array_equal(model.score(np.arange(300), np.arange(300) % 200),
                                      plain.score(np.arange(300), np.arange(300) % 200))
    # the scored iterations carry the same values as when every iteration is scored
    by_iteration = {r["iteration"]: r["values"] for r in every.records}
    for r in spaced.records:
        if r["values"]:
            assert r["values"] == by_iteration[r["iteration"]]
    row = spaced.flat(next(r for r in spaced.records if not r["values"]))
    assert math.isnan(row["test_ndcg@10"]) and not math.isnan(row["loss"])


def test_a_throttle_above_the_scoring_time_scores_every_iteration(split):
    trace = _trace(split, throttle=1e6)      # far above any scoring time, on any machine
    _fit(split, trace, max_iter=8)
    assert _scored(trace) == list(range(1, 9)) and trace.scoring_seconds > 0.0


@pytest.mark.parametrize("bad", [-1.0, "1", True, float("nan")])
def test_a_throttle_must_be_seconds(split, bad):
    with pytest.raises(ParameterError, match="throttle must be a number of seconds"):
        _trace(split, throttle=bad)
