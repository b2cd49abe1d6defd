"""WLT: win / loss / tie feature-based collaborative ranking (Volkovs & Zemel, "Collaborative Ranking With 17
Parameters", NIPS 2012), built as the paper describes it.

The method joins the two families of collaborative filtering: a neighbourhood step describes each (user, item)
pair by a short feature vector that summarises how the item fares *in the lists of the users who rated it*, and a
model step learns one linear ranking function of those features, the same few weights for every user, with
LambdaRank. The neighbourhood size K is its one hyperparameter.

Sources. The paper's abstract and about a hundred of its sentences (not its equations or tables), and GAPfm's
account of it (Shi et al., CIKM 2013, §5.5). What those give, and where this module's choices begin:

Neighbours (text). For a pair (u, n), the K users most similar to u among those other than u who rated n
(fewer when fewer rated it). The similarity is "any rating or preference based similarity", and the paper's
example drops a candidate whose ratings deviate from u's, so it measures rating agreement. *Choice*: the
agreement over the items both rated, ``ψ(u,v) = Σ_{m ∈ V(u) ∩ V(v)} (1 − |R(u,m) − R(v,m)| / (r_max − r_min))``
(each common item counts by how closely the two ratings agree); ties go to the lower user index. For a training
pair the term of n itself is left out, so that u's rating of n, the label, does not choose the neighbours.

Preferences (text). A neighbour k compares n with *its own* other rated items ``V(k) \\ {n}``: wins
(``R(k,n) > R(k,l)``), losses (``<``) and ties (``=``), each normalised by ``|V(k) \\ {n}|``, with three pairwise
preference functions g: counting (g = 1), the rating difference and the log-rating difference. *Choice* of the
last two's scale: ``(R(k,n) − R(k,l)) / (r_max − r_min)`` and ``a(R(k,n)) − a(R(k,l))`` with
``a(x) = log(x − r_min + 1)`` (ratings shifted to start at 1), each taken positive for losses. Seven
preferences per neighbour: ``W, W·Δr, W·Δlog r, L, L·Δr, L·Δlog r, T`` (a neighbour that rated only n has all 0).

Features (text, incomplete). The mean and the standard deviation over the neighbours of each preference, and
"the fraction of the neighbours that generated each preference type (positive, negative and tie)", counted out
of K. *Choice*: a neighbour's type is the sign of ``W − L``; the standard deviation is the population one; with
K = 0 every rater is a neighbour and the fractions are out of their number. The paper's exact list of 17 could
not be read; this gives 7 × 2 + 3 = 17 features. The scorer (text) is
``f(u,n) = wᵀγ(u,n) + b + b0·1[no user but u rated n]``: ``b`` is the same for every item of a user and cannot
change a ranking, so it is left out; ``b0`` is the weight of an 18th feature, the indicator of an item no other
user rated (its other features are 0).

Training (text). Each user's training items form one list, their features computed from the other users'
ratings (the user's own ratings enter only through the similarity), and LambdaRank learns ``w``
(:mod:`cofiviz.models._lambdarank`: LambdaRank's objective, minimised by Newton steps rather than stochastic
gradient steps, a choice of this library for a problem of 18 weights). The paper tunes only K. Its learning rate, epochs and NDCG truncation were not
recovered: σ = 1 and the whole list's NDCG are LambdaRank's plain form.

Beyond the paper, a choice of this library: an L2 penalty ``(λ/2)‖w‖²`` on the weights beside the users' mean
LambdaRank loss (``reg`` = λ; 0 is the published model, ``--preset paper``). Its default λ = 0.1: with ten ratings
a user and a few raters an item (``netflix_like`` at 1M ratings), the unpenalised weights fit the noise of the
features and rank well below the damped item mean, and on MovieLens 100K's LCR-protocol splits they fall
significantly below it on some splits; the small penalty keeps them level with it in both while it costs little
where the data are rich, which a stronger one does not (``benchmarks/bench_defaults.py`` and
``benchmarks/bench_tuning_goal.py --mode defaults`` measure the defaults). The loss is a mean over the users, so λ
weighs the same against it however many users there are.

Beyond the paper, a choice of this library: a fixed item offset ``o_n = β·(m̃_n − μ)`` (:mod:`cofiviz.models.prior`,
``item_prior`` = β, 0: the published model, ``--preset paper``) is added to every score, in the training lists as in
scoring, and ``tune`` searches its weight (1, 2 or 4) beside K. Its default β = 2 was chosen on the validation
ratings of MovieLens 100K's LCR-protocol splits (N = 10, 20, 50), where the published model alone falls below the
damped item mean with 10 or 20 training ratings per user (``benchmarks/bench_tuning_goal.py --mode defaults``
measures the defaults against it).
"""

