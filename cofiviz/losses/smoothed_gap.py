"""The smoothed Graded Average Precision of GAPfm: value, gradients, and shapes for plots.

Shi, Karatzoglou, Baltrunas, Larson, Hanjalic, "GAPfm: Optimal Top-N Recommendations for Graded
Relevance Domains" (CIKM 2013). Notation of the paper: user ``m`` rated items ``i`` with grades
``y_mi ∈ {1..ymax}`` (``I_mi = 1``), scores ``f_mi = <U_m, V_i>`` (eq 1).

Thresholding probabilities (eq 5) and their cumulative sums::

    δ_l = (2^l − 1) / 2^ymax   (ymax > 1),   δ_1 = 1   (ymax = 1),      S(y) = Σ_{l ≤ y} δ_l

β of eq 4 is ``β_ij = I(y_i < y_j) S(y_i) + I(y_j ≤ y_i) S(y_j) = S(min(y_i, y_j)) = min(S(y_i), S(y_j))``
(S is increasing), so **β is symmetric**, ``β_ij = β_ji``. The rank terms are smoothed with the
logistic ``g(x) = 1 / (1 + e^−x)``: ``I(R_j ≤ R_i) ≈ g(f_j − f_i)`` (eq 6) and ``1/R_i ≈ g(f_i)``
(eq 7), which gives the smoothed GAP of one user (eq 8, ``1/Z_m`` dropped)::

    F_m = Σ_i g(f_i) A_i,      A_i = Σ_j β_ij g(f_j − f_i)      (j = i included: g(0) = ½)

Gradient with respect to the scores, derived here from eq 8 (``g' = g (1 − g)``, even)::

    ∂F_m/∂f_k = g'(f_k) A_k + Σ_{j ≠ k} β_kj (g(f_j) − g(f_k)) g'(f_j − f_k)

The first term comes from ``g(f_k)`` (``i = k``); the second collects ``−g(f_k) β_kj g'(f_j − f_k)``
(``i = k``, the pair term's inner argument) and ``g(f_j) β_jk g'(f_k − f_j)`` (``j = k``, another
item's pair term), merged with β's symmetry and ``g'(−x) = g'(x)``. Since ``F_m`` depends on
``U_m`` and ``V_i`` only through ``f_mi``:

    ∂F/∂U_m = Σ_i (∂F_m/∂f_mi) V_i − λ U_m                                          (eq 10)
    ∂F/∂V_i = Σ_m (∂F_m/∂f_mi) U_m − λ V_i                                          (eq 11)

Expanding the first line gives the paper's eq 10 term by term. The paper's eq 11 is the same
expression with ``β_mji g(f_mj) − β_mij g(f_mi)`` in place of ``β_ij (g(f_j) − g(f_i))`` — equal
because β is symmetric — and is stated per user (its ``−λ V_i`` applied once per user, which is how
Algorithm 2 uses it). Both are checked against finite differences in ``tests/test_gapfm.py``.

Whole objective (eq 9 with the constant 1/M dropped, as the paper does for optimisation)::

    F(U, V) = Σ_m w_m F_m − (λ/2) (‖U‖² + ‖V‖²)

with the user weight ``w_m`` (``weight``, GAP only): ``1`` (``"one"``, the paper's), ``1/Z_m``
(``"inverse_z"``, eq 3's normaliser ``Z_m = Σ_l n_ml S(l)``) or ``1/n_m`` (``"inverse_length"``, n_m the
user's number of rated items). ``∂F_m/∂f`` sums over the list, so a step of ``w_m = 1`` grows with the
length of the list; ``1/n_m`` makes one step size fit lists of 10 and of 1,000 items. Appendix D's graded precision and recall objectives replace
``I(R_mi ≤ n)`` by ``g(f_mi − c_mn)``, ``c_mn`` the grade of user m's n-th best rated item, so they
are sums of per-item terms::

    GP_m@n ≈ (1/n) Σ_i ξ_i g(f_i − c_mn),   ξ_i = S(min(y_i, c_mn)) / S(c_mn)
    GR_m@n ≈ (1/Z_m) Σ_i S(y_i) g(f_i − c_mn)

When ``ymax = 1`` every rated item has grade 1 and ``β = 1``: ``F_m = Σ_i g(f_i) Σ_j g(f_j − f_i)``,
the smoothed AP of TFMAP (Shi et al., SIGIR 2012) without its ``1/n`` (appendix D).

Functions
---------
:func:`smoothed_gap` / :func:`smoothed_gap_grad`
    One user's list (plain arrays): value, and value with ``∂F/∂f``.
:func:`objective` / :func:`objective_grad`
    Eq 9 for whole factor matrices on a :class:`~cofiviz.Ratings` table, with ``∂F/∂U`` and
    ``∂F/∂V`` (a ``prange`` over users, then a scatter into the item gradient).
:func:`rank_indicator_shape`, :func:`reciprocal_rank_curve`, :func:`gap_terms`
    Vectorised shapes for plots: the logistic smoothings of eqs 6 and 7 against the exact terms.

The numba kernels (``user_value_grad``, ``user_value``, ``_objective_kernel``) work on one
user's arrays or on CSR arrays and know nothing of cofiviz's classes; :mod:`cofiviz.models.gapfm`
trains with them.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..util.errors import DataError, ParameterError
from ..metrics.gap import grade_deltas
from ..metrics.ranking import rank_order

__all__ = ["OBJECTIVES", "WEIGHTS", "logistic", "smoothed_gap", "smoothed_gap_grad",
           "objective", "objective_grad", "prepare", "Prepared", "rank_indicator_shape", "reciprocal_rank_curve",
           "gap_terms", "thresholding_probabilities", "cumulative_deltas", "warmup"]

#: Objectives GAPfm can optimise and their kernel codes: smoothed GAP (eq 8), graded precision GP@n and
#: graded recall GR@n (appendix D).
OBJECTIVES = {"gap": 0, "gp": 1, "gr": 2}


# ====================================================================== eq 5
def thresholding_probabilities(ymax: int) -> np.ndarray:
    """GAPfm eq 5: ``δ[l − 1] = (2^l − 1) / 2^ymax`` for l = 1..ymax (``[1.0]`` when ymax = 1).

    The δ of the GAP metric (:func:`cofiviz.metrics.gap.grade_deltas`), for any highest grade: the loss
    has no kernel tables that bound it.
    """
    if isinstance(ymax, bool) or int(ymax) != ymax or int(ymax) < 1:
        raise ParameterError(f"ymax must be a positive integer, got {ymax!r}")
    return grade_deltas(int(ymax))


def cumulative_deltas(ymax: int) -> np.ndarray:
    """``S[y] = Σ_{l ≤ y} δ_l`` for y = 0..ymax (``S[0] = 0``); ``β_ij = S[min(y_i, y_j)]`` (eq 4)."""
    S = np.zeros(int(ymax) + 1)
    S[1:] = np.cumsum(thresholding_probabilities(ymax))
    return S


# ====================================================================== scalar logistic
@njit(cache=True, inline="always")
def _g(x):
    return 1.0 / (1.0 + np.exp(-x))


def logistic(x):
    """``g(x) = 1 / (1 + exp(−x))`` (vectorised; exact limits 0 and 1 at ∓inf, no overflow warning)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


