"""CofiRank's losses: brute-force maxima, subgradients by finite differences, the upper-bound
property of eq (5), Algorithm 2 against the plain pair loop, and the per-user packing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cofiviz import losses as L
from cofiviz.util.errors import ParameterError
from cofiviz.losses.structured import c_vector, ndcg_discounts, normalized_gains, reference_weights

SETTINGS = settings(max_examples=120, deadline=None)


def _case(seed, n_max=8, ties=True):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, n_max + 1))
    y = rng.integers(1, 6, n).astype(float)
    f = rng.normal(size=n)
    if ties and rng.random() < 0.3:
        f = np.round(f, 0)
    return rng, n, f, y


def _brute_structured(f, y, a, b, c, reference):
    """max_π Δ(π) + ⟨c, f_π − f_ref⟩ over all permutations (eq 4), with its maximiser."""
    n = len(f)
    w = reference_weights(y, c[:n], reference)
    best, arg = -np.inf, None
    for perm in itertools.permutations(range(n)):
        perm = np.array(perm)
        val = 1.0 - float(np.sum(a[:n] * b[perm])) + float(c[:n] @ f[perm]) - float(w @ f)
        if val > best + 1e-12:
            best, arg = val, perm
    return best, arg


# ------------------------------------------------------------------------------ NDCG / ERU
@SETTINGS
@given(st.integers(0, 2**31 - 1), st.sampled_from(["rating", "item_id", "tie_average"]))
def test_ndcg_loss_equals_brute_force_maximum(seed, reference):
    rng, n, f, y = _case(seed, n_max=6)
    k = int(rng.integers(1, 8))
    a = ndcg_discounts(n, k)
    b = normalized_gains(y, a)
    c = c_vector(n)
    loss, g = L.ndcg_loss(f, y, k=k, reference=reference)
    best, perm = _brute_structured(f, y, a, b, c, reference)
    assert loss == pytest.approx(best, abs=1e-10)
    # the subgradient is c at each item's position under a maximiser minus c at its reference position
    assert g.sum() == pytest.approx(0.0, abs=1e-12)


@SETTINGS
@given(st.integers(0, 2**31 - 1), st.sampled_from(["rating", "item_id", "tie_average"]))
def test_negligible_scores_break_ties_by_score_like_exact_arithmetic(seed, reference):
    """At ‖f‖ ~ 1e-60 (CofiRank at λ = 10) the maximiser is lexicographic: regret first, then ⟨c, f_π⟩."""
    rng, n, f, y = _case(seed, n_max=6, ties=False)
    k = int(rng.integers(1, 8))
    a, c = ndcg_discounts(n, k), c_vector(n)
    b = normalized_gains(y, a)
    tiny = 1e-60 * f
    loss, g = L.ndcg_loss(tiny, y, k=k, reference=reference)
    w = reference_weights(y, c, reference)
    best = None
    for perm in itertools.permutations(range(n)):
        perm = np.array(perm)
        key = (round(1.0 - float(np.sum(a[:n] * b[perm])), 12), float(c @ f[perm]))
        if best is None or key > best[0]:
            best = (key, perm)
    pos = np.empty(n, dtype=int)
    pos[best[1]] = np.arange(n)
    np.testing.assert_allclose(g, c[pos] - w, atol=1e-12)
    assert loss == pytest.approx(best[0][0], abs=1e-10)


@SETTINGS
@given(st.integers(0, 2**31 - 1), st.sampled_from(["rating", "item_id", "tie_average"]), st.integers(1, 12))
def test_ndcg_and_eru_losses_bound_the_regret_of_the_induced_ranking(seed, reference, k):
    """Eq (5): l(f, y) ≥ Δ(argsort(−f), y) ≥ 0, for NDCG and for NERU."""
    rng, n, f, y = _case(seed, n_max=15)
    f = f * 10.0 ** rng.uniform(-3, 2)
    loss, _ = L.ndcg_loss(f, y, k=k, reference=reference)
    regret = L.ndcg_regret(f, y, k=k)
    assert -1e-12 <= regret <= 1.0 + 1e-12
    assert loss >= regret - 1e-10
    loss, _ = L.eru_loss(f, y, neutral=2.5, halflife=3.0, k=k, reference=reference)
    assert loss >= L.eru_regret(f, y, neutral=2.5, halflife=3.0, k=k) - 1e-10


def test_regrets_agree_with_the_metrics_module():
    from cofiviz.metrics import ndcg, neru

    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(2, 20))
        y = rng.integers(1, 6, n).astype(float)
        f = rng.normal(size=n)
        assert L.ndcg_regret(f, y, k=10) == pytest.approx(1.0 - ndcg(y, f, k=10), abs=1e-12)
        expected = neru(y, f, d=3, alpha=5, k=10)
        if np.isnan(expected):  # no rating above the neutral vote: NERU undefined, the loss's regret is 0
            assert L.eru_regret(f, y, 3.0, 5.0, k=10) == 0.0
        else:
            assert L.eru_regret(f, y, 3.0, 5.0, k=10) == pytest.approx(1.0 - expected, abs=1e-12)


def test_ndcg_loss_vanishes_for_confident_correct_scores_and_is_max_regret_at_zero():
    y = np.array([3.0, 5.0, 1.0, 4.0, 2.0])
    f = 100.0 * y  # strictly ordered like the ratings, by a wide margin
    loss, g = L.ndcg_loss(f, y, k=3)
    assert loss == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(g, 0.0)
    loss0, _ = L.ndcg_loss(np.zeros(5), y, k=3)
    worst = max(L.ndcg_regret(-np.asarray(p, float), y, k=3) for p in itertools.permutations(range(5)))
    assert loss0 == pytest.approx(worst)


def test_reference_weights():
    c = c_vector(5)
    y = np.array([4.0, 5.0, 4.0, 1.0, 4.0])
    np.testing.assert_allclose(reference_weights(y, c, "item_id"), c)
    np.testing.assert_allclose(reference_weights(y, c, "rating"), c[[1, 0, 2, 4, 3]])
    tied = c[1:4].mean()
    np.testing.assert_allclose(reference_weights(y, c, "tie_average"), [tied, c[0], tied, c[4], tied])
    # with tie averaging the loss does not care in which order equally rated items come
    f = np.array([1.0, 10.0, 1.1, -10.0, 0.9])
    swapped = f[[2, 1, 4, 3, 0]]  # permute the scores of the three items rated 4
    for ref, same in (("tie_average", True), ("rating", False)):
        a, b = L.ndcg_loss(f, y, k=3, reference=ref)[0], L.ndcg_loss(swapped, y, k=3, reference=ref)[0]
        assert (a == pytest.approx(b, abs=1e-12)) is same
    assert L.ndcg_loss(np.array([1.0, 10.0, 1.0, -10.0, 1.0]), y, k=3, reference="tie_average")[0] == \
        pytest.approx(0.0, abs=1e-12)


def test_all_zero_gains_leave_only_the_ranking_term():
    y = np.array([1.0, 2.0, 3.0])
    loss, g = L.eru_loss(np.array([0.3, 0.1, 0.2]), y, neutral=3.0)  # no rating above the neutral vote
    assert L.eru_regret(np.zeros(3), y, neutral=3.0) == 0.0
    assert loss >= 0.0 and g.sum() == pytest.approx(0.0)


# ------------------------------------------------------------------------------ finite differences
def _fd_check(fn, f, rng, eps=1e-6, tol=1e-6):
    loss, g = fn(f)
    for _ in range(3):
        d = rng.normal(size=len(f))
        fd = (fn(f + eps * d)[0] - fn(f - eps * d)[0]) / (2 * eps)
        assert fd == pytest.approx(g @ d, abs=tol), (fd, g @ d)


@pytest.mark.parametrize("name", ["ndcg", "eru", "ordinal", "ordinal_diff", "pairs", "regression"])
def test_subgradients_match_finite_differences_where_differentiable(name):
    rng = np.random.default_rng(11)
    fns = {
        "ndcg": lambda y: (lambda f: L.ndcg_loss(f, y, k=5)),
        "eru": lambda y: (lambda f: L.eru_loss(f, y, neutral=2.0, halflife=4.0, k=5)),
        "ordinal": lambda y: (lambda f: L.ordinal_loss(f, y)),
        "ordinal_diff": lambda y: (lambda f: L.ordinal_loss(f, y, cost="difference", normalize=False)),
        "pairs": lambda y: (lambda f: L.pairs_loss(f, y)),
        "regression": lambda y: (lambda f: L.regression_loss(f, y)),
    }
    for _ in range(40):  # random points are differentiable with probability one
        n = int(rng.integers(2, 12))
        y = rng.integers(1, 6, n).astype(float)
        _fd_check(fns[name](y), rng.normal(scale=2.0, size=n), rng)


@pytest.mark.parametrize("fn", [L.ndcg_loss, L.eru_loss, L.ordinal_loss, L.regression_loss])
def test_losses_are_convex_along_random_lines(fn):
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 9))
        y = rng.integers(1, 6, n).astype(float)
        x0, x1 = rng.normal(size=n), rng.normal(size=n)
        for t in (0.25, 0.5, 0.75):
            mid = fn((1 - t) * x0 + t * x1, y)[0]
            assert mid <= (1 - t) * fn(x0, y)[0] + t * fn(x1, y)[0] + 1e-10


# ------------------------------------------------------------------------------ pairwise losses
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-6, 6), st.integers(1, 5)), min_size=0, max_size=25),
       st.sampled_from(["uniform", "difference"]), st.booleans())
def test_ordinal_algorithm_2_equals_the_pair_loop(items, cost, normalize):
    """Algorithm 2's O(n log n) sweep and the O(n²) loop agree, ties of f ± ½ included."""
    f = np.array([x / 2.0 for x, _ in items])  # half-integers: many exact ties between f_i + ½ and f_j − ½
    y = np.array([float(r) for _, r in items])
    a, ga = L.ordinal_loss(f, y, cost=cost, normalize=normalize)
    b, gb = L.pairs_loss(f, y, cost=cost, normalize=normalize)
    assert a == pytest.approx(b, abs=1e-10)
    # at exact kinks the two may pick different valid subgradients; compare where no tie occurs
    if len(f) == 0 or len(np.unique(np.concatenate([f - 0.5, f + 0.5]))) == 2 * len(f):
        np.testing.assert_allclose(ga, gb, atol=1e-10)


