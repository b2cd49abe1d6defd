"""The smoothed rank and the smoothed NDCG loss of a rated list (blog post "The rank 1 problem": "The loss functions").

"Ideally the loss function should be the error metric used in evaluation [...] these metrics are
non-smooth [...] A reasonable method is to approximate the rank by some smooth functions, for example
r̄_i = Σ_{j≠i} P(f(i) > f(j)) [with] P(f(i) > f(j)) = 1 / (1 + e^{−γ(f(i) − f(j))}) where γ > 0 is some
scale parameter."

With ``σ`` the logistic function, the smoothed number of items ranked below ``i`` and the smoothed
position of ``i`` (1 = first) in a list of ``M`` items are

    r̄_i = Σ_{j ≠ i} σ(γ(f_i − f_j)),       π̂_i = 1 + Σ_{j ≠ i} σ(γ(f_j − f_i)) = M − r̄_i.

As ``γ → ∞`` the position becomes the exact position (ties in the scores counting half). Putting
``π̂_i`` in place of the position in NDCG (cofiviz's gain ``2^y − 1`` and discount ``1 / log2(1 + p)``,
:mod:`cofiviz.metrics.ndcg`, over the whole list) gives the ApproxNDCG loss of Qin, Liu and Li:

    L(f, y) = 1 − (1 / IDCG) Σ_i (2^{y_i} − 1) / log2(1 + π̂_i)

where ``IDCG`` is the DCG of the list in the order of its ratings. Ties in the ratings need no rule:
tied items have the same gain and the ideal DCG is the same in every order of them.

Gradient. With ``D(π) = 1 / log2(1 + π)``, ``c_i = (2^{y_i} − 1) D'(π̂_i)`` (``D' = −ln 2 / ((1 + π) ln²(1 + π))``)
and ``s_ij = γ σ(γ(f_i − f_j)) σ(γ(f_j − f_i))`` (symmetric): ``∂π̂_i/∂f_j = s_ij`` for ``j ≠ i`` and
``∂π̂_i/∂f_i = −Σ_{j≠i} s_ij``, so

    ∂L/∂f_k = −(1 / IDCG) Σ_{i ≠ k} s_ik (c_i − c_k).

The gradient sums to zero (adding a constant to every score changes nothing). Both cost O(M²) per list
(every pair, twice); rated lists are a user's ratings, a few hundred at most.

Caveat (the blog post): "the main problem with this approximate loss is that it can be non-convex and
flat when the pairwise probability is close to 0 or 1 making optimisation not a straightforward
exercise." A large ``γ`` follows NDCG closely but its gradient vanishes for pairs whose score difference
is large against ``1/γ`` (``s_ij ≈ γ e^{−γ|f_i − f_j|}``), in the right order or the wrong one; a small
``γ`` is smoother but looser. :func:`smoothed_rank_pair_curve` draws it for a pair.

Sources: the blog post (the smoothed rank); T. Qin, T.-Y. Liu and H. Li, "A general approximation
framework for direct optimization of information retrieval measures", Information Retrieval 13(4),
375–397, 2010 (doi:10.1007/s10791-009-9124-x: the position approximation and the ApproxNDCG loss,
restated as eqs 4.10 and 4.11 of T.-Y. Liu, *Learning to Rank for Information Retrieval*, Springer 2011,
whose scale α is the γ here).

Layers: :func:`smoothed_rank_loss_grad` is the numba kernel of one list (the bilinear model calls it per
user with ``loss="smoothed_rank"``); :func:`smoothed_rank_loss` is its checked wrapper;
:func:`smoothed_positions` gives ``π̂`` (and ``r̄ = M − π̂``); :func:`smoothed_rank_pair_curve` the
loss of a two-item list against its score difference, for plots.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..util.errors import ParameterError
from .listwise import check_scored_list

__all__ = ["smoothed_rank_loss_grad", "smoothed_rank_loss", "smoothed_positions", "smoothed_rank_pair_curve",
           "check_gamma", "warmup"]

_LN2 = math.log(2.0)


def check_gamma(gamma, name: str = "gamma") -> float:
    """Validate the scale ``γ > 0`` of the smoothed rank.

    Raises
    ------
    ParameterError
        A value that is not a finite number above 0; the message names ``name``.
    """
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(gamma)) or not float(gamma) > 0.0:
        raise ParameterError(f"{name} (the smoothed rank's scale γ) must be a finite number > 0, got {gamma!r}")
    return float(gamma)


# ---------------------------------------------------------------------------------------------- numba
@njit(cache=True, nogil=True, inline="always")
def _sigmoid_pair(z):
    """``(σ(z), σ(−z), σ(z) σ(−z))`` from one exponential."""
    e = math.exp(-abs(z))
    d = 1.0 + e
    if z >= 0.0:
        return 1.0 / d, e / d, e / (d * d)
    return e / d, 1.0 / d, e / (d * d)


@njit(cache=True, nogil=True)
def positions_kernel(f, gamma, pos):
    """``pos[i] = π̂_i = 1 + Σ_{j≠i} σ(γ(f_j − f_i))``."""
    n = f.shape[0]
    for i in range(n):
        pos[i] = 1.0
    for i in range(n):
        for j in range(i + 1, n):
            p_ji, p_ij, _ = _sigmoid_pair(gamma * (f[j] - f[i]))   # σ(γ(f_j − f_i)), σ(γ(f_i − f_j))
            pos[i] += p_ji
            pos[j] += p_ij


@njit(cache=True, nogil=True)
def ideal_dcg(y):
    """DCG of the list in the order of its ratings, gain ``2^y − 1``, discount ``1 / log2(1 + p)``."""
    gains = np.sort(2.0 ** y - 1.0)[::-1]
    s = 0.0
    for p in range(gains.shape[0]):
        s += gains[p] * _LN2 / math.log(p + 2.0)
    return s


@njit(cache=True, nogil=True)
def smoothed_rank_loss_grad(f, y, gamma, grad):
    """ApproxNDCG loss ``1 − DCG(π̂)/IDCG`` of one list and its gradient (see the module documentation).

    Parameters
    ----------
    f : float64[n]
        Scores (higher: ranked earlier).
    y : float64[n]
        Ratings (≥ 0; gain ``2^y − 1``).
    gamma : float
        Scale γ > 0 of the pairwise sigmoid.
    grad : float64[n]
        Output, ``∂L/∂f``.

    Returns
    -------
    float
        ``L(f, y)``; 0 with a zero gradient when the ideal DCG is not positive (no gain to lose), or
        for an empty list.
    """
    n = f.shape[0]
    for k in range(n):
        grad[k] = 0.0
    if n == 0:
        return 0.0
    idcg = ideal_dcg(y)
    if not idcg > 0.0:
        return 0.0
    pos = np.empty(n)
    positions_kernel(f, gamma, pos)
    dcg = 0.0
    c = np.empty(n)
    for i in range(n):
        gain = 2.0 ** y[i] - 1.0
        lp = math.log1p(pos[i])
        dcg += gain * _LN2 / lp
        c[i] = -gain * _LN2 / ((1.0 + pos[i]) * lp * lp)
    scale = -1.0 / idcg
    for i in range(n):
        for j in range(i + 1, n):
            _, _, ss = _sigmoid_pair(gamma * (f[i] - f[j]))
            t = scale * gamma * ss * (c[j] - c[i])
            grad[i] += t
            grad[j] -= t
    return 1.0 - dcg / idcg


# ---------------------------------------------------------------------------------------------- NumPy
def _check_ratings(y: np.ndarray) -> None:
    if np.any(y < 0):
        raise ParameterError("ratings must be >= 0 for the smoothed NDCG loss (its gain 2^y - 1 is negative below 0)")


def smoothed_rank_loss(scores, ratings, gamma: float = 1.0) -> tuple[float, np.ndarray]:
    """``(L, ∂L/∂f)``: the smoothed-rank NDCG loss (ApproxNDCG; Qin, Liu & Li 2010) of one rated list.

    ``L = 1 − (1/IDCG) Σ_i (2^{y_i} − 1) / log2(1 + π̂_i)`` with the smoothed position
    ``π̂_i = 1 + Σ_{j≠i} σ(γ(f_j − f_i))`` of "The rank 1 problem". Non-convex, and flat where the pairwise
    probabilities saturate (module documentation).

    Parameters
    ----------
    scores : array_like
        Predicted scores ``f`` of the list's items.
    ratings : array_like
        Their ratings, ``>= 0``; equal ratings need no rule.
    gamma : float
        Scale γ > 0: larger follows the exact NDCG more closely and is flatter away from ties.

    Returns
    -------
    (float, numpy.ndarray)
        The loss (0 when no rating is above 0) and its gradient in ``scores``.

    Raises
    ------
    ParameterError
        Shapes that differ, non-finite values, negative ratings, or ``gamma`` not > 0.
    """
    g = check_gamma(gamma)
    f, y = check_scored_list(scores, ratings)
    _check_ratings(y)
    grad = np.empty_like(f)
    return float(smoothed_rank_loss_grad(f, y, g, grad)), grad


def smoothed_positions(scores, gamma: float = 1.0) -> np.ndarray:
    """The smoothed positions ``π̂_i = 1 + Σ_{j≠i} σ(γ(f_j − f_i))`` (1 = first); the blog post's smoothed
    rank, the number of items below, is ``r̄ = M − π̂``.

    Raises
    ------
    ParameterError
        Non-finite scores or ``gamma`` not > 0.
    """
    g = check_gamma(gamma)
    f, _ = check_scored_list(scores, np.zeros(np.size(scores)))
    pos = np.empty_like(f)
    positions_kernel(f, g, pos)
    return pos


def smoothed_rank_pair_curve(delta, gamma: float = 1.0, ratings=(1.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """``(smoothed loss, exact 1 − NDCG)`` of a two-item list against its score difference.

    The list has ratings ``ratings = (y_a, y_b)`` and scores ``(Δ, 0)``, ``Δ = f_a − f_b``. The exact loss
    is 0 when the better-rated item is ahead and ``1 − NDCG`` of the swapped order otherwise (a tie in
    the scores is broken pessimistically, as :mod:`cofiviz.metrics` does).

    Raises
    ------
    ParameterError
        Non-finite ``delta``, ``gamma`` not > 0, or ratings that are not two numbers >= 0 with one above 0.
    """
    g = check_gamma(gamma)
    try:
        d = np.asarray(delta, dtype=np.float64)
        y = np.asarray(ratings, dtype=np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"delta and ratings must be numbers: {exc}") from None
    if not np.all(np.isfinite(d)):
        raise ParameterError("delta must be finite")
    if y.shape != (2,) or not np.all(np.isfinite(y)) or np.any(y < 0) or not np.any(y > 0):
        raise ParameterError(f"ratings must be two numbers >= 0, one of them above 0, got {ratings!r}")
    flat = d.ravel()
    smooth = np.empty_like(flat)
    grad = np.empty(2)
    for k, x in enumerate(flat):
        smooth[k] = smoothed_rank_loss_grad(np.array([x, 0.0]), y, g, grad)
    gains = 2.0 ** y - 1.0
    idcg = ideal_dcg(y)
    swapped = 1.0 - (gains[1] + gains[0] / np.log2(3.0)) / idcg
    ahead = 1.0 - (gains[0] + gains[1] / np.log2(3.0)) / idcg
    a_first = (flat > 0) | ((flat == 0) & (y[0] < y[1]))
    exact = np.where(a_first, ahead, swapped)
    return smooth.reshape(d.shape), exact.reshape(d.shape)


def warmup() -> None:
    """Compile (or load from numba's cache) the smoothed-rank kernels."""
    smoothed_rank_loss([0.2, -0.1, 0.4], [5.0, 3.0, 5.0], 1.0)
    smoothed_positions([0.2, -0.1], 2.0)
