"""CofiRank: maximum-margin matrix factorisation for collaborative ranking.

Weimer, Karatzoglou, Le, Smola, "CofiRank — Maximum Margin Matrix Factorization for Collaborative
Ranking", NIPS 2007 (its extended version adds appendix A's losses).
Scores are ``F = U Mᵀ`` with ``rank`` latent dimensions; training minimises

    Σ_u l(F_u, y_u) + (λ/2) (‖U‖² + ‖M‖²)                                                    (8)

by alternating minimisation: for fixed ``M`` each user's row is an independent regularised convex
problem, solved by its own BMRM in parallel over users; for fixed ``U`` one BMRM over all of ``M``
(Algorithm 1; :mod:`cofiviz.solvers.bmrm`). One outer iteration (what ``fit`` reports to its
callbacks) is one user phase followed by one item phase; the reported loss is objective (8) after it.

Losses (:mod:`cofiviz.losses`): ``ndcg`` — the structured NDCG@k bound of eq (4), solved by linear
assignment; ``ordinal`` — Algorithm 2; ``preference`` — Algorithm 3 on all pairs of different
ratings; ``regression`` — ½ squared error; ``eru`` — eq (4) with the NERU regret of appendix A.4.

What follows the authors' C++ code (CofiRank 0.1) rather than an unstated choice
-------------------------------------------------------------------------------
- ``c_p = (p + 1)^c_exponent`` over the whole training list with 0-based ``p``; ``k`` truncates the
  gains only.
- BMRM: ≤ ``bmrm_max_planes`` = 100 planes; stops from the second oracle call on once the gap is
  < ``bmrm_tol`` = 0.01 or < ``bmrm_rel_tol`` = 2 % of the objective, or after ``bmrm_max_iter`` = 70
  oracle calls; each call warm-starts from the current factors and returns the best iterate after
  the start. The outer loop runs ``max_iter`` iterations (31 in the code) without a progress test.
- Initial factors uniform on [0, 1] (seeded by ``seed``); offsets are augmented factor columns.
- ``reference_order="item_id"`` reproduces the code's ⟨c, f⟩ reference order (stored item order);
  the default ``"rating"`` is the paper's intent (items sorted by rating).

At the paper's λ = 10 with the NDCG loss the factors shrink geometrically (the optimum of each
phase is proportional to the other factor divided by λ); rankings survive because only the
direction of each score vector matters. Scores can then be ~1e-60; they stay representable, and
the loss's assignment step then breaks ties between equally rated items by the scores as exact
arithmetic would (see :func:`cofiviz.losses.structured.structured_loss_grad`), where a
floating-point assignment solver — the original code's — cannot see the scores at all.

Defaults and the paper's settings. The defaults are the best general setting found on validation
data (``cofiviz reproduce cofirank-tuned``: the LCR protocol on MovieLens 100K, N = 10, 20, 50, three
seeds, where it beats the damped item mean at every N): rank 10, λ = 2 stated for 500 training users
(``reg_users``: the fit scales the item phase's λ with the number of users, as its loss sums over them, up to
5,000 users (``reg_users_max``), and keeps each user's), the
damped item-mean prior, a regression warm start (10 iterations at λ = 10) and one NDCG alternation.
The paper's own settings (rank 100, λ = 10 whatever the number of users, 31 outer iterations from
uniform factors, no prior) are the preset ``"paper"``:
``CofiRank.from_preset("paper")``, ``cofiviz run cofirank --preset paper``; the reproductions of the
paper's tables use them.

Additions beyond the paper and the original code: ``reg_users``, ``reference_order="tie_average"`` (equally
rated items share one reference weight), ``bias_reg`` (a separate λ for the offsets),
``user_weight`` (each user's loss weighted by its number of ratings), ``assignment_start`` (where the
loss's assignment starts its searches: the same maximiser, found sooner; on by default), and
:meth:`CofiRank.fold_in` for strong generalization. Going beyond the paper (the first two on by default, the others off):

- ``item_prior="damped_mean"``: a fixed, unregularised item offset ``prior_scale·(m̃_i − μ)`` with
  ``m̃_i`` the item's training mean damped towards the global mean ``μ`` by ``prior_damping``
  pseudo-ratings (:class:`cofiviz.models.ItemMean`'s score), so the loss refines a strong prior
  instead of learning item appeal from scratch; with ``offsets`` the learned item bias is then a
  correction regularised towards the prior.
- ``init="regression"``: start from the factors of a short regression-loss fit (``init_iter``
  outer iterations at ``init_reg``, with offsets and the same prior) instead of uniform [0, 1].
- ``item_reg_exponent``: per-item regularisation ``reg·(n_i/n̄)^e``.
- ``fold_in_items="best_loss"``: fold new users in against the item factors of the outer iteration
  with the lowest item-phase loss, as the original code's strong generalization does.

The user phase runs in parallel over users (numba ``prange``), the item phase's loss oracle in
parallel over users and then items. A seeded fit does not depend on the number of threads, numba's
or BLAS's: the item phase's BMRM takes its dot products over all item factors (``w·w``, ``a·w`` in
:func:`cofiviz.solvers.bmrm.bmrm`) in a sequential numba loop, not through NumPy's BLAS, whose
summation order changes with its thread count (``tests/test_blas_threads.py`` checks this in two
processes): fits whose factors do not collapse would follow such last-bit differences.
"""

