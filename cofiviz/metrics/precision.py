"""Binary-relevance metrics: average precision (AP, AP@k), precision at k (P@k) and reciprocal rank.

A candidate is *relevant* when its true rating is ``>= threshold`` (default 4; GAPfm §5.1 uses 5 for
P@5, the highest MovieLens rating). LCR (Lee et al., WWW 2014, §5.1) defines AP as the area under
the precision-recall curve, the mean of the precision at each relevant position; GAPfm (Shi et al.,
CIKM 2013, §5.1) reports P@5. Positions come from the pessimistic tie rule (see :mod:`cofiviz.metrics`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._validation import check_k, check_list, check_real
from .family import Family, cut
from .ranking import block_bounds, ranked

__all__ = ["average_precision", "precision_at_k", "mrr"]


@njit(cache=True)
def _ap_user(yr, k, threshold):
    """AP (k <= 0) or AP@k of one list from its ratings in ranked order; NaN without a relevant item.
    One pass without data-dependent branches."""
    n = yr.shape[0]
    kk = n if (k <= 0 or k > n) else k
    hits = 0.0
    total = 0.0
    for p in range(n):
        rel = 1.0 if yr[p] >= threshold else 0.0
        hits += rel
        if p < kk:
            total += rel * hits / (p + 1.0)
    if hits == 0.0:
        return np.nan
    if k <= 0:
        return total / hits
    return total / min(k, hits)


@njit(cache=True)
def _precision_user(yr, k, threshold):
    """P@k = (relevant among the first min(k, n)) / k; NaN for an empty list."""
    n = yr.shape[0]
    if n == 0:
        return np.nan
    kk = min(k, n)
    hits = 0
    for p in range(kk):
        if yr[p] >= threshold:
            hits += 1
    return hits / k


@njit(cache=True)
def _rr_user(yr, threshold):
    """1 / position of the first relevant candidate; NaN without a relevant item."""
    for p in range(yr.shape[0]):
        if yr[p] >= threshold:
            return 1.0 / (p + 1.0)
    return np.nan


def _one(ratings, scores):
    y, s = check_list(ratings, scores)
    return ranked(y, s)[0] if y.shape[0] else y


def average_precision(ratings, scores, threshold=4, k=None) -> float:
    """Average precision (optionally AP@k) of one candidate list, binary relevance ``rating >= threshold``.

    .. math::

        \\mathrm{AP} = \\frac{1}{|\\mathcal R|} \\sum_{p:\\, y_{(p)} \\ge t} \\mathrm{P@}p, \\qquad
        \\mathrm{AP@k} = \\frac{1}{\\min(k, |\\mathcal R|)} \\sum_{p \\le k:\\, y_{(p)} \\ge t} \\mathrm{P@}p

    where :math:`\\mathcal R` is the set of relevant candidates and P@p the fraction of relevant
    candidates among the first ``p``. Source: LCR (§5.1: area under the precision-recall
    curve); the AP@k normalisation ``min(k, |R|)`` makes a perfect top-k score 1.

    Parameters
    ----------
    ratings : array_like, shape (n,)
        True ratings, >= 0 (0 = unrated, irrelevant).
    scores : array_like, shape (n,)
        Predicted scores, higher = earlier; no NaN; ties broken pessimistically.
    threshold : float, default 4
        A candidate is relevant when its rating is ``>= threshold`` (must be > 0).
    k : int or None, default None
        Optional cutoff; ``None`` = the whole list.

    Returns
    -------
    float
        In [0, 1]; NaN when the list is skipped: it has no relevant candidate (AP is undefined).

    Examples
    --------
    >>> average_precision([5, 0, 4], [0.9, 0.5, 0.1])  # relevant at positions 1 and 3
    0.8333333333333333
    """
    kk = check_k(k)
    t = check_real(threshold, "threshold", positive=True)
    yr = _one(ratings, scores)
    if yr.shape[0] == 0:
        return float("nan")
    return float(_ap_user(yr, kk, t))


def precision_at_k(ratings, scores, k=5, threshold=4) -> float:
    """Precision at ``k``: relevant candidates (rating >= threshold) among the first ``k``, divided by ``k``.

    .. math:: \\mathrm{P@k} = \\frac{1}{k} \\sum_{p=1}^{\\min(k, n)} \\mathbb I(y_{(p)} \\ge t)

    Source: GAPfm (§5.1), which reports P@5 with threshold 5. The divisor is always ``k``
    (as in trec_eval), so a list shorter than ``k`` cannot reach 1.

    Parameters
    ----------
    ratings, scores : array_like, shape (n,)
        True ratings (>= 0) and predicted scores (no NaN; ties broken pessimistically).
    k : int, default 5
        Cutoff (positive integer; required).
    threshold : float, default 4
        Relevance threshold (> 0).

    Returns
    -------
    float
        In [0, 1]. Defined for every list with at least one candidate, including lists without any
        relevant candidate (P@k = 0); NaN only for an empty list.
    """
    kk = check_k(k, allow_none=False)
    t = check_real(threshold, "threshold", positive=True)
    yr = _one(ratings, scores)
    if yr.shape[0] == 0:
        return float("nan")
    return float(_precision_user(yr, kk, t))


def mrr(ratings, scores, threshold=4) -> float:
    """Reciprocal rank of the first relevant candidate (rating >= threshold) of one list.

    .. math:: \\mathrm{RR} = 1 / \\min\\{p : y_{(p)} \\ge t\\}

    Averaged over users this is the mean reciprocal rank (MRR).

    Parameters
    ----------
    ratings, scores : array_like, shape (n,)
        True ratings (>= 0) and predicted scores (no NaN; ties broken pessimistically).
    threshold : float, default 4
        Relevance threshold (> 0).

    Returns
    -------
    float
        In (0, 1]; NaN when the list is skipped: it has no relevant candidate.
    """
    t = check_real(threshold, "threshold", positive=True)
    yr = _one(ratings, scores)
    if yr.shape[0] == 0:
        return float("nan")
    return float(_rr_user(yr, t))


# ---------------------------------------------------------------------------------------------- batch
@njit(parallel=True, cache=True, nogil=True)
def _ap_lists(offsets, ranked_, ideal, gmax, k, n_blocks, threshold, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _ap_user(ranked_[lo:lo + n], k, threshold)


@njit(parallel=True, cache=True, nogil=True)
def _precision_lists(offsets, ranked_, ideal, gmax, k, n_blocks, threshold, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _precision_user(ranked_[lo:lo + n], k, threshold)


@njit(parallel=True, cache=True, nogil=True)
def _rr_lists(offsets, ranked_, ideal, gmax, k, n_blocks, threshold, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _rr_user(ranked_[lo:lo + n], threshold)


def ap_terms(yr: np.ndarray, yi: np.ndarray, k: int, options) -> tuple[np.ndarray, dict]:
    """AP's (AP@k's) term of each position: ``rel_p · P@p / m`` for p <= k, with ``m`` the number of relevant
    candidates (``min(k, m)`` for AP@k); all NaN without a relevant one. ``parts``: ``relevant`` (bool per
    position), ``precision`` (P@p at each position), ``n_relevant``, ``norm`` (m or min(k, m))."""
    n = yr.shape[0]
    kk = cut(n, k)
    rel = yr >= options.threshold
    precision = np.cumsum(rel) / np.arange(1.0, n + 1.0)
    m = int(rel.sum())
    norm = m if k <= 0 else min(k, m)
    terms = np.where(rel & (np.arange(n) < kk), precision, 0.0) / norm if m else np.full(n, np.nan)
    return terms, {"relevant": rel, "precision": precision, "n_relevant": m, "norm": norm}


def precision_terms(yr: np.ndarray, yi: np.ndarray, k: int, options) -> tuple[np.ndarray, dict]:
    """P@k's term of each position: ``1 / k`` for a relevant candidate among the first k, else 0; NaN for an empty
    list. ``parts``: ``relevant``, ``hits`` (relevant among the first k)."""
    rel = yr >= options.threshold
    terms = np.where(rel & (np.arange(yr.shape[0]) < k), 1.0 / k, 0.0)
    return terms, {"relevant": rel, "hits": int(np.sum(rel[:k]))}


def rr_terms(yr: np.ndarray, yi: np.ndarray, k: int, options) -> tuple[np.ndarray, dict]:
    """The reciprocal rank's terms: ``1 / p`` at the first relevant position, 0 elsewhere; all NaN without a
    relevant candidate. ``parts``: ``first`` (that position, 1-based; 0 when none)."""
    n = yr.shape[0]
    rel = yr >= options.threshold
    if not rel.any():
        return np.full(n, np.nan), {"first": 0}
    first = int(np.argmax(rel))
    terms = np.zeros(n)
    terms[first] = 1.0 / (first + 1.0)
    return terms, {"first": first + 1}


def _threshold(bt, o):
    return (o.threshold,)


AP = Family("ap", "optional", _ap_lists, _threshold, warm=lambda y, s: average_precision(y, s),
            summary="average precision, relevant = rating >= threshold (LCR §5.1)", terms=ap_terms)
PRECISION = Family("p", "required", _precision_lists, _threshold, warm=lambda y, s: precision_at_k(y, s, k=2),
                   summary="precision at K, relevant = rating >= threshold (GAPfm §5.1)", terms=precision_terms)
MRR = Family("mrr", "none", _rr_lists, _threshold, warm=lambda y, s: mrr(y, s),
             summary="reciprocal rank of the first relevant item", terms=rr_terms)
