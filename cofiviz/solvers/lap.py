"""Linear assignment (minimum-cost perfect matching) in numba.

The solver is the shortest-augmenting-path method of Jonker and Volgenant [JV87] in the form given
by Crouse [Cr16] (the one ``scipy.optimize.linear_sum_assignment`` uses): rows are added one at a
time, each by a Dijkstra search for the cheapest augmenting path in the reduced costs
``C[i, j] - u[i] - v[j]``, after which the dual variables ``u``, ``v`` are updated so that every
reduced cost stays non-negative. It is exact, handles ties and ``-inf``-free real costs, and runs in
O(n_rows² · n_cols) time and O(n_cols) extra memory.

CofiRank's loss-augmented inference (Weimer et al., NIPS 2007, §5, "Computing the loss") is an
assignment of a user's ``n`` items to ``n`` list positions with the cost

    C[p, j] = a[p] · b[j] − c[p] · f[j],

where ``a[p]`` is the DCG discount of position ``p`` (zero from the truncation ``k`` on), ``b[j]``
the normalised gain of item ``j``, ``c[p]`` the decreasing ``(p + 1)^-0.25`` sequence and ``f[j]``
the item's score. That matrix has rank two; it is Monge (solvable by sorting) only when ``b`` and
``f`` are ordered alike, so in general an exact answer needs a real assignment solver.
:func:`lap_rank2` solves it without building the ``n × n`` matrix: each cost is formed from the
four vectors inside the search loop, which keeps the memory O(n) per user. The rows past the truncation
start assigned in closed form; :func:`lap_rank2_free` lets the caller choose which ``k`` items the top rows
start free on (a guess of the maximiser's top), which shortens the searches when the guess is close.

References
----------
.. [JV87] R. Jonker and A. Volgenant, "A shortest augmenting path algorithm for dense and sparse
   linear assignment problems", Computing 38, 325–340 (1987).
.. [Cr16] D. F. Crouse, "On implementing 2D rectangular assignment algorithms", IEEE Trans.
   Aerospace and Electronic Systems 52(4), 1679–1696 (2016).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..util.errors import ParameterError

__all__ = ["linear_sum_assignment", "lap_dense", "lap_rank2", "lap_rank2_free", "assignment_workspace", "warmup"]


def assignment_workspace(n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Scratch arrays for :func:`lap_dense` / :func:`lap_rank2` with up to ``n_cols`` columns.

    Returns ``(wf, wi)``: a float64 array of length ``3 * n_cols`` and an int64 array of length
    ``5 * n_cols``. Reusing one workspace across calls avoids allocating inside hot loops.
    """
    n = max(int(n_cols), 1)
    return np.empty(3 * n, dtype=np.float64), np.empty(5 * n, dtype=np.int64)


@njit(cache=True, nogil=True)
def _sap(nr, nc, dense, C, a, b, c, f, tail, free, col4row, wf, wi):
    """Shortest augmenting path core; fills ``col4row`` (length ``nr``) and returns the total cost.

    With ``dense`` true the cost of (i, j) is ``C[i, j]``; otherwise it is ``a[i]*b[j] - c[i]*f[j]``
    (square), and rows ``tail..nr-1`` must have ``a = 0`` and ``c`` non-increasing: those rows are
    not searched but assigned directly to the ``nr - tail`` items of largest ``f`` in order, with
    dual variables that make that partial assignment optimal (see :func:`_init_tail`); only rows
    ``0..tail-1`` are then added by shortest augmenting paths. With a non-empty boolean ``free``
    (one per item, ``nr − tail`` of them false) the tail rows take the items *not* marked free
    instead, in order of decreasing ``f`` (:func:`_init_tail_free`). Requires ``nr <= nc``. Returns
    ``nan`` if no finite assignment exists.
    """
    u = wf[0:nr]
    v = wf[nc:2 * nc]
    spc = wf[2 * nc:3 * nc]  # shortest path costs
    path = wi[0:nc]
    row4col = wi[nc:2 * nc]
    remaining = wi[2 * nc:3 * nc]
    sr = wi[3 * nc:4 * nc]  # row visited flags (nr <= nc)
    sc = wi[4 * nc:5 * nc]  # column visited flags
    for i in range(nr):
        u[i] = 0.0
        col4row[i] = -1
    for j in range(nc):
        v[j] = 0.0
        path[j] = -1
        row4col[j] = -1
    n_rows = nr
    if not dense and tail < nr:
        if free.shape[0] == 0:
            _init_tail(nr, tail, c, f, u, v, col4row, row4col, remaining)
        else:
            _init_tail_free(nr, tail, c, f, free, u, v, col4row, row4col, remaining)
        n_rows = tail
    inf = np.inf
    for cur in range(n_rows):
        min_val = 0.0
        i = cur
        n_rem = nc
        for it in range(nc):
            remaining[it] = nc - it - 1
            spc[it] = inf
            sc[it] = 0
        for it in range(nr):
            sr[it] = 0
        sink = -1
        while sink == -1:
            index = -1
            lowest = inf
            sr[i] = 1
            ui = u[i]
            if dense:
                for it in range(n_rem):
                    j = remaining[it]
                    r = min_val + C[i, j] - ui - v[j]
                    if r < spc[j]:
                        path[j] = i
                        spc[j] = r
                    if spc[j] < lowest or (spc[j] == lowest and row4col[j] == -1):
                        lowest = spc[j]
                        index = it
            else:
                ai = a[i]
                ci = c[i]
                for it in range(n_rem):
                    j = remaining[it]
                    r = min_val + (ai * b[j] - ci * f[j]) - ui - v[j]
                    if r < spc[j]:
                        path[j] = i
                        spc[j] = r
                    if spc[j] < lowest or (spc[j] == lowest and row4col[j] == -1):
                        lowest = spc[j]
                        index = it
            min_val = lowest
            if index == -1 or min_val == inf:
                return np.nan
            j = remaining[index]
            if row4col[j] == -1:
                sink = j
            else:
                i = row4col[j]
            sc[j] = 1
            n_rem -= 1
            remaining[index] = remaining[n_rem]
        # dual update
        u[cur] += min_val
        for r_ in range(nr):
            if sr[r_] == 1 and r_ != cur:
                u[r_] += min_val - spc[col4row[r_]]
        for j in range(nc):
            if sc[j] == 1:
                v[j] -= min_val - spc[j]
        # augment along the path
        j = sink
        while True:
            i = path[j]
            row4col[j] = i
            tmp = col4row[i]
            col4row[i] = j
            j = tmp
            if i == cur:
                break
    total = 0.0
    if dense:
        for i in range(nr):
            total += C[i, col4row[i]]
    else:
        for i in range(nr):
            j = col4row[i]
            total += a[i] * b[j] - c[i] * f[j]
    return total


