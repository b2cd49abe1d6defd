"""Machinery shared by GCR, LCR and LLORMA (Lee et al., WWW 2014).

* :func:`anchor_points` and :func:`local_kernels`: the q anchor points, sampled uniformly from the
  training ratings (Algorithm 1, line 6), and the product-kernel factors ``Ku[t, u] = K(u_t, u)``,
  ``Ki[t, i] = K(i_t, i)`` on arccos distances between the rows of a RegSVD fit (§4.3.2).
* :class:`PairwiseFactorModel`: the training loop of eq (9) / eq (14) by full-batch gradient steps
  (Algorithm 1): an *estimation* step (combined predictions and the pairwise derivative, frozen) and
  an *update* step (every local model at once, in parallel). GCR is the case of one "local" model
  with unit kernel weights.

Each iteration of ``fit`` is one update step followed by the estimation step of the new factors,
so the loss reported for iteration k is the objective of the factors after k updates (the
estimation of the initial factors is done in ``_setup``).
"""

from __future__ import annotations

import time

import numpy as np
import param

from ..util.errors import DataError
from ..losses.surrogates import SURROGATES, surrogate_code
from ..ratings import Ratings
from ..solvers import dense
from . import _local_kernels as lk
from .base import Model
from .prior import ItemPriorParams
from .regsvd import regsvd_factors

__all__ = ["anchor_points", "local_kernels", "kernel_coverage", "COVERAGE_BLOCK", "PairwiseFactorModel", "LocalParams"]


