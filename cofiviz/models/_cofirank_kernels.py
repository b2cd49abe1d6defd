"""Numba kernels of CofiRank's alternating minimisation (Weimer et al., §4 "Algorithm").

The objective is ``Σ_u l(F_u, y_u) + (λ/2)(‖U‖² + ‖M‖²)`` with ``F = U Mᵀ`` (eq 8). Factors are
stored *augmented*: ``U`` and ``M`` have ``D`` columns, of which ``free_u`` (``free_m``) are learned
in the user (item) phase; the other columns are held fixed. That is how the optional offsets of the
authors' code work: a user-bias column learned in ``U`` meets a column of ones in ``M``, an
item-bias column learned in ``M`` meets a column of ones in ``U``.

- :func:`user_phase` — for fixed ``M`` the problem splits into one small problem per user,
  ``min_w l(X_u w + f⁰_u, y_u) + (λ/2)‖w‖²`` with ``X_u = M[items of u, free_u]``; each is solved by
  its own BMRM (warm-started from the user's current row) in a ``prange`` over chunks of users.
- :func:`item_oracle` — for fixed ``U`` the loss couples all items, so the item phase is a single
  BMRM over ``M[:, free_m]`` (driven from Python by :func:`cofiviz.solvers.bmrm.bmrm`); this kernel
  is its oracle: per-user losses and score subgradients in parallel over users, then
  ``∂_M = Σ_u ∂_F l_u ⊗ U_u`` accumulated in parallel over items (no write conflicts).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..losses.collab import user_loss_grad
from ..solvers.bmrm import bundle_add, bundle_primal, qp_simplex, qp_tolerance

__all__ = ["user_phase", "item_oracle", "USERS_PER_CHUNK"]

USERS_PER_CHUNK = 16


@njit(cache=True, nogil=True)
def _max_count(indptr):
    m = 1
    for u in range(indptr.shape[0] - 1):
        if indptr[u + 1] - indptr[u] > m:
            m = indptr[u + 1] - indptr[u]
    return m


@njit(cache=True, parallel=True)
def user_phase(data, items, U, M, free_u, scale, active, lam, tol, rel_tol, max_iter, max_planes,
               losses, iters):
    """One BMRM per user over ``U[u, free_u]`` with ``M`` fixed; updates ``U`` in place.

    ``scale`` (one per free column) gives column ``t`` the regularisation ``lam / scale[t]²``: BMRM
    runs on ``z = w / scale`` with the uniform ``lam`` (a diagonal regulariser is a uniform one
    after rescaling the coordinates). Only users with ``active[u]`` true are touched. Writes each user's loss at the returned point
    into ``losses`` and its oracle calls into ``iters`` (0 for users without ratings, whose free
    factors are set to 0 — the minimiser of the regulariser alone).
    """
    indptr = data[1]
    n_users = indptr.shape[0] - 1
    D = U.shape[1]
    Df = free_u.shape[0]
    is_free = np.zeros(D, dtype=np.bool_)
    for t in range(Df):
        is_free[free_u[t]] = True
    max_n = _max_count(indptr)
    cap = min(max_planes, max_iter)
    L = data[9].shape[0]
    n_chunks = (n_users + USERS_PER_CHUNK - 1) // USERS_PER_CHUNK
    for ch in prange(n_chunks):
        A = np.empty((cap, Df))
        bvec = np.zeros(cap)
        Q = np.zeros((cap, cap))
        alpha = np.zeros(cap)
        idle = np.zeros(cap, dtype=np.int64)
        h = np.zeros(cap)
        X = np.empty((max_n, Df))
        f0 = np.empty(max_n)
        f = np.empty(max_n)
        gf = np.empty(max_n)
        grad = np.empty(Df)
        w = np.empty(Df)
        wbest = np.empty(Df)
        col4row = np.empty(max_n, dtype=np.int64)
        wf = np.empty(5 * max_n)  # 3 n for the assignment + 2 n (collab.user_loss_grad)
        wi = np.empty(max(5 * max_n, 2 * L), dtype=np.int64)
        u_end = min((ch + 1) * USERS_PER_CHUNK, n_users)
        for u in range(ch * USERS_PER_CHUNK, u_end):
            if not active[u]:
                continue
            lo = indptr[u]
            n = indptr[u + 1] - lo
            if n == 0:
                for t in range(Df):
                    U[u, free_u[t]] = 0.0
                losses[u] = 0.0
                iters[u] = 0
                continue
            for j in range(n):
                it_ = items[lo + j]
                for t in range(Df):
                    X[j, t] = M[it_, free_u[t]] * scale[t]
                s = 0.0
                for t in range(D):
                    if not is_free[t]:
                        s += U[u, t] * M[it_, t]
                f0[j] = s
            for t in range(Df):
                w[t] = U[u, free_u[t]] / scale[t]
            n_planes = np.int64(0)  # not the literal 0, for which numba would compile bundle_add once more
            lb = -np.inf
            min_obj = np.inf
            best_obj = np.inf
            best_loss = 0.0
            it = 0
            for it in range(1, max_iter + 1):
                for j in range(n):
                    s = f0[j]
                    for t in range(Df):
                        s += X[j, t] * w[t]
                    f[j] = s
                loss = user_loss_grad(data, u, f[:n], gf[:n], col4row, wf, wi)
                reg = 0.0
                wg = 0.0
                for t in range(Df):
                    s = 0.0
                    for j in range(n):
                        s += X[j, t] * gf[j]
                    grad[t] = s
                    reg += w[t] * w[t]
                    wg += w[t] * s
                obj = loss + 0.5 * lam * reg
                if obj < min_obj:
                    min_obj = obj
                if it >= 2 and obj < best_obj:
                    best_obj = obj
                    best_loss = loss
                    for t in range(Df):
                        wbest[t] = w[t]
                gap = min_obj - lb
                if it >= 2 and (gap <= tol or gap <= rel_tol * min_obj):
                    break
                if it >= max_iter:
                    break
                n_planes = bundle_add(A, bvec, Q, alpha, idle, n_planes, grad, loss - wg, lam)
                qtol = qp_tolerance(gap, tol, rel_tol, min_obj)
                v = qp_simplex(Q, bvec, alpha, h, n_planes, qtol, 200 * n_planes + 1000)
                if v > lb:
                    lb = v
                bundle_primal(A, alpha, idle, n_planes, lam, w)
            for t in range(Df):
                U[u, free_u[t]] = wbest[t] * scale[t]
            losses[u] = best_loss
            iters[u] = it


@njit(cache=True, parallel=True)
def item_oracle(data, users, items, U, M, item_ptr, item_pos, free_m, gf, losses, G):
    """Loss ``Σ_u l_u`` at ``F = U Mᵀ`` and its subgradient ``G`` with respect to ``M[:, free_m]``.

    ``users``/``items`` give each rating's user and item (user-major, matching ``data``); ``gf``
    (one per rating) and ``losses`` (one per user) are scratch outputs. Returns the total loss.
    """
    indptr = data[1]
    n_users = indptr.shape[0] - 1
    D = U.shape[1]
    Df = free_m.shape[0]
    max_n = _max_count(indptr)
    L = data[9].shape[0]
    n_chunks = (n_users + USERS_PER_CHUNK - 1) // USERS_PER_CHUNK
    for ch in prange(n_chunks):
        f = np.empty(max_n)
        col4row = np.empty(max_n, dtype=np.int64)
        wf = np.empty(5 * max_n)  # 3 n for the assignment + 2 n (collab.user_loss_grad)
        wi = np.empty(max(5 * max_n, 2 * L), dtype=np.int64)
        for u in range(ch * USERS_PER_CHUNK, min((ch + 1) * USERS_PER_CHUNK, n_users)):
            lo = indptr[u]
            n = indptr[u + 1] - lo
            for j in range(n):
                it_ = items[lo + j]
                s = 0.0
                for t in range(D):
                    s += U[u, t] * M[it_, t]
                f[j] = s
            losses[u] = user_loss_grad(data, u, f[:n], gf[lo:lo + n], col4row, wf, wi)
    n_items = M.shape[0]
    for i in prange(n_items):
        for t in range(Df):
            G[i, t] = 0.0
        for q in range(item_ptr[i], item_ptr[i + 1]):
            p = item_pos[q]
            gv = gf[p]
            if gv != 0.0:
                u = users[p]
                for t in range(Df):
                    G[i, t] += gv * U[u, free_m[t]]
    total = 0.0
    for u in range(n_users):
        total += losses[u]
    return total