# ====================================================================== per-user kernels
@njit(cache=True, nogil=True, inline="always")
def _exp_shifted(f, E):
    """``E_k = exp(f_k − max f)`` (all in (0, 1], no overflow), so that ``g(f_j − f_i) = E_j / (E_i + E_j)``:
    one division per pair instead of one ``exp``."""
    n = f.shape[0]
    fmax = -np.inf
    for k in range(n):
        if f[k] > fmax:
            fmax = f[k]
    for k in range(n):
        E[k] = np.exp(f[k] - fmax)


@njit(cache=True, nogil=True, inline="always")
def _pair_p(E, f, i, j):
    """``g(f_j − f_i)``; falls back to the logistic when both shifted exponentials underflowed."""
    den = E[i] + E[j]
    if den > 0.0:
        return E[j] / den
    return _g(f[j] - f[i])


@njit(cache=True, nogil=True)
def user_value_grad(code, f, s, shift, scale, h):
    """Value of one user's objective and its gradient ``h = ∂F_m/∂f`` (written into ``h[:n]``).

    Parameters
    ----------
    code : int
        0 smoothed GAP (eq 8), 1 GP@n, 2 GR@n (appendix D).
    f : float64[n]
        Scores of the user's (selected) rated items.
    s : float64[n]
        For GAP: ``S(y_i)``, so that ``β_ij = min(s_i, s_j)``. For GP / GR: the per-item weight
        (``ξ_i`` or ``S(y_i)``).
    shift : float
        ``c_mn`` of GP / GR (unused for GAP).
    scale : float
        Multiplies value and gradient (``1/Z_m``, ``1/n``, or 1).

    Notes
    -----
    GAP is O(n²) over the unordered pairs ``i < j``: with ``p = g(f_j − f_i)``, ``g(f_i − f_j) = 1 − p``
    and ``g'`` is ``p (1 − p)`` for both orders; ``p`` is a ratio of precomputed exponentials.
    """
    n = f.shape[0]
    if code != 0:
        val = 0.0
        for k in range(n):
            p = _g(f[k] - shift)
            val += s[k] * p
            h[k] = scale * s[k] * p * (1.0 - p)
        return scale * val
    # A_i accumulates Σ_j β_ij g(f_j − f_i); gk = g(f_k)
    gk = np.empty(n)
    A = np.empty(n)
    E = np.empty(n)
    _exp_shifted(f, E)
    for k in range(n):
        gk[k] = _g(f[k])
        A[k] = 0.5 * s[k]          # j = k: β_kk g(0) = S(y_k) / 2
        h[k] = 0.0
    for i in range(n):
        si = s[i]
        gi = gk[i]
        ai = 0.0
        hi = 0.0
        for j in range(i + 1, n):
            b = si if si < s[j] else s[j]
            p = _pair_p(E, f, i, j)      # g(f_j − f_i) ≈ I(R_j ≤ R_i)
            q = 1.0 - p
            ai += b * p
            A[j] += b * q
            t = b * (gk[j] - gi) * p * q
            hi += t
            h[j] -= t
        A[i] += ai
        h[i] += hi
    val = 0.0
    for k in range(n):
        val += gk[k] * A[k]
        h[k] = scale * (h[k] + gk[k] * (1.0 - gk[k]) * A[k])
    return scale * val


