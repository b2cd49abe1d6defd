"""SVD++: latent factors with implicit feedback (Koren, "Factorization meets the neighborhood: a
multifaceted collaborative filtering model", KDD 2008, §2.3).

The rating of user u on item i is predicted as (eq 3)

    r̂_ui = μ + b_u + b_i + q_iᵀ (p_u + |N(u)|^{-1/2} Σ_{j ∈ N(u)} y_j)                         (3)

with μ the global mean of the training ratings and N(u) the items u rated in the training table: a user
is described by the factors ``p_u`` and by which items they rated, each item ``j`` bringing its implicit
factor ``y_j``. The parameters minimise the regularised squared error of the paper,

    Σ_{(u,i) ∈ K} (r_ui − r̂_ui)² + λ_b (b_u² + b_i²) + λ (‖p_u‖² + ‖q_i‖² + Σ_{j ∈ N(u)} ‖y_j‖²)

(the penalties counted once per rating, as the paper's sum is written), by stochastic gradient descent:
one iteration is one epoch over a permutation drawn from the model's seed, users in a shuffled order and
each user's ratings shuffled within the user's block, with the paper's per-rating updates for
``e = r_ui − r̂_ui``

    b_u ← b_u + γ (e − λ_b b_u),  b_i ← b_i + γ (e − λ_b b_i),
    q_i ← q_i + γ (e (p_u + |N(u)|^{-1/2} Σ_j y_j) − λ q_i),  p_u ← p_u + γ (e q_i − λ p_u),
    y_j ← y_j + γ (e |N(u)|^{-1/2} q_i − λ y_j)  for every j ∈ N(u).

The ``y`` updates are taken in the common practical form: the implicit sum is computed once per user
block, the data terms of the ``y`` updates are summed over the block's ratings and applied once at its
end, with the block's penalty steps composed into one factor ``(1 − γλ)^{|N(u)|}`` (to first order in
γ, the gradient step of the user's block of the objective; see
:func:`cofiviz.models._svdpp_kernels.sgd_epoch`). That makes an epoch O(|K| r) instead of
O(Σ_u |N(u)|² r).

An epoch's loss is the training mean squared error seen during the epoch, each rating's error before its update
(``sgd_loss="during"``, default), or that of one more pass over the ratings after the epoch (``"after"``, a
slower form that ranks as the default does: ``benchmarks/bench_forms.py``); the stopping rule (``tol``) reads it.

GAPfm (Shi et al., CIKM 2013, §5.4) compares against SVD++ with dimension 10 and the regularisation
chosen on validation; ranking by r̂_ui, it is a rating-prediction baseline for top-N recommendation.
"""

from __future__ import annotations

import numpy as np
import param

from ..datasets import tiny
from ..util.errors import DataError
from ..ratings import Ratings
from . import _svdpp_kernels as K
from .base import Model
from .convergence import StopsOnRMSE
from ..search.space import IntLogUniform, LogUniform

__all__ = ["SVDpp", "warmup"]


