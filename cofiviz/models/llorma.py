"""LLORMA: Local Low-Rank Matrix Approximation (Lee, Kim, Lebanon, Singer, ICML 2013; LCR §2.2).

The least-squares baseline of LCR's Table 2. The same local scheme as LCR — q anchor points drawn
uniformly from the training ratings, product Epanechnikov kernels (h = 0.8) on arccos distances of a
rank-10 RegSVD — but every local model minimises its own kernel-weighted squared error (eq 2)

    (Û_t, V̂_t) = argmin Σ_{(u,i) ∈ A} K(u_t, u) K(i_t, i) (M_ui − μ − [U_t V_tᵀ]_ui)² + λ(‖U_t‖² + ‖V_t‖²)   (2)

(μ the global training mean, and with ``biased`` a user and an item offset per local model), and the
estimate is the Nadaraya-Watson combination (eq 3)

    M̂_ui = μ + Σ_t [K(u_t, u) K(i_t, i) / Σ_s K(u_s, u) K(i_s, i)] [Û_t V̂_tᵀ]_ui.               (3)

The local problems do not interact, so every iteration solves all of them at once: one weighted
alternating-least-squares sweep (exact ridge solves of every user row, then every item row, of every
local model, in parallel over (model, row)). Items are ranked by M̂.

Beyond the paper, a choice of this library: a fixed item offset ``o_i = β·(m̃_i − μ)`` (:mod:`cofiviz.models.prior`,
``item_prior`` = β, 0 by default: the paper's model) may be added to the estimate, ``M̂_ui + o_i``; the local
models then fit the residuals ``M_ui − o_i`` (least squares: the same as adding ``o_i`` inside eq 2), and the
offset is learned by no step and carries no penalty. With ``rank = 0``, ``biased`` off and β = 1, the estimate is
the damped item mean itself.
"""

from __future__ import annotations

import time

import numpy as np
import param

from ..datasets import tiny
from ..util.errors import DataError
from ..ratings import Ratings
from ..solvers import dense
from . import _local_kernels as lk
from . import _wals_kernels as wk
from ._local import LocalParams, kernel_coverage, local_kernels
from .base import Model
from .convergence import StopsOnRMSE
from .prior import ItemPriorParams
from .regsvd import warmup as svd_warmup
from ..search.space import IntLogUniform, LogUniform

__all__ = ["LLORMA", "warmup"]


