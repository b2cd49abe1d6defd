"""GAPfm: a latent factor model that maximises a smoothed Graded Average Precision.

Shi, Karatzoglou, Baltrunas, Larson, Hanjalic, "GAPfm: Optimal Top-N Recommendations for Graded
Relevance Domains" (CIKM 2013). Scores are ``f_mi = <U_m, V_i>`` (eq 1). Training
maximises eq 9 (the constant 1/M dropped, as the paper does)::

    F(U, V) = Σ_m w_m Σ_i I_mi g(f_mi) Σ_j I_mj β_mij g(f_mj − f_mi) − (λ/2)(‖U‖² + ‖V‖²)

with the logistic ``g``, ``β_mij = Σ_{l ≤ min(y_mi, y_mj)} δ_l`` (eq 4), ``δ_l = (2^l − 1)/2^ymax``
(eq 5) and the user weight ``w_m``: ``1/n_m`` (default, ``user_weight="inverse_length"``: n_m the user's
number of training ratings), ``1`` (the paper's) or ``1/Z_m`` (eq 3). The objective, its gradients (eqs
10–11, re-derived and checked by finite differences) and appendix D's GP@n / GR@n variants live in
:mod:`cofiviz.losses.smoothed_gap`.

One iteration (Algorithm 2), what :meth:`fit` reports to its callbacks:

1. **Users, in parallel** (numba ``prange``): ``U_m ← U_m + γ (∂F_m/∂U_m − λ U_m)`` (eq 10) with V
   fixed; every rated item of the user takes part.
2. **Items** (``item_update="sequential"``, the paper's): users are visited one after the other (in an
   order shuffled every iteration from the model's seed); for user m the set ``T_m`` is chosen
   (``selection``) and each ``i ∈ T_m`` takes the step ``V_i ← V_i + γ (∂F_m/∂V_i − λ V_i)`` of eq 11,
   the gradient computed with the user's new ``U_m`` and the current V. The penalty is therefore applied
   once per (user, selected item), as eq 11 is written. ``item_update="batch"`` instead sums all users'
   eq 11 gradients with V fixed (in parallel) and takes one step per item with ``−λ V_i`` once.

Selection (paper §4.3, Algorithm 1): ``"all"`` (``T_m = N_m``), ``"adaptive"`` (the ``n_selected`` = K
items whose rank by score is farthest from their rank by grade; tied grades share their mean rank,
ties in the distance are broken at random), ``"random"`` (K items uniformly: the paper's control). A
selected item's gradient is that of the user's objective restricted to ``T_m``, which makes the item
step O(K²) per user (the paper's complexity, §4.3); with at most K rated items the selection is
everything and the step is exact.

Reported loss: ``−F(U, V) / M``, the objective above per user (M = number of users in the index
space) with its sign flipped so that lower is better, at the end
of the iteration (``monitor_loss=True``, one more value-only pass over the users), or — cheaper, for
timing — the objective that the user step computed at the *start* of the iteration
(``monitor_loss=False``).
"""

from __future__ import annotations

import numpy as np
import param

from ..datasets import tiny
from ..util.errors import ParameterError
from ..losses.smoothed_gap import OBJECTIVES, WEIGHTS, prepare
from ..losses.smoothed_gap import objective as smoothed_gap_objective
from ..losses.smoothed_gap import warmup as loss_warmup
from ..ratings import Ratings
from . import _gapfm_kernels as K
from .base import Model
from .scale import Scale
from .prior import ItemPriorParams
from ..search.space import Choice, IntLogUniform, LogUniform

__all__ = ["GAPfm", "warmup"]

_SELECTION = {"all": K.SELECT_ALL, "adaptive": K.SELECT_ADAPTIVE, "random": K.SELECT_RANDOM}