@njit(cache=True, nogil=True)
def user_value(code, f, s, shift, scale):
    """Value only (same conventions as :func:`user_value_grad`)."""
    n = f.shape[0]
    val = 0.0
    if code != 0:
        for k in range(n):
            val += s[k] * _g(f[k] - shift)
        return scale * val
    gk = np.empty(n)
    E = np.empty(n)
    _exp_shifted(f, E)
    for k in range(n):
        gk[k] = _g(f[k])
    for i in range(n):
        si = s[i]
        gi = gk[i]
        acc = 0.5 * si * gi        # j = i: β_ii g(f_i) g(0)
        for j in range(i + 1, n):
            b = si if si < s[j] else s[j]
            p = _pair_p(E, f, i, j)
            acc += b * (gi * p + gk[j] * (1.0 - p))
        val += acc
    return scale * val


@njit(parallel=True, cache=True)
def _objective_kernel(U, V, indptr, items, s, shift, scale, code, want_grad, H, values):
    """Per-user objective values and per-rating ``H = ∂F_m/∂f_mi`` for all users (prange over users)."""
    M = indptr.shape[0] - 1
    D = U.shape[1]
    for m in prange(M):
        lo = indptr[m]
        n = indptr[m + 1] - lo
        if n == 0:
            values[m] = 0.0
            continue
        f = np.empty(n)
        for k in range(n):
            i = items[lo + k]
            acc = 0.0
            for d in range(D):
                acc += U[m, d] * V[i, d]
            f[k] = acc
        if want_grad:
            values[m] = user_value_grad(code, f, s[lo:lo + n], shift[m], scale[m], H[lo:lo + n])
        else:
            values[m] = user_value(code, f, s[lo:lo + n], shift[m], scale[m])


