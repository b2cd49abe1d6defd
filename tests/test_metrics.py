"""cofiviz.metrics: hand-computed values, the tie rule, the public API, bad input, and a cross-check
of NDCG@10, AP, P@5 and reciprocal rank against trec_eval (pytrec-eval-terrier).

Property tests against the slow reference (tests/reference_metrics.py) are in
test_metrics_properties.py.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cofiviz.metrics as M
from cofiviz.util.errors import CofivizError, DataError, ParameterError

import reference_metrics as R


# ----------------------------------------------------------------------------- hand-computed values
def test_ndcg_hand_computed():
    # ranked relevances 3, 2, 3, 0, 1, 2 (the classic example), gains 2^r - 1
    y = [3, 2, 3, 0, 1, 2]
    s = [6, 5, 4, 3, 2, 1]
    dcg = 7 + 3 / math.log2(3) + 7 / 2 + 0 + 1 / math.log2(6) + 3 / math.log2(7)
    idcg = 7 + 7 / math.log2(3) + 3 / 2 + 3 / math.log2(5) + 1 / math.log2(6) + 0
    assert M.ndcg(y, s, k=None) == pytest.approx(dcg / idcg, rel=1e-12)
    assert M.ndcg(y, s, k=6) == pytest.approx(dcg / idcg, rel=1e-12)
    assert M.ndcg(y, s, k=100) == pytest.approx(dcg / idcg, rel=1e-12)  # k > n: whole list
    dcg3 = 7 + 3 / math.log2(3) + 7 / 2
    idcg3 = 7 + 7 / math.log2(3) + 3 / 2
    assert M.ndcg(y, s, k=3) == pytest.approx(dcg3 / idcg3, rel=1e-12)
    assert M.ndcg([0, 0, 0], [1, 2, 3]) != M.ndcg([0, 0, 0], [1, 2, 3])  # NaN: ideal DCG is 0


def test_average_precision_hand_computed():
    # relevant (>= 4) at positions 1, 3, 4 of 5
    y = [5, 2, 4, 4, 0]
    s = [0.9, 0.8, 0.7, 0.6, 0.5]
    assert M.average_precision(y, s) == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)
    assert M.average_precision(y, s, k=3) == pytest.approx((1 + 2 / 3) / 3)
    assert M.average_precision(y, s, k=2) == pytest.approx(1 / 2)
    assert M.average_precision(y, s, threshold=5) == pytest.approx(1.0)
    assert math.isnan(M.average_precision([1, 2, 3], [3, 2, 1]))  # nothing relevant: skipped


def test_precision_and_reciprocal_rank_hand_computed():
    y = [1, 5, 4, 0, 5]
    s = [5, 4, 3, 2, 1]
    assert M.precision_at_k(y, s, k=2) == pytest.approx(0.5)
    assert M.precision_at_k(y, s, k=3) == pytest.approx(2 / 3)
    assert M.precision_at_k(y, s, k=5, threshold=5) == pytest.approx(2 / 5)
    assert M.precision_at_k(y, s, k=10) == pytest.approx(3 / 10)  # divisor is always k
    assert M.precision_at_k([1, 2], [1, 0], k=1) == 0.0  # defined without relevant items
    assert M.mrr(y, s) == pytest.approx(1 / 2)
    assert math.isnan(M.mrr([1, 2], [1, 0]))


def test_gap_hand_computed():
    # ymax = 2: delta_1 = 1/4, delta_2 = 3/4, S(1) = 1/4, S(2) = 1; ranked grades 1, 2, 0
    # Z = S(1) + S(2) = 1.25; R=1: S(1)/1 = 0.25; R=2: (S(min(2,1)) + S(2))/2 = 0.625
    assert M.gap([1, 2, 0], [3, 2, 1], ymax=2) == pytest.approx(0.875 / 1.25)
    assert M.gap([2, 1, 0], [3, 2, 1], ymax=2) == pytest.approx(1.0)
    assert M.gap([3, 1, 0, 5], [4, 3, 2, 1], ymax=5) == pytest.approx(R.gap([3, 1, 0, 5], [4, 3, 2, 1], 5))
    np.testing.assert_allclose(M.thresholding_probabilities(5), (2.0 ** np.arange(1, 6) - 1) / 32)
    assert M.thresholding_probabilities(1).tolist() == [1.0]
    assert math.isnan(M.gap([0, 0], [1, 2]))


def test_gap_family_does_not_depend_on_ymax():
    """Every delta_l of eq 5 carries the factor 1 / 2^ymax (delta_1 = 1 for ymax = 1 is the same
    shape), which cancels in GAP, GP@n and GR@n: ymax only validates the grades."""
    y = [0, 1, 1, 0, 1, 0]
    s = [0.3, 0.1, 0.9, 0.9, 0.2, 0.5]
    for ymax in (2, 5, 9):
        assert R.gap(y, s, ymax) == pytest.approx(R.gap(y, s, 1), rel=1e-12)
        assert M.gap(y, s, ymax=ymax) == M.gap(y, s, ymax=1)
    y2 = [0, 3, 1, 2, 3, 0, 1]
    s2 = [0.3, 0.1, 0.9, 0.9, 0.2, 0.5, 0.5]
    for ymax in (3, 4, 7):
        assert R.gap(y2, s2, ymax) == pytest.approx(R.gap(y2, s2, 3), rel=1e-12)
        assert R.graded_precision(y2, s2, 3, ymax) == pytest.approx(R.graded_precision(y2, s2, 3, 3), rel=1e-12)
        assert R.graded_recall(y2, s2, 3, ymax) == pytest.approx(R.graded_recall(y2, s2, 3, 3), rel=1e-12)
        assert M.gap(y2, s2, ymax=ymax) == pytest.approx(R.gap(y2, s2, ymax), rel=1e-12)


def test_gap_at_k_perfect_is_one_and_matches_reference():
    y = [0, 5, 3, 3, 1, 0, 4]
    perfect = np.asarray(y, dtype=float)
    for k in (1, 2, 3, 5, 7, 20):
        assert M.gap(y, perfect, k=k) == pytest.approx(1.0)
        s = [0.1, 0.7, 0.3, 0.9, 0.2, 0.8, 0.5]
        assert M.gap(y, s, k=k) == pytest.approx(R.gap(y, s, 5, k))


def test_graded_precision_recall_hand_computed():
    # ymax = 2: S(1) = 0.25, S(2) = 1; ideal grades 2, 1, 1, 0 -> c_2 = 1
    y = [1, 2, 0, 1]
    s = [4, 3, 2, 1]          # ranked grades 1, 2, 0, 1
    # GP@2 = (xi(1) + xi(2)) / 2 with xi = min(S(y), S(c)) / S(c) = 1 for both
    assert M.graded_precision(y, s, n=2, ymax=2) == pytest.approx(1.0)
    # GP@3 (c_3 = 1): positions 1..3 hold 1, 2, 0 -> (1 + 1 + 0) / 3
    assert M.graded_precision(y, s, n=3, ymax=2) == pytest.approx(2 / 3)
    # fewer than n rated: c = last rated grade (1)
    assert M.graded_precision(y, s, n=10, ymax=2) == pytest.approx(3 / 10)
    # GR@2 = (S(1) + S(2)) / (S(1) + S(2) + S(1))
    assert M.graded_recall(y, s, n=2, ymax=2) == pytest.approx(1.25 / 1.5)
    # c_1 = 2: the top item has grade 1 -> xi = S(1) / S(2) = 0.25
    assert M.graded_precision(y, s, n=1, ymax=2) == pytest.approx(0.25)


def test_eru_neru_hand_computed():
    y = [5, 2, 4]
    s = [1, 3, 2]              # ranked 2, 4, 5
    # max(y - 3, 0) / 2^((p - 1) / (alpha - 1)), alpha = 5
    e = 0 + 1 / 2 ** 0.25 + 2 / 2 ** 0.5
    ideal = 2 + 1 / 2 ** 0.25
    assert M.eru(y, s) == pytest.approx(e)
    assert M.neru(y, s) == pytest.approx(e / ideal)
    assert M.eru(y, s, k=1) == 0.0
    assert math.isnan(M.neru([1, 3], [1, 2]))  # nothing above the neutral vote
    assert M.eru([1, 3], [1, 2]) == 0.0


def test_zero_one_hand_computed():
    # test items (5, s=.1), (1, s=.9); train (3, s=.5): all three compared pairs are wrong
    assert M.zero_one([5, 1], [0.1, 0.9], [3], [0.5]) == 1.0
    assert M.zero_one([5, 1], [0.9, 0.1], [3], [0.5]) == 0.0
    # two train items are never compared: (3, .9) vs (4, .1) is wrong but ignored
    assert M.zero_one([5], [1.0], [3, 4], [0.9, 0.1]) == 0.0
    # equal ratings are not compared; a tie in the scores is an error
    assert M.zero_one([2, 2, 4], [0.5, 0.1, 0.5]) == pytest.approx(1 / 2)
    assert math.isnan(M.zero_one([3], [1.0], [3], [0.0]))
    assert math.isnan(M.zero_one([], [], [1, 2], [1, 2]))


# ------------------------------------------------------------------------------------- tie rule
def test_tie_rule_is_pessimistic_and_documented():
    doc = " ".join(M.__doc__.split())
    assert "among equal scores the lower true rating goes first" in doc and "constant predictor" in doc
    assert M.rank_order([5, 1, 3], [0.2, 0.2, 0.9]).tolist() == [2, 1, 0]
    assert M.rank_order([4, 4, 1], [0.0, 0.0, 0.0]).tolist() == [2, 0, 1]
    # a constant predictor ranks ratings ascending: the worst order
    y = [3, 0, 5, 1]
    const = [0.0] * 4
    worst = [0, 1, 3, 5]
    assert M.ndcg(y, const, k=None) == pytest.approx(M.ndcg(worst, [4, 3, 2, 1], k=None))
    assert M.gap(y, const) == pytest.approx(M.gap(worst, [4, 3, 2, 1]))
    assert M.zero_one(y, const) == 1.0


def test_score_lists_same_rule_as_single_lists():
    y = [3, 0, 5, 1, 5, 2, 2]
    s = [1, 1, 1, 0, 0, 2, 2]
    out = M.score_lists([0, 7], y, s, ["ndcg", "ap", "gap", "mrr"])
    assert out["ndcg"][0] == pytest.approx(M.ndcg(y, s, k=None))
    assert out["ap"][0] == pytest.approx(M.average_precision(y, s))
    assert out["gap"][0] == pytest.approx(M.gap(y, s))
    assert out["mrr"][0] == pytest.approx(M.mrr(y, s))


# ---------------------------------------------------------------------------------- public API
def test_parse_metric_and_forms():
    assert M.parse_metric("NDCG@10") == ("ndcg@10", "ndcg", 10)
    assert M.parse_metric(" ap ") == ("ap", "ap", None)
    assert M.parse_metric("P@5").name == "p@5"
    for form in M.METRIC_FORMS:
        spec = M.parse_metric(form.replace("K", "3"))
        assert spec.name == form.replace("K", "3").lower()
    for bad in ("ndcg@0", "ndcg@-1", "ndcg@x", "p", "gp", "mrr@5", "foo", "", "ndcg@1.5"):
        with pytest.raises(ParameterError, match="valid forms"):
            M.parse_metric(bad)
    with pytest.raises(ParameterError, match="zero_one_lists"):
        M.parse_metric("zero_one")


def test_score_lists_output_layout():
    off = [0, 3, 3, 6]
    y = [3, 0, 1, 5, 4, 0]
    s = [0.9, 0.2, 0.4, 0.1, 0.3, 0.2]
    out = M.score_lists(off, y, s, ["NDCG@2", "ap", "ndcg@2", "gap", "p@1"])
    assert list(out) == ["ndcg@2", "ap", "gap", "p@1"]
    for v in out.values():
        assert v.dtype == np.float64 and v.shape == (3,)
        assert math.isnan(v[1])  # the empty list is skipped by every metric
    assert math.isnan(out["ap"][0]) and out["ap"][2] == pytest.approx((1 + 2 / 3) / 2)
    assert M.score_lists(off, y, s, "ndcg@10,ap").keys() == {"ndcg@10", "ap"}
    assert M.score_lists([0], [], [], ["ndcg"])["ndcg"].shape == (0,)
    # ymax is only looked at by the GAP family (callers may always pass their scale's top)
    assert M.score_lists(off, y, s, ["ndcg@2"], ymax=100)["ndcg@2"][2] == out["ndcg@2"][2]
    # ymax=None: the batch's largest grade
    assert out["gap"][2] == pytest.approx(M.gap([5, 4, 0], [0.1, 0.3, 0.2], ymax=5))
    assert M.score_lists(off, y, s, ["gap"], ymax=7)["gap"][2] == pytest.approx(
        M.gap([5, 4, 0], [0.1, 0.3, 0.2], ymax=7))


def test_accepts_lists_ints_and_float32():
    y32 = np.array([3, 0, 1], dtype=np.int32)
    s32 = np.array([0.5, 0.125, 0.25], dtype=np.float32)
    assert M.ndcg(y32, s32) == M.ndcg([3.0, 0.0, 1.0], [0.5, 0.125, 0.25]) == 1.0
    assert M.score_lists(np.array([0, 3], np.int32), y32, s32, ["gap"])["gap"][0] == pytest.approx(1.0)


def test_read_only_inputs_and_huge_k_need_no_new_compilation():
    from cofiviz.metrics.ndcg import _ndcg_lists, _ndcg_user
    from cofiviz.metrics.ranking import _prepare_lists_kernel

    y = np.array([3.0, 0.0, 1.0, 5.0])
    s = np.array([0.5, 0.25, 0.125, 0.7])
    off = np.array([0, 2, 4])
    M.score_lists(off, y, s, ["ndcg"])
    M.ndcg(y, s)
    n_sig = len(_prepare_lists_kernel.signatures), len(_ndcg_lists.signatures), len(_ndcg_user.signatures)
    for a in (y, s, off):
        a.flags.writeable = False
    assert M.score_lists(off, y, s, ["ndcg"])["ndcg"].tolist() == M.score_lists(off, y.copy(), s.copy(),
                                                                                 ["ndcg"])["ndcg"].tolist()
    assert M.ndcg(y, s, k=10 ** 30) == M.ndcg(y.copy(), s.copy(), k=None)
    assert (len(_prepare_lists_kernel.signatures), len(_ndcg_lists.signatures), len(_ndcg_user.signatures)) == n_sig


def test_non_integer_ratings_for_ndcg_ap_eru():
    y = [4.5, 0.5, 3.0, 2.5, 4.0]
    s = [0.1, 0.9, 0.3, 0.3, 0.5]
    out = M.score_lists([0, 5], y, s, ["ndcg@3", "ap", "neru", "eru@2", "mrr"])
    assert out["ndcg@3"][0] == pytest.approx(R.ndcg(y, s, 3))
    assert out["ap"][0] == pytest.approx(R.average_precision(y, s))
    assert out["neru"][0] == pytest.approx(R.neru(y, s))
    assert out["eru@2"][0] == pytest.approx(R.eru(y, s, k=2))
    assert M.ndcg(y, s, k=3) == pytest.approx(R.ndcg(y, s, 3))


def test_large_grades_and_long_lists_use_the_general_paths():
    rng = np.random.default_rng(7)
    # grades beyond the counting limit (ideal order by sorting) and beyond the 8-wide GAP table
    y = rng.integers(0, 10, 300).astype(float)
    s = np.round(rng.normal(size=300), 1)  # many ties, clustered buckets
    assert M.gap(y, s, ymax=9) == pytest.approx(R.gap(y, s, 9), rel=1e-10)
    y2 = y * 1000
    assert M.ndcg(y2 / 1000 + 0.5, s, k=20) == pytest.approx(R.ndcg(y2 / 1000 + 0.5, s, 20), rel=1e-10)
    yy = rng.integers(0, 6000, 200).astype(float) / 1000
    assert M.ndcg(yy, s[:200], k=None) == pytest.approx(R.ndcg(yy, s[:200], None), rel=1e-10)
    # integer grades above the table bound (16): generic GAP loop and ideal order by sorting
    g = rng.integers(0, 31, 120).astype(float)
    sg = np.round(rng.normal(size=120), 1)
    assert M.gap(g, sg, ymax=30) == pytest.approx(R.gap(g, sg, 30), rel=1e-10)
    assert M.gap(g, sg, ymax=30, k=7) == pytest.approx(R.gap(g, sg, 30, 7), rel=1e-10)
    assert M.graded_precision(g, sg, n=9, ymax=30) == pytest.approx(R.graded_precision(g, sg, 9, 30), rel=1e-10)
    off = [0, 50, 120]
    out = M.score_lists(off, g, sg, ["gap", "gp@9", "ndcg@5"])
    for u in range(2):
        a, b = off[u], off[u + 1]
        assert out["gap"][u] == pytest.approx(R.gap(g[a:b], sg[a:b], 30), rel=1e-10)
        assert out["gp@9"][u] == pytest.approx(R.graded_precision(g[a:b], sg[a:b], 9, 30), rel=1e-10)
        assert out["ndcg@5"][u] == pytest.approx(R.ndcg(g[a:b], sg[a:b], 5), rel=1e-10)
    with pytest.raises(DataError, match="largest grade supported"):
        M.score_lists([0, 2], [1, 51], [0.1, 0.2], ["gap"])
    with pytest.raises(ParameterError, match="at most 50"):
        M.gap([1, 2], [0.1, 0.2], ymax=51)
    # scores with infinities and one far outlier
    s3 = np.concatenate([rng.random(100) * 1e-9, [1e9, -np.inf, np.inf, np.inf]])
    y3 = rng.integers(0, 6, 104).astype(float)
    assert M.rank_order(y3, s3).tolist() == R.ranked_order(y3, s3)
    assert M.average_precision(y3, s3) == pytest.approx(R.average_precision(y3, s3))


def test_zero_one_lists_matches_single_user():
    rng = np.random.default_rng(3)
    t_off, m_off = [0], [0]
    ty, ts, my, ms = [], [], [], []
    expected = []
    for u in range(12):
        nt, nm = rng.integers(0, 15), rng.integers(0, 15)
        a, b = rng.integers(1, 6, nt), rng.integers(0, 4, nt) / 2
        c, d = rng.integers(1, 6, nm), rng.integers(0, 4, nm) / 2
        ty += list(a); ts += list(b); my += list(c); ms += list(d)
        t_off.append(len(ty)); m_off.append(len(my))
        expected.append(R.zero_one(a, b, c, d))
        got = M.zero_one(a, b, c, d)
        assert (math.isnan(got) and math.isnan(expected[-1])) or got == pytest.approx(expected[-1])
    out = M.zero_one_lists(t_off, ty, ts, m_off, my, ms)
    np.testing.assert_allclose(out, expected)
    assert M.zero_one_lists([0], [], [], [0], [], []).shape == (0,)


def test_import_compiles_nothing_and_warmup_leaves_nothing_to_compile():
    code = textwrap.dedent("""
        import pkgutil, importlib
        import numpy as np
        from numba.core.registry import CPUDispatcher
        import cofiviz.metrics as M
        mods = [importlib.import_module('cofiviz.metrics.' + m.name) for m in pkgutil.iter_modules(M.__path__)]
        kernels = {(mod.__name__, a): getattr(mod, a) for mod in mods for a in dir(mod)
                   if isinstance(getattr(mod, a), CPUDispatcher)}
        assert len(kernels) > 20, len(kernels)
        compiled = [name for name, k in kernels.items() if k.signatures]
        assert not compiled, compiled
        M.warmup()
        before = {name: len(k.signatures) for name, k in kernels.items()}
        y, s = np.array([3.0, 0, 5, 1, 2]), np.array([0.1, 0.5, 0.5, 0.2, 0.9])
        for yy in (y, y + 0.5):
            M.ndcg(yy, s); M.ndcg(yy, s, k=None); M.average_precision(yy, s, k=2); M.precision_at_k(yy, s)
            M.mrr(yy, s); M.eru(yy, s); M.neru(yy, s, k=3); M.rank_order(yy, s); M.zero_one(yy, s, yy, s)
            M.score_lists([0, 2, 5], yy, s, ["ndcg@2", "ap", "p@1", "mrr", "neru", "eru@2"])
        M.gap(y, s); M.graded_precision(y, s); M.graded_recall(y, s, n=2)
        M.score_lists([0, 2, 5], y, s, [f.replace("K", "2") for f in M.METRIC_FORMS])
        M.zero_one_lists([0, 2, 5], y, s, [0, 1, 1], y[:1], s[:1])
        after = {name: len(k.signatures) for name, k in kernels.items()}
        grown = [name for name in kernels if after[name] != before[name]]
        assert not grown, grown
        print('ok', len(kernels))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.startswith("ok")


