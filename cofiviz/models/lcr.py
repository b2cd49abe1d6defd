"""LCR: Local Collaborative Ranking (Lee, Bengio, Kim, Lebanon, Singer, WWW 2014, §4.3).

q local factorisations ``U_t V_tᵀ`` of rank r, each around an anchor point ``(u_t, i_t)`` drawn
uniformly from the training ratings, are combined by locally constant (Nadaraya-Watson) regression

    f̂_ui = Σ_t [K(u_t, u) K(i_t, i) / Σ_s K(u_s, u) K(i_s, i)] [U_t V_tᵀ]_ui                 (15, 16)

with a product of Epanechnikov kernels ``K = ¾ (1 − (d/h)²)₊`` (bandwidth h = 0.8) on the arccos
distance ``d`` between users' (items') rows of a rank-10 RegSVD of the training ratings (§4.3.2).
The local models minimise the pairwise objective of eq (14),

    E = Σ_u (1/s_u) Σ_{M_ui > M_uj} L(ΔM_uij, f̂_ui − f̂_uj) + (λ/2) Σ_t (‖U_t‖² + ‖V_t‖²),

by Algorithm 1: an *estimation* step computes the combined predictions of all training entries
and the pairwise derivative (synchronised, frozen), then an *update* step moves every local model
along its gradient (eqs 17-18 through eq 15), all local models at once — numba ``prange`` over
users for the ``U_t``, then over items for the ``V_t``. See :mod:`cofiviz.models._local_kernels` for the exact regrouping of Algorithm 1's pair loop
that makes the update O(nnz · r) per local model. Prediction is Algorithm 2. Early stopping on a
validation set (``fit(train, valid)`` with ``patience``), at most ``max_iter`` = 200 iterations,
and a stop when the training objective improves by less than ``tol`` = 0.001 (§5.1).

:func:`cofiviz.engine.training.trace_fit` runs one fit and records test metrics after every iteration as a tidy
DataFrame (the data of the paper's Figures 1-3 and 5).
"""

from __future__ import annotations


import numpy as np
import param

from ..ratings import Ratings
from ..solvers import dense
from . import _local_kernels as lk
from ._local import LocalParams, PairwiseFactorModel, kernel_coverage, local_kernels
from .gcr import warmup as gcr_warmup
from .regsvd import warmup as svd_warmup
from .scale import Scale
from ..search.space import Choice, IntLogUniform, LogUniform, Uniform

__all__ = ["LCR", "warmup"]


