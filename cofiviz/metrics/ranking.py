"""The tie rule and the sorting kernels every metric shares.

Tie rule (pessimistic, the same everywhere in cofiviz): candidates are ordered by score, highest
first; among equal scores the candidate with the *lower true rating* goes first, and among equal
scores and equal ratings the one with the lower position in the candidate list goes first. A tie
in the predicted scores therefore never helps: a constant predictor gets the worst possible order
and never scores above a random order, and a pair with equal scores and different ratings is a
mis-ordered pair.

The kernels here check one list (NaN scores, bad ratings: a status code per list, turned into a
:class:`~cofiviz.util.errors.DataError` by the caller), rank it into an index array and build its ideal
order (true ratings descending). Ranking compares the composite key (score desc, rating asc,
position asc), so ties need no second pass: short lists are insertion-sorted; longer ones are first
distributed into 2n buckets by a monotone map of the score (about O(n) for spread-out scores), with
an iterative median-of-3 quicksort for crowded buckets and for lists with infinite scores. The
ideal order is built by counting grades when the ratings are integers <= 16, by sorting otherwise.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..util.errors import DataError
from ._validation import MAX_GAP_GRADE, as_float_vector, check_list, check_offsets, n_blocks_for, threads_for

__all__ = ["rank_order", "TIE_RULE"]

TIE_RULE = ("pessimistic: order by score descending; among equal scores the lower true rating goes "
            "first, then the lower candidate position")

_SMALL = 16          # runs at most this long are insertion-sorted
_STACK = 128         # quicksort stack entries (the smaller side is always processed first: log2(n) deep)


@njit(cache=True)
def _before(s, y, a, b):
    """True when candidate ``a`` is ranked before candidate ``b`` under the tie rule."""
    sa = s[a]
    sb = s[b]
    if sa != sb:
        return sa > sb
    ya = y[a]
    yb = y[b]
    if ya != yb:
        return ya < yb
    return a < b


@njit(cache=True)
def _insertion(s, y, order, lo, hi):
    for i in range(lo + 1, hi + 1):
        v = order[i]
        sv = s[v]
        yv = y[v]
        j = i - 1
        while j >= lo:
            w = order[j]
            sw = s[w]
            # is v before w?
            if sv > sw or (sv == sw and (yv < y[w] or (yv == y[w] and v < w))):
                order[j + 1] = w
                j -= 1
            else:
                break
        order[j + 1] = v


@njit(cache=True)
def _partition(s, y, order, lo, hi):
    mid = (lo + hi) >> 1
    if _before(s, y, order[mid], order[lo]):
        t = order[mid]
        order[mid] = order[lo]
        order[lo] = t
    if _before(s, y, order[hi], order[mid]):
        t = order[hi]
        order[hi] = order[mid]
        order[mid] = t
        if _before(s, y, order[mid], order[lo]):
            t = order[mid]
            order[mid] = order[lo]
            order[lo] = t
    pivot = order[mid]
    order[mid] = order[hi]
    order[hi] = pivot
    i = lo
    j = hi - 1
    while True:
        while i < hi and _before(s, y, order[i], pivot):
            i += 1
        while j >= lo and _before(s, y, pivot, order[j]):
            j -= 1
        if i >= j:
            break
        t = order[i]
        order[i] = order[j]
        order[j] = t
        i += 1
        j -= 1
    order[hi] = order[i]
    order[i] = pivot
    return i


@njit(cache=True)
def _qsort_range(s, y, order, lo, hi, stack):
    """Sort ``order[lo..hi]`` (inclusive) under the tie rule: iterative quicksort, median-of-3 pivots,
    insertion sort below _SMALL elements, smaller side first (stack depth <= log2 n)."""
    stack[0] = lo
    stack[1] = hi
    top = 1
    while top > 0:
        top -= 1
        lo = stack[2 * top]
        hi = stack[2 * top + 1]
        while hi - lo >= _SMALL:
            p = _partition(s, y, order, lo, hi)
            if hi - p > p - lo:
                if hi > p + 1:
                    stack[2 * top] = p + 1
                    stack[2 * top + 1] = hi
                    top += 1
                hi = p - 1
            else:
                if p - 1 > lo:
                    stack[2 * top] = lo
                    stack[2 * top + 1] = p - 1
                    top += 1
                lo = p + 1
        if hi > lo:
            _insertion(s, y, order, lo, hi)


@njit(cache=True)
def sort_order(s, y, order, stack, bucket, count):
    """Fill ``order[:n]`` (n = len(s)) with the candidate indices in ranked order (tie rule).

    Scratch: ``stack`` int64 of length >= 2 * _STACK, ``bucket`` int64 of length >= n, ``count``
    int64 of length >= 2 n + 1. The candidates are first distributed into 2 n buckets by score
    (a monotone map, so a bucket holds a contiguous range of the final order and equal scores share a
    bucket), then each bucket is sorted with the exact comparator (score desc, rating asc, position
    asc): about O(n) for spread-out scores, O(n log n) when scores cluster. Lists with infinite
    scores or a single distinct score go straight to the comparator quicksort. The composite key
    makes every candidate distinct, so the result is unique whatever the path.
    """
    n = s.shape[0]
    if n <= 24:
        for i in range(n):
            order[i] = i
        if n > 1:
            _insertion(s, y, order, 0, n - 1)
        return
    mx = s[0]
    mn = s[0]
    for i in range(1, n):
        v = s[i]
        mx = max(mx, v)
        mn = min(mn, v)
    nb = 2 * n  # buckets
    width = mx - mn
    scale = nb / width if width > 0.0 else 0.0
    if not (width > 0.0 and width < np.inf and scale < np.inf):
        for i in range(n):
            order[i] = i
        _qsort_range(s, y, order, 0, n - 1, stack)
        return
    for b in range(nb + 1):
        count[b] = 0
    for i in range(n):
        b = min(np.int64((mx - s[i]) * scale), nb - 1)
        bucket[i] = b
        count[b + 1] += 1
    big = 0
    for b in range(nb):
        big = max(big, count[b + 1])
        count[b + 1] += count[b]
    for i in range(n):
        b = bucket[i]
        order[count[b]] = i
        count[b] += 1
    if big <= 16:
        # every bucket is short: one insertion pass over the whole array only moves candidates
        # within their bucket (a candidate in an earlier bucket has a strictly higher score)
        _insertion(s, y, order, 0, n - 1)
        return
    start = 0
    for b in range(nb):
        end = count[b]
        m = end - start
        if m > 1:
            if m <= 32:
                _insertion(s, y, order, start, end - 1)
            else:
                _qsort_range(s, y, order, start, end - 1, stack)
        start = end


@njit(cache=True)
def _gather(y, order, n, out):
    """``out[p] = y[order[p]]`` for p < n: the true ratings in ranked order."""
    for p in range(n):
        out[p] = y[order[p]]


@njit(cache=True)
def _ideal_desc(y, out, counts, gmax, sc):
    """Fill ``out[:n]`` with the ratings ``y`` sorted descending (the ideal order's ratings).

    When ``gmax >= 0`` the ratings are known to be integers in 0..gmax (gmax <= MAX_TABLE_GRADE) and
    are counted into ``counts`` by one vectorisable comparison pass per grade; otherwise they are
    ranked with the list sort itself (ratings as scores), using the sort scratch ``sc``.
    """
    n = y.shape[0]
    if gmax >= 0:
        for g in range(gmax + 1):
            c = 0
            v = np.float64(g)
            for i in range(n):
                c += y[i] == v
            counts[g] = c
        p = 0
        for g in range(gmax, -1, -1):
            c = counts[g]
            out[p:p + c] = np.float64(g)
            p += c
    else:
        sort_order(y, y, sc[0], sc[1], sc[2], sc[3])
        _gather(y, sc[0], n, out)


# Status of a list in the parallel kernels (checked, and turned into a DataError, by the caller).
OK, NAN_SCORE, BAD_RATING, NOT_INTEGER, ABOVE_YMAX = 0, 1, 2, 3, 4
#: Integer grades up to this bound get the counting ideal order and table look-ups.
MAX_TABLE_GRADE = 16


@njit(cache=True)
def _count_bad(y, s):
    """(NaN scores, non-finite or negative ratings, finite non-integer ratings, ratings above
    MAX_TABLE_GRADE) of one list, in one branch-free (vectorisable) pass."""
    nan = 0
    bad = 0
    frac = 0
    big = 0
    for i in range(y.shape[0]):
        r = y[i]
        ok = (r >= 0.0) & (r < np.inf)
        nan += s[i] != s[i]
        bad += 1 - ok
        frac += ok & (r != np.floor(r))
        big += r > MAX_TABLE_GRADE
    return nan, bad, frac, big


@njit(cache=True, fastmath={"nnan", "ninf", "nsz"})
def _max_finite(y):
    """Largest value of ``y`` (called only once ``y`` is known finite, so fast-math holds)."""
    m = 0.0
    for i in range(y.shape[0]):
        m = max(m, y[i])
    return m


@njit(cache=True)
def _prepare_user(y, s, sc, yr, yi, counts, need_ideal, graded, ymax):
    """Check and rank one list (``y``, ``s`` are its slices).

    Returns ``(status, gmax)``: ``status`` is OK or the first problem found (NAN_SCORE, BAD_RATING,
    and when ``graded`` (a GAP-family metric is wanted) NOT_INTEGER or ABOVE_YMAX), in which case
    nothing else is computed; ``gmax`` is the list's largest grade when all ratings are integers
    <= MAX_TABLE_GRADE, else -1. On success ``yr[:n]`` holds the ratings in ranked order and, if
    ``need_ideal``, ``yi[:n]`` the ratings in ideal order. ``sc`` is the tuple made by :func:`sort_scratch`;
    its ranked order ``sc[0][:n]`` survives only when the ideal order is not asked for.
    """
    n = y.shape[0]
    nan, bad, frac, big = _count_bad(y, s)
    if nan > 0:
        return NAN_SCORE, -1
    if bad > 0:
        return BAD_RATING, -1
    mx = _max_finite(y)
    if graded:
        if frac > 0:
            return NOT_INTEGER, -1
        if mx > ymax:
            return ABOVE_YMAX, -1
    gmax = np.int64(mx) if (frac == 0 and big == 0) else -1
    sort_order(s, y, sc[0], sc[1], sc[2], sc[3])
    _gather(y, sc[0], n, yr)
    if need_ideal:
        _ideal_desc(y, yi, counts, gmax, sc)  # reuses (overwrites) the sort scratch
    return OK, gmax


@njit(cache=True)
def _rank_list(y, s):
    """One (validated) list: return (ratings in ranked order, ratings in ideal order, order, gmax)."""
    n = y.shape[0]
    sc = sort_scratch(max(n, 1))
    yr = np.empty(n)
    yi = np.empty(n)
    counts = np.empty(MAX_TABLE_GRADE + 1, np.int64)
    status, gmax = _prepare_user(y, s, sc, yr, yi, counts, False, False, 0.0)
    order = sc[0][:n].copy()
    _ideal_desc(y, yi, counts, gmax, sc)
    return yr, yi, order, gmax


def ranked(y: np.ndarray, s: np.ndarray):
    """Validated float64 arrays of one list -> (ranked ratings, ideal ratings, order, gmax)."""
    return _rank_list(y, s)


def rank_order(ratings, scores) -> np.ndarray:
    """Indices of the candidates in the order cofiviz ranks them (the tie rule).

    Parameters
    ----------
    ratings : array_like, shape (n,)
        True ratings (graded relevance, >= 0; used only to break ties in ``scores``).
    scores : array_like, shape (n,)
        Predicted scores, higher = ranked earlier; no NaN.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        ``order[p]`` is the candidate at position ``p + 1``. Equal scores are ordered pessimistically:
        lower true rating first, then lower candidate position.

    Examples
    --------
    >>> rank_order([5, 1, 3], [0.2, 0.2, 0.9]).tolist()
    [2, 1, 0]
    """
    y, s = check_list(ratings, scores)
    return _rank_list(y, s)[2]


@njit(cache=True)
def sort_scratch(max_len):
    """Per-block sort scratch: (order, stack, bucket, count)."""
    return (np.empty(max_len, np.int64), np.empty(2 * _STACK, np.int64), np.empty(max_len, np.int64),
            np.empty(2 * max_len + 1, np.int64))


@njit(cache=True)
def block_bounds(b, n_blocks, n_users):
    """The users ``[u0, u1)`` of block ``b`` of ``n_blocks`` (the unit of the batch kernels' ``prange``)."""
    return b * n_users // n_blocks, (b + 1) * n_users // n_blocks


block_bounds = block_bounds


@njit(parallel=True, cache=True, nogil=True)  # the dashboards score while serving: let the event loop run
def _prepare_lists_kernel(offsets, ratings, scores, need_ideal, graded, ymax, n_blocks, max_len, ranked, ideal, gmax,
                          status):
    n_users = offsets.shape[0] - 1
    for b in prange(n_blocks):
        sc = sort_scratch(max_len)
        counts = np.empty(MAX_TABLE_GRADE + 1, np.int64)
        u0, u1 = block_bounds(b, n_blocks, n_users)
        for u in range(u0, u1):
            lo = offsets[u]
            n = offsets[u + 1] - lo
            gmax[u] = -1
            if n == 0:
                continue
            # written in place: a list's slices of ``ranked`` and ``ideal`` (empty when not needed)
            st, g = _prepare_user(ratings[lo:lo + n], scores[lo:lo + n], sc, ranked[lo:lo + n],
                                  ideal[lo:lo + n] if need_ideal else ideal, counts, need_ideal, graded, ymax)
            status[u] = st
            gmax[u] = g


class Prepared(NamedTuple):
    """Every user's list ranked once (:func:`prepare_lists`): what the families' batch kernels read."""

    offsets: np.ndarray
    ranked: np.ndarray
    ideal: np.ndarray
    gmax: np.ndarray
    n_blocks: int
    status: np.ndarray


def prepare_lists(bt: "Batch", need_ideal: bool, graded: bool, ymax: float) -> Prepared:
    """Check and rank every list of ``bt`` in one parallel pass (call inside ``bt.threads()``).

    ``ranked`` holds each list's true ratings in ranked order, ``ideal`` (when ``need_ideal``; else empty) the
    same sorted descending, ``gmax`` each list's largest grade when its grades are integers up to
    :data:`MAX_TABLE_GRADE` (else -1). With ``graded``, ratings must be integer grades up to ``ymax``. ``status``
    is OK for every list that passed its checks (:meth:`Batch.raise_for` turns the first other into an error).
    """
    n_blocks, max_len = bt.scratch_args()
    n = bt.ratings.shape[0]
    ranked = np.empty(n)
    ideal = np.empty(n if need_ideal else 0)
    gmax = np.empty(bt.n_users, np.int64)
    status = np.zeros(bt.n_users, np.int8)
    _prepare_lists_kernel(bt.offsets, bt.ratings, bt.scores, need_ideal, graded, ymax, n_blocks, max_len, ranked,
                          ideal, gmax, status)
    return Prepared(bt.offsets, ranked, ideal, gmax, n_blocks, status)


class Batch:
    """A CSR batch after the cheap checks (lengths, offsets); the values themselves are checked list
    by list inside the kernels, which report a status per user (private)."""

    __slots__ = ("offsets", "ratings", "scores", "n_users", "max_len")

    def __init__(self, offsets, ratings, scores):
        y = as_float_vector(ratings, "ratings")
        s = as_float_vector(scores, "scores")
        if y.shape[0] != s.shape[0]:
            raise DataError(f"ratings and scores must have the same length, got {y.shape[0]} and {s.shape[0]}")
        self.offsets = check_offsets(offsets, y.shape[0])
        self.ratings, self.scores = y, s
        self.n_users = self.offsets.shape[0] - 1
        self.max_len = int(np.diff(self.offsets).max()) if self.n_users > 0 else 0

    def threads(self):
        """Context manager for the kernel call: single-threaded for small batches."""
        return threads_for(self.ratings.shape[0])

    def scratch_args(self):
        """(n_blocks, max_len) for a kernel call; call inside :meth:`threads`."""
        return n_blocks_for(self.n_users), max(self.max_len, 1)

    def raise_for(self, status, ymax=None) -> None:
        """Raise a DataError naming the first user whose list the kernel rejected (``status`` != OK)."""
        bad = np.flatnonzero(status)
        if bad.size == 0:
            return
        u = int(bad[0])
        a, b = int(self.offsets[u]), int(self.offsets[u + 1])
        y, s = self.ratings[a:b], self.scores[a:b]
        code = int(status[u])
        if code == NAN_SCORE:
            i = a + int(np.flatnonzero(np.isnan(s))[0])
            raise DataError(f"scores must not contain NaN (found at index {i}, user {u}); +inf and -inf are allowed")
        if code == BAD_RATING:
            i = a + int(np.flatnonzero(~(np.isfinite(y) & (y >= 0)))[0])
            raise DataError(f"ratings must be finite and >= 0 (0 = unrated, irrelevant), got {self.ratings[i]} "
                            f"at index {i} (user {u})")
        if code == NOT_INTEGER:
            i = a + int(np.flatnonzero(y != np.floor(y))[0])
            raise DataError(f"ratings must be integer grades 0..ymax for gap, gp@K and gr@K, got "
                            f"{self.ratings[i]:g} at index {i} (user {u}); rescale half stars, e.g. multiply by 2")
        if code == ABOVE_YMAX:
            i = a + int(np.argmax(y))
            limit = f"ymax={ymax}" if ymax is not None else f"{MAX_GAP_GRADE} (the largest grade supported)"
            raise DataError(f"ratings must be integer grades 0..{limit} for gap, gp@K and gr@K, got "
                            f"{self.ratings[i]:g} at index {i} (user {u})")
        raise DataError(f"user {u}: invalid list (status {code})")  # pragma: no cover

