"""Slow, obviously-correct reference implementations of cofiviz's metrics, written straight from the
papers' formulas with plain Python loops. The tests hold the numba kernels to these.

The tie rule is implemented independently of the kernels: Python's ``sorted`` on the key
``(-score, true rating, position)``: score descending, then the lower true rating first, then the
lower candidate position.
"""

from __future__ import annotations

import math

import numpy as np

NAN = float("nan")


def ranked_order(ratings, scores):
    """Candidate indices in ranked order under the pessimistic tie rule."""
    r = [float(v) for v in ratings]
    s = [float(v) for v in scores]
    return sorted(range(len(r)), key=lambda i: (-s[i], r[i], i))


def positions(ratings, scores):
    """R_i: the 1-based predicted position of every candidate."""
    R = [0] * len(ratings)
    for p, i in enumerate(ranked_order(ratings, scores)):
        R[i] = p + 1
    return R


# ------------------------------------------------------------------------------------------ NDCG
def ndcg(ratings, scores, k=10):
    """sum_{p<=k} (2^y_(p) - 1) / log2(1 + p), divided by the same for the ratings sorted descending."""
    r = [float(v) for v in ratings]
    n = len(r)
    if n == 0:
        return NAN
    kk = n if k is None else min(k, n)
    order = ranked_order(r, scores)
    dcg = sum((2.0 ** r[order[p]] - 1.0) / math.log2(p + 2) for p in range(kk))
    ideal = sorted(r, reverse=True)
    idcg = sum((2.0 ** ideal[p] - 1.0) / math.log2(p + 2) for p in range(kk))
    return NAN if idcg == 0 else dcg / idcg


# -------------------------------------------------------------------------------- AP, P@k, RR
def average_precision(ratings, scores, threshold=4, k=None):
    """Mean over relevant positions of the precision at that position (AP@k: positions <= k, divided
    by min(k, number of relevant))."""
    r = [float(v) for v in ratings]
    order = ranked_order(r, scores)
    rel = [r[i] >= threshold for i in order]
    n_rel = sum(rel)
    if n_rel == 0:
        return NAN
    total = 0.0
    for p in range(len(rel)):
        if rel[p] and (k is None or p + 1 <= k):
            total += sum(rel[:p + 1]) / (p + 1)
    return total / (n_rel if k is None else min(k, n_rel))


def precision_at_k(ratings, scores, k=5, threshold=4):
    r = [float(v) for v in ratings]
    if not r:
        return NAN
    order = ranked_order(r, scores)
    return sum(1 for i in order[:k] if r[i] >= threshold) / k


def mrr(ratings, scores, threshold=4):
    r = [float(v) for v in ratings]
    for p, i in enumerate(ranked_order(r, scores)):
        if r[i] >= threshold:
            return 1.0 / (p + 1)
    return NAN


# ------------------------------------------------------------------------------------------- GAP
def deltas(ymax):
    """GAPfm eq 5: {l: delta_l}."""
    if ymax == 1:
        return {1: 1.0}
    return {l: (2.0 ** l - 1.0) / 2.0 ** ymax for l in range(1, ymax + 1)}


def _sum_delta(y, ymax):
    d = deltas(ymax)
    return sum(d[l] for l in range(1, int(y) + 1))


def _gap_double_loop(y, R, ymax, k=None):
    """sum_i I_i / R_i sum_j I_j I(R_j <= R_i) (I(y_i < y_j) S(y_i) + I(y_j <= y_i) S(y_j)), eq 2
    without 1/Z, the outer sum restricted to R_i <= k when k is given."""
    n = len(y)
    total = 0.0
    for i in range(n):
        if y[i] <= 0 or (k is not None and R[i] > k):
            continue
        inner = 0.0
        for j in range(n):
            if y[j] > 0 and R[j] <= R[i]:
                if y[i] < y[j]:
                    inner += _sum_delta(y[i], ymax)
                else:
                    inner += _sum_delta(y[j], ymax)
        total += inner / R[i]
    return total


def gap(ratings, scores, ymax=5, k=None):
    """GAPfm eqs 2-5 by the double loop; GAP@k normalised by the same restricted sum of the ideal order."""
    y = [int(v) for v in ratings]
    n = len(y)
    d = deltas(ymax)
    Z = sum(sum(1 for v in y if v == l) * sum(d[q] for q in range(1, l + 1)) for l in range(1, ymax + 1))
    if Z == 0:
        return NAN
    R = positions(y, scores)
    if k is None:
        return _gap_double_loop(y, R, ymax) / Z
    ideal_order = sorted(range(n), key=lambda i: (-y[i], i))
    R_ideal = [0] * n
    for p, i in enumerate(ideal_order):
        R_ideal[i] = p + 1
    return _gap_double_loop(y, R, ymax, k) / _gap_double_loop(y, R_ideal, ymax, k)


