"""The listwise Plackett–Luce loss of a rated list, with ties (blog post "The rank 1 problem": "The loss functions").

Luce (1959) and Plackett (1975) give the probability of a ranking ``1 ≻ 2 ≻ … ≻ M`` of items with
scores ``f`` as a sequence of softmax choices, each from the items not chosen yet:

    P(1 ≻ 2 ≻ … ≻ M) = Π_{i=1}^{M} exp(f_i) / Σ_{j=i}^{M} exp(f_j)

(the blog post's formula). The loss is the negative log-likelihood of the user's ratings read as a
ranking, ``L(f, y) = Σ_i [log Σ_{j ≥ i} exp(f_j) − f_i]``; it is convex in ``f``, smooth, and looks at
the whole list at once.

Ties
----
Ratings on a 5-star scale are full of ties: the ratings only say that the items rated 5 come before
those rated 4, not in which order among themselves. cofiviz reads a rated list as an ordered
partition (groups ``G_1 ≻ G_2 ≻ …`` of equal ratings, best first) and uses one of two standard
treatments of tied "failure times" from survival analysis, whose partial likelihood is the
Plackett–Luce likelihood:

``"breslow"`` (default; Breslow 1974)
    Every item of a group is chosen from the same set ``R_g = G_g ∪ G_{g+1} ∪ …`` (the group and
    everything rated lower):

        L = Σ_g [ |G_g| log Σ_{j ∈ R_g} exp(f_j) − Σ_{i ∈ G_g} f_i ]

    It is an upper bound on the tie-averaged loss (Jensen), convex, and the same in every order of the
    tied items; it is what cofiviz's models use by default.
``"efron"`` (Efron 1977)
    The ``d = |G_g|`` choices of a group remove, on average, ``l/d`` of the group from the choice set:

        L = Σ_g [ Σ_{l=0}^{d−1} log(Σ_{j ∈ R_g} exp(f_j) − (l/d) Σ_{j ∈ G_g} exp(f_j)) − Σ_{i ∈ G_g} f_i ]

    a closer approximation to the likelihood averaged over every order of the tied items (exact when
    the tied items have equal scores), also the same in every order of the tied items.

Without ties both are the plain Plackett–Luce loss. A list whose items are all tied carries no
preference; its loss is then constant in the differences of the scores (its gradient sums to zero
and vanishes at equal scores). Both are O(n log n) per list (one sort; suffix sums of exponentials
carried as log-sum-exp for stability).

A third treatment, which chooses each group as a whole instead of breaking it into single choices, is
the ordered-partition model of :mod:`.partition` (Tran, Phung & Venkatesh, SDM 2011): also Plackett–Luce
without ties, and at most Breslow's loss.

The gradient (``∂L/∂f_k``) is, with ``g(k)`` the group of item ``k``,

- Breslow: ``−1 + exp(f_k) Σ_{g ≤ g(k)} |G_g| / S_g`` with ``S_g = Σ_{j ∈ R_g} exp(f_j)``;
- Efron: ``−1 + exp(f_k) [B_{g(k)} + Σ_{g < g(k)} A_g]`` with ``A_g = Σ_l 1 / (S_g − (l/d) T_g)``,
  ``B_g = Σ_l (1 − l/d) / (S_g − (l/d) T_g)`` and ``T_g = Σ_{j ∈ G_g} exp(f_j)``.

Layers: :func:`pl_loss_grad` is the numba kernel of one list (the bilinear model calls it per user in
parallel); :func:`plackett_luce_loss` is its checked NumPy-facing wrapper; :func:`pl_list_probability`
gives the probability of a strict order (the blog's product) for teaching.

References: R. D. Luce, *Individual Choice Behavior*, 1959; R. L. Plackett, "The analysis of
permutations", Applied Statistics 24, 1975; N. Breslow, Biometrics 30, 1974; B. Efron, JASA 72, 1977.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..util.errors import ParameterError, named

__all__ = ["PL_TIES", "pl_ties_code", "pl_loss_grad", "plackett_luce_loss", "pl_list_probability", "warmup"]

#: Tie treatments of the Plackett–Luce loss, in the order of their integer codes.
PL_TIES = ("breslow", "efron")


def pl_ties_code(ties: str) -> int:
    """The integer code of a tie treatment (``"breslow"`` → 0, ``"efron"`` → 1).

    Raises
    ------
    ParameterError
        An unknown name; the message lists the valid ones.
    """
    return PL_TIES.index(named(ties, PL_TIES, "ties treatment of the Plackett-Luce loss"))


@njit(cache=True, nogil=True, inline="always")
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit(cache=True, nogil=True)
def tie_groups(y):
    """``(order, starts, K)``: item indices best rating first (ties in stored order), and the groups of equal
    ratings, group ``k`` at ``order[starts[k]:starts[k + 1]]``."""
    n = y.shape[0]
    order = np.argsort(-y, kind="mergesort")
    starts = np.empty(n + 1, dtype=np.int64)
    n_groups = 0
    for a in range(n):
        if a == 0 or y[order[a]] != y[order[a - 1]]:
            starts[n_groups] = a
            n_groups += 1
    starts[n_groups] = n
    return order, starts, n_groups


@njit(cache=True, nogil=True)
def group_log_sums(f, order, starts, n_groups):
    """``(log T, log S)`` of the groups of :func:`tie_groups`: ``log T_k = log Σ_{x ∈ group k} e^{f_x}`` (its
    maximum subtracted first) and ``log S_k = log(T_k + S_{k+1})``, the group and every lower-rated one, from
    the last group up (``log S`` has ``K + 1`` entries, ``log S_K = −inf``)."""
    log_t = np.empty(n_groups)
    log_s = np.empty(n_groups + 1)
    log_s[n_groups] = -np.inf
    for k in range(n_groups - 1, -1, -1):
        mx = -np.inf
        for a in range(starts[k], starts[k + 1]):
            if f[order[a]] > mx:
                mx = f[order[a]]
        t = 0.0
        for a in range(starts[k], starts[k + 1]):
            t += math.exp(f[order[a]] - mx)
        log_t[k] = mx + math.log(t)
        log_s[k] = _logaddexp(log_s[k + 1], log_t[k])
    return log_t, log_s


@njit(cache=True, nogil=True)
def pl_loss_grad(f, y, ties, grad):
    """Plackett–Luce negative log-likelihood of one list and its gradient (see the module documentation).

    Every sum of exponentials is carried as its logarithm (log-sum-exp), so that scores of any size
    (a list whose lower-rated items score −800 below the best, say) give finite values and gradients.

    Parameters
    ----------
    f : float64[n]
        Scores (higher: ranked earlier).
    y : float64[n]
        Ratings (higher: better); equal ratings are ties.
    ties : int
        0: Breslow, 1: Efron.
    grad : float64[n]
        Output, ``∂L/∂f``.

    Returns
    -------
    float
        ``L(f, y)`` (0 for an empty list).
    """
    n = f.shape[0]
    if n == 0:
        return 0.0
    order, starts, n_groups = tie_groups(y)
    logT, logS = group_log_sums(f, order, starts, n_groups)
    loss = 0.0
    log_cum = -np.inf                          # log Σ_{g' < g} A_g' (Breslow: A_g = d_g / S_g)
    for g in range(n_groups):
        d = starts[g + 1] - starts[g]
        sf = 0.0
        for a in range(starts[g], starts[g + 1]):
            sf += f[order[a]]
        if ties == 0 or d == 1:
            loss += d * logS[g] - sf
            log_a = math.log(d) - logS[g]
            log_b = log_a
        else:
            ratio = math.exp(logT[g] - logS[g])   # T_g / S_g in (0, 1]
            sa = 0.0
            sb = 0.0
            for l in range(d):
                frac = l / d
                x = 1.0 - frac * ratio            # ≥ 1/d: s_l = S_g · x
                loss += logS[g] + math.log(x)
                sa += 1.0 / x
                sb += (1.0 - frac) / x
            loss -= sf
            log_a = math.log(sa) - logS[g]
            log_b = math.log(sb) - logS[g]
        log_w = _logaddexp(log_cum, log_b)
        for a in range(starts[g], starts[g + 1]):
            k = order[a]
            grad[k] = -1.0 + math.exp(f[k] + log_w)
        log_cum = _logaddexp(log_cum, log_a)
    return loss


def check_scored_list(scores, ratings):
    try:
        f = np.ascontiguousarray(np.asarray(scores, dtype=np.float64).ravel())
        y = np.ascontiguousarray(np.asarray(ratings, dtype=np.float64).ravel())
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"scores and ratings must be numeric arrays: {exc}") from None
    if f.shape != y.shape:
        raise ParameterError(f"scores and ratings must have the same length, got {f.shape[0]} and {y.shape[0]}")
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(y))):
        raise ParameterError("scores and ratings must be finite")
    return f, y


def plackett_luce_loss(scores, ratings, ties: str = "breslow") -> tuple[float, np.ndarray]:
    """``(L, ∂L/∂f)``: the Plackett–Luce loss of one rated list (Luce 1959, Plackett 1975; "The rank 1 problem").

    Parameters
    ----------
    scores : array_like
        Predicted scores ``f`` of the list's items.
    ratings : array_like
        Their ratings; higher is better, equal ratings are ties.
    ties : {"breslow", "efron"}
        Treatment of tied ratings (module documentation).

    Returns
    -------
    (float, numpy.ndarray)
        The negative log-likelihood ``Σ_g [|G_g| log Σ_{R_g} e^f − Σ_{G_g} f]`` (Breslow) or its Efron
        form, and its gradient in ``scores``.

    Raises
    ------
    ParameterError
        Shapes that differ, non-finite values, or an unknown ``ties``.
    """
    code = pl_ties_code(ties)
    f, y = check_scored_list(scores, ratings)
    grad = np.empty_like(f)
    return float(pl_loss_grad(f, y, code, grad)), grad


def pl_list_probability(scores) -> float:
    """The blog post's ``P(f(1) > f(2) > … > f(M)) = Π_i exp(f_i) / Σ_{j ≥ i} exp(f_j)`` of a strict order.

    ``scores`` lists the items' scores in the order whose probability is wanted (first = ranked first).
    """
    f, _ = check_scored_list(scores, np.arange(np.size(scores), dtype=np.float64))
    y = -np.arange(len(f), dtype=np.float64)   # strictly decreasing: the given order, no ties
    grad = np.empty_like(f)
    return float(math.exp(-pl_loss_grad(f, y, 0, grad)))


def warmup() -> None:
    """Compile (or load from numba's cache) the Plackett–Luce kernel."""
    for ties in PL_TIES:
        plackett_luce_loss([0.2, -0.1, 0.4], [5.0, 3.0, 5.0], ties)
