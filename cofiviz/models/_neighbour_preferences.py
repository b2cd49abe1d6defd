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


#: at most this many neighbours are chosen by insertion into a sorted buffer; more by a stable sort of all raters
_INSERTION_MAX = 64


@njit(cache=True, nogil=True)
def _candidate_key(v, b, agree, known, own_n, rated, item_ratings, r_range):
    """``−sim`` of rater ``v`` (``positions[b]``) of the item: minus its agreement with the user, the item's own term
    left out when the user rated it."""
    if (known[v >> 6] >> np.uint64(v & 63)) & np.uint64(1):
        sim = agree[v]
        if rated:
            sim -= 1.0 - abs(own_n - item_ratings[b]) / r_range
        return -sim
    return -0.0          # no item in common (had the user rated this item, v would share it): agreement 0


@njit(cache=True, nogil=True)
def _pair_row(u, n, K, agree, known, own, item_indptr, positions, item_users, item_ratings, prefs, r_range, row,
              cand, key):
    """The feature row of pair (u, n). ``agree[v]`` is the rating agreement of u with v over all of u's training
    items; ``own[n]`` is u's training rating of n (NaN when u did not rate it), whose term is left out of the
    agreement so that a training pair's neighbours do not see its rating. ``item_users[b]`` and ``item_ratings[b]``
    are the rater and the rating of ``positions[b]``, in the items' order. Bit ``v`` of ``known`` is set when u and
    v rated an item in common: every other rater's agreement is zero, read without touching ``agree`` (a bit array
    of all users stays in the CPU's cache, ``agree`` does not). ``cand`` and ``key`` are work space of at least the
    item's number of raters.

    The neighbours are the ``K`` raters of smallest ``−sim`` in the order of a stable sort of the raters in index
    order (equal agreement: the lower index first), the order ``np.argsort(keys, kind="mergesort")[:K]`` gives.
    """
    for c in range(N_FEATURES):
        row[c] = 0.0
    own_n = own[n]
    rated = not math.isnan(own_n)
    n_cand = 0
    for b in range(item_indptr[n], item_indptr[n + 1]):
        v = item_users[b]
        if v == u:
            continue
        key[n_cand] = _candidate_key(v, b, agree, known, own_n, rated, item_ratings, r_range)
        cand[n_cand] = positions[b]
        n_cand += 1
    c = n_cand if K == 0 or K > n_cand else K
    chosen = cand
    if c > _INSERTION_MAX:
        if n_cand:
            chosen = cand[np.argsort(key[:n_cand], kind="mergesort")[:c]]
    else:
        # insertion into cand[:m], key[:m], kept in order, in place: the most agreeing first
        m = 0
        for i in range(n_cand):
            k = key[i]
            if m == c:
                if not k < key[m - 1]:     # a later rater with an equal key does not displace an earlier one
                    continue
                j = m - 1
            else:
                j = m
                m += 1
            p = cand[i]
            while j > 0 and key[j - 1] > k:
                key[j] = key[j - 1]
                cand[j] = cand[j - 1]
                j -= 1
            key[j] = k
            cand[j] = p
    if n_cand == 0:
        row[N_FEATURES - 1] = 1.0
        return
    slots = float(K) if K > 0 else float(c)
    for j in range(c):
        p = chosen[j]
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
        p = chosen[j]
        for q in range(N_PREF):
            d = prefs[p, q] - row[q]
            row[N_PREF + q] += d * d
    for q in range(N_PREF):
        row[N_PREF + q] = math.sqrt(row[N_PREF + q] / c)
    for q in range(3):
        row[2 * N_PREF + q] /= slots


@njit(parallel=True, cache=True)
def features(pair_users, pair_items, group_ptr, K, indptr, items, ratings, item_indptr, positions, item_users,
             item_ratings, prefs, r_range, n_users, n_items, n_runs, out):
    """``out[p]``: the feature row of pair ``(pair_users[p], pair_items[p])``; the pairs are grouped by user
    (``group_ptr``: the bounds of each user's run), and the groups cut into ``n_runs`` runs of consecutive groups
    (a few per thread), each with its own work space; no result depends on the cut. ``item_users`` and
    ``item_ratings`` are the raters and ratings of ``positions`` (each item's raters side by side in memory).

    The agreement of u with another user v is ``Σ_{m ∈ V(u) ∩ V(v)} (1 − |R(u,m) − R(v,m)| / r_range)``: the items
    both rated, each counted by how closely their ratings agree. Each run of groups holds one agreement array of all
    users and puts back to zero only what a user wrote, so the work grows with the users' co-raters, not with the
    number of users times itself.
    """
    n_groups = len(group_ptr) - 1
    most = 0
    for n in range(len(item_indptr) - 1):
        most = max(most, item_indptr[n + 1] - item_indptr[n])
    n_runs = max(1, min(n_groups, n_runs))
    for r in prange(n_runs):
        agree = np.zeros(n_users)
        known = np.zeros((n_users + 63) // 64, dtype=np.uint64)
        own = np.full(n_items, np.nan)
        cand = np.empty(most, dtype=np.int64)
        key = np.empty(most)
        for g in range(r * n_groups // n_runs, (r + 1) * n_groups // n_runs):
            g0, g1 = group_ptr[g], group_ptr[g + 1]
            if g1 == g0:
                continue
            u = pair_users[g0]
            trained = u < len(indptr) - 1
            if trained:
                for a in range(indptr[u], indptr[u + 1]):
                    m = items[a]
                    own[m] = ratings[a]
                    for b in range(item_indptr[m], item_indptr[m + 1]):
                        v = item_users[b]
                        if v != u:
                            agree[v] += 1.0 - abs(ratings[a] - item_ratings[b]) / r_range
                            known[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
            for q in range(g0, g1):
                _pair_row(u, pair_items[q], K, agree, known, own, item_indptr, positions, item_users, item_ratings, prefs,
                          r_range, out[q], cand, key)
            if trained:
                for a in range(indptr[u], indptr[u + 1]):
                    m = items[a]
                    own[m] = np.nan
                    for b in range(item_indptr[m], item_indptr[m + 1]):
                        v = item_users[b]
                        agree[v] = 0.0
                        known[v >> 6] = np.uint64(0)


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
             1, indptr, items, ratings, item_indptr, positions, users[positions], ratings[positions], prefs, 4.0, 2, 2,
             2, out)
