"""Graded Average Precision (GAP, GAP@k) and graded precision / recall GP@n, GR@n.

Source: GAPfm (Shi, Karatzoglou, Baltrunas, Larson, Hanjalic; CIKM 2013), eqs 2-5 after Robertson
et al.'s GAP, and appendix D for GP@n / GR@n. Grades are integers ``0..ymax``; grade 0 means unrated
(``I_i = 0``: the candidate takes a place in the ranking but never counts as relevant).

Thresholding probabilities (eq 5) and their cumulative sums::

    delta_l = (2^l - 1) / 2^ymax   (ymax > 1),   delta_1 = 1   (ymax = 1)
    S(y)    = sum_{l <= y} delta_l,  S(0) = 0

GAP (eqs 2-4), with ``R_i`` the predicted position (1-based, pessimistic tie rule) and
``beta_ij = S(min(y_i, y_j))``::

    GAP = 1/Z * sum_i I_i / R_i * sum_{j: R_j <= R_i} I_j * beta_ij,     Z = sum_l n_l S(l)   (eq 3)

A perfect ranking (grades descending) scores exactly 1. The kernels compute it in O(n * ymax) per
list by keeping, for every grade g, the sum over the candidates ranked so far of S(min(g, y_j)).

``ymax`` only validates the grades: every delta_l carries the same factor 1 / 2^ymax (also for
ymax = 1, where delta_1 = 1 = 2 * (2^1 - 1) / 2^1), and GAP, GP@n and GR@n are ratios of sums of
deltas, so they do not depend on ymax. The kernels therefore use the unscaled delta_l = 2^l - 1 for
every ymax; multiplying by a power of two is exact in floating point, so the results are the same to
the last bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._validation import MAX_GAP_GRADE, check_grades, check_k, check_list, check_ymax
from .family import Family, cut
from .ranking import block_bounds, ranked

__all__ = ["gap", "graded_precision", "graded_recall", "thresholding_probabilities"]


def thresholding_probabilities(ymax: int) -> np.ndarray:
    """GAPfm eq 5: ``delta[l - 1]`` for grades l = 1..ymax (``[1.0]`` when ymax = 1).

    Raises
    ------
    ParameterError
        ``ymax`` is not a whole number from 1 to the highest grade the metric's kernels take.
    """
    return grade_deltas(check_ymax(ymax))


def grade_deltas(ymax: int) -> np.ndarray:
    """GAPfm eq 5 (§3) for any whole ``ymax >= 1``, unchecked: ``δ_l = (2^l − 1) / 2^ymax``, l = 1..ymax.

    ``[1.0]`` when ymax = 1 (a single grade is relevant with certainty). The GAP metric
    (:func:`thresholding_probabilities`) and GAPfm's loss (:mod:`cofiviz.losses.smoothed_gap`) both read it.
    """
    if ymax == 1:
        return np.ones(1)
    l = np.arange(1, ymax + 1, dtype=np.float64)
    return (2.0 ** l - 1.0) / 2.0 ** ymax


#: Unscaled S(y) = sum_{l <= y} (2^l - 1) for y = 0..MAX_GAP_GRADE (exact integers in float64).
S_TABLE = np.concatenate([[0.0], np.cumsum(2.0 ** np.arange(1, MAX_GAP_GRADE + 1) - 1.0)])
#: ``T_TABLE[g0 * 8 + g] = S(min(g, g0))`` for g, g0 <= 7: one row is added per ranked candidate.
T_TABLE = S_TABLE[np.minimum.outer(np.arange(8), np.arange(8))].ravel()


@njit(cache=True)
def _gap_user(yr, yi, k, S, T, inner, gmax):
    """GAP (k <= 0) or GAP@k of one list from its grades in ranked (``yr``) and ideal (``yi``, used
    only when k > 0) order. ``S`` = :data:`S_TABLE`, ``T`` = :data:`T_TABLE`, ``inner`` float64
    scratch of length >= 8, ``gmax`` the list's largest grade when <= MAX_TABLE_GRADE (else -1).
    NaN without a rated item.

    ``inner[g]`` holds the sum over the rated candidates ranked so far of S(min(g, y_j)); each
    candidate adds row ``y`` of the table S(min(g, y)) to it (an unrated one adds S(0) = 0), so the
    candidate at position p contributes ``inner[y_p] / p``: O(ymax) per candidate without
    data-dependent branches, a fixed 8-wide vector update when all grades are <= 7.
    """
    n = yr.shape[0]
    kk = n if (k <= 0 or k > n) else k
    z = 0.0
    total = 0.0
    if 0 <= gmax <= 7:
        for g in range(8):
            inner[g] = 0.0
        for p in range(kk):
            g0 = np.int64(yr[p])
            z += S[g0]
            base = g0 * 8
            for g in range(8):
                inner[g] += T[base + g]
            total += inner[g0] / (p + 1.0)
    else:
        top = 0
        for p in range(n):
            top = max(top, np.int64(yr[p]))
        for g in range(top + 1):
            inner[g] = 0.0
        for p in range(kk):
            g0 = np.int64(yr[p])
            z += S[g0]
            for g in range(1, top + 1):
                inner[g] += S[min(g, g0)]
            total += inner[g0] / (p + 1.0)
    if kk == n:
        if z <= 0.0:
            return np.nan
        return total / z
    for p in range(kk, n):
        z += S[np.int64(yr[p])]
    if z <= 0.0:
        return np.nan
    ideal = 0.0
    for p in range(kk):
        ideal += S[np.int64(yi[p])]
    return total / ideal


@njit(cache=True)
def _cutoff_grade(yi, n):
    """c_n: grade of the n-th candidate in the ideal order, or of the last rated candidate when fewer
    than n are rated; 0 when none is rated."""
    m = yi.shape[0]
    c = 0
    for p in range(min(n, m)):
        g = np.int64(yi[p])
        if g == 0:
            break
        c = g
    return c


@njit(cache=True)
def _gp_user(yr, yi, n, S):
    """GP@n of one list; NaN without a rated item."""
    c = _cutoff_grade(yi, n)
    if c == 0:
        return np.nan
    sc = S[c]
    total = 0.0
    for p in range(min(n, yr.shape[0])):
        g = np.int64(yr[p])
        if g > 0:
            total += S[min(g, c)] / sc
    return total / n


@njit(cache=True)
def _gr_user(yr, n, S):
    """GR@n of one list; NaN without a rated item."""
    z = 0.0
    top = 0.0
    m = yr.shape[0]
    for p in range(m):
        v = S[np.int64(yr[p])]
        z += v
        if p < n:
            top += v
    if z <= 0.0:
        return np.nan
    return top / z


def _one(ratings, scores, ymax):
    ym = check_ymax(ymax)
    y, s = check_list(ratings, scores)
    check_grades(y, ym)
    if y.shape[0] == 0:
        return y, y, -1
    yr, yi, _, gmax = ranked(y, s)
    return yr, yi, gmax


def gap(ratings, scores, ymax=5, k=None) -> float:
    """Graded Average Precision of one candidate list (GAPfm eqs 2-5).

    .. math::

        \\mathrm{GAP} = \\frac{1}{Z} \\sum_i \\frac{I_i}{R_i} \\sum_{j:\\, R_j \\le R_i} I_j\\,
        \\beta_{ij}, \\quad \\beta_{ij} = \\sum_{l \\le \\min(y_i, y_j)} \\delta_l, \\quad
        Z = \\sum_{l=1}^{y_{max}} n_l \\sum_{k \\le l} \\delta_k

    with :math:`\\delta_l = (2^l - 1)/2^{y_{max}}` for :math:`y_{max} > 1` and :math:`\\delta_1 = 1`
    for :math:`y_{max} = 1` (eq 5), :math:`I_i = 1` when candidate ``i`` is rated (grade >= 1),
    :math:`R_i` its predicted position (pessimistic tie rule) and :math:`n_l` the number of candidates
    with grade ``l``. A perfect ranking scores exactly 1.

    **GAP@k** (``k`` given; GAPfm reports GAP@5 without defining it): the outer sum is restricted to
    :math:`R_i \\le k` and divided by the same sum for the ideal order (grades descending), which is
    :math:`\\sum` of :math:`S(y)` over the ``k`` highest grades; so a perfect top ``k`` scores 1.

    Parameters
    ----------
    ratings : array_like, shape (n,)
        Integer grades ``0..ymax`` (0 = unrated, irrelevant); integral floats are accepted.
    scores : array_like, shape (n,)
        Predicted scores, higher = earlier; no NaN.
    ymax : int, default 5
        Highest grade of the scale (at most 50): grades above it are rejected. It sets the common
        factor 1 / 2^ymax of the :math:`\\delta_l`, which cancels in the ratio, so the value of GAP
        does not depend on it.
    k : int or None, default None
        Optional cutoff (see GAP@k above).

    Returns
    -------
    float
        In [0, 1]; NaN when the list is skipped: no rated candidate (Z = 0, GAP undefined).

    Raises
    ------
    DataError
        Non-integer grades or grades above ``ymax`` (and the usual length / NaN checks).
    ParameterError
        ``ymax`` not a positive integer, ``k`` not a positive integer or None.

    Examples
    --------
    >>> gap([3, 1, 0], [0.9, 0.5, 0.1], ymax=5)
    1.0
    """
    kk = check_k(k)
    yr, yi, gmax = _one(ratings, scores, ymax)
    if yr.shape[0] == 0:
        return float("nan")
    return float(_gap_user(yr, yi, kk, S_TABLE, T_TABLE, np.empty(S_TABLE.shape[0] + 8), gmax))


def graded_precision(ratings, scores, n=5, ymax=5) -> float:
    """Graded precision GP@n of one candidate list (GAPfm appendix D).

    .. math::

        \\mathrm{GP@n} = \\frac{1}{n} \\sum_{i:\\, R_i \\le n} I_i\\, \\xi_i, \\qquad
        \\xi_i = \\frac{\\min(S(y_i), S(c_n))}{S(c_n)}, \\quad S(y) = \\sum_{l \\le y} \\delta_l

    where :math:`c_n` is the grade of the ``n``-th candidate in the ideal order (grades descending).
    When fewer than ``n`` candidates are rated, :math:`c_n` is the grade of the last rated one (the
    lowest rated grade), so that :math:`c_n \\ge 1` and the ratio is defined. The divisor is always
    ``n``: a list with fewer than ``n`` rated candidates cannot reach 1.

    Parameters
    ----------
    ratings : array_like, shape (m,)
        Integer grades ``0..ymax`` (0 = unrated).
    scores : array_like, shape (m,)
        Predicted scores; no NaN; ties broken pessimistically.
    n : int, default 5
        Cutoff (positive integer).
    ymax : int, default 5
        Highest grade (sets :math:`\\delta_l`).

    Returns
    -------
    float
        In [0, 1]; NaN when the list is skipped: no rated candidate (:math:`c_n` undefined).
    """
    nn = check_k(n, "n", allow_none=False)
    yr, yi, _ = _one(ratings, scores, ymax)
    if yr.shape[0] == 0:
        return float("nan")
    return float(_gp_user(yr, yi, nn, S_TABLE))


def graded_recall(ratings, scores, n=5, ymax=5) -> float:
    """Graded recall GR@n of one candidate list (GAPfm appendix D).

    .. math::

        \\mathrm{GR@n} = \\frac{1}{Z} \\sum_{i:\\, R_i \\le n} I_i\\, S(y_i), \\qquad
        Z = \\sum_i I_i\\, S(y_i)

    (the GAP normaliser of eq 3). Parameters as :func:`graded_precision`.

    Returns
    -------
    float
        In [0, 1]; NaN when the list is skipped: no rated candidate (Z = 0).
    """
    nn = check_k(n, "n", allow_none=False)
    yr, _, _ = _one(ratings, scores, ymax)
    if yr.shape[0] == 0:
        return float("nan")
    return float(_gr_user(yr, nn, S_TABLE))


# ---------------------------------------------------------------------------------------------- batch
@njit(parallel=True, cache=True, nogil=True)
def _gap_lists(offsets, ranked_, ideal, gmax, k, n_blocks, S, T, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        inner = np.empty(S.shape[0] + 8)
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _gap_user(ranked_[lo:lo + n], ideal[lo:lo + n], k, S, T, inner, gmax[u])


@njit(parallel=True, cache=True, nogil=True)
def _gp_lists(offsets, ranked_, ideal, gmax, k, n_blocks, S, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _gp_user(ranked_[lo:lo + n], ideal[lo:lo + n], k, S)


@njit(parallel=True, cache=True, nogil=True)
def _gr_lists(offsets, ranked_, ideal, gmax, k, n_blocks, S, out):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            out[u] = np.nan if n == 0 else _gr_user(ranked_[lo:lo + n], k, S)


def gap_terms(yr: np.ndarray, yi: np.ndarray, k: int, options=None) -> tuple[np.ndarray, dict]:
    """GAP's (GAP@k's) term of each position: ``(I_p / p) Σ_{q <= p} I_q S(min(y_p, y_q)) / Z`` for p <= k, with
    ``Z = Σ S(y)`` over the list (GAP) or over the ideal order's first k (GAP@k); all NaN without a rated
    candidate. ``S`` is :data:`S_TABLE` (unscaled: its factor cancels). ``parts``: ``inner`` (the sum over q at
    each position), ``z``, ``S``. Quadratic in the list's length (for showing a list, not for scoring many)."""
    n = yr.shape[0]
    kk = cut(n, k)
    g = yr.astype(np.int64)
    inner = np.tril(S_TABLE[np.minimum.outer(g, g)]).sum(axis=1)
    raw = np.where(np.arange(n) < kk, inner / np.arange(1.0, n + 1.0), 0.0)
    total = float(S_TABLE[g].sum())
    z = total if kk == n else float(S_TABLE[yi[:kk].astype(np.int64)].sum())
    terms = raw / z if total > 0.0 else np.full(n, np.nan)
    return terms, {"inner": inner, "z": z, "S": S_TABLE}