@njit(cache=True, nogil=True, inline="always")
def _by_decreasing_f(n, f, order):
    """The items in order of decreasing ``f`` into ``order`` (ties: lower index first)."""
    key = np.empty(n)
    for j in range(n):
        key[j] = -f[j]
    srt = np.argsort(key, kind="mergesort")
    for t in range(n):
        order[t] = srt[t]


@njit(cache=True, nogil=True)
def _init_tail(n, tail, c, f, u, v, col4row, row4col, order):
    """Optimal partial assignment and duals for the rows ``p ≥ tail`` with costs ``−c_p f_j``.

    Items sorted by decreasing ``f`` (``f_(1) ≥ … ≥ f_(n)``); row ``tail + r`` takes item ``(r+1)``.
    Column duals ``v_(1) = 0``, ``v_(t+1) = v_(t) + c'_t (f_(t) − f_(t+1))`` with
    ``c'_t = c_{min(tail+t, n−1)}``, and ``u_p = −c_p f_π(p) − v_π(p)``: because ``c`` is
    non-increasing, ``u_p + v_j ≤ −c_p f_j`` for every tail row and every item (telescoping the
    increments between the two items' ranks), with equality on the assignment. The shortest
    augmenting path method may start from any partial assignment with such duals.
    """
    _by_decreasing_f(n, f, order)
    v[order[0]] = 0.0
    for t in range(1, n):
        q = tail + t
        if q > n - 1:
            q = n - 1
        v[order[t]] = v[order[t - 1]] + c[q] * (f[order[t - 1]] - f[order[t]])
    for r in range(n - tail):
        p = tail + r
        j = order[r]
        col4row[p] = j
        row4col[j] = p
        u[p] = -c[p] * f[j] - v[j]


@njit(cache=True, nogil=True)
def _init_tail_free(n, tail, c, f, free, u, v, col4row, row4col, order):
    """:func:`_init_tail` with the tail rows on the items not marked ``free``, in decreasing ``f``.

    The tail rows take those ``n − tail`` items in order of decreasing ``f`` — the optimal assignment of
    the tail rows to that set of items, whose duals the same telescoping gives (``v`` of the first
    item 0, each next ``v`` the previous plus ``c_p (f_prev − f_next)`` with ``p`` the row the next
    item takes, ``u_p = −c_p f_π(p) − v_π(p)``). A free item's dual is the largest that keeps every
    tail row's reduced cost non-negative: ``v_j = min_p (−c_p f_j − u_p)``. The top rows then start
    their searches with those items free, which shortens the augmenting paths when the top rows end
    on them (or near them).
    """
    _by_decreasing_f(n, f, order)
    p = tail
    prev = -1
    for t in range(n):
        j = order[t]
        if free[j]:
            continue
        v[j] = 0.0 if prev == -1 else v[prev] + c[p] * (f[prev] - f[j])
        col4row[p] = j
        row4col[j] = p
        u[p] = -c[p] * f[j] - v[j]
        prev = j
        p += 1
    for j in range(n):
        if free[j]:
            best = np.inf
            for q in range(tail, n):
                r = -c[q] * f[j] - u[q]
                if r < best:
                    best = r
            v[j] = best if best < np.inf else 0.0


