"""Numba kernels of fast MMMF: the all-threshold smooth-hinge objective and its gradient.

For user ``i`` with thresholds ``θ_i1 < … < θ_i,R−1`` and an observed rating of level ``y`` (1 … R) on item ``j``,
with ``x = U_i · V_j + o_j`` (``o`` a fixed item offset, zeros without one), the loss is
``Σ_{r=1}^{R−1} h(T_r (θ_ir − x))`` with ``T_r = +1`` for ``r ≥ y`` and ``−1`` for
``r < y``, and ``h`` the smooth hinge. Users are independent given ``V``, so the user pass runs in parallel
(one user per iteration of ``prange``); the item gradient sums per-rating derivatives in a second pass over the
item-major index, also in parallel, so no two threads write the same row.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def smooth_hinge(z):
    """h(z) = 1/2 − z (z ≤ 0), (1 − z)²/2 (0 < z < 1), 0 (z ≥ 1)."""
    if z >= 1.0:
        return 0.0
    if z <= 0.0:
        return 0.5 - z
    return 0.5 * (1.0 - z) * (1.0 - z)


@njit(cache=True, inline="always")
def smooth_hinge_slope(z):
    """h'(z) = −1 (z ≤ 0), z − 1 (0 < z < 1), 0 (z ≥ 1)."""
    if z >= 1.0:
        return 0.0
    if z <= 0.0:
        return -1.0
    return z - 1.0


@njit(parallel=True, cache=True)
def objective(U, V, offset, theta, indptr, items, levels, reg, active, gU, gTheta, dx):
    """The loss summed over the ratings of the users marked ``active`` plus ``reg/2 ‖U_active‖²``; fills
    ``gU`` and ``gTheta`` for those users (``reg U_i`` included) and ``dx``, the loss's derivative with
    respect to each rating's ``x``. Returns the loss and the user part of the penalty."""
    n_users = indptr.shape[0] - 1
    k = U.shape[1]
    n_thr = theta.shape[1]
    per_user = np.zeros(n_users)
    for i in prange(n_users):
        for a in range(k):
            gU[i, a] = 0.0
        for r in range(n_thr):
            gTheta[i, r] = 0.0
        if not active[i]:
            continue
        total = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = items[p]
            x = 0.0
            for a in range(k):
                x += U[i, a] * V[j, a]
            x += offset[j]
            y = levels[p]
            d = 0.0
            for r in range(n_thr):
                t = 1.0 if r + 1 >= y else -1.0
                z = t * (theta[i, r] - x)
                total += smooth_hinge(z)
                s = smooth_hinge_slope(z) * t
                gTheta[i, r] += s
                d -= s
            dx[p] = d
            for a in range(k):
                gU[i, a] += d * V[j, a]
        sq = 0.0
        for a in range(k):
            gU[i, a] += reg * U[i, a]
            sq += U[i, a] * U[i, a]
        per_user[i] = total + 0.5 * reg * sq
    return per_user.sum()


@njit(parallel=True, cache=True)
def item_gradient(U, V, users, item_indptr, positions, dx, reg, gV):
    """``gV_j = Σ_i dx_ij U_i + reg V_j``; returns ``reg/2 ‖V‖²``."""
    n_items = item_indptr.shape[0] - 1
    k = V.shape[1]
    pen = np.zeros(n_items)
    for j in prange(n_items):
        for a in range(k):
            gV[j, a] = reg * V[j, a]
        for q in range(item_indptr[j], item_indptr[j + 1]):
            p = positions[q]
            i = users[p]
            d = dx[p]
            for a in range(k):
                gV[j, a] += d * U[i, a]
        sq = 0.0
        for a in range(k):
            sq += V[j, a] * V[j, a]
        pen[j] = 0.5 * reg * sq
    return pen.sum()


@njit(parallel=True, cache=True)
def dots(U, V, offset, users, items, out):
    """``out[p] = U[users[p]] · V[items[p]] + offset[items[p]]``."""
    k = U.shape[1]
    for p in prange(users.shape[0]):
        acc = 0.0
        for a in range(k):
            acc += U[users[p], a] * V[items[p], a]
        out[p] = acc + offset[items[p]]