from __future__ import annotations

import numba
import numpy as np
import param

from ..datasets import tiny
from ..util.errors import DataError
from ..ratings import Ratings
from ..solvers import dense
from . import _lambdarank_kernels as LK
from . import _neighbour_preferences as NP
from ._lambdarank import LinearLambdaRank
from .prior import ItemPriorParams
from .scale import Scale
from ..search.space import Choice

__all__ = ["WLT", "FEATURE_NAMES", "warmup"]

#: the columns of :meth:`WLT.pair_features` (and the entries of the weights ``w_``)
FEATURE_NAMES = ([f"mean {p}" for p in NP.PREFERENCES] + [f"sd {p}" for p in NP.PREFERENCES]
                 + ["positive", "negative", "tie", "no other rater"])


class _Table:
    """The arrays of a training table that the feature kernel reads, built once per table."""

    def __init__(self, train: Ratings):
        self.train = train
        self.indptr = np.ascontiguousarray(train.indptr, dtype=np.int64)
        self.items = np.ascontiguousarray(train.items, dtype=np.int64)
        self.users = np.ascontiguousarray(train.users, dtype=np.int64)
        self.ratings = np.ascontiguousarray(train.ratings, dtype=np.float64)
        item_indptr, positions = train.item_index()
        self.item_indptr = np.ascontiguousarray(item_indptr, dtype=np.int64)
        self.positions = np.ascontiguousarray(positions, dtype=np.int64)
        self.item_users = np.ascontiguousarray(self.users[self.positions])    # each item's raters side by side
        self.item_ratings = np.ascontiguousarray(self.ratings[self.positions])
        lo = float(self.ratings.min()) if len(self.ratings) else 0.0
        hi = float(self.ratings.max()) if len(self.ratings) else 1.0
        self.r_min, self.r_range = lo, (hi - lo) if hi > lo else 1.0
        self.prefs = np.zeros((len(self.ratings), NP.N_PREF))
        NP.preferences(self.indptr, self.ratings, self.r_min, self.r_range, self.prefs)
        self.cached_lists: tuple | None = None

    def features(self, users: np.ndarray, items: np.ndarray, n_neighbors: int) -> np.ndarray:
        users = np.ascontiguousarray(users, dtype=np.int64)
        items = np.ascontiguousarray(items, dtype=np.int64)
        # the kernel reads the pairs grouped by user; pairs already in user order (the training lists) are
        # written where they stand, others in user order and put back
        in_order = bool(np.all(users[1:] >= users[:-1]))
        order = None if in_order else np.argsort(users, kind="stable")
        su, si = (users, items) if in_order else (users[order], items[order])
        starts = np.flatnonzero(np.diff(su) != 0) + 1
        group_ptr = np.concatenate([[0], starts, [len(su)]]).astype(np.int64)
        rows = np.empty((len(su), NP.N_FEATURES))
        NP.features(su, si, group_ptr, int(n_neighbors), self.indptr, self.items, self.ratings, self.item_indptr,
                    self.positions, self.item_users, self.item_ratings, self.prefs, self.r_range, self.train.n_users,
                    self.train.n_items, 4 * numba.get_num_threads(), rows)
        if in_order:
            return rows
        out = np.empty_like(rows)
        out[order] = rows
        return out

    def lists(self, n_neighbors: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each user's training list: ``(list_ptr, ratings, ψ, items)``, computed once per K."""
        if self.cached_lists is not None and self.cached_lists[0] == int(n_neighbors):
            return self.cached_lists[1]
        X = self.features(self.users, self.items, n_neighbors)
        out = (self.indptr.copy(), self.ratings, np.ascontiguousarray(X), self.items)
        self.cached_lists = (int(n_neighbors), out)
        return out


class WLT(LinearLambdaRank, ItemPriorParams):
    """Win / loss / tie preferences of an item in its raters' own lists, summarised over the user's neighbours and
    ranked by one linear function trained with LambdaRank (Volkovs & Zemel, NIPS 2012).

    Parameters
    ----------
    n_neighbors : int
        K, the raters of an item that describe it for a user: those agreeing most with the user's ratings (0:
        every rater). The method's one hyperparameter.
    lr : float
        The first length tried along each Newton direction (halved until the objective drops enough).
    reg : float
        λ, an L2 penalty ``λ/2 ‖w‖²`` of the weights (0: none, as published).
    sigma : float
        σ, the slope of LambdaRank's logistic pair loss.
    ndcg_k : int
        Truncation of the NDCG whose swaps weigh the pairs (0: the whole list).
    item_prior, prior_damping : float
        β and the damping of the fixed item offset ``β·(m̃_n − μ)`` added to every score (default 2 and 10; 0: the
        published model).
    tol : float
        Stop when a step lowers the objective by less than ``tol`` times its value (0: never; the fit also stops
        when no step length lowers it).
    max_iter : int
        Newton steps at most.

    Notes
    -----
    The weights ``w_`` have 18 entries (:data:`FEATURE_NAMES`). Scores come from the training table, which a saved
    model keeps. A user without training ratings has no neighbours by agreement: the first K raters of an item
    (by index) describe it.
    """

    search_space = {"n_neighbors": Choice((5, 10, 20, 30, 50, 100)), "item_prior": Choice((1.0, 2.0, 4.0))}
    #: the weights held near 0 by the penalty (the model has no factors to switch off)
    item_mean_setting = {"reg": 1e6, "item_prior": 1.0}
    presets = {"paper": {"sigma": 1.0, "ndcg_k": 0, "reg": 0.0, "item_prior": 0.0}}
    scale = Scale("Σn²")
    warmup_after = (dense.warmup,)
    divergence_hint = (("lr", "lower"), ("reg", "raise"))

    n_neighbors = param.Integer(default=30, bounds=(0, None),
                                doc="K, the raters of an item agreeing most with the user (0: all raters).")
    lr = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                      doc="First length tried along each Newton direction (halved until the objective drops).")
    reg = param.Number(default=0.1, bounds=(0.0, None),
                       doc="λ of an L2 penalty λ/2 ‖w‖² beside the users' mean loss (0: none, as published).")
    item_prior = param.Number(default=2.0, bounds=(0.0, None),
                              doc="Weight β of a fixed item offset β·(damped item mean − μ) added to every score "
                                  "(0: the paper's model).")
    sigma = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                         doc="σ, the slope of LambdaRank's logistic pair loss.")
    ndcg_k = param.Integer(default=0, bounds=(0, None), doc="Truncation of the NDCG weighting the pairs (0: none).")
    tol = param.Number(default=1e-6, bounds=(0.0, None), doc="Relative decrease of the objective that stops the fit.")
    max_iter = param.Integer(default=100, bounds=(1, 100_000), doc="Newton steps at most.")

    # ------------------------------------------------------------------ features
    def _training_table(self) -> _Table:
        t = self._table
        if t is None or t.train is not self.train_:
            self._table = t = _Table(self.train_)
            self._pair_cache = None
        return t

    def _training_lists(self):
        return self._training_table().lists(self.n_neighbors)

    def feature_names(self) -> list[str]:
        return list(FEATURE_NAMES)

    # ------------------------------------------------------------------ fitting
    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        self._table = None
        self.w_ = np.zeros(NP.N_FEATURES)
        self.prior_ = self.item_prior_offsets(train)
        self._start_trace()

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, np.ndarray]:
        state = {"w": self.w_}
        if self.item_prior != 0.0:
            state["prior"] = self.prior_
        return state

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        w = np.asarray(state["w"], dtype=np.float64)
        if w.shape != (NP.N_FEATURES,):
            raise DataError(f"WLT state needs w of {NP.N_FEATURES} entries, got shape {w.shape}")
        self.w_ = np.ascontiguousarray(w)
        self.prior_ = (np.ascontiguousarray(state["prior"], dtype=np.float64) if self.item_prior != 0.0
                       else np.zeros(0))

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        return {"w": (None,), **({"prior": (n_items,)} if self.item_prior != 0.0 else {})}


def warmup() -> None:
    """Compile (or load) the kernels: a 2-step fit on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    NP.warmup()
    LK.warmup()
    WLT(max_iter=2).fit(tiny()).score([0, 1], [1, 2])
