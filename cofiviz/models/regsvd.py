"""RegSVD: the biased, regularised incomplete SVD (Billsus & Pazzani; LCR §2.1, eq 1).

The rating of user u on item i is predicted as

    M̂_ui = μ + b_u + b_i + P_u · Q_i                                                          (1)

with μ the global mean of the training ratings, and the factors minimise the squared error over the
training entries A plus L2 penalties,

    Σ_{(u,i) ∈ A} (M_ui − M̂_ui)² + λ (‖P_u‖² + ‖Q_i‖²) + λ_b (b_u² + b_i²),

by stochastic gradient descent (``solver="sgd"``, one epoch per iteration over a seeded random
permutation of the entries, the classic Funk update) or by alternating least squares
(``solver="als"``, ridge solves of every user and then every item row).

An SGD epoch applies the penalty at every rating it visits, so a row with ``n`` ratings is penalised ``n``
times: what SGD minimises is the objective above with λ and λ_b multiplied by each row's number of ratings,
``λ n_u ‖P_u‖² + λ n_i ‖Q_i‖²`` (the weighted-λ rule of ALS-WR, Zhou et al., AAIM 2008, which Surprise's SGD
and LensKit's ALS also follow). The ALS solver minimises that same objective by default
(``reg_weighting="ratings"``), so that one λ means the same for both solvers; ``reg_weighting="none"`` gives the
plain penalty above, with which a λ suited to SGD lets ALS overfit users and items with many ratings.

The defaults are the fastest forms, which rank as the slower ones do (``benchmarks/bench_forms.py`` tests each
pair on MovieLens 100K and 1M, user by user): SGD in 32-bit floats, ALS by conjugate gradient, and the loss
of an SGD epoch taken during the epoch.

``als_solve="cg"`` (default) solves each row of an ALS half-sweep by ``cg_steps`` conjugate-gradient steps from the
row's current value (``_als_cg_kernels``: the warm-started conjugate-gradient ALS of Takács, Pilászy & Tikk, RecSys
2011, preconditioned by the diagonal). A step costs ``2(r+1)`` multiply-adds per rating where the exact solve
(``als_solve="cholesky"``) forms normal equations of ``(r+1)²/2`` per rating, so a sweep at rank 50 takes a fraction
of the time; the row is not solved to the end, but the next sweep starts from where it stopped, and the fits rank
as the exact ones do. It runs in the floats of ``dtype``; the exact solve computes in float64 whatever ``dtype``
says.

``dtype="float32"`` (default) runs SGD in 32-bit floats: factors, offsets and the update's arithmetic, each
prediction's dot product in eight partial sums (``_mf_kernels.sgd_epoch_lanes``), against one chain of additions
per dot product in 64 bits (``dtype="float64"``). What that saves depends on the CPU: its vector units and how much
of an epoch waits on memory (``benchmarks/bench_forms.py`` times both forms' fits). Its operations are in a fixed
order, so a seed gives the same numbers on every CPU, but not the numbers of ``dtype="float64"``.

``sgd_loss="during"`` (default) reports as an epoch's loss the training mean squared error seen during the epoch,
each entry's error before its update (the one Surprise's and Cornac's SGD report); ``sgd_loss="after"`` passes
over the entries once more after the epoch for the error of its result. The stopping rule (``tol``) reads that
loss. The ALS solvers report the error after each sweep.

It is a ranking baseline of LCR's Table 2 and the source of LCR's distances: the angle
between two users' (items') rows of ``P`` (``Q``) defines the neighbourhoods of the local models
(§4.3.2; the authors' toolkit uses one rank-10 SGD fit), see :func:`regsvd_factors`.
"""

from __future__ import annotations

import numpy as np
import param

from ..datasets import tiny
from ..util.errors import DataError
from ..ratings import Ratings
from . import _als_cg_kernels as cgk
from . import _wals_kernels as wk
from . import _mf_kernels as mk
from .base import Model
from .convergence import StopsOnRMSE
from ..search.space import IntLogUniform, LogUniform

__all__ = ["RegSVD", "regsvd_factors", "warmup"]