# ---------------------------------------------------------------------------------- bad input
BAD_LIST_CASES = [
    (lambda: M.ndcg([1, 2, 3], [0.1, 0.2]), DataError, "same length"),
    (lambda: M.ndcg([1, 2], [0.1, float("nan")]), DataError, "NaN"),
    (lambda: M.average_precision([1, np.inf], [0.1, 0.2]), DataError, "finite"),
    (lambda: M.ndcg([1, -2], [0.1, 0.2]), DataError, ">= 0"),
    (lambda: M.ndcg(["a", "b"], [0.1, 0.2]), DataError, "numbers"),
    (lambda: M.ndcg([[1, 2]], [[0.1, 0.2]]), DataError, "1-D"),
    (lambda: M.gap([1, 2.5], [0.1, 0.2]), DataError, "integer grades"),
    (lambda: M.gap([1, 7], [0.1, 0.2], ymax=5), DataError, "ymax=5"),
    (lambda: M.graded_precision([1, 2.5], [0.1, 0.2]), DataError, "integer grades"),
    (lambda: M.ndcg([1, 2], [0.1, 0.2], k=-1), ParameterError, "k must be a positive integer"),
    (lambda: M.ndcg([1, 2], [0.1, 0.2], k=0), ParameterError, "k must be a positive integer"),
    (lambda: M.ndcg([1, 2], [0.1, 0.2], k=2.5), ParameterError, "k must be"),
    (lambda: M.ndcg([1, 2], [0.1, 0.2], k=True), ParameterError, "k must be"),
    (lambda: M.precision_at_k([1, 2], [0.1, 0.2], k=None), ParameterError, "k must be a positive integer"),
    (lambda: M.graded_recall([1, 2], [0.1, 0.2], n=0), ParameterError, "n must be"),
    (lambda: M.gap([1, 2], [0.1, 0.2], ymax=0), ParameterError, "ymax"),
    (lambda: M.gap([1, 2], [0.1, 0.2], ymax=2.5), ParameterError, "ymax"),
    (lambda: M.average_precision([1, 2], [0.1, 0.2], threshold=0), ParameterError, "threshold"),
    (lambda: M.mrr([1, 2], [0.1, 0.2], threshold="4"), ParameterError, "threshold"),
    (lambda: M.eru([1, 2], [0.1, 0.2], alpha=1), ParameterError, "alpha"),
    (lambda: M.neru([1, 2], [0.1, 0.2], d=float("nan")), ParameterError, "d must be finite"),
    (lambda: M.zero_one([1, 2], [0.1]), DataError, "same length"),
    (lambda: M.zero_one([1, 2], [0.1, 0.2], [1], None), DataError, "together"),
    (lambda: M.zero_one([1], [0.1], [2], [float("nan")]), DataError, "train_scores"),
    (lambda: M.rank_order([1, 2], [0.1, float("nan")]), DataError, "NaN"),
]