_EMPTY1 = np.zeros(1, dtype=np.float64)
_EMPTY2 = np.zeros((1, 1), dtype=np.float64)


@njit(cache=True, nogil=True)
def lap_dense(C, col4row, wf, wi):
    """Minimum-cost assignment of the rows of ``C`` (``nr <= nc``) to distinct columns.

    Writes the column of each row into ``col4row`` and returns the total cost (``nan`` when
    infeasible, i.e. some row has only ``inf`` costs left). ``wf``/``wi`` come from
    :func:`assignment_workspace` sized for ``nc`` columns.
    """
    nr, nc = C.shape
    dummy = np.zeros(1)
    return _sap(nr, nc, True, C, dummy, dummy, dummy, dummy, nr, np.zeros(0, dtype=np.bool_), col4row, wf, wi)


@njit(cache=True, nogil=True)
def lap_rank2(a, b, c, f, col4row, wf, wi):
    """Minimum-cost assignment for the rank-two cost ``C[p, j] = a[p]·b[j] − c[p]·f[j]`` (square).

    ``a``, ``c`` are indexed by row (list position) and ``b``, ``f`` by column (item); all have
    length ``n``. Writes the item of each position into ``col4row`` and returns the minimum cost.

    ``a`` must be zero from some position ``k`` on (CofiRank's truncation) and ``c`` non-increasing.
    The rows past ``k`` (costs ``−c_p f_j``) are solved in closed form — the ``n − k`` largest
    ``f`` in order, with optimal duals — and only the ``k`` top rows are added by shortest
    augmenting paths: O(k·n²) work instead of O(n³).
    """
    return lap_rank2_free(a, b, c, f, np.zeros(0, dtype=np.bool_), col4row, wf, wi)


@njit(cache=True, nogil=True)
def lap_rank2_free(a, b, c, f, free, col4row, wf, wi):
    """:func:`lap_rank2` with the ``k`` top rows' searches started on the items marked in ``free``.

    ``free`` is a boolean per item with exactly ``k`` true (``k`` the first position with ``a = 0``), or empty
    (then it is :func:`lap_rank2`). The tail rows start on the other items, in order of decreasing ``f``, with
    optimal duals, and the top rows are added by shortest augmenting paths from there: the same minimum cost,
    found in fewer steps when the top rows end on (or near) the free items — a guess of the top of the
    maximiser. Where several assignments reach the minimum to the last bit, the two starts may return
    different ones.
    """
    n = b.shape[0]
    dummy = np.zeros((1, 1))
    tail = n
    for p in range(n):
        if a[p] == 0.0:
            tail = p
            break
    return _sap(n, n, False, dummy, a, b, c, f, tail, free, col4row, wf, wi)


def linear_sum_assignment(cost, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Solve the linear assignment problem (a drop-in for ``scipy.optimize.linear_sum_assignment``).

    Parameters
    ----------
    cost : array_like, shape (n_rows, n_cols)
        Real costs; ``+inf`` marks a forbidden pair (``-inf`` and ``nan`` are rejected).
    maximize : bool
        Maximise the total instead of minimising it.

    Returns
    -------
    row_ind, col_ind : ndarray of int64
        ``cost[row_ind, col_ind].sum()`` is optimal; ``row_ind`` is sorted. With more rows than
        columns every column is assigned once; otherwise every row is.

    Raises
    ------
    ParameterError
        For a cost array that is not 2-D, holds NaN or ``-inf`` (``+inf`` when maximising), or
        admits no finite assignment.
    """
    C = np.asarray(cost, dtype=np.float64)
    if C.ndim != 2:
        raise ParameterError(f"cost must be a 2-D array, got shape {C.shape}")
    if np.isnan(C).any():
        raise ParameterError("cost holds NaN")
    if maximize:
        C = -C
    if np.isneginf(C).any():
        raise ParameterError("cost holds -inf (or +inf with maximize=True): the problem is unbounded")
    transposed = C.shape[0] > C.shape[1]
    if transposed:
        C = C.T
    nr, nc = C.shape
    if nr == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    C = np.ascontiguousarray(C)
    col4row = np.empty(nr, dtype=np.int64)
    wf, wi = assignment_workspace(nc)
    total = lap_dense(C, col4row, wf, wi)
    if np.isnan(total):
        raise ParameterError("cost matrix is infeasible: no assignment with a finite total cost exists")
    rows = np.arange(nr, dtype=np.int64)
    if transposed:
        order = np.argsort(col4row, kind="stable")
        return col4row[order], rows[order]
    return rows, col4row


def warmup() -> None:
    """Compile (or load from cache) the assignment kernels on a tiny problem."""
    linear_sum_assignment(np.array([[1.0, 2.0], [2.0, 1.0]]))
    wf, wi = assignment_workspace(2)
    x = np.array([1.0, 0.5])
    lap_rank2(x, x, x, x, np.empty(2, dtype=np.int64), wf, wi)
    a = np.array([1.0, 0.0])
    lap_rank2_free(a, x, x, x, np.array([True, False]), np.empty(2, dtype=np.int64), wf, wi)
