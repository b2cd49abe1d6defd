"""Expected reciprocal rank, ERR and ERR@k (Chapelle, Metzler, Zhang and Grinspan, CIKM 2009, §4, eq. 4).

The cascade model: a user reads the list from the top and stops at position ``p`` with probability
:math:`R_{(p)}`, the *satisfaction probability* of the item there, a function of its grade,

.. math::

    R(g) = \\frac{2^{g} - 1}{2^{y_{\\max}}}, \\qquad
    \\mathrm{ERR@k} = \\sum_{p=1}^{\\min(k, n)} \\frac{1}{p}\\, R_{(p)} \\prod_{i=1}^{p-1} \\bigl(1 - R_{(i)}\\bigr),

the expected reciprocal of the position where the user stops. Like AP and GAP it is a cascade metric: an
item's term shrinks with every relevant item ranked above it. GAPfm (Shi et al., CIKM 2013, §2) cites it
among the graded-relevance metrics. ERR is not normalised: a list whose best item has grade ``g`` scores at
most about :math:`R(g)`; with no rating above 0 it is 0. Positions follow the pessimistic tie rule of
:mod:`cofiviz.metrics`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..util.errors import DataError
from ._validation import check_k, check_list, check_real
from .family import Family, cut
from .ranking import block_bounds, ranked

__all__ = ["err", "satisfaction"]


@njit(cache=True)
def _err_user(yr, k, top):
    """ERR@k (k <= 0: the whole list) of one list from its ratings in ranked order, grades at most ``top``.
    ``R = 2^(g - top) - 2^(-top)`` is ``(2^g - 1) / 2^top`` without overflowing for large grades."""
    n = yr.shape[0]
    kk = n if (k <= 0 or k > n) else k
    reach = 1.0
    total = 0.0
    floor = 2.0 ** (-top)
    for p in range(kk):
        r = 2.0 ** (yr[p] - top) - floor
        total += reach * r / (p + 1.0)
        reach *= 1.0 - r
    return total


def satisfaction(grades, ymax) -> np.ndarray:
    """The satisfaction probabilities :math:`R(g) = (2^g - 1) / 2^{y_{\\max}}` of ``grades`` (in [0, 1))."""
    g = np.asarray(grades, dtype=np.float64)
    return 2.0 ** (g - ymax) - 2.0 ** (-float(ymax))


def resolve_top(ratings: np.ndarray, ymax) -> float:
    """ERR's highest grade: ``ymax`` as given (a positive real, at least every rating), else the largest
    rating (at least 1)."""
    if ymax is None:
        return max(1.0, float(ratings.max())) if ratings.size else 1.0
    top = check_real(ymax, "ymax", positive=True)
    if ratings.size and ratings.max() > top:
        i = int(np.argmax(ratings))
        raise DataError(f"ratings must be at most ymax={top:g} for err (gain (2^g - 1) / 2^ymax), got "
                        f"{ratings[i]:g} at index {i}")
    return top


def err(ratings, scores, k=None, ymax=None) -> float:
    """Expected reciprocal rank (ERR, optionally ERR@k) of one candidate list.

    .. math::

        \\mathrm{ERR@k} = \\sum_{p=1}^{\\min(k, n)} \\frac{1}{p}\\, R_{(p)} \\prod_{i<p} (1 - R_{(i)}),
        \\qquad R(g) = \\frac{2^{g} - 1}{2^{y_{\\max}}}

    Source: Chapelle et al., "Expected reciprocal rank for graded relevance", CIKM 2009, eq. 4 with the
    gain of its §4 (GAPfm's reference [6], cited in its §1).

    Parameters
    ----------
    ratings : array_like, shape (n,)
        True graded relevance, finite and >= 0 (0 = unrated: never satisfies).
    scores : array_like, shape (n,)
        Predicted scores, higher = earlier; no NaN; ties broken pessimistically.
    k : int or None, default None
        Optional cutoff; ``None`` = the whole list.
    ymax : float or None, default None
        The highest grade of the scale (5 on MovieLens); ``None`` takes the largest rating of the list (at
        least 1). Every rating must be at most ``ymax``.

    Returns
    -------
    float
        In [0, 1); 0 when no rating is above 0; NaN only for an empty list.

    Raises
    ------
    DataError
        Bad lists, or a rating above ``ymax``.

    Examples
    --------
    >>> err([2, 0, 1], [0.9, 0.5, 0.1], ymax=2)  # 3/4 + 0 + (1/3)(1/4)(1/4)
    0.7708333333333334
    """
    kk = check_k(k)
    y, s = check_list(ratings, scores)
    if y.shape[0] == 0:
        return float("nan")
    top = resolve_top(y, ymax)
    return float(_err_user(ranked(y, s)[0], kk, top))


# ---------------------------------------------------------------------------------------------- batch
@njit(parallel=True, cache=True, nogil=True)
def _err_lists(offsets, ranked_, ideal, gmax, k, n_blocks, top, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _err_user(ranked_[lo:lo + n], k, top)


def err_terms(yr: np.ndarray, yi: np.ndarray, k: int, options) -> tuple[np.ndarray, dict]:
    """ERR's term of each position: ``reach_p · R(y_p) / p`` for p <= k, with ``R`` = :func:`satisfaction` and
    ``reach_p = Π_{i<p} (1 - R(y_i))`` the chance the user reads on to position p. ``parts``: ``satisfaction``,
    ``reach``, ``top`` (the grade ``R`` is taken against)."""
    n = yr.shape[0]
    kk = cut(n, k)
    top = resolve_top(yr, options.ymax)
    r = 2.0 ** (yr - top) - 2.0 ** (-top)
    reach = np.concatenate([[1.0], np.cumprod(1.0 - r)[:-1]]) if n else np.zeros(0)
    terms = np.where(np.arange(n) < kk, reach * r / np.arange(1.0, n + 1.0), 0.0)
    return terms, {"satisfaction": r, "reach": reach, "top": top}


def _top(bt, o):
    """A non-finite rating gives no top: ranking the lists reports it by index and user."""
    return (resolve_top(bt.ratings, o.ymax) if np.isfinite(bt.ratings).all() else 1.0,)


ERR = Family("err", "optional", _err_lists, _top, warm=lambda y, s: err(y, s, k=3),
             summary="expected reciprocal rank (Chapelle et al. 2009, eq 4)", terms=err_terms)