class LLORMA(StopsOnRMSE, Model, LocalParams, ItemPriorParams):
    """LLORMA (eqs 2-3): q kernel-weighted local SVDs combined by Nadaraya-Watson regression.

    Parameters
    ----------
    rank : int
        Rank of each local model (paper's search: 5…20; 0: no factors).
    n_local : int
        Number of local models q (paper's search: 10…50).
    bandwidth, kernel, distance, svd_rank
        The local scheme, as in :class:`~cofiviz.models.lcr.LCR`.
    reg : float
        λ of eq (2)'s L2 penalty (per row, on the kernel-weighted squared error).
    reg_bias : float
        Penalty of the per-model user and item offsets.
    biased : bool
        Per local model, learn a user and an item offset besides the factors.
    item_prior, prior_damping : float
        β and the damping of the fixed item offset ``β·(m̃_i − μ)`` added to the estimate (module notes; 0: the
        paper's model).
    init_scale : float
        Standard deviation of the random initial factors.
    tol : float
        Stop when the kernel-weighted training RMSE improves by less than this (0: never).
    max_iter : int
        ALS sweeps at most.
    patience : int
        Early stopping on validation data (``fit(train, valid)``), restoring the best iterate.
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"rank": IntLogUniform(3, 30), "reg": LogUniform(1.0, 50.0), "n_local": IntLogUniform(8, 50)}
    item_mean_setting = {"rank": 0, "biased": False, "item_prior": 1.0}
    presets = {"paper": {"n_local": 50, "bandwidth": 0.8, "kernel": "epanechnikov"}}

    rank = param.Integer(default=10, bounds=(0, 2000), doc="Rank of each local model (0: no factors).")
    reg = param.Number(default=3.0, bounds=(0.0, None), doc="L2 penalty λ of eq (2).")
    reg_bias = param.Number(default=1.0, bounds=(0.0, None), doc="L2 penalty of the per-model offsets.")
    biased = param.Boolean(default=True, doc="Learn a user and an item offset per local model.")
    init_scale = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                              doc="Standard deviation of the random initial factors.")
    max_iter = param.Integer(default=20, bounds=(1, 100_000), doc="ALS sweeps at most.")
    patience = param.Integer(default=3, bounds=(0, None),
                             doc="Early stopping on validation: sweeps without improvement (0: off).")

    #: no step size: the penalties keep the ridge solves of ALS well-posed
    divergence_hint = (("reg", "raise"), ("reg_bias", "raise"))
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (svd_warmup, lk.warmup, dense.warmup)

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        self.Ku_, self.Ki_, self.anchor_users_, self.anchor_items_, _, _ = local_kernels(
            train, int(self.n_local), rng, bandwidth=float(self.bandwidth), kernel=self.kernel,
            distance=self.distance, svd_rank=int(self.svd_rank))
        q, m, n, r = int(self.n_local), train.n_users, train.n_items, int(self.rank)
        self.U_ = rng.normal(0.0, self.init_scale, (q, m, r))
        self.V_ = rng.normal(0.0, self.init_scale, (q, n, r))
        self.bu_ = np.zeros((q, m))
        self.bi_ = np.zeros((q, n))
        self.prior_ = self.item_prior_offsets(train)
        self._ratings = train.ratings
        self.mu_ = np.array([train.global_mean])
        if self.item_prior != 0.0:  # the local models fit what the offset leaves
            self._ratings = train.ratings - self.prior_[train.items]
            self.mu_ = np.array([float(np.mean(self._ratings))])
        self._indptr = train.indptr
        self._upos = np.arange(len(train), dtype=np.int64)
        self._users = train.users
        self._items = train.items
        self._iptr, self._ipos = train.item_index()
        self._reset_rmse()
        self.train_log_: list[dict] = []
        self.coverage_ = kernel_coverage(train, self.Ku_, self.Ki_)

    def _step(self, iteration: int) -> float:
        mu, lam, lam_b, b = float(self.mu_[0]), float(self.reg), float(self.reg_bias), bool(self.biased)
        t0 = time.perf_counter()
        wk.wals_half(self._indptr, self._upos, self._items, self._ratings, self.Ku_, self.Ki_, self.U_, self.V_,
                     self.bu_, self.bi_, mu, lam, lam_b, b, b)
        wk.wals_half(self._iptr, self._ipos, self._users, self._ratings, self.Ki_, self.Ku_, self.V_, self.U_,
                     self.bi_, self.bu_, mu, lam, lam_b, b, b)
        t1 = time.perf_counter()
        q = self.U_.shape[0]
        sse, sw = np.empty(q), np.empty(q)
        wk.weighted_sq_loss(self._users, self._items, self._ratings, self.Ku_, self.Ki_, self.U_, self.V_,
                            self.bu_, self.bi_, mu, sse, sw)
        mse = float(sse.sum() / max(sw.sum(), 1e-300))
        self._record_mse(mse)
        self.train_log_.append({"iteration": iteration, "weighted_mse": mse, "update_seconds": t1 - t0,
                                "estimation_seconds": time.perf_counter() - t1})
        return mse

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        out = np.empty(len(users))
        # eq 3 is LCR's eq 15 with user offsets: one kernel, reading the by-model arrays through transposed views
        lk.combine(users, items, self.Ku_.T, self.Ki_.T, self.U_.transpose(1, 0, 2), self.V_.transpose(1, 0, 2),
                   self.bu_.T, self.bi_.T, True, float(self.mu_[0]), out, np.empty(len(users)))
        if np.any(self.prior_):  # the offsets of the fit, whatever item_prior says now
            out += self.prior_[items]
        return out

    def _state(self) -> dict[str, np.ndarray]:
        return {"U": self.U_, "V": self.V_, "bu": self.bu_, "bi": self.bi_, "mu": self.mu_, "Ku": self.Ku_,
                "Ki": self.Ki_, "anchor_users": self.anchor_users_, "anchor_items": self.anchor_items_,
                **({"prior": self.prior_} if self.item_prior != 0.0 else {})}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        arrs = {k: np.ascontiguousarray(state[k], dtype=np.float64) for k in ("U", "V", "bu", "bi", "Ku", "Ki")}
        U, V = arrs["U"], arrs["V"]
        if U.ndim != 3 or V.ndim != 3 or U.shape[0] != V.shape[0] or U.shape[2] != V.shape[2] \
                or arrs["Ku"].shape != U.shape[:2] or arrs["Ki"].shape != V.shape[:2]:
            raise DataError(f"LLORMA state has inconsistent shapes: U {U.shape}, V {V.shape}, "
                            f"Ku {arrs['Ku'].shape}, Ki {arrs['Ki'].shape}")
        self.U_, self.V_, self.bu_, self.bi_ = U, V, arrs["bu"], arrs["bi"]
        self.Ku_, self.Ki_ = arrs["Ku"], arrs["Ki"]
        self.mu_ = np.asarray(state["mu"], dtype=np.float64).reshape(1)
        self.anchor_users_ = np.asarray(state["anchor_users"], dtype=np.int64)
        self.anchor_items_ = np.asarray(state["anchor_items"], dtype=np.int64)
        self.prior_ = (np.ascontiguousarray(state["prior"], dtype=np.float64) if self.item_prior != 0.0
                       else np.zeros(V.shape[1]))

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        q, m, n, r = int(self.n_local), n_users, n_items, int(self.rank)
        return {"U": (q, m, r), "V": (q, n, r), "bu": (q, m), "bi": (q, n), "mu": (1,), "Ku": (q, m), "Ki": (q, n),
                "anchor_users": (q,), "anchor_items": (q,), **({"prior": (n,)} if self.item_prior != 0.0 else {})}


def warmup() -> None:
    """Compile (or load) LLORMA's kernels: a 2-sweep fit on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    svd_warmup()
    train = tiny()
    LLORMA(rank=2, n_local=3, max_iter=2).fit(train).score([0, 1], [1, 2])