@pytest.mark.parametrize("case", range(len(BAD_LIST_CASES)))
def test_bad_single_list_input(case):
    fn, exc, msg = BAD_LIST_CASES[case]
    with pytest.raises(exc, match=msg):
        fn()


BAD_BATCH_CASES = [
    (dict(offsets=[0, 2, 3], ratings=[1, 2], scores=[0.1, 0.2]), DataError, r"offsets\[-1\] must equal"),
    (dict(offsets=[1, 2], ratings=[1, 2], scores=[0.1, 0.2]), DataError, r"offsets\[0\] must be 0"),
    (dict(offsets=[0, 2, 1, 2], ratings=[1, 2], scores=[0.1, 0.2]), DataError, "non-decreasing"),
    (dict(offsets=[0, 1.5, 2], ratings=[1, 2], scores=[0.1, 0.2]), DataError, "integers"),
    (dict(offsets=[[0, 2]], ratings=[1, 2], scores=[0.1, 0.2]), DataError, "1-D"),
    (dict(offsets=[0, 2], ratings=[1, 2, 3], scores=[0.1, 0.2]), DataError, "same length"),
    (dict(offsets=[0, 1, 2], ratings=[1, 2], scores=[0.1, np.nan]), DataError, r"NaN .*user 1"),
    (dict(offsets=[0, 1, 2], ratings=[1, -1], scores=[0.1, 0.2]), DataError, r">= 0.*user 1"),
    (dict(offsets=[0, 2], ratings=[1, 2.5], scores=[0.1, 0.2], metrics=["gap"]), DataError, "integer grades"),
    (dict(offsets=[0, 2], ratings=[1, 6], scores=[0.1, 0.2], metrics=["gp@2"], ymax=5), DataError, "ymax=5"),
    (dict(offsets=[0, 2], ratings=[1, 2], scores=[0.1, 0.2], metrics=["ndcg@10", "bogus"]), ParameterError,
     "unknown metric 'bogus'; valid forms: ndcg, ndcg@K"),
    (dict(offsets=[0, 2], ratings=[1, 2], scores=[0.1, 0.2], metrics=[]), ParameterError, "at least one"),
    (dict(offsets=[0, 2], ratings=[1, 2], scores=[0.1, 0.2], metrics=[3]), ParameterError, "strings"),
    (dict(offsets=[0, 2], ratings=[1, 2], scores=[0.1, 0.2], threshold=-1), ParameterError, "threshold"),
    (dict(offsets=[0, 2], ratings=[1, 2], scores=[0.1, 0.2], alpha=0.5), ParameterError, "alpha"),
    (dict(offsets=[0, 2], ratings=[1, 2], scores=[0.1, 0.2], metrics=["gr@3"], ymax=-3), ParameterError, "ymax"),
]