class LCR(PairwiseFactorModel, LocalParams):
    """Local Collaborative Ranking: q local low-rank models trained jointly on a pairwise loss (Algorithm 1).

    Parameters
    ----------
    rank : int
        Rank r of each local model (paper: 5…20; 0: no factors, as in :class:`~cofiviz.models.gcr.GCR`).
    n_local : int
        Number of local models q (paper: 10…50).
    loss : {"log_m", "log_a", "exp_m", "exp_a", "hinge_m", "hinge_a"}
        Surrogate of Table 1.
    margin : float
        γ (paper: 0).
    bandwidth : float
        Kernel bandwidth h (paper: 0.8).
    kernel : {"epanechnikov", "epanechnikov_paper", "triangular", "uniform"}
    distance : {"arccos_scaled", "arccos"}
        Angle between RegSVD vectors, scaled by 2/π to [0, 2] (the toolkit's scale) or in radians.
    svd_rank : int
        Rank of the RegSVD fit that defines the distances (toolkit: 10).
    lr : float
        Learning rate of the gradient steps. Each local model's step is ``lr · s_t`` and its penalty
        ``reg / s_t``, with ``s_t`` the inverse of its mean combination weight, so that the values
        that suit GCR suit LCR for any number of local models (see
        :class:`~cofiviz.models._local.PairwiseFactorModel`).
    reg : float
        λ of the L2 penalty.
    item_prior : float
        Weight β of a fixed item offset, the damped item mean (``prior_damping`` pseudo-ratings at
        the global mean) minus the global mean, added to every score: the local pairwise models
        then learn corrections to the item-mean ranking (default 4; 0: the paper's model). The defaults β = 4 and
        λ = 1, not the paper's β = 0, λ = 0.1, rank at least level with the damped item mean on the validation
        ratings of MovieLens 100K's LCR-protocol splits (N = 10, 20, 50).
    init, init_scale : {"uniform", "normal"}, float
        Initial factors uniform on [0, init_scale) (default: every user starts aligned, so the
        shared "good item" direction is learned first) or normal.
    solver : {"gd", "adagrad"}
        Algorithm 1's plain gradient steps, or AdaGrad's per-coordinate step sizes.
    item_bias : {"none", "local", "global"}
        ``"none"``: the paper's model. ``"local"``: every local model has item offsets ``b_t,i``
        (inside the convex combination); ``"global"``: one shared offset ``c_i`` added to ``f̂``.
    reg_bias, init_scale, tol, max_iter, patience, valid_metric, seed
        As in :class:`~cofiviz.models.gcr.GCR`.

    Attributes (after ``fit``)
    --------------------------
    U_, V_ : (q, m, r), (q, n, r) local factors; ``B_`` (q, n) local item offsets; ``c_`` (n,) global
    offsets; ``Ku_`` (q, m), ``Ki_`` (q, n) kernel factors; ``anchor_users_``, ``anchor_items_``;
    ``train_log_`` (objective, training zero-one error and the seconds of the estimation and update
    steps per iteration).
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"loss": Choice(("log_m", "log_a", "hinge_a")), "rank": IntLogUniform(5, 20),
                    "lr": LogUniform(0.05, 1.0), "reg": LogUniform(0.03, 1.0), "bandwidth": Uniform(0.6, 1.2),
                    "n_local": IntLogUniform(8, 50),
                    "item_prior": Choice((0.0, 1.0, 2.0))}
    #: the configured model without the item-mean offset: the paper's model on the other parameters
    tune_anchors = ({"item_prior": 0.0},)
    item_mean_setting = {"rank": 0, "item_prior": 1.0, "item_bias": "none"}
    scale = Scale("pairs")
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (gcr_warmup, svd_warmup, lk.warmup, dense.warmup)
    presets = {"paper": {"n_local": 50, "bandwidth": 0.8, "kernel": "epanechnikov", "margin": 0.0, "tol": 0.001,
                         "item_bias": "none", "item_prior": 0.0, "solver": "gd", "reg": 0.1}}
    #: the monitor's first Run, on MovieLens 100K: the paper's LCR (no item-mean offset, its light penalty) learns
    #: for about half a minute and overfits from about iteration 60 on; a patience that lets the overfitting show,
    #: and no convergence test to end the run before it does, after which early stopping puts back the best iterate
    first_run = {"patience": 150, "tol": 0.0, "item_prior": 0.0, "reg": 0.1}

    rank = param.Integer(default=10, bounds=(0, 2000), doc="Rank r of each local model (0: no factors).")
    lr = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                      doc="Learning rate ν of the gradient steps.")
    reg = param.Number(default=1.0, bounds=(0.0, None), doc="L2 penalty λ of the factors.")
    item_prior = param.Number(default=4.0, bounds=(0.0, None),
                              doc="Weight β of a fixed item offset β·(damped item mean − μ) added to every score "
                                  "(0: the paper's model).")

    def _kernels(self, train: Ratings, rng: np.random.Generator):
        Ku, Ki, au, ai, P, Q = local_kernels(train, int(self.n_local), rng, bandwidth=float(self.bandwidth),
                                             kernel=self.kernel, distance=self.distance, svd_rank=int(self.svd_rank))
        self.coverage_ = kernel_coverage(train, Ku, Ki)
        return Ku, Ki, au, ai

    def _n_models(self) -> int:
        return int(self.n_local)


def warmup() -> None:
    """Compile (or load) LCR's kernels: a 2-iteration fit on a tiny table."""
    svd_warmup()
    gcr_warmup()
    users = np.repeat(np.arange(4), 3)
    items = np.array([0, 1, 2, 1, 2, 3, 0, 2, 3, 0, 1, 3])
    ratings = np.array([5, 3, 1, 4, 2, 5, 1, 3, 4, 2, 5, 3], dtype=float)
    train = Ratings(users, items, ratings, user_ids=np.arange(4), item_ids=np.arange(4), scale=(1, 5))
    LCR(rank=2, n_local=3, max_iter=2, item_bias="local").fit(train).score([0, 1], [1, 2])
