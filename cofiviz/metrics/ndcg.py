"""NDCG@k (CofiRank, Weimer et al. 2007/2008, §2 "Ranking and NDCG").

.. math::

    \\mathrm{DCG@k} = \\sum_{p=1}^{\\min(k, n)} \\frac{2^{y_{(p)}} - 1}{\\log_2(1 + p)}, \\qquad
    \\mathrm{NDCG@k} = \\frac{\\mathrm{DCG@k}}{\\mathrm{DCG@k}(\\text{ideal})}

where :math:`y_{(p)}` is the true rating of the candidate ranked at position ``p`` (positions from 1,
ties in the scores broken pessimistically, see :mod:`cofiviz.metrics`) and the ideal DCG uses the
true ratings of the *same candidate list* sorted descending. The CofiRank copies print the discount
as ``log(i+2)`` (0-based) in one and ``log(i+1)`` in the other; this standard 1-based form is the one
used everywhere in cofiviz.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..util import elementary
from ._validation import check_k, check_list
from .family import Family, cut
from .ranking import MAX_TABLE_GRADE, block_bounds, ranked

__all__ = ["ndcg"]


def discounts(n: int) -> np.ndarray:
    """``1 / log2(1 + p)`` for positions p = 1..n."""
    return 1.0 / elementary.log2(np.arange(2, n + 2, dtype=np.float64))


#: ``2^g - 1`` for the integer grades g = 0..MAX_TABLE_GRADE (looked up instead of computed).
GAINS = 2.0 ** np.arange(MAX_TABLE_GRADE + 1, dtype=np.float64) - 1.0


@njit(cache=True)
def _ndcg_user(yr, yi, k, disc, gain, gmax):
    """NDCG@k of one list from its ratings in ranked (``yr``) and ideal (``yi``) order; k <= 0 means
    the whole list. ``disc`` = :func:`discounts`; ``gain`` = :data:`GAINS`, looked up when the list's
    ratings are integers <= gmax (gmax >= 0), else 2^r - 1 is computed. NaN when the ideal DCG is 0
    (no rating above 0) or the list is empty."""
    n = yr.shape[0]
    kk = n if (k <= 0 or k > n) else k
    dcg = 0.0
    idcg = 0.0
    if gmax >= 0:
        for p in range(kk):
            w = disc[p]
            dcg += gain[np.int64(yr[p])] * w
            idcg += gain[np.int64(yi[p])] * w
    else:
        for p in range(kk):
            w = disc[p]
            dcg += (2.0 ** yr[p] - 1.0) * w
            idcg += (2.0 ** yi[p] - 1.0) * w
    if idcg <= 0.0:
        return np.nan
    return dcg / idcg


def ndcg(ratings, scores, k=10) -> float:
    """Normalized discounted cumulative gain at ``k`` of one candidate list.

    .. math::

        \\mathrm{NDCG@k} = \\frac{\\sum_{p \\le k} (2^{y_{(p)}} - 1) / \\log_2(1 + p)}
                               {\\sum_{p \\le k} (2^{y^*_{(p)}} - 1) / \\log_2(1 + p)}

    with :math:`y_{(p)}` the true rating at predicted position ``p`` (from 1) and :math:`y^*` the same
    ratings sorted descending (the ideal order of this candidate list). Source: CofiRank (Weimer et
    al., NIPS 2007, §2); gain ``2^r - 1`` and the standard discount ``1/log2(1 + p)``.

    Parameters
    ----------
    ratings : array_like, shape (n,)
        True graded relevance of each candidate, >= 0 (0 = unrated, irrelevant).
    scores : array_like, shape (n,)
        Predicted scores, higher = ranked earlier; no NaN. Ties are broken pessimistically (lower true
        rating first), so a tie never raises the score.
    k : int or None, default 10
        Cutoff. ``None`` means the whole list; a ``k`` larger than the list uses the whole list.

    Returns
    -------
    float
        NDCG@k in [0, 1], or NaN when the list is skipped: the list is empty or has no rating above 0
        (its ideal DCG is 0, so NDCG is undefined).

    Raises
    ------
    DataError
        Lengths differ, NaN scores, non-finite or negative ratings.
    ParameterError
        ``k`` is not a positive integer or None.

    Examples
    --------
    >>> round(ndcg([3, 2, 0], [0.9, 0.5, 0.1], k=10), 6)
    1.0
    """
    kk = check_k(k)
    y, s = check_list(ratings, scores)
    if y.shape[0] == 0:
        return float("nan")
    yr, yi, _, gmax = ranked(y, s)
    return float(_ndcg_user(yr, yi, kk, discounts(y.shape[0]), GAINS, gmax))


# ---------------------------------------------------------------------------------------------- batch
@njit(parallel=True, cache=True, nogil=True)
def _ndcg_lists(offsets, ranked_, ideal, gmax, k, n_blocks, disc, gain, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _ndcg_user(ranked_[lo:lo + n], ideal[lo:lo + n], k, disc, gain, gmax[u])


def ndcg_terms(yr: np.ndarray, yi: np.ndarray, k: int, options=None) -> tuple[np.ndarray, dict]:
    """NDCG@k's term of each position: ``(2^y_p - 1) / log2(1 + p) / IDCG`` for p <= k, 0 below; all NaN when
    IDCG is 0. ``parts``: ``dcg_terms`` (the terms before dividing), ``dcg``, ``idcg``, ``k`` (the cutoff used)."""
    n = yr.shape[0]
    kk = cut(n, k)
    disc = discounts(max(n, 1))[:n]
    dcg_terms = np.where(np.arange(n) < kk, (2.0 ** yr - 1.0) * disc, 0.0)
    idcg = float(np.sum((2.0 ** yi[:kk] - 1.0) * disc[:kk]))
    terms = dcg_terms / idcg if idcg > 0.0 else np.full(n, np.nan)
    return terms, {"dcg_terms": dcg_terms, "dcg": float(dcg_terms.sum()), "idcg": idcg, "k": kk}


NDCG = Family("ndcg", "optional", _ndcg_lists, lambda bt, o: (discounts(max(bt.max_len, 1)), GAINS),
              needs_ideal=True, warm=lambda y, s: ndcg(y, s, k=3),
              summary="normalised discounted cumulative gain, gain 2^r - 1 (CofiRank §2)", terms=ndcg_terms)