@pytest.mark.parametrize("case", range(len(BAD_BATCH_CASES)))
def test_bad_batch_input(case):
    kwargs, exc, msg = BAD_BATCH_CASES[case]
    with pytest.raises(exc, match=msg):
        M.score_lists(**kwargs)


def test_bad_batch_input_large_batch_path():
    # > 4096 candidates: validated by the parallel scan kernel, same messages
    n = 10_000
    y = np.ones(n)
    s = np.zeros(n)
    s[7777] = np.nan
    with pytest.raises(DataError, match="index 7777, user 7"):
        M.score_lists(np.arange(0, n + 1, 1000), y, s)
    s[7777] = 0
    y[5] = np.inf
    with pytest.raises(DataError, match="index 5"):
        M.score_lists(np.arange(0, n + 1, 1000), y, s)
    y[5] = 1.5
    with pytest.raises(DataError, match="integer grades"):
        M.score_lists(np.arange(0, n + 1, 1000), y, s, ["ndcg", "gap"])
    assert M.score_lists(np.arange(0, n + 1, 1000), y, s, ["ndcg"])["ndcg"].shape == (10,)


def test_bad_zero_one_lists_input():
    with pytest.raises(DataError, match="same users"):
        M.zero_one_lists([0, 1], [1], [0.1], [0, 1, 1], [2], [0.2])
    with pytest.raises(DataError, match=r"train_offsets\[-1\]"):
        M.zero_one_lists([0, 1], [1], [0.1], [0, 2], [2], [0.2])
    with pytest.raises(DataError, match="test_scores"):
        M.zero_one_lists([0, 1], [1], [np.nan], [0, 1], [2], [0.2])