class SVDpp(StopsOnRMSE, Model):
    """SVD++ (Koren, KDD 2008, eq 3): biased latent factors plus the implicit feedback of the rated items, by SGD.

    Parameters
    ----------
    rank : int
        Latent dimension r (GAPfm §5 used 10 for every latent factor model, SVD++ included).
    reg : float
        λ, the L2 penalty of the factors ``p_u``, ``q_i`` and ``y_j`` (applied per rating, as in the paper).
    reg_bias : float
        λ_b, the L2 penalty of the offsets ``b_u``, ``b_i``.
    lr : float
        γ, the SGD step size.
    init_scale : float
        Standard deviation of the normal initial factors ``P``, ``Q``, ``Y`` (the offsets start at 0).
    sgd_loss : {"during", "after"}
        An epoch's loss: the training error seen during the epoch (default), or that of a pass after it.
    tol : float
        Stop when the training RMSE (``sgd_loss``'s) improves by less than this (0: never).
    max_iter : int
        Epochs at most.

    Notes
    -----
    Scores are the predictions r̂_ui of eq 3; ``N(u)`` is the user's items in the training table, also when
    a fitted model is loaded (the save keeps the table). A user without training ratings has ``z_u = 0``.
    """

    display = "SVD++"
    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"rank": IntLogUniform(5, 50), "reg": LogUniform(0.005, 0.5), "reg_bias": LogUniform(0.005, 0.5),
                    "lr": LogUniform(0.002, 0.05)}
    presets = {"paper": {"rank": 10}}

    rank = param.Integer(default=10, bounds=(1, 2000), doc="Latent dimension r.")
    reg = param.Number(default=0.05, bounds=(0.0, None), doc="L2 penalty λ of the factors p, q and y.")
    reg_bias = param.Number(default=0.05, bounds=(0.0, None), doc="L2 penalty of the user and item offsets.")
    lr = param.Number(default=0.01, bounds=(0.0, None), inclusive_bounds=(False, True), doc="SGD step size γ.")
    init_scale = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                              doc="Standard deviation of the normal initial factors.")
    sgd_loss = param.Selector(default="during", objects=["during", "after"],
                              doc="An epoch's loss is the error seen during it, or that of a pass after it.")
    max_iter = param.Integer(default=60, bounds=(1, 100_000), doc="Epochs at most.")

    divergence_hint = (("lr", "lower"), ("reg", "raise"))
    #: the slower forms a user can ask for, which compute the same model (``benchmarks/bench_forms.py``)
    speed_forms = {"sgd_loss": ("after",)}

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        m, n, r = train.n_users, train.n_items, int(self.rank)
        self.P_ = rng.normal(0.0, self.init_scale, (m, r))
        self.Q_ = rng.normal(0.0, self.init_scale, (n, r))
        self.Y_ = rng.normal(0.0, self.init_scale, (n, r))
        self.bu_ = np.zeros(m)
        self.bi_ = np.zeros(n)
        self.mu_ = np.array([train.global_mean])
        self._indptr = train.indptr
        self._users = train.users
        self._items = train.items
        self._ratings = train.ratings
        self._rng = rng
        self._reset_rmse()
        # the step's orders (and the predictions of the pass after it), reused by every iteration
        self._within = np.empty(len(self._ratings), dtype=np.int64)
        if self.sgd_loss == "after":
            self._pred = np.empty(len(self._ratings))

    def _epoch_order(self) -> tuple[np.ndarray, np.ndarray]:
        """The users in a shuffled order, and each user's block of positions shuffled within itself."""
        user_order = self._rng.permutation(len(self._indptr) - 1).astype(np.int64, copy=False)
        # each block sorted by a random key: the table is sorted by user, so this is the order of
        # (user, key), in O(Σ n_u log n_u) instead of a sort of the whole table
        K.block_order(self._indptr, self._rng.random(len(self._ratings)), self._within)
        return user_order, self._within

    def _step(self, iteration: int) -> float:
        mu = float(self.mu_[0])
        user_order, within = self._epoch_order()
        sse = K.sgd_epoch(self._indptr, self._items, self._ratings, user_order, within, self.P_, self.Q_, self.Y_,
                          self.bu_, self.bi_, mu, float(self.lr), float(self.reg), float(self.reg_bias))
        if self.sgd_loss == "during":
            return self._record_mse(sse / len(self._ratings))
        K.predict(self._users, self._items, self.P_, self.Q_, self._implicit(self._indptr, self._items),
                  self.bu_, self.bi_, mu, self._pred)
        np.subtract(self._ratings, self._pred, out=self._pred)
        return self._record_mse(float(np.mean(np.square(self._pred, out=self._pred))))

    def _implicit(self, indptr: np.ndarray, items: np.ndarray) -> np.ndarray:
        """``z_u = |N(u)|^{-1/2} Σ_{j ∈ N(u)} y_j`` for every user of the table ``(indptr, items)``."""
        Z = np.empty(self.P_.shape)
        K.implicit_sums(indptr, items, self.Y_, Z)
        return Z

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        train = self.train_
        Z = self._implicit(train.indptr,
                           train.items)
        out = np.empty(len(users))
        K.predict(users, items, self.P_, self.Q_, Z, self.bu_, self.bi_, float(self.mu_[0]), out)
        return out

    def _state(self) -> dict[str, np.ndarray]:
        return {"P": self.P_, "Q": self.Q_, "Y": self.Y_, "bu": self.bu_, "bi": self.bi_, "mu": self.mu_}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        P, Q, Y = (np.asarray(state[k], dtype=np.float64) for k in ("P", "Q", "Y"))
        if P.ndim != 2 or Q.ndim != 2 or Y.shape != Q.shape or P.shape[1] != Q.shape[1]:
            raise DataError(f"SVDpp state needs P, Q and Y with the same number of columns and Y shaped like Q, "
                            f"got {P.shape}, {Q.shape}, {Y.shape}")
        self.P_, self.Q_, self.Y_ = (np.ascontiguousarray(a) for a in (P, Q, Y))
        self.bu_ = np.ascontiguousarray(state["bu"], dtype=np.float64)
        self.bi_ = np.ascontiguousarray(state["bi"], dtype=np.float64)
        self.mu_ = np.asarray(state["mu"], dtype=np.float64).reshape(1)

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        r = int(self.rank)
        return {"P": (n_users, r), "Q": (n_items, r), "Y": (n_items, r), "bu": (n_users,), "bi": (n_items,),
                "mu": (1,)}


def warmup() -> None:
    """Compile (or load) the kernels: a 2-epoch fit on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    K.warmup()
    SVDpp(rank=2, max_iter=2).fit(tiny()).score([0, 1], [1, 2])
