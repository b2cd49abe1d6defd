"""BMRM, the bundle method for regularised risk minimisation (CofiRank Algorithm 1; Teo et al. 2007).

It minimises ``J(w) = L(w) + (λ/2)‖w‖²`` for a convex, possibly non-smooth ``L`` given only an
oracle returning ``L(w)`` and a subgradient ``a = ∂L(w)``. Every oracle call adds a cutting plane
``L(v) ≥ ⟨a_t, v⟩ + b_t`` with ``b_t = L(w_t) − ⟨a_t, w_t⟩``; the next iterate minimises the model

    J_t(w) = max_{i ≤ t} (⟨a_i, w⟩ + b_i) + (λ/2)‖w‖²,

through its dual over the simplex,

    max_{α ∈ Δ_t}  bᵀα − (1/2λ) ‖Aᵀα‖²,      w = −Aᵀα / λ,

whose value is a lower bound on ``min J``. The method stops once the gap ``ε_t = min_{i ≤ t} J(w_i)
− J_t(w_{t+1})`` is below ``tol`` or below ``rel_tol · min J(w_i)`` (checked from the second oracle
call on), or after ``max_iter`` oracle calls. As in the authors' CofiRank code, the point returned
is the best *evaluated iterate after the start* (the starting point itself is never returned, so
a warm-started call always moves), at most ``max_planes`` planes are kept (when full, a plane that
has been inactive longest is dropped, or the two least-weighted planes are merged into their convex
combination, which stays a valid lower bound), and the defaults are the code's: ``tol = 0.01``,
``rel_tol = 0.02``, ``max_iter = 70``, ``max_planes = 100``.

The dual QP is solved by SMO (maximal-violating-pair coordinate steps with exact line search on the
simplex), warm-started from the previous multipliers, to a duality gap far below ``tol``; any
feasible ``α`` gives a valid lower bound, so an inexact QP never makes the stopping test lie.

The numba helpers (:func:`bundle_add`, :func:`qp_simplex`, :func:`bundle_primal`) are shared by the
Python :func:`bmrm` driver (for one large problem, e.g. CofiRank's item phase) and by numba kernels
that run one small BMRM per user in parallel.

The driver's own dot products (``w·w``, ``a·w``) are sequential numba loops rather than NumPy's BLAS,
so a run gives the same bits whatever the BLAS thread count (OpenBLAS splits long dot products
between its threads and the rounding then depends on how many it has).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from numba import njit

from ..util.errors import ModelFitError, ParameterError
from .dense import dot as _dot

__all__ = ["bmrm", "BMRMResult", "qp_simplex", "bundle_add", "bundle_primal", "check_bmrm_params",
           "warmup"]


@njit(cache=True, nogil=True)
def qp_simplex(Q, bvec, alpha, h, n, tol, max_steps):
    """Maximise ``D(α) = bᵀα − ½ αᵀQα`` over the simplex ``{α ≥ 0, Σα = 1}`` of the first ``n`` planes.

    ``alpha`` (length ≥ n) is the feasible warm start and the output; ``h`` is scratch of length
    ≥ n. Stops when the maximal KKT violation ``max_{α_j>0} ∇_j − min_i ∇_i`` of ``q = −D`` is
    ≤ ``tol`` (it bounds ``D* − D(α)``) or after ``max_steps`` steps. Returns ``D(α)``.
    """
    # h = Qα − b (gradient of q = ½αᵀQα − bᵀα)
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += Q[i, j] * alpha[j]
        h[i] = s - bvec[i]
    for step in range(max_steps):
        i_up = 0
        h_min = h[0]
        for i in range(1, n):
            if h[i] < h_min:
                h_min = h[i]
                i_up = i
        j_dn = -1
        h_max = -np.inf
        for j in range(n):
            if alpha[j] > 0.0 and h[j] > h_max:
                h_max = h[j]
                j_dn = j
        if j_dn == -1 or h_max - h_min <= tol or j_dn == i_up:
            break
        eta = Q[i_up, i_up] + Q[j_dn, j_dn] - 2.0 * Q[i_up, j_dn]
        delta = alpha[j_dn]
        if eta > 0.0:
            d = (h_max - h_min) / eta
            if d < delta:
                delta = d
        alpha[i_up] += delta
        alpha[j_dn] -= delta
        if alpha[j_dn] < 1e-300:
            alpha[j_dn] = 0.0
        for k in range(n):
            h[k] += delta * (Q[k, i_up] - Q[k, j_dn])
    # D(α) = −(½ αᵀ(h + b) − bᵀα) with h + b = Qα
    val = 0.0
    for i in range(n):
        val += alpha[i] * (bvec[i] - 0.5 * (h[i] + bvec[i]))
    return val


@njit(cache=True, nogil=True)
def _set_q_row(A, Q, n, slot, lam):
    for i in range(n):
        v = _dot(A[slot], A[i]) / lam
        Q[slot, i] = v
        Q[i, slot] = v


@njit(cache=True, nogil=True)
def bundle_add(A, bvec, Q, alpha, idle, n, a_new, b_new, lam):
    """Add the plane ``(a_new, b_new)`` to a bundle of ``n`` planes; returns the new plane count.

    ``A`` (capacity × dim), ``bvec``, ``Q`` (capacity²), ``alpha`` and ``idle`` (iterations each plane
    has had a zero multiplier) hold the bundle. When it is full, the plane idle longest is dropped;
    if every plane is active, the two with the smallest multipliers are merged into their
    multiplier-weighted combination (a valid lower bound that keeps the current dual solution).
    The new plane enters with multiplier 0 (1 if it is the only one).
    """
    cap = A.shape[0]
    if n == cap:
        victim = -1
        longest = -1
        for i in range(n):
            if alpha[i] == 0.0 and idle[i] > longest:
                longest = idle[i]
                victim = i
        if victim == -1:
            i1 = -1
            i2 = -1
            for i in range(n):
                if i1 == -1 or alpha[i] < alpha[i1]:
                    i2 = i1
                    i1 = i
                elif i2 == -1 or alpha[i] < alpha[i2]:
                    i2 = i
            s = alpha[i1] + alpha[i2]
            w1 = alpha[i1] / s
            w2 = alpha[i2] / s
            for t in range(A.shape[1]):
                A[i2, t] = w1 * A[i1, t] + w2 * A[i2, t]
            bvec[i2] = w1 * bvec[i1] + w2 * bvec[i2]
            alpha[i2] = s
            alpha[i1] = 0.0
            idle[i2] = 0
            _set_q_row(A, Q, n, i2, lam)
            victim = i1
        last = n - 1
        if victim != last:  # move the last plane into the victim's slot
            for t in range(A.shape[1]):
                A[victim, t] = A[last, t]
            bvec[victim] = bvec[last]
            alpha[victim] = alpha[last]
            idle[victim] = idle[last]
            for i in range(n):
                Q[victim, i] = Q[last, i]
            for i in range(n):
                Q[i, victim] = Q[i, last]
            Q[victim, victim] = Q[last, last]
        n -= 1
    for t in range(A.shape[1]):
        A[n, t] = a_new[t]
    bvec[n] = b_new
    alpha[n] = 1.0 if n == 0 else 0.0
    idle[n] = 0
    _set_q_row(A, Q, n + 1, n, lam)
    return n + 1


@njit(cache=True, nogil=True)
def bundle_primal(A, alpha, idle, n, lam, w):
    """``w = −Aᵀα / λ`` over the first ``n`` planes; also ages the idle counters."""
    for t in range(w.shape[0]):
        w[t] = 0.0
    for i in range(n):
        ai = alpha[i]
        if ai > 0.0:
            idle[i] = 0
            for t in range(w.shape[0]):
                w[t] -= ai * A[i, t]
        else:
            idle[i] += 1
    for t in range(w.shape[0]):
        w[t] /= lam


@njit(cache=True, nogil=True)
def qp_tolerance(gap, tol, rel_tol, obj):
    """Inner QP tolerance: a small fraction of the smallest gap that could stop the method."""
    target = tol
    if rel_tol * obj < target:
        target = rel_tol * obj
    if gap < target:
        target = gap
    t = 1e-3 * target
    floor = 1e-13 * (1.0 + abs(obj))
    return t if t > floor else floor


def check_bmrm_params(lam, tol, rel_tol, max_iter, max_planes) -> None:
    """Validate BMRM settings (raises :class:`~cofiviz.util.errors.ParameterError`)."""
    if not (np.isfinite(lam) and lam > 0):
        raise ParameterError(f"the regularisation λ must be a positive number, got {lam}")
    if not (tol >= 0 and rel_tol >= 0):
        raise ParameterError(f"BMRM tolerances must be >= 0, got tol={tol}, rel_tol={rel_tol}")
    if int(max_iter) < 2:
        raise ParameterError(f"BMRM needs max_iter >= 2 oracle calls, got {max_iter}")
    if int(max_planes) < 2:
        raise ParameterError(f"BMRM needs max_planes >= 2, got {max_planes}")


@dataclass
class BMRMResult:
    """What :func:`bmrm` returns.

    Attributes
    ----------
    w : ndarray
        The best evaluated iterate after the start (shape of ``w0``).
    objective, loss : float
        ``J(w)`` and ``L(w)`` there.
    lower_bound : float
        The last model minimum ``J_t(w_{t+1})`` (≤ ``min J``).
    gap : float
        ``min_i J(w_i) − lower_bound`` when the method stopped.
    n_iter : int
        Oracle calls.
    converged : bool
        Whether a tolerance (not ``max_iter``) stopped it.
    history : list of dict
        Per oracle call: ``iteration``, ``objective``, ``loss``, ``lower_bound``, ``gap``, ``seconds``.
    """

    w: np.ndarray
    objective: float
    loss: float
    lower_bound: float
    gap: float
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)


def bmrm(oracle: Callable[[np.ndarray], tuple[float, np.ndarray]], w0, lam: float, *, tol: float = 0.01,
         rel_tol: float = 0.02, max_iter: int = 70, max_planes: int = 100,
         callback: Callable[[dict], object] | None = None) -> BMRMResult:
    """Minimise ``L(w) + (λ/2)‖w‖²`` by BMRM (CofiRank Algorithm 1), starting from ``w0``.

    Parameters
    ----------
    oracle : callable
        ``oracle(w) -> (L(w), a)`` with ``a`` a subgradient of ``L`` at ``w`` (same shape as ``w``).
        ``w`` is passed as an array of ``w0``'s shape; the oracle must neither keep a reference to it
        nor write to it (the best iterate is kept without a copy).
    w0 : array_like
        Starting point (the paper starts from 0; CofiRank's alternating phases warm-start).
    lam : float
        Regularisation λ > 0.
    tol, rel_tol : float
        Stop when the gap is ≤ ``tol`` or ≤ ``rel_tol`` × the best objective seen.
    max_iter : int
        Oracle calls at most (≥ 2).
    max_planes : int
        Cutting planes kept at most (memory is ``max_planes × w.size`` floats).
    callback : callable, optional
        Called after each oracle call with the history row (a dict).

    Returns
    -------
    BMRMResult
    """
    check_bmrm_params(lam, tol, rel_tol, max_iter, max_planes)
    w = np.array(w0, dtype=np.float64, copy=True)
    shape = w.shape
    w = w.ravel()
    cap = int(min(max_planes, max_iter))
    A = np.empty((cap, w.size))
    bvec = np.zeros(cap)
    Q = np.zeros((cap, cap))
    alpha = np.zeros(cap)
    idle = np.zeros(cap, dtype=np.int64)
    h = np.zeros(cap)
    n = 0
    lb = -np.inf
    min_obj = np.inf
    best = (np.inf, np.nan, None)
    history = []
    converged = False
    gap = np.inf
    t0 = time.perf_counter()
    it = 0
    for it in range(1, int(max_iter) + 1):
        loss, a = oracle(w.reshape(shape))
        loss = float(loss)
        a = np.ascontiguousarray(a, dtype=np.float64).ravel()
        if a.size != w.size or not np.isfinite(loss) or not np.all(np.isfinite(a)):
            raise ModelFitError(f"BMRM oracle returned a non-finite loss or subgradient at iteration {it}")
        obj = loss + 0.5 * lam * _dot(w, w)  # numba, not BLAS: the result must not depend on BLAS threads
        min_obj = min(min_obj, obj)
        if it >= 2 and obj < best[0]:
            best = (obj, loss, w)  # no copy: every iterate is a fresh array, never written after this
        gap = min_obj - lb
        row = {"iteration": it, "objective": obj, "loss": loss, "lower_bound": lb, "gap": gap,
               "seconds": time.perf_counter() - t0}
        history.append(row)
        if callback is not None:
            callback(row)
        if it >= 2 and (gap <= tol or gap <= rel_tol * min_obj):
            converged = True
            break
        if it >= max_iter:
            break
        n = bundle_add(A, bvec, Q, alpha, idle, n, a, loss - _dot(a, w), lam)
        qtol = qp_tolerance(gap, tol, rel_tol, min_obj)
        lb = max(lb, qp_simplex(Q, bvec, alpha, h, n, qtol, 200 * n + 1000)) if n > 1 else \
            qp_simplex(Q, bvec, alpha, h, n, qtol, 10)
        w = np.empty_like(w)
        bundle_primal(A, alpha, idle, n, lam, w)
    obj, loss, wb = best
    return BMRMResult(w=wb.reshape(shape), objective=float(obj), loss=float(loss), lower_bound=float(lb),
                      gap=float(gap), n_iter=it, converged=converged, history=history)


def warmup() -> None:
    """Compile (or load from cache) the BMRM kernels on a tiny least-squares problem."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([1.0, -1.0, 0.5])

    def oracle(w):
        r = X @ w - y
        return 0.5 * float(r @ r), X.T @ r

    bmrm(oracle, np.zeros(2), 1.0, max_iter=5)
