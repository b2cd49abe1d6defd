"""WLT: win / loss / tie feature-based collaborative ranking (Volkovs & Zemel, "Collaborative Ranking With 17
Parameters", NIPS 2012).

The method joins the two families of collaborative filtering: a neighbourhood step turns each (user, item) pair
into a short feature vector that summarises how the item fares in the preferences of other users, and a model
step learns one linear ranking function of those features, the same few weights for every user, with an
NDCG-targeted learning-to-rank method (the paper's title counts the weights: 17, with one hyperparameter).

Sources. The paper's abstract and reference list (neighbourhood plus model-based, 17 parameters, one
hyperparameter; LambdaRank: Burges, Ragno & Le, NIPS 2006, and Burges, MSR-TR-2010-82) and GAPfm's account of
it (Shi et al., CIKM 2013, §5.5: "Win-Loss-Tie (WLT) feature-based collaborative ranking", the Given-N
protocol). The paper's §3, with the feature definitions and their equation numbers, could not be read when
this module was written: the features below are built from the method's name and that outline and are not
claimed to be the paper's exact 17 (on five rating levels they are 18 weights); the numbered equations
(1)–(5) are this module's. The objective is LambdaRank's, to which the paper's references point, in the form
of Burges (2010), §4. Where the choices below are this module's own (the neighbour slots of (1)–(2), the parts
of the training lists, the Newton steps), the reasons are given with them.

Features. Write ``R(v,m)`` for a training rating, ``V(v)`` for the items v rated and ``ℓ(r) ∈ {1 … L}`` for the
level of a rating (the distinct training ratings; at most :data:`MAX_LEVELS`, else that many equal-width
bins). The neighbours ``N_K(u,n)`` of a pair are the K users other than u who rated n and share the most
items with u (ties: lower index first; every rater of n when K = 0). A neighbour v compares n with each other
item m it rated: a win when ``R(v,n) > R(v,m)``, a loss when ``<``, a tie when ``=``. Write ``P(u)`` for u's
items other than n, ``P_ℓ(u)`` for those u rated at level ℓ, and ``S = max(|N'|, K)`` for the neighbour slots,
``N'`` the neighbours that rated another item (an empty slot counts as no win, loss or tie):

.. math::

    W_ℓ(u,n) = \\frac{1}{S} \\sum_{v ∈ N_K(u,n)}
               \\frac{|\\{m ∈ P_ℓ(u) ∩ V(v) : R(v,n) > R(v,m)\\}|}{|P_ℓ(u)|}                              (1)

and ``L_ℓ``, ``T_ℓ`` likewise (0 when u has no item at level ℓ): how the neighbours place n against the items u
rated high and low;

.. math::

    W(u,n) = \\frac{1}{S} \\sum_{v ∈ N'}
             \\frac{|\\{m ∈ V(v) \\setminus \\{n\\} : R(v,n) > R(v,m)\\}|}{|V(v)| - 1}                       (2)

and ``L``, ``T`` likewise: where n stands in the lists of the users who rated it, the signal left when they
share no item with u (with few given ratings per user, many test pairs have none). The slots damp the
features of items with few raters towards 0, as the damped item mean does: the plain mean over the neighbours
(K = 0) puts items rated once at the extremes.

.. math::

    ψ(u,n) = [W_1, L_1, T_1, …, W_L, L_L, T_L, W, L, T], \\qquad f(u,n) = w^\\top ψ(u,n)              (3)

has ``3 (L + 1)`` entries. The pair's own item is never one of u's items, so a training pair's features do not
see its rating.

Training lists. Each user's training items are dealt at random (the model's seed) into ``folds`` parts; a
list is one part, its items described by (1)–(2) against the user's items in the other parts. Without the
parts, leaving out only the item itself, an item's comparisons at its own level would be one fewer than its
list mates', which reveals the level to the learner but does not happen at test time (a fit on MovieLens 100K,
Given 10, weighted all three features of the top level negatively and ranked the validation lists worse than
its whole-list win fraction alone).

Objective (LambdaRank, Burges 2010 §4). Over the lists ``u`` with items of different ratings (``U*``),

.. math::

    C(w) = \\frac{1}{|U^*|} \\sum_{u ∈ U^*} \\sum_{R(i) > R(j)} |ΔNDCG_{ij}|
           \\log\\bigl(1 + e^{-σ (f_i - f_j)}\\bigr) + \\frac{λ}{2} \\|w\\|^2,
    \\qquad |ΔNDCG_{ij}| = \\frac{|g_i - g_j| \\, |D(π_i) - D(π_j)|}{\\mathrm{IDCG}_u}            (4)

with gains ``g = 2^r − 1``, discount ``D(p) = 1/log2(1 + p)`` (0 beyond p = k when ``ndcg_k`` = k > 0) and ``π``
the positions in the list ranked by the current scores (a stable sort). ``|ΔNDCG|`` is constant wherever no two
scores of a list are equal, so there

.. math::

    \\nabla C(w) = \\frac{1}{|U^*|} \\sum_u \\sum_i λ_i ψ_i + λ w, \\qquad
    λ_i = \\sum_{j: i ≻ j} λ_{ij} - \\sum_{j: j ≻ i} λ_{ji}, \\qquad
    λ_{ij} = \\frac{-σ |ΔNDCG_{ij}|}{1 + e^{σ (f_i - f_j)}},                                      (5)

LambdaRank's lambdas, and ``∇²C`` (``|ΔNDCG|`` held fixed) is ``Σ c_ij (ψ_i − ψ_j)(ψ_i − ψ_j)ᵀ / |U*| + λI``
with ``c_ij = σ² |ΔNDCG_ij| p_ij (1 − p_ij)``, ``p_ij`` the logistic of ``−σ (f_i − f_j)``. LambdaRank takes
stochastic gradient steps; with so few weights of very different scales (under Given 10 the per-level
features' root mean square is 20 to 40 times smaller than the whole-list ones'), one iteration here is one
Newton step from ``w = 0``
along ``−(∇²C)⁻¹ ∇C``, halved from ``lr`` until the objective drops (Armijo). The features of the training
lists are computed once per fit.

Beyond the paper, a choice of this library: a fixed item offset ``o_n = β·(m̃_n − μ)`` (:mod:`cofiviz.models.prior`,
``item_prior`` = β, 2 by default, 0: the published model) may be added to every score, ``f(u,n) = wᵀψ(u,n) + o_n``,
in the training lists as in scoring; it is learned by no step and carries no penalty, so (4)'s gradient and
Hessian keep their form. With a large ``reg`` the weights stay near 0 and the model ranks as the damped item
mean does.
"""

