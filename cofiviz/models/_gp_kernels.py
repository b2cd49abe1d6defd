"""Numba kernels of the Gaussian-process models: Cholesky factor, triangular solves and the matrix products.

They replace LAPACK and BLAS on purpose: OpenBLAS's Cholesky and products round differently with its thread count,
and a seeded fit must not depend on it (``tests/test_blas_threads.py``). Every output entry here is summed in one
fixed order; the products run in parallel over the rows of their result and the factor works on blocks of rows,
neither of which changes the order of any sum.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

__all__ = ["cholesky", "cho_solve", "matmul", "sq_dists", "sparse_rows_times", "sparse_outer_sum",
           "em_covariance", "feature_block", "feature_pair_scores", "dense_pair_scores"]


#: rows of the Cholesky factor computed as one block: each earlier row is read once per block
_ROWS = 32


@njit(cache=True)
def _cholesky_rows(A, L, i0, i1):
    """Rows ``i0:i1`` of the Cholesky factor, their columns below ``i0`` first (the rows above are done): four
    rows at a time, each entry's sum over ``k`` in ascending order, so that the factor is the one the
    column-by-column algorithm gives, to the last bit."""
    for j in range(i0):
        ljj = L[j, j]
        i = i0
        while i + 3 < i1:
            t0, t1, t2, t3 = A[i, j], A[i + 1, j], A[i + 2, j], A[i + 3, j]
            for k in range(j):
                ljk = L[j, k]
                t0 -= L[i, k] * ljk
                t1 -= L[i + 1, k] * ljk
                t2 -= L[i + 2, k] * ljk
                t3 -= L[i + 3, k] * ljk
            L[i, j] = t0 / ljj
            L[i + 1, j] = t1 / ljj
            L[i + 2, j] = t2 / ljj
            L[i + 3, j] = t3 / ljj
            i += 4
        while i < i1:
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / ljj
            i += 1


@njit(cache=True)
def cholesky(A):
    """Lower ``L`` with ``L Lᵀ = A`` (symmetric ``A``, its lower triangle read) and whether ``A`` was positive
    definite; on a non-positive pivot the factor is left incomplete and the flag is False.

    Every entry is ``(A_ij − Σ_{k<j} L_ik L_jk) / L_jj`` (``√(A_jj − Σ_{k<j} L_jk²)`` on the diagonal) with the sum in
    ascending ``k``. The rows are computed a block at a time (:data:`_ROWS`): each earlier row is read once per
    block for four rows at once, whose four independent sums keep the processor busy where one sum would wait on
    each addition; no sum changes its order, so the factor is the column-by-column one to the last bit.
    """
    n = A.shape[0]
    L = np.zeros((n, n))
    for i0 in range(0, n, _ROWS):
        i1 = min(n, i0 + _ROWS)
        _cholesky_rows(A, L, i0, i1)
        for j in range(i0, i1):           # the block's own triangle, column by column
            s = A[j, j]
            for k in range(j):
                s -= L[j, k] * L[j, k]
            if not (s > 0.0) or not np.isfinite(s):
                return L, False
            d = np.sqrt(s)
            L[j, j] = d
            for i in range(j + 1, i1):
                t = A[i, j]
                for k in range(j):
                    t -= L[i, k] * L[j, k]
                L[i, j] = t / d
    return L, True


#: columns of the right-hand side that :func:`cho_solve` solves as one block (in parallel above this many)
_SOLVE_COLS = 256


@njit(cache=True)
def _cho_solve_block(L, B, c0, c1, X):
    """Columns ``c0:c1`` of ``X = (L Lᵀ)⁻¹ B``: forward then back substitution in one ``n × (c1 − c0)`` buffer,
    whose rows hold ``Y = L⁻¹ B`` and then, from the last up, ``X`` (row ``i`` of ``X`` needs ``Y``'s row ``i`` and
    ``X``'s rows below it only)."""
    n = L.shape[0]
    w = c1 - c0
    Z = np.empty((n, w))
    for i in range(n):
        for c in range(w):
            Z[i, c] = B[i, c0 + c]
        for k in range(i):
            lik = L[i, k]
            for c in range(w):
                Z[i, c] -= lik * Z[k, c]
        for c in range(w):
            Z[i, c] /= L[i, i]
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            lki = L[k, i]
            for c in range(w):
                Z[i, c] -= lki * Z[k, c]
        for c in range(w):
            Z[i, c] /= L[i, i]
    for i in range(n):
        for c in range(w):
            X[i, c0 + c] = Z[i, c]


@njit(cache=True)
def _cho_solve_serial(L, B):
    X = np.empty(B.shape)
    _cho_solve_block(L, B, 0, B.shape[1], X)
    return X


@njit(cache=True, parallel=True)
def _cho_solve_parallel(L, B):
    n, m = B.shape
    X = np.empty((n, m))
    for b in prange((m + _SOLVE_COLS - 1) // _SOLVE_COLS):
        _cho_solve_block(L, B, b * _SOLVE_COLS, min(m, (b + 1) * _SOLVE_COLS), X)
    return X


def cho_solve(L, B):
    """``X = (L Lᵀ)⁻¹ B`` for a 2-d ``B``: forward then back substitution, row by row.

    Each entry is ``Y_ic = (B_ic − Σ_{k<i} L_ik Y_kc) / L_ii`` with the sum in ascending ``k``, then
    ``X_ic = (Y_ic − Σ_{k>i} L_ki X_kc) / L_ii`` with the sum in ascending ``k``. The columns are independent:
    they are solved :data:`_SOLVE_COLS` at a time (each block's rows stay in the cache while the rows below are
    swept), the blocks in parallel when there are several, which changes no sum's order.
    """
    if B.shape[1] <= _SOLVE_COLS:
        return _cho_solve_serial(L, B)
    return _cho_solve_parallel(L, B)


#: the product's blocks: ``_PANEL`` consecutive ``k`` (rows of ``B``) at a time, ``_TILE`` columns of the result
_PANEL, _TILE = 128, 512


@njit(cache=True, parallel=True)
def matmul(A, B):
    """``A @ B``, each entry ``C_ic = Σ_k A_ik B_kc`` summed in ascending ``k`` from 0, a term with ``A_ik = 0``
    skipped.

    Blocked for the cache: a panel of :data:`_PANEL` rows of ``B`` is applied to every row of the result before
    the next panel, one :data:`_TILE`-column tile at a time, four rows of ``A`` at once (each element of ``B``
    read once for the four), the rows in parallel. Every entry still receives its terms one by one in ascending
    ``k``: the product is the plain row-by-row loop's to the last bit, at a cost that grows with the flops
    (the plain loop reads all of ``B`` once per row, from memory once ``B`` outgrows the cache).
    """
    n, p = A.shape
    m = B.shape[1]
    C = np.zeros((n, m))
    for k0 in range(0, p, _PANEL):
        k1 = min(p, k0 + _PANEL)
        for ib in prange((n + 3) // 4):
            i = 4 * ib
            for c0 in range(0, m, _TILE):
                c1 = min(m, c0 + _TILE)
                if i + 3 < n:
                    for k in range(k0, k1):
                        a0, a1, a2, a3 = A[i, k], A[i + 1, k], A[i + 2, k], A[i + 3, k]
                        if a0 != 0.0 and a1 != 0.0 and a2 != 0.0 and a3 != 0.0:
                            for c in range(c0, c1):
                                b = B[k, c]
                                C[i, c] += a0 * b
                                C[i + 1, c] += a1 * b
                                C[i + 2, c] += a2 * b
                                C[i + 3, c] += a3 * b
                        else:
                            for r in range(i, i + 4):
                                a = A[r, k]
                                if a != 0.0:
                                    for c in range(c0, c1):
                                        C[r, c] += a * B[k, c]
                else:
                    for r in range(i, n):
                        for k in range(k0, k1):
                            a = A[r, k]
                            if a != 0.0:
                                for c in range(c0, c1):
                                    C[r, c] += a * B[k, c]
    return C


@njit(cache=True, parallel=True)
def sq_dists(X):
    """Squared Euclidean distances between the rows of ``X``."""
    n, d = X.shape
    D = np.empty((n, n))
    for i in prange(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                t = X[i, k] - X[j, k]
                s += t * t
            D[i, j] = s
    return D


@njit(cache=True, parallel=True)
def sparse_rows_times(indptr, items, values, K, base):
    """``F[u] = base[u] + Σ_{i ∈ I_u} values_ui K[i]``: each user's sparse row of coefficients times ``K``."""
    n_users = len(indptr) - 1
    F = np.empty((n_users, K.shape[1]))
    for u in prange(n_users):
        for c in range(K.shape[1]):
            F[u, c] = base[u, c]
        for p in range(indptr[u], indptr[u + 1]):
            v = values[p]
            i = items[p]
            for c in range(K.shape[1]):
                F[u, c] += v * K[i, c]
    return F


@njit(cache=True, nogil=True)
def _feature_entry(X, i, j, divisor, signal, diag, off, one_hot):
    """One entry of a feature kernel: ``diag`` for ``i = j``; else ``off`` for one-hot ids, or
    ``signal · exp((−½ ‖x_i − x_j‖²) / divisor)`` summed and rounded as :func:`sq_dists` and ``elementary.exp``."""
    if i == j:
        return diag
    if one_hot:
        return off
    s = 0.0
    for k in range(X.shape[1]):
        t = X[i, k] - X[j, k]
        s += t * t
    return signal * math.exp((-0.5 * s) / divisor)


@njit(cache=True, parallel=True)
def feature_block(X, rows, cols, divisor, signal, diag, off, one_hot):
    """The block ``K[rows][:, cols]`` of a feature kernel (:func:`_feature_entry`), made entry by entry."""
    out = np.empty((len(rows), len(cols)))
    for a in prange(len(rows)):
        for b in range(len(cols)):
            out[a, b] = _feature_entry(X, rows[a], cols[b], divisor, signal, diag, off, one_hot)
    return out


@njit(cache=True, parallel=True)
def feature_pair_scores(indptr, rated, coef, offsets, mu, users, cols, X, divisor, signal, diag, off, one_hot):
    """Posterior means of (user, item) pairs, ``offsets[u] + μ[c] + Σ_{p ∈ I_u} coef_p K[rated_p, c]``, with ``K``
    a feature kernel whose entries are made as they are read: no items × items matrix, no users × items one.
    Each sum runs in the order of :func:`sparse_rows_times`, so a pair's value is that of its entry there."""
    out = np.empty(len(users))
    for t in prange(len(users)):
        u, c = users[t], cols[t]
        s = offsets[u] + mu[c]
        for p in range(indptr[u], indptr[u + 1]):
            s += coef[p] * _feature_entry(X, rated[p], c, divisor, signal, diag, off, one_hot)
        out[t] = s
    return out


@njit(cache=True, parallel=True)
def dense_pair_scores(indptr, rated, coef, offsets, mu, users, cols, K):
    """:func:`feature_pair_scores` with ``K`` a matrix (the collaborative models' learned covariance)."""
    out = np.empty(len(users))
    for t in prange(len(users)):
        u, c = users[t], cols[t]
        s = offsets[u] + mu[c]
        for p in range(indptr[u], indptr[u + 1]):
            s += coef[p] * K[rated[p], c]
        out[t] = s
    return out


@njit(cache=True)
def sparse_outer_sum(indptr, items, values, n_items):
    """``Q = Σ_u s_u s_uᵀ`` with ``s_u`` the user's coefficients scattered to its items."""
    Q = np.zeros((n_items, n_items))
    for u in range(len(indptr) - 1):
        for p in range(indptr[u], indptr[u + 1]):
            vp, ip = values[p], items[p]
            for q in range(indptr[u], indptr[u + 1]):
                Q[ip, items[q]] += vp * values[q]
    return Q


#: the side of the square tiles in which :func:`em_covariance` makes its result symmetric
_SYM_TILE = 64


@njit(cache=True, parallel=True)
def em_covariance(K, K0, X, mu, d, Ks, n, tau, pi, denom):
    """The M-step's new covariance, symmetrised, in two passes over memory instead of one per NumPy operation.

    Each entry is what the NumPy expression ::

        S = n * K + n * np.outer(d, d) + np.outer(d, Ks) + np.outer(Ks, d) + X
        C = (tau * K0 + pi * np.outer(mu, mu) + S) / denom
        0.5 * (C + C.T)

    gives, to the last bit: the same operations in the same order per entry. The symmetrisation pairs the
    entries ``(i, j)`` and ``(j, i)`` tile by tile (:data:`_SYM_TILE`) instead of reading the transpose with a
    stride of a whole row per entry.
    """
    m = K.shape[0]
    C = np.empty((m, m))
    for i in prange(m):
        di, ki, mi = d[i], Ks[i], mu[i]
        for j in range(m):
            s = n * K[i, j] + n * (di * d[j])
            s = s + di * Ks[j]
            s = s + ki * d[j]
            s = s + X[i, j]
            C[i, j] = (tau * K0[i, j] + pi * (mi * mu[j]) + s) / denom
    nt = (m + _SYM_TILE - 1) // _SYM_TILE
    for bi in prange(nt):
        i0, i1 = bi * _SYM_TILE, min(m, (bi + 1) * _SYM_TILE)
        for bj in range(bi, nt):
            j0, j1 = bj * _SYM_TILE, min(m, (bj + 1) * _SYM_TILE)
            for i in range(i0, i1):
                for j in range(max(j0, i), j1):
                    v = 0.5 * (C[i, j] + C[j, i])
                    C[i, j] = v
                    C[j, i] = v
    return C