class RegSVD(StopsOnRMSE, Model):
    """Biased regularised incomplete SVD (eq 1 of LCR with user and item offsets), by SGD or ALS.

    Parameters
    ----------
    rank : int
        Latent dimension r (LCR Table 2 searched 10…50; LCR's distances use 10).
    reg : float
        λ, the L2 penalty of the factors.
    reg_bias : float
        λ_b, the L2 penalty of the offsets.
    lr : float
        SGD learning rate (unused by ALS).
    solver : {"sgd", "als"}
    als_solve : {"cg", "cholesky"}
        How ALS solves each row: by ``cg_steps`` preconditioned conjugate-gradient steps from its current value
        (default), or exactly, by the Cholesky factor of its normal equations (see the module docstring).
    cg_steps : int
        The conjugate-gradient steps of each row and half-sweep (``als_solve="cg"``).
    reg_weighting : {"ratings", "none"}
        The ALS solver's penalty of a row: λ times the row's number of ratings, what an SGD epoch applies
        (default), or λ alone. SGD is unaffected.
    dtype : {"float32", "float64"}
        The floats of SGD and of the conjugate-gradient ALS: 32-bit (default; SGD: eight partial sums per dot
        product), or 64-bit. The exact ALS computes in float64 whatever this says.
    sgd_loss : {"during", "after"}
        SGD: an epoch's loss is the training error seen during the epoch (default), or that of a pass after it.
    biased : bool
        Learn the user and item offsets b_u, b_i.
    center : bool
        Use the global mean μ (False: ``M̂ = P_u·Q_i`` (+ offsets), the SVD of the raw ratings, whose
        first direction then carries the mean rating).
    init : {"normal", "uniform"}
        Initial factors: ``"normal"``, N(0, init_scale²) entries; ``"uniform"``, entries uniform on
        ``[0, 1/rank)`` (``init_scale`` unused), the start of the PREA toolkit in which LCR ran its
        baselines (every first prediction ``P_u·Q_i`` is then positive, about ``1/(4·rank)``).
    init_scale : float
        Standard deviation of the normal initial factors.
    tol : float
        Stop when the training RMSE improves by less than this (0: never).
    max_iter : int
        Epochs (SGD) or sweeps (ALS) at most.
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"rank": IntLogUniform(5, 100), "reg": LogUniform(0.005, 0.5), "reg_bias": LogUniform(0.005, 0.5),
                    "lr": LogUniform(0.002, 0.05)}
    presets = {"paper": {"solver": "sgd", "biased": True, "center": True}}

    rank = param.Integer(default=10, bounds=(1, 2000), doc="Latent dimension r.")
    reg = param.Number(default=0.05, bounds=(0.0, None), doc="L2 penalty λ of the factors.")
    reg_bias = param.Number(default=0.05, bounds=(0.0, None), doc="L2 penalty of the user and item offsets.")
    lr = param.Number(default=0.01, bounds=(0.0, None), inclusive_bounds=(False, True),
                      doc="SGD learning rate (not used by ALS).")
    solver = param.Selector(default="sgd", objects=["sgd", "als"], doc="Stochastic gradient descent or ALS.")
    als_solve = param.Selector(default="cg", objects=["cg", "cholesky"],
                               doc="ALS: each row solved by conjugate-gradient steps or exactly (Cholesky).")
    cg_steps = param.Integer(default=2, bounds=(1, 100), doc="ALS by conjugate gradient: steps per row and half-sweep.")
    reg_weighting = param.Selector(default="ratings", objects=["ratings", "none"],
                                   doc="ALS: λ times each row's number of ratings (as SGD applies it), or λ alone.")
    dtype = param.Selector(default="float32", objects=["float32", "float64"],
                           doc="SGD or conjugate-gradient ALS in 32-bit floats, or in 64-bit ones (the exact ALS: 64-bit).")
    sgd_loss = param.Selector(default="during", objects=["during", "after"],
                              doc="SGD: an epoch's loss is the error seen during it, or that of a pass after it.")
    biased = param.Boolean(default=True, doc="Learn user and item offsets.")
    center = param.Boolean(default=True, doc="Predict around the global mean μ (False: μ = 0, plain SVD of the ratings).")
    init = param.Selector(default="normal", objects=["normal", "uniform"],
                          doc="Normal N(0, init_scale²) or uniform [0, 1/rank) initial factors.")
    init_scale = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                              doc="Standard deviation of the normal initial factors.")
    max_iter = param.Integer(default=60, bounds=(1, 100_000), doc="Epochs (SGD) or sweeps (ALS) at most.")

    divergence_hint = (("lr", "lower"), ("reg", "raise"))
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (wk.warmup,)

    #: the slower forms a user can ask for, which compute the same model (``benchmarks/bench_forms.py``)
    speed_forms = {"dtype": ("float64",), "als_solve": ("cholesky",), "sgd_loss": ("after",)}
    speed_form_settings = ({}, {"solver": "als"})

    @property
    def _dtype(self) -> np.dtype:
        """The floats the fit computes in: ``dtype``, except the exact ALS's float64."""
        exact = self.solver == "als" and self.als_solve == "cholesky"
        return np.dtype(np.float64 if exact else self.dtype)

    def _divergence_hint(self) -> tuple[tuple[str, str], ...]:
        """ALS has no learning rate: only ``reg`` keeps its ridge solves stable."""
        return (("reg", "raise"),) if self.solver == "als" else type(self).divergence_hint

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        m, n, r = train.n_users, train.n_items, int(self.rank)
        if self.init == "uniform":
            self.P_ = rng.uniform(0.0, 1.0 / r, (m, r))
            self.Q_ = rng.uniform(0.0, 1.0 / r, (n, r))
        else:
            self.P_ = rng.normal(0.0, self.init_scale, (m, r))
            self.Q_ = rng.normal(0.0, self.init_scale, (n, r))
        self.bu_ = np.zeros(m)
        self.bi_ = np.zeros(n)
        self.mu_ = np.array([train.global_mean if self.center else 0.0])
        self._users = train.users
        self._items = train.items
        self._ratings = train.ratings
        dtype = self._dtype
        if dtype != np.float64:   # the same draws, rounded
            self.P_, self.Q_, self.bu_, self.bi_ = (a.astype(dtype) for a in (self.P_, self.Q_, self.bu_, self.bi_))
            self._ratings32 = train.ratings.astype(dtype)
        if dtype == np.float32 and self.solver == "sgd":
            self._identity = np.arange(len(train), dtype=np.int32 if len(train) < 2**31 else np.int64)
            self._order = self._identity.copy()
        self._rng = rng
        self._reset_rmse()
        if not self._cg and (self.solver == "als" or self.sgd_loss == "after"):   # the pass after each step
            self._pred = np.empty(len(self._ratings))
        if self.solver == "als":
            self._indptr = train.indptr
            self._upos = np.arange(len(train), dtype=np.int64)
            self._iptr, self._ipos = train.item_index()
            self._ones_u = np.ones((1, m))
            self._ones_i = np.ones((1, n))
        if self._cg:   # the residuals the first sweep starts from; each sweep leaves those of its own result
            self._residual = np.empty(len(self._ratings), dtype=dtype)
            self._cg_residuals()
            self._icols = train.users[self._ipos]        # the item half's ratings in item order
            self._iresidual = np.empty_like(self._residual)

    @property
    def _cg(self) -> bool:
        return self.solver == "als" and self.als_solve == "cg"

    def _cg_residuals(self) -> float:
        """Each training entry's residual at the current factors, into ``_residual``; returns their mean square."""
        t = self.P_.dtype.type
        ratings = self._ratings if self.P_.dtype == np.float64 else self._ratings32
        sse = cgk.residuals(self._users, self._items, ratings, self.P_, self.Q_, self.bu_, self.bi_,
                            t(self.mu_[0]), self._residual)
        return sse / len(ratings)

    def _cg_sweep(self) -> float:
        """One sweep of the conjugate-gradient ALS (users, then items); the training MSE after it."""
        t = self.P_.dtype.type
        lam, lam_b = t(self.reg), t(self.reg_bias)
        b, w, k = bool(self.biased), self.reg_weighting == "ratings", int(self.cg_steps)
        cgk.cg_half(self._indptr, self._items, self.Q_, self.P_, self.bu_, self._residual, lam, lam_b, b, w, k)
        np.take(self._residual, self._ipos, out=self._iresidual)   # after the user half, in item order
        cgk.cg_half(self._iptr, self._icols, self.P_, self.Q_, self.bi_, self._iresidual, lam, lam_b, b, w, k)
        return self._cg_residuals()   # afresh, in user order: the next sweep's start

    def _step(self, iteration: int) -> float:
        mu = float(self.mu_[0])
        if self.solver == "sgd" and self.P_.dtype == np.float32:
            f32 = np.float32
            order = self._order   # the permutation rng.permutation draws (the float64 epoch's order), as int32
            order[:] = self._identity
            self._rng.shuffle(order)
            sse = mk.sgd_epoch_lanes(self._users, self._items, self._ratings32, order, self.P_, self.Q_, self.bu_,
                                     self.bi_, f32(mu), f32(self.lr), f32(self.reg), f32(self.reg_bias),
                                     bool(self.biased))
            return self._record_mse(sse / len(self._ratings) if self.sgd_loss == "during" else self._mse_after())
        if self._cg:
            mse = self._cg_sweep()
            self._record_mse(mse)
            return mse
        if self.solver == "sgd":
            order = self._rng.permutation(len(self._ratings)).astype(np.int64, copy=False)
            sse = mk.sgd_epoch(self._users, self._items, self._ratings, order, self.P_, self.Q_, self.bu_, self.bi_,
                               mu, float(self.lr), float(self.reg), float(self.reg_bias), bool(self.biased))
            if self.sgd_loss == "during":
                return self._record_mse(sse / len(self._ratings))
        else:
            P, Q = self.P_[None], self.Q_[None]
            bu, bi = self.bu_[None], self.bi_[None]
            b = bool(self.biased)
            w = self.reg_weighting == "ratings"
            wk.wals_half(self._indptr, self._upos, self._items, self._ratings, self._ones_u, self._ones_i, P, Q,
                         bu, bi, mu, float(self.reg), float(self.reg_bias), b, b, w)
            wk.wals_half(self._iptr, self._ipos, self._users, self._ratings, self._ones_i, self._ones_u, Q, P,
                         bi, bu, mu, float(self.reg), float(self.reg_bias), b, b, w)
        return self._record_mse(self._mse_after())

    def _mse_after(self) -> float:
        """The training mean squared error at the current factors (a pass over the entries)."""
        mk.predict_mf(self._users, self._items, self.P_, self.Q_, self.bu_, self.bi_, float(self.mu_[0]), self._pred)
        np.subtract(self._ratings, self._pred, out=self._pred)
        return float(np.mean(np.square(self._pred, out=self._pred)))

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        out = np.empty(len(users))
        mk.predict_mf(users, items, self.P_, self.Q_, self.bu_, self.bi_, float(self.mu_[0]), out)
        return out

    def _state(self) -> dict[str, np.ndarray]:
        return {"P": self.P_, "Q": self.Q_, "bu": self.bu_, "bi": self.bi_, "mu": self.mu_}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        dtype = self._dtype
        P, Q = np.asarray(state["P"], dtype=dtype), np.asarray(state["Q"], dtype=dtype)
        if P.ndim != 2 or Q.ndim != 2 or P.shape[1] != Q.shape[1]:
            raise DataError(f"RegSVD state needs P and Q with the same number of columns, got {P.shape}, {Q.shape}")
        self.P_, self.Q_ = np.ascontiguousarray(P), np.ascontiguousarray(Q)
        self.bu_ = np.ascontiguousarray(state["bu"], dtype=dtype)
        self.bi_ = np.ascontiguousarray(state["bi"], dtype=dtype)
        self.mu_ = np.asarray(state["mu"], dtype=np.float64).reshape(1)

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        r = int(self.rank)
        return {"P": (n_users, r), "Q": (n_items, r), "bu": (n_users,), "bi": (n_items,), "mu": (1,)}


