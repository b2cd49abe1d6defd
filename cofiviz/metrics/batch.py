"""Many users, many metrics, one pass: :func:`score_lists`.

Users' candidate lists are given in CSR layout (``offsets``, ``ratings``, ``scores``); one numba
kernel runs a ``prange`` over blocks of users, sorts each list once under the tie rule, builds its
ideal order once (by counting grades when the ratings are small integers) and evaluates every
requested metric from those two arrays. Scratch arrays are allocated once per block, so memory is
O(total candidates) for the inputs plus O(n_metrics * n_users) for the result, and no Python object
is created per user.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._validation import MAX_GAP_GRADE, check_real, check_ymax
from .err import _err_user, resolve_top
from .eru import _eru_user, _neru_user, eru_weights
from .gap import S_TABLE, T_TABLE, _gap_user, _gp_user, _gr_user
from .names import FAMILIES, parse_metrics
from .ndcg import GAINS, _ndcg_user, discounts
from .precision import _ap_user, _precision_user, _rr_user
from .ranking import MAX_TABLE_GRADE, OK, Batch, _block_bounds, _prepare_user, _scratch

__all__ = ["score_lists"]

#: The kernel's code of each family: its position in :data:`FAMILIES`, the order of the kernel's branches.
_CODES = {family: code for code, family in enumerate(FAMILIES)}
_GRADED = {"gap", "gp", "gr"}
_NEEDS_IDEAL = {"ndcg", "gap", "neru", "gp"}


@njit(parallel=True, cache=True, nogil=True)  # the dashboards score while serving: let the event loop run
def _score_lists_kernel(offsets, ratings, scores, codes, ks, threshold, S, T, d, w, disc, gain, need_ideal, graded,
                        ymax, err_top, n_blocks, max_len):
    n_users = offsets.shape[0] - 1
    n_m = codes.shape[0]
    out = np.empty((n_m, n_users))
    status = np.zeros(n_users, np.int8)
    for b in prange(n_blocks):
        sc = _scratch(max_len)
        yr = np.empty(max_len)
        yi = np.empty(max_len)
        counts = np.empty(MAX_TABLE_GRADE + 1, np.int64)
        inner = np.empty(S.shape[0] + 8)
        u0, u1 = _block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            for m in range(n_m):
                out[m, u] = np.nan
            if n == 0:
                continue
            st, gmax = _prepare_user(ratings[lo:lo + n], scores[lo:lo + n], sc, yr, yi, counts, need_ideal, graded,
                                     ymax)
            if st != OK:
                status[u] = st
                continue
            r = yr[:n]
            i = yi[:n]
            for m in range(n_m):
                c = codes[m]
                k = ks[m]
                if c == 0:
                    v = _ndcg_user(r, i, k, disc, gain, gmax)
                elif c == 1:
                    v = _ap_user(r, k, threshold)
                elif c == 2:
                    v = _gap_user(r, i, k, S, T, inner, gmax)
                elif c == 3:
                    v = _precision_user(r, k, threshold)
                elif c == 4:
                    v = _rr_user(r, threshold)
                elif c == 5:
                    v = _eru_user(r, k, d, w)
                elif c == 6:
                    v = _neru_user(r, i, k, d, w)
                elif c == 7:
                    v = _gp_user(r, i, k, S)
                elif c == 8:
                    v = _gr_user(r, k, S)
                else:
                    v = _err_user(r, k, err_top)
                out[m, u] = v
    return out, status


def score_lists(offsets, ratings, scores, metrics=("ndcg@10", "ap", "gap"), threshold=4, ymax=None, d=3,
                alpha=5) -> dict[str, np.ndarray]:
    """Score many users' candidate lists with several metrics in one parallel pass.

    User ``u``'s candidates are ``ratings[offsets[u]:offsets[u + 1]]`` with predicted scores
    ``scores[offsets[u]:offsets[u + 1]]`` (CSR layout). Each list is sorted once under the tie rule
    (scores descending; among equal scores the lower true rating first, then the lower position) and
    every requested metric is computed from that ranking, with the definitions of the single-list
    functions :func:`ndcg`, :func:`average_precision`, :func:`gap`, :func:`precision_at_k`,
    :func:`mrr`, :func:`eru`, :func:`neru`, :func:`graded_precision`, :func:`graded_recall` and :func:`err`.

    Parameters
    ----------
    offsets : array_like of int, shape (n_users + 1,)
        CSR offsets: ``offsets[0] == 0``, non-decreasing, ``offsets[-1] == len(ratings)``.
    ratings : array_like, shape (n_candidates,)
        True graded relevance, finite and >= 0 (0 = unrated, irrelevant).
    scores : array_like, shape (n_candidates,)
        Predicted scores, higher = ranked earlier; no NaN (+-inf allowed).
    metrics : sequence of str or comma-separated str, default ("ndcg@10", "ap", "gap")
        Names from :data:`METRIC_FORMS` (case-insensitive): ``ndcg``, ``ndcg@K``, ``ap``, ``ap@K``,
        ``gap``, ``gap@K``, ``p@K``, ``mrr``, ``eru``, ``eru@K``, ``neru``, ``neru@K``, ``gp@K``,
        ``gr@K``, ``err``, ``err@K``. ``ndcg`` without a cutoff is NDCG over the whole list.
    threshold : float, default 4
        Relevance threshold (rating >= threshold) of ``ap``, ``p@K`` and ``mrr`` (GAPfm uses 5).
    ymax : int or None, default None
        Highest grade for ``gap``, ``gp@K`` and ``gr@K`` (at most 50), which need integer ratings in
        ``0..ymax``; ``None`` takes ``int(max(ratings))`` over the whole batch (at least 1). The
        values of these metrics do not depend on ``ymax`` (the 1 / 2^ymax factor of every delta_l
        cancels, see :mod:`cofiviz.metrics.gap`), so ``ymax`` only validates the grades; it is
        ignored when no GAP-family metric is requested. ``err`` takes it as the top of its gain
        ``(2^g - 1) / 2^ymax`` (any positive real; ``None``: the largest rating of the batch, at least 1).
    d, alpha : float, default 3 and 5
        Neutral vote and half-life of ``eru`` / ``neru``.

    Returns
    -------
    dict of str to numpy.ndarray
        Canonical lower-case metric name (``"ndcg@10"``) -> float64 array of length ``n_users``. NaN
        marks a skipped user: an empty list for every metric, and otherwise as documented per metric
        (``ndcg``: no rating > 0; ``ap`` and ``mrr``: no rating >= threshold; ``gap``, ``gp``,
        ``gr``: no rated candidate; ``neru``: no rating > d; ``err`` skips only empty lists). Average with
        ``np.nanmean``.

    Raises
    ------
    DataError
        Bad offsets, mismatched lengths, NaN scores, non-finite or negative ratings, non-integer
        grades or grades above ``ymax`` for the GAP family.
    ParameterError
        Unknown metric names (the message lists :data:`METRIC_FORMS`) or bad parameters.

    Examples
    --------
    >>> out = score_lists([0, 3, 5], [3, 0, 1, 5, 4], [0.9, 0.2, 0.4, 0.1, 0.3], ["ndcg@10", "ap"])
    >>> sorted(out), out["ap"].tolist()
    (['ap', 'ndcg@10'], [nan, 1.0])
    """
    specs = parse_metrics(metrics)
    t = check_real(threshold, "threshold", positive=True)
    dd = check_real(d, "d")
    aa = check_real(alpha, "alpha", greater_than=1.0)
    families = {s.family for s in specs}
    graded = bool(families & _GRADED)
    # ymax only matters to the GAP family (a caller may pass its rating scale's top for any metrics)
    ym = None if (ymax is None or not graded) else check_ymax(ymax)
    bt = Batch(offsets, ratings, scores)
    names = [s.name for s in specs]
    if bt.n_users == 0:
        return {name: np.empty(0) for name in names}
    length = max(bt.max_len, 1)
    codes = np.array([_CODES[s.family] for s in specs], dtype=np.int64)
    ks = np.array([0 if s.k is None else s.k for s in specs], dtype=np.int64)
    w = eru_weights(length, aa) if families & {"eru", "neru"} else np.zeros(1)
    disc = discounts(length) if "ndcg" in families else np.zeros(1)
    need_ideal = bool(families & _NEEDS_IDEAL)
    limit = float(MAX_GAP_GRADE if ym is None else ym)
    top = 1.0
    if "err" in families:  # a non-finite rating gives no top: the kernel reports it by index and user
        top = resolve_top(bt.ratings, ymax) if np.isfinite(bt.ratings).all() else 1.0
    with bt.threads():
        out, status = _score_lists_kernel(bt.offsets, bt.ratings, bt.scores, codes, ks, t, S_TABLE, T_TABLE, dd, w,
                                          disc, GAINS, need_ideal, graded, limit, top, *bt.scratch_args())
    bt.raise_for(status, ym)
    return {name: out[m] for m, name in enumerate(names)}
