"""The numba linear assignment solver against scipy.optimize.linear_sum_assignment."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import linear_sum_assignment as scipy_lsa

from cofiviz.util.errors import ParameterError
from cofiviz.solvers.lap import assignment_workspace, lap_rank2, lap_rank2_free, linear_sum_assignment

SETTINGS = settings(max_examples=150, deadline=None)


def _check_same_optimum(C, maximize=False):
    r1, c1 = scipy_lsa(C, maximize=maximize)
    r2, c2 = linear_sum_assignment(C, maximize=maximize)
    assert len(r2) == len(c2) == min(C.shape)
    assert len(set(r2.tolist())) == len(r2) and len(set(c2.tolist())) == len(c2)
    assert np.all(np.diff(r2) > 0)
    np.testing.assert_allclose(C[r2, c2].sum(), C[r1, c1].sum(), rtol=1e-12, atol=1e-9)


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=9),
                  elements=st.floats(-1e3, 1e3, allow_nan=False, width=64)))
def test_random_real_matrices_match_scipy(C):
    _check_same_optimum(C)
    _check_same_optimum(C, maximize=True)


@SETTINGS
@given(hnp.arrays(np.int64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=9),
                  elements=st.integers(0, 2)))
def test_degenerate_integer_matrices_with_many_ties(C):
    _check_same_optimum(C.astype(float))


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (30, 30), (20, 45), (45, 20)])
def test_shapes_and_constant_matrices(shape):
    rng = np.random.default_rng(sum(shape))
    _check_same_optimum(rng.normal(size=shape))
    _check_same_optimum(np.zeros(shape))


def test_forbidden_pairs_with_inf():
    C = np.array([[np.inf, 1.0, 2.0], [3.0, np.inf, 1.0], [1.0, 5.0, np.inf]])
    _check_same_optimum(C)
    with pytest.raises(ParameterError, match="infeasible"):
        linear_sum_assignment(np.array([[np.inf, np.inf], [1.0, 2.0]]))


@pytest.mark.parametrize("bad", [np.zeros(3), np.array([[np.nan, 1.0], [1.0, 2.0]]),
                                 np.array([[-np.inf, 1.0], [1.0, 2.0]])])
def test_bad_cost_matrices_are_refused(bad):
    with pytest.raises(ParameterError):
        linear_sum_assignment(bad)


def test_empty():
    r, c = linear_sum_assignment(np.zeros((0, 3)))
    assert len(r) == len(c) == 0


@SETTINGS
@given(st.integers(1, 12), st.integers(0, 2**31 - 1), st.booleans())
def test_rank_two_ndcg_costs_match_dense_scipy(n, seed, ties):
    """CofiRank's cost C[p, j] = a_p b_j − c_p f_j, solved without building the matrix."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, n + 1))
    a = 1.0 / np.log2(np.arange(n) + 2.0)
    a[k:] = 0.0
    b = (2.0 ** rng.integers(1, 6, n) - 1) if ties else rng.random(n)
    b = b / b.sum()
    c = (np.arange(n) + 1.0) ** -0.25
    f = np.round(rng.normal(size=n), 1) if ties else rng.normal(size=n)
    C = np.outer(a, b) - np.outer(c, f)
    col4row = np.empty(n, dtype=np.int64)
    wf, wi = assignment_workspace(n)
    total = lap_rank2(a, b, c, f, col4row, wf, wi)
    assert sorted(col4row.tolist()) == list(range(n))
    r, cc = scipy_lsa(C)
    np.testing.assert_allclose(total, C[r, cc].sum(), atol=1e-12)
    np.testing.assert_allclose(C[np.arange(n), col4row].sum(), total, atol=1e-12)


@pytest.mark.parametrize("n, k", [(40, 10), (60, 5), (25, 24), (30, 1)])
def test_rank_two_with_long_tails_matches_scipy(n, k):
    """Past the truncation k the rows are solved in closed form; the optimum must not change."""
    rng = np.random.default_rng(n * 100 + k)
    for trial in range(10):
        a = 1.0 / np.log2(np.arange(n) + 2.0)
        a[k:] = 0.0
        b = 2.0 ** rng.integers(1, 6, n) - 1
        b = b / b.sum()
        c = (np.arange(n) + 1.0) ** -0.25
        f = rng.normal(scale=10.0 ** rng.uniform(-3, 1), size=n)
        if trial % 2:
            f = np.round(f, 1)  # ties in f
        C = np.outer(a, b) - np.outer(c, f)
        col4row = np.empty(n, dtype=np.int64)
        wf, wi = assignment_workspace(n)
        total = lap_rank2(a, b, c, f, col4row, wf, wi)
        r, cc = scipy_lsa(C)
        assert sorted(col4row.tolist()) == list(range(n))
        np.testing.assert_allclose(total, C[r, cc].sum(), atol=1e-10)


@SETTINGS
@given(st.integers(2, 40), st.integers(0, 2**31 - 1), st.booleans(), st.sampled_from(["random", "lexicographic"]))
def test_rank_two_started_free_on_any_k_items_reaches_the_same_minimum(n, seed, ties, guess):
    """``lap_rank2_free`` starts the tail rows on the items not marked free, with their optimal duals: whatever
    the ``k`` free items (a random set, or the top of the maximiser the gains alone give), the minimum is the
    dense solver's."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, n))
    a = 1.0 / np.log2(np.arange(n) + 2.0)
    a[k:] = 0.0
    b = (2.0 ** rng.integers(1, 6, n) - 1) if ties else rng.random(n)
    b = b / b.sum()
    c = (np.arange(n) + 1.0) ** -0.25
    f = rng.normal(scale=10.0 ** rng.uniform(-4, 1), size=n)
    if ties:
        f = np.round(f, 1)
    if guess == "random":
        top = rng.choice(n, k, replace=False)
    else:
        top = np.lexsort((-f, b))[:k]
    free = np.zeros(n, dtype=bool)
    free[top] = True
    C = np.outer(a, b) - np.outer(c, f)
    col4row = np.empty(n, dtype=np.int64)
    wf, wi = assignment_workspace(n)
    total = lap_rank2_free(a, b, c, f, free, col4row, wf, wi)
    assert sorted(col4row.tolist()) == list(range(n))
    r, cc = scipy_lsa(C)
    scale = np.abs(C).max()
    np.testing.assert_allclose(total, C[r, cc].sum(), atol=1e-12 * scale * n)
    np.testing.assert_allclose(C[np.arange(n), col4row].sum(), total, atol=1e-12 * scale * n)


def test_an_empty_free_mask_is_lap_rank2():
    rng = np.random.default_rng(5)
    n, k = 30, 10
    a = 1.0 / np.log2(np.arange(n) + 2.0)
    a[k:] = 0.0
    b, c, f = rng.random(n), (np.arange(n) + 1.0) ** -0.25, rng.normal(size=n)
    got, want = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    wf, wi = assignment_workspace(n)
    assert lap_rank2_free(a, b, c, f, np.zeros(0, dtype=bool), got, wf, wi) == lap_rank2(a, b, c, f, want, wf, wi)
    np.testing.assert_array_equal(got, want)
