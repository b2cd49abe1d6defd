"""Weighted ALS's half-sweep (``cofiviz.models._wals_kernels.wals_half``, LLORMA's and RegSVD's solver) against a plain
Python reference: the normal equations of each row, built one rating at a time in the ratings' order and solved by the
column-by-column Cholesky factor, to the last bit."""

from __future__ import annotations

import numpy as np
import pytest

from cofiviz.models import _wals_kernels as wk


def _plain_cholesky_solve(A, b, d):
    """``A x = b`` by the column-by-column Cholesky factor, each sum one row at a time in ascending ``k``, then the
    two triangular solves (``x`` in ``b``)."""
    for j in range(d):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        A[j, j] = np.sqrt(max(s, 1e-300))
        for i in range(j + 1, d):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / A[j, j]
    for i in range(d):
        s = b[i]
        for k in range(i):
            s -= A[i, k] * b[k]
        b[i] = s / A[i, i]
    for i in range(d - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, d):
            s -= A[k, i] * b[k]
        b[i] = s / A[i, i]


def _reference_half(row_indptr, row_pos, col_of, target, Krow, Kcol, X, Y, xb, yb, offset, lam, lam_b, row_bias,
                    col_bias, per_rating):
    """The half-sweep as its docstring states it, one rating at a time: ``A += (k y) yᵀ`` (lower triangle) and
    ``b += (k y) z`` in the ratings' order, then :func:`_plain_cholesky_solve`."""
    q, nrows, r = X.shape
    d = r + (1 if row_bias else 0)
    for t in range(q):
        for a in range(nrows):
            A = np.zeros((d, d))
            b = np.zeros(d)
            kr = Krow[t, a]
            if kr > 0.0:
                for e in range(row_indptr[a], row_indptr[a + 1]):
                    p = row_pos[e]
                    c = col_of[p]
                    kp = kr * Kcol[t, c]
                    if kp == 0.0:
                        continue
                    z = target[p] - offset - (yb[t, c] if col_bias else 0.0)
                    y = np.concatenate([Y[t, c], [1.0]]) if row_bias else Y[t, c].copy()
                    for j in range(d):
                        kyj = kp * y[j]
                        b[j] += kyj * z
                        for l in range(j + 1):
                            A[j, l] += kyj * y[l]
            scale = float(row_indptr[a + 1] - row_indptr[a]) if per_rating else 1.0
            for j in range(r):
                A[j, j] += lam * scale
            if row_bias:
                A[r, r] += lam_b * scale
            _plain_cholesky_solve(A, b, d)
            X[t, a] = b[:r]
            if row_bias:
                xb[t, a] = b[r]


@pytest.mark.parametrize("q, r, row_bias, col_bias, per_rating",
                         [(1, 5, True, True, True), (3, 4, False, False, False), (2, 9, True, False, False),
                          (1, 3, False, True, True), (1, 1, False, False, False), (1, 12, True, True, False)])
def test_half_sweep_is_the_one_rating_at_a_time_reference_to_the_last_bit(q, r, row_bias, col_bias, per_rating):
    """Rows with 0 to 23 ratings (whole groups of ratings and remainders), kernel weights with zeros (skipped
    ratings and rows), several local models."""
    rng = np.random.default_rng(q * 100 + r)
    n_rows, n_cols = 12, 30
    counts = np.arange(n_rows) * 2 % 24
    row_indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n = int(row_indptr[-1])
    col_of = np.concatenate([np.sort(rng.choice(n_cols, size=c, replace=False)) for c in counts]).astype(np.int64)
    row_pos = rng.permutation(n).astype(np.int64)
    target = rng.integers(1, 6, size=n).astype(np.float64)
    Krow = rng.uniform(0.0, 1.0, (q, n_rows))
    Krow[Krow < 0.2] = 0.0
    Kcol = rng.uniform(0.0, 1.0, (q, n_cols))
    Kcol[Kcol < 0.2] = 0.0
    Y = rng.normal(size=(q, n_cols, r))
    yb = rng.normal(size=(q, n_cols))
    X0, xb0 = rng.normal(size=(q, n_rows, r)), rng.normal(size=(q, n_rows))
    X, xb = X0.copy(), xb0.copy()
    wk.wals_half(row_indptr, row_pos, col_of, target, Krow, Kcol, X, Y, xb, yb, 3.5, 0.1, 0.2, row_bias, col_bias,
                 per_rating)
    Xr, xbr = X0.copy(), xb0.copy()
    _reference_half(row_indptr, row_pos, col_of, target, Krow, Kcol, Xr, Y, xbr, yb, 3.5, 0.1, 0.2, row_bias,
                    col_bias, per_rating)
    np.testing.assert_array_equal(X, Xr)
    np.testing.assert_array_equal(xb, xbr)
    assert not np.array_equal(X, X0)
