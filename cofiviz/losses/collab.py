"""Per-user losses of a whole ratings table, packed for numba kernels that run over users.

:func:`build_loss_data` turns a per-user CSR table (``indptr``, ``ratings`` in stored item order)
and a loss choice into a tuple of arrays (precomputed gains, reference positions, rating levels,
position weights); :func:`user_loss_grad` evaluates one user's loss and subgradient with respect
to that user's scores from it, dispatching on the loss code. Every kernel that loops over users
(the user phase's per-user BMRM, the item phase's loss oracle) calls it.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..util.errors import ParameterError
from .pairwise import level_costs, ordinal_loss_grad, pairs_loss_grad
from .regression import regression_loss_grad
from .structured import (ASSIGNMENT_STARTS, REFERENCE_CODES, REFERENCE_ORDERS, gains_inplace, normalize_gains,
                         reference_weights_inplace, c_vector, eru_discounts, ndcg_discounts, structured_loss_grad)

__all__ = ["LOSS_CODES", "LOSS_NAMES", "USER_WEIGHTS", "build_loss_data", "user_loss_grad",
           "total_loss_grad"]

LOSS_CODES = {"ndcg": 0, "ordinal": 1, "preference": 2, "regression": 3, "eru": 4}
LOSS_NAMES = tuple(LOSS_CODES)
USER_WEIGHTS = ("one", "n_ratings")
NDCG, ORDINAL, PREFERENCE, REGRESSION, ERU = range(5)


@njit(cache=True, nogil=True)
def _user_structured_inputs(yy, a, c, kind, neutral, ref_mode, b, w):
    """One user's normalised gains ``b`` and reference weights ``w``; returns ``Δ``'s constant (0 or 1).

    ``b_j = G(y_j) / max_π Σ_p a_p G(y_π(p))`` with ``G(y) = 2^y − 1`` (NDCG, kind 0) or
    ``max(y − d, 0)`` (ERU, kind 1); a user whose ideal value is 0 gets ``b = 0`` and constant 0.
    """
    gains_inplace(yy, kind, neutral, b)
    ideal = normalize_gains(b, a, b)       # in place: each gain is read before it is overwritten
    reference_weights_inplace(yy, c, ref_mode, w)
    return 1.0 if ideal > 0.0 else 0.0


@njit(cache=True, parallel=True)
def _prepare_structured(indptr, y, a, c, kind, neutral, ref_mode, b, w, dconst):
    n_users = indptr.shape[0] - 1
    for u in prange(n_users):
        lo, hi = indptr[u], indptr[u + 1]
        if hi == lo:
            dconst[u] = 0.0
            continue
        dconst[u] = _user_structured_inputs(y[lo:hi], a, c, kind, neutral, ref_mode, b[lo:hi], w[lo:hi])


def build_loss_data(indptr, ratings, loss: str = "ndcg", *, k: int = 10, c_exponent: float = -0.25,
                    reference: str = "rating", pair_cost: str = "uniform", normalize_pairs: bool = True,
                    eru_neutral: float = 3.0, eru_halflife: float = 5.0, rating_values=None,
                    precompute: bool = False, user_weight: str = "one", assignment_start: str = "scores") -> tuple:
    """Pack per-user loss inputs for :func:`user_loss_grad`.

    Parameters
    ----------
    indptr : (n_users + 1,) int
        CSR offsets of each user's ratings.
    ratings : (nnz,) float
        Ratings in stored order (increasing item index within a user for :class:`cofiviz.Ratings`).
    loss : {"ndcg", "ordinal", "preference", "regression", "eru"}
    k, c_exponent, reference
        Truncation, exponent of ``c_p = (p+1)^e`` and ⟨c, f⟩ reference order of the structured
        losses (see :mod:`cofiviz.losses.structured`).
    pair_cost, normalize_pairs
        Level costs and ``1/M`` normalisation of the pairwise losses (:mod:`cofiviz.losses.pairwise`).
    eru_neutral, eru_halflife
        ERU's neutral vote ``d`` and half-life ``α``.
    rating_values : array, optional
        The rating levels of the pairwise losses (default: the distinct ratings present).
    user_weight : {"one", "n_ratings"}
        Weight of each user's loss: 1 (the papers' sum over users), or the user's number of ratings
        ``n_u``: ``n_u · l(f_u, y_u)``, which at λ is the unweighted problem at ``λ / n_u`` for every user
        with ``n_u`` ratings (see :class:`cofiviz.models.CofiRank`'s ``user_weight``).
    assignment_start : {"scores", "gains"}
        Where the structured losses' assignment starts its searches (``structured_loss_grad``'s ``start``):
        the same minimum either way, ``"gains"`` in fewer steps once the scores are small next to the gains.
    precompute : bool
        Store the structured losses' normalised gains ``b`` and reference weights ``w`` (two floats
        per rating, 9.8 MB at EachMovie size) instead of recomputing them for a user at each
        evaluation (a sort of the user's ratings, next to the O(k·n²) assignment). Default ``False``:
        the values are identical either way; recomputing costs a little time and saves those two
        floats per rating, which matters on large tables.

    Returns
    -------
    tuple
        ``(code, indptr, y, b, w, dconst, level, a, c, C, normalize, kind, neutral, ref_mode, by_length, start)`` —
        arrays and scalars only, ready for numba (``b`` normalised gains and ``w`` reference weights of
        the structured losses, empty when computed per evaluation; ``level`` rating levels of the
        pairwise ones; ``kind``, ``neutral``, ``ref_mode`` what :func:`_user_structured_inputs` needs;
        ``by_length`` whether each user's loss is multiplied by its ``n_u``; ``start`` the assignment's start).
    """
    if loss not in LOSS_CODES:
        raise ParameterError(f"loss must be one of {LOSS_NAMES}, got {loss!r}")
    if reference not in REFERENCE_ORDERS:
        raise ParameterError(f"reference must be one of {REFERENCE_ORDERS}, got {reference!r}")
    if assignment_start not in ASSIGNMENT_STARTS:
        raise ParameterError(f"assignment_start must be one of {ASSIGNMENT_STARTS}, got {assignment_start!r}")
    if user_weight not in USER_WEIGHTS:
        raise ParameterError(f"user_weight must be one of {USER_WEIGHTS}, got {user_weight!r}")
    if int(k) < 1:
        raise ParameterError(f"the truncation k must be >= 1, got {k}")
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    y = np.ascontiguousarray(ratings, dtype=np.float64)
    code = LOSS_CODES[loss]
    counts = np.diff(indptr)
    max_n = int(counts.max()) if len(counts) else 0
    nnz = len(y)
    c = c_vector(max(max_n, 1), c_exponent)
    stored = code in (NDCG, ERU) and bool(precompute)
    b = np.zeros(nnz if stored else 0)
    w = np.zeros(nnz if stored else 0)
    dconst = np.zeros(len(indptr) - 1 if stored else 0)
    kind = 0 if code == NDCG else 1
    if code in (NDCG, ERU):
        a = (ndcg_discounts(max(max_n, 1), k) if code == NDCG
             else eru_discounts(max(max_n, 1), k, eru_halflife))
        if stored:
            _prepare_structured(indptr, y, a, c, kind, float(eru_neutral), REFERENCE_CODES[reference], b, w, dconst)
    else:
        a = np.zeros(1)
    if code in (ORDINAL, PREFERENCE):
        values = np.unique(y) if rating_values is None else np.asarray(rating_values, dtype=np.float64)
        level = np.searchsorted(values, y).astype(np.int32)
        if nnz and (level.max() >= len(values) or np.any(values[level] != y)):
            raise ParameterError("some ratings are not among rating_values")
        C = level_costs(values, pair_cost)
    else:
        level = np.zeros(0, dtype=np.int32)
        C = np.zeros((1, 1))
    return (code, indptr, y, b, w, dconst, level, a, c, C, bool(normalize_pairs), kind, float(eru_neutral),
            REFERENCE_CODES[reference], user_weight == "n_ratings", ASSIGNMENT_STARTS.index(assignment_start))


@njit(cache=True, nogil=True)
def user_loss_grad(data, u, f, g, col4row, wf, wi):
    """Loss of user ``u`` at scores ``f`` (its ``n`` items in stored order); writes ``∂_f`` into ``g``.

    ``col4row``, ``wf``, ``wi``: scratch arrays of at least ``n`` int64, ``5 n`` float64 and
    ``max(5 n, 2 L)`` int64 entries (``n`` the user's items, ``L`` the rows of the pair-cost table).
    """
    code, indptr, y, b, w, dconst, level, a, c, C, normalize, kind, neutral, ref_mode, by_length, start = data
    lo = indptr[u]
    hi = indptr[u + 1]
    n = hi - lo
    if n == 0:
        return 0.0
    if code == 0 or code == 4:
        if b.shape[0] > 0:
            loss = structured_loss_grad(f, b[lo:hi], w[lo:hi], a, c, dconst[u], g, col4row, wf, wi, start)
        else:
            # the gains and weights go at the end of wf, clear of the assignment's first 3 n entries
            m = wf.shape[0]
            bu = wf[m - 2 * n:m - n]
            wu = wf[m - n:m]
            const = _user_structured_inputs(y[lo:hi], a, c, kind, neutral, ref_mode, bu, wu)
            loss = structured_loss_grad(f, bu, wu, a, c, const, g, col4row, wf, wi, start)
    elif code == 1:
        loss = ordinal_loss_grad(f, level[lo:hi], C, normalize, g, wf, wi)
    elif code == 2:
        loss = pairs_loss_grad(f, level[lo:hi], C, normalize, g)
    else:
        loss = regression_loss_grad(f, y[lo:hi], g)
    if by_length:
        for j in range(n):
            g[j] *= n
        loss *= n
    return loss


@njit(cache=True, parallel=True)
def _total_loss_grad(data, F, G, losses):
    indptr = data[1]
    n_users = indptr.shape[0] - 1
    max_n = 1
    for u in range(n_users):
        if indptr[u + 1] - indptr[u] > max_n:
            max_n = indptr[u + 1] - indptr[u]
    L = data[9].shape[0]
    for u in prange(n_users):
        col4row = np.empty(max_n, dtype=np.int64)
        wf = np.empty(5 * max_n)
        wi = np.empty(max(5 * max_n, 2 * L), dtype=np.int64)
        lo, hi = indptr[u], indptr[u + 1]
        # an int64 user, as the other callers pass: prange's index is unsigned, which would compile a second copy
        losses[u] = user_loss_grad(data, np.int64(u), F[lo:hi], G[lo:hi], col4row, wf, wi)


def total_loss_grad(data, scores) -> tuple[np.ndarray, np.ndarray]:
    """Per-user losses and the per-rating subgradient of every user at ``scores`` (one per rating)."""
    F = np.ascontiguousarray(scores, dtype=np.float64)
    if F.shape != data[2].shape:
        raise ParameterError(f"scores must have one entry per rating ({data[2].shape[0]}), got {F.shape}")
    G = np.empty_like(F)
    losses = np.empty(len(data[1]) - 1)
    _total_loss_grad(data, F, G, losses)
    return losses, G
