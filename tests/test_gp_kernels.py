"""The Gaussian-process kernels' blocked products and solves sum every entry in the order of the plain loops
that define them, so that their results are those loops' to the last bit (the reproductions' shipped GP cells
depend on it), and agree with NumPy's LAPACK and BLAS to rounding."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from cofiviz.models import _gp_kernels as gk


def _matmul_in_order(A, B):
    """``A @ B`` with each entry's terms added one by one in ascending k, a term with ``A_ik = 0`` skipped."""
    C = np.zeros((A.shape[0], B.shape[1]))
    for k in range(A.shape[1]):
        rows = A[:, k] != 0.0
        C[rows] += A[rows, k][:, None] * B[k][None, :]
    return C


def _cho_solve_in_order(L, B):
    """Forward then back substitution, row by row, each sum in ascending k."""
    n = L.shape[0]
    Y = np.array(B, dtype=float)
    for i in range(n):
        for k in range(i):
            Y[i] -= L[i, k] * Y[k]
        Y[i] /= L[i, i]
    X = Y.copy()
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            X[i] -= L[k, i] * X[k]
        X[i] /= L[i, i]
    return X


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 2), (4, 4, 4), (7, 130, 9), (203, 300, 1100), (66, 257, 513)])
def test_blocked_product_is_the_plain_loop_to_the_last_bit(shape):
    n, p, m = shape
    rng = np.random.default_rng(n + p + m)
    A, B = rng.normal(size=(n, p)), rng.normal(size=(p, m))
    A[rng.random((n, p)) < 0.1] = 0.0             # zero terms inside groups of four rows, and whole zero columns
    A[:, p // 2] = 0.0
    B[rng.random((p, m)) < 0.5] = 0.0             # a sparse right factor, as EM's Q − P
    C = gk.matmul(A, B)
    assert np.array_equal(C, _matmul_in_order(A, B))
    np.testing.assert_allclose(C, A @ B, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("m", [1, 5, 256, 257, 600])
def test_blocked_solve_is_row_by_row_substitution_to_the_last_bit(m):
    n = 150
    rng = np.random.default_rng(m)
    X = rng.normal(size=(n, 5))
    K = np.exp(-gk.sq_dists(X) / 4.0) + 1e-2 * np.eye(n)
    L, ok = gk.cholesky(K)
    B = rng.normal(size=(n, m))
    got = gk.cho_solve(L, np.ascontiguousarray(B))
    assert ok and np.array_equal(got, _cho_solve_in_order(L, B))
    np.testing.assert_allclose(got, scipy.linalg.cho_solve((L, True), B), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("m", [1, 2, 63, 64, 65, 200])
def test_em_covariance_is_the_numpy_expression_to_the_last_bit(m):
    """The M-step's fused covariance update against the NumPy expression it replaces, on tile edges too."""
    rng = np.random.default_rng(m)
    K, K0, X = (rng.normal(size=(m, m)) for _ in range(3))
    mu, d, Ks = (rng.normal(size=m) for _ in range(3))
    n, tau, pi = 37, 2.5, 0.75
    S = n * K + n * np.outer(d, d) + np.outer(d, Ks) + np.outer(Ks, d) + X
    C = (tau * K0 + pi * np.outer(mu, mu) + S) / (n + tau + 1.0)
    want = 0.5 * (C + C.T)
    got = gk.em_covariance(K, K0, X, mu, d, Ks, float(n), tau, pi, float(n + tau + 1.0))
    assert np.array_equal(got, want)
    assert np.array_equal(got, got.T)
