"""numba kernels of the local models: GCR, LCR and LLORMA's prediction (Lee et al., WWW 2014).

Nothing here knows about models, pandas or files: every kernel takes flat NumPy arrays.

Notation. A training table has ``nnz`` entries ``p`` = (u_p, i_p, M_p), stored by user (``indptr``,
``items``, ``ratings``, and ``users`` per entry); ``item_indptr`` / ``item_pos`` list the entries of
each item. There are ``q`` local models ``t`` with factors ``U_t (m × r)``, ``V_t (n × r)`` and
(optionally) item offsets ``B_t (n)``; their kernel weights are ``K(u_t, u)`` and ``K(i_t, i)``. GCR is
the case ``q = 1`` with unit weights.

Layouts. The kernels of GCR and LCR (:func:`combine`, :func:`lcr_gradients`, :func:`apply_step`,
:func:`model_weights`, :func:`sq_norms`) take their arrays by user or item first: ``U[u, t]`` (m × q × r),
``V[i, t]`` (n × q × r), ``B[i, t]``, ``Ku[u, t]``, ``Ki[i, t]``, so that what one entry reads of every
local model lies in one block of memory; on data whose tables outgrow the caches, reading ``q``
scattered rows per entry costs several times more. LLORMA's kernels take them by model first
(``U[t, u]``, ``Ku[t, u]``).

Estimation step (Algorithm 1, lines 9-18; prediction, Algorithm 2 and eq 15)
    :func:`combine` computes the kernel-weighted convex combination of the local models,
    ``f̂_p = Σ_t α_t(p) ([U_t V_tᵀ]_{u,i} + B[t, i])`` with ``α_t(p) = Ku[t,u] Ki[t,i] / w_p`` and
    ``w_p = Σ_s Ku[s,u] Ki[s,i]`` (a point no anchor reaches, ``w_p = 0``, takes the plain mean of the
    local models: ``α_t = 1/q``), and :func:`pair_pass` the pairwise objective of eq (14) and its
    derivative with respect to every combined prediction, ``G_p = ∂E/∂f̂_p``:

        E = Σ_u (1/s_u) Σ_{(i,j): M_ui > M_uj} L(ΔM_uij, f̂_ui − f̂_uj)
        G_p = (1/s_u) [ Σ_{j: M_up > M_uj} L'(·) − Σ_{j: M_uj > M_up} L'(·) ]

    with ``s_u`` the number of such pairs of user ``u`` (ties dropped; each pair used once).

Update step (Algorithm 1, lines 19-30; eqs 17-18 through eq 15)
    Because E depends on the factors only through the combined predictions, the chain rule gives

        ∂E/∂U_t[u] = Σ_{p ∈ u} G_p α_t(p) V_t[i_p] + λ U_t[u]
        ∂E/∂V_t[i] = Σ_{p ∈ i} G_p α_t(p) U_t[u_p] + λ V_t[i]

    which is Algorithm 1's pair loop (the ``ΔU``/``ΔV`` accumulations over pairs with
    ``∂g/∂[U_t]_u = α_t(u,i) [V_t]_i − α_t(u,j) [V_t]_j`` and ``∂g/∂[V_t]_i = α_t(u,i) [U_t]_u``)
    regrouped by entry: the pair sums are done once, in the estimation step, instead of once per
    local model, so the update costs O(nnz · r) per local model instead of O(pairs · r). Entries
    with zero kernel weight for model ``t`` are skipped. :func:`lcr_gradients` runs in parallel
    over (local model, user) and (local model, item) — every local model at once, on frozen
    combined predictions, as §4.3.1 prescribes — and :func:`apply_step` takes the gradient step.

LLORMA (eq 3)
    :func:`combine` is LLORMA's prediction too (with user offsets, through transposed views of its by-model
    arrays). Its weighted alternating least squares, which RegSVD's ALS solver shares, is in ``_wals_kernels``;
    RegSVD's stochastic gradient descent in ``_mf_kernels``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..util import elementary
from ..losses.surrogates import surrogate_value_deriv
from ._wals_kernels import tiny_problem

__all__ = ["combine", "NO_USER_BIAS", "pair_pass", "lcr_gradients", "apply_step", "apply_adagrad", "model_weights",
           "kernel_matrix", "KERNELS", "DISTANCES", "warmup"]

KERNELS = ("epanechnikov", "epanechnikov_paper", "triangular", "uniform")
DISTANCES = ("arccos_scaled", "arccos")


# ---------------------------------------------------------------------------------------------- helpers
@njit(cache=True, parallel=True)
def _cosines(Xn, anchors, out):
    """``out[t, x] = Xn[anchors[t]] · Xn[x]``, each a sequential sum.

    NumPy's ``Xn[anchors] @ Xn.T`` goes through BLAS, whose rounding changes with its thread count;
    this loop gives the same bits whatever the number of threads, so seeded LCR / LLORMA fits
    reproduce on any machine.
    """
    for t in prange(anchors.shape[0]):
        a = anchors[t]
        for x in range(Xn.shape[0]):
            s = 0.0
            for k in range(Xn.shape[1]):
                s += Xn[a, k] * Xn[x, k]
            out[t, x] = s


def kernel_matrix(X: np.ndarray, anchors: np.ndarray, bandwidth: float, kernel: str = "epanechnikov",
                  distance: str = "arccos_scaled") -> np.ndarray:
    """``K[t, x] = K(anchor_t, x)`` for every anchor row ``anchors[t]`` and every row ``x`` of ``X``.

    Distance (§4.3.2): the angle between the latent vectors, ``arccos(x·y / (‖x‖ ‖y‖))``;
    ``"arccos_scaled"`` multiplies it by 2/π so that it lies in [0, 2] (what the authors' toolkit does,
    and the scale on which their bandwidth 0.8 was chosen), ``"arccos"`` leaves it in radians.
    A zero vector is at distance 1 (scaled) / π/2 from everything but itself.

    Kernels of the distance ``d`` with bandwidth ``h``: ``"epanechnikov"`` ``¾ (1 − (d/h)²)₊`` (the
    standard form and the toolkit's); ``"epanechnikov_paper"`` ``¾ (1 − d²) 1[d < h]`` (as printed in
    §4.3.2); ``"triangular"`` ``(1 − d/h)₊``; ``"uniform"`` ``1[d < h]``.
    """
    X = np.asarray(X, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    safe = np.where(norms > 0, norms, 1.0)
    Xn = X / safe[:, None]
    cos = np.empty((len(anchors), X.shape[0]))
    _cosines(np.ascontiguousarray(Xn), np.asarray(anchors, dtype=np.int64), cos)
    np.clip(cos, -1.0, 1.0, out=cos)
    zero = norms == 0
    cos[:, zero] = 0.0
    cos[zero[anchors], :] = 0.0
    cos[np.arange(len(anchors)), anchors] = 1.0
    d = elementary.arccos(cos)
    if distance == "arccos_scaled":
        d *= 2.0 / np.pi
    h = float(bandwidth)
    inside = d < h
    if kernel == "epanechnikov":
        K = 0.75 * (1.0 - (d / h) ** 2)
    elif kernel == "epanechnikov_paper":
        K = 0.75 * (1.0 - d ** 2)
    elif kernel == "triangular":
        K = 1.0 - d / h
    else:
        K = np.ones_like(d)
    K = np.where(inside & (K > 0), K, 0.0)
    return np.ascontiguousarray(K)


# ---------------------------------------------------------------------------------------------- estimation
#: ``bu`` of :func:`combine` for the models without user offsets (not read)
NO_USER_BIAS = np.zeros((0, 0))


@njit(cache=True, parallel=True)
def combine(users, items, Ku, Ki, U, V, bu, B, user_bias, offset, out_f, out_w):
    """Combined predictions (eq 15 / Algorithm 2; LLORMA's eq 3) of the pairs ``(users[p], items[p])``.

    Writes ``out_f[p] = offset + Σ_t α_t(p) (bu[u,t] + B[i,t] + U[u,t]·V[i,t])`` and the total kernel weight
    ``out_w[p] = w_p``; where ``w_p = 0`` the local models are averaged with equal weights. Without
    ``user_bias`` the user offsets are left out (``bu`` is not read: GCR and LCR learn item offsets only).
    Arrays by user or item first (module notes); LLORMA, which stores them by model first, passes transposed
    views (``Ku.T``, ``U.transpose(1, 0, 2)``, ...), read in the same order.
    """
    q = U.shape[1]
    r = U.shape[2]
    n = users.shape[0]
    for p in prange(n):
        u = users[p]
        i = items[p]
        s = 0.0
        w = 0.0
        for t in range(q):
            k = Ku[u, t] * Ki[i, t]
            if k > 0.0:
                d = bu[u, t] + B[i, t] if user_bias else B[i, t]
                for c in range(r):
                    d += U[u, t, c] * V[i, t, c]
                s += k * d
                w += k
        if w > 0.0:
            out_f[p] = offset + s / w
        else:
            for t in range(q):
                d = bu[u, t] + B[i, t] if user_bias else B[i, t]
                for c in range(r):
                    d += U[u, t, c] * V[i, t, c]
                s += d
            out_f[p] = offset + s / q
        out_w[p] = w


@njit(cache=True, parallel=True)
def pair_pass(indptr, ratings, f, code, gamma, G, user_loss, user_err, user_pairs):
    """Pairwise objective and its derivative in the combined predictions ``f`` (eqs 7, 9, 14).

    For each user ``u`` (in parallel) and each pair of its entries with different ratings, oriented
    so that ``M_i > M_j``: ``user_loss[u] = (1/s_u) Σ L(ΔM, f_i − f_j)``, ``user_err[u]`` the
    fraction of those pairs with ``f_i − f_j ≤ 0`` (the zero-one error of eq 6 on the training
    pairs, ties counted as errors), ``user_pairs[u] = s_u``, and ``G[p] = ∂E/∂f_p``. Users without
    such a pair get zeros.
    """
    m = indptr.shape[0] - 1
    for u in prange(m):
        a0 = indptr[u]
        a1 = indptr[u + 1]
        for p in range(a0, a1):
            G[p] = 0.0
        s = 0
        loss = 0.0
        err = 0
        for a in range(a0, a1):
            ra = ratings[a]
            fa = f[a]
            for b in range(a + 1, a1):
                rb = ratings[b]
                if ra == rb:
                    continue
                if ra > rb:
                    dm = ra - rb
                    g = fa - f[b]
                    v, d = surrogate_value_deriv(code, dm, g, gamma)
                    G[a] += d
                    G[b] -= d
                else:
                    dm = rb - ra
                    g = f[b] - fa
                    v, d = surrogate_value_deriv(code, dm, g, gamma)
                    G[b] += d
                    G[a] -= d
                loss += v
                if g <= 0.0:
                    err += 1
                s += 1
        if s > 0:
            inv = 1.0 / s
            for p in range(a0, a1):
                G[p] *= inv
            user_loss[u] = loss * inv
            user_err[u] = err * inv
        else:
            user_loss[u] = 0.0
            user_err[u] = 0.0
        user_pairs[u] = s


# ---------------------------------------------------------------------------------------------- update
@njit(cache=True, nogil=True, inline="always")
def _alpha(ku, ki, w, inv_q):
    if w > 0.0:
        return ku * ki / w
    return inv_q


@njit(cache=True, nogil=True)
def _user_gradient(u, indptr, items, Ku, Ki, w, G, U, V, lam, inv_q, out):
    """``out[t, c]``: user ``u``'s row of ``gU`` (:func:`lcr_gradients`), its entries' terms added in the table's
    order for every local model in turn."""
    q = U.shape[1]
    r = U.shape[2]
    for t in range(q):
        for c in range(r):
            out[t, c] = lam[t] * U[u, t, c]
    for p in range(indptr[u], indptr[u + 1]):
        wp = w[p]
        i = items[p]
        for t in range(q):
            ku = Ku[u, t]
            if wp > 0.0 and ku == 0.0:
                continue
            coef = G[p] * _alpha(ku, Ki[i, t], wp, inv_q)
            if coef == 0.0:
                continue
            for c in range(r):
                out[t, c] += coef * V[i, t, c]


@njit(cache=True, nogil=True)
def _item_gradient(i, item_indptr, item_pos, users, Ku, Ki, w, G, U, V, B, lam, lam_b, inv_q, gV, gB):
    """Item ``i``'s rows of ``gV`` and ``gB`` (:func:`lcr_gradients`)."""
    q = U.shape[1]
    r = U.shape[2]
    for t in range(q):
        for c in range(r):
            gV[i, t, c] = lam[t] * V[i, t, c]
        gB[i, t] = lam_b[t] * B[i, t]
    for e in range(item_indptr[i], item_indptr[i + 1]):
        p = item_pos[e]
        wp = w[p]
        u = users[p]
        for t in range(q):
            ki = Ki[i, t]
            if wp > 0.0 and ki == 0.0:
                continue
            coef = G[p] * _alpha(Ku[u, t], ki, wp, inv_q)
            if coef == 0.0:
                continue
            gB[i, t] += coef
            for c in range(r):
                gV[i, t, c] += coef * U[u, t, c]


@njit(cache=True, parallel=True)
def lcr_gradients(indptr, items, users, item_indptr, item_pos, Ku, Ki, w, G, U, V, B, lam, lam_b, gU, gV, gB):
    """Gradients of eq (14) + Σ_t (λ_t/2)(‖U_t‖² + ‖V_t‖²) (+ (λ_b,t/2)‖B_t‖²) for every local model at once.

    ``lam`` and ``lam_b`` hold one penalty per local model.

    ``G`` holds ``∂E/∂f̂_p`` from :func:`pair_pass` evaluated at the frozen combined predictions of
    the estimation step; ``w`` the total kernel weights from :func:`combine`. Runs in parallel over
    users for ``gU``, then over items for ``gV`` and ``gB``, each entry's terms added for every local
    model in turn (each sum runs over the entries in the table's order); entries whose kernel weight
    for model ``t`` is zero are skipped. Arrays by user or item first (module notes).
    """
    inv_q = 1.0 / U.shape[1]
    for u in prange(U.shape[0]):
        _user_gradient(u, indptr, items, Ku, Ki, w, G, U, V, lam, inv_q, gU[u])
    for i in prange(V.shape[0]):
        _item_gradient(i, item_indptr, item_pos, users, Ku, Ki, w, G, U, V, B, lam, lam_b, inv_q, gV, gB)


@njit(cache=True, parallel=True)
def lcr_item_gradients(item_indptr, item_pos, users, Ku, Ki, w, G, U, V, B, lam, lam_b, gV, gB):
    """The ``gV`` and ``gB`` of :func:`lcr_gradients` alone, in parallel over items."""
    inv_q = 1.0 / U.shape[1]
    for i in prange(V.shape[0]):
        _item_gradient(i, item_indptr, item_pos, users, Ku, Ki, w, G, U, V, B, lam, lam_b, inv_q, gV, gB)


@njit(cache=True, parallel=True)
def lcr_user_step(indptr, items, Ku, Ki, w, G, U, V, lam, lr):
    """``U[u, t] −= lr[t] · gU[u, t]`` for every user, each user's gradient row (:func:`lcr_gradients`) made in a
    buffer of its own and applied at once, so that no array of the users' gradients is kept: the same values as
    :func:`lcr_gradients` then :func:`apply_step`, to the bit, when ``V`` has not moved in between (a user's row
    reads ``V`` and only its own row of ``U``). In parallel over users."""
    q = U.shape[1]
    r = U.shape[2]
    inv_q = 1.0 / q
    for u in prange(U.shape[0]):
        g = np.empty((q, r))
        _user_gradient(u, indptr, items, Ku, Ki, w, G, U, V, lam, inv_q, g)
        for t in range(q):
            for c in range(r):
                U[u, t, c] -= lr[t] * g[t, c]


@njit(cache=True, parallel=True)
def apply_step(X, gX, lr):
    """``X[:, t] −= lr[t] · gX[:, t]`` for each local model ``t`` (second axis), in parallel over the first."""
    n = X.shape[0]
    q = X.shape[1]
    x = X.reshape(n, q, -1)
    g = gX.reshape(n, q, -1)
    for k in prange(n):
        for t in range(q):
            for j in range(x.shape[2]):
                x[k, t, j] -= lr[t] * g[k, t, j]


@njit(cache=True, parallel=True)
def model_weights(users, items, Ku, Ki, w, out_sum, out_count):
    """Per local model: ``Σ_p α_t(p)`` and the number of entries with ``α_t(p) > 0`` (eq 15's weights);
    ``Ku`` and ``Ki`` by user or item first."""
    q = Ku.shape[1]
    inv_q = 1.0 / q
    for t in prange(q):
        s = 0.0
        c = 0
        for p in range(users.shape[0]):
            a = _alpha(Ku[users[p], t], Ki[items[p], t], w[p], inv_q)
            if a > 0.0:
                s += a
                c += 1
        out_sum[t] = s
        out_count[t] = c


@njit(cache=True, parallel=True)
def apply_adagrad(X, gX, H, lr, eps):
    """AdaGrad step over flat arrays: ``H += g²``, ``X −= lr · g / (√H + eps)``, in parallel."""
    x = X.reshape(-1)
    g = gX.reshape(-1)
    h = H.reshape(-1)
    for k in prange(x.shape[0]):
        gk = g[k]
        h[k] += gk * gk
        x[k] -= lr * gk / (math.sqrt(h[k]) + eps)


@njit(cache=True)
def sq_norms(X):
    """``‖X[:, t]‖²`` for each local model ``t`` (second axis) of a 2-D or 3-D array; each sum runs over
    the first axis, then the third, in order."""
    n = X.shape[0]
    q = X.shape[1]
    flat = X.reshape(n, q, -1)
    out = np.zeros(q)
    for k in range(n):
        for t in range(q):
            s = out[t]
            for j in range(flat.shape[2]):
                s += flat[k, t, j] * flat[k, t, j]
            out[t] = s
    return out


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel of this module on the tiny problem of
    :func:`~cofiviz.models._wals_kernels.tiny_problem`."""
    t = tiny_problem()
    users, items, ratings, indptr, iptr, ipos, q = (t[k] for k in ("users", "items", "ratings", "indptr", "iptr",
                                                                   "ipos", "q"))
    U, V, B, bu, Ku, Ki = (t[k] for k in ("U", "V", "B", "bu", "Ku", "Ki"))
    f = np.empty(5)
    w = np.empty(5)
    # GCR's and LCR's kernels: arrays by user or item first
    Ue, Ve, Be = np.ascontiguousarray(U.transpose(1, 0, 2)), np.ascontiguousarray(V.transpose(1, 0, 2)), B.T.copy()
    Kue, Kie = Ku.T.copy(), Ki.T.copy()
    combine(users, items, Kue, Kie, Ue, Ve, NO_USER_BIAS, Be, False, 0.0, f, w)
    G = np.empty(5)
    ul, ue, up = np.empty(2), np.empty(2), np.empty(2, dtype=np.int64)
    pair_pass(indptr, ratings, f, 0, 0.0, G, ul, ue, up)
    gU, gV, gB = np.empty_like(Ue), np.empty_like(Ve), np.empty_like(Be)
    lams = np.full(q, 0.1)
    lcr_gradients(indptr, items, users, iptr, ipos, Kue, Kie, w, G, Ue, Ve, Be, lams, lams, gU, gV, gB)
    lcr_item_gradients(iptr, ipos, users, Kue, Kie, w, G, Ue, Ve, Be, lams, lams, gV, gB)
    lcr_user_step(indptr, items, Kue, Kie, w, G, Ue, Ve, lams, lams)
    apply_step(Ue, gU, lams)
    apply_step(Be, gB, lams)
    model_weights(users, items, Kue, Kie, w, np.empty(q), np.empty(q, dtype=np.int64))
    apply_adagrad(Ue, gU, np.zeros_like(Ue), 0.1, 1e-8)
    sq_norms(Ue)
    sq_norms(Be)
    # LLORMA's: arrays by model first, read through transposed views
    combine(users, items, Ku.T, Ki.T, U.transpose(1, 0, 2), V.transpose(1, 0, 2), bu.T, B.T, True, 3.0, f, w)
