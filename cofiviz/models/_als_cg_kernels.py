"""numba kernels of RegSVD's alternating least squares by conjugate gradient: each row's ridge regression solved by a
few preconditioned conjugate-gradient steps from the row's current value, without its normal equations.

Exact ALS (``_wals_kernels.wals_half``) forms each row's ``d × d`` normal equations, ``d²/2`` multiply-adds per rating,
and solves them by Cholesky. Here a row of ``X`` (a user, or an item) with the other side ``Y`` fixed minimises

    Σ_q (e_q − δ·ỹ_q)² + s λ ‖x + δ_x‖² + s λ_b (x_b + δ_b)²                                              (1)

over the change ``δ = (δ_x, δ_b)`` of its factors ``x`` and offset ``x_b``, where ``e_q`` are the residuals
``M − μ − b_u − b_i − P_u·Q_i`` of the row's ratings at the current factors, ``ỹ_q = (Y_{c_q}, 1)`` the other side's
row of rating ``q`` with a 1 for the offset, and ``s`` the row's number of ratings (``per_rating``, the weighted-λ
rule of ALS-WR) or 1. Its normal equations are ``A δ = g`` with ``A = Σ_q ỹ_q ỹ_qᵀ + s·diag(λ, …, λ, λ_b)`` and
``g = Σ_q e_q ỹ_q − s (λ x, λ_b x_b)``; each conjugate-gradient step needs one product ``A p``, which is two passes over
the row's ratings (``v_q = ỹ_q·p``, then ``Σ_q v_q ỹ_q``): ``2d`` multiply-adds per rating and step. The steps are
preconditioned by the diagonal of ``A`` (Jacobi), and start from ``δ = 0``, the factors of the previous sweep: this is
the warm-started conjugate-gradient ALS of Takács, Pilászy & Tikk (RecSys 2011), which the implicit library uses for
implicit feedback, here for explicit ratings. A row with no ratings is set to 0, the ridge solution exact ALS gives.

The residuals are kept between the halves: a half-sweep reads each rating's residual and leaves the residual after
its own update (``e_q − δ·ỹ_q``, accumulated from the steps' ``v``), which is the next half's once reordered (each
half reads its ratings in its own rows' order, so that every pass over them runs straight through memory). Every sum runs in a
written order (the dot products by :func:`cofiviz.util.lanes.dot8`, the others elementwise in order of the ratings), so a
result is the same on every CPU, in the precision of the arrays (float64 or float32).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..util.lanes import dot8

__all__ = ["cg_half", "residuals", "ROW_BLOCK", "warmup"]

#: rows solved by one task of the parallel loop (its buffers are allocated once for them)
ROW_BLOCK = 32


@njit(cache=True, parallel=True)
def cg_half(row_indptr, col_of, Y, X, xb, residual, lam, lam_b, row_bias, per_rating, steps):
    """One half-sweep: every row of ``X`` (and its offset ``xb`` when ``row_bias``) updated by ``steps``
    preconditioned conjugate-gradient steps on (1) of the module docstring, in parallel over rows.

    Row ``a``'s ratings are entries ``row_indptr[a] … row_indptr[a+1]−1`` of ``col_of`` (the other side's index) and
    ``residual`` (each rating's ``M − prediction``, updated in place), both in the rows' order: for the item half, the
    entries sorted by item. The first pass copies the row's ``Y`` rows into a buffer, which the steps then read in
    order. ``Y`` is the other
    side's factors; its offsets enter only through the residuals. ``lam``, ``lam_b``: the penalties of the factors
    and of the offset, times the row's number of ratings when ``per_rating``. All arrays and scalars share one float
    type.
    """
    nrows, r = X.shape
    d = r + 1            # the offset's coordinate is index r; unused without row_bias
    dt = X.dtype
    zero = dt.type(0.0)
    one = dt.type(1.0)
    n_blocks = (nrows + ROW_BLOCK - 1) // ROW_BLOCK
    for blk in prange(n_blocks):
        g = np.empty(d, dtype=dt)      # residual of the normal equations, A δ = g
        z = np.empty(d, dtype=dt)      # preconditioned residual
        p = np.empty(d, dtype=dt)      # search direction
        Ap = np.empty(d, dtype=dt)
        delta = np.empty(d, dtype=dt)
        minv = np.empty(d, dtype=dt)   # 1 / diag(A)
        reg = np.empty(d, dtype=dt)
        cap = 256
        v = np.empty(cap, dtype=dt)    # ỹ_q·p of the current step
        dv = np.empty(cap, dtype=dt)   # Σ over steps of α ỹ_q·p: the change of each prediction
        G = np.empty((cap, r), dtype=dt)   # the row's Y rows, in the order of its ratings
        for a in range(blk * ROW_BLOCK, min(nrows, (blk + 1) * ROW_BLOCK)):
            lo = row_indptr[a]
            n = row_indptr[a + 1] - lo
            if n == 0:
                for j in range(r):
                    X[a, j] = zero
                if row_bias:
                    xb[a] = zero
                continue
            if n > cap:
                cap = n
                v = np.empty(cap, dtype=dt)
                dv = np.empty(cap, dtype=dt)
                G = np.empty((cap, r), dtype=dt)
            s = dt.type(n) if per_rating else one
            x = X[a]
            for j in range(r):
                reg[j] = s * lam
                g[j] = -(reg[j] * x[j])
                minv[j] = reg[j]
            reg[r] = s * lam_b
            if row_bias:
                g[r] = -(reg[r] * xb[a])
                minv[r] = reg[r] + dt.type(n)
            else:
                g[r] = zero
                minv[r] = one
            # g += Σ_q e_q ỹ_q and diag(A) += Σ_q ỹ_q², in order of the ratings
            gb = g[r]
            for q in range(n):
                yc = Y[col_of[lo + q]]
                gq = G[q]
                eq = residual[lo + q]
                gb += eq
                for j in range(r):
                    y = yc[j]
                    gq[j] = y
                    g[j] += eq * y
                    minv[j] += y * y
            if row_bias:
                g[r] = gb
            for j in range(d):
                minv[j] = one / minv[j]
                z[j] = minv[j] * g[j]
                p[j] = z[j]
                delta[j] = zero
            if not row_bias:
                z[r] = zero
                p[r] = zero
            rz = dot8(g, z, d)
            for q in range(n):
                dv[q] = zero
            for step in range(steps):
                pb = p[r]
                for j in range(d):
                    Ap[j] = reg[j] * p[j]
                ab = Ap[r]
                for q in range(n):
                    yc = G[q]
                    vq = dot8(yc, p, r) + pb
                    v[q] = vq
                    ab += vq
                    for j in range(r):
                        Ap[j] += vq * yc[j]
                Ap[r] = ab if row_bias else zero
                pAp = dot8(p, Ap, d)
                if not pAp > zero:   # converged (or nothing to move)
                    break
                alpha = rz / pAp
                for q in range(n):
                    dv[q] += alpha * v[q]
                for j in range(d):
                    delta[j] += alpha * p[j]
                if step + 1 == steps:
                    break
                for j in range(d):
                    g[j] -= alpha * Ap[j]
                    z[j] = minv[j] * g[j]
                rz_next = dot8(g, z, d)
                if not rz > zero:
                    break
                beta = rz_next / rz
                rz = rz_next
                for j in range(d):
                    p[j] = z[j] + beta * p[j]
            for j in range(r):
                x[j] += delta[j]
            if row_bias:
                xb[a] += delta[r]
            for q in range(n):
                residual[lo + q] -= dv[q]


@njit(cache=True, parallel=True)
def residuals(users, items, ratings, P, Q, bu, bi, mu, out):
    """``out = ratings − (μ + b_u + b_i + P_u·Q_i)`` for each entry, the dot product by :func:`cofiviz.util.lanes.dot8`, in the
    arrays' float type; returns the sum of the squared residuals in float64."""
    n = users.shape[0]
    n_blocks = (n + 1023) // 1024
    parts = np.zeros(n_blocks)
    for blk in prange(n_blocks):
        s = 0.0
        for k in range(blk * 1024, min(n, (blk + 1) * 1024)):
            u = users[k]
            i = items[k]
            e = ratings[k] - (mu + bu[u] + bi[i] + dot8(P[u], Q[i], P.shape[1]))
            out[k] = e
            e64 = np.float64(e)
            s += e64 * e64
        parts[blk] = s
    total = 0.0
    for blk in range(n_blocks):
        total += parts[blk]
    return total


def warmup() -> None:
    """Compile (or load from numba's cache) both kernels in float64 and float32 on a tiny problem."""
    users = np.array([0, 0, 0, 1, 1], dtype=np.int32)
    items = np.array([0, 1, 2, 0, 2], dtype=np.int32)
    indptr = np.array([0, 3, 5], dtype=np.int64)
    iptr = np.array([0, 2, 3, 5], dtype=np.int64)
    ipos = np.array([0, 3, 1, 2, 4], dtype=np.int64)
    rng = np.random.default_rng(0)
    for dt in (np.float64, np.float32):
        f = dt
        ratings = np.array([5.0, 3.0, 1.0, 4.0, 2.0], dtype=dt)
        P, Q = rng.normal(size=(2, 2)).astype(dt), rng.normal(size=(3, 2)).astype(dt)
        bu, bi = np.zeros(2, dtype=dt), np.zeros(3, dtype=dt)
        res = np.empty(5, dtype=dt)
        residuals(users, items, ratings, P, Q, bu, bi, f(3.0), res)
        cg_half(indptr, items, Q, P, bu, res, f(0.1), f(0.1), True, True, 2)
        ires = res[ipos]
        cg_half(iptr, users[ipos], P, Q, bi, ires, f(0.1), f(0.1), True, True, 2)