def graded_precision(ratings, scores, n=5, ymax=5):
    """GAPfm appendix D: GP@n = 1/n sum_{R_i <= n} I_i xi_i, c_n = n-th grade of the ideal order (last
    rated grade when fewer than n are rated)."""
    y = [int(v) for v in ratings]
    rated = sorted((v for v in y if v > 0), reverse=True)
    if not rated:
        return NAN
    c = rated[n - 1] if len(rated) >= n else rated[-1]
    R = positions(y, scores)
    total = 0.0
    for i in range(len(y)):
        if y[i] > 0 and R[i] <= n:
            if y[i] < c:
                xi = _sum_delta(y[i], ymax) / _sum_delta(c, ymax)
            else:
                xi = _sum_delta(c, ymax) / _sum_delta(c, ymax)
            total += xi
    return total / n


def graded_recall(ratings, scores, n=5, ymax=5):
    """GAPfm appendix D: GR@n = 1/Z sum_{R_i <= n} I_i S(y_i)."""
    y = [int(v) for v in ratings]
    Z = sum(_sum_delta(v, ymax) for v in y if v > 0)
    if Z == 0:
        return NAN
    R = positions(y, scores)
    return sum(_sum_delta(y[i], ymax) for i in range(len(y)) if y[i] > 0 and R[i] <= n) / Z


# ------------------------------------------------------------------------------------------- ERU
def eru(ratings, scores, d=3, alpha=5, k=None):
    r = [float(v) for v in ratings]
    if not r:
        return NAN
    order = ranked_order(r, scores)
    kk = len(r) if k is None else min(k, len(r))
    return sum(max(r[order[p - 1]] - d, 0.0) / 2.0 ** ((p - 1) / (alpha - 1)) for p in range(1, kk + 1))


def neru(ratings, scores, d=3, alpha=5, k=None):
    r = [float(v) for v in ratings]
    if not r:
        return NAN
    ideal = eru(r, r, d, alpha, k)  # scores = ratings: the ideal order
    return NAN if ideal == 0 else eru(r, scores, d, alpha, k) / ideal


# -------------------------------------------------------------------------------------- zero-one
def zero_one(test_ratings, test_scores, train_ratings=(), train_scores=()):
    """Pairs (test, test) and (test, train) with different ratings; an error when the higher-rated
    item's score is not strictly higher."""
    items = [(float(r), float(s), True) for r, s in zip(test_ratings, test_scores)]
    items += [(float(r), float(s), False) for r, s in zip(train_ratings, train_scores)]
    wrong = compared = 0
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            ra, sa, ta = items[a]
            rb, sb, tb = items[b]
            if not (ta or tb) or ra == rb:
                continue
            compared += 1
            hi_s, lo_s = (sa, sb) if ra > rb else (sb, sa)
            if hi_s <= lo_s:
                wrong += 1
    return NAN if compared == 0 else wrong / compared


# ------------------------------------------------------------------------------------------ ERR
def err(ratings, scores, k=None, ymax=None):
    """Chapelle et al. 2009, eq. 4: the user stops at position p with probability R = (2^g - 1) / 2^ymax
    after passing every earlier one; ERR = sum_p (1/p) P(stop at p)."""
    r = [float(v) for v in ratings]
    if not r:
        return NAN
    top = max(1.0, max(r)) if ymax is None else float(ymax)
    order = ranked_order(r, scores)
    kk = len(r) if k is None else min(k, len(r))
    total = 0.0
    for p in range(kk):
        stop_here = (2.0 ** r[order[p]] - 1.0) / 2.0 ** top
        for q in range(p):
            stop_here *= 1.0 - (2.0 ** r[order[q]] - 1.0) / 2.0 ** top
        total += stop_here / (p + 1)
    return total


# ----------------------------------------------------------------------------------------- batch
def metric(name, ratings, scores, threshold=4, ymax=5, d=3, alpha=5):
    """One list, one metric name of cofiviz.metrics.METRIC_FORMS (e.g. "ndcg@10")."""
    name = name.lower()
    family, _, ktxt = name.partition("@")
    k = int(ktxt) if ktxt else None
    if family == "ndcg":
        return ndcg(ratings, scores, k)
    if family == "ap":
        return average_precision(ratings, scores, threshold, k)
    if family == "gap":
        return gap(ratings, scores, ymax, k)
    if family == "p":
        return precision_at_k(ratings, scores, k, threshold)
    if family == "mrr":
        return mrr(ratings, scores, threshold)
    if family == "eru":
        return eru(ratings, scores, d, alpha, k)
    if family == "neru":
        return neru(ratings, scores, d, alpha, k)
    if family == "gp":
        return graded_precision(ratings, scores, k, ymax)
    if family == "gr":
        return graded_recall(ratings, scores, k, ymax)
    if family == "err":
        return err(ratings, scores, k, ymax)
    raise ValueError(name)


def score_lists(offsets, ratings, scores, metrics, threshold=4, ymax=None, d=3, alpha=5):
    """Per-user loop over CSR lists: {metric name: array}."""
    ratings = np.asarray(ratings, dtype=float)
    if ymax is None:
        ymax = max(1, int(ratings.max())) if ratings.size else 1
    out = {}
    for name in metrics:
        vals = []
        for u in range(len(offsets) - 1):
            a, b = offsets[u], offsets[u + 1]
            if a == b:
                vals.append(NAN)
            else:
                vals.append(metric(name, ratings[a:b], scores[a:b], threshold, ymax, d, alpha))
        out[name.lower()] = np.array(vals, dtype=float)
    return out
