"""The listwise Plackett–Luce loss and the tie-aware pairwise losses (Rao–Kupper, Davidson) of "The rank 1 problem":
NumPy reference implementations written from the formulas, hypothesis property tests (ties included)
against the numba kernels, finite-difference gradients, and the errors at the public boundary."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cofiviz.util.errors import ParameterError
from cofiviz.losses import plackett_luce_loss, pl_list_probability, tie_frame, tie_loss, tie_probabilities
from cofiviz.losses.listwise import PL_TIES, pl_loss_grad, pl_ties_code
from cofiviz.losses.ties import TIE_MODELS, check_tie_param, tie_code, tie_value_deriv


# ---------------------------------------------------------------------------------------------- references
def ref_pl(f, y, ties="breslow"):
    """Plackett–Luce negative log-likelihood, written group by group from the formulas (no shifting)."""
    f, y = np.asarray(f, float), np.asarray(y, float)
    loss = 0.0
    for level in np.unique(y)[::-1]:
        group = y == level
        risk = y <= level
        S, T, d = np.exp(f[risk]).sum(), np.exp(f[group]).sum(), int(group.sum())
        if ties == "breslow":
            loss += d * np.log(S)
        else:
            loss += sum(np.log(S - (l / d) * T) for l in range(d))
        loss -= f[group].sum()
    return loss


def ref_pl_strict(f_in_order):
    """The blog post's product Π_i exp(f_i) / Σ_{j ≥ i} exp(f_j) for a strict order (first = best)."""
    f = np.asarray(f_in_order, float)
    return float(np.prod([np.exp(f[i]) / np.exp(f[i:]).sum() for i in range(len(f))]))


def ref_tie_average(f, y):
    """−log of the Plackett–Luce probability averaged over every order of the tied items (exact, small lists)."""
    f, y = np.asarray(f, float), np.asarray(y, float)
    groups = [np.flatnonzero(y == lv) for lv in np.unique(y)[::-1]]
    total, count = 0.0, 0
    for perms in itertools.product(*[list(itertools.permutations(g)) for g in groups]):
        order = np.concatenate(perms)
        total += ref_pl_strict(f[order])
        count += 1
    return -np.log(total / count)


def ref_rao_kupper(delta, theta, outcome):
    pi_i, pi_j = np.exp(delta), 1.0
    if outcome == "win":
        p = pi_i / (pi_i + theta * pi_j)
    elif outcome == "loss":
        p = pi_j / (pi_j + theta * pi_i)
    else:
        p = (theta ** 2 - 1) * pi_i * pi_j / ((pi_i + theta * pi_j) * (pi_j + theta * pi_i))
    return -np.log(p)


def ref_davidson(delta, nu, outcome):
    pi_i, pi_j = np.exp(delta), 1.0
    den = pi_i + pi_j + nu * np.sqrt(pi_i * pi_j)
    num = {"win": pi_i, "loss": pi_j, "tie": nu * np.sqrt(pi_i * pi_j)}[outcome]
    return -np.log(num / den)


REF_TIES = {"rao_kupper": ref_rao_kupper, "davidson": ref_davidson}

scores_st = st.floats(-8, 8, allow_nan=False)
ratings_st = st.integers(1, 5)


def lists(min_size=1, max_size=12):
    return st.integers(min_size, max_size).flatmap(
        lambda n: st.tuples(st.lists(scores_st, min_size=n, max_size=n), st.lists(ratings_st, min_size=n, max_size=n)))


# ---------------------------------------------------------------------------------------------- Plackett–Luce
@pytest.mark.parametrize("ties", PL_TIES)
@settings(max_examples=150, deadline=None)
@given(data=lists())
def test_pl_matches_the_numpy_reference(ties, data):
    f, y = data
    loss, grad = plackett_luce_loss(f, y, ties)
    assert loss == pytest.approx(ref_pl(f, y, ties), rel=1e-9, abs=1e-9)
    assert grad.shape == (len(f),)
    assert abs(grad.sum()) < 1e-9  # adding a constant to every score changes nothing


