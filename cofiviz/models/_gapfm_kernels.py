"""numba kernels of GAPfm's learning algorithm (Shi et al., CIKM 2013, Algorithms 1 and 2).

They take the factors ``U`` and ``V``, the fixed item offsets ``prior`` (zeros for the paper's model: a
score is ``U_m · V_i + prior_i``), CSR arrays (``indptr``, ``items``) and the per-rating / per-user arrays of
:class:`cofiviz.losses.smoothed_gap.Prepared`; the per-user objective and its score gradient come from
:func:`cofiviz.losses.smoothed_gap.user_value_grad`. Nothing here knows about models or tables.

Selection modes (``mode``): 0 every rated item, 1 adaptive (Algorithm 1: the K items whose rank by
score is farthest from their rank by grade), 2 random (K uniformly chosen items: the paper's control).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..losses.smoothed_gap import user_value, user_value_grad

SELECT_ALL, SELECT_ADAPTIVE, SELECT_RANDOM = 0, 1, 2


@njit(cache=True, nogil=True)
def _scores_of(U, V, prior, m, items, lo, n, f):
    """User m's scores ``U_m · V_i + prior_i`` of its ``n`` items ``items[lo:lo + n]``, into ``f``."""
    D = U.shape[1]
    for k in range(n):
        i = items[lo + k]
        acc = 0.0
        for d in range(D):
            acc += U[m, d] * V[i, d]
        f[k] = acc + prior[i]


@njit(cache=True, nogil=True)
def select_items(mode, K, f, grades, keys, ymax, idx):
    """Algorithm 1 (AdaptiveSelection) on one user: writes the chosen positions into ``idx``, returns
    how many.

    ``f`` the scores and ``grades`` the grades of the user's rated items, ``keys`` uniform random
    numbers in [0, 1) (one per item) that break ties. When the user has at most K items all are kept
    ("if Σ_i I_mi ≤ K then T_m = N_m"). Adaptive: ``r`` = rank by grade, descending, with tied grades
    sharing their mean rank (midrank: a 4 among positions 5..15 has r = 10); ``r̂`` = rank by score,
    descending; the K largest ``|r − r̂|`` are chosen, ties in the distance by the smallest keys.
    Random: the K items with the smallest keys.

    Cost: one sort of the scores (for ``r̂``) and a counting pass over the distances (they are
    multiples of ½, so ``2 |r − r̂|`` is an integer in 0..2n); only the items tied at the threshold
    distance are sorted by key.
    """
    n = f.shape[0]
    if mode == SELECT_ALL or n <= K:
        for k in range(n):
            idx[k] = k
        return n
    if mode == SELECT_RANDOM:
        order = np.argsort(keys)
        for k in range(K):
            idx[k] = order[k]
        return K
    # 2 r̂: predicted rank by descending score (1-based), doubled
    of = np.argsort(f)
    d2 = np.empty(n, np.int64)
    for p in range(n):
        d2[of[p]] = 2 * (n - p)
    # 2 r: midrank by descending grade, doubled: 2 (#items with a higher grade) + (#items with this grade) + 1
    cnt = np.zeros(ymax + 2, np.int64)
    for k in range(n):
        cnt[grades[k]] += 1
    above = np.zeros(ymax + 2, np.int64)
    for g in range(ymax - 1, -1, -1):
        above[g] = above[g + 1] + cnt[g + 1]
    hist = np.zeros(2 * n + 1, np.int64)
    for k in range(n):
        g = grades[k]
        d = abs(2 * above[g] + cnt[g] + 1 - d2[k])
        d2[k] = d
        hist[d] += 1
    # threshold: every item farther than tau is taken, and `need` of those at exactly tau
    taken = 0
    tau = 0
    for t in range(2 * n, -1, -1):
        if taken + hist[t] >= K:
            tau = t
            break
        taken += hist[t]
    need = K - taken
    q = 0
    tie_keys = np.empty(hist[tau])
    tie_pos = np.empty(hist[tau], np.int64)
    c = 0
    for k in range(n):
        if d2[k] > tau:
            idx[q] = k
            q += 1
        elif d2[k] == tau:
            tie_keys[c] = keys[k]
            tie_pos[c] = k
            c += 1
    order = np.argsort(tie_keys)
    for a in range(need):
        idx[q] = tie_pos[order[a]]
        q += 1
    return K


@njit(parallel=True, cache=True)
def user_step(U, V, prior, indptr, items, s, shift, scale, code, lr, lam, values):
    """Eq 10 for every user in parallel: ``U_m += lr (Σ_i h_mi V_i − λ U_m)`` with V fixed.

    ``values[m]`` receives user m's objective term at the *start* of the step.
    """
    M = indptr.shape[0] - 1
    D = U.shape[1]
    for m in prange(M):
        lo = indptr[m]
        n = indptr[m + 1] - lo
        if n == 0:
            values[m] = 0.0
            for d in range(D):
                U[m, d] -= lr * lam * U[m, d]
            continue
        f = np.empty(n)
        h = np.empty(n)
        _scores_of(U, V, prior, m, items, lo, n, f)
        values[m] = user_value_grad(code, f, s[lo:lo + n], shift[m], scale[m], h)
        g = np.empty(D)
        for d in range(D):
            g[d] = -lam * U[m, d]
        for k in range(n):
            i = items[lo + k]
            for d in range(D):
                g[d] += h[k] * V[i, d]
        for d in range(D):
            U[m, d] += lr * g[d]