def test_ordinal_random_real_scores_match_pair_loop_including_gradient():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        y = rng.integers(1, 6, n).astype(float)
        f = rng.normal(scale=rng.uniform(0.1, 3), size=n)
        for cost in ("uniform", "difference"):
            a, ga = L.ordinal_loss(f, y, cost=cost)
            b, gb = L.pairs_loss(f, y, cost=cost)
            assert a == pytest.approx(b, abs=1e-10)
            np.testing.assert_allclose(ga, gb, atol=1e-10)


def test_preference_algorithm_3_on_all_pairs_is_the_ordinal_loss():
    rng = np.random.default_rng(2)
    y = rng.integers(1, 6, 12).astype(float)
    f = rng.normal(size=12)
    pairs = [(i, j) for i in range(12) for j in range(12) if y[i] < y[j]]
    costs = [y[j] - y[i] for i, j in pairs]
    p, gp = L.preference_loss(f, pairs, costs)
    o, go = L.ordinal_loss(f, y, cost="difference")
    assert p == pytest.approx(o) and np.allclose(gp, go)
    # a hand-made preference set: item 1 preferred to 0 and 2 to 1; only (0, 1) is violated
    loss, g = L.preference_loss(np.array([0.0, 0.5, 3.0]), [[0, 1], [1, 2]], normalize=False)
    assert loss == pytest.approx(0.5) and np.allclose(g, [1.0, -1.0, 0.0])