def anchor_points(train: Ratings, n_local: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(anchor_users, anchor_items)``: ``n_local`` training entries drawn uniformly without replacement
    (with replacement when there are fewer entries than local models)."""
    nnz = len(train)
    pos = rng.choice(nnz, size=n_local, replace=n_local > nnz)
    return (np.ascontiguousarray(train.users[pos], dtype=np.int64),
            np.ascontiguousarray(train.items[pos], dtype=np.int64))


def local_kernels(train: Ratings, n_local: int, rng: np.random.Generator, *, bandwidth: float, kernel: str,
                  distance: str, svd_rank: int, svd_params: dict | None = None):
    """Anchors and kernel factors of ``n_local`` local models.

    A :class:`~cofiviz.models.regsvd.RegSVD` of rank ``svd_rank`` is fitted on ``train`` (seeded from
    ``rng``) — by default the plain incomplete SVD of eq (1), ``M ≈ P Qᵀ`` without mean or offsets
    (``svd_params`` overrides), whose rows all share the direction that carries the mean rating, so
    that the kernels are wide and smooth — the anchors are drawn from ``rng``, and ``Ku`` (q × m), ``Ki`` (q × n) are the kernel
    values of every user (item) against the anchor's user (item), see
    :func:`cofiviz.models._local_kernels.kernel_matrix`.

    Returns
    -------
    (Ku, Ki, anchor_users, anchor_items, P, Q)
    """
    svd_seed = int(rng.integers(0, 2**31 - 1))
    params = {"biased": False, "center": False, **(svd_params or {})}
    P, Q = regsvd_factors(train, rank=svd_rank, seed=svd_seed, **params)
    au, ai = anchor_points(train, n_local, rng)
    Ku = lk.kernel_matrix(P, au, bandwidth, kernel, distance)
    Ki = lk.kernel_matrix(Q, ai, bandwidth, kernel, distance)
    return Ku, Ki, au, ai, P, Q


#: training entries whose kernel weights :func:`kernel_coverage` multiplies at once (a block of q × COVERAGE_BLOCK
#: products: 100 MB at 50 local models)
COVERAGE_BLOCK = 1 << 18


def kernel_coverage(train: Ratings, Ku: np.ndarray, Ki: np.ndarray, block: int = COVERAGE_BLOCK) -> float:
    """The share of ``train``'s entries that some local model reaches: ``Σ_t Ku[t, u] · Ki[t, i] > 0``.

    Computed a block of entries at a time, so that the products take ``q × block`` values whatever the number of
    ratings, not ``q × |train|`` (3 × 1.9 GB at 4.8M ratings and 50 local models).
    """
    covered = 0
    for start in range(0, len(train), block):
        users, items = train.users[start:start + block], train.items[start:start + block]
        covered += int(np.count_nonzero((Ku[:, users] * Ki[:, items]).sum(axis=0) > 0))
    return covered / len(train) if len(train) else float("nan")


class LocalParams(param.Parameterized):
    """Parameters of the local scheme, shared by LCR and LLORMA (mixed into their classes)."""

    n_local = param.Integer(default=50, bounds=(1, 10_000), doc="Number of local models q.")
    bandwidth = param.Number(default=0.8, bounds=(0.0, None), inclusive_bounds=(False, True),
                             doc="Kernel bandwidth h (paper: 0.8).")
    kernel = param.Selector(default="epanechnikov", objects=list(lk.KERNELS),
                            doc="Smoothing kernel of the distance (paper: Epanechnikov).")
    distance = param.Selector(default="arccos_scaled", objects=list(lk.DISTANCES),
                              doc="Angle between latent vectors, scaled to [0, 2] (toolkit) or in radians.")
    svd_rank = param.Integer(default=10, bounds=(1, 1000), doc="Rank of the RegSVD whose factors define distances.")


def _model_first_view(stored: str, doc: str) -> property:
    """A property that reads the array in attribute ``stored`` (kept by user or item first) with the local model
    first, and stores an array assigned with the local model first by user or item first (a contiguous copy)."""

    def get(self):
        a = getattr(self, stored)
        return None if a is None else np.swapaxes(a, 0, 1)

    def put(self, value):
        setattr(self, stored, np.ascontiguousarray(np.swapaxes(np.asarray(value, dtype=np.float64), 0, 1)))

    return property(get, put, doc=doc)


def _draw_by_model(rng: np.random.Generator, init: str, scale: float, q: int, n: int, r: int) -> np.ndarray:
    """``(n, q, r)`` factors, user or item first, holding what ``rng`` draws for a ``(q, n, r)`` array (uniform on
    ``[0, scale)`` or normal with standard deviation ``scale``), drawn a local model at a time into place: the same
    values as one draw of the whole array, without a second copy of it."""
    out = np.empty((n, q, r))
    draw = rng.uniform if init == "uniform" else rng.normal
    for t in range(q):
        out[:, t, :] = draw(0.0, scale, (n, r))
    return out


class PairwiseFactorModel(Model, ItemPriorParams):
    """Pairwise collaborative ranking by gradient steps on eq (9) (GCR) or eq (14) (LCR).

    Objective (eqs 7, 9, 14 with L2 regularisation):

        E = Σ_u (1/s_u) Σ_{(i,j): M_ui > M_uj} L(ΔM_uij, f̂_ui − f̂_uj)
            + Σ_t (λ_t/2) (‖U_t‖² + ‖V_t‖²) + Σ_t (λ_b,t/2) ‖B_t‖² + (λ_b/2) ‖c‖²

    where f̂ is the single factorisation (GCR) or the kernel-weighted combination of the local
    factorisations (LCR, eq 15), plus optional item offsets (``B``: per local model; ``c``: shared)
    and a fixed item-mean offset (``item_prior``). Minimised by full-batch gradient steps (Algorithm
    1): local model t moves by ``lr · s_t`` times its gradient, with penalty ``λ_t = reg / s_t``
    (``λ_b,t = reg_bias / s_t``), where ``s_t`` is the inverse of its mean combination weight
    (:meth:`_step_scales`; 1 for GCR). Algorithm 1 is the same step with one ν and λ for every local
    model and the user count folded in (its ``ν = lr · s_t · |U|``, ``λ = reg / (s_t |U|)``); the
    scaling makes one ``lr`` and ``reg`` mean the same step and the same shrinkage for any number of
    local models and any kernel width, so GCR's settings carry over to LCR.

    Where the papers' text runs out: Algorithm 1 takes fixed steps. With ``step_control="halve"`` (the
    default) a gradient step after which the training objective is higher than before it halves every step
    that follows (``step_factor_``; the factors stay where that step took them, so no copy of them is kept).
    A fit whose objective never rises is the fixed-step fit to the bit; the default, paper and monitor fits
    of GCR and LCR on MovieLens 100K never rise. An item's gradient is a sum over its raters, so as raters grow
    a fixed step overshoots: on ``netflix_like(100_000_000)`` (477,893 users, up to 15,556 training raters an
    item under CofiRank's weak protocol) LCR's default step raises the objective from the first iteration on
    and diverges with fixed steps. ``step_control="fixed"`` is Algorithm 1's rule. AdaGrad's steps are its own.

    The loss reported per iteration is ``E / |U|`` (``|U|``: users with at least one pair), a mean
    per-user loss.

    The factors and kernel weights read as ``U_`` (q, m, r), ``V_`` (q, n, r), ``B_`` (q, n), ``Ku_``
    (q, m) and ``Ki_`` (q, n), local model first; they are views of arrays stored by user or item first,
    the layout the kernels read (:mod:`cofiviz.models._local_kernels`). Assigning one stores it in that
    layout.
    """

    __abstract = True
    divergence_hint = (("lr", "lower"), ("reg", "raise"))

    rank = param.Integer(default=10, bounds=(0, 2000), doc="Rank r of each factorisation (0: no factors).")
    loss = param.Selector(default="log_a", objects=list(SURROGATES), doc="Pairwise surrogate loss (Table 1).")
    margin = param.Number(default=0.0, doc="Target margin γ of the surrogate loss.")
    lr = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                      doc="Learning rate ν of the gradient steps.")
    reg = param.Number(default=0.1, bounds=(0.0, None), doc="L2 penalty λ of the factors.")
    reg_bias = param.Number(default=0.1, bounds=(0.0, None), doc="L2 penalty of the item offsets.")
    item_bias = param.Selector(default="none", objects=["none", "local", "global"],
                               doc="Item offsets: none (the paper), one per local model, or one shared.")
    solver = param.Selector(default="gd", objects=["gd", "adagrad"],
                            doc="Plain gradient steps (Algorithm 1) or AdaGrad's per-coordinate step sizes.")
    init = param.Selector(default="uniform", objects=["uniform", "normal"],
                          doc="Initial factors uniform on [0, init_scale) (all users start aligned) or "
                              "normal with standard deviation init_scale.")
    init_scale = param.Number(default=0.5, bounds=(0.0, None), inclusive_bounds=(False, True),
                              doc="Scale of the random initial factors.")
    step_control = param.Selector(default="halve", objects=["halve", "fixed"],
                                  doc="Gradient steps halved after a step that raised the training objective "
                                      "(default), or fixed as in Algorithm 1.")
    tol = param.Number(default=1e-3, bounds=(0.0, None),
                       doc="Stop when the training objective improves by less than this (paper: 0.001; 0: never).")
    max_iter = param.Integer(default=200, bounds=(1, 100_000), doc="Iterations at most (paper: 200).")
    patience = param.Integer(default=20, bounds=(0, None),
                             doc="Early stopping on validation: iterations without improvement (0: off).")

    # ------------------------------------------------------------------ layout
    #: the stored arrays (by user or item first) behind ``U_``, ``V_``, ``B_``, ``Ku_``, ``Ki_``
    _Ue = _Ve = _Be = _Kue = _Kie = None

    U_ = _model_first_view("_Ue", "(q, m, r) user factors of the local models.")
    V_ = _model_first_view("_Ve", "(q, n, r) item factors of the local models.")
    B_ = _model_first_view("_Be", "(q, n) item offsets of the local models.")
    Ku_ = _model_first_view("_Kue", "(q, m) kernel weights K(u_t, u) of the users.")
    Ki_ = _model_first_view("_Kie", "(q, n) kernel weights K(i_t, i) of the items.")

    # ------------------------------------------------------------------ hook for subclasses
    def _kernels(self, train: Ratings, rng: np.random.Generator):
        """``(Ku, Ki, anchor_users, anchor_items)``; GCR: one model with unit weights."""
        return (np.ones((1, train.n_users)), np.ones((1, train.n_items)), np.zeros(1, dtype=np.int64),
                np.zeros(1, dtype=np.int64))

    # ------------------------------------------------------------------ contract
    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        self._code = surrogate_code(self.loss)
        self.Ku_, self.Ki_, self.anchor_users_, self.anchor_items_ = self._kernels(train, rng)
        q, m, n, r = self.Ku_.shape[0], train.n_users, train.n_items, int(self.rank)
        self._Ue = _draw_by_model(rng, self.init, float(self.init_scale), q, m, r)
        self._Ve = _draw_by_model(rng, self.init, float(self.init_scale), q, n, r)
        self.B_ = np.zeros((q, n))
        self.c_ = np.zeros(n)
        self.prior_ = self.item_prior_offsets(train)
        self._take_training_arrays(train)
        # the users' gradients and AdaGrad's sums are kept for AdaGrad only: a gradient step applies each user's
        # gradient as it is made (lk.lcr_user_step)
        adagrad = self.solver == "adagrad"
        self._gU = np.empty_like(self._Ue) if adagrad else None
        self._gV = np.empty_like(self._Ve)
        self._gB = np.empty_like(self._Be)
        self._hU = np.zeros_like(self._Ue) if adagrad else None
        self._hV = np.zeros_like(self._Ve)
        self._hB = np.zeros_like(self._Be)
        self._hc = np.zeros_like(self.c_)
        self.train_log_: list[dict] = []
        self._objective: list[float] = []
        self.step_scale_ = np.ones(q)
        self.step_factor_ = 1.0
        t0 = time.perf_counter()
        self._estimate()
        self.step_scale_ = self._step_scales()
        self._objective[-1] = self._objective_value()
        self.train_log_.append({"iteration": 0, "objective": self._objective[-1],
                                "train_zero_one": self._train_error, "estimation_seconds": time.perf_counter() - t0,
                                "update_seconds": 0.0, "step_factor": self.step_factor_})
        if not np.any(self._upairs > 0):
            raise DataError(f"{type(self).__name__}: no user has two training ratings of different value, so "
                            "there is no preference pair to learn from")

    def _step_scales(self) -> np.ndarray:
        """``s_t``: the inverse of local model t's mean combination weight over the entries it reaches.

        Each local model's step is ``lr · s_t`` and its penalty ``λ / s_t``, so that a step moves the
        combined prediction about as far as a GCR step of the same ``lr`` (a model that carries the
        whole prediction, ``α = 1``, has ``s_t = 1``; GCR is that case) and the penalty shrinks it at
        the same rate ``lr · λ`` whatever the number of local models and the kernel widths.
        """
        q = self.Ku_.shape[0]
        total, count = np.empty(q), np.empty(q, dtype=np.int64)
        lk.model_weights(self._users, self._items, self._Kue, self._Kie, self._w, total, count)
        return np.where(total > 0, count / np.where(total > 0, total, 1.0), 1.0)

    def _penalties(self) -> tuple[np.ndarray, np.ndarray]:
        scale = getattr(self, "step_scale_", None)
        if scale is None:
            scale = np.ones(self.Ku_.shape[0])
        return float(self.reg) / scale, float(self.reg_bias) / scale

    def _objective_value(self) -> float:
        """``E / |U|`` at the last estimation (data term from :func:`pair_pass`, penalties added)."""
        active = self._upairs > 0
        n_active = max(int(active.sum()), 1)
        lam, lam_b = self._penalties()
        reg = 0.5 * dense.dot(lam, lk.sq_norms(self._Ue) + lk.sq_norms(self._Ve))
        reg += 0.5 * dense.dot(lam_b, lk.sq_norms(self._Be)) + 0.5 * float(self.reg_bias) * dense.dot(self.c_, self.c_)
        return (float(self._uloss[active].sum()) + reg) / n_active

    def _estimate(self) -> None:
        """Estimation step: combined predictions, pairwise loss and ``G = ∂E/∂f̂`` (frozen for the update)."""
        lk.combine(self._users, self._items, self._Kue, self._Kie, self._Ue, self._Ve, lk.NO_USER_BIAS, self._Be, False,
                   0.0, self._f, self._w)
        self._f += self.c_[self._items] + self.prior_[self._items]
        lk.pair_pass(self._indptr, self._ratings, self._f, self._code, float(self.margin), self._G, self._uloss,
                     self._uerr, self._upairs)
        active = self._upairs > 0
        self._objective.append(self._objective_value())
        self._train_error = float(self._uerr[active].mean()) if active.any() else float("nan")

    def _update(self) -> None:
        """Update step: the gradient of every local model at the frozen estimation, then one step."""
        lr, lam_c = float(self.lr), float(self.reg_bias)
        lam, lam_b = self._penalties()
        if self.item_bias == "global":
            gc = np.bincount(self._items, weights=self._G, minlength=len(self.c_)) + lam_c * self.c_
        if self.solver == "adagrad":
            if self._gU is None:  # the solver was changed since the setup
                self._gU, self._hU = np.empty_like(self._Ue), np.zeros_like(self._Ue)
            lk.lcr_gradients(self._indptr, self._items, self._users, self._iptr, self._ipos, self._Kue, self._Kie,
                             self._w, self._G, self._Ue, self._Ve, self._Be, lam, lam_b, self._gU, self._gV, self._gB)
            lk.apply_adagrad(self._Ue, self._gU, self._hU, lr, 1e-8)
            lk.apply_adagrad(self._Ve, self._gV, self._hV, lr, 1e-8)
            if self.item_bias == "local":
                lk.apply_adagrad(self._Be, self._gB, self._hB, lr, 1e-8)
            elif self.item_bias == "global":
                lk.apply_adagrad(self.c_, gc, self._hc, lr, 1e-8)
            return
        lr *= self.step_factor_
        steps = lr * self.step_scale_
        # the items' gradients first, at the factors of the estimation; then each user's, applied as it is made
        # (it reads V, which moves last)
        lk.lcr_item_gradients(self._iptr, self._ipos, self._users, self._Kue, self._Kie, self._w, self._G, self._Ue,
                              self._Ve, self._Be, lam, lam_b, self._gV, self._gB)
        lk.lcr_user_step(self._indptr, self._items, self._Kue, self._Kie, self._w, self._G, self._Ue, self._Ve, lam,
                         steps)
        lk.apply_step(self._Ve, self._gV, steps)
        if self.item_bias == "local":
            lk.apply_step(self._Be, self._gB, steps)
        elif self.item_bias == "global":
            self.c_ -= lr * gc

    def _step(self, iteration: int) -> float:
        t0 = time.perf_counter()
        self._update()
        t1 = time.perf_counter()
        self._estimate()
        t2 = time.perf_counter()
        self.train_log_.append({"iteration": iteration, "objective": self._objective[-1],
                                "train_zero_one": self._train_error, "estimation_seconds": t2 - t1,
                                "update_seconds": t1 - t0, "step_factor": self.step_factor_})
        if self.step_control == "halve" and self.solver == "gd" and self._objective[-1] > self._objective[-2]:
            self.step_factor_ *= 0.5
        return self._objective[-1]

    #: iterations over which the improvement of the training objective is averaged for ``tol``
    tol_window = 10

    def _converged(self, iteration: int) -> bool:
        """The paper's stop (§5.1): the training objective improves by less than ``tol`` per iteration.

        The improvement is averaged over the last :attr:`tol_window` iterations — gradient steps
        start slowly from small factors and a single iteration's change is noisy — and the test
        starts once that many iterations have run. An objective that goes up also stops training.
        """
        k = self.tol_window
        if self.tol <= 0 or len(self._objective) <= k:
            return False
        return (self._objective[-1 - k] - self._objective[-1]) / k < self.tol

    def gradient(self) -> dict[str, np.ndarray]:
        """The gradient of the objective ``E`` (not divided by ``|U|``) at the current factors.

        Returns ``{"U": ..., "V": ..., "B": ..., "c": ...}`` shaped like the factors; what the
        update step applies (exposed for finite-difference checks and teaching).
        """
        self._require_fitted()
        self._refresh_training_arrays()
        self._estimate()
        self._objective.pop()
        lam, lam_b = self._penalties()
        gU, gV, gB = np.empty_like(self._Ue), np.empty_like(self._Ve), np.empty_like(self._Be)
        lk.lcr_gradients(self._indptr, self._items, self._users, self._iptr, self._ipos, self._Kue, self._Kie, self._w,
                         self._G, self._Ue, self._Ve, self._Be, lam, lam_b, gU, gV, gB)
        gc = np.bincount(self._items, weights=self._G, minlength=len(self.c_)) + float(self.reg_bias) * self.c_
        return {"U": np.swapaxes(gU, 0, 1), "V": np.swapaxes(gV, 0, 1), "B": np.swapaxes(gB, 0, 1), "c": gc}

    def objective(self) -> float:
        """The objective ``E`` (eq 9 / eq 14 plus the penalties, not divided by ``|U|``) at the current factors."""
        self._require_fitted()
        self._refresh_training_arrays()
        self._estimate()
        value = self._objective.pop()
        return value * max(int((self._upairs > 0).sum()), 1)

    def _take_training_arrays(self, t: Ratings) -> None:
        """The training table as the kernels read it, and the per-rating and per-user buffers they fill."""
        self._indptr = t.indptr
        self._users = t.users
        self._items = t.items
        self._ratings = t.ratings
        self._iptr, self._ipos = t.item_index()
        nnz = len(t)
        self._f, self._w, self._G = np.empty(nnz), np.empty(nnz), np.empty(nnz)
        self._uloss, self._uerr = np.empty(t.n_users), np.empty(t.n_users)
        self._upairs = np.empty(t.n_users, dtype=np.int64)

    def _refresh_training_arrays(self) -> None:
        if getattr(self, "_indptr", None) is None or len(self._f) != len(self.train_):
            self._take_training_arrays(self.train_)
            self._objective = []
        self._code = surrogate_code(self.loss)

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        out = np.empty(len(users))
        w = np.empty(len(users))
        lk.combine(users, items, self._Kue, self._Kie, self._Ue, self._Ve, lk.NO_USER_BIAS, self._Be, False, 0.0, out, w)
        out += self.c_[items] + self.prior_[items]
        return out

    def _state(self) -> dict[str, np.ndarray]:
        return {"U": self.U_, "V": self.V_, "B": self.B_, "c": self.c_, "prior": self.prior_, "step_scale": self.step_scale_, "Ku": self.Ku_, "Ki": self.Ki_,
                "anchor_users": self.anchor_users_, "anchor_items": self.anchor_items_}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        U = np.ascontiguousarray(state["U"], dtype=np.float64)
        V = np.ascontiguousarray(state["V"], dtype=np.float64)
        Ku = np.ascontiguousarray(state["Ku"], dtype=np.float64)
        Ki = np.ascontiguousarray(state["Ki"], dtype=np.float64)
        B = np.ascontiguousarray(state["B"], dtype=np.float64)
        if U.ndim != 3 or V.ndim != 3 or U.shape[0] != V.shape[0] or U.shape[2] != V.shape[2] \
                or Ku.shape != U.shape[:2] or Ki.shape != V.shape[:2] or B.shape != V.shape[:2]:
            raise DataError(f"{type(self).__name__} state has inconsistent shapes: U {U.shape}, V {V.shape}, "
                            f"B {B.shape}, Ku {Ku.shape}, Ki {Ki.shape}")
        self.U_, self.V_, self.B_, self.Ku_, self.Ki_ = U, V, B, Ku, Ki
        self.c_ = np.ascontiguousarray(state["c"], dtype=np.float64)
        self.prior_ = np.ascontiguousarray(state["prior"], dtype=np.float64)
        self.step_scale_ = np.ascontiguousarray(state["step_scale"], dtype=np.float64)
        self.anchor_users_ = np.asarray(state["anchor_users"], dtype=np.int64)
        self.anchor_items_ = np.asarray(state["anchor_items"], dtype=np.int64)

    def _n_models(self) -> int:
        """Number of factorisations q (GCR: one)."""
        return 1

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        q, m, n, r = self._n_models(), n_users, n_items, int(self.rank)
        return {"U": (q, m, r), "V": (q, n, r), "B": (q, n), "c": (n,), "prior": (n,), "step_scale": (q,),
                "Ku": (q, m), "Ki": (q, n), "anchor_users": (q,), "anchor_items": (q,)}

    # ------------------------------------------------------------------ reports
    def timings(self):
        """Per-iteration seconds of the estimation and update steps (a DataFrame)."""
        import pandas as pd
        return pd.DataFrame(getattr(self, "train_log_", []))

