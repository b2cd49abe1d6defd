"""A list metric added in one place: a family defined in this file alone reaches every place that takes metric names.

The metric is rank-biased precision (Moffat & Zobel, "Rank-biased precision for measurement of retrieval
effectiveness", TOIS 2008, eq. 2) with binary relevance ``rating >= threshold`` and persistence ``p`` = 0.8::

    RBP@K = (1 - p) * sum_{i=1}^{min(K, n)} rel_(i) p^(i - 1)

It is declared as a :class:`cofiviz.metrics.Family` (a per-user kernel, a batch kernel over the ranked lists, and
the constants that kernel takes) and registered while this module runs. The tests find it in the metric-name parser,
the batch evaluator (:func:`cofiviz.metrics.score_lists`, :func:`cofiviz.evaluate`), the command line's ``--metrics``
and the metric playground, each against a plain NumPy reference with ties broken by the pessimistic rule.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numba import njit, prange

import cofiviz.metrics as M
from cofiviz import evaluate
from cofiviz.cli import main
from cofiviz.dashboards.playground import MetricPlayground, metric_values
from cofiviz.util.errors import ParameterError
from cofiviz.metrics.ranking import block_bounds
from cofiviz.models import ItemMean

from contract import planted

PERSISTENCE = 0.8


@njit
def _rbp_user(yr, k, threshold, p):
    n = yr.shape[0]
    kk = n if (k <= 0 or k > n) else k
    total = 0.0
    w = 1.0 - p
    for i in range(kk):
        if yr[i] >= threshold:
            total += w
        w *= p
    return total


@njit(parallel=True)
def _rbp_lists(offsets, ranked, ideal, gmax, k, n_blocks, threshold, p, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _rbp_user(ranked[lo:lo + n], k, threshold, p)


RBP = M.Family("rbp", "optional", _rbp_lists, lambda batch, options: (options.threshold, PERSISTENCE),
               summary="rank-biased precision, persistence 0.8 (Moffat & Zobel 2008)")


def reference_rbp(ratings, scores, k=None, threshold=4.0, p=PERSISTENCE) -> float:
    """Plain NumPy: order by score descending, the lower rating first among equal scores, then position."""
    y = np.asarray(ratings, dtype=float)
    s = np.asarray(scores, dtype=float)
    if len(y) == 0:
        return float("nan")
    order = np.lexsort((np.arange(len(y)), y, -s))
    rel = (y[order] >= threshold).astype(float)[: len(y) if k is None else k]
    return float((1 - p) * np.sum(rel * p ** np.arange(len(rel))))


@pytest.fixture(scope="module", autouse=True)
def registered():
    M.register(RBP)
    yield RBP
    M.unregister("rbp")


def test_its_names_parse_and_bad_ones_name_it():
    assert M.check_metrics("RBP@5, ndcg@10") == ["rbp@5", "ndcg@10"]
    assert M.parse_metric("rbp") == M.MetricSpec("rbp", "rbp", None)
    assert {"rbp", "rbp@K"} <= set(M.metric_forms())
    with pytest.raises(ParameterError, match="rbp@K"):
        M.parse_metric("rpb@5")
    with pytest.raises(ValueError, match="exists"):
        M.register(RBP)


def test_the_batch_evaluator_computes_it_with_ties_as_the_reference_does():
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 12, 40)
    off = np.concatenate([[0], np.cumsum(lens)])
    y = rng.integers(0, 6, off[-1]).astype(float)
    s = rng.integers(0, 4, off[-1]).astype(float)            # many ties
    out = M.score_lists(off, y, s, ["rbp@3", "rbp", "ndcg@3"], threshold=3)
    alone = M.score_lists(off, y, s, ["ndcg@3"], threshold=3)
    for u in range(len(lens)):
        a, b = off[u], off[u + 1]
        np.testing.assert_allclose(out["rbp@3"][u], reference_rbp(y[a:b], s[a:b], 3, threshold=3), rtol=1e-15)
        np.testing.assert_allclose(out["rbp"][u], reference_rbp(y[a:b], s[a:b], threshold=3), rtol=1e-15)
    np.testing.assert_array_equal(out["ndcg@3"], alone["ndcg@3"])   # the other families are untouched


def test_evaluate_and_the_command_line_take_it(tmp_path):
    split = planted(seed=4)
    model = ItemMean().fit(split.train)
    ev = evaluate(model, split, metrics=["rbp@5", "ndcg@10"], threshold=4)
    per_user = ev.per_user[ev.per_user["metric"] == "rbp@5"]
    assert len(per_user) == split.test.n_users and ev.means["rbp@5"] == pytest.approx(per_user["value"].mean())
    split.train.write(tmp_path / "train.tsv")
    split.test.write(tmp_path / "test.tsv")
    out = tmp_path / "out.json"
    assert main(["run", "itemmean", "--train", str(tmp_path / "train.tsv"), "--test", str(tmp_path / "test.tsv"),
                 "--metrics", "rbp@5,ndcg@10", "--json", str(out), "--quiet"]) == 0
    res = json.loads(out.read_text())
    assert list(res["metrics"]) == ["rbp@5", "ndcg@10"] and 0 < res["metrics"]["rbp@5"] < 1


def test_the_playground_shows_it():
    grades, scores = (5, 4, 3, 3, 2, 1, 0, 0), (1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0)
    values = metric_values(grades, scores, k=3, threshold=4)
    assert values["RBP@k"] == reference_rbp(grades, scores, 3)
    page = MetricPlayground()
    assert "RBP@" in page._values.object