@pytest.mark.parametrize("ties", PL_TIES)
@settings(max_examples=60, deadline=None)
@given(data=lists(min_size=2, max_size=8))
def test_pl_gradient_by_central_differences(ties, data):
    f, y = map(np.asarray, data)
    f = f.astype(float)
    _, grad = plackett_luce_loss(f, y, ties)
    h = 1e-6
    for k in range(len(f)):
        e = np.zeros(len(f))
        e[k] = h
        fd = (ref_pl(f + e, y, ties) - ref_pl(f - e, y, ties)) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-6)


@settings(max_examples=80, deadline=None)
@given(data=lists(max_size=7))
def test_pl_without_ties_is_the_blog_product_and_both_rules_agree(data):
    f, _ = data
    y = np.arange(len(f), 0, -1, dtype=float)  # strictly decreasing: no ties
    a = plackett_luce_loss(f, y, "breslow")[0]
    b = plackett_luce_loss(f, y, "efron")[0]
    assert a == pytest.approx(b, rel=1e-12, abs=1e-12)
    assert math.exp(-a) == pytest.approx(ref_pl_strict(f), rel=1e-9, abs=1e-300)
    assert pl_list_probability(f) == pytest.approx(ref_pl_strict(f), rel=1e-9, abs=1e-300)


@settings(max_examples=60, deadline=None)
@given(data=lists(min_size=2, max_size=6))
def test_pl_ties_bound_the_tie_averaged_loss_and_are_order_free(data):
    f, y = map(np.asarray, data)
    f = f.astype(float)
    exact = ref_tie_average(f, y)
    breslow = plackett_luce_loss(f, y, "breslow")[0]
    efron = plackett_luce_loss(f, y, "efron")[0]
    assert breslow >= exact - 1e-9          # Breslow is an upper bound (Jensen)
    assert efron <= breslow + 1e-9          # Efron is the tighter approximation
    perm = np.random.default_rng(len(f)).permutation(len(f))
    for ties in PL_TIES:                    # the loss does not depend on how the list is stored
        assert plackett_luce_loss(f[perm], y[perm], ties)[0] == pytest.approx(
            plackett_luce_loss(f, y, ties)[0], rel=1e-12, abs=1e-12)


def test_pl_efron_is_exact_for_equal_scores_and_all_tied_lists_carry_no_preference():
    f = np.array([0.3, 0.3, 0.3, -1.0])
    y = np.array([5.0, 5.0, 5.0, 2.0])
    assert plackett_luce_loss(f, y, "efron")[0] == pytest.approx(ref_tie_average(f, y), rel=1e-12)
    for ties in PL_TIES:
        loss, grad = plackett_luce_loss([0.5, 0.5, 0.5], [4, 4, 4], ties)
        np.testing.assert_allclose(grad, 0.0, atol=1e-12)
    assert plackett_luce_loss([], [])[0] == 0.0


def test_pl_is_stable_for_huge_scores_and_rewards_the_right_order():
    loss, grad = plackett_luce_loss([800.0, -800.0, 0.0], [5, 1, 3])
    assert np.isfinite(loss) and np.all(np.isfinite(grad)) and loss < 1e-12
    good = plackett_luce_loss([2.0, 1.0, 0.0], [5, 4, 3])[0]
    bad = plackett_luce_loss([0.0, 1.0, 2.0], [5, 4, 3])[0]
    assert good < bad


def test_pl_numba_kernel_is_what_the_wrapper_calls():
    f, y = np.array([0.1, 0.7, -0.2, 0.4]), np.array([3.0, 5.0, 3.0, 1.0])
    g = np.empty(4)
    for ties in PL_TIES:
        v = pl_loss_grad(f, y, pl_ties_code(ties), g)
        v2, g2 = plackett_luce_loss(f, y, ties)
        assert v == v2 and np.array_equal(g, g2)


@pytest.mark.parametrize("call", [
    lambda: plackett_luce_loss([1.0, 2.0], [1.0]),
    lambda: plackett_luce_loss([1.0, np.nan], [1.0, 2.0]),
    lambda: plackett_luce_loss([1.0, 2.0], [1.0, 2.0], ties="random"),
    lambda: plackett_luce_loss(["a"], [1.0]),
])
def test_pl_refuses_bad_input(call):
    with pytest.raises(ParameterError):
        call()