@njit(cache=True)
def item_step_sequential(U, V, prior, indptr, items, grades, s, shift, scale, code, order, mode, K, keys, ymax, lr, lam,
                         lam_items):
    """Algorithm 2's item loop: for each user m in ``order``, select ``T_m`` (Algorithm 1) and apply
    eq 11 of that user to the selected items, ``V_i += lr (h_mi U_m − (λ + λ_i) V_i)``, before the next user.

    ``λ`` is eq 11's penalty, applied at every update; ``lam_items[i]`` (``λ_i``) is an extra per-item
    share (``GAPfm.item_reg`` spread over the item's updates; zeros for the paper's algorithm).

    The gradient of a selected item is that of user m's objective restricted to ``T_m`` (pairs within
    the selection), which is what makes one user's update O(K²) instead of O(S_m²) (paper §4.3).
    Returns the number of item updates made.
    """
    D = U.shape[1]
    maxn = 0
    for m in range(indptr.shape[0] - 1):
        maxn = max(maxn, indptr[m + 1] - indptr[m])
    f = np.empty(maxn)
    fs = np.empty(maxn)
    ss = np.empty(maxn)
    h = np.empty(maxn)
    idx = np.empty(maxn, np.int64)
    updates = 0
    for t in range(order.shape[0]):
        m = order[t]
        lo = indptr[m]
        n = indptr[m + 1] - lo
        if n == 0:
            continue
        _scores_of(U, V, prior, m, items, lo, n, f)
        q = select_items(mode, K, f[:n], grades[lo:lo + n], keys[lo:lo + n], ymax, idx)
        for a in range(q):
            fs[a] = f[idx[a]]
            ss[a] = s[lo + idx[a]]
        user_value_grad(code, fs[:q], ss[:q], shift[m], scale[m], h)
        for a in range(q):
            i = items[lo + idx[a]]
            lam_i = lam + lam_items[i]
            for d in range(D):
                V[i, d] += lr * (h[a] * U[m, d] - lam_i * V[i, d])
        updates += q
    return updates


@njit(parallel=True, cache=True)
def _selected_gradients(U, V, prior, indptr, items, grades, s, shift, scale, code, mode, K, keys, ymax, H):
    """``H[k] = ∂F_m/∂f_mk`` of each user's objective restricted to its selection (0 elsewhere)."""
    M = indptr.shape[0] - 1
    for m in prange(M):
        lo = indptr[m]
        n = indptr[m + 1] - lo
        if n == 0:
            continue
        f = np.empty(n)
        fs = np.empty(n)
        ss = np.empty(n)
        h = np.empty(n)
        idx = np.empty(n, np.int64)
        _scores_of(U, V, prior, m, items, lo, n, f)
        q = select_items(mode, K, f, grades[lo:lo + n], keys[lo:lo + n], ymax, idx)
        for a in range(q):
            fs[a] = f[idx[a]]
            ss[a] = s[lo + idx[a]]
        user_value_grad(code, fs[:q], ss[:q], shift[m], scale[m], h)
        for k in range(n):
            H[lo + k] = 0.0
        for a in range(q):
            H[lo + idx[a]] = h[a]


@njit(cache=True)
def _scatter_items(U, V, users, items, H, lr, lam, counts_selected):
    """``V += lr (Σ_m H_mi U_m − λ V_i)`` for items with a selected rating (batch eq 11)."""
    N, D = V.shape
    G = np.zeros((N, D))
    for k in range(users.shape[0]):
        hk = H[k]
        if hk != 0.0:
            m = users[k]
            i = items[k]
            for d in range(D):
                G[i, d] += hk * U[m, d]
    for i in range(N):
        if counts_selected[i] > 0:
            for d in range(D):
                V[i, d] += lr * (G[i, d] - lam * V[i, d])


def item_step_batch(U, V, prior, indptr, users, items, grades, s, shift, scale, code, mode, K, keys, ymax, lr, lam,
                    counts_selected):
    """All users' eq 11 gradients at once (computed in parallel with V fixed), then one step on V."""
    H = np.empty(len(items))
    _selected_gradients(U, V, prior, indptr, items, grades, s, shift, scale, code, mode, K, keys, ymax, H)
    if mode != SELECT_ALL:
        counts_selected = np.bincount(items[H != 0.0], minlength=V.shape[0])
    _scatter_items(U, V, users, items, H, lr, lam, counts_selected)
    return int(np.count_nonzero(H)) if mode != SELECT_ALL else len(items)


@njit(parallel=True, cache=True)
def user_values(U, V, prior, indptr, items, s, shift, scale, code, values):
    """Each user's objective term (value only, in parallel)."""
    M = indptr.shape[0] - 1
    for m in prange(M):
        lo = indptr[m]
        n = indptr[m + 1] - lo
        if n == 0:
            values[m] = 0.0
            continue
        f = np.empty(n)
        _scores_of(U, V, prior, m, items, lo, n, f)
        values[m] = user_value(code, f, s[lo:lo + n], shift[m], scale[m])


@njit(parallel=True, cache=True)
def dot_pairs(U, V, users, items, out):
    """``out[k] = <U[users[k]], V[items[k]]>``."""
    D = U.shape[1]
    for k in prange(users.shape[0]):
        u = users[k]
        i = items[k]
        acc = 0.0
        for d in range(D):
            acc += U[u, d] * V[i, d]
        out[k] = acc