def test_structured_loss_curve_for_plots():
    y = np.array([5.0, 3.0, 1.0, 4.0])
    loss, regret = L.structured_loss_curve(y, np.zeros(4), y - 3.0, np.linspace(-2, 2, 21), k=3)
    assert loss.shape == regret.shape == (21,)
    assert np.all(loss >= regret - 1e-12)
    assert regret[-1] == pytest.approx(0.0) and regret[0] > 0.3


@pytest.mark.parametrize("call", [
    lambda: L.ndcg_loss([1.0, 2.0], [1.0]),
    lambda: L.ndcg_loss([1.0, np.nan], [1.0, 2.0]),
    lambda: L.ndcg_loss([1.0], [1.0], k=0),
    lambda: L.ndcg_loss([1.0], [1.0], reference="title"),
    lambda: L.eru_loss([1.0], [1.0], halflife=1.0),
    lambda: L.ordinal_loss([1.0], [1.0], cost="double"),
    lambda: L.preference_loss([1.0, 2.0], [[0, 2]]),
    lambda: L.regression_loss([[1.0]], [[1.0]]),
    lambda: L.build_loss_data([0, 1], [1.0], "hinge"),
    lambda: L.build_loss_data([0, 1], [1.0], "ordinal", user_weight="n_items"),
])
def test_bad_inputs_raise_parameter_errors(call):
    with pytest.raises(ParameterError):
        call()