@njit(parallel=True, cache=True)
def _user_gradients(U, V, indptr, items, H, lam, gU):
    """``gU[m] = Σ_i H_mi V_i − λ U_m`` (eq 10 given H)."""
    M = indptr.shape[0] - 1
    D = U.shape[1]
    for m in prange(M):
        for d in range(D):
            gU[m, d] = -lam * U[m, d]
        for k in range(indptr[m], indptr[m + 1]):
            i = items[k]
            hk = H[k]
            for d in range(D):
                gU[m, d] += hk * V[i, d]


@njit(cache=True)
def _item_gradients(U, V, users, items, H, lam, gV):
    """``gV[i] = Σ_m H_mi U_m − λ V_i`` (eq 11 summed over users); a serial scatter, O(|Y| D)."""
    N, D = V.shape
    for i in range(N):
        for d in range(D):
            gV[i, d] = -lam * V[i, d]
    for k in range(users.shape[0]):
        m = users[k]
        i = items[k]
        hk = H[k]
        for d in range(D):
            gV[i, d] += hk * U[m, d]


# ====================================================================== preparing a table
class Prepared:
    """A ratings table in the arrays the kernels take, for one objective.

    Attributes
    ----------
    indptr, users, items : int64 arrays (CSR by user)
    grades : int64[n_ratings]
        Integer grades ``1..ymax``.
    s : float64[n_ratings]
        ``S(y)`` for GAP; ``ξ_i`` (GP) or ``S(y_i)`` (GR).
    shift : float64[n_users]
        ``c_mn`` for GP / GR, 0 for GAP.
    scale : float64[n_users]
        ``w_m`` of a GAP objective (``1``, ``1/Z_m`` or ``1/n_m``), ``1/Z_m`` (GR), ``1/n`` (GP).
    code : int
        :data:`OBJECTIVES` code.
    ymax : int
    """

    def __init__(self, indptr, users, items, grades, s, shift, scale, code, ymax):
        self.indptr, self.users, self.items, self.grades = indptr, users, items, grades
        self.s, self.shift, self.scale, self.code, self.ymax = s, shift, scale, code, ymax


def check_grades_table(ratings, ymax=None) -> tuple[np.ndarray, int]:
    """Integer grades ``1..ymax`` of a :class:`~cofiviz.Ratings` table, and ``ymax``.

    ``ymax`` defaults to the top of the rating scale when it is a whole number (5 on MovieLens), else
    to the largest rating. Raises :class:`DataError` for non-integer ratings, ratings below 1 or
    above ``ymax`` (GAPfm's grades are ``1..ymax``, eq 2; a half-star scale must be doubled first, as
    the paper says in §3), :class:`ParameterError` for a bad ``ymax``.
    """
    r = np.asarray(ratings.ratings, dtype=np.float64)
    if len(r) and not np.all(r == np.round(r)):
        bad = r[r != np.round(r)][0]
        raise DataError(f"GAPfm needs integer grades 1..ymax, got rating {bad:g}; multiply a half-star scale by 2 "
                        "(GAPfm §3) before fitting")
    if ymax is None:
        hi = float(ratings.scale[1])
        ymax = int(hi) if hi == int(hi) and hi >= 1 else int(r.max()) if len(r) else 1
        ymax = max(ymax, int(r.max()) if len(r) else 1)
    if isinstance(ymax, bool) or int(ymax) != ymax or int(ymax) < 1 or int(ymax) > 60:
        raise ParameterError(f"ymax must be an integer in 1..60, got {ymax!r}")
    ymax = int(ymax)
    if len(r) and r.min() < 1:
        raise DataError(f"GAPfm needs grades 1..ymax, got rating {r.min():g} (0 means 'unrated' in GAPfm's notation); "
                        "shift the ratings so the lowest is 1")
    if len(r) and r.max() > ymax:
        raise DataError(f"rating {r.max():g} is above ymax={ymax}; pass a larger ymax")
    return r.astype(np.int64), ymax


#: the user weights ``w_m`` of a GAP objective (eq 9): 1 (the paper), ``1/Z_m`` (eq 3), ``1/n_m``
WEIGHTS = ("one", "inverse_z", "inverse_length")