def test_errors_are_cofiviz_errors():
    assert issubclass(DataError, CofivizError) and issubclass(ParameterError, CofivizError)


# ------------------------------------------------------------------------ trec_eval cross-check
def _trec_eval(qrels, run, measures):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def _random_lists(seed, n_users=40):
    """Graded lists with well separated, distinct scores (trec_eval stores float32 and breaks ties by
    document id, so ties must be avoided)."""
    rng = np.random.default_rng(seed)
    lists = []
    for _ in range(n_users):
        n = int(rng.integers(1, 40))
        y = rng.integers(0, 6, n)
        s = rng.permutation(n).astype(float) / 8.0 - 2.0
        lists.append((y, s))
    return lists


@pytest.mark.parametrize("seed", [0, 1])
def test_ndcg_matches_trec_eval(seed):
    lists = _random_lists(seed)
    qrels = {f"q{u}": {f"d{i}": int(2 ** int(r) - 1) for i, r in enumerate(y)} for u, (y, s) in enumerate(lists)}
    run = {f"q{u}": {f"d{i}": float(v) for i, v in enumerate(s)} for u, (y, s) in enumerate(lists)}
    res = _trec_eval(qrels, run, {"ndcg_cut_10", "ndcg"})
    off = np.cumsum([0] + [len(y) for y, _ in lists])
    batch = M.score_lists(off, np.concatenate([y for y, _ in lists]), np.concatenate([s for _, s in lists]),
                          ["ndcg@10", "ndcg"])
    checked = 0
    for u, (y, s) in enumerate(lists):
        ours = M.ndcg(y, s, k=10)
        if math.isnan(ours):
            assert res[f"q{u}"]["ndcg_cut_10"] == 0.0 and y.max() == 0
            continue
        assert ours == pytest.approx(res[f"q{u}"]["ndcg_cut_10"], abs=1e-6)
        assert batch["ndcg@10"][u] == pytest.approx(ours, rel=1e-12)
        assert batch["ndcg"][u] == pytest.approx(res[f"q{u}"]["ndcg"], abs=1e-6)
        checked += 1
    assert checked >= 30


