"""numba kernels of the WLT features: how an item fares in its raters' own lists, summarised over the
neighbours of a user (the formulas are in :mod:`cofiviz.models.wlt`).

:func:`preferences` gives every training rating ``(k, n)`` the seven preferences of user k for item n against
k's other items: wins, their rating differences and their log-rating differences, the same three for losses, and
ties, each divided by the number of k's other items. :func:`features` chooses, for each (user, item) pair, the
K raters of the item most similar to the user in rating agreement, and summarises their preferences for the
item. Users are independent: each group of pairs of one user writes its own rows, and every sum runs in a fixed
order, so the results do not depend on the number of threads.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

#: the preferences of one rating, in the order of the columns of :func:`preferences`
PREFERENCES = ("W", "W·Δr", "W·Δlog r", "L", "L·Δr", "L·Δlog r", "T")
N_PREF = len(PREFERENCES)
#: the feature row: the mean and standard deviation over the neighbours of each preference, the fractions of the K
#: neighbour slots whose neighbour wins, loses or ties with the item on balance, and the indicator of an item no
#: other user rated
N_FEATURES = 2 * N_PREF + 3 + 1


@njit(parallel=True, cache=True)
def preferences(indptr, ratings, r_min, r_range, out):
    """``out[p]``: the seven preferences of training rating ``p`` (user k, item n, rating r) against k's other items.

    With ``n_k`` the number of k's ratings, ``a(x) = log(x − r_min + 1)`` and sums over k's other ratings R:
    ``W = #(R < r)``, ``W·Δr = Σ_{R < r} (r − R) / r_range``, ``W·Δlog r = Σ_{R < r} (a(r) − a(R))``, ``L``, ``L·Δr``,
    ``L·Δlog r`` likewise over ``R > r`` (differences taken positive), ``T = #(R = r)``; each divided by
    ``n_k − 1`` (all 0 when ``n_k = 1``).
    """
    n_users = len(indptr) - 1
    for k in prange(n_users):
        a0, a1 = indptr[k], indptr[k + 1]
        n = a1 - a0
        if n == 0:
            continue
        if n == 1:
            for c in range(N_PREF):
                out[a0, c] = 0.0
            continue
        s = np.sort(ratings[a0:a1])
        s1 = np.zeros(n + 1)
        sl = np.zeros(n + 1)
        for i in range(n):
            s1[i + 1] = s1[i] + s[i]
            sl[i + 1] = sl[i] + math.log(s[i] - r_min + 1.0)
        inv = 1.0 / (n - 1)
        for p in range(a0, a1):
            r = ratings[p]
            lr = math.log(r - r_min + 1.0)
            lo = np.searchsorted(s, r, side="left")
            hi = np.searchsorted(s, r, side="right")
            more = n - hi
            out[p, 0] = lo * inv
            out[p, 1] = (lo * r - s1[lo]) / r_range * inv
            out[p, 2] = (lo * lr - sl[lo]) * inv
            out[p, 3] = more * inv
            out[p, 4] = ((s1[n] - s1[hi]) - more * r) / r_range * inv
            out[p, 5] = ((sl[n] - sl[hi]) - more * lr) * inv
            out[p, 6] = (hi - lo - 1) * inv


@njit(cache=True, nogil=True)
def _pair_row(u, n, K, agree, own, item_indptr, positions, users, ratings, prefs, r_range, row):
    """The feature row of pair (u, n). ``agree[v]`` is the rating agreement of u with v over all of u's training
    items; ``own[n]`` is u's training rating of n (NaN when u did not rate it), whose term is left out of the
    agreement so that a training pair's neighbours do not see its rating."""
    for c in range(N_FEATURES):
        row[c] = 0.0
    b0, b1 = item_indptr[n], item_indptr[n + 1]
    n_cand = 0
    for b in range(b0, b1):
        if users[positions[b]] != u:
            n_cand += 1
    if n_cand == 0:
        row[N_FEATURES - 1] = 1.0
        return
    cand = np.empty(n_cand, dtype=np.int64)      # positions of the ratings (v, n), raters in index order
    key = np.empty(n_cand)
    i = 0
    for b in range(b0, b1):
        p = positions[b]
        v = users[p]
        if v == u:
            continue
        sim = agree[v]
        if not math.isnan(own[n]):
            sim -= 1.0 - abs(own[n] - ratings[p]) / r_range
        cand[i] = p
        key[i] = -sim
        i += 1
    order = np.argsort(key, kind="mergesort")  # most agreeing first; ties: the lower user index
    c = n_cand if K == 0 or K > n_cand else K
    slots = float(K) if K > 0 else float(c)
    for j in range(c):
        p = cand[order[j]]
        for q in range(N_PREF):
            row[q] += prefs[p, q]
        net = prefs[p, 0] - prefs[p, 3]
        if net > 0.0:
            row[2 * N_PREF] += 1.0
        elif net < 0.0:
            row[2 * N_PREF + 1] += 1.0
        else:
            row[2 * N_PREF + 2] += 1.0
    for q in range(N_PREF):
        row[q] /= c
    for j in range(c):
        p = cand[order[j]]
        for q in range(N_PREF):
            d = prefs[p, q] - row[q]
            row[N_PREF + q] += d * d
    for q in range(N_PREF):
        row[N_PREF + q] = math.sqrt(row[N_PREF + q] / c)
    for q in range(3):
        row[2 * N_PREF + q] /= slots