class GAPfm(Model, ItemPriorParams):
    """GAPfm (Shi et al. 2013): latent factors trained by gradient ascent on smoothed GAP.

    Parameters
    ----------
    rank : int
        Latent dimension D (paper: 10; 0: no factors, so that with ``item_prior`` the model ranks as the
        damped item mean does).
    reg : float
        λ of eq 9 (paper: 0.001 on Netflix). Default 0.01: with the default step, each step shrinks
        the factors by γλ = 0.002.
    learning_rate : float
        γ of Algorithm 2 (paper: 1e-5 on Netflix, where lists are long). Default 0.2. With
        ``user_weight="one"`` the gradient of a user's term sums over the user's list, so the step that
        works depends on the list length (see ``user_weight``).
    user_weight : {"inverse_length", "one", "inverse_z"}
        ``w_m`` of eq 9. ``"one"`` is the paper's Algorithm 2 (the ``"paper"`` preset). The default
        ``"inverse_length"`` weights user m by ``1/n_m``, so that each user's term is a mean over the
        rated items and one step size fits short and long lists alike: with ``w_m = 1``, the step that
        learns on lists of 10 ratings (γ = 0.02) makes the scores diverge on MovieLens 1M's fixed-ratio
        split (half of each user's ratings, up to 1,157 per user). ``"inverse_z"`` is eq 3's ``1/Z_m``
        (``Z_m`` grade-weighted, so it varies with the user's grades as well as the length). For lists
        of n ratings each, ``"inverse_length"`` with ``(γ, λ)`` takes the steps of ``"one"`` with
        ``(γ/n, nλ)`` (and ``item_reg`` n·λ_V): on lists of 10 the defaults step as ``"one"`` with γ = 0.02,
        λ = 0.1, a setting that learns there.
    item_prior, prior_damping : float
        A fixed item offset ``β·(m̃_i − μ)`` added to every score, ``f_mi = U_m · V_i + β·(m̃_i − μ)``
        (:mod:`cofiviz.models.prior`): β = ``item_prior`` (default 16; 0: the paper's model) times the item's
        training mean damped by ``prior_damping`` pseudo-ratings at the global mean ``μ``. Learned by no step
        and not penalised, it starts the ranking at the damped item mean, and the factors learn what each
        user adds to it: on short training lists, where that baseline is hard to beat.
    item_reg : float
        λ_V: an extra penalty ``(λ_V/2)‖V_i‖²`` on every item, counted once per iteration whatever the
        number of users who rated it (default 0: the paper's Algorithm 2). Eq 11 applies ``λ`` at each
        user's update of ``V_i``, so an item rated c times is shrunk by ``c·λ`` and pushed c times: its
        factors reach the same size whether c is 1 or 500, and the direction of a rarely rated item
        comes from one or two users. ``λ_V`` is the penalty eq 9 itself writes, ``−λ/2 ‖V‖²`` once per
        item; the sequential update spreads it as ``λ_V / c_i`` over the item's ``c_i`` training
        ratings (the batch update adds it to ``λ``). It acts like the damping of a damped item mean:
        see Notes.
    init_scale : float
        Initial factors are drawn i.i.d. N(0, init_scale²) ("random values", Algorithm 2). A small
        scale (default 0.01) lets the directions shared by many users grow first, which suits top-N
        recommendation; ranking rated items (Table 4) prefers larger ones (the reproduction searches
        0.1–0.3).
    objective : {"gap", "gp", "gr"}
        Smoothed GAP (eq 8) or appendix D's graded precision GP@n / graded recall GR@n, with
        ``I(R_mi ≤ n) ≈ g(f_mi − c_mn)``.
    cutoff : int
        ``n`` of GP@n / GR@n.
    ymax : int or None
        Highest grade (eq 5); ``None``: the top of the rating scale. ``ymax = 1`` on 0/1 data is the
        smoothed-AP model of TFMAP (appendix D).
    selection : {"all", "adaptive", "random"}
        Items updated per user in the item step (Algorithm 1).
    n_selected : int
        K of the adaptive (random) selection (paper: 20).
    item_update : {"sequential", "batch"}
        Algorithm 2's per-user item updates, or one summed gradient step per iteration.
    monitor_loss : bool
        Report the objective after each iteration (one extra value pass) rather than before it.

    Notes
    -----
    What the objective rewards. Eq 7 smooths ``1/R_i`` by ``g(f_i)``, which does not look at the other
    items, so every rated item can reach "rank 1" at once: as all ``g(f_mi) → 1`` the pair terms add up
    to the constant ``Σ_{i<j} β_ij`` (``g(x) + g(−x) = 1`` and β is symmetric). Trained on rated items
    only, the objective therefore pushes every rated item up, harder the higher its grade (the
    diagonal ``½ S(y_i) g(f_i)``; S(5)/S(1) = 57 on a 1-5 scale), until the logistic saturates or the
    penalty balances it. On top-N data (rated against unrated items, §5.1) this is exactly right: which
    items a user rates carries the signal, and GAPfm beats popularity by far. Ranking a user's *rated*
    items (Table 4) relies on the grade-weighted push and on the pair terms, and the damped item mean
    is a hard baseline there (``cofiviz reproduce gapfm-table4`` sets them side by side). The GP@n / GR@n
    objectives of appendix D are sums of per-item terms ``g(f_mi − c_mn)`` with no comparison at all,
    so on rated-only training data they learn a grade-weighted popularity.

    Rarely rated items. Ranking a long list of rated items (Table 4's test lists), eq 11's per-update
    penalty lets rarely rated items, whose factors follow the one or two users who rated them, drift to
    the top of the list as training goes on, which short validation lists barely show. ``item_reg``
    keeps such items near zero (the shrinkage of a damped item mean).

    What the search tries. The item-mean offset's weight is searched among 8, 16 and 32, never 0 (the
    paper's model, ``--preset paper``): on the short validation lists of a split such as LCR's (10
    ratings per user) the model without the offset can score level with or above the damped item mean
    while it ranks the user's long test list clearly worse, so a search that offers it picks it on
    noise (``benchmarks/bench_tuning_goal.py`` measures what the search hands back against the item mean).

    Ratings must be integer grades ``1..ymax``. Items without a training rating keep their random
    initial factors (they score about 0, neither pushed up nor down). Threads: the user step and the
    value pass use numba's thread pool (``NUMBA_NUM_THREADS``); results do not depend on the thread
    count.
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"rank": IntLogUniform(5, 30), "reg": LogUniform(0.001, 0.3), "learning_rate": LogUniform(0.02, 2.0),
                    "init_scale": LogUniform(0.01, 0.3), "item_reg": Choice((0.0, 0.01, 0.03, 0.1, 0.3)),
                    "item_prior": Choice((8.0, 16.0, 32.0)), "prior_damping": Choice((5.0, 10.0, 25.0, 50.0))}
    item_mean_setting = {"rank": 0, "item_prior": 1.0}
    scale = Scale("item pairs")
    presets = {"paper": {"rank": 10, "reg": 0.001, "learning_rate": 1e-5, "item_reg": 0.0, "objective": "gap",
                         "user_weight": "one", "selection": "all", "item_update": "sequential", "item_prior": 0.0}}

    rank = param.Integer(default=10, bounds=(0, 1000), doc="Latent dimension D (0: no factors).")
    reg = param.Number(default=0.01, bounds=(0.0, None), softbounds=(0.0, 1.0), doc="λ: L2 regularisation.")
    item_prior = param.Number(default=16.0, bounds=(0.0, None),
                              doc="Weight β of a fixed item offset β·(damped item mean − μ) added to every score "
                                  "(0: the paper's model).")
    learning_rate = param.Number(default=0.2, bounds=(0.0, None), inclusive_bounds=(False, True),
                                 softbounds=(1e-5, 2.0), doc="γ: gradient ascent step size.")
    user_weight = param.Selector(default="inverse_length", objects=list(WEIGHTS),
                                 doc="w_m of eq 9: 1/n_m, 1 (the paper's) or 1/Z_m (eq 3); GAP only.")
    item_reg = param.Number(default=0.0, bounds=(0.0, None), softbounds=(0.0, 1.0),
                            doc="λ_V: extra L2 penalty on each item, once per iteration (eq 9's form).")
    init_scale = param.Number(default=0.01, bounds=(0.0, None), inclusive_bounds=(False, True),
                              softbounds=(0.001, 1.0), doc="Standard deviation of the initial factors.")
    objective = param.Selector(default="gap", objects=list(OBJECTIVES),
                               doc="Smoothed GAP (eq 8), or appendix D's GP@n / GR@n.")
    cutoff = param.Integer(default=5, bounds=(1, None), doc="n of the GP@n / GR@n objectives.")
    ymax = param.Integer(default=None, bounds=(1, 60), allow_None=True,
                         doc="Highest grade (eq 5); None: the top of the rating scale.")
    selection = param.Selector(default="all", objects=list(_SELECTION),
                               doc="Items updated per user in the item step (Algorithm 1).")
    n_selected = param.Integer(default=20, bounds=(1, None), doc="K of the adaptive / random selection.")
    item_update = param.Selector(default="sequential", objects=["sequential", "batch"],
                                 doc="Per-user item updates (Algorithm 2) or one summed step.")
    monitor_loss = param.Boolean(default=True, doc="Report the objective after each iteration (one extra pass).")
    valid_metric = param.String(default="ndcg@10", doc="Metric watched by early stopping.")

    divergence_hint = (("learning_rate", "lower"), ("reg", "raise"))

    # ------------------------------------------------------------------ training
    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        p = prepare(train, ymax=self.ymax, objective=self.objective, cutoff=self.cutoff, weight=self.user_weight)
        self._data = p
        D = int(self.rank)
        self.U_ = rng.normal(0.0, self.init_scale, size=(train.n_users, D))
        self.V_ = rng.normal(0.0, self.init_scale, size=(train.n_items, D))
        self.prior_ = self.item_prior_offsets(train)
        # separate streams: the user order does not depend on whether selection keys are drawn
        self._order_rng, self._key_rng = rng.spawn(2)
        self._item_counts = np.bincount(p.items, minlength=train.n_items)
        # eq 9's once-per-item penalty λ_V, spread over the item's updates in Algorithm 2's item loop
        self._lam_items = float(self.item_reg) / np.maximum(self._item_counts, 1).astype(np.float64)
        self._values = np.empty(train.n_users)
        self.ymax_ = p.ymax
        self.item_updates_ = 0

    def _step(self, iteration: int) -> float:
        p = self._data
        lr, lam = float(self.learning_rate), float(self.reg)
        K.user_step(self.U_, self.V_, self.prior_, p.indptr, p.items, p.s, p.shift, p.scale, p.code, lr, lam, self._values)
        start_value = float(self._values.sum())
        mode = _SELECTION[self.selection]
        keys = self._key_rng.random(len(p.items)) if mode != K.SELECT_ALL else np.zeros(len(p.items))
        if self.item_update == "sequential":
            order = self._order_rng.permutation(len(p.indptr) - 1).astype(np.int64)
            self.item_updates_ = int(K.item_step_sequential(
                self.U_, self.V_, self.prior_, p.indptr, p.items, p.grades, p.s, p.shift, p.scale, p.code, order, mode,
                int(self.n_selected), keys, p.ymax, lr, lam, self._lam_items))
        else:
            self.item_updates_ = K.item_step_batch(
                self.U_, self.V_, self.prior_, p.indptr, p.users, p.items, p.grades, p.s, p.shift, p.scale, p.code, mode,
                int(self.n_selected), keys, p.ymax, lr, lam + float(self.item_reg), self._item_counts)
        if self.monitor_loss:
            K.user_values(self.U_, self.V_, self.prior_, p.indptr, p.items, p.s, p.shift, p.scale, p.code, self._values)
            value = float(self._values.sum())
        else:
            value = start_value
        vv = float(np.einsum("ij,ij->", self.V_, self.V_))
        penalty = (0.5 * lam * (float(np.einsum("ij,ij->", self.U_, self.U_)) + vv)
                   + 0.5 * float(self.item_reg) * vv)
        return -(value - penalty) / max(len(p.indptr) - 1, 1)

    # ------------------------------------------------------------------ scoring and state
    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        out = np.empty(len(users))
        K.dot_pairs(self.U_, self.V_, users.astype(np.int64), items.astype(np.int64), out)
        if np.any(self.prior_):  # the offsets of the fit (zeros without item_prior), whatever item_prior says now
            out += self.prior_[items]
        return out

    def _state(self) -> dict[str, np.ndarray]:
        state = {"U": self.U_, "V": self.V_}
        if self.item_prior != 0.0:
            state["prior"] = self.prior_
        return state

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        U = np.ascontiguousarray(state["U"], dtype=np.float64)
        V = np.ascontiguousarray(state["V"], dtype=np.float64)
        if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[1]:
            raise ParameterError(f"GAPfm state needs U and V with one number of columns, got {U.shape}, {V.shape}")
        self.U_, self.V_ = U, V
        self.prior_ = (np.ascontiguousarray(state["prior"], dtype=np.float64) if self.item_prior != 0.0
                       else np.zeros(V.shape[0]))

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        spec = {"U": (n_users, int(self.rank)), "V": (n_items, int(self.rank))}
        if self.item_prior != 0.0:
            spec["prior"] = (n_items,)
        return spec

    def smoothed_objective(self, ratings: Ratings | None = None) -> float:
        """Eq 9 (1/M dropped) of the current factors on ``ratings`` (default: the training table), with
        ``item_reg``'s penalty ``(λ_V/2)‖V‖²``."""
        self._require_fitted()
        r = self.train_ if ratings is None else ratings
        U, V, lam = self.U_, self.V_, float(self.reg)
        penalty = 0.5 * float(self.item_reg) * float(np.sum(V * V))
        if np.any(self.prior_):  # the offsets as one more factor column: ones for the users, the offsets for items
            penalty += 0.5 * lam * (float(np.sum(U * U)) + float(np.sum(V * V)))
            U = np.column_stack([U, np.ones(len(U))])
            V = np.column_stack([V, self.prior_])
            lam = 0.0
        value = smoothed_gap_objective(U, V, r, lam=lam, ymax=self.ymax_, kind=self.objective, cutoff=self.cutoff,
                                       weight=self.user_weight)
        return value - penalty

    def _extra_meta(self) -> dict:
        return {"ymax": int(getattr(self, "ymax_", 0) or 0)}

    def _set_extra_meta(self, extra: dict) -> None:
        self.ymax_ = int(extra.get("ymax", 0)) or None


def warmup() -> None:
    """Compile (or load from cache) GAPfm's kernels: two iterations of every variant on the tiny table (:func:`cofiviz.datasets.tiny`), and
    the smoothed-GAP objective kernels of :mod:`cofiviz.losses.smoothed_gap` (plots, gradient checks)."""
    loss_warmup()
    train = tiny()
    for update in ("sequential", "batch"):
        for selection in ("all", "adaptive", "random"):
            GAPfm(max_iter=2, rank=2, item_update=update, selection=selection, n_selected=2).fit(train)
    GAPfm(max_iter=1, rank=2, objective="gp", monitor_loss=False).fit(train)
    GAPfm(max_iter=1, rank=2).fit(train).score(np.arange(4), np.arange(4))