from __future__ import annotations

import numpy as np
import param

from ..datasets import tiny
from ..errors import DataError
from ..ratings import Ratings
from ..solvers import dense
from . import _wlt_kernels as K
from ._lambdarank import LinearLambdaRank
from .prior import ItemPriorParams
from .scale import Scale
from .space import Choice, LogUniform

__all__ = ["WLT", "MAX_LEVELS", "warmup"]

#: Most rating levels the per-level features distinguish; more distinct training ratings are binned
MAX_LEVELS = 10


class _TrainingTable:
    """The arrays of a training table that the feature kernel reads, built once per table."""

    def __init__(self, train: Ratings, levels: np.ndarray):
        self.train = train
        self.indptr = train.indptr
        self.items = np.ascontiguousarray(train.items, dtype=np.int64)
        self.users = np.ascontiguousarray(train.users, dtype=np.int64)
        self.ratings = train.ratings
        self.levels = level_index(self.ratings, levels)
        item_indptr, positions = train.item_index()
        self.item_indptr = np.ascontiguousarray(item_indptr, dtype=np.int64)
        self.positions = np.ascontiguousarray(positions, dtype=np.int64)
        self.n_levels = len(levels)
        self.level_values = np.array(levels, dtype=np.float64)
        #: ``((n_neighbors, folds, seed), lists)`` of the last :meth:`lists`
        self.cached_lists: tuple | None = None

    def features(self, users: np.ndarray, items: np.ndarray, n_neighbors: int, pair_parts: np.ndarray | None = None,
                 parts: np.ndarray | None = None) -> np.ndarray:
        """``ψ(u, n)`` of the pairs ``(users[p], items[p])``, one row per pair. With ``parts`` (the part of each
        training rating) and ``pair_parts``, a pair's user counts only the items outside the pair's part as theirs;
        without, all of them."""
        users = np.ascontiguousarray(users, dtype=np.int64)
        items = np.ascontiguousarray(items, dtype=np.int64)
        pp = np.full(len(users), -1, dtype=np.int64) if pair_parts is None else np.asarray(pair_parts, np.int64)
        rating_parts = np.zeros(len(self.items), dtype=np.int64) if parts is None else np.asarray(parts, np.int64)
        order = np.lexsort((pp, users))
        su, si, sp = users[order], items[order], pp[order]
        starts = np.flatnonzero((np.diff(su) != 0) | (np.diff(sp) != 0)) + 1
        group_ptr = np.concatenate([[0], starts, [len(su)]]).astype(np.int64)
        group_part = np.ascontiguousarray(sp[group_ptr[:-1]]) if len(su) else np.zeros(0, dtype=np.int64)
        rows = np.empty((len(su), 3 * (self.n_levels + 1)))
        K.features(su, si, group_ptr, group_part, int(n_neighbors), self.indptr, self.items, self.ratings,
                   self.users, self.levels, np.ascontiguousarray(rating_parts), self.item_indptr, self.positions,
                   self.n_levels, self.train.n_items, rows)
        out = np.empty_like(rows)
        out[order] = rows
        return out

    def lists(self, n_neighbors: int, folds: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The training lists ``(list_ptr, ratings, ψ, items)``: each user's training items dealt at random (``seed``)
        into ``folds`` parts of (nearly) equal size; a list is one part, its items described against the user's
        items in the other parts. Computed once per setting."""
        key = (int(n_neighbors), int(folds), int(seed))
        if self.cached_lists is not None and self.cached_lists[0] == key:
            return self.cached_lists[1]
        rng = np.random.default_rng(seed)
        n = len(self.items)
        shuffled = np.lexsort((rng.random(n), self.users))
        parts = np.empty(n, dtype=np.int64)
        parts[shuffled] = (np.arange(n) - self.indptr[self.users[shuffled]]) % int(folds)
        order = np.lexsort((parts, self.users))
        su, sp = self.users[order], parts[order]
        starts = np.flatnonzero((np.diff(su) != 0) | (np.diff(sp) != 0)) + 1
        list_ptr = np.concatenate([[0], starts, [n]]).astype(np.int64)
        X = self.features(su, self.items[order], n_neighbors, pair_parts=sp, parts=parts)
        out = (list_ptr, np.ascontiguousarray(self.ratings[order]), np.ascontiguousarray(X),
               np.ascontiguousarray(self.items[order]))
        self.cached_lists = (key, out)
        return out


def rating_levels(ratings: np.ndarray) -> np.ndarray:
    """The levels ℓ = 1 … L as rating values: the distinct ``ratings``, or :data:`MAX_LEVELS` equal-width bin
    centres between their least and greatest value when there are more distinct ones."""
    values = np.unique(np.asarray(ratings, dtype=np.float64))
    if len(values) <= MAX_LEVELS:
        return values
    lo, hi = float(values[0]), float(values[-1])
    width = (hi - lo) / MAX_LEVELS
    return lo + width * (np.arange(MAX_LEVELS) + 0.5)


def level_index(ratings: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The 0-based level of each rating: the index of the nearest of ``levels`` (the lower one on a tie)."""
    ratings = np.asarray(ratings, dtype=np.float64)
    if len(levels) == 1:
        return np.zeros(len(ratings), dtype=np.int64)
    pos = np.clip(np.searchsorted(levels, ratings), 1, len(levels) - 1)
    nearer_left = np.abs(ratings - levels[pos - 1]) <= np.abs(ratings - levels[pos])
    return np.where(nearer_left, pos - 1, pos).astype(np.int64)


class WLT(LinearLambdaRank, ItemPriorParams):
    """Win / loss / tie features of (user, item) pairs ranked by one linear function trained with LambdaRank.

    Parameters
    ----------
    n_neighbors : int
        K, the raters of an item that describe it for a user: those sharing the most items with the user, and
        the number of slots the features average over (0: every rater, averaged over the raters). The one
        hyperparameter of the method; 30 did best on the validation ratings of MovieLens 100K under Given 10
        and 40 among 10, 30 and 100.
    lr : float
        The first length tried along each Newton direction (halved until the objective drops enough).
    reg : float
        λ, the L2 penalty ``λ/2 ‖w‖²`` of the weights.
    sigma : float
        σ, the slope of LambdaRank's logistic pair loss.
    folds : int
        Parts each user's training items are dealt into: each part is a training list, its items described
        against the user's items in the other parts.
    ndcg_k : int
        Truncation of the NDCG whose swaps weigh the pairs (0: the whole list).
    item_prior, prior_damping : float
        β and the damping of the fixed item offset ``β·(m̃_n − μ)`` added to every score (module notes; 0: the
        published model).
    tol : float
        Stop when a step lowers the objective by less than ``tol`` times its value (0: never; the fit also stops
        when no step length lowers it).
    max_iter : int
        Newton steps at most.
    seed : int
        Seed of the dealing of the training items into parts.

    Notes
    -----
    The weights ``w`` have ``3 (L + 1)`` entries for ``L`` rating levels (:meth:`feature_names`). Scores come from
    the training table, which a saved model keeps: ``load`` restores what scoring needs. A user or item without
    training ratings has all-zero features and scores 0.
    """

    search_space = {"n_neighbors": Choice((5, 10, 20, 30, 50, 100)), "reg": LogUniform(1e-5, 1e-1),
                    "folds": Choice((2, 3, 5))}
    #: the paper's own values could not be read (see the module notes): σ = 1 and the whole-list NDCG are
    #: LambdaRank's plain form (Burges 2010)
    #: the weights held near 0 by the penalty (the model has no factors to switch off)
    item_mean_setting = {"reg": 1e6, "item_prior": 1.0}
    presets = {"paper": {"sigma": 1.0, "ndcg_k": 0, "item_prior": 0.0}}
    scale = Scale("Σn²")
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (dense.warmup,)
    divergence_hint = (("lr", "lower"), ("reg", "raise"))

    n_neighbors = param.Integer(default=30, bounds=(0, None),
                                doc="K, the raters of an item sharing most items with the user, and the slots the "
                                    "features average over (0: all raters).")
    item_prior = param.Number(default=2.0, bounds=(0.0, None),
                              doc="Weight β of a fixed item offset β·(damped item mean − μ) added to every score "
                                  "(0: the published model).")
    lr = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                      doc="First length tried along each Newton direction (halved until the objective drops).")
    reg = param.Number(default=1e-3, bounds=(0.0, None), doc="λ of the L2 penalty λ/2 ‖w‖².")
    sigma = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                         doc="σ, the slope of LambdaRank's logistic pair loss.")
    folds = param.Integer(default=2, bounds=(2, 100),
                          doc="Parts of each user's training items: each part is ranked, described by the others.")
    ndcg_k = param.Integer(default=0, bounds=(0, None), doc="Truncation of the NDCG weighting the pairs (0: none).")
    tol = param.Number(default=1e-6, bounds=(0.0, None), doc="Relative decrease of the objective that stops the fit.")
    max_iter = param.Integer(default=100, bounds=(1, 100_000), doc="Newton steps at most.")

    # ------------------------------------------------------------------ features
    def _training_table(self) -> _TrainingTable:
        """The kernel arrays of ``train_`` (built again when ``train_`` or the levels change)."""
        t = self._table
        if t is None or t.train is not self.train_ or not np.array_equal(t.level_values, self.levels_):
            self._table = t = _TrainingTable(self.train_, self.levels_)
            self._pair_cache = None
        return t

    def feature_names(self) -> list[str]:
        """Names of the columns of :meth:`pair_features` (and of the weights ``w_``): ``W@4`` is the win fraction
        against the items the user rated 4, ``W`` the win fraction in the neighbours' whole lists."""
        self._require_fitted()
        names = [f"{kind}@{level:g}" for level in self.levels_ for kind in ("W", "L", "T")]
        return names + ["W", "L", "T"]

    # ------------------------------------------------------------------ fitting
    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        self.levels_ = rating_levels(train.ratings)
        self._table = None
        self.w_ = np.zeros(3 * (len(self.levels_) + 1))
        self.prior_ = self.item_prior_offsets(train)
        self._start_trace()

    def _training_lists(self):
        return self._training_table().lists(self.n_neighbors, self.folds, self.seed)

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, np.ndarray]:
        state = {"w": self.w_, "levels": self.levels_}
        if self.item_prior != 0.0:
            state["prior"] = self.prior_
        return state

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        w = np.asarray(state["w"], dtype=np.float64)
        levels = np.asarray(state["levels"], dtype=np.float64)
        if levels.ndim != 1 or len(levels) < 1 or np.any(np.diff(levels) <= 0):
            raise DataError(f"WLT state needs levels, an increasing list of rating values, got {levels.tolist()}")
        if w.shape != (3 * (len(levels) + 1),):
            raise DataError(f"WLT state needs w of 3 x (levels + 1) = {3 * (len(levels) + 1)} entries for "
                            f"{len(levels)} levels, got shape {w.shape}")
        self.w_ = np.ascontiguousarray(w)
        self.levels_ = np.ascontiguousarray(levels)
        self.prior_ = (np.ascontiguousarray(state["prior"], dtype=np.float64) if self.item_prior != 0.0
                       else np.zeros(0))

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        return {"w": (None,), "levels": (None,), **({"prior": (n_items,)} if self.item_prior != 0.0 else {})}


def warmup() -> None:
    """Compile (or load) the kernels: a 2-step fit on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    K.warmup()
    WLT(max_iter=2).fit(tiny()).score([0, 1], [1, 2])