# ------------------------------------------------------------------------------ per-user packing
@pytest.mark.parametrize("loss", list(L.LOSS_NAMES))
@pytest.mark.parametrize("reference", ["rating", "item_id", "tie_average"])
@pytest.mark.parametrize("precompute", [False, True])
def test_packed_per_user_losses_equal_the_single_user_functions(loss, reference, precompute):
    rng = np.random.default_rng(7)
    counts = np.array([0, 1, 5, 12, 3])
    indptr = np.concatenate([[0], np.cumsum(counts)])
    y = rng.integers(1, 6, indptr[-1]).astype(float)
    y[indptr[4]:indptr[5]] = 1.0                      # an ERU user with nothing above the neutral vote
    f = rng.normal(size=indptr[-1])
    data = L.build_loss_data(indptr, y, loss, k=4, reference=reference, pair_cost="difference",
                             eru_neutral=2.0, eru_halflife=3.0, precompute=precompute)
    # stored gains and weights take two floats per rating; computed per evaluation, none
    stored = precompute and loss in ("ndcg", "eru")
    assert data[3].shape == data[4].shape == ((indptr[-1],) if stored else (0,))
    losses, G = L.total_loss_grad(data, f)
    for u in range(len(counts)):
        s = slice(indptr[u], indptr[u + 1])
        single = {
            "ndcg": lambda: L.ndcg_loss(f[s], y[s], k=4, reference=reference),
            "eru": lambda: L.eru_loss(f[s], y[s], neutral=2.0, halflife=3.0, k=4, reference=reference),
            "ordinal": lambda: L.ordinal_loss(f[s], y[s], cost="difference"),
            "preference": lambda: L.pairs_loss(f[s], y[s], cost="difference"),
            "regression": lambda: L.regression_loss(f[s], y[s]),
        }[loss]
        if counts[u] == 0:
            assert losses[u] == 0.0
            continue
        val, g = single()
        assert losses[u] == pytest.approx(val, abs=1e-12)
        np.testing.assert_allclose(G[s], g, atol=1e-12)


@pytest.mark.parametrize("loss", list(L.LOSS_NAMES))
def test_user_weight_n_ratings_multiplies_each_users_loss_and_gradient_by_its_count(loss):
    rng = np.random.default_rng(11)
    counts = np.array([0, 1, 5, 12, 3])
    indptr = np.concatenate([[0], np.cumsum(counts)])
    y = rng.integers(1, 6, indptr[-1]).astype(float)
    f = rng.normal(size=indptr[-1])
    plain = L.total_loss_grad(L.build_loss_data(indptr, y, loss, k=4), f)
    weighted = L.total_loss_grad(L.build_loss_data(indptr, y, loss, k=4, user_weight="n_ratings"), f)
    assert np.any(plain[0] > 0)
    np.testing.assert_allclose(weighted[0], counts * plain[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weighted[1], np.repeat(counts, counts) * plain[1], rtol=1e-12, atol=1e-12)