def prepare(ratings, ymax=None, objective: str = "gap", cutoff: int = 5, weight: str = "one") -> Prepared:
    """Kernel arrays for ``ratings`` (a :class:`~cofiviz.Ratings`) and one objective.

    Parameters
    ----------
    ratings : Ratings
    ymax : int, optional
        Highest grade (default: see :func:`check_grades_table`).
    objective : {"gap", "gp", "gr"}
    cutoff : int
        ``n`` of GP@n / GR@n.
    weight : {"one", "inverse_z", "inverse_length"}
        GAP only: user m's weight ``w_m``: 1 (the paper drops eq 3's ``1/Z_m``), ``1/Z_m`` (each user's
        term approximates a GAP in [0, ~1]) or ``1/n_m`` (each user's term is a mean over the rated
        items). GP@n and GR@n carry their own ``1/n`` and ``1/Z_m`` (appendix D).
    """
    if objective not in OBJECTIVES:
        raise ParameterError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if weight not in WEIGHTS:
        raise ParameterError(f"weight must be one of {', '.join(WEIGHTS)}, got {weight!r}")
    if isinstance(cutoff, bool) or int(cutoff) != cutoff or int(cutoff) < 1:
        raise ParameterError(f"cutoff must be a positive integer, got {cutoff!r}")
    grades, ymax = check_grades_table(ratings, ymax)
    S = cumulative_deltas(ymax)
    sy = S[grades]
    indptr = np.asarray(ratings.indptr, dtype=np.int64)
    users = np.asarray(ratings.users, dtype=np.int64)
    items = np.asarray(ratings.items, dtype=np.int64)
    M = len(indptr) - 1
    counts = np.diff(indptr)
    Z = np.bincount(users, weights=sy, minlength=M)
    code = OBJECTIVES[objective]
    shift = np.zeros(M)
    scale = np.ones(M)
    if code == 0:
        s = sy
        if weight == "inverse_z":
            scale = np.where(Z > 0, 1.0 / np.where(Z > 0, Z, 1.0), 0.0)
        elif weight == "inverse_length":
            scale = np.where(counts > 0, 1.0 / np.maximum(counts, 1), 0.0)
    else:
        # c_mn: grade of the n-th best rated item (the lowest when fewer than n are rated)
        order = np.lexsort((-grades, users))          # by user, grades descending
        pos = np.arange(len(order)) - indptr[users[order]]
        want = np.minimum(int(cutoff), counts) - 1     # the n-th, or the last when fewer are rated
        pick = pos == want[users[order]]
        c = np.zeros(M, dtype=np.int64)
        c[users[order][pick]] = grades[order][pick]
        shift = c.astype(np.float64)
        if code == 1:
            cu = c[users]
            s = S[np.minimum(grades, cu)] / S[np.maximum(cu, 1)]
            scale = np.full(M, 1.0 / int(cutoff))
        else:
            s = sy
            scale = np.where(Z > 0, 1.0 / np.where(Z > 0, Z, 1.0), 0.0)
    return Prepared(indptr, users, items, grades, np.ascontiguousarray(s, dtype=np.float64), shift, scale, code, ymax)


# ====================================================================== public: one list
def _one_list(scores, grades, ymax):
    f = np.asarray(scores, dtype=np.float64)
    y = np.asarray(grades, dtype=np.float64)
    if f.ndim != 1 or y.shape != f.shape:
        raise DataError(f"scores and grades must be 1-D arrays of one length, got shapes {f.shape} and {y.shape}")
    if not np.all(np.isfinite(f)):
        raise DataError("scores must be finite")
    if isinstance(ymax, bool) or int(ymax) != ymax or int(ymax) < 1:
        raise ParameterError(f"ymax must be a positive integer, got {ymax!r}")
    ymax = int(ymax)
    if len(y) and (not np.all(y == np.round(y)) or y.min() < 1 or y.max() > ymax):
        raise DataError(f"grades must be integers 1..ymax={ymax} (the user's rated items)")
    S = cumulative_deltas(ymax)
    return np.ascontiguousarray(f), np.ascontiguousarray(S[y.astype(np.int64)])


