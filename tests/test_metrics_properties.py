"""Hypothesis property tests: the numba kernels equal the slow reference (tests/reference_metrics.py)
on random lists with frequent score ties, empty and single-item lists, per list and through
score_lists on random CSR batches; plus the invariants every metric must satisfy.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cofiviz.metrics as M
from cofiviz.util.errors import DataError

import reference_metrics as R

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# a small set of values makes ties common; +-inf and wide floats exercise every sorting path
TIED = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, -1.0, -0.0])
SCORE = st.one_of(TIED, TIED, st.sampled_from([np.inf, -np.inf]),
                  st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
GRADE = st.integers(0, 5)


@st.composite
def graded_list(draw, min_size=0, max_size=40):
    n = draw(st.integers(min_size, max_size))
    y = np.array(draw(st.lists(GRADE, min_size=n, max_size=n)), dtype=np.float64)
    s = np.array(draw(st.lists(SCORE, min_size=n, max_size=n)), dtype=np.float64)
    return y, s


@st.composite
def csr_batch(draw, max_users=8, max_size=30):
    lists = draw(st.lists(graded_list(0, max_size), min_size=0, max_size=max_users))
    off = np.cumsum([0] + [len(y) for y, _ in lists]).astype(np.int64)
    y = np.concatenate([y for y, _ in lists]) if lists else np.zeros(0)
    s = np.concatenate([s for _, s in lists]) if lists else np.zeros(0)
    return off, y, s


def same(a, b, tol=1e-9):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol * max(1.0, abs(b))


def assert_same(got, expected, what):
    assert same(float(got), float(expected)), f"{what}: kernel {got!r} != reference {expected!r}"


# --------------------------------------------------------------------- kernels == reference
@SETTINGS
@given(graded_list(), st.integers(1, 12), st.sampled_from([1, 2, 3, 4, 5]))
def test_single_list_kernels_equal_reference(lst, k, threshold):
    y, s = lst
    assert M.rank_order(y, s).tolist() == R.ranked_order(y, s)
    for kk in (k, None):
        assert_same(M.ndcg(y, s, k=kk), R.ndcg(y, s, kk), f"ndcg@{kk}")
        assert_same(M.average_precision(y, s, threshold, k=kk), R.average_precision(y, s, threshold, kk), "ap")
        assert_same(M.gap(y, s, ymax=5, k=kk), R.gap(y, s, 5, kk), f"gap@{kk}")
        assert_same(M.eru(y, s, k=kk), R.eru(y, s, k=kk), "eru")
        assert_same(M.neru(y, s, d=2, alpha=3, k=kk), R.neru(y, s, 2, 3, kk), "neru")
        assert_same(M.err(y, s, k=kk), R.err(y, s, kk), f"err@{kk}")
        assert_same(M.err(y, s, k=kk, ymax=7.5), R.err(y, s, kk, 7.5), f"err@{kk} ymax=7.5")
    assert_same(M.precision_at_k(y, s, k, threshold), R.precision_at_k(y, s, k, threshold), "p@k")
    assert_same(M.mrr(y, s, threshold), R.mrr(y, s, threshold), "mrr")
    assert_same(M.graded_precision(y, s, n=k), R.graded_precision(y, s, k, 5), "gp")
    assert_same(M.graded_recall(y, s, n=k), R.graded_recall(y, s, k, 5), "gr")
    if y.size and y.max() <= 3:
        assert_same(M.gap(y, s, ymax=3), R.gap(y, s, 3), "gap ymax=3")


@SETTINGS
@given(csr_batch(), st.integers(1, 8), st.sampled_from([1, 4, 5]), st.data())
def test_score_lists_equals_reference(batch, k, threshold, data):
    off, y, s = batch
    forms = [f.replace("K", str(k)) for f in M.METRIC_FORMS]
    metrics = data.draw(st.lists(st.sampled_from(forms), min_size=1, max_size=6, unique=True))
    ymax = data.draw(st.sampled_from([None, 5, 7]))
    out = M.score_lists(off, y, s, metrics, threshold=threshold, ymax=ymax, d=2.5, alpha=4)
    ref = R.score_lists(off, y, s, metrics, threshold=threshold, ymax=ymax, d=2.5, alpha=4)
    assert list(out) == [m.lower() for m in metrics]
    for name in out:
        assert out[name].shape == (len(off) - 1,)
        for u in range(len(off) - 1):
            assert_same(out[name][u], ref[name][u], f"{name} user {u}")


@FEW
@given(csr_batch(max_users=12), st.integers(1, 6))
def test_parallel_and_single_threaded_runs_agree(batch, k):
    """Small batches run on the calling thread; force the parallel path and compare."""
    from cofiviz.metrics import _validation

    off, y, s = batch
    forms = [f.replace("K", str(k)) for f in M.METRIC_FORMS]
    serial = M.score_lists(off, y, s, forms)
    saved = _validation.PARALLEL_MIN_CANDIDATES
    _validation.PARALLEL_MIN_CANDIDATES = 0
    try:
        parallel = M.score_lists(off, y, s, forms)
        z = M.zero_one_lists(off, y, s, off, y, s)
    finally:
        _validation.PARALLEL_MIN_CANDIDATES = saved
    for name in forms:
        np.testing.assert_array_equal(parallel[name], serial[name])
    np.testing.assert_array_equal(z, M.zero_one_lists(off, y, s, off, y, s))


@st.composite
def pair_user(draw):
    def part(max_size):
        n = draw(st.integers(0, max_size))
        r = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
        sc = draw(st.lists(SCORE, min_size=n, max_size=n))
        return np.array(r, dtype=float), np.array(sc, dtype=float)
    return part(25), part(25)


@SETTINGS
@given(st.lists(pair_user(), min_size=0, max_size=6))
def test_zero_one_equals_pair_loop(users):
    expected = [R.zero_one(ty, ts, my, ms) for (ty, ts), (my, ms) in users]
    for ((ty, ts), (my, ms)), e in zip(users, expected):
        assert_same(M.zero_one(ty, ts, my, ms), e, "zero_one")
    t_off = np.cumsum([0] + [len(t[0]) for t, _ in users])
    m_off = np.cumsum([0] + [len(m[0]) for _, m in users])
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0)  # noqa: E731
    out = M.zero_one_lists(t_off, cat([t[0] for t, _ in users]), cat([t[1] for t, _ in users]),
                           m_off, cat([m[0] for _, m in users]), cat([m[1] for _, m in users]))
    for u, e in enumerate(expected):
        assert_same(out[u], e, f"zero_one_lists user {u}")


# ------------------------------------------------------------------------------- invariants
@SETTINGS
@given(graded_list(min_size=1), st.integers(1, 10), st.randoms(use_true_random=False))
def test_perfect_ranking_scores_one(lst, k, rnd):
    y, _ = lst
    # any order consistent with the ratings is perfect, whatever happens among equal ratings
    jitter = np.array([rnd.random() for _ in y])
    for s in (y.copy(), y * 10 + jitter):
        for value in (M.ndcg(y, s, k), M.ndcg(y, s, None), M.gap(y, s), M.gap(y, s, k=k),
                      M.average_precision(y, s), M.average_precision(y, s, k=k), M.neru(y, s), M.neru(y, s, k=k)):
            assert math.isnan(value) or value == pytest.approx(1.0, abs=1e-12)
        if (y > 0).sum() >= k:
            assert M.graded_precision(y, s, n=k) == pytest.approx(1.0)
        zo = M.zero_one(y[: len(y) // 2], s[: len(y) // 2], y[len(y) // 2:], s[len(y) // 2:])
        assert math.isnan(zo) or zo == 0.0


@SETTINGS
@given(csr_batch(max_size=40), st.integers(1, 12))
def test_metrics_are_in_unit_interval(batch, k):
    off, y, s = batch
    forms = [f.replace("K", str(k)) for f in M.METRIC_FORMS if not f.startswith("eru")]
    out = M.score_lists(off, y, s, forms, ymax=5)
    for name, v in out.items():
        v = v[~np.isnan(v)]
        assert np.all((v >= 0) & (v <= 1 + 1e-12)), (name, v)
    eru = M.score_lists(off, y, s, ["eru"])["eru"]
    assert np.all(eru[~np.isnan(eru)] >= 0)


def _permutation_batch(y, n_max_perms=720, seed=0):
    """All orders of a short list (n <= 6) or a sample of them, as one CSR batch of scores."""
    n = len(y)
    exhaustive = math.factorial(n) <= n_max_perms
    if exhaustive:
        perms = [np.array(p) for p in itertools.permutations(range(n))]
    else:
        rng = np.random.default_rng(seed)
        perms = [rng.permutation(n) for _ in range(n_max_perms)]
    scores = np.concatenate([-p.astype(float) for p in perms])
    return np.arange(len(perms) + 1) * n, np.tile(y, len(perms)), scores, exhaustive


@FEW
@given(graded_list(min_size=1, max_size=9), st.integers(1, 4))
def test_constant_predictor_is_the_worst_order_and_below_the_random_mean(lst, k):
    """A constant predictor gets the worst order under the tie rule: it equals the minimum over all
    orders (every order enumerated for n <= 6, 720 sampled otherwise), hence never exceeds the mean
    of a random order; its zero-one error is 1, the maximum."""
    y, _ = lst
    n = len(y)
    const = np.zeros(n)
    off, yy, ss, exhaustive = _permutation_batch(y)
    names = [f.replace("K", str(k)) for f in M.METRIC_FORMS]
    orders = M.score_lists(off, yy, ss, names, ymax=5)
    constant = M.score_lists([0, n], y, const, names, ymax=5)
    for name in names:
        c = constant[name][0]
        v = orders[name]
        if math.isnan(c):
            assert np.all(np.isnan(v)), name  # skipping depends on the ratings only
            continue
        assert c <= np.mean(v) + 1e-12, (name, c, np.mean(v))
        assert c <= np.min(v) + 1e-12, (name, c, np.min(v))
        if exhaustive:
            assert c == pytest.approx(np.min(v), abs=1e-12), (name, c, np.min(v))
    zo = M.zero_one(y, const)
    if not math.isnan(zo):
        assert zo == 1.0
        errs = [M.zero_one(y, ss[off[i]:off[i + 1]]) for i in range(0, len(off) - 1, 37)]
        assert zo >= np.mean(errs)


@SETTINGS
@given(graded_list(), st.integers(1, 10), st.sampled_from([1, 2, 3, 4, 5]))
def test_gap_with_ymax_1_is_average_precision(lst, k, threshold):
    """GAPfm appendix D: with ymax = 1, delta_1 = 1, beta_ij = 1 and Z = the number of relevant items,
    so eq 2 is exactly AP. It holds for binary ratings, and for graded ratings binarised at the AP
    threshold (ties in the scores included: the tie rule orders a tied irrelevant item before a tied
    relevant one in both cases, and ties within a class do not change either metric). GAP@k equals
    AP@k too, since both are normalised by min(k, number of relevant)."""
    y, s = lst
    b = (y >= threshold).astype(float)
    for kk in (None, k):
        ap = M.average_precision(y, s, threshold=threshold, k=kk)
        assert_same(M.gap(b, s, ymax=1, k=kk), ap, "gap(ymax=1) vs ap")
        assert_same(M.gap(b, s, ymax=1, k=kk), M.average_precision(b, s, threshold=1, k=kk), "binary")


@FEW
@given(csr_batch(max_users=6, max_size=60))
def test_lists_longer_than_the_insertion_cutoff(batch):
    """Lists of 25-60 candidates go through the bucket sort; check the order itself."""
    off, y, s = batch
    for u in range(len(off) - 1):
        a, b = off[u], off[u + 1]
        assert M.rank_order(y[a:b], s[a:b]).tolist() == R.ranked_order(y[a:b], s[a:b])


@FEW
@given(st.integers(25, 200), st.integers(0, 2 ** 32 - 1),
       st.sampled_from(["uniform", "clustered", "outlier", "overflow", "rounded", "constant", "inf"]))
def test_sorting_paths_on_shaped_scores(n, seed, shape):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 6, n).astype(float)
    s = {"uniform": rng.random(n),
         "clustered": np.concatenate([rng.random(n - 1) * 1e-12, [1.0]]),
         "outlier": np.concatenate([rng.random(n - 2), [1e300, -1e300]]),
         "overflow": np.concatenate([rng.random(n - 2), [1.7e308, -1.7e308]]),
         "rounded": np.round(rng.normal(size=n), 1),
         "constant": np.full(n, 0.3),
         "inf": np.where(rng.random(n) < 0.3, np.inf, rng.random(n))}[shape]
    assert M.rank_order(y, s).tolist() == R.ranked_order(y, s)
    assert_same(M.gap(y, s), R.gap(y, s, 5), "gap")


# ------------------------------------------------------------------------------------------ ERR
def test_err_by_hand():
    # R = (2^g - 1) / 2^2 = 3/4, 0, 1/4: ERR = 3/4 + 0 + (1/3)(1 - 3/4)(1 - 0)(1/4)
    assert M.err([2, 0, 1], [0.9, 0.5, 0.1], ymax=2) == pytest.approx(0.75 + 1 / 48, abs=1e-15)
    assert M.err([2, 0, 1], [0.9, 0.5, 0.1], k=1, ymax=2) == pytest.approx(0.75)
    assert M.err([0, 0], [1.0, 2.0]) == 0.0 and math.isnan(M.err([], []))
    # ymax defaults to the list's largest rating; a rating above a given ymax is refused with its index
    assert M.err([2, 0, 1], [0.9, 0.5, 0.1]) == M.err([2, 0, 1], [0.9, 0.5, 0.1], ymax=2)
    with pytest.raises(DataError, match="index 0"):
        M.err([6, 1], [1.0, 0.0], ymax=5)
    # grades far beyond 2^1023 do not overflow: the best item satisfies almost surely
    assert M.err([2000.0, 1.0], [1.0, 0.0]) == pytest.approx(1.0 - 2.0 ** -2000)


@FEW
@given(graded_list(min_size=1, max_size=6), st.integers(1, 6))
def test_err_is_largest_for_the_order_by_grade(lst, k):
    y, _ = lst
    off, yy, ss, _ = _permutation_batch(y)
    every = M.score_lists(off, yy, ss, [f"err@{k}"], ymax=5)[f"err@{k}"]
    best = M.err(y, y, k=k, ymax=5)
    assert best == pytest.approx(every.max(), abs=1e-12)
    assert 0.0 <= every.min() <= best < 1.0
