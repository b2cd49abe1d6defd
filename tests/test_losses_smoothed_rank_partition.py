"""The smoothed-rank NDCG loss (ApproxNDCG) and the ordered-partition likelihood of "The rank 1 problem"
(the ordered-partition model of Tran, Phung & Venkatesh, SDM 2011, with the mean and the product potential):
plain NumPy / Python references written from the formulas (the partition model also by enumerating every
non-empty subset at each stage), hypothesis property tests (ties included) against the numba kernels, finite-difference
gradients, invariances, what each loss becomes in its limits, and the errors at the public boundary."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cofiviz.util.errors import ParameterError
from cofiviz.losses import (LISTWISE_TIES, log_subset_normaliser, ordered_partition_loss, partition_log_constant,
                            plackett_luce_loss, smoothed_positions, smoothed_rank_loss, smoothed_rank_pair_curve)
from cofiviz.losses.partition import listwise_ties_code, partition_loss_grad, partition_product_loss_grad
from cofiviz.losses.smoothed_rank import check_gamma, smoothed_rank_loss_grad
from cofiviz.metrics.ndcg import ndcg


# ---------------------------------------------------------------------------------------------- references
def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def ref_positions(f, gamma):
    """π̂_i = 1 + Σ_{j≠i} σ(γ(f_j − f_i)), one pair at a time."""
    n = len(f)
    return [1.0 + sum(sigmoid(gamma * (f[j] - f[i])) for j in range(n) if j != i) for i in range(n)]


def ref_smoothed_rank(f, y, gamma):
    """1 − Σ_i (2^y_i − 1) / log2(1 + π̂_i) / IDCG, with plain loops."""
    f, y = [float(v) for v in f], [float(v) for v in y]
    pos = ref_positions(f, gamma)
    gains = [2.0 ** v - 1.0 for v in y]
    idcg = sum(g / math.log2(p + 2) for p, g in enumerate(sorted(gains, reverse=True)))
    if idcg <= 0:
        return 0.0
    return 1.0 - sum(g / math.log2(1.0 + p) for g, p in zip(gains, pos)) / idcg


def groups_best_first(y):
    y = np.asarray(y, float)
    return [np.flatnonzero(y == level) for level in np.unique(y)[::-1]]


def ref_partition(f, y):
    """Σ_k [log Σ_{R_k} e^f − log Σ_{X_k} e^f] (the mean potential's loss), in plain NumPy (no shifting)."""
    f, y = np.asarray(f, float), np.asarray(y, float)
    loss = 0.0
    for level in np.unique(y)[::-1]:
        remaining, group = y <= level, y == level
        loss += np.log(np.exp(f[remaining]).sum()) - np.log(np.exp(f[group]).sum())
    return loss


def ref_constant(y):
    """Σ_k log(C_k |X_k|) with C_k = (2^{N_k} − 1) / N_k with Python integers."""
    y = np.asarray(y, float)
    out = 0.0
    for level in np.unique(y)[::-1]:
        n_left, size = int((y <= level).sum()), int((y == level).sum())
        out += math.log(2 ** n_left - 1) - math.log(n_left) + math.log(size)
    return out


def non_empty_subsets(items):
    items = list(items)
    return [list(s) for r in range(1, len(items) + 1) for s in itertools.combinations(items, r)]


def mean_potential(f, subset):
    """Φ(S) = (1/|S|) Σ_{x ∈ S} e^{f_x}."""
    return sum(math.exp(f[x]) for x in subset) / len(subset)


def product_potential(f, subset):
    """Φ(S) = Π_{x ∈ S} e^{f_x}."""
    return math.exp(sum(f[x] for x in subset))


def brute_normaliser(f):
    """Σ over every non-empty subset S of the mean potential Φ(S), enumerated."""
    f = [float(v) for v in f]
    return sum(mean_potential(f, s) for s in non_empty_subsets(range(len(f))))


def ref_partition_enumerated(f, y, potential=mean_potential):
    """−log p(X_1, …, X_K): each group chosen among every non-empty subset of the items left, each stage's
    normaliser enumerated subset by subset (small lists)."""
    f, y = [float(v) for v in f], [float(v) for v in y]
    nll = 0.0
    for level in sorted(set(y), reverse=True):
        remaining = [x for x in range(len(y)) if y[x] <= level]
        group = [x for x in range(len(y)) if y[x] == level]
        z = sum(potential(f, s) for s in non_empty_subsets(remaining))
        nll -= math.log(potential(f, group) / z)
    return nll


def ref_product(f, y):
    """Σ_k [log(Π_{R_k}(1 + e^f) − 1) − Σ_{X_k} f] (the product potential's loss), in plain NumPy."""
    f, y = np.asarray(f, float), np.asarray(y, float)
    loss = 0.0
    for level in np.unique(y)[::-1]:
        remaining, group = y <= level, y == level
        loss += np.log(np.prod(1.0 + np.exp(f[remaining])) - 1.0) - f[group].sum()
    return loss


def ref_listmle(f_in_order):
    """Plackett–Luce's negative log-likelihood of a strict order, Σ_i [log Σ_{j ≥ i} e^{f_j} − f_i]."""
    f = np.asarray(f_in_order, float)
    return sum(np.log(np.exp(f[i:]).sum()) - f[i] for i in range(len(f)))


def ordered_partitions(items):
    """Every ordered partition (sequence of non-empty disjoint blocks covering ``items``)."""
    items = list(items)
    if not items:
        yield []
        return
    for r in range(1, len(items) + 1):
        for first in itertools.combinations(items, r):
            rest = [i for i in items if i not in first]
            for tail in ordered_partitions(rest):
                yield [list(first)] + tail


def fd_gradient(fun, f, h=1e-6):
    f = np.asarray(f, float)
    out = np.empty(len(f))
    for k in range(len(f)):
        e = np.zeros(len(f))
        e[k] = h
        out[k] = (fun(f + e) - fun(f - e)) / (2 * h)
    return out


scores_st = st.floats(-6, 6, allow_nan=False)
ratings_st = st.integers(0, 5)


def lists(min_size=1, max_size=10, ratings=ratings_st):
    return st.integers(min_size, max_size).flatmap(
        lambda n: st.tuples(st.lists(scores_st, min_size=n, max_size=n), st.lists(ratings, min_size=n, max_size=n)))


# ---------------------------------------------------------------------------------------------- smoothed rank
@settings(max_examples=150, deadline=None)
@given(data=lists(), gamma=st.floats(0.1, 8.0))
def test_smoothed_rank_matches_the_reference(data, gamma):
    f, y = data
    loss, grad = smoothed_rank_loss(f, y, gamma)
    assert loss == pytest.approx(ref_smoothed_rank(f, y, gamma), rel=1e-10, abs=1e-12)
    assert grad.shape == (len(f),)
    assert abs(grad.sum()) < 1e-10           # adding a constant to every score changes nothing


@settings(max_examples=60, deadline=None)
@given(data=lists(min_size=2, max_size=8), gamma=st.floats(0.2, 4.0))
def test_smoothed_rank_gradient_by_central_differences(data, gamma):
    f, y = data
    _, grad = smoothed_rank_loss(f, y, gamma)
    fd = fd_gradient(lambda x: ref_smoothed_rank(x, y, gamma), f)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


@settings(max_examples=60, deadline=None)
@given(data=lists(min_size=2, max_size=9), gamma=st.floats(0.2, 4.0), shift=st.floats(-20, 20))
def test_smoothed_rank_is_order_free_and_shift_invariant(data, gamma, shift):
    f, y = map(np.asarray, data)
    f, y = f.astype(float), y.astype(float)
    loss, grad = smoothed_rank_loss(f, y, gamma)
    perm = np.random.default_rng(len(f)).permutation(len(f))
    loss_p, grad_p = smoothed_rank_loss(f[perm], y[perm], gamma)
    assert loss_p == pytest.approx(loss, rel=1e-12, abs=1e-13)
    np.testing.assert_allclose(grad_p, grad[perm], rtol=1e-9, atol=1e-13)
    assert smoothed_rank_loss(f + shift, y, gamma)[0] == pytest.approx(loss, rel=1e-9, abs=1e-11)


@settings(max_examples=60, deadline=None)
@given(f=st.lists(scores_st, min_size=1, max_size=12), gamma=st.floats(0.1, 8.0))
def test_smoothed_positions_are_the_blogs_rank_read_from_the_top(f, gamma):
    pos = smoothed_positions(f, gamma)
    m = len(f)
    np.testing.assert_allclose(pos, ref_positions(f, gamma), rtol=1e-12)
    assert pos.sum() == pytest.approx(m * (m + 1) / 2)        # σ(z) + σ(−z) = 1 for every pair
    rbar = [sum(sigmoid(gamma * (f[i] - f[j])) for j in range(m) if j != i) for i in range(m)]
    np.testing.assert_allclose(m - pos, rbar, rtol=1e-9, atol=1e-12)   # r̄_i = Σ_{j≠i} P(f_i > f_j) = M − π̂_i
    assert np.all((pos >= 1.0) & (pos <= m))


def test_smoothed_rank_tends_to_the_exact_ndcg_loss_as_gamma_grows():
    rng = np.random.default_rng(3)
    for _ in range(20):
        f = rng.normal(size=9)
        y = rng.integers(0, 6, size=9).astype(float)
        if not np.any(y > 0):
            continue
        exact = 1.0 - ndcg(y, f, k=None)
        gap = np.min(np.abs(np.subtract.outer(f, f))[~np.eye(9, dtype=bool)])
        assert smoothed_rank_loss(f, y, 60.0 / gap)[0] == pytest.approx(exact, abs=1e-6)
    # a perfect order has loss → 0, its reverse the largest
    y = np.array([5.0, 4, 3, 2, 1])
    good = smoothed_rank_loss([4.0, 3, 2, 1, 0], y, 10.0)[0]
    bad = smoothed_rank_loss([0.0, 1, 2, 3, 4], y, 10.0)[0]
    assert good < 1e-3 < bad


def test_smoothed_rank_is_non_convex_and_flat_where_the_pair_probabilities_saturate():
    """The blog post's caveat, on the two-item list: the curve bends both ways, and far from Δ = 0 its
    slope vanishes whether the pair is in the right order or the wrong one."""
    d = np.linspace(-8.0, 8.0, 1601)
    smooth, exact = smoothed_rank_pair_curve(d, gamma=2.0, ratings=(1.0, 0.0))
    second = np.diff(smooth, 2)
    assert second.max() > 1e-8 and second.min() < -1e-8          # convex on one side, concave on the other
    assert np.all(np.diff(smooth) <= 1e-15)                       # decreasing in Δ = f_a − f_b
    grad = np.empty(2)
    for wrong_way in (-12.0, 12.0):
        smoothed_rank_loss_grad(np.array([wrong_way, 0.0]), np.array([1.0, 0.0]), 2.0, grad)
        assert np.abs(grad).max() < 1e-8
    # the smoothed loss lies between the exact loss of the two orders, and the exact loss is a step
    assert exact[0] == pytest.approx(1.0 - (0.0 + 1.0 / math.log2(3)) / 1.0)
    assert exact[-1] == 0.0 and exact[800] == exact[0]           # Δ = 0: the tie is broken pessimistically
    assert np.all((smooth >= -1e-12) & (smooth <= exact[0] + 1e-12))


def test_smoothed_rank_edge_cases_and_the_kernel_is_what_the_wrapper_calls():
    assert smoothed_rank_loss([], [])[0] == 0.0
    loss, grad = smoothed_rank_loss([0.3, -1.0, 2.0], [0, 0, 0])       # no gain: nothing to lose
    assert loss == 0.0 and np.all(grad == 0.0)
    loss, grad = smoothed_rank_loss([800.0, -800.0, 0.0], [5, 1, 3], 3.0)
    assert np.isfinite(loss) and np.all(np.isfinite(grad)) and loss < 1e-12
    f, y = np.array([0.1, 0.7, -0.2, 0.4]), np.array([3.0, 5.0, 3.0, 1.0])
    g = np.empty(4)
    v = smoothed_rank_loss_grad(f, y, 1.5, g)
    v2, g2 = smoothed_rank_loss(f, y, 1.5)
    assert v == v2 and np.array_equal(g, g2)


@pytest.mark.parametrize("call, match", [
    (lambda: smoothed_rank_loss([1.0, 2.0], [1.0]), "same length"),
    (lambda: smoothed_rank_loss([1.0, np.nan], [1.0, 2.0]), "finite"),
    (lambda: smoothed_rank_loss([1.0, 2.0], [1.0, -1.0]), ">= 0"),
    (lambda: smoothed_rank_loss([1.0, 2.0], [1.0, 2.0], gamma=0.0), "gamma"),
    (lambda: smoothed_rank_loss([1.0, 2.0], [1.0, 2.0], gamma=-1.0), "gamma"),
    (lambda: smoothed_rank_loss([1.0, 2.0], [1.0, 2.0], gamma=np.inf), "gamma"),
    (lambda: smoothed_rank_loss([1.0, 2.0], [1.0, 2.0], gamma=True), "gamma"),
    (lambda: smoothed_positions(["a"], 1.0), "numeric"),
    (lambda: smoothed_rank_pair_curve([0.0], 1.0, ratings=(0.0, 0.0)), "above 0"),
    (lambda: smoothed_rank_pair_curve([np.nan], 1.0), "finite"),
])
def test_smoothed_rank_refuses_bad_input(call, match):
    with pytest.raises(ParameterError, match=match):
        call()
    assert check_gamma(2) == 2.0


# ---------------------------------------------------------------------------------------------- ordered partition
@settings(max_examples=60, deadline=None)
@given(f=st.lists(scores_st, min_size=1, max_size=10))
def test_partition_normaliser_by_enumerating_every_non_empty_subset(f):
    """Σ_{∅ ≠ S ⊆ R} Φ(S) = C Σ_R e^f with C = (2^N − 1)/N."""
    assert log_subset_normaliser(f) == pytest.approx(math.log(brute_normaliser(f)), rel=1e-11, abs=1e-11)
    n = len(f)
    assert log_subset_normaliser(f) == pytest.approx(math.log((2 ** n - 1) / n) + math.log(np.exp(f).sum()),
                                                     rel=1e-12, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(data=lists(max_size=12))
def test_partition_matches_the_references(data):
    f, y = data
    loss, grad = ordered_partition_loss(f, y)
    exact, grad_exact = ordered_partition_loss(f, y, exact=True)
    assert loss == pytest.approx(ref_partition(f, y), rel=1e-10, abs=1e-10)
    assert grad.shape == (len(f),) and np.array_equal(grad, grad_exact)
    assert partition_log_constant(y) == pytest.approx(ref_constant(y), rel=1e-12, abs=1e-12)
    assert exact == pytest.approx(loss + ref_constant(y), rel=1e-12, abs=1e-12)
    if len(f) <= 7:
        nll = ref_partition_enumerated(f, y)
        assert exact == pytest.approx(nll, rel=1e-10, abs=1e-10)
        assert loss == pytest.approx(nll - ref_constant(y), rel=1e-9, abs=1e-10)


@settings(max_examples=60, deadline=None)
@given(data=lists(min_size=1, max_size=8))
def test_partition_gradient_by_central_differences(data):
    """∂L/∂f_x = −e^{f_x}/T_{g(x)} + Σ_{k ≤ g(x)} e^{f_x}/S_k."""
    f, y = data
    _, grad = ordered_partition_loss(f, y)
    np.testing.assert_allclose(grad, fd_gradient(lambda x: ref_partition(x, y), f), rtol=1e-5, atol=1e-6)


@settings(max_examples=150, deadline=None)
@given(data=lists(max_size=12))
def test_partition_product_matches_the_references(data):
    f, y = data
    loss, grad = ordered_partition_loss(f, y, potential="product")
    assert loss == pytest.approx(ref_product(f, y), rel=1e-10, abs=1e-10)
    assert ordered_partition_loss(f, y, exact=True, potential="product")[0] == loss     # no constant to add
    assert grad.shape == (len(f),)
    if len(f) <= 7:
        assert loss == pytest.approx(ref_partition_enumerated(f, y, product_potential), rel=1e-10, abs=1e-10)


@settings(max_examples=60, deadline=None)
@given(data=lists(min_size=1, max_size=8))
def test_partition_product_gradient_by_central_differences(data):
    """∂L/∂f_x = σ(f_x) Σ_{k ≤ g(x)} P_k / (P_k − 1) − 1."""
    f, y = data
    _, grad = ordered_partition_loss(f, y, potential="product")
    np.testing.assert_allclose(grad, fd_gradient(lambda x: ref_product(x, y), f), rtol=1e-5, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(data=lists(min_size=2, max_size=9, ratings=st.integers(1, 3)))
def test_partition_product_depends_on_the_groups_and_on_the_scores_level(data):
    f, y = map(np.asarray, data)
    f, y = f.astype(float), y.astype(float)
    loss, grad = ordered_partition_loss(f, y, potential="product")
    perm = np.random.default_rng(len(f)).permutation(len(f))
    loss_p, grad_p = ordered_partition_loss(f[perm], y[perm], potential="product")
    assert loss_p == pytest.approx(loss, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad_p, grad[perm], rtol=1e-10, atol=1e-12)
    ranks = np.unique(y, return_inverse=True)[1]
    assert ordered_partition_loss(f, 10.0 * ranks + 7.0, potential="product")[0] == pytest.approx(loss, rel=1e-12,
                                                                                                   abs=1e-12)
    # unlike the mean potential, the scores' level matters: the derivative along a shift of every score is the
    # gradient's sum, which is not 0 (two items tied above one, all at 0: the level moves the loss)
    h = 1e-6
    along = (ordered_partition_loss(f + h, y, potential="product")[0]
             - ordered_partition_loss(f - h, y, potential="product")[0]) / (2 * h)
    assert along == pytest.approx(grad.sum(), rel=1e-5, abs=1e-6) and loss > 0
    level = [ordered_partition_loss([c, c, c], [2, 2, 1], potential="product")[0] for c in (-1.0, 0.0, 1.0)]
    assert len({round(v, 9) for v in level}) == 3


def test_partition_product_of_an_all_tied_list_and_extreme_scores():
    """An all-tied list is one stage choosing every item: Σ log(1 + e^{−f}) + log(1 − Π(1 + e^f)^{−1})."""
    f = np.array([0.5, -1.0, 2.0])
    want = np.log1p(np.exp(-f)).sum() + math.log(1.0 - 1.0 / np.prod(1.0 + np.exp(f)))
    assert ordered_partition_loss(f, [3, 3, 3], potential="product")[0] == pytest.approx(want, rel=1e-12)
    for f in ([-800.0, -900.0, -1000.0], [800.0, 900.0, -1000.0], [1e5, -1e5, 0.0]):
        loss, grad = ordered_partition_loss(f, [5, 3, 1], potential="product")
        assert np.isfinite(loss) and np.all(np.isfinite(grad))
    good = ordered_partition_loss([2.0, 1.0, 0.0], [5, 4, 3], potential="product")[0]
    bad = ordered_partition_loss([0.0, 1.0, 2.0], [5, 4, 3], potential="product")[0]
    assert good < bad
    assert ordered_partition_loss([], [], potential="product")[0] == 0.0


@settings(max_examples=60, deadline=None)
@given(data=lists(min_size=2, max_size=9, ratings=st.integers(1, 3)))
def test_partition_is_the_same_for_every_order_of_the_tied_items(data):
    f, y = map(np.asarray, data)
    f, y = f.astype(float), y.astype(float)
    loss, grad = ordered_partition_loss(f, y)
    rng = np.random.default_rng(len(f))
    for _ in range(3):
        perm = rng.permutation(len(f))            # reorders the stored list, hence the tied items among themselves
        loss_p, grad_p = ordered_partition_loss(f[perm], y[perm])
        assert loss_p == pytest.approx(loss, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(grad_p, grad[perm], rtol=1e-10, atol=1e-12)
    # the ratings' values do not matter, only the order of the groups
    ranks = np.unique(y, return_inverse=True)[1]
    assert ordered_partition_loss(f, 10.0 * ranks + 7.0)[0] == pytest.approx(loss, rel=1e-12, abs=1e-12)
    assert partition_log_constant(10.0 * ranks + 7.0) == partition_log_constant(y)


@settings(max_examples=80, deadline=None)
@given(data=lists(min_size=1, max_size=10), shift=st.floats(-50, 50))
def test_partition_is_shift_invariant(data, shift):
    f, y = map(np.asarray, data)
    f, y = f.astype(float), y.astype(float)
    loss, grad = ordered_partition_loss(f, y)
    loss_s, grad_s = ordered_partition_loss(f + shift, y)
    assert loss_s == pytest.approx(loss, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(grad_s, grad, rtol=1e-8, atol=1e-10)
    assert abs(grad.sum()) < 1e-10                # the directional derivative along (1, …, 1)


@pytest.mark.parametrize("n, fubini", [(1, 1), (2, 3), (3, 13), (4, 75), (5, 541)])
def test_partition_probabilities_of_every_ordered_partition_sum_to_one(n, fubini):
    parts = list(ordered_partitions(range(n)))
    assert len(parts) == fubini                   # the ordered Bell (Fubini) numbers of the blog post
    for f in (np.random.default_rng(n).normal(size=n), 4.0 * np.arange(n) - 30.0):
        total = product = 0.0
        for blocks in parts:
            y = np.empty(n)
            for rank, block in enumerate(blocks):
                y[block] = len(blocks) - rank     # equal ratings within a block, best block first
            total += math.exp(-ordered_partition_loss(f, y, exact=True)[0])
            product += math.exp(-ordered_partition_loss(f, y, potential="product")[0])
        assert total == pytest.approx(1.0, rel=1e-12)
        assert product == pytest.approx(1.0, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(f=st.lists(scores_st, min_size=1, max_size=9))
def test_partition_without_ties_is_plackett_luce(f):
    """With every group a single item the model is Plackett–Luce (ListMLE), up to the constants log C_k."""
    f = np.asarray(f, float)
    y = np.arange(len(f), 0, -1, dtype=float)     # strictly decreasing: no ties, the stored order is the ranking
    loss, grad = ordered_partition_loss(f, y)
    for ties in ("breslow", "efron"):
        pl, pl_grad = plackett_luce_loss(f, y, ties)
        assert loss == pytest.approx(pl, rel=1e-11, abs=1e-11)
        np.testing.assert_allclose(grad, pl_grad, rtol=1e-10, atol=1e-12)
    assert loss == pytest.approx(ref_listmle(f), rel=1e-10, abs=1e-10)
    n = len(f)
    log_c = sum(math.log((2 ** m - 1) / m) for m in range(1, n + 1))
    assert ordered_partition_loss(f, y, exact=True)[0] == pytest.approx(loss + log_c, rel=1e-12, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(data=lists(min_size=1, max_size=10, ratings=st.integers(1, 3)))
def test_partition_is_the_chance_that_plackett_luce_picks_first_from_the_group(data):
    """Each stage is −log Σ_{x ∈ X_k} e^{f_x}/S_k, so 0 ≤ L ≤ Breslow's loss (which sums −log of every choice)."""
    f, y = data
    loss = ordered_partition_loss(f, y)[0]
    assert loss >= 0.0
    assert loss <= plackett_luce_loss(f, y, "breslow")[0] + 1e-10


def test_partition_all_tied_lists_have_zero_loss_and_gradient():
    for f in ([0.3, -0.5, 1.0], [700.0, -700.0], [2.5]):
        n = len(f)
        loss, grad = ordered_partition_loss(f, [4] * n)
        assert loss == 0.0 and np.all(grad == 0.0)
        exact = ordered_partition_loss(f, [4] * n, exact=True)[0]
        assert exact == pytest.approx(math.log(2 ** n - 1), rel=1e-14, abs=1e-15)
    # the last group contributes nothing (R_K = X_K): here X_1 = {0}, X_2 = {1}, X_3 = {2, 3}
    f, y = np.array([1.0, 0.2, -0.4, 0.7]), np.array([3.0, 2.0, 1.0, 1.0])
    stages = (np.log(np.exp(f).sum()) - f[0]) + (np.log(np.exp(f[1:]).sum()) - f[1])
    assert ordered_partition_loss(f, y)[0] == pytest.approx(stages, rel=1e-13)


def test_partition_is_not_convex_with_ties_and_convex_without():
    """Two tied items above a third, f = (t, −t, 0): L = log(1 + 1/(2 cosh t)), a bump that vanishes both ways."""
    t = np.linspace(-6.0, 6.0, 241)
    vals = np.array([ordered_partition_loss([s, -s, 0.0], [2, 2, 1])[0] for s in t])
    np.testing.assert_allclose(vals, np.log1p(1.0 / (2.0 * np.cosh(t))), rtol=1e-12)
    assert np.diff(vals, 2).min() < -1e-4          # concave near t = 0
    rng = np.random.default_rng(0)
    y = np.array([6.0, 5, 4, 3, 2, 1])             # no ties: Plackett–Luce, convex along every line
    for _ in range(10):
        a, d = rng.normal(size=6), rng.normal(size=6)
        line = [ordered_partition_loss(a + s * d, y)[0] for s in np.linspace(-3, 3, 61)]
        assert np.all(np.diff(line, 2) >= -1e-9)


def test_partition_is_stable_for_huge_and_tiny_scores_and_rewards_the_right_order():
    for f in ([800.0, -800.0, 0.0], [-800.0, -900.0, -1000.0], [700.0, 650.0, 600.0], [1e300, -1e300, 0.0],
              [-1e300, 1e300, 3.0], [1e-300, -1e-300, 0.0]):
        for y in ([5, 1, 3], [5, 5, 3], [5, 3, 5]):
            loss, grad = ordered_partition_loss(f, y, exact=True)
            assert np.isfinite(loss) and np.all(np.isfinite(grad))
            assert abs(grad.sum()) <= 1e-12 * max(1.0, np.abs(grad).max())
    # far-apart scores in the right order: loss → 0; in the wrong order it grows like the score gaps
    assert ordered_partition_loss([-800.0, -900.0, -1000.0], [5, 3, 1])[0] == pytest.approx(0.0, abs=1e-12)
    assert ordered_partition_loss([-1000.0, -900.0, -800.0], [5, 3, 1])[0] == pytest.approx(300.0, rel=1e-12)
    assert ordered_partition_loss([1e300, -1e300, 0.0], [5, 3, 1])[0] == pytest.approx(1e300, rel=1e-12)
    assert log_subset_normaliser([-800.0, -801.0]) == pytest.approx(math.log(1.5) + np.logaddexp(-800.0, -801.0))
    assert log_subset_normaliser([]) == -np.inf
    good = ordered_partition_loss([2.0, 1.0, 0.0], [5, 4, 3])[0]
    bad = ordered_partition_loss([0.0, 1.0, 2.0], [5, 4, 3])[0]
    assert good < bad
    assert ordered_partition_loss([], [])[0] == 0.0 and ordered_partition_loss([], [], exact=True)[0] == 0.0
    # the constant of a long list without ties: Σ_{N ≤ n} log(2^N − 1) − log n!, beyond 2^1023
    n = 2000
    want = sum(math.log(2 ** m - 1) for m in range(1, n + 1)) - math.lgamma(n + 1)
    assert partition_log_constant(np.arange(n, dtype=float)) == pytest.approx(want, rel=1e-12)


def test_partition_kernel_is_what_the_wrapper_calls_and_the_ties_codes():
    f, y = np.array([0.1, 0.7, -0.2, 0.4]), np.array([3.0, 5.0, 3.0, 1.0])
    g = np.empty(4)
    v = partition_loss_grad(f, y, g)
    v2, g2 = ordered_partition_loss(f, y)
    assert v == v2 and np.array_equal(g, g2)
    g3 = np.empty(4)
    v3 = partition_product_loss_grad(f, y, g3)
    assert (v3, list(g3)) == (lambda r: (r[0], list(r[1])))(ordered_partition_loss(f, y, potential="product"))
    assert LISTWISE_TIES == ("breslow", "efron", "partition", "partition_product")
    assert [listwise_ties_code(t) for t in LISTWISE_TIES] == [0, 1, 2, 3]
    assert listwise_ties_code(" Partition ") == 2 and listwise_ties_code("PARTITION_PRODUCT") == 3
    with pytest.raises(ParameterError, match="breslow, efron, partition, partition_product"):
        listwise_ties_code("random")


@pytest.mark.parametrize("call, match", [
    (lambda: ordered_partition_loss([1.0, 2.0], [1.0]), "same length"),
    (lambda: ordered_partition_loss([1.0, np.nan], [1.0, 2.0]), "finite"),
    (lambda: ordered_partition_loss(["a"], [1.0]), "numeric"),
    (lambda: ordered_partition_loss([1.0], [1.0], exact="yes"), "exact"),
    (lambda: ordered_partition_loss([1.0], [1.0], exact=1), "exact"),
    (lambda: ordered_partition_loss([1.0], [1.0], potential="sum"), "potential.*mean, product"),
    (lambda: log_subset_normaliser([np.inf]), "scores must be finite"),
    (lambda: log_subset_normaliser(["a"]), "scores must be a numeric"),
    (lambda: partition_log_constant([1.0, np.nan]), "ratings must be finite"),
    (lambda: partition_log_constant([[1.0], ["b"]]), "ratings must be a numeric"),
])
def test_partition_refuses_bad_input(call, match):
    with pytest.raises(ParameterError, match=match):
        call()


@pytest.mark.parametrize("ratings", [(1.0, 0.0), (0.0, 1.0), (3.0, 1.0), (2.0, 2.0), (0.0, 4.0)])
def test_the_pair_curves_exact_loss_is_one_minus_the_metrics_ndcg_tied_or_not(ratings):
    """The exact step the losses page draws is ``1 − cofiviz.metrics.ndcg`` of the two-item list, ties included."""
    from cofiviz.metrics import ndcg
    d = np.array([-2.0, -1e-9, 0.0, 1e-9, 2.0])
    _, exact = smoothed_rank_pair_curve(d, gamma=1.0, ratings=ratings)
    expected = [1.0 - ndcg(np.array(ratings), np.array([x, 0.0])) for x in d]
    np.testing.assert_allclose(exact, expected, rtol=0, atol=1e-15)