def smoothed_gap(scores, grades, ymax: int = 5) -> float:
    """Smoothed GAP of one user's rated items (GAPfm eq 8, without ``1/Z_m``).

    .. math::

        F = \\sum_i g(f_i) \\sum_j \\beta_{ij}\\, g(f_j - f_i), \\qquad
        \\beta_{ij} = \\sum_{l \\le \\min(y_i, y_j)} \\delta_l

    Parameters
    ----------
    scores : array_like, shape (n,)
        Predicted scores ``f_i`` of the rated items.
    grades : array_like, shape (n,)
        Integer grades ``1..ymax``.
    ymax : int
        Highest grade (sets ``δ_l``, eq 5).

    Examples
    --------
    >>> round(smoothed_gap([0.0], [1], ymax=1), 6)   # g(0) * β * g(0) = 0.25
    0.25
    """
    f, s = _one_list(scores, grades, ymax)
    return float(user_value(0, f, s, 0.0, 1.0))


def smoothed_gap_grad(scores, grades, ymax: int = 5) -> tuple[float, np.ndarray]:
    """Value of :func:`smoothed_gap` and its gradient ``∂F/∂f`` (see the module docstring)."""
    f, s = _one_list(scores, grades, ymax)
    h = np.empty(len(f))
    val = user_value_grad(0, f, s, 0.0, 1.0, h)
    return float(val), h


