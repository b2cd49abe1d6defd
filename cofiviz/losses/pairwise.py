"""Pairwise ranking losses of CofiRank's appendix: ordinal regression (A.2) and preferences (A.3).

Weimer et al., CofiRank (extended version, appendix A). For a user's items with ratings ``y`` and scores
``f``, every pair with ``y_i < y_j`` should have ``f_i < f_j``; a pair that is not separated by a
margin of 1 costs ``C(y_i, y_j)``. The convex upper bound of the pair-counting loss (13)/(15) is

    l(f, y) = (1/M) Σ_{y_i < y_j} C(y_i, y_j) · max(0, 1 + f_i − f_j)                    (16)
    ∂_f l   = (1/M) Σ_{active pairs} C(y_i, y_j) (e_i − e_j)                               (17)

with ``M = ½ (m² − Σ_r m_r²)`` the number of pairs with different ratings (``m`` items, ``m_r`` of
them rated ``r``); ``normalize=False`` drops the ``1/M`` (as the authors' C++ code does).

- :func:`ordinal_loss_grad` is Algorithm 2: sort the ``2m`` points ``f ∓ ½`` once and sweep them,
  keeping per rating level the count ``h`` of lower points passed and ``u`` of upper points not yet
  passed — O(m log m + m·L) for ``L`` rating levels instead of the O(m²) pair loop.
- :func:`preference_loss_grad` is Algorithm 3 on an explicit preference set ``P`` of pairs
  ``(i, j)`` meaning "j is preferred to i" with costs ``C(i, j)``, normalised by ``|P|``.
- :func:`pairs_loss_grad` enumerates all pairs of different ratings (the plain O(m²) loop), which
  is both CofiRank-Preference on ratings and the reference the ordinal sweep is tested against.

Costs between rating levels: ``"uniform"`` (``C = 1``) or ``"difference"`` (``C = y_j − y_i``, the
original code's ordinal loss).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..util.errors import ParameterError

__all__ = ["ordinal_loss", "preference_loss", "pairs_loss", "ordinal_loss_grad",
           "pairs_loss_grad", "preference_loss_grad", "rating_levels", "level_costs", "PAIR_COSTS"]

PAIR_COSTS = ("uniform", "difference")


def rating_levels(y, values=None) -> tuple[np.ndarray, np.ndarray]:
    """Map ratings to level indices ``0..L-1`` of the sorted distinct ``values`` (default: of ``y``)."""
    y = np.asarray(y, dtype=np.float64)
    values = np.unique(y) if values is None else np.asarray(values, dtype=np.float64)
    level = np.searchsorted(values, y).astype(np.int32)
    if len(y) and (level.max() >= len(values) or np.any(values[np.minimum(level, len(values) - 1)] != y)):
        raise ParameterError("some ratings are not among the given rating values")
    return level, values


def level_costs(values, cost: str = "uniform") -> np.ndarray:
    """``C[r, s]`` for levels ``r < s``: 1 (``"uniform"``) or ``values[s] − values[r]`` (``"difference"``)."""
    values = np.asarray(values, dtype=np.float64)
    if cost == "uniform":
        C = np.ones((len(values), len(values)))
    elif cost == "difference":
        C = values[None, :] - values[:, None]
    else:
        raise ParameterError(f"pair cost must be one of {PAIR_COSTS}, got {cost!r}")
    return np.ascontiguousarray(np.triu(C, 1))


@njit(cache=True, nogil=True)
def _n_pairs(level, n_levels, counts):
    for r in range(n_levels):
        counts[r] = 0
    m = level.shape[0]
    for j in range(m):
        counts[level[j]] += 1
    s = 0.0
    for r in range(n_levels):
        s += counts[r] * counts[r]
    return 0.5 * (m * m - s)


@njit(cache=True, nogil=True)
def ordinal_loss_grad(f, level, C, normalize, g, wf, wi):
    """Algorithm 2 (ordinal regression) for one user: returns the loss (16), writes ``g`` (17).

    ``level`` holds rating levels ``0..L-1`` (int32), ``C`` the ``L × L`` level costs (upper
    triangle used). Workspace: ``wf`` float64 of length ≥ ``2m``, ``wi`` int64 of length ≥ ``2L``.
    """
    m = f.shape[0]
    L = C.shape[0]
    for j in range(m):
        g[j] = 0.0
    u = wi[0:L]
    h = wi[L:2 * L]
    n_pairs = _n_pairs(level, L, u)  # u starts as the level counts m_r
    if n_pairs <= 0.0:
        return 0.0
    for r in range(L):
        h[r] = 0
    vals = wf[0:2 * m]
    for j in range(m):
        vals[j] = f[j] - 0.5
        vals[m + j] = f[j] + 0.5
    order = np.argsort(vals, kind="mergesort")
    loss = 0.0
    for t in range(2 * m):
        idx = order[t]
        if idx < m:  # lower point f_j - 1/2 of item j: pairs with lower-rated items still "open"
            j = idx
            z = level[j]
            for r in range(z):
                if u[r] > 0:
                    w = C[r, z] * u[r]
                    loss -= w * vals[idx]
                    g[j] -= w
            h[z] += 1
        else:  # upper point f_j + 1/2: pairs with higher-rated items whose lower point has passed
            j = idx - m
            z = level[j]
            for r in range(z + 1, L):
                if h[r] > 0:
                    w = C[z, r] * h[r]
                    loss += w * vals[idx]
                    g[j] += w
            u[z] -= 1
    scale = 1.0 / n_pairs if normalize else 1.0
    for j in range(m):
        g[j] *= scale
    return loss * scale


@njit(cache=True, nogil=True)
def pairs_loss_grad(f, level, C, normalize, g):
    """The same loss as :func:`ordinal_loss_grad` by the plain O(m²) loop over all pairs."""
    m = f.shape[0]
    for j in range(m):
        g[j] = 0.0
    loss = 0.0
    n_pairs = 0.0
    for i in range(m):
        for j in range(m):
            if level[i] < level[j]:
                n_pairs += 1.0
                margin = 1.0 + f[i] - f[j]
                if margin > 0.0:
                    w = C[level[i], level[j]]
                    loss += w * margin
                    g[i] += w
                    g[j] -= w
    if n_pairs == 0.0:
        return 0.0
    scale = 1.0 / n_pairs if normalize else 1.0
    for j in range(m):
        g[j] *= scale
    return loss * scale


@njit(cache=True, nogil=True)
def preference_loss_grad(f, pi, pj, cost, normalize, g):
    """Algorithm 3: pairs ``(pi[t], pj[t])`` mean item ``pj[t]`` is preferred; costs ``cost[t]``."""
    for j in range(f.shape[0]):
        g[j] = 0.0
    loss = 0.0
    P = pi.shape[0]
    for t in range(P):
        i = pi[t]
        j = pj[t]
        if f[j] - f[i] < 1.0:
            loss += cost[t] * (1.0 + f[i] - f[j])
            g[i] += cost[t]
            g[j] -= cost[t]
    if P == 0:
        return 0.0
    scale = 1.0 / P if normalize else 1.0
    for j in range(f.shape[0]):
        g[j] *= scale
    return loss * scale


# ---------------------------------------------------------------------------------------------- API
def check_scored_list(f, y):
    """``f`` and ``y`` as contiguous float64 arrays of one length, checked finite (the losses' public boundary).

    Raises
    ------
    ParameterError
        Not 1-D arrays of one length, or a value that is not finite.
    """
    f = np.ascontiguousarray(f, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if f.ndim != 1 or y.shape != f.shape:
        raise ParameterError(f"f and y must be 1-D arrays of one length, got shapes {f.shape} and {y.shape}")
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(y))):
        raise ParameterError("f and y must be finite")
    return f, y


def ordinal_loss(f, y, cost: str = "uniform", normalize: bool = True):
    """CofiRank-Ordinal loss (16) of one user by Algorithm 2; returns ``(loss, grad)``."""
    f, y = check_scored_list(f, y)
    level, values = rating_levels(y)
    C = level_costs(values, cost)
    g = np.empty(len(f))
    wf, wi = np.empty(2 * max(len(f), 1)), np.empty(2 * max(len(values), 1), dtype=np.int64)
    return float(ordinal_loss_grad(f, level, C, bool(normalize), g, wf, wi)), g


def pairs_loss(f, y, cost: str = "uniform", normalize: bool = True):
    """The loss of :func:`ordinal_loss` by the plain pair loop (CofiRank-Preference on ratings)."""
    f, y = check_scored_list(f, y)
    level, values = rating_levels(y)
    C = level_costs(values, cost)
    g = np.empty(len(f))
    return float(pairs_loss_grad(f, level, C, bool(normalize), g)), g


def preference_loss(f, pairs, costs=None, normalize: bool = True):
    """Algorithm 3 on an explicit preference set.

    Parameters
    ----------
    f : (m,) scores
    pairs : (P, 2) int array
        Row ``(i, j)``: item ``j`` is preferred to item ``i`` (a cost is paid when ``f_j − f_i < 1``).
    costs : (P,) array, optional
        ``C(i, j)`` (default 1).
    """
    f = np.ascontiguousarray(f, dtype=np.float64)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= len(f)):
        raise ParameterError(f"pairs must index items 0..{len(f) - 1}")
    costs = np.ones(len(pairs)) if costs is None else np.asarray(costs, dtype=np.float64)
    if costs.shape != (len(pairs),):
        raise ParameterError("costs must have one entry per pair")
    g = np.empty(len(f))
    loss = preference_loss_grad(f, np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]),
                                costs, bool(normalize), g)
    return float(loss), g


