"""Zero-one pair error (LCR, Lee et al., WWW 2014: eq 6 and §5.1 "Evaluation Metrics").

For one user with test items T and training items M (each with a true rating and a predicted score),
the compared pairs are the unordered pairs {i, j} with i in T, j in T ∪ M, i ≠ j, and **different**
true ratings; pairs of two training items are not used (§5.1: "pairs of items belonging to the train
and test sets are used as well as pairs of items that belong only to the test set"). A pair is an
error when the item with the higher rating does not get a strictly higher score; in particular equal
scores count as an error (the pessimistic tie rule of :mod:`cofiviz.metrics`)::

    E01(u) = #{compared pairs ordered wrongly} / #{compared pairs}

Differences from the paper's printed formula, on purpose: LCR's
§5.1 normaliser ``Z_u = |T_u| (|M_u ∪ T_u| - 1)`` counts ordered pairs including pairs with equal
ratings (which can never be errors there), so its numbers are lower than these; and its indicator
``1[ΔM · Δf < 0]`` does not count score ties as errors.

Complexity: O(n log n) per user with n = |T| + |M|: one sort by the tie rule, then two merge-sort
inversion counts (all items, and training items only; their difference is the pairs that involve a
test item).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..util.errors import DataError
from ._validation import as_float_vector, check_offsets, n_blocks_for, threads_for
from .ranking import block_bounds, sort_scratch, sort_order

__all__ = ["zero_one", "zero_one_lists"]


@njit(cache=True)
def _asc_pairs(a, buf):
    """Sort ``a`` ascending (in place, using ``buf`` of the same length); return (number of pairs
    i < j with a[i] < a[j] in the original order, number of pairs with different values)."""
    n = a.shape[0]
    asc = 0
    src = a
    dst = buf
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            t = lo
            while i < mid and j < hi:
                if src[i] < src[j]:
                    dst[t] = src[i]
                    i += 1
                else:
                    asc += i - lo
                    dst[t] = src[j]
                    j += 1
                t += 1
            while i < mid:
                dst[t] = src[i]
                i += 1
                t += 1
            while j < hi:
                asc += mid - lo
                dst[t] = src[j]
                j += 1
                t += 1
            lo += 2 * width
        tmp = src
        src = dst
        dst = tmp
        width *= 2
    same = 0
    run = 1
    for p in range(1, n):
        if src[p] == src[p - 1]:
            run += 1
        else:
            same += run * (run - 1) // 2
            run = 1
    same += run * (run - 1) // 2
    return asc, n * (n - 1) // 2 - same


@njit(cache=True)
def _zero_one_user(ty, ts, my, ms, ys, ss, sc, seq, buf):
    """(wrong pairs, compared pairs) of one user; ``ys``, ``ss``, ``seq``, ``buf`` are float64 scratch
    of length >= len(ty) + len(my) and ``sc`` the sort scratch of :func:`ranking.sort_scratch`."""
    nt = ty.shape[0]
    nm = my.shape[0]
    n = nt + nm
    for i in range(nt):
        ys[i] = ty[i]
        ss[i] = ts[i]
    for i in range(nm):
        ys[nt + i] = my[i]
        ss[nt + i] = ms[i]
    sort_order(ss[:n], ys[:n], sc[0], sc[1], sc[2], sc[3])
    order = sc[0]
    for p in range(n):
        seq[p] = ys[order[p]]
    asc_all, diff_all = _asc_pairs(seq[:n], buf[:n])
    q = 0
    for p in range(n):
        if order[p] >= nt:
            seq[q] = ys[order[p]]
            q += 1
    asc_tr, diff_tr = _asc_pairs(seq[:nm], buf[:nm])
    return asc_all - asc_tr, diff_all - diff_tr


@njit(parallel=True, cache=True)
def _zero_one_parallel(t_off, t_y, t_s, m_off, m_y, m_s, n_blocks, max_len):
    n_users = t_off.shape[0] - 1
    out = np.empty(n_users)
    for b in prange(n_blocks):
        ys = np.empty(max_len)
        ss = np.empty(max_len)
        sc = sort_scratch(max_len)
        seq = np.empty(max_len)
        buf = np.empty(max_len)
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            a = t_off[u]
            c = m_off[u]
            wrong, compared = _zero_one_user(t_y[a:t_off[u + 1]], t_s[a:t_off[u + 1]],
                                             m_y[c:m_off[u + 1]], m_s[c:m_off[u + 1]],
                                             ys, ss, sc, seq, buf)
            out[u] = wrong / compared if compared > 0 else np.nan
    return out


def _pair_arrays(ratings, scores, rname, sname):
    y = as_float_vector(ratings, rname)
    s = as_float_vector(scores, sname)
    if y.shape[0] != s.shape[0]:
        raise DataError(f"{rname} and {sname} must have the same length, got {y.shape[0]} and {s.shape[0]}")
    bad = ~np.isfinite(y)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{rname} must be finite, got {y[i]} at position {i}")
    nan = np.isnan(s)
    if nan.any():
        i = int(np.flatnonzero(nan)[0])
        raise DataError(f"{sname} must not contain NaN (found at position {i}); +inf and -inf are allowed")
    return y, s


def zero_one(test_ratings, test_scores, train_ratings=None, train_scores=None) -> float:
    """Zero-one pair error of one user (LCR eq 6 and §5.1).

    .. math::

        E_{0/1} = \\frac{\\#\\{\\{i, j\\}: i \\in T,\\ j \\in T \\cup M,\\ y_i > y_j,\\ f_i \\le f_j\\}}
                       {\\#\\{\\{i, j\\}: i \\in T,\\ j \\in T \\cup M,\\ y_i \\ne y_j\\}}

    Every unordered pair is counted once; pairs of two training items are not used; a tie in the
    scores (:math:`f_i = f_j`) between different ratings is an error (pessimistic tie rule).

    Parameters
    ----------
    test_ratings, test_scores : array_like, shape (n_test,)
        True ratings and predicted scores of the user's test items.
    train_ratings, train_scores : array_like, shape (n_train,), optional
        The same for the user's training items (omit both for none). Ratings may be any finite
        numbers (only their order matters); scores must not be NaN.

    Returns
    -------
    float
        Error rate in [0, 1] (lower is better); NaN when the user is skipped: no compared pair (no test
        item, or all of the user's ratings equal).

    Examples
    --------
    >>> zero_one([5, 1], [0.1, 0.9], [3], [0.5])   # all three pairs are mis-ordered
    1.0
    """
    ty, ts = _pair_arrays(test_ratings, test_scores, "test_ratings", "test_scores")
    if (train_ratings is None) != (train_scores is None):
        raise DataError("train_ratings and train_scores must be given together")
    if train_ratings is None:
        my = np.empty(0)
        ms = np.empty(0)
    else:
        my, ms = _pair_arrays(train_ratings, train_scores, "train_ratings", "train_scores")
    n = ty.shape[0] + my.shape[0]
    m = max(n, 1)
    wrong, compared = _zero_one_user(ty, ts, my, ms, np.empty(m), np.empty(m), sort_scratch(m), np.empty(m),
                                     np.empty(m))
    return float(wrong / compared) if compared > 0 else float("nan")


def zero_one_lists(test_offsets, test_ratings, test_scores, train_offsets, train_ratings, train_scores):
    """Per-user zero-one pair error of many users in CSR layout (one parallel pass).

    User ``u``'s test items are ``test_ratings[test_offsets[u]:test_offsets[u + 1]]`` (scores alike)
    and its training items ``train_ratings[train_offsets[u]:train_offsets[u + 1]]``. See
    :func:`zero_one` for the definition; O(n log n) per user.

    Returns
    -------
    numpy.ndarray of float64, shape (n_users,)
        NaN for skipped users (no compared pair, e.g. no test item). LCR's E0/1 is the mean over the
        users that are not skipped (``np.nanmean``).
    """
    ty, ts = _pair_arrays(test_ratings, test_scores, "test_ratings", "test_scores")
    my, ms = _pair_arrays(train_ratings, train_scores, "train_ratings", "train_scores")
    t_off = check_offsets(test_offsets, ty.shape[0], "test_offsets", "test_ratings")
    m_off = check_offsets(train_offsets, my.shape[0], "train_offsets", "train_ratings")
    if t_off.shape[0] != m_off.shape[0]:
        raise DataError(f"test_offsets and train_offsets must describe the same users, got "
                        f"{t_off.shape[0] - 1} and {m_off.shape[0] - 1} users")
    n_users = t_off.shape[0] - 1
    if n_users == 0:
        return np.empty(0)
    max_len = int((np.diff(t_off) + np.diff(m_off)).max())
    with threads_for(ty.shape[0] + my.shape[0]):
        return _zero_one_parallel(t_off, ty, ts, m_off, my, ms, n_blocks_for(n_users), max(max_len, 1))