def regsvd_factors(train: Ratings, rank: int = 10, seed: int = 0, **params) -> tuple[np.ndarray, np.ndarray]:
    """User and item factors ``(P, Q)`` of a :class:`RegSVD` fitted on ``train`` (LCR's distance source).

    ``params`` are further :class:`RegSVD` parameters (``reg``, ``lr``, ``max_iter``, ``solver``...). Unless they
    say otherwise, the fit is the float64 SGD with its loss measured after each epoch (``dtype="float64"``,
    ``sgd_loss="after"``): the factors that define the distances of LCR's and LLORMA's shipped results.
    """
    model = RegSVD(rank=rank, seed=seed, **{"dtype": "float64", "sgd_loss": "after", **params}).fit(train)
    return model.P_, model.Q_


def warmup() -> None:
    """Compile (or load) the kernels: 2-epoch fits of every solver and form on the tiny table
    (:func:`cofiviz.datasets.tiny`)."""
    wk.warmup()
    mk.warmup()
    train = tiny()
    cgk.warmup()
    forms = [{"solver": "als", "als_solve": "cholesky"}]
    forms += [{"solver": s, "dtype": d} for s in ("sgd", "als") for d in ("float32", "float64")]
    forms += [{"sgd_loss": "after", "dtype": d} for d in ("float32", "float64")]
    for form in forms:
        RegSVD(rank=2, max_iter=2, **form).fit(train).score([0, 1], [1, 2])
