"""Expected Rank Utility (ERU) and its normalised form NERU.

Source: CofiRank's extended version (Weimer et al.), appendix A.4, Definition 3, after Breese, Heckerman
and Kadie (1998)::

    ERU(pi, y)  = sum_{p=1}^{min(k, n)} max(y_(p) - d, 0) / 2^((p - 1) / (alpha - 1))
    NERU(pi, y) = ERU(pi, y) / ERU(argsort(y), y)

``d`` is the "neutral" vote (ratings at or below it are worth nothing) and ``alpha`` the viewing
half-life: the candidate at position ``alpha`` has half the weight of the first one. ``y_(p)`` is the
true rating at predicted position ``p`` (pessimistic tie rule, see :mod:`cofiviz.metrics`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._validation import check_k, check_list, check_real
from .family import Family, cut
from .ranking import block_bounds, ranked

__all__ = ["eru", "neru"]


def eru_weights(n: int, alpha: float) -> np.ndarray:
    """``1 / 2^((p - 1) / (alpha - 1))`` for positions p = 1..n."""
    return 1.0 / 2.0 ** (np.arange(n, dtype=np.float64) / (alpha - 1.0))


@njit(cache=True)
def _eru_sum(y, kk, d, w):
    total = 0.0
    for p in range(kk):
        v = y[p] - d
        if v > 0.0:
            total += v * w[p]
    return total


@njit(cache=True)
def _eru_user(yr, k, d, w):
    """ERU (k <= 0: whole list) of one list from its ratings in ranked order; NaN if empty."""
    n = yr.shape[0]
    if n == 0:
        return np.nan
    kk = n if (k <= 0 or k > n) else k
    return _eru_sum(yr, kk, d, w)


@njit(cache=True)
def _neru_user(yr, yi, k, d, w):
    """NERU of one list; NaN when the ideal ERU is 0 (no rating above d) or the list is empty."""
    n = yr.shape[0]
    kk = n if (k <= 0 or k > n) else k
    ideal = _eru_sum(yi, kk, d, w)
    if ideal <= 0.0:
        return np.nan
    return _eru_sum(yr, kk, d, w) / ideal


def _params(k, d, alpha):
    return (check_k(k), check_real(d, "d"), check_real(alpha, "alpha", greater_than=1.0))


def eru(ratings, scores, d=3, alpha=5, k=None) -> float:
    """Expected rank utility of one candidate list (CofiRank appendix A.4, Breese et al. 1998).

    .. math::

        \\mathrm{ERU} = \\sum_{p=1}^{\\min(k, n)} \\frac{\\max(y_{(p)} - d,\\, 0)}{2^{(p-1)/(\\alpha-1)}}

    Parameters
    ----------
    ratings : array_like, shape (n,)
        True ratings (>= 0).
    scores : array_like, shape (n,)
        Predicted scores, higher = earlier; no NaN; ties broken pessimistically.
    d : float, default 3
        Neutral vote: ratings ``<= d`` contribute nothing.
    alpha : float, default 5
        Viewing half-life (> 1): position ``alpha`` weighs half of position 1.
    k : int or None, default None
        Optional cutoff; ``None`` = the whole list.

    Returns
    -------
    float
        ERU >= 0 (unnormalised, so not bounded by 1). Defined for every non-empty list (0 when no
        rating exceeds ``d``); NaN only for an empty list.
    """
    kk, dd, aa = _params(k, d, alpha)
    y, s = check_list(ratings, scores)
    if y.shape[0] == 0:
        return float("nan")
    yr = ranked(y, s)[0]
    return float(_eru_user(yr, kk, dd, eru_weights(y.shape[0], aa)))


def neru(ratings, scores, d=3, alpha=5, k=None) -> float:
    """Normalised expected rank utility: ERU of the predicted order over ERU of the ideal order.

    .. math:: \\mathrm{NERU} = \\mathrm{ERU}(\\pi, y) / \\mathrm{ERU}(\\mathrm{argsort}(y), y)

    (CofiRank appendix A.4, eq 18; the ideal order sorts the true ratings descending, with the same
    cutoff ``k``). Parameters as :func:`eru`.

    Returns
    -------
    float
        In [0, 1]; NaN when the list is skipped: it is empty or no rating exceeds ``d`` (the ideal ERU
        is 0).
    """
    kk, dd, aa = _params(k, d, alpha)
    y, s = check_list(ratings, scores)
    if y.shape[0] == 0:
        return float("nan")
    yr, yi = ranked(y, s)[:2]
    return float(_neru_user(yr, yi, kk, dd, eru_weights(y.shape[0], aa)))


# ---------------------------------------------------------------------------------------------- batch
@njit(parallel=True, cache=True, nogil=True)
def _eru_lists(offsets, ranked_, ideal, gmax, k, n_blocks, d, w, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _eru_user(ranked_[lo:lo + n], k, d, w)


@njit(parallel=True, cache=True, nogil=True)
def _neru_lists(offsets, ranked_, ideal, gmax, k, n_blocks, d, w, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _neru_user(ranked_[lo:lo + n], ideal[lo:lo + n], k, d, w)


def eru_terms(yr: np.ndarray, yi: np.ndarray, k: int, options) -> tuple[np.ndarray, dict]:
    """ERU's term of each position: ``max(y_p - d, 0) / 2^((p - 1) / (α - 1))`` for p <= k, 0 below; NaN for an
    empty list. ``parts``: ``weights`` (the position weights), ``k`` (the cutoff used)."""
    n = yr.shape[0]
    kk = cut(n, k)
    w = eru_weights(n, options.alpha)
    terms = np.where(np.arange(n) < kk, np.maximum(yr - options.d, 0.0) * w, 0.0)
    return terms, {"weights": w, "k": kk}


def neru_terms(yr: np.ndarray, yi: np.ndarray, k: int, options) -> tuple[np.ndarray, dict]:
    """NERU's term of each position: ERU's (:func:`eru_terms`) divided by the ideal order's ERU; all NaN when that
    is 0. ``parts``: those of :func:`eru_terms` and ``ideal``."""
    terms, parts = eru_terms(yr, yi, k, options)
    ideal, _ = eru_terms(yi, yi, k, options)
    ideal = float(ideal.sum())
    return (terms / ideal if ideal > 0.0 else np.full(len(terms), np.nan)), {**parts, "ideal": ideal}


def _weights(bt, o):
    return (o.d, eru_weights(max(bt.max_len, 1), o.alpha))


ERU = Family("eru", "optional", _eru_lists, _weights, warm=lambda y, s: eru(y, s),
             summary="expected rank utility (CofiRank appendix A.4)", terms=eru_terms)
NERU = Family("neru", "optional", _neru_lists, _weights, needs_ideal=True, warm=lambda y, s: neru(y, s),
              summary="normalised expected rank utility (CofiRank appendix A.4)", terms=neru_terms)
