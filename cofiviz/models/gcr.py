"""GCR: Global Collaborative Ranking (Lee et al., WWW 2014, §4.2).

One factorisation ``f(u, i) = [U Vᵀ]_ui`` fitted to the preference pairs of every user by gradient
steps on eq (9) with L2 regularisation:

    E(U, V) = Σ_u (1/s_u) Σ_{(i,j) ∈ M_u, M_ui > M_uj} L(ΔM_uij, g(u, i, j)) + (λ/2)(‖U‖² + ‖V‖²)   (9)

with ``g(u, i, j) = [U Vᵀ]_ui − [U Vᵀ]_uj`` (eq 8), ``L`` one of the surrogates of Table 1
(:mod:`cofiviz.losses.surrogates`), each pair of different ratings used once and weighted by
``1/s_u``. The gradients are eqs (10)-(13): ``∂g/∂U_u = V_i − V_j``, ``∂g/∂V_i = U_u``,
``∂g/∂V_j = −U_u``. GCR shares LCR's kernels (it is LCR with one model and unit kernel weights), see
:class:`cofiviz.models._local.PairwiseFactorModel`.
"""

from __future__ import annotations

import param

from ..datasets import tiny
from ..solvers import dense
from . import _local_kernels as lk
from ._local import PairwiseFactorModel
from .regsvd import warmup as svd_warmup
from .scale import Scale
from ..search.space import Choice, IntLogUniform, LogUniform

__all__ = ["GCR", "warmup"]


class GCR(PairwiseFactorModel):
    """Global Collaborative Ranking: one low-rank factorisation trained on pairwise surrogate losses (eq 9).

    Parameters
    ----------
    rank : int
        Rank r of ``U Vᵀ`` (0: no factors; with ``item_prior`` and no ``item_bias`` the model ranks as the damped
        item mean does).
    loss : {"log_m", "log_a", "exp_m", "exp_a", "hinge_m", "hinge_a"}
        Surrogate of Table 1.
    margin : float
        γ.
    lr : float
        Learning rate ν of the full-batch gradient steps.
    reg : float
        λ of ``(λ/2)(‖U‖² + ‖V‖²)``.
    item_bias : {"none", "local", "global"}
        ``"none"`` is the paper's model; the others add a learned item offset ``b_i`` to every score
        (for GCR both mean the same), the pairwise analogue of RegSVD's item bias.
    reg_bias : float
        L2 penalty of the item offsets.
    item_prior, prior_damping : float
        Weight and damping of a fixed item-mean offset added to every score (default 2 and 10; 0: the paper's
        model). The defaults β = 2 and λ = 3, not the paper's β = 0, λ = 0.1, rank at least level with the damped
        item mean on the validation ratings of MovieLens 100K's LCR-protocol splits (N = 10, 20, 50); λ = 3
        rather than 1 because at N = 10 the smaller penalty fell significantly below it on a split of its own.
    init, init_scale : {"uniform", "normal"}, float
        Initial factors uniform on [0, init_scale) (default) or normal with that standard deviation.
    solver : {"gd", "adagrad"}
        Plain gradient steps or AdaGrad.
    tol : float
        Stop when the training objective (per user) improves by less than this (paper: 0.001).
    max_iter : int
        At most 200 iterations in the paper.
    patience : int
        Early stopping on validation data (``fit(train, valid)``), restoring the best iterate.
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"loss": Choice(("log_m", "log_a", "hinge_a")), "rank": IntLogUniform(5, 50),
                    "lr": LogUniform(0.01, 1.0), "reg": LogUniform(0.03, 3.0),
                    "item_prior": Choice((0.0, 1.0, 2.0))}
    #: the configured model without the item-mean offset: the paper's model on the other parameters
    tune_anchors = ({"item_prior": 0.0},)
    item_mean_setting = {"rank": 0, "item_prior": 1.0, "item_bias": "none"}
    scale = Scale("pairs")
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (svd_warmup, lk.warmup, dense.warmup)
    presets = {"paper": {"margin": 0.0, "tol": 0.001, "item_bias": "none", "item_prior": 0.0, "solver": "gd",
                         "reg": 0.1}}

    rank = param.Integer(default=10, bounds=(0, 2000), doc="Rank r of the factorisation (0: no factors).")
    lr = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                      doc="Learning rate ν of the gradient steps.")
    reg = param.Number(default=3.0, bounds=(0.0, None), doc="L2 penalty λ of the factors.")
    item_prior = param.Number(default=2.0, bounds=(0.0, None),
                              doc="Weight β of a fixed item offset β·(damped item mean − μ) added to every score "
                                  "(0: the paper's model).")


def warmup() -> None:
    """Compile (or load) the kernels: a 2-iteration fit per loss on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    train = tiny()
    for loss in ("log_m", "hinge_a"):
        GCR(rank=2, max_iter=2, loss=loss, item_bias="global").fit(train).score([0, 1], [1, 2])
