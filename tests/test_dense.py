"""The fixed-order dense algebra: the plain loops' sums to the last bit, NumPy's results within rounding, and a
clear error for a matrix it cannot factor."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from cofiviz.util.errors import ParameterError
from cofiviz.solvers import dense

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


def loop_dot(x, y):
    s = 0.0
    for a, b in zip(x.tolist(), y.tolist()):
        s += a * b
    return s


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(arrays(np.float64, n, elements=finite),
                                                      arrays(np.float64, n, elements=finite))))
def test_dot_is_the_ordered_sum_to_the_last_bit(xy):
    x, y = xy
    assert dense.dot(x, y) == loop_dot(x, y)
    assert dense.dot(x, y) == pytest.approx(float(np.dot(x, y)), rel=1e-9, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.tuples(st.integers(1, 6), st.integers(1, 7), st.integers(1, 5)).flatmap(
    lambda s: st.tuples(arrays(np.float64, (s[0], s[1]), elements=finite),
                        arrays(np.float64, (s[1], s[2]), elements=finite))))
def test_matmul_and_matvec_are_the_ordered_sums(ab):
    A, B = ab
    got = dense.matmul(A, B)
    want = np.array([[loop_dot(A[i], B[:, j]) for j in range(B.shape[1])] for i in range(A.shape[0])])
    assert np.array_equal(got, want)
    # a transposed view gives the same as its copy
    assert np.array_equal(dense.matmul(B.T, A.T), dense.matmul(np.ascontiguousarray(B.T), np.ascontiguousarray(A.T)))
    x = B[:, 0].copy()
    assert np.array_equal(dense.matvec(A, x), np.array([loop_dot(A[i], x) for i in range(A.shape[0])]))
    np.testing.assert_allclose(got, A @ B, rtol=1e-9, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(0, 2 ** 32 - 1))
def test_cholesky_solves_and_inverse_agree_with_numpy(n, seed):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    A = M @ M.T + n * np.eye(n)
    b = rng.standard_normal(n)
    L, ok = dense.cholesky(A)
    assert ok and np.array_equal(L, np.tril(L))
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dense.cho_solve(L, b), np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)
    inv = dense.spd_inverse(A)
    assert np.array_equal(inv, inv.T)
    np.testing.assert_allclose(inv, np.linalg.inv(A), rtol=1e-9, atol=1e-12)
    G = M + n * np.eye(n) * (seed % 2)          # a general matrix, pivoting needed when the diagonal is small
    if abs(np.linalg.det(G)) > 1e-6:
        np.testing.assert_allclose(G @ dense.solve(G, b), b, rtol=1e-7, atol=1e-7)


def test_a_matrix_that_cannot_be_factored_is_refused_by_name():
    with pytest.raises(ParameterError, match="not positive definite"):
        dense.spd_inverse(np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert not dense.cholesky(np.array([[0.0, 0.0], [0.0, 1.0]]))[1]
    with pytest.raises(ParameterError, match="singular"):
        dense.solve(np.array([[1.0, 2.0], [2.0, 4.0]]), np.ones(2))
    # a zero leading entry is no obstacle once rows are swapped
    np.testing.assert_array_equal(dense.solve(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([2.0, 3.0])), [3.0, 2.0])