# ---------------------------------------------------------------------------------------------- ties
PARAMS = st.floats(1.01, 6.0)


@pytest.mark.parametrize("model", TIE_MODELS)
@settings(max_examples=120, deadline=None)
@given(delta=st.floats(-20, 20, allow_nan=False), param=PARAMS, outcome=st.sampled_from(["win", "tie", "loss"]))
def test_tie_losses_match_the_papers_probabilities(model, delta, param, outcome):
    if model == "davidson":
        param -= 1.0
    value, slope = tie_loss(model, delta, param, outcome)
    assert float(value) == pytest.approx(REF_TIES[model](delta, param, outcome), rel=1e-8, abs=1e-8)
    h = 1e-5
    fd = (REF_TIES[model](delta + h, param, outcome) - REF_TIES[model](delta - h, param, outcome)) / (2 * h)
    assert float(slope) == pytest.approx(fd, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("model", TIE_MODELS)
@settings(max_examples=80, deadline=None)
@given(delta=st.floats(-30, 30, allow_nan=False), param=PARAMS)
def test_win_tie_loss_probabilities_sum_to_one_and_ties_peak_at_zero(model, delta, param):
    if model == "davidson":
        param -= 1.0
    p = tie_probabilities(model, [delta, 0.0], param)
    np.testing.assert_allclose(p["win"] + p["tie"] + p["loss"], 1.0, rtol=1e-12)
    assert p["tie"][1] >= p["tie"][0] - 1e-15
    assert p["win"][1] == pytest.approx(p["loss"][1])


@pytest.mark.parametrize("model", TIE_MODELS)
def test_tie_losses_are_convex_and_the_kernel_is_antisymmetric(model):
    x = np.linspace(-10, 10, 801)
    for outcome in ("win", "tie", "loss"):
        v = tie_loss(model, x, 2.0, outcome)[0]
        assert np.all(np.diff(v, 2) >= -1e-9)
    code = tie_code(model)
    for d in (-3.0, -0.2, 0.0, 1.5):
        v1, g1 = tie_value_deriv(code, True, d, 2.0)
        v2, g2 = tie_value_deriv(code, True, -d, 2.0)
        assert v1 == pytest.approx(v2) and g1 == pytest.approx(-g2, abs=1e-15)


def test_rao_kupper_near_theta_one_is_bradley_terry_for_wins():
    x = np.linspace(-5, 5, 11)
    np.testing.assert_allclose(tie_loss("rao_kupper", x, 1.0 + 1e-12, "win")[0], np.log1p(np.exp(-x)), atol=1e-9)
    np.testing.assert_allclose(tie_loss("davidson", x, 1e-12, "win")[0], np.log1p(np.exp(-x)), atol=1e-9)


@pytest.mark.parametrize("model, bad", [("rao_kupper", 1.0), ("rao_kupper", 0.5), ("davidson", 0.0),
                                        ("davidson", -1.0), ("davidson", np.inf), ("davidson", "x"),
                                        ("rao_kupper", True)])
def test_tie_parameters_out_of_range_are_refused(model, bad):
    with pytest.raises(ParameterError, match="theta|nu"):
        check_tie_param(model, bad)
    with pytest.raises(ParameterError):
        tie_loss(model, [0.0], bad)


def test_tie_boundary_errors_and_frame():
    with pytest.raises(ParameterError, match="rao_kupper"):
        tie_code("thurstone")
    with pytest.raises(ParameterError, match="outcome"):
        tie_loss("davidson", 0.0, 1.0, "draw")
    with pytest.raises(ParameterError):
        tie_loss("davidson", [np.nan], 1.0)
    frame = tie_frame(params={"rao_kupper": 3.0}, delta=[-1.0, 0.0, 1.0])
    assert set(frame["model"]) == set(TIE_MODELS) and len(frame) == 2 * 3 * 3
    sums = frame.groupby(["model", "delta"])["probability"].sum()
    np.testing.assert_allclose(sums, 1.0)
    assert frame.loc[frame["model"] == "rao_kupper", "param"].eq(3.0).all()