def gp_terms(yr: np.ndarray, yi: np.ndarray, k: int, options=None) -> tuple[np.ndarray, dict]:
    """GP@k's term of each position: ``S(min(y_p, c)) / S(c) / k`` for a rated candidate among the first k, with
    ``c`` the cutoff grade (the k-th grade of the ideal order, or its last rated one); all NaN without a rated
    candidate. ``parts``: ``cutoff_grade``."""
    n = yr.shape[0]
    ideal = yi.astype(np.int64)
    rated = ideal[:min(k, n)]
    rated = rated[:np.argmin(rated > 0)] if (rated == 0).any() else rated
    c = int(rated[-1]) if len(rated) else 0
    if c == 0:
        return np.full(n, np.nan), {"cutoff_grade": 0}
    g = yr.astype(np.int64)
    terms = np.where((np.arange(n) < k) & (g > 0), S_TABLE[np.minimum(g, c)] / S_TABLE[c] / k, 0.0)
    return terms, {"cutoff_grade": c}


def gr_terms(yr: np.ndarray, yi: np.ndarray, k: int, options=None) -> tuple[np.ndarray, dict]:
    """GR@k's term of each position: ``S(y_p) / Σ S(y)`` among the first k, 0 below; all NaN without a rated
    candidate. ``parts``: ``z`` (the sum over the list)."""
    n = yr.shape[0]
    v = S_TABLE[yr.astype(np.int64)]
    z = float(v.sum())
    terms = np.where(np.arange(n) < k, v / z, 0.0) if z > 0.0 else np.full(n, np.nan)
    return terms, {"z": z}


GAP = Family("gap", "optional", _gap_lists, lambda bt, o: (S_TABLE, T_TABLE), needs_ideal=True, graded=True,
             warm=lambda y, s: gap(y, s, ymax=5), summary="graded average precision (GAPfm eqs 2-5)", terms=gap_terms)
GP = Family("gp", "required", _gp_lists, lambda bt, o: (S_TABLE,), needs_ideal=True, graded=True,
            warm=lambda y, s: graded_precision(y, s, n=2, ymax=5), summary="graded precision at K (GAPfm appendix D)", terms=gp_terms)
GR = Family("gr", "required", _gr_lists, lambda bt, o: (S_TABLE,), graded=True,
            warm=lambda y, s: graded_recall(y, s, n=2, ymax=5), summary="graded recall at K (GAPfm appendix D)", terms=gr_terms)
