"""numba kernels of RegSVD's stochastic gradient descent: the biased, regularised incomplete SVD of LCR §2.1, eq 1.

:func:`sgd_epoch` is one epoch over the training entries in a shuffled order in 64-bit floats, each dot product one
chain of additions in the order of the factors; :func:`sgd_epoch_lanes` the same epoch in the precision of its
factor arrays (RegSVD's ``dtype="float32"``) with each dot product in :data:`SGD_LANES` partial sums, which the
processor adds side by side; :func:`predict_mf` the predictions ``μ + b_u + b_i + P_u·Q_i`` of (user, item) pairs.
RegSVD's alternating least squares shares ``_wals_kernels.wals_half`` with LLORMA.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..util.lanes import dot8
from ..util.prefetch import prefetch

__all__ = ["sgd_epoch", "sgd_epoch_lanes", "predict_mf", "SGD_LANES", "SGD_CHUNK", "SGD_PREFETCH", "SGD_GATHER_AHEAD",
           "warmup"]

#: entries :func:`sgd_epoch` reads ahead into its buffers at a time
SGD_CHUNK = 1024
#: how many updates ahead :func:`sgd_epoch` prefetches the factor rows and biases it will update
SGD_PREFETCH = 4
#: how many positions of ``order`` ahead :func:`sgd_epoch` prefetches the entries it copies into its buffers
SGD_GATHER_AHEAD = 64
#: the partial sums of each dot product of :func:`sgd_epoch_lanes`: factor ``c`` goes to sum ``c mod 8``
SGD_LANES = 8


@njit(cache=True, inline="always")
def _prefetch_rows(P, Q, bu, bi, u, i):
    """Start loading every 64-byte line of rows ``P[u]`` and ``Q[i]`` and the biases ``bu[u]``, ``bi[i]``."""
    r = P.shape[1]
    step = max(1, 64 // P.itemsize)
    for c in range(0, r, step):
        prefetch(P[u], c)
        prefetch(Q[i], c)
    prefetch(P[u], r - 1)
    prefetch(Q[i], r - 1)
    prefetch(bu, u)
    prefetch(bi, i)


@njit(cache=True, inline="always")
def _gather_chunk(users, items, ratings, order, k0, k1, cu, ci, cr):
    """Copy the entries at positions ``k0 … k1−1`` of ``order`` into the buffers ``cu``, ``ci``, ``cr``, prefetching
    those :data:`SGD_GATHER_AHEAD` positions ahead."""
    n = order.shape[0]
    for k in range(k0, k1):
        if k + SGD_GATHER_AHEAD < n:
            q = order[k + SGD_GATHER_AHEAD]
            prefetch(users, q)
            prefetch(items, q)
            prefetch(ratings, q)
        p = order[k]
        cu[k - k0] = users[p]
        ci[k - k0] = items[p]
        cr[k - k0] = ratings[p]


@njit(cache=True)
def sgd_epoch(users, items, ratings, order, P, Q, bu, bi, mu, lr, reg, reg_bias, biased):
    """One epoch of SGD on ``Σ (M − μ − b_u − b_i − P_u·Q_i)² + reg(‖P_u‖² + ‖Q_i‖²) + reg_bias(b_u² + b_i²)``.

    Visits the entries in ``order`` (a permutation drawn by the caller's seeded generator) and
    returns the sum of squared errors seen during the epoch (before each update). The entries of each
    chunk of ``SGD_CHUNK`` positions of ``order`` are first copied into small buffers: those reads
    do not depend on each other, so the processor overlaps their cache misses, which the updates,
    each waiting on the one before, cannot. Each update also prefetches the factor rows and biases of the
    update ``SGD_PREFETCH`` places ahead, so that their loads overlap the updates between. The updates and
    their order are the same as without the buffers and prefetches.
    """
    r = P.shape[1]
    sse = 0.0
    n = order.shape[0]
    cu = np.empty(SGD_CHUNK, dtype=np.int64)
    ci = np.empty(SGD_CHUNK, dtype=np.int64)
    cr = np.empty(SGD_CHUNK)
    for k0 in range(0, n, SGD_CHUNK):
        k1 = min(k0 + SGD_CHUNK, n)
        _gather_chunk(users, items, ratings, order, k0, k1, cu, ci, cr)
        m = k1 - k0
        for t in range(m):
            if t + SGD_PREFETCH < m:
                _prefetch_rows(P, Q, bu, bi, cu[t + SGD_PREFETCH], ci[t + SGD_PREFETCH])
            u = cu[t]
            i = ci[t]
            f = mu
            if biased:
                f += bu[u] + bi[i]
            for c in range(r):
                f += P[u, c] * Q[i, c]
            e = cr[t] - f
            sse += e * e
            if biased:
                bu[u] += lr * (e - reg_bias * bu[u])
                bi[i] += lr * (e - reg_bias * bi[i])
            for c in range(r):
                pu = P[u, c]
                qi = Q[i, c]
                P[u, c] += lr * (e * qi - reg * pu)
                Q[i, c] += lr * (e * pu - reg * qi)
    return sse


@njit(cache=True, inline="always")
def _dot_lanes(x, y):
    """``x·y`` in :data:`SGD_LANES` partial sums: with ``c8 = r − r mod 8``, entry ``c < c8`` is added to sum
    ``c mod 8`` and the entries ``c8 … r−1`` to sum 0, each sum in order of ``c``; the sums are then added pairwise,
    ``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))``. A fixed order of operations, so the same bits on every
    CPU, in the precision of ``x`` and ``y`` (1-D, C-contiguous); the eight sums are one SIMD vector
    (:func:`cofiviz.util.lanes.dot8`)."""
    return dot8(x, y, x.shape[0])


@njit(cache=True)
def sgd_epoch_lanes(users, items, ratings, order, P, Q, bu, bi, mu, lr, reg, reg_bias, biased):
    """:func:`sgd_epoch`'s epoch in the precision of ``P``, ``Q``, ``bu``, ``bi``, ``ratings`` and the scalars
    ``mu``, ``lr``, ``reg``, ``reg_bias`` (all of one float type: ``np.float32`` for RegSVD's ``dtype="float32"``),
    each prediction's dot product by :func:`_dot_lanes`.

    The chain of one dot product, which the next update waits for, is eight times shorter, and 32-bit rows are
    half the memory: the epoch takes about half the time of :func:`sgd_epoch`. The updates are those of
    :func:`sgd_epoch` in the same order (each entry's ``e`` rounded to the arrays' precision); the returned sum of
    squared errors is accumulated in 64 bits.
    """
    r = P.shape[1]
    sse = 0.0
    n = order.shape[0]
    cu = np.empty(SGD_CHUNK, dtype=np.int64)
    ci = np.empty(SGD_CHUNK, dtype=np.int64)
    cr = np.empty(SGD_CHUNK, dtype=ratings.dtype)
    for k0 in range(0, n, SGD_CHUNK):
        k1 = min(k0 + SGD_CHUNK, n)
        _gather_chunk(users, items, ratings, order, k0, k1, cu, ci, cr)
        m = k1 - k0
        for t in range(m):
            if t + SGD_PREFETCH < m:
                _prefetch_rows(P, Q, bu, bi, cu[t + SGD_PREFETCH], ci[t + SGD_PREFETCH])
            u = cu[t]
            i = ci[t]
            Pu = P[u]
            Qi = Q[i]
            f = mu
            if biased:
                f += bu[u] + bi[i]
            f += _dot_lanes(Pu, Qi)
            e = cr[t] - f
            e64 = np.float64(e)
            sse += e64 * e64
            if biased:
                bu[u] += lr * (e - reg_bias * bu[u])
                bi[i] += lr * (e - reg_bias * bi[i])
            for c in range(r):
                pu = Pu[c]
                qi = Qi[c]
                Pu[c] = pu + lr * (e * qi - reg * pu)
                Qi[c] = qi + lr * (e * pu - reg * qi)
    return sse


@njit(cache=True, parallel=True)
def predict_mf(users, items, P, Q, bu, bi, mu, out):
    """``μ + b_u + b_i + P_u·Q_i`` for each pair, the dot product added in order of the factors.

    Four pairs are computed side by side: each sum is still one chain of additions in the same order (the same
    number to the last bit), but four independent chains keep the adder busy where one waits on each addition.
    """
    r = P.shape[1]
    n = users.shape[0]
    for blk in prange((n + 3) // 4):
        p = 4 * blk
        if p + 3 < n:
            u0, u1, u2, u3 = users[p], users[p + 1], users[p + 2], users[p + 3]
            i0, i1, i2, i3 = items[p], items[p + 1], items[p + 2], items[p + 3]
            f0 = mu + bu[u0] + bi[i0]
            f1 = mu + bu[u1] + bi[i1]
            f2 = mu + bu[u2] + bi[i2]
            f3 = mu + bu[u3] + bi[i3]
            for c in range(r):
                f0 += P[u0, c] * Q[i0, c]
                f1 += P[u1, c] * Q[i1, c]
                f2 += P[u2, c] * Q[i2, c]
                f3 += P[u3, c] * Q[i3, c]
            out[p], out[p + 1], out[p + 2], out[p + 3] = f0, f1, f2, f3
        else:
            for q in range(p, n):
                u = users[q]
                i = items[q]
                f = mu + bu[u] + bi[i]
                for c in range(r):
                    f += P[u, c] * Q[i, c]
                out[q] = f


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel of this module on a tiny problem."""
    users = np.array([0, 0, 0, 1, 1], dtype=np.int32)
    items = np.array([0, 1, 2, 0, 2], dtype=np.int32)
    ratings = np.array([5.0, 3.0, 1.0, 4.0, 2.0])
    rng = np.random.default_rng(0)
    P, Q = rng.normal(size=(2, 2)), rng.normal(size=(3, 2))
    bu, bi = np.zeros(2), np.zeros(3)
    sgd_epoch(users, items, ratings, np.arange(5, dtype=np.int64), P, Q, bu, bi, 3.0, 0.01, 0.1, 0.1, True)
    predict_mf(users, items, P, Q, bu, bi, 3.0, np.empty(5))
    f32 = np.float32
    P32, Q32, bu32, bi32 = (a.astype(f32) for a in (P, Q, bu, bi))
    sgd_epoch_lanes(users, items, ratings.astype(f32), np.arange(5, dtype=np.int32), P32, Q32, bu32, bi32, f32(3.0),
                    f32(0.01), f32(0.1), f32(0.1), True)   # RegSVD's order is int32
    predict_mf(users, items, P32, Q32, bu32, bi32, 3.0, np.empty(5))
