"""A linear scorer of (user, item) feature vectors trained with LambdaRank by Newton steps: the model step of WLT.

A subclass describes each (user, item) pair by a feature vector ``ψ(u, n)`` (:meth:`LinearLambdaRank._features`)
and each user's training items as one list (:meth:`LinearLambdaRank._training_lists`); this class learns the one
weight vector ``w`` of ``f(u, n) = wᵀψ(u, n) + o_n`` (``o_n`` the fixed item offset of
:class:`~cofiviz.models.prior.ItemPriorParams`, 0 unless set).

Objective (LambdaRank, Burges 2010 §4). Over the lists ``u`` with items of different ratings (``U*``),

.. math::

    C(w) = \\frac{1}{|U^*|} \\sum_{u ∈ U^*} \\sum_{R(i) > R(j)} |ΔNDCG_{ij}|
           \\log\\bigl(1 + e^{-σ (f_i - f_j)}\\bigr) + \\frac{λ}{2} \\|w\\|^2,
    \\qquad |ΔNDCG_{ij}| = \\frac{|g_i - g_j| \\, |D(π_i) - D(π_j)|}{\\mathrm{IDCG}_u}

with gains ``g = 2^r − 1``, discount ``D(p) = 1/log2(1 + p)`` (0 beyond p = k when ``ndcg_k`` = k > 0) and ``π``
the positions in the list ranked by the current scores (a stable sort). ``|ΔNDCG|`` is constant wherever no two
scores of a list are equal, so there the gradient is ``Σ_u Σ_i λ_i ψ_i / |U*| + λ w`` with LambdaRank's lambdas,
and ``∇²C`` (``|ΔNDCG|`` held fixed) is ``Σ c_ij (ψ_i − ψ_j)(ψ_i − ψ_j)ᵀ / |U*| + λI`` with
``c_ij = σ² |ΔNDCG_ij| p_ij (1 − p_ij)``, ``p_ij`` the logistic of ``−σ (f_i − f_j)``. LambdaRank takes stochastic
gradient steps; with few weights of very different scales, one iteration here is one Newton step along
``−(∇²C)⁻¹ ∇C``, halved from ``lr`` until the objective drops (Armijo).
"""

from __future__ import annotations

import numpy as np

from ..util.errors import ParameterError
from ..solvers import dense
from . import _lambdarank_kernels as K
from .base import Model

__all__ = ["LinearLambdaRank"]

#: Armijo's sufficient-decrease constant and the most halvings a step tries
_ARMIJO = 1e-4
_MAX_HALVINGS = 30
#: ridge added to the Newton system, relative to its mean diagonal, so that it is always solvable
_RIDGE = 1e-9
#: lists whose gradients (and Hessians) are held at once: 4,096 Hessians of WLT's 18 features are 10.6 MB
_LISTS_PER_BLOCK = 4096