@njit(parallel=True, cache=True)
def features(pair_users, pair_items, group_ptr, K, indptr, items, ratings, users, item_indptr, positions, prefs,
             r_range, n_users, n_items, out):
    """``out[p]``: the feature row of pair ``(pair_users[p], pair_items[p])``; the pairs are grouped by user
    (``group_ptr``: the bounds of each user's run).

    The agreement of u with another user v is ``Σ_{m ∈ V(u) ∩ V(v)} (1 − |R(u,m) − R(v,m)| / r_range)``: the items
    both rated, each counted by how closely their ratings agree.
    """
    n_groups = len(group_ptr) - 1
    for g in prange(n_groups):
        g0, g1 = group_ptr[g], group_ptr[g + 1]
        if g1 == g0:
            continue
        u = pair_users[g0]
        agree = np.zeros(n_users)
        own = np.full(n_items, np.nan)
        if u < len(indptr) - 1:
            for a in range(indptr[u], indptr[u + 1]):
                m = items[a]
                own[m] = ratings[a]
                for b in range(item_indptr[m], item_indptr[m + 1]):
                    p = positions[b]
                    v = users[p]
                    if v != u:
                        agree[v] += 1.0 - abs(ratings[a] - ratings[p]) / r_range
        for q in range(g0, g1):
            _pair_row(u, pair_items[q], K, agree, own, item_indptr, positions, users, ratings, prefs, r_range,
                      out[q])


def warmup() -> None:
    """Compile (or load) the kernels on a table of two users."""
    indptr = np.array([0, 2, 4], dtype=np.int64)
    items = np.array([0, 1, 0, 1], dtype=np.int64)
    users = np.array([0, 0, 1, 1], dtype=np.int64)
    ratings = np.array([4.0, 2.0, 5.0, 1.0])
    prefs = np.empty((4, N_PREF))
    preferences(indptr, ratings, 1.0, 4.0, prefs)
    item_indptr = np.array([0, 2, 4], dtype=np.int64)
    positions = np.array([0, 2, 1, 3], dtype=np.int64)
    out = np.empty((2, N_FEATURES))
    features(np.array([0, 0], dtype=np.int64), np.array([0, 1], dtype=np.int64), np.array([0, 2], dtype=np.int64),
             1, indptr, items, ratings, users, item_indptr, positions, prefs, 4.0, 2, 2, out)
