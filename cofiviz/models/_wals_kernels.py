"""Weighted alternating least squares: LLORMA's kernel-weighted local SVDs (Lee et al., eq 2) and RegSVD's ALS solver.

Nothing here knows about models, pandas or files: every kernel takes flat NumPy arrays. There are ``q`` local
models ``t`` with factors ``U_t (m × r)``, ``V_t (n × r)`` and user and item offsets, stored by model first
(``U[t, u]``, ``Ku[t, u]``); RegSVD is the case ``q = 1`` with unit weights.

:func:`wals_half` solves, for every local model and every row in parallel, the kernel-weighted ridge regression
of one side of ``M ≈ offset + U Vᵀ (+ biases)`` with the other side fixed; :func:`weighted_sq_loss` evaluates
eq (2) per local model.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

__all__ = ["wals_half", "weighted_sq_loss", "tiny_problem", "warmup"]


@njit(cache=True, nogil=True)
def _cholesky_solve(A, b, d):
    """Solve ``A x = b`` in place (``A`` symmetric positive definite, ``d × d``); returns ``x`` in ``b``."""
    for j in range(d):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if s <= 1e-300:
            s = 1e-300
        A[j, j] = math.sqrt(s)
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


#: ratings added to a row's normal equations together: each entry of ``A`` is loaded and stored once for them
_GROUP = 4


@njit(cache=True, nogil=True)
def _add_group(A, b, ky, yy, zz, d):
    """Add :data:`_GROUP` ratings to the lower triangle of ``A`` and to ``b``: row ``g`` of ``ky`` is ``k_g y_g``, of
    ``yy`` ``y_g``, ``zz[g]`` the target. Each entry receives its terms one by one in the ratings' order, the
    products formed as ``(k y_j) y_l`` — the single-rating loop's arithmetic to the last bit, with one load and store
    of the entry for the group; the loop over ``l`` runs on whole SIMD registers."""
    for j in range(d):
        k0, k1, k2, k3 = ky[0, j], ky[1, j], ky[2, j], ky[3, j]
        b[j] = (((b[j] + k0 * zz[0]) + k1 * zz[1]) + k2 * zz[2]) + k3 * zz[3]
        for l in range(j + 1):
            A[j, l] = (((A[j, l] + k0 * yy[0, l]) + k1 * yy[1, l]) + k2 * yy[2, l]) + k3 * yy[3, l]


@njit(cache=True, parallel=True)
def wals_half(row_indptr, row_pos, col_of, target, Krow, Kcol, X, Y, xb, yb, offset, lam, lam_b,
              row_bias, col_bias, per_rating=False):
    """One half-sweep of weighted ALS for every local model and row in parallel (LLORMA eq 2, RegSVD).

    For model ``t`` and row ``a`` (a user when solving ``U``, an item when solving ``V``) with the
    other side fixed, minimise over ``x = X[t, a]`` (and the row offset ``xb[t, a]`` when
    ``row_bias``)

        Σ_{p ∈ a} k_p (target_p − offset − yb[t, c_p] − xb[t, a] − x·Y[t, c_p])² + n_a (λ‖x‖² + λ_b xb²)

    with ``k_p = Krow[t, a] · Kcol[t, c_p]``; ``yb`` enters only when ``col_bias``. ``n_a`` is 1, or with
    ``per_rating`` the row's number of entries (the weighted-λ rule of ALS-WR, Zhou et al. 2008: each rating
    brings its own penalty, as in an SGD epoch). A row without weight gets ``x = 0`` (the ridge solution).
    """
    q = X.shape[0]
    nrows = X.shape[1]
    r = X.shape[2]
    d = r + (1 if row_bias else 0)
    total = q * nrows
    block = 32
    n_blocks = (total + block - 1) // block
    for blk in prange(n_blocks):  # buffers allocated once per block of rows, not once per row
        A = np.empty((d, d))
        b = np.empty(d)
        yy = np.empty((_GROUP, d))     # the group's rows y, their k·y and targets (see _add_group)
        ky = np.empty((_GROUP, d))
        zz = np.empty(_GROUP)
        for k in range(blk * block, min(total, (blk + 1) * block)):
            t = k // nrows
            a = k - t * nrows
            A[:, :] = 0.0
            b[:] = 0.0
            kr = Krow[t, a]
            if kr > 0.0:
                g = 0
                for e in range(row_indptr[a], row_indptr[a + 1]):
                    p = row_pos[e]
                    c = col_of[p]
                    kp = kr * Kcol[t, c]
                    if kp == 0.0:
                        continue
                    z = target[p] - offset
                    if col_bias:
                        z -= yb[t, c]
                    for j in range(r):
                        yy[g, j] = Y[t, c, j]
                    if row_bias:
                        yy[g, r] = 1.0
                    for j in range(d):
                        ky[g, j] = kp * yy[g, j]
                    zz[g] = z
                    g += 1
                    if g == _GROUP:
                        _add_group(A, b, ky, yy, zz, d)
                        g = 0
                for h in range(g):           # the last ratings, fewer than a group, one at a time
                    z = zz[h]
                    for j in range(d):
                        kyj = ky[h, j]
                        b[j] += kyj * z
                        for l in range(j + 1):
                            A[j, l] += kyj * yy[h, l]
            scale = float(row_indptr[a + 1] - row_indptr[a]) if per_rating else 1.0
            for j in range(r):
                A[j, j] += lam * scale
            if row_bias:
                A[r, r] += lam_b * scale
            _cholesky_solve(A, b, d)
            for j in range(r):
                X[t, a, j] = b[j]
            if row_bias:
                xb[t, a] = b[r]


@njit(cache=True, parallel=True)
def weighted_sq_loss(users, items, ratings, Ku, Ki, U, V, bu, bi, offset, out_sse, out_weight):
    """Per local model: ``Σ_p k_p (M_p − f_t(p))²`` and ``Σ_p k_p`` (eq 2 without its regulariser)."""
    q = U.shape[0]
    r = U.shape[2]
    n = users.shape[0]
    for t in prange(q):
        s = 0.0
        sw = 0.0
        for p in range(n):
            u = users[p]
            i = items[p]
            k = Ku[t, u] * Ki[t, i]
            if k == 0.0:
                continue
            f = offset + bu[t, u] + bi[t, i]
            for c in range(r):
                f += U[t, u, c] * V[t, i, c]
            e = ratings[p] - f
            s += k * e * e
            sw += k
        out_sse[t] = s
        out_weight[t] = sw


def tiny_problem() -> dict:
    """Two users, three items, five ratings and two local models of rank 2 (by model first): what the warm-ups
    of this module and of ``_local_kernels`` compile their kernels on."""
    q, r = 2, 2
    rng = np.random.default_rng(0)
    return {"users": np.array([0, 0, 0, 1, 1], dtype=np.int32), "items": np.array([0, 1, 2, 0, 2], dtype=np.int32),
            "ratings": np.array([5.0, 3.0, 1.0, 4.0, 2.0]), "indptr": np.array([0, 3, 5], dtype=np.int64),
            "iptr": np.array([0, 2, 3, 5], dtype=np.int64),     # the item-major index of the entries above
            "ipos": np.array([0, 3, 1, 2, 4], dtype=np.int64), "q": q,
            "U": rng.normal(size=(q, 2, r)), "V": rng.normal(size=(q, 3, r)), "B": np.zeros((q, 3)),
            "bu": np.zeros((q, 2)), "Ku": np.ones((q, 2)), "Ki": np.ones((q, 3))}


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel of this module on :func:`tiny_problem`."""
    t = tiny_problem()
    users, items, ratings, U, V, B, bu, Ku, Ki = (t[k] for k in ("users", "items", "ratings", "U", "V", "B", "bu",
                                                                  "Ku", "Ki"))
    pos = np.arange(5, dtype=np.int64)
    wals_half(t["indptr"], pos, items, ratings, Ku, Ki, U, V, bu, B, 3.0, 0.1, 0.1, True, True)
    wals_half(t["iptr"], t["ipos"], users, ratings, Ki, Ku, V, U, B, bu, 3.0, 0.1, 0.1, False, False)
    wals_half(t["indptr"], pos, items, ratings, Ku, Ki, U, V, bu, B, 3.0, 0.1, 0.1, True, True, True)
    sse, sw = np.empty(t["q"]), np.empty(t["q"])
    weighted_sq_loss(users, items, ratings, Ku, Ki, U, V, bu, B, 3.0, sse, sw)