class LinearLambdaRank(Model):
    """WLT's LambdaRank model step (module documentation).

    A subclass provides ``_training_lists()``, the training lists as ``(list_ptr, ratings, ψ, items)``, and
    ``_training_table()``, whose ``features(users, items, n_neighbors)`` gives the rows ``ψ(u, n)`` of pairs
    (:meth:`_features` keeps the last request) and which sets ``_pair_cache`` to None when it is rebuilt; in ``_setup`` it sets ``w_`` (zeros) and
    ``prior_`` (the item offsets) and calls :meth:`_start_trace`; it declares ``lr``, ``reg``, ``sigma``,
    ``ndcg_k`` and ``tol``."""

    __abstract = True

    def __init__(self, **params):
        super().__init__(**params)
        self._table = None
        self._pair_cache: tuple | None = None

    def pair_features(self, users, items) -> np.ndarray:
        """``ψ(u, n)`` of (user, item) index pairs (they broadcast), one row per pair, columns
        :meth:`feature_names`."""
        self._require_fitted()
        users, items = np.broadcast_arrays(np.asarray(users, dtype=np.int64), np.asarray(items, dtype=np.int64))
        for label, idx, n in (("users", users, self.train_.n_users), ("items", items, self.train_.n_items)):
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                raise ParameterError(f"{label} must be indices 0 <= index < {n}")
        return self._features(users.ravel(), items.ravel())

    def _features(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Features of pairs; the last request is kept (the validation pairs are scored every iteration)."""
        table = self._training_table()
        c = self._pair_cache
        if (c is not None and c[0] == self.n_neighbors and len(c[1]) == len(users)
                and np.array_equal(c[1], users) and np.array_equal(c[2], items)):
            return c[3]
        X = table.features(users, items, self.n_neighbors)
        self._pair_cache = (self.n_neighbors, users.copy(), items.copy(), X)
        return X

    def _start_trace(self) -> None:
        self._stalled = False
        self._trace = [self.objective(self.w_)[0]]
        #: passes over the training lists per iteration: the Hessian's, then each length the line search tried
        self.passes_: list[int] = []

    def objective(self, w: np.ndarray, hessian: bool = False):
        """``(C(w), ∇C(w))`` on the training lists (the module notes give both); with ``hessian``, also
        ``∇²C(w)`` with every ``|ΔNDCG|`` held at its value at ``w``."""
        self._require_fitted()
        list_ptr, labels, X, items = self._training_lists()
        w = np.ascontiguousarray(w, dtype=np.float64)
        F = X.shape[1]
        if w.shape != (F,):
            raise ParameterError(f"w must have {F} entries, got shape {w.shape}")
        s = np.empty(len(X))
        K.linear_scores(X, w, s)
        if np.any(self.prior_):
            s += self.prior_[items]
        n_lists = len(list_ptr) - 1
        loss_u = np.empty(n_lists)
        active = np.empty(n_lists, dtype=np.bool_)
        # the lists' gradients and Hessians a block at a time, added in the lists' order
        block = max(1, min(n_lists, _LISTS_PER_BLOCK))
        grad_b = np.empty((block, F))
        hess_b = np.empty((block, F, F) if hessian else (1, 1, 1))
        grad, hess = np.zeros(F), np.zeros((F, F))
        started_g = started_h = False
        for lo in range(0, n_lists, block):
            hi = min(lo + block, n_lists)
            active[lo:hi] = K.lambdarank(list_ptr, labels, X, s, float(self.sigma), int(self.ndcg_k), bool(hessian),
                                         lo, loss_u[lo:hi], grad_b[:hi - lo], hess_b[:hi - lo] if hessian else hess_b)
            started_g = K.add_active_rows(active[lo:hi], grad_b, started_g, grad)
            if hessian:
                started_h = K.add_active_rows(active[lo:hi], hess_b, started_h, hess)
        n_active = max(int(active.sum()), 1)
        reg = float(self.reg)
        f = float(loss_u[active].sum()) / n_active + 0.5 * reg * float(np.sum(w * w))
        g = grad / n_active + reg * w
        if not hessian:
            return f, g
        return f, g, hess / n_active + reg * np.eye(F)

    def _step(self, iteration: int) -> float:
        """One Newton step with ``|ΔNDCG|`` held fixed, shortened by halving from ``lr`` until the objective
        decreases enough (Armijo); when no length does, ``w`` stays and the fit has converged. Each
        objective evaluation is a pass over every pair of every training list; ``passes_`` counts them."""
        f, g, H = self.objective(self.w_, hessian=True)
        passes = 1
        F = len(g)
        ridge = _RIDGE * (float(np.trace(H)) / F + 1.0)
        direction = -dense.solve(H + ridge * np.eye(F), g)
        slope = dense.dot(g, direction)
        if not slope < 0.0:  # a stationary point: no direction of descent
            return self._stall(f, passes)
        t = float(self.lr)
        for _ in range(_MAX_HALVINGS):
            w_new = self.w_ + t * direction
            finite = bool(np.all(np.isfinite(w_new)))
            f_new = self.objective(w_new)[0] if finite else float("nan")
            passes += finite
            # a decrease in floating point too: at a stationary point ``f + c t slope`` rounds to ``f``
            if np.isfinite(f_new) and f_new < f and f_new <= f + _ARMIJO * t * slope:
                self.w_ = w_new
                self._trace.append(f_new)
                self.passes_.append(passes)
                return f_new
            t *= 0.5
        return self._stall(f, passes)

    def _stall(self, f: float, passes: int) -> float:
        """No step decreases the objective: ``w`` stays and the fit ends after this iteration."""
        self._stalled = True
        self._trace.append(f)
        self.passes_.append(passes)
        return f

    def _converged(self, iteration: int) -> bool:
        if self._stalled:
            return True
        if self.tol <= 0 or len(self._trace) < 2:
            return False
        before, now = self._trace[-2], self._trace[-1]
        return before - now <= self.tol * abs(before)

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        X = self._features(np.asarray(users, dtype=np.int64), np.asarray(items, dtype=np.int64))
        out = np.empty(len(X))
        K.linear_scores(X, self.w_, out)
        if np.any(self.prior_):  # the offsets of the fit, whatever item_prior says now
            out += self.prior_[np.asarray(items, dtype=np.int64)]
        return out
