"""CofiRank's structured ranking losses: the NDCG bound (eq 4) and its ERU variant (appendix A.4).

Weimer, Karatzoglou, Le, Smola, "CofiRank: Maximum Margin Matrix Factorization for Collaborative
Ranking" (NIPS 2007, and its extended version). For one user with training ratings ``y`` and scores ``f``
over the same ``n`` items,

    l(f, y) = max_π [ Δ(π, y) + ⟨c, f_π − f_ref⟩ ]                                          (4)

where ``π`` places item ``π(p)`` at list position ``p`` (0-based), ``f_π = (f_π(0), …, f_π(n−1))``,
``c_p = (p + 1)^e`` is a decreasing positive sequence (``e = c_exponent = −0.25``; the original code
uses the 0-based ``p``, so the top position has ``c_0 = 1``), and ``⟨c, f_ref⟩ = Σ_j w_j f_j`` weighs
each item by ``c`` at its place in a *reference order*:

- ``"rating"`` (default, the paper's assumption that "y and f are sorted"): decreasing rating, ties
  in stored order; ``w_j = c_{ref(j)}``;
- ``"item_id"``: the stored item order, as the authors' C++ code does;
- ``"tie_average"``: decreasing rating, every item of a group of equal ratings weighted by the mean
  of ``c`` over the group's positions. The loss stays convex and still bounds the regret (the mean
  over the group's orders is at most the best order), but does not force an arbitrary order on
  items the user rated alike.

The regret is ``Δ(π, y) = 1 − Σ_{p<k} a_p b_π(p)`` (eq 10), with

- NDCG@k: ``a_p = 1 / log2(p + 2)`` and ``b_j = (2^{y_j} − 1) / DCG@k(ideal)``;
- ERU (eqs 18–19): ``a_p = 2^{−p/(α−1)}`` (half-life ``α``) and ``b_j = max(y_j − d, 0) / ERU@k(ideal)``
  (neutral vote ``d``).

``a_p = 0`` from the truncation ``k`` on, while ``c`` covers the whole list. The maximisation is the
linear assignment problem with cost ``C[p, j] = a_p b_j − c_p f_j`` (§5), solved exactly by
:func:`cofiviz.solvers.lap.lap_rank2`, so

    l(f, y) = 1 − min_π Σ_p C[p, π(p)] − ⟨c, f_ref⟩,
    ∂_f l   = c_{π̄⁻¹} − w             (item j gets c at its position under the maximiser π̄ minus its
                                       reference weight ``w_j``).

``l`` is convex in ``f`` and bounds the regret of the ranking ``f`` induces (eq 5):
``l(f, y) ≥ Δ(argsort(−f), y) ≥ 0``. When the ideal DCG (ERU) is zero the regret is zero for every
``π``; only the ⟨c, ·⟩ term remains. Items with equal ratings keep their reference order, as in the
paper (its derivation assumes a strict order).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..util import elementary
from ..util.errors import ParameterError
from ..solvers.lap import lap_rank2, lap_rank2_free
from .pairwise import check_scored_list

__all__ = ["ndcg_loss", "eru_loss", "ndcg_regret", "eru_regret", "structured_loss_curve",
           "structured_loss_grad", "c_vector", "ndcg_discounts", "eru_discounts", "normalized_gains",
           "reference_weights", "REFERENCE_ORDERS", "ASSIGNMENT_STARTS"]

REFERENCE_ORDERS = ("rating", "item_id", "tie_average")
#: where the loss-augmented assignment starts its searches (``structured_loss_grad``'s ``start``)
ASSIGNMENT_STARTS = ("scores", "gains")
REFERENCE_CODES = {"rating": 0, "item_id": 1, "tie_average": 2}


def c_vector(n: int, exponent: float = -0.25) -> np.ndarray:
    """``c_p = (p + 1)^exponent`` for 0-based positions ``p < n`` (the original code's convention)."""
    return elementary.power(np.arange(1, n + 1, dtype=np.float64), float(exponent))


def ndcg_discounts(n: int, k: int) -> np.ndarray:
    """``a_p = 1 / log2(p + 2)`` for ``p < k`` and 0 after: the DCG@k position weights."""
    a = 1.0 / elementary.log2(np.arange(n, dtype=np.float64) + 2.0)
    a[int(k):] = 0.0
    return a


def eru_discounts(n: int, k: int, halflife: float) -> np.ndarray:
    """``a_p = 2^{(1 − i)/(α − 1)}`` for 1-based ``i = p + 1 ≤ k`` and 0 after (CofiRank eq 19)."""
    if not halflife > 1:
        raise ParameterError(f"the ERU half-life must be > 1, got {halflife}")
    a = elementary.power(2.0, -np.arange(n, dtype=np.float64) / (float(halflife) - 1.0))
    a[int(k):] = 0.0
    return a


@njit(cache=True, nogil=True)
def gains_inplace(y, kind, neutral, out):
    """Raw gains: ``2^y − 1`` (kind 0, NDCG) or ``max(y − d, 0)`` (kind 1, ERU)."""
    for j in range(y.shape[0]):
        if kind == 0:
            out[j] = 2.0 ** y[j] - 1.0
        else:
            v = y[j] - neutral
            out[j] = v if v > 0.0 else 0.0


@njit(cache=True, nogil=True)
def normalize_gains(raw, a, out):
    """``out = raw / Σ_p a_p sort(raw)_p`` (0 when that ideal value is not positive); returns the ideal."""
    n = raw.shape[0]
    s = np.sort(raw)
    ideal = 0.0
    for p in range(n):
        if a[p] == 0.0:
            break
        ideal += a[p] * s[n - 1 - p]
    if ideal > 0.0:
        for j in range(n):
            out[j] = raw[j] / ideal
    else:
        for j in range(n):
            out[j] = 0.0
    return ideal


def normalized_gains(y, a, kind: str = "ndcg", neutral: float = 3.0) -> np.ndarray:
    """``b_j`` of eq 10 (NDCG) or eq 19 (ERU) for one user's ratings ``y`` and discounts ``a``."""
    y = np.asarray(y, dtype=np.float64)
    raw = np.empty_like(y)
    gains_inplace(y, 0 if kind == "ndcg" else 1, float(neutral), raw)
    out = np.empty_like(y)
    normalize_gains(raw, np.asarray(a, dtype=np.float64), out)
    return out


@njit(cache=True, nogil=True)
def reference_weights_inplace(y, c, mode, out):
    """``w_j`` of ⟨c, f_ref⟩ = Σ_j w_j f_j for one user (mode: 0 rating, 1 item_id, 2 tie_average)."""
    n = y.shape[0]
    if mode == 1:
        for j in range(n):
            out[j] = c[j]
        return
    key = np.empty(n)
    for j in range(n):
        key[j] = -y[j]
    order = np.argsort(key, kind="mergesort")
    if mode == 0:
        for p in range(n):
            out[order[p]] = c[p]
        return
    p = 0
    while p < n:
        q = p
        s = 0.0
        while q < n and y[order[q]] == y[order[p]]:
            s += c[q]
            q += 1
        for t in range(p, q):
            out[order[t]] = s / (q - p)
        p = q


def reference_weights(y, c, reference: str = "rating") -> np.ndarray:
    """Per-item weights ``w`` with ``⟨c, f_ref⟩ = Σ_j w_j f_j`` for one user's ratings ``y``."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    if reference not in REFERENCE_ORDERS:
        raise ParameterError(f"reference must be one of {REFERENCE_ORDERS}, got {reference!r}")
    out = np.empty(len(y))
    reference_weights_inplace(y, np.ascontiguousarray(c, dtype=np.float64), REFERENCE_CODES[reference], out)
    return out


@njit(cache=True, nogil=True)
def _lexicographic_argmax(f, b, a, col4row):
    """The maximiser of (4) when ``⟨c, f_π⟩`` only breaks ties of ``Δ`` (``f`` negligibly small).

    ``Δ`` alone is minimised (``Σ_p a_p b_π(p)`` smallest) by the ``k`` smallest gains in
    ascending order on the top positions (``a`` strictly decreasing there); among those permutations
    ``⟨c, f_π⟩`` is largest with equal gains ordered by decreasing ``f`` and the rest of the list by
    decreasing ``f`` (rearrangement inequality and an exchange argument). Fills ``col4row``.
    """
    n = f.shape[0]
    kk = 0
    while kk < n and a[kk] > 0.0:
        kk += 1
    key = np.empty(n)
    for j in range(n):
        key[j] = -f[j]
    by_f = np.argsort(key, kind="mergesort")  # decreasing f
    # stable sort of by_f on b ascending: (b ascending, f decreasing)
    bb = np.empty(n)
    for t in range(n):
        bb[t] = b[by_f[t]]
    ob = np.argsort(bb, kind="mergesort")
    used = np.zeros(n, dtype=np.bool_)
    for p in range(kk):
        j = by_f[ob[p]]
        col4row[p] = j
        used[j] = True
    p = kk
    for t in range(n):
        j = by_f[t]
        if not used[j]:
            col4row[p] = j
            p += 1


@njit(cache=True, nogil=True)
def structured_loss_grad(f, b, w, a, c, delta_const, g, col4row, wf, wi, start=0):
    """Value of eq (4) and its subgradient for one user (``n = len(f)`` items).

    Parameters
    ----------
    f : (n,) scores; b : (n,) normalised gains; w : (n,) reference weights (⟨c, f_ref⟩ = w·f);
    a, c : (≥ n,) position weights (only the first ``n`` are read; ``a`` strictly decreasing while
    positive); delta_const : 1.0, or 0.0 when the user's ideal DCG is zero (then ``b = 0``);
    g : (n,) output subgradient; col4row : (≥ n,) int64 output, the item placed at each position by
    the maximiser π̄; wf, wi : LAP workspace for ``n`` columns; start : where the assignment's searches
    start (:data:`ASSIGNMENT_STARTS`): 0, the positions past the truncation on the highest scores
    (:func:`~cofiviz.solvers.lap.lap_rank2`), or 1, the top positions free on the ``k`` items the gains
    alone put there, lowest gain first and ties by score (:func:`_lexicographic_argmax`, the maximiser
    when the scores are small; :func:`~cofiviz.solvers.lap.lap_rank2_free`). Both give the minimum cost;
    where assignments tie to the last bit they may return different ones.

    Returns
    -------
    float
        ``l(f, y) = delta_const − Σ_p (a_p b_π̄(p) − c_p f_π̄(p)) − w·f``.

    Notes
    -----
    The maximiser comes from the assignment solver, except when the score part of the costs is
    below double precision relative to the gain part (``c_0 max|f| < 2^-53 · min a_p b_j`` over
    positive terms) — the regime CofiRank reaches at λ = 10, where scores shrink to ~1e-60. There
    a floating-point assignment solver cannot see ``f`` and would order items of equal rating
    arbitrarily; the exact maximiser (what exact arithmetic gives: gains first, ties by ``f``) is
    then found by sorting (:func:`_lexicographic_argmax`). With all gains zero it is the sort of ``f``.
    """
    n = f.shape[0]
    if n == 0:
        return 0.0
    fmax = 0.0
    for j in range(n):
        v = abs(f[j])
        if v > fmax:
            fmax = v
    kk = 0
    while kk < n and a[kk] > 0.0:
        kk += 1
    bmin = np.inf
    for j in range(n):
        if b[j] > 0.0 and b[j] < bmin:
            bmin = b[j]
    if bmin == np.inf or (kk > 0 and c[0] * fmax < 1.1102230246251565e-16 * a[kk - 1] * bmin):
        _lexicographic_argmax(f, b, a, col4row)
    elif start == 1 and kk < n:
        _lexicographic_argmax(f, b, a, col4row)
        free = np.zeros(n, dtype=np.bool_)
        for p in range(kk):
            free[col4row[p]] = True
        lap_rank2_free(a[:n], b, c[:n], f, free, col4row[:n], wf, wi)
    else:
        lap_rank2(a[:n], b, c[:n], f, col4row[:n], wf, wi)
    total = 0.0
    for p in range(n):
        j = col4row[p]
        total += a[p] * b[j] - c[p] * f[j]
    cref = 0.0
    for j in range(n):
        cref += w[j] * f[j]
        g[j] = -w[j]
    for p in range(n):
        g[col4row[p]] += c[p]
    return delta_const - total - cref


@njit(cache=True, nogil=True)
def _regret_of_scores(f, b, a):
    """``1 − Σ_p a_p b_{π*(p)}`` for the ranking ``π* = argsort(−f)`` (ties: lower index first)."""
    order = np.argsort(-f, kind="mergesort")
    s = 0.0
    for p in range(f.shape[0]):
        s += a[p] * b[order[p]]
    return 1.0 - s


# ---------------------------------------------------------------------------------------------- API
def _check_k(k):
    if int(k) < 1:
        raise ParameterError(f"the truncation k must be >= 1, got {k}")
    return int(k)


def _structured(f, y, a, kind, neutral, c_exponent, reference):
    n = len(f)
    b = normalized_gains(y, a, kind, neutral)
    ideal_pos = bool(np.any(b > 0))
    c = c_vector(n, c_exponent)
    w = reference_weights(y, c, reference)
    g = np.empty(n)
    col4row = np.empty(max(n, 1), dtype=np.int64)
    wf, wi = np.empty(3 * max(n, 1)), np.empty(5 * max(n, 1), dtype=np.int64)
    loss = structured_loss_grad(f, b, w, a, c, 1.0 if ideal_pos else 0.0, g, col4row, wf, wi)
    return float(loss), g


def ndcg_loss(f, y, k: int = 10, c_exponent: float = -0.25, reference: str = "rating"):
    """CofiRank's NDCG@k loss (eq 4) of one user's scores ``f`` against ratings ``y``.

    Returns
    -------
    loss : float
        The convex upper bound ``l(f, y) ≥ 1 − NDCG@k(argsort(−f), y)``.
    grad : ndarray
        A subgradient ``c_{π̄⁻¹} − c_{ref⁻¹}`` with respect to ``f``.
    """
    f, y = check_scored_list(f, y)
    return _structured(f, y, ndcg_discounts(len(f), _check_k(k)), "ndcg", 0.0, c_exponent, reference)


def eru_loss(f, y, neutral: float = 3.0, halflife: float = 5.0, k: int = 10, c_exponent: float = -0.25,
             reference: str = "rating"):
    """The structured loss (4) with the NERU regret of appendix A.4 (neutral vote, half-life ``α``).

    Returns ``(loss, grad)`` like :func:`ndcg_loss`; ``loss ≥ 1 − NERU@k(argsort(−f), y)``.
    """
    f, y = check_scored_list(f, y)
    a = eru_discounts(len(f), _check_k(k), halflife)
    return _structured(f, y, a, "eru", float(neutral), c_exponent, reference)


def ndcg_regret(f, y, k: int = 10) -> float:
    """``1 − NDCG@k`` of the ranking ``argsort(−f)`` (ties: earlier item first), gain ``2^y − 1``."""
    f, y = check_scored_list(f, y)
    a = ndcg_discounts(len(f), _check_k(k))
    b = normalized_gains(y, a, "ndcg")
    return float(_regret_of_scores(f, b, a)) if np.any(b > 0) else 0.0


def eru_regret(f, y, neutral: float = 3.0, halflife: float = 5.0, k: int = 10) -> float:
    """``1 − NERU@k`` of the ranking ``argsort(−f)`` (appendix A.4)."""
    f, y = check_scored_list(f, y)
    a = eru_discounts(len(f), _check_k(k), halflife)
    b = normalized_gains(y, a, "eru", neutral)
    return float(_regret_of_scores(f, b, a)) if np.any(b > 0) else 0.0


def structured_loss_curve(y, f0, direction, ts, k: int = 10, c_exponent: float = -0.25,
                          reference: str = "rating", kind: str = "ndcg", neutral: float = 3.0,
                          halflife: float = 5.0):
    """The bound and the true regret along the line ``f0 + t · direction`` (for plots).

    Returns ``(loss, regret)``, two arrays over ``ts``: the convex, piecewise-linear upper bound of
    eq (4) and the piecewise-constant ``1 − NDCG@k`` (or ``1 − NERU@k``) of the induced ranking.
    """
    f0, y = check_scored_list(f0, y)
    d = np.asarray(direction, dtype=np.float64)
    if d.shape != f0.shape:
        raise ParameterError("direction must have the shape of f0")
    ts = np.atleast_1d(np.asarray(ts, dtype=np.float64))
    loss, regret = np.empty(len(ts)), np.empty(len(ts))
    for i, t in enumerate(ts):
        f = f0 + t * d
        if kind == "ndcg":
            loss[i] = ndcg_loss(f, y, k, c_exponent, reference)[0]
            regret[i] = ndcg_regret(f, y, k)
        elif kind == "eru":
            loss[i] = eru_loss(f, y, neutral, halflife, k, c_exponent, reference)[0]
            regret[i] = eru_regret(f, y, neutral, halflife, k)
        else:
            raise ParameterError(f"kind must be 'ndcg' or 'eru', got {kind!r}")
    return loss, regret