# ====================================================================== public: whole factorisation
def _check_factors(U, V, prepared: Prepared):
    U = np.ascontiguousarray(U, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[1]:
        raise ParameterError(f"U and V must be 2-D with the same number of columns, got {U.shape} and {V.shape}")
    M = len(prepared.indptr) - 1
    if U.shape[0] != M:
        raise ParameterError(f"U has {U.shape[0]} rows, the table has {M} users")
    if len(prepared.items) and V.shape[0] <= prepared.items.max():
        raise ParameterError(f"V has {V.shape[0]} rows, the table uses item {prepared.items.max()}")
    return U, V


def _as_prepared(ratings, ymax, objective_name, cutoff, weight) -> Prepared:
    if isinstance(ratings, Prepared):
        return ratings
    return prepare(ratings, ymax=ymax, objective=objective_name, cutoff=cutoff, weight=weight)


def objective(U, V, ratings, lam: float = 0.0, ymax=None, kind: str = "gap", cutoff: int = 5,
              weight: str = "one") -> float:
    """Eq 9 (1/M dropped): ``F(U, V) = Σ_m w_m F_m − (λ/2)(‖U‖² + ‖V‖²)`` on a ratings table.

    Parameters
    ----------
    U : (n_users, D), V : (n_items, D)
        Factors (rows are ``U_m`` and ``V_i``).
    ratings : Ratings or Prepared
        The training table (grades ``1..ymax``).
    lam : float
        λ of the L2 penalty.
    kind : {"gap", "gp", "gr"}
        Smoothed GAP (eq 8) or appendix D's GP@n / GR@n.
    weight : {"one", "inverse_z", "inverse_length"}
        The user weight ``w_m`` of GAP (see :func:`prepare`).
    """
    p = _as_prepared(ratings, ymax, kind, cutoff, weight)
    U, V = _check_factors(U, V, p)
    values = np.empty(len(p.indptr) - 1)
    _objective_kernel(U, V, p.indptr, p.items, p.s, p.shift, p.scale, p.code, False, np.empty(0), values)
    return float(values.sum() - 0.5 * lam * (np.sum(U * U) + np.sum(V * V)))


def objective_grad(U, V, ratings, lam: float = 0.0, ymax=None, kind: str = "gap", cutoff: int = 5,
                   weight: str = "one") -> tuple[float, np.ndarray, np.ndarray]:
    """:func:`objective` with its gradients ``∂F/∂U`` (eq 10) and ``∂F/∂V`` (eq 11 summed over users)."""
    p = _as_prepared(ratings, ymax, kind, cutoff, weight)
    U, V = _check_factors(U, V, p)
    values = np.empty(len(p.indptr) - 1)
    H = np.empty(len(p.items))
    _objective_kernel(U, V, p.indptr, p.items, p.s, p.shift, p.scale, p.code, True, H, values)
    gU = np.empty_like(U)
    gV = np.empty_like(V)
    _user_gradients(U, V, p.indptr, p.items, H, float(lam), gU)
    _item_gradients(U, V, p.users, p.items, H, float(lam), gV)
    return float(values.sum() - 0.5 * lam * (np.sum(U * U) + np.sum(V * V))), gU, gV


# ====================================================================== shapes for plots
def rank_indicator_shape(delta_f):
    """Eq 6 against the exact term, for a plot over ``Δf = f_j − f_i``.

    Returns ``(exact, smoothed)``: ``I(R_j ≤ R_i)`` — 1 when item j scores above item i, 0 below, ½ at a
    tie (either order) — and ``g(Δf)``.
    """
    d = np.asarray(delta_f, dtype=np.float64)
    exact = np.where(d > 0, 1.0, np.where(d < 0, 0.0, 0.5))
    return exact, logistic(d)


def reciprocal_rank_curve(f_grid, others, smooth_rank: bool = False):
    """Eq 7 for one item whose score moves along ``f_grid`` while ``others`` stay fixed.

    Returns ``(exact, smoothed)`` arrays shaped like ``f_grid``: ``1/R(f)`` with
    ``R(f) = 1 + #{others > f}`` (a staircase), and GAPfm's ``g(f)``. With ``smooth_rank`` the second
    array is instead ``1 / (1 + Σ_j g(f_j − f))``, the rank smoothed with eq 6 (for comparison: it
    follows the staircase, while eq 7 does not look at the other items at all — appendix A's argument
    assumes many items spread over a wide score range).
    """
    x = np.asarray(f_grid, dtype=np.float64)
    o = np.asarray(others, dtype=np.float64).ravel()
    exact = 1.0 / (1.0 + np.sum(o[None, :] > x.reshape(-1)[:, None], axis=1)).reshape(x.shape)
    if smooth_rank:
        smooth = 1.0 / (1.0 + np.sum(logistic(o[None, :] - x.reshape(-1)[:, None]), axis=1)).reshape(x.shape)
    else:
        smooth = logistic(x)
    return exact, smooth


def gap_terms(scores, grades, ymax: int = 5):
    """Per-item contributions to exact GAP (eq 2, times ``Z``) and to smoothed GAP (eq 8), for a bar plot.

    Returns ``(exact, smoothed)``: item i's ``(1/R_i) Σ_{j: R_j ≤ R_i} β_ij`` and ``g(f_i) Σ_j β_ij g(f_j − f_i)``.
    ``R_i`` is the item's position in the order :func:`cofiviz.metrics.rank_order` gives (among equal scores the
    lower grade first, the metrics' tie rule), so that the sum of ``exact`` over ``Z`` is
    :func:`cofiviz.metrics.gap` on tied lists too; the sum of ``smoothed`` is :func:`smoothed_gap`.
    """
    f, s = _one_list(scores, grades, ymax)
    beta = np.minimum(s[:, None], s[None, :])
    R = np.empty(len(f))
    R[rank_order(np.asarray(grades, dtype=np.float64), f)] = np.arange(1, len(f) + 1)
    above = (R[None, :] <= R[:, None]).astype(np.float64)      # [i, j] = I(R_j <= R_i)
    exact = np.sum(beta * above, axis=1) / R
    smooth = logistic(f) * np.sum(beta * logistic(f[None, :] - f[:, None]), axis=1)
    return exact, smooth


def warmup() -> None:
    """Compile (or load from numba's cache) the smoothed-GAP kernels on a tiny input."""
    f = np.array([0.3, -0.2, 0.1])
    y = np.array([5, 3, 4])
    smoothed_gap(f, y)
    smoothed_gap_grad(f, y)
    h = np.empty(3)
    user_value_grad(1, f, np.ones(3), 1.0, 1.0, h)
    user_value(1, f, np.ones(3), 1.0, 1.0)
    indptr = np.array([0, 3], dtype=np.int64)
    p = Prepared(indptr, np.zeros(3, np.int64), np.arange(3, dtype=np.int64), y.astype(np.int64),
                 cumulative_deltas(5)[y], np.zeros(1), np.ones(1), 0, 5)
    U = np.full((1, 2), 0.1)
    V = np.full((3, 2), 0.2)
    objective(U, V, p)
    objective_grad(U, V, p)