from __future__ import annotations

import time

import numpy as np
import param

from ..util import elementary
from ..datasets import tiny
from ..util.errors import DataError, ModelFitError
from .. import losses
from ..losses.collab import LOSS_NAMES, USER_WEIGHTS, build_loss_data
from ..losses.pairwise import PAIR_COSTS
from ..losses.structured import ASSIGNMENT_STARTS
from ..ratings import Ratings
from ..solvers import dense
from ._cofirank_kernels import item_oracle, user_phase
from ..solvers.bmrm import bmrm
from ..solvers.bmrm import warmup as bmrm_warmup
from .base import Model
from .scale import Scale
from .popularity import damped_item_mean
from ..search.space import Choice, IntLogUniform, LogUniform

__all__ = ["CofiRank", "warmup"]


def _sq_norm(X: np.ndarray, free: np.ndarray) -> float:
    """``‖X[:, free]‖²`` without copying ``X`` (it can be hundreds of MB)."""
    total = float(np.einsum("ij,ij->", X, X))
    for t in np.setdiff1d(np.arange(X.shape[1]), free):
        total -= dense.dot(X[:, t], X[:, t])
    return max(total, 0.0)  # the subtraction can leave a tiny negative when the free part is ~0


class CofiRank(Model):
    """CofiRank (Weimer et al. 2007): F = U Mᵀ trained on a ranking loss by alternating BMRM.

    Parameters
    ----------
    rank : int
        Latent dimension ``d`` (default 10; paper: 100). 0: no factors, so that with ``item_prior`` the model
        ranks as the damped item mean does.
    reg : float
        λ of objective (8), for ``U`` and ``M`` alike (default 2; paper: 10), stated for ``reg_users``
        training users (``reg_scaled`` says which phase's λ that scales).
    reg_users : int or None
        The number of training users ``reg`` (and ``bias_reg``, ``init_reg``) is stated for: the item
        phase uses ``λ · |U| / reg_users``, ``|U|`` the users with training ratings. The loss of (8) is a sum
        over users, so a fixed λ weighs less against it the more users there are: on MovieLens 1M
        (6,040 users) the item phase's BMRM then needs its cap of oracle calls where on MovieLens 100K
        it needs ten or so. Default 500, the order of the training users (449 to 744) of the MovieLens
        100K splits the defaults were chosen on (it does as well as any of 400 to 943 on their
        validation ratings); ``None``: λ as given, whatever the number of users (the paper). The λs a fit used
        are ``reg_effective_`` (the item phase's) and ``reg_user_`` (the user phase's).
    reg_users_max : int or None
        The users the scaling counts at most: past them the item phase's λ stays at ``λ · reg_users_max /
        reg_users`` (default 5,000: λ = 20 at the defaults). A λ that keeps growing with the users outweighs the
        loss's signal, which grows with them too but is no sharper per user: on ``netflix_like`` at 100M
        ratings (477,893 users) the factors then add nothing to the item prior, where capped they do
        (``benchmarks/bench_defaults.py``); MovieLens 100K (943 users) never reaches the cap. ``None``: no
        cap, the form the reproductions keep, so that their shipped cells keep their bits. Read only with ``reg_users`` set. The cap is a choice of this package, not the paper's.
    reg_scaled : {"items", "both"}
        The phases whose λ ``reg_users`` scales. ``"items"`` (default): the item phase's, whose loss sums
        over every user, while each user's problem in the user phase sums over that user's ratings only and
        keeps ``reg`` whatever the number of users. ``"both"``: the user phase's too, which on many users holds every
        user's row near zero, so that the factors add nothing to the item prior. Read only with ``reg_users`` set.
    k : int
        NDCG (ERU) truncation of the structured losses (paper: 10).
    loss : {"ndcg", "ordinal", "preference", "regression", "eru"}
    offsets : bool
        Learn a user and an item bias (augmented factor columns, regularised like the factors).
    bias_reg : float or None
        λ of the biases when ``offsets`` is on (default ``None``: ``reg``, as the original code).
    c_exponent : float
        Exponent ``e < 0`` of ``c_p = (p + 1)^e`` in ⟨c, f_π⟩ (paper: −0.25).
    reference_order : {"rating", "item_id", "tie_average"}
        Reference order of ⟨c, f⟩: items by rating, ties in item order (paper); stored item order
        (original code); or by rating with equally rated items sharing the mean weight of their
        positions (convex, still an upper bound, and indifferent to the order of tied items).
    pair_cost, normalize_pairs
        Pair costs ``C(y_i, y_j)`` and the ``1/M`` normalisation of the ordinal and preference
        losses (``"difference"`` with ``normalize_pairs=False`` is the original code's ordinal loss).
    user_weight : {"one", "n_ratings"}
        Weight of each user's loss in objective (8): 1 (the paper), or the user's number of training
        ratings ``n_u``. With every user at ``n_u = N`` (weak generalization), ``"n_ratings"`` at λ is
        the paper's problem at λ / N. At λ = 10 the 1/M-normalised ordinal loss (appendix A.2) lies
        past the point where the factors collapse to the scale-free direction (as the NDCG loss's do);
        weighted by ``n_u`` it does not (``cofiviz reproduce cofirank-table2`` sets both beside the
        paper's CofiRank-Ordinal row; the weighting is not a setting the paper states).
    eru_neutral, eru_halflife
        ERU's neutral vote ``d`` and viewing half-life ``α``.
    assignment_start : {"gains", "scores"}
        Where the NDCG / ERU loss's assignment (the loss-augmented inference of §5) starts its shortest
        augmenting paths: the top ``k`` free on the items the gains alone put there, lowest gain first,
        ties by score (``"gains"``, default), the maximiser once the scores are small next to the gains,
        as they become at the paper's λ; or the positions past the truncation on the highest scores, the
        top ``k`` free (``"scores"``). Both give the exact minimum; ``"gains"`` searches far less
        (``benchmarks/bench_peers.py``'s CofiRank row) and ranks as ``"scores"`` does
        (``benchmarks/bench_forms.py``). Where two assignments tie to the last bit the two starts may
        return different ones, so fits differ in the last digits.
    bmrm_tol, bmrm_rel_tol, bmrm_max_iter, bmrm_max_planes
        BMRM stopping rule and bundle size, per user problem and for the item phase.
    max_iter : int
        Outer (user phase + item phase) iterations (default 1, after the regression warm start;
        original code: 31).
    item_prior : {"none", "damped_mean"}
        Fixed item offset added to every score (last column: ones in ``U``, the prior in ``M``,
        learned by neither phase and not regularised); ``"none"`` is the paper's model (default
        ``"damped_mean"``).
    prior_damping, prior_scale
        Pseudo-count of the damped item mean and the score units per rating point of the prior.
    item_reg_exponent : float
        ``e`` of the per-item regularisation ``reg·(n_i/n̄)^e`` of the item phase (0: the paper).
    fold_in_items : {"final", "best_loss"}
        Item factors :meth:`fold_in` freezes: the last ones, or those of the outer iteration with the
        lowest item-phase loss (the original code's ``restoreBestM``).
    init : {"uniform", "regression"}
        Initial factors: uniform on [0, 1] (original code), or the factor columns of a regression-loss
        fit with offsets and the same ``item_prior`` (``init_iter`` outer iterations, λ = ``init_reg``;
        ``None``: ``reg``). Default ``"regression"`` with ``init_reg`` = 10.

    Attributes
    ----------
    reg_effective_ : float
        The item phase's λ: ``reg`` scaled by ``reg_users`` (``reg_factor_`` = ``min(|U|, reg_users_max) /
        reg_users``, 1 with ``reg_users=None``).
    reg_user_ : float
        The user phase's λ: ``reg``, or ``reg_effective_`` with ``reg_scaled="both"``; :meth:`fold_in` uses it.
    U_, M_ : ndarray
        Augmented user and item factors (``rank`` columns, plus the user- and item-bias columns
        with ``offsets`` and the prior column with ``item_prior``); ``score(u, i) = U_[u] · M_[i]``.
    best_M_ : ndarray or None
        With ``fold_in_items="best_loss"``: ``M_`` after the outer iteration ``best_M_iteration_``
        whose item phase ended (last BMRM oracle call) with the lowest loss.
    phase_log_ : list of dict
        Per outer iteration: objective, each phase's loss (and the item phase's loss at its last
        BMRM oracle call, what the original code's best-M choice compares), BMRM calls (mean and
        max per user in the user phase; the item phase's count and final gap), the λ used, seconds per phase,
        ‖U‖ and ‖M‖.
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    #: (``max_iter``: one alternation after the regression warm start was best on validation; from uniform
    #: factors the ranking settles within ten or so)
    search_space = {"rank": IntLogUniform(10, 100), "reg": LogUniform(1.0, 30.0), "offsets": Choice((False, True)),
                    "item_prior": Choice(("none", "damped_mean")), "init": Choice(("uniform", "regression")),
                    "max_iter": IntLogUniform(1, 31)}
    item_mean_setting = {"rank": 0, "item_prior": "damped_mean", "prior_scale": 1.0, "offsets": False, "init": "uniform"}
    presets = {"paper": {"rank": 100, "reg": 10.0, "k": 10, "c_exponent": -0.25, "max_iter": 31, "loss": "ndcg",
                         "offsets": False, "item_prior": "none", "init": "uniform", "reg_users": None}}
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (elementary.warmup, losses.warmup, bmrm_warmup, dense.warmup)
    #: the slower forms a user can ask for, which compute the same model (``benchmarks/bench_forms.py``)
    speed_forms = {"assignment_start": ("scores",)}
    scale = Scale("Σn²", per_user=100, why="its NDCG loss solves an assignment over each user's ratings, "
                                            "quadratic in their number")

    rank = param.Integer(default=10, bounds=(0, 10_000), doc="Latent dimension d (0: no factors).")
    reg = param.Number(default=2.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                       doc="Regularisation λ of U and M, stated for reg_users training users.")
    reg_users = param.Integer(default=500, allow_None=True, bounds=(1, None),
                              doc="Number of training users reg is stated for: the fit uses reg·|U|/reg_users "
                                  "(None: reg as given, the paper).")
    reg_users_max = param.Integer(default=5000, allow_None=True, bounds=(1, None),
                                  doc="Users the scaling of reg counts at most: past them the item phase's λ stays at "
                                      "reg·reg_users_max/reg_users (None: no cap).")
    reg_scaled = param.Selector(default="items", objects=["items", "both"],
                                doc="The phases whose λ reg_users scales: the item phase only (each user's problem "
                                    "sums over that user's ratings), or both.")
    k = param.Integer(default=10, bounds=(1, None), doc="Truncation of the NDCG / ERU loss.")
    loss = param.Selector(default="ndcg", objects=list(LOSS_NAMES), doc="Training loss.")
    offsets = param.Boolean(default=False, doc="Learn user and item biases.")
    bias_reg = param.Number(default=None, allow_None=True, bounds=(0.0, None), inclusive_bounds=(False, True),
                            doc="Regularisation of the biases (None: the same as reg).")
    c_exponent = param.Number(default=-0.25, bounds=(None, 0.0), inclusive_bounds=(True, False),
                              doc="Exponent of c_p = (p+1)^e in <c, f_pi>.")
    reference_order = param.Selector(default="rating", objects=["rating", "item_id", "tie_average"],
                                     doc="Reference order of <c, f>: by rating (paper), item id (original code), "
                                         "or by rating with tied items sharing their mean weight.")
    pair_cost = param.Selector(default="uniform", objects=list(PAIR_COSTS),
                               doc="Cost of a mis-ordered pair in the ordinal / preference losses.")
    normalize_pairs = param.Boolean(default=True, doc="Divide pairwise losses by the number of pairs.")
    user_weight = param.Selector(default="one", objects=list(USER_WEIGHTS),
                                 doc="Weight of each user's loss: 1 (paper) or its number of training ratings.")
    eru_neutral = param.Number(default=3.0, doc="ERU neutral vote d.")
    eru_halflife = param.Number(default=5.0, bounds=(1.0, None), inclusive_bounds=(False, True),
                                doc="ERU viewing half-life alpha (> 1).")
    assignment_start = param.Selector(default="gains", objects=list(reversed(ASSIGNMENT_STARTS)),
                                      doc="Where the NDCG / ERU assignment starts: the top positions free on the "
                                          "items the gains alone put there, or on the lowest scores.")
    bmrm_tol = param.Number(default=0.01, bounds=(0.0, None), doc="BMRM absolute gap tolerance.")
    bmrm_rel_tol = param.Number(default=0.02, bounds=(0.0, None), doc="BMRM relative gap tolerance.")
    bmrm_max_iter = param.Integer(default=70, bounds=(2, None), doc="BMRM oracle calls at most.")
    bmrm_max_planes = param.Integer(default=100, bounds=(2, None), doc="BMRM cutting planes kept at most.")
    max_iter = param.Integer(default=1, bounds=(1, 100_000), doc="Outer iterations (user + item phase).")
    item_prior = param.Selector(default="damped_mean", objects=["none", "damped_mean"],
                                doc="Fixed item offset added to every score: none (paper) or the training "
                                    "item mean damped towards the global mean.")
    prior_damping = param.Number(default=10.0, bounds=(0.0, None),
                                 doc="Pseudo-count of ratings at the global mean in the damped item-mean prior.")
    prior_scale = param.Number(default=1.0, bounds=(0.0, None),
                               doc="Score units per rating point of the item-mean prior.")
    item_reg_exponent = param.Number(default=0.0, bounds=(0.0, 2.0),
                                     doc="Item i's factors are regularised by reg·(n_i/n̄)^e (n_i its training "
                                         "ratings, n̄ their mean); 0: uniform reg (paper).")
    fold_in_items = param.Selector(default="final", objects=["final", "best_loss"],
                                   doc="Item factors fold_in freezes: the final ones, or those of the outer "
                                       "iteration whose item phase reached the lowest loss (original code).")
    init = param.Selector(default="regression", objects=["uniform", "regression"],
                          doc="Initial factors: uniform on [0, 1] (original code) or the factors of a short "
                              "regression-loss fit with offsets.")
    init_iter = param.Integer(default=10, bounds=(1, None), doc="Outer iterations of the regression warm start.")
    init_reg = param.Number(default=10.0, allow_None=True, bounds=(0.0, None), inclusive_bounds=(False, True),
                            doc="λ of the regression warm start (None: reg).")

    #: no step size (BMRM solves each phase): the penalty bounds the factors
    divergence_hint = (("reg", "raise"),)

    # ------------------------------------------------------------------ layout of the factors
    def _has_prior(self) -> bool:
        return self.item_prior != "none"

    def _layout(self) -> tuple[int, np.ndarray, np.ndarray]:
        """``(D, free_u, free_m)``: stored columns and the columns each phase learns.

        Columns ``0..d-1`` are the factors; with ``offsets`` column ``d`` is the user bias (learned in
        ``U``, ones in ``M``) and ``d+1`` the item bias (ones in ``U``, learned in ``M``); with an
        ``item_prior`` the last column holds the fixed prior (ones in ``U``, the prior in ``M``),
        learned by neither phase and not regularised.
        """
        d = int(self.rank)
        extra = 1 if self._has_prior() else 0
        if not self.offsets:
            cols = np.arange(d, dtype=np.int64)
            return d + extra, cols, cols
        free_u = np.arange(d + 1, dtype=np.int64)
        free_m = np.concatenate([np.arange(d), [d + 1]]).astype(np.int64)
        return d + 2 + extra, free_u, free_m

    def item_prior_offsets(self, train: Ratings) -> np.ndarray:
        """The fixed item offsets of ``item_prior="damped_mean"``: ``prior_scale · (m̃_i − μ)``.

        ``m̃_i = (s_i + δ μ) / (n_i + δ)`` is item ``i``'s training mean damped towards the global
        mean ``μ`` by ``δ = prior_damping`` pseudo-ratings (:class:`cofiviz.models.ItemMean`'s score;
        unrated items get ``μ``, i.e. offset 0). Zeros when ``item_prior="none"``.
        """
        if not self._has_prior():
            return np.zeros(train.n_items)
        mu = float(train.global_mean)
        return float(self.prior_scale) * (damped_item_mean(train, self.prior_damping) - mu)

    def _scales(self) -> tuple[np.ndarray, np.ndarray]:
        """Per free column ``sqrt(reg / λ_t)`` of each phase (1 for factors; biases with ``bias_reg``)."""
        _, free_u, free_m = self._layout()
        su, sm = np.ones(len(free_u)), np.ones(len(free_m))
        if self.offsets and self.bias_reg is not None:  # the same ratio in each phase, scaled or not
            s = float(np.sqrt(self.reg / self.bias_reg))
            su[-1] = sm[-1] = s  # the user-bias column of U, the item-bias column of M
        return su, sm

    def item_reg_weights(self, train: Ratings) -> np.ndarray | None:
        """Per-item regularisation weights ``w_i = (max(n_i, 1) / n̄)^e`` (``e = item_reg_exponent``).

        The item phase minimises ``Σ_u l_u + (reg/2) Σ_i w_i ‖M_i‖²``. The loss's pull on an item's
        factors grows with its number of ratings ``n_i``, so with a uniform ``reg`` (``e = 0``, the
        paper) popular items get the largest factors and the learned item effects track popularity;
        ``e = 1`` makes them averages over the item's raters instead (as weighted-λ regularisation
        does for squared loss). ``n̄`` is the mean count of the rated items. ``None`` when ``e = 0``.
        """
        e = float(self.item_reg_exponent)
        if e == 0.0:
            return None
        counts = np.bincount(train.items, minlength=train.n_items).astype(np.float64)
        rated = counts > 0
        mean = float(counts[rated].mean()) if rated.any() else 1.0
        return elementary.power(np.maximum(counts, 1.0) / mean, e)

    def reg_factor(self, train: Ratings) -> float:
        """``min(|U|, reg_users_max) / reg_users``: what ``reg``, ``bias_reg`` and ``init_reg`` are multiplied by
        on ``train`` (``|U|`` its users with ratings; 1 with ``reg_users=None``)."""
        if self.reg_users is None:
            return 1.0
        users = int(np.count_nonzero(train.user_counts()))
        if self.reg_users_max is not None:
            users = min(users, int(self.reg_users_max))
        return float(users) / float(self.reg_users)

    def _init_factors(self, n: int, rng: np.random.Generator, side: str) -> np.ndarray:
        D, _, _ = self._layout()
        X = rng.uniform(0.0, 1.0, size=(n, D))
        if self.offsets:
            X[:, self.rank + (1 if side == "user" else 0)] = 1.0
        if self._has_prior():
            X[:, D - 1] = 1.0 if side == "user" else 0.0  # the item side is set to the prior in _setup
        return X

    def _loss_data(self, ratings: Ratings) -> tuple:
        return build_loss_data(ratings.indptr, ratings.ratings, self.loss, k=self.k, c_exponent=self.c_exponent,
                               reference=self.reference_order, pair_cost=self.pair_cost,
                               normalize_pairs=self.normalize_pairs, eru_neutral=self.eru_neutral,
                               eru_halflife=self.eru_halflife, user_weight=self.user_weight,
                               assignment_start=self.assignment_start)

    # ------------------------------------------------------------------ contract
    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        _, free_u, free_m = self._layout()
        self._set_reg(self.reg_factor(train))
        self.U_ = self._init_factors(train.n_users, rng, "user")
        self.M_ = self._init_factors(train.n_items, rng, "item")
        if self._has_prior():
            self.M_[:, -1] = self.item_prior_offsets(train)
        if self.init == "regression":
            d = int(self.rank)
            warm = CofiRank(rank=d, loss="regression", offsets=True, init="uniform", reg=float(self.init_reg or self.reg),
                            reg_users=self.reg_users, reg_users_max=self.reg_users_max, reg_scaled=self.reg_scaled,
                            item_prior=self.item_prior, prior_damping=self.prior_damping,
                            prior_scale=self.prior_scale,
                            max_iter=int(self.init_iter), seed=int(self.seed), bmrm_tol=self.bmrm_tol,
                            bmrm_rel_tol=self.bmrm_rel_tol, bmrm_max_iter=self.bmrm_max_iter,
                            bmrm_max_planes=self.bmrm_max_planes).fit(train)
            self.U_[:, :d] = warm.U_[:, :d]
            self.M_[:, :d] = warm.M_[:, :d]
        self._free_u, self._free_m = free_u, free_m
        self._data = self._loss_data(train)
        self._users = train.users
        self._items = train.items
        self._item_ptr, self._item_pos = train.item_index()
        self._gf = np.empty(len(train))
        self._user_losses = np.empty(train.n_users)
        self.phase_log_: list[dict] = []
        self.best_M_: np.ndarray | None = None
        self._best_item_loss = np.inf
        self._item_row_scale = self.item_reg_weights(train)
        if self._item_row_scale is not None:
            self._item_row_scale = 1.0 / np.sqrt(self._item_row_scale)

    def _run_user_phase(self, data, items, U, M, active=None) -> tuple[float, np.ndarray]:
        losses = np.zeros(U.shape[0])
        iters = np.zeros(U.shape[0], dtype=np.int64)
        if active is None:
            active = np.ones(U.shape[0], dtype=np.bool_)
        user_phase(data, items, U, M, self._free_u, self._scales()[0], active, self.reg_user_,
                   float(self.bmrm_tol), float(self.bmrm_rel_tol), int(self.bmrm_max_iter),
                   int(self.bmrm_max_planes), losses, iters)
        return float(losses.sum()), iters

    def _step(self, iteration: int) -> float:
        lam = self.reg_effective_
        t0 = time.perf_counter()
        user_loss, iters = self._run_user_phase(self._data, self._items, self.U_, self.M_)
        t1 = time.perf_counter()
        M, fm = self.M_, self._free_m
        G = np.empty((M.shape[0], len(fm)))
        su, sm = self._scales()
        scaled = bool(np.any(sm != 1.0))
        if self._item_row_scale is not None:  # per-item regularisation: a per-row rescaling as well
            sm = self._item_row_scale[:, None] * sm[None, :]
            scaled = True

        def oracle(z):  # BMRM works on z = M[:, fm] / sm (uniform λ); see user_phase
            M[:, fm] = z * sm if scaled else z
            total = item_oracle(self._data, self._users, self._items, self.U_, M, self._item_ptr, self._item_pos,
                                fm, self._gf, self._user_losses, G)
            if scaled:
                G[:] *= sm
            return total, G

        all_free = len(fm) == M.shape[1]  # bmrm copies its start: skip the M[:, fm] copy when it is all of M
        w0 = M[:, fm] / sm if scaled else (M if all_free else M[:, fm])
        res = bmrm(oracle, w0, lam, tol=self.bmrm_tol,
                   rel_tol=self.bmrm_rel_tol, max_iter=self.bmrm_max_iter, max_planes=self.bmrm_max_planes)
        M[:, fm] = res.w * sm if scaled else res.w
        # the original code compares the loss its BMRM returns: the one of its last oracle call
        last_loss = float(res.history[-1]["loss"]) if res.history else float(res.loss)
        if self.fold_in_items == "best_loss" and last_loss < self._best_item_loss:
            self._best_item_loss = last_loss
            self.best_M_ = np.array(M, copy=True)
            self.best_M_iteration_ = iteration
        t2 = time.perf_counter()
        lam_u = self.reg_user_
        sq_u, sq_m = _sq_norm(self.U_, self._free_u), _sq_norm(M, fm)
        reg_u, reg_m = 0.5 * lam_u * sq_u, 0.5 * lam * sq_m
        if self.offsets and self.bias_reg is not None:  # the bias columns carry bias_reg instead of reg
            d = self.rank
            bias_m = float(self.bias_reg) * self.reg_factor_
            bias_u = bias_m if self.reg_scaled == "both" else float(self.bias_reg)
            reg_u += 0.5 * (bias_u - lam_u) * dense.dot(self.U_[:, d], self.U_[:, d])
            reg_m += 0.5 * (bias_m - lam) * dense.dot(M[:, d + 1], M[:, d + 1])
        if self._item_row_scale is not None:  # (reg/2)‖z‖² with z = M[:, fm] / sm is the item regulariser
            reg_m = 0.5 * lam * float(np.sum(res.w * res.w))
        objective = res.loss + reg_u + reg_m
        active = iters[iters > 0]
        self.phase_log_.append({
            "iteration": iteration, "objective": objective, "user_phase_loss": user_loss,
            "item_phase_loss": res.loss, "item_phase_last_loss": last_loss,
            "user_bmrm_iter_mean": float(active.mean()) if len(active) else 0.0,
            "user_bmrm_iter_max": int(iters.max()) if len(iters) else 0, "item_bmrm_iter": res.n_iter,
            "item_bmrm_gap": res.gap, "reg": lam, "reg_user": lam_u, "user_phase_seconds": t1 - t0, "item_phase_seconds": t2 - t1,
            "norm_U": float(np.sqrt(sq_u)), "norm_M": float(np.sqrt(sq_m))})
        return objective

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", self.U_[users], self.M_[items])

    def _state(self) -> dict[str, np.ndarray]:
        state = {"U": self.U_, "M": self.M_}
        if getattr(self, "best_M_", None) is not None:
            state["best_M"] = self.best_M_
        return state

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        D, free_u, free_m = self._layout()
        U, M = np.asarray(state["U"], dtype=np.float64), np.asarray(state["M"], dtype=np.float64)
        if U.ndim != 2 or M.ndim != 2 or U.shape[1] != D or M.shape[1] != D:
            raise DataError(f"CofiRank state must hold U and M with {D} columns (rank {self.rank}, "
                            f"offsets={self.offsets}), got {U.shape} and {M.shape}")
        self.U_, self.M_ = np.array(U), np.array(M)
        self._free_u, self._free_m = free_u, free_m
        best = state.get("best_M")
        self.best_M_ = None if best is None else np.array(best, dtype=np.float64)

    def _extra_meta(self) -> dict:
        return {"reg_factor": float(getattr(self, "reg_factor_", 1.0))}

    def _set_extra_meta(self, extra: dict) -> None:
        # a save without it predates reg_users: its fit used reg as given
        self._set_reg(float(extra.get("reg_factor", 1.0)))

    def _set_reg(self, factor: float) -> None:
        """The phases' λ for ``reg_factor_ = factor``: the item phase's ``reg_effective_``, the user phase's
        ``reg_user_`` (scaled too only with ``reg_scaled="both"``)."""
        self.reg_factor_ = float(factor)
        self.reg_effective_ = float(self.reg) * self.reg_factor_
        self.reg_user_ = self.reg_effective_ if self.reg_scaled == "both" else float(self.reg)

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        D = self._layout()[0]
        spec = {"U": (n_users, D), "M": (n_items, D)}
        if self.fold_in_items == "best_loss":
            spec["best_M"] = (n_items, D)
        return spec

    # ------------------------------------------------------------------ strong generalization
    def fold_in(self, given: Ratings, seed: int | None = None) -> "CofiRank":
        """Fit the factors of the users in ``given`` with the item factors frozen (strong generalization).

        Each user with ratings in ``given`` gets a fresh row (uniform on [0, 1], seeded by ``seed``,
        default the model's seed) and one user phase — a BMRM per user to the model's tolerances, as
        the original code does for its test users (CofiRank §6, "Strong generalization": "the user
        training procedure is applied to optimize U. M is kept fixed"). Other users are untouched.
        This is what :func:`cofiviz.evaluate` calls for a split with a ``given`` part.

        With ``fold_in_items="best_loss"`` the frozen item factors are those of the outer iteration
        whose item phase ended with the lowest loss (``best_M_``), as the original code does
        (``restoreBestM`` before its strong-generalization user phase); ``M_`` is replaced by them,
        so scores of the training users change too. The default ``"final"`` keeps the last ``M_``.

        Parameters
        ----------
        given : Ratings
            The new users' known ratings in the model's index space (``split.given``).
        seed : int, optional

        Returns
        -------
        self
        """
        self._check_given(given)
        active = given.user_counts() > 0
        if not active.any():
            return self
        rng = np.random.default_rng(self.seed if seed is None else seed)
        if self.fold_in_items == "best_loss" and getattr(self, "best_M_", None) is not None:
            self.M_ = np.array(self.best_M_, copy=True)
        U = np.array(self.U_, copy=True)
        U[active] = self._init_factors(int(active.sum()), rng, "user")
        data = self._loss_data(given)
        loss, _ = self._run_user_phase(data, given.items, U, self.M_, active)
        if not (np.isfinite(loss) and np.all(np.isfinite(U[active]))):
            raise ModelFitError("CofiRank.fold_in: the user phase produced non-finite factors")
        self.U_ = U
        self.folded_in_ = {"n_users": int(active.sum()), "loss": loss}
        return self


def warmup() -> None:
    """Compile (or load from cache) CofiRank's kernels: a 2-iteration fit per loss on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    train = tiny()
    for loss in LOSS_NAMES:
        m = CofiRank(rank=2, loss=loss, max_iter=1, offsets=loss == "ndcg").fit(train)
        m.score([0, 1], [1, 2])
    m.fold_in(train.take(train.users >= 2))
