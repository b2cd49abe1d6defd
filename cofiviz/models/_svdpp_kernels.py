"""numba kernels of SVD++ (Koren, "Factorization meets the neighborhood", KDD 2008, §2.3).

Nothing here knows about models or tables: every kernel takes flat NumPy arrays. The training table is
stored by user: user ``u``'s ratings are the positions ``indptr[u]:indptr[u + 1]`` of ``items`` and
``ratings``, and those items are also ``N(u)``, the items whose implicit feedback enters the user's
vector. The factors are ``P`` (users × r), ``Q`` and ``Y`` (items × r), the offsets ``bu``, ``bi``.

Prediction (eq 3)::

    r̂_ui = μ + b_u + b_i + q_iᵀ (p_u + z_u),    z_u = |N(u)|^{-1/2} Σ_{j ∈ N(u)} y_j

:func:`implicit_sums` computes every ``z_u``, :func:`predict` the predictions of (user, item) pairs,
:func:`sgd_epoch` one epoch of stochastic gradient descent on the regularised squared error (see its
documentation for the per-user form of the ``y`` update).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

__all__ = ["sgd_epoch", "block_order", "implicit_sums", "predict", "warmup"]


@njit(cache=True)
def sgd_epoch(indptr, items, ratings, user_order, within, P, Q, Y, bu, bi, mu, lr, reg, reg_bias):
    """One SGD epoch of SVD++ (eq 3 and the updates of §2.3), user block by user block; returns the SSE.

    Minimises ``Σ_{(u,i)} [(r_ui − r̂_ui)² + λ_b (b_u² + b_i²) + λ (‖p_u‖² + ‖q_i‖² + Σ_{j∈N(u)} ‖y_j‖²)]``
    (the penalties inside the sum over ratings, as in the paper) with ``λ = reg``, ``λ_b = reg_bias`` and
    step ``γ = lr``. Users are visited in ``user_order`` (a permutation drawn by the caller's seeded
    generator; users absent from it are left alone) and user ``u``'s ratings in the order
    ``within[indptr[u]:indptr[u + 1]]``, which lists that block's positions. For each rating, with
    ``e = r_ui − r̂_ui``::

        b_u += γ (e − λ_b b_u)            b_i += γ (e − λ_b b_i)
        q_i += γ (e (p_u + z_u) − λ q_i)  p_u += γ (e q_i − λ p_u)

    (``q_i`` and ``p_u`` updated together, each from the other's value before the step). The per-rating
    update of every ``y_j``, ``j ∈ N(u)``, ``y_j += γ (e |N(u)|^{-1/2} q_i − λ y_j)``, is taken in the
    common practical form: ``z_u`` is computed once at the start of the block and held fixed, the data
    terms ``e |N(u)|^{-1/2} q_i`` are summed over the block and added once at its end, and the block's
    ``|N(u)|`` penalty steps are composed into one factor, ``y_j ← (1 − γλ)^{|N(u)|} y_j + γ |N(u)|^{-1/2}
    Σ_i e_ui q_i``. To first order in ``γ`` this is the step ``−γ ∂J_u/∂y_j / 2`` on the user's block
    objective ``J_u`` (the terms above of ``u``'s ratings), as each per-rating step of the other
    parameters is; it costs O(|N(u)| r) per user instead of O(|N(u)|² r).

    Returns the sum of squared errors seen during the epoch (each before its rating's update).
    """
    r = P.shape[1]
    z = np.empty(r)
    g = np.empty(r)
    sse = 0.0
    for k in range(user_order.shape[0]):
        u = user_order[k]
        a0 = indptr[u]
        a1 = indptr[u + 1]
        n = a1 - a0
        if n == 0:
            continue
        s = 1.0 / math.sqrt(n)
        for c in range(r):
            z[c] = 0.0
            g[c] = 0.0
        for a in range(a0, a1):
            j = items[a]
            for c in range(r):
                z[c] += Y[j, c]
        for c in range(r):
            z[c] *= s
        for a in range(a0, a1):
            p = within[a]
            i = items[p]
            f = mu + bu[u] + bi[i]
            for c in range(r):
                f += Q[i, c] * (P[u, c] + z[c])
            e = ratings[p] - f
            sse += e * e
            bu[u] += lr * (e - reg_bias * bu[u])
            bi[i] += lr * (e - reg_bias * bi[i])
            for c in range(r):
                qi = Q[i, c]
                pu = P[u, c]
                Q[i, c] += lr * (e * (pu + z[c]) - reg * qi)
                P[u, c] += lr * (e * qi - reg * pu)
                g[c] += e * qi
        decay = (1.0 - lr * reg) ** n
        for c in range(r):
            g[c] *= lr * s
        for a in range(a0, a1):
            j = items[a]
            for c in range(r):
                Y[j, c] = decay * Y[j, c] + g[c]
    return sse


@njit(cache=True, parallel=True)
def block_order(indptr, keys, within):
    """Each user's block of positions ``indptr[u]:indptr[u + 1]`` sorted by ``keys`` (stably), into ``within``.

    With ``keys`` drawn at random this shuffles every block within itself; for a table sorted by user it
    equals ``np.lexsort((keys, users))``, and costs ``O(Σ n_u log n_u)``, in parallel over users.
    """
    for u in prange(indptr.shape[0] - 1):
        a0 = indptr[u]
        a1 = indptr[u + 1]
        idx = np.argsort(keys[a0:a1], kind="mergesort")
        for t in range(a1 - a0):
            within[a0 + t] = a0 + idx[t]


@njit(cache=True, parallel=True)
def implicit_sums(indptr, items, Y, Z):
    """``Z[u] = |N(u)|^{-1/2} Σ_{j ∈ N(u)} Y[j]`` for every user (zero without ratings), in parallel over users.

    Each user's sum runs in the table's order on one thread, so the result does not depend on the number
    of threads.
    """
    m = indptr.shape[0] - 1
    r = Y.shape[1]
    for u in prange(m):
        a0 = indptr[u]
        a1 = indptr[u + 1]
        for c in range(r):
            Z[u, c] = 0.0
        if a1 == a0:
            continue
        for a in range(a0, a1):
            j = items[a]
            for c in range(r):
                Z[u, c] += Y[j, c]
        s = 1.0 / math.sqrt(a1 - a0)
        for c in range(r):
            Z[u, c] *= s


@njit(cache=True, parallel=True)
def predict(users, items, P, Q, Z, bu, bi, mu, out):
    """``out[p] = μ + b_u + b_i + Q_i · (P_u + Z_u)`` (eq 3) for each pair ``(users[p], items[p])``."""
    r = P.shape[1]
    for p in prange(users.shape[0]):
        u = users[p]
        i = items[p]
        f = mu + bu[u] + bi[i]
        for c in range(r):
            f += Q[i, c] * (P[u, c] + Z[u, c])
        out[p] = f


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel of this module on a tiny problem."""
    indptr = np.array([0, 3, 5], dtype=np.int64)
    users = np.array([0, 0, 0, 1, 1], dtype=np.int32)
    items = np.array([0, 1, 2, 0, 2], dtype=np.int32)
    ratings = np.array([5.0, 3.0, 1.0, 4.0, 2.0])
    rng = np.random.default_rng(0)
    P, Q, Y = rng.normal(size=(2, 2)), rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    bu, bi = np.zeros(2), np.zeros(3)
    sgd_epoch(indptr, items, ratings, np.array([1, 0], dtype=np.int64), np.arange(5, dtype=np.int64), P, Q, Y,
              bu, bi, 3.0, 0.01, 0.05, 0.05)
    block_order(indptr, rng.random(5), np.empty(5, dtype=np.int64))
    Z = np.empty((2, 2))
    implicit_sums(indptr, items, Y, Z)
    predict(users, items, P, Q, Z, bu, bi, 3.0, np.empty(5))
