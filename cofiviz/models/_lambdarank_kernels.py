"""numba kernels of the LambdaRank model step (:mod:`cofiviz.models._lambdarank`): linear scores and the objective.

Objective: for each list, every pair of items with different ratings contributes LambdaRank's
``|ΔNDCG_ij| log(1 + exp(−σ (s_i − s_j)))``, ``|ΔNDCG_ij|`` the change of the list's NDCG when i and j swap places
in the ranking by the current scores. Lists are independent; each writes its own row of the outputs (no reduction
across threads), and sums run in a fixed order, so results do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def linear_scores(X, w, out):
    """``out[p] = X[p] · w``, summed in column order."""
    for p in range(X.shape[0]):
        acc = 0.0
        for c in range(X.shape[1]):
            acc += X[p, c] * w[c]
        out[p] = acc


@njit(cache=True, inline="always")
def _softplus(z):
    """``log(1 + exp(z))`` without overflow."""
    if z > 0.0:
        return z + np.log1p(np.exp(-z))
    return np.log1p(np.exp(z))


@njit(cache=True, inline="always")
def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@njit(parallel=True, cache=True)
def lambdarank(indptr, ratings, X, s, sigma, k, want_hessian, first, loss_u, grad_u, hess_u):
    """Per list (``indptr[l]:indptr[l + 1]``, written to row ``u = l − first`` of the outputs): the loss
    ``loss_u[u] = Σ_{y_i > y_j} |ΔNDCG_ij| softplus(−σ (s_i − s_j))``, its gradient with respect to the weights
    in ``grad_u[u]`` (``Σ_i λ_i x_i``, λ_i LambdaRank's summed lambdas) and, when ``want_hessian``, its Hessian
    with ``|ΔNDCG|`` held fixed in ``hess_u[u]`` (``Σ_{pairs} c_ij (x_i − x_j)(x_i − x_j)ᵀ`` with
    ``c_ij = σ² |ΔNDCG_ij| p(1 − p)``, ``p`` the logistic of ``−σ (s_i − s_j)``). ``s`` are the scores; positions
    for ``|ΔNDCG|`` come from a stable sort by descending score; ``k > 0`` truncates the discount at position k.

    The outputs hold the lists ``first, first + 1, …, first + len(loss_u) − 1``, so that a caller can run through
    the lists a block at a time. Returns, per list of the block, whether it has a pair to
    rank (a rating above another, and a positive ideal DCG)."""
    n_lists = loss_u.shape[0]
    F = X.shape[1]
    active = np.zeros(n_lists, dtype=np.bool_)
    for u in prange(n_lists):
        l = first + u   # the list; u is its row in the outputs
        loss_u[u] = 0.0
        for c in range(F):
            grad_u[u, c] = 0.0
            if want_hessian:
                for e in range(F):
                    hess_u[u, c, e] = 0.0
        lo, hi = indptr[l], indptr[l + 1]
        m = hi - lo
        if m < 2:
            continue
        order = np.argsort(-s[lo:hi], kind="mergesort")
        disc = np.zeros(m)
        for r in range(m):
            pos = r + 1
            if k <= 0 or pos <= k:
                disc[order[r]] = 1.0 / np.log2(1.0 + pos)
        gains = np.empty(m)
        for i in range(m):
            gains[i] = 2.0 ** ratings[lo + i] - 1.0
        ideal = np.sort(gains)[::-1]
        idcg = 0.0
        for r in range(m):
            pos = r + 1
            if k <= 0 or pos <= k:
                idcg += ideal[r] / np.log2(1.0 + pos)
        if idcg <= 0.0:
            continue
        lam = np.zeros(m)
        lap = np.zeros((m, m)) if want_hessian else np.zeros((1, 1))
        total = 0.0
        pairs = 0
        for i in range(m):
            for j in range(m):
                if ratings[lo + i] <= ratings[lo + j]:
                    continue
                pairs += 1
                delta = abs(gains[i] - gains[j]) * abs(disc[i] - disc[j]) / idcg
                if delta == 0.0:
                    continue
                z = sigma * (s[lo + i] - s[lo + j])
                total += delta * _softplus(-z)
                p = _sigmoid(-z)
                rho = sigma * delta * p
                lam[i] -= rho
                lam[j] += rho
                if want_hessian:
                    c2 = sigma * sigma * delta * p * (1.0 - p)
                    lap[i, i] += c2
                    lap[j, j] += c2
                    lap[i, j] -= c2
                    lap[j, i] -= c2
        if pairs == 0:
            continue
        active[u] = True
        loss_u[u] = total
        for i in range(m):
            if lam[i] != 0.0:
                for c in range(F):
                    grad_u[u, c] += lam[i] * X[lo + i, c]
        if want_hessian:
            # H = X_uᵀ (lap X_u), lap the weighted Laplacian of the pairs
            LX = np.zeros((m, F))
            for i in range(m):
                for j in range(m):
                    if lap[i, j] != 0.0:
                        for c in range(F):
                            LX[i, c] += lap[i, j] * X[lo + j, c]
            for i in range(m):
                for c in range(F):
                    xi = X[lo + i, c]
                    if xi != 0.0:
                        for e in range(F):
                            hess_u[u, c, e] += xi * LX[i, e]
    return active


@njit(cache=True)
def add_active_rows(active, rows, started, total):
    """Add ``rows[b]`` of every ``active[b]`` into ``total`` in the order of ``b``: ``total`` becomes ``rows[b]``
    itself for the first active row when ``started`` is False. Across blocks this is the sum that
    ``rows[active].sum(axis=0)`` of every row at once computes, bit for bit (NumPy adds along a leading axis one row
    after another). Returns whether ``total`` holds a row."""
    flat = total.reshape(-1)
    for b in range(active.shape[0]):
        if not active[b]:
            continue
        row = rows[b].reshape(-1)
        if started:
            for c in range(flat.shape[0]):
                flat[c] += row[c]
        else:
            for c in range(flat.shape[0]):
                flat[c] = row[c]
            started = True
    return started


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel of this module on a tiny problem."""
    indptr = np.array([0, 3, 5], dtype=np.int64)
    ratings = np.array([5.0, 3.0, 1.0, 4.0, 2.0])
    X = np.ones((5, 3))
    s = np.empty(5)
    linear_scores(X, np.ones(3), s)
    active = lambdarank(indptr, ratings, X, s, 1.0, 0, True, 0, np.empty(2), np.empty((2, 3)), np.empty((2, 3, 3)))
    add_active_rows(active, np.ones((2, 3)), True, np.zeros(3))
    add_active_rows(active, np.ones((2, 3, 3)), True, np.zeros((3, 3)))
