"""numba kernels of the bilinear rank functional (:mod:`cofiviz.models.bilinear`).

Nothing here knows about models, pandas or files: every kernel takes flat NumPy arrays.

Notation. A training table has ``nnz`` entries ``p = (u_p, i_p, y_p)`` stored by user (``indptr``,
``items``, ``ratings``; ``users`` per entry); ``item_indptr`` / ``item_pos`` list each item's entries.
The model's projected user and item vectors are ``P (m × r)`` and ``Q (n × r)`` and its item offsets
``b (n)``, so that ``f_p = P[u_p] · Q[i_p] + b[i_p]`` (:func:`predict`).

:func:`loss_pass` evaluates each user's loss on their list and its derivative in every score,
``G_p = ∂E/∂f_p`` (in parallel over users), for four families, by integer code:

- 0…5: LCR's pairwise surrogates of Table 1 (:mod:`cofiviz.losses.surrogates`), every pair of
  different ratings once, ``ΔM``-weighted, ties dropped;
- 6, 7: Rao–Kupper and Davidson (:mod:`cofiviz.losses.ties`): pairs of different ratings are wins, pairs
  of equal ratings are ties (or dropped with ``use_ties = False``);
- 8: a likelihood of the whole list read as an ordered partition, by ``pl_ties``: Plackett–Luce with
  Breslow's (0) or Efron's (1) rule (:mod:`cofiviz.losses.listwise`), or the ordered-partition model
  that chooses each group of equal ratings as a whole (Tran, Phung & Venkatesh, SDM 2011,
  :mod:`cofiviz.losses.partition`) with the mean potential (2; its loss without the parameter-free constant)
  or the product potential (3);
- 9: the smoothed-rank NDCG loss (ApproxNDCG, :mod:`cofiviz.losses.smoothed_rank`), scale ``gamma``.

Codes 8 and 9 skip a user whose ratings are all equal (no order to learn); code 9 also skips a user
with no rating above 0 (no gain). Each user's loss is divided by its number of pairs (pairwise) or items
(code 8), as GCR weights users by ``1/s_u``; the smoothed NDCG loss (code 9) is already normalised by
the list's ideal DCG and is not divided. :func:`factor_grads` then chains ``G`` back to ``P``, ``Q`` and ``b``:
``∂E/∂P[u] = Σ_{p ∈ u} G_p Q[i_p]``, ``∂E/∂Q[i] = Σ_{p ∈ i} G_p P[u_p]``, ``∂E/∂b[i] = Σ_{p ∈ i} G_p``
(parallel over users, then items); the model multiplies by the feature matrices in NumPy.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..losses.listwise import pl_loss_grad
from ..losses.partition import partition_loss_grad, partition_product_loss_grad
from ..losses.smoothed_rank import smoothed_rank_loss_grad
from ..losses.surrogates import surrogate_value_deriv
from ..losses.ties import tie_value_deriv

__all__ = ["LOSS_CODES", "predict", "loss_pass", "factor_grads", "adagrad_rows", "warmup"]

#: Integer code of every loss the bilinear model trains with.
LOSS_CODES = {"log_m": 0, "log_a": 1, "exp_m": 2, "exp_a": 3, "hinge_m": 4, "hinge_a": 5,
              "rao_kupper": 6, "davidson": 7, "plackett_luce": 8, "smoothed_rank": 9}


@njit(cache=True, parallel=True)
def predict(users, items, P, Q, b, out):
    """``out[p] = P[users[p]] · Q[items[p]] + b[items[p]]``."""
    r = P.shape[1]
    for p in prange(users.shape[0]):
        u = users[p]
        i = items[p]
        s = b[i]
        for c in range(r):
            s += P[u, c] * Q[i, c]
        out[p] = s


@njit(cache=True, parallel=True)
def loss_pass(indptr, ratings, f, code, gamma, tie_param, use_ties, pl_ties, active, G, user_loss, user_count):
    """Per-user loss and ``G = ∂E/∂f`` (module documentation).

    Parameters
    ----------
    indptr, ratings, f : arrays of the table (``f``: current scores of its entries)
    code : int
        Loss code (:data:`LOSS_CODES`).
    gamma : float
        Margin γ of the surrogates (codes 0…5), or scale γ > 0 of the smoothed rank (code 9).
    tie_param : float
        θ (Rao–Kupper) or ν (Davidson).
    use_ties : bool
        Tie-aware models: use pairs of equal ratings as ties (True) or drop them.
    pl_ties : int
        Listwise likelihood of code 8: 0 Plackett–Luce with Breslow's ties, 1 with Efron's, 2 the
        ordered-partition model with the mean potential, 3 with the product potential.
    active : bool[m]
        Users to evaluate; the others get zero loss and gradient.
    G, user_loss, user_count : outputs
        ``G[p]``; each user's normalised loss; its number of pairs (items for the listwise losses), 0
        for a user without a usable pair (a user whose ratings are all equal, unless ties are used).
    """
    m = indptr.shape[0] - 1
    for u in prange(m):
        a0 = indptr[u]
        a1 = indptr[u + 1]
        for p in range(a0, a1):
            G[p] = 0.0
        user_loss[u] = 0.0
        user_count[u] = 0
        if not active[u] or a1 - a0 < 2:
            continue
        if code >= 8:
            distinct = False
            gain = ratings[a0] > 0.0
            for p in range(a0 + 1, a1):
                if ratings[p] != ratings[a0]:
                    distinct = True
                if ratings[p] > 0.0:
                    gain = True
            if not distinct or (code == 9 and not gain):
                continue
            n = a1 - a0
            g = np.empty(n)
            if code == 9:
                loss = smoothed_rank_loss_grad(f[a0:a1], ratings[a0:a1], gamma, g)
                inv = 1.0
            elif pl_ties == 2:
                loss = partition_loss_grad(f[a0:a1], ratings[a0:a1], g)
                inv = 1.0 / n
            elif pl_ties == 3:
                loss = partition_product_loss_grad(f[a0:a1], ratings[a0:a1], g)
                inv = 1.0 / n
            else:
                loss = pl_loss_grad(f[a0:a1], ratings[a0:a1], pl_ties, g)
                inv = 1.0 / n
            for k in range(n):
                G[a0 + k] = g[k] * inv
            user_loss[u] = loss * inv
            user_count[u] = n
            continue
        s = 0
        loss = 0.0
        for a in range(a0, a1):
            ra = ratings[a]
            for b in range(a + 1, a1):
                rb = ratings[b]
                if ra == rb:
                    if code < 6 or not use_ties:
                        continue
                    v, d = tie_value_deriv(code - 6, True, f[a] - f[b], tie_param)
                    G[a] += d
                    G[b] -= d
                else:
                    if ra > rb:
                        hi = a
                        lo = b
                    else:
                        hi = b
                        lo = a
                    if code < 6:
                        v, d = surrogate_value_deriv(code, abs(ra - rb), f[hi] - f[lo], gamma)
                    else:
                        v, d = tie_value_deriv(code - 6, False, f[hi] - f[lo], tie_param)
                    G[hi] += d
                    G[lo] -= d
                loss += v
                s += 1
        if s > 0:
            inv = 1.0 / s
            for p in range(a0, a1):
                G[p] *= inv
            user_loss[u] = loss * inv
            user_count[u] = s
        else:
            for p in range(a0, a1):
                G[p] = 0.0


@njit(cache=True, parallel=True)
def factor_grads(indptr, items, users, item_indptr, item_pos, G, P, Q, gP, gQ, gb):
    """``gP[u] = Σ_{p∈u} G_p Q[i_p]``, ``gQ[i] = Σ_{p∈i} G_p P[u_p]``, ``gb[i] = Σ_{p∈i} G_p``."""
    m = indptr.shape[0] - 1
    n = item_indptr.shape[0] - 1
    r = P.shape[1]
    for u in prange(m):
        for c in range(r):
            gP[u, c] = 0.0
        for p in range(indptr[u], indptr[u + 1]):
            g = G[p]
            if g != 0.0:
                i = items[p]
                for c in range(r):
                    gP[u, c] += g * Q[i, c]
    for i in prange(n):
        for c in range(r):
            gQ[i, c] = 0.0
        s = 0.0
        for k in range(item_indptr[i], item_indptr[i + 1]):
            p = item_pos[k]
            g = G[p]
            s += g
            if g != 0.0:
                u = users[p]
                for c in range(r):
                    gQ[i, c] += g * P[u, c]
        gb[i] = s


@njit(cache=True, parallel=True)
def adagrad_rows(X, gX, H, rows, lr, eps):
    """AdaGrad on the listed rows only: ``H[u] += g²``, ``X[u] −= lr · g / (√H + eps)`` (fold-in)."""
    r = X.shape[1]
    for k in prange(rows.shape[0]):
        u = rows[k]
        for c in range(r):
            g = gX[u, c]
            H[u, c] += g * g
            X[u, c] -= lr * g / (math.sqrt(H[u, c]) + eps)


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel on a tiny table, every loss family."""
    indptr = np.array([0, 3, 5], dtype=np.int64)
    users = np.array([0, 0, 0, 1, 1], dtype=np.int32)
    items = np.array([0, 1, 2, 0, 2], dtype=np.int32)
    ratings = np.array([5.0, 3.0, 5.0, 2.0, 4.0])
    P, Q, b = np.full((2, 2), 0.1), np.full((3, 2), 0.2), np.zeros(3)
    f = np.empty(5)
    predict(users, items, P, Q, b, f)
    G, ul, uc = np.empty(5), np.empty(2), np.empty(2, dtype=np.int64)
    active = np.ones(2, dtype=np.bool_)
    for code, gamma, pl_ties in ((0, 0.0, 0), (6, 0.0, 0), (7, 0.0, 0), (8, 0.0, 0), (8, 0.0, 2), (8, 0.0, 3), (9, 1.0, 0)):
        loss_pass(indptr, ratings, f, code, gamma, 1.5, True, pl_ties, active, G, ul, uc)
    iptr = np.array([0, 2, 3, 5], dtype=np.int64)
    ipos = np.array([0, 3, 1, 2, 4], dtype=np.int64)
    gP, gQ, gb = np.empty_like(P), np.empty_like(Q), np.empty(3)
    factor_grads(indptr, items, users, iptr, ipos, G, P, Q, gP, gQ, gb)
    adagrad_rows(P, gP, np.zeros_like(P), np.array([1], dtype=np.int64), 0.1, 1e-8)