@pytest.mark.parametrize("threshold", [4, 5, 2])
def test_ap_precision_rr_match_trec_eval(threshold):
    lists = _random_lists(10 + threshold)
    qrels = {f"q{u}": {f"d{i}": int(r >= threshold) for i, r in enumerate(y)} for u, (y, s) in enumerate(lists)}
    run = {f"q{u}": {f"d{i}": float(v) for i, v in enumerate(s)} for u, (y, s) in enumerate(lists)}
    res = _trec_eval(qrels, run, {"map", "P_5", "recip_rank"})
    checked = 0
    for u, (y, s) in enumerate(lists):
        q = res[f"q{u}"]
        assert M.precision_at_k(y, s, k=5, threshold=threshold) == pytest.approx(q["P_5"], abs=1e-6)
        ap = M.average_precision(y, s, threshold=threshold)
        if math.isnan(ap):
            assert (y >= threshold).sum() == 0
            continue
        assert ap == pytest.approx(q["map"], abs=1e-6)
        assert M.mrr(y, s, threshold=threshold) == pytest.approx(q["recip_rank"], abs=1e-6)
        checked += 1
    assert checked >= 15


def test_docstring_examples():
    import doctest
    import importlib

    failed = 0
    for name in ("ranking", "ndcg", "precision", "gap", "eru", "pairs", "batch", "terms"):
        mod = importlib.import_module(f"cofiviz.metrics.{name}")
        failed += doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE).failed
    assert failed == 0
