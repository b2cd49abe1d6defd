"""numba kernels of WLT: the win / loss / tie features of (user, item) pairs and the LambdaRank objective.

Features (the formulas are in :mod:`cofiviz.models.wlt`, eqs (1)–(3)). For a pair (u, n) and a neighbour v (a
user other than u who rated n), every other item m that v rated is a comparison of n with m in v's ratings: a
win (``R(v,n) > R(v,m)``), a loss (``<``) or a tie (``=``). The comparisons with u's items at level ℓ, as
fractions of u's items at that level, and each neighbour's fractions of its whole list are summed over the
neighbours and divided by the neighbour slots ``max(neighbours with another item, K)``. The pair's own item is
never one of u's items. The row of a pair is ``[W_1, L_1, T_1, …, W_L, L_L, T_L, W, L, T]``.

Objective (eqs (4)–(5) there): for each list, every pair of items with different ratings contributes
LambdaRank's ``|ΔNDCG_ij| log(1 + exp(−σ (s_i − s_j)))``, ``|ΔNDCG_ij|`` the change of the list's NDCG when i
and j swap places in the ranking by the current scores. Users (lists) are independent; each writes its own row
of the outputs (no reduction across threads), and sums run in a fixed order, so results do not depend on the
number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _pair_features(u, n, K, indptr, items, ratings, users, item_indptr, positions, mark, n_levels, out_row,
                   cand, key, level_count, common):
    """The feature row of pair (u, n); ``mark[m]`` holds u's level of item m (−1: not one of u's items, n
    excluded), ``level_count[ℓ]`` the number of u's items at level ℓ and ``common[v]`` the number of u's items
    that user v rated (n among them or not: the same shift for every rater of n). ``cand`` and ``key`` are
    scratch arrays at least as long as item n's list of raters."""
    n_cols = 3 * (n_levels + 1)
    for c in range(n_cols):
        out_row[c] = 0.0
    lo, hi = item_indptr[n], item_indptr[n + 1]
    n_cand = 0
    for q in range(lo, hi):
        p = positions[q]
        if users[p] != u:
            cand[n_cand] = p
            n_cand += 1
    if K > 0 and n_cand > K:
        # the K raters sharing most of u's items (ties: the lower user index first)
        for c in range(n_cand):
            v = users[cand[c]]
            key[c] = -common[v] * (indptr.shape[0] + 1.0) + v
        order = np.argsort(key[:n_cand], kind="mergesort")
        chosen = np.empty(K, dtype=np.int64)
        for c in range(K):
            chosen[c] = cand[order[c]]
        for c in range(K):
            cand[c] = chosen[c]
        n_cand = K
    base = 3 * n_levels
    used = 0
    for c in range(n_cand):
        p = cand[c]
        v = users[p]
        r_vn = ratings[p]
        win = 0.0
        loss = 0.0
        tie = 0.0
        for t in range(indptr[v], indptr[v + 1]):
            m = items[t]
            if m == n:
                continue
            d = r_vn - ratings[t]
            lev = mark[m]
            if d > 0.0:
                win += 1.0
                if lev >= 0:
                    out_row[3 * lev] += 1.0
            elif d < 0.0:
                loss += 1.0
                if lev >= 0:
                    out_row[3 * lev + 1] += 1.0
            else:
                tie += 1.0
                if lev >= 0:
                    out_row[3 * lev + 2] += 1.0
        total = win + loss + tie
        if total > 0.0:
            out_row[base] += win / total
            out_row[base + 1] += loss / total
            out_row[base + 2] += tie / total
            used += 1
    # averages over max(used, K) neighbour slots: an empty slot is no win, loss or tie
    slots = max(used, K)
    if slots == 0:
        return
    for lev in range(n_levels):
        if level_count[lev] > 0.0:
            for c in range(3):
                out_row[3 * lev + c] /= level_count[lev] * slots
    for c in range(3):
        out_row[base + c] /= slots


@njit(parallel=True, cache=True)
def features(pair_users, pair_items, group_ptr, group_part, K, indptr, items, ratings, users, levels, parts,
             item_indptr, positions, n_levels, n_items, out):
    """Feature rows of the pairs ``(pair_users[p], pair_items[p])``, which are grouped by user:
    ``group_ptr[g]:group_ptr[g + 1]`` are pairs of one user, whose items count as theirs only outside part
    ``group_part[g]`` (``parts[t]`` is the part of training rating t; a part no rating has keeps them all).
    ``levels[t]`` is the level of training rating t; ``(item_indptr, positions)`` the item-major view of the
    training table. Fills ``out``."""
    n_groups = group_ptr.shape[0] - 1
    max_raters = 0
    for i in range(n_items):
        max_raters = max(max_raters, item_indptr[i + 1] - item_indptr[i])
    for g in prange(n_groups):
        lo, hi = group_ptr[g], group_ptr[g + 1]
        if hi == lo:
            continue
        u = pair_users[lo]
        mark = np.full(n_items, -1, dtype=np.int64)
        cand = np.empty(max(max_raters, 1), dtype=np.int64)
        key = np.empty(max(max_raters, 1), dtype=np.float64)
        level_count = np.zeros(n_levels)
        common = np.zeros(indptr.shape[0] - 1)
        for t in range(indptr[u], indptr[u + 1]):
            if parts[t] != group_part[g]:
                m = items[t]
                mark[m] = levels[t]
                level_count[levels[t]] += 1.0
                if K > 0:
                    for q in range(item_indptr[m], item_indptr[m + 1]):
                        common[users[positions[q]]] += 1.0
        for p in range(lo, hi):
            n = pair_items[p]
            own = mark[n]
            mark[n] = -1
            if own >= 0:
                level_count[own] -= 1.0
            _pair_features(u, n, K, indptr, items, ratings, users, item_indptr, positions, mark, n_levels,
                           out[p], cand, key, level_count, common)
            mark[n] = own
            if own >= 0:
                level_count[own] += 1.0


@njit(cache=True)
def linear_scores(X, w, out):
    """``out[p] = X[p] · w``, summed in column order."""
    for p in range(X.shape[0]):
        acc = 0.0
        for c in range(X.shape[1]):
            acc += X[p, c] * w[c]
        out[p] = acc


@njit(cache=True, inline="always")
def _softplus(z):
    """``log(1 + exp(z))`` without overflow."""
    if z > 0.0:
        return z + np.log1p(np.exp(-z))
    return np.log1p(np.exp(z))


@njit(cache=True, inline="always")
def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@njit(parallel=True, cache=True)
def lambdarank(indptr, ratings, X, s, sigma, k, want_hessian, loss_u, grad_u, hess_u):
    """Per list u (``indptr[u]:indptr[u + 1]``): the loss
    ``loss_u[u] = Σ_{y_i > y_j} |ΔNDCG_ij| softplus(−σ (s_i − s_j))``, its gradient with respect to the weights
    in ``grad_u[u]`` (``Σ_i λ_i x_i``, λ_i LambdaRank's summed lambdas) and, when ``want_hessian``, its Hessian
    with ``|ΔNDCG|`` held fixed in ``hess_u[u]`` (``Σ_{pairs} c_ij (x_i − x_j)(x_i − x_j)ᵀ`` with
    ``c_ij = σ² |ΔNDCG_ij| p(1 − p)``, ``p`` the logistic of ``−σ (s_i − s_j)``). ``s`` are the scores; positions
    for ``|ΔNDCG|`` come from a stable sort by descending score; ``k > 0`` truncates the discount at position k.
    Returns, per list, whether it has a pair to rank (a rating above another, and a positive ideal DCG)."""
    n_lists = indptr.shape[0] - 1
    F = X.shape[1]
    active = np.zeros(n_lists, dtype=np.bool_)
    for u in prange(n_lists):
        loss_u[u] = 0.0
        for c in range(F):
            grad_u[u, c] = 0.0
            if want_hessian:
                for e in range(F):
                    hess_u[u, c, e] = 0.0
        lo, hi = indptr[u], indptr[u + 1]
        m = hi - lo
        if m < 2:
            continue
        order = np.argsort(-s[lo:hi], kind="mergesort")
        disc = np.zeros(m)
        for r in range(m):
            pos = r + 1
            if k <= 0 or pos <= k:
                disc[order[r]] = 1.0 / np.log2(1.0 + pos)
        gains = np.empty(m)
        for i in range(m):
            gains[i] = 2.0 ** ratings[lo + i] - 1.0
        ideal = np.sort(gains)[::-1]
        idcg = 0.0
        for r in range(m):
            pos = r + 1
            if k <= 0 or pos <= k:
                idcg += ideal[r] / np.log2(1.0 + pos)
        if idcg <= 0.0:
            continue
        lam = np.zeros(m)
        lap = np.zeros((m, m)) if want_hessian else np.zeros((1, 1))
        total = 0.0
        pairs = 0
        for i in range(m):
            for j in range(m):
                if ratings[lo + i] <= ratings[lo + j]:
                    continue
                pairs += 1
                delta = abs(gains[i] - gains[j]) * abs(disc[i] - disc[j]) / idcg
                if delta == 0.0:
                    continue
                z = sigma * (s[lo + i] - s[lo + j])
                total += delta * _softplus(-z)
                p = _sigmoid(-z)
                rho = sigma * delta * p
                lam[i] -= rho
                lam[j] += rho
                if want_hessian:
                    c2 = sigma * sigma * delta * p * (1.0 - p)
                    lap[i, i] += c2
                    lap[j, j] += c2
                    lap[i, j] -= c2
                    lap[j, i] -= c2
        if pairs == 0:
            continue
        active[u] = True
        loss_u[u] = total
        for i in range(m):
            if lam[i] != 0.0:
                for c in range(F):
                    grad_u[u, c] += lam[i] * X[lo + i, c]
        if want_hessian:
            # H = X_uᵀ (lap X_u), lap the weighted Laplacian of the pairs
            LX = np.zeros((m, F))
            for i in range(m):
                for j in range(m):
                    if lap[i, j] != 0.0:
                        for c in range(F):
                            LX[i, c] += lap[i, j] * X[lo + j, c]
            for i in range(m):
                for c in range(F):
                    xi = X[lo + i, c]
                    if xi != 0.0:
                        for e in range(F):
                            hess_u[u, c, e] += xi * LX[i, e]
    return active


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel of this module on a tiny problem."""
    indptr = np.array([0, 3, 5], dtype=np.int64)
    users = np.array([0, 0, 0, 1, 1], dtype=np.int64)
    items = np.array([0, 1, 2, 0, 2], dtype=np.int64)
    ratings = np.array([5.0, 3.0, 1.0, 4.0, 2.0])
    levels = np.array([2, 1, 0, 1, 0], dtype=np.int64)
    item_indptr = np.array([0, 2, 3, 5], dtype=np.int64)
    positions = np.array([0, 3, 1, 2, 4], dtype=np.int64)
    X = np.zeros((5, 12))
    features(users, items, indptr, np.full(2, -1, dtype=np.int64), 0, indptr, items, ratings, users, levels,
             np.zeros(5, dtype=np.int64), item_indptr, positions, 3, 3, X)
    s = np.empty(5)
    linear_scores(X, np.ones(12), s)
    lambdarank(indptr, ratings, X, s, 1.0, 0, True, np.empty(2), np.empty((2, 12)), np.empty((2, 12, 12)))
