"""Non-personalised baselines: item popularity (:class:`PopRec`) and the damped item mean (:class:`ItemMean`).

Both give every user the same item order, so within one user's candidate list they rank items by a
property of the item alone. They are the yardsticks every collaborative ranking method has to beat
(the reproductions, ``cofiviz reproduce``, put them beside every table's methods).

Neither model iterates: :meth:`~cofiviz.models.base.Model.fit` runs one pass (``iterative = False``),
reports it to the callbacks as iteration 1 with a ``nan`` loss, and ignores ``max_iter``,
``patience`` and ``valid_metric`` (hidden, precedence -1). Unseen items (no training rating) are
scored too, so ``recommend`` and the top-N protocol's sampled negatives work.
"""

from __future__ import annotations

import numpy as np
import param

from ..ratings import Ratings
from .base import Model
from ..search.space import Choice, Uniform

__all__ = ["PopRec", "ItemMean", "DEFAULT_DAMPING", "damped_item_mean"]

#: Default damping of :class:`ItemMean`, chosen on validation data, never on test: the best mean validation
#: NDCG@10 on MovieLens 100K under the LCR weak protocol (N = 10, 20, 50), over the grid 0 to 100. A data
#: set of its own deserves its own search: ``cofiviz run itemmean --set damping=0,2,5,7,10,20,50``.
DEFAULT_DAMPING = 10.0


def damped_item_mean(train: Ratings, damping: float) -> np.ndarray:
    """Each item's training mean damped towards the global mean: ``(s_i + d·μ) / (n_i + d)``.

    ``s_i`` and ``n_i`` are the sum and number of item ``i``'s ratings in ``train``, ``μ`` the global
    mean rating and ``d = damping`` the number of pseudo-ratings at ``μ`` (a Bayesian average; 0 gives the
    plain item mean). Items without a rating get ``μ``. :class:`ItemMean`'s score, and the item offset
    that CofiRank, GCR and LCR may add to theirs.
    """
    counts = np.bincount(train.items, minlength=train.n_items).astype(np.float64)
    sums = np.bincount(train.items, weights=train.ratings, minlength=train.n_items)
    mu = train.global_mean
    d = float(damping)
    denom = counts + d
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (sums + d * mu) / np.where(denom > 0, denom, 1.0), mu)


class _ItemModel(Model):
    """Shared machinery of models whose score depends on the item only."""

    __abstract = True
    iterative = False
    baseline = True

    # A closed-form model has no iterations to bound or stop early: hide the inherited loop
    # parameters from forms and listings (they are still accepted, for a uniform interface).
    max_iter = param.Integer(default=1, bounds=(1, None), precedence=-1,
                             doc="Not used: the model is fitted in one pass.")
    patience = param.Integer(default=0, bounds=(0, None), precedence=-1,
                             doc="Not used: the model is fitted in one pass.")
    valid_metric = param.String(default="ndcg@10", precedence=-1,
                                doc="Not used: nothing to stop early.")
    seed = param.Integer(default=0, bounds=(0, None), precedence=-1,
                         doc="Not used: the model makes no random choice.")

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        self._train_for_step = train

    def _step(self, iteration: int) -> float:
        train = self._train_for_step
        counts = np.bincount(train.items, minlength=train.n_items).astype(np.float64)
        sums = np.bincount(train.items, weights=train.ratings, minlength=train.n_items)
        self.item_scores_ = self._item_scores(counts, sums, train)
        self.item_counts_ = counts
        del self._train_for_step
        return float("nan")

    def _item_scores(self, counts: np.ndarray, sums: np.ndarray, train: Ratings) -> np.ndarray:
        raise TypeError(f"{type(self).__name__} does not define _item_scores()")  # pragma: no cover

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return self.item_scores_[items]

    def _state(self) -> dict[str, np.ndarray]:
        return {"item_scores": self.item_scores_, "item_counts": self.item_counts_}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        self.item_scores_ = np.asarray(state["item_scores"], dtype=np.float64)
        self.item_counts_ = np.asarray(state["item_counts"], dtype=np.float64)

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        return {"item_scores": (n_items,), "item_counts": (n_items,)}


class PopRec(_ItemModel):
    """Rank items by popularity: the number of training ratings they received.

    Parameters
    ----------
    tie_break : {"mean", "none"}
        How items with the same number of ratings are ordered. ``"mean"`` (default): the higher
        mean training rating first — the score is ``n_i + 0.5 · (mean_i − low) / (high − low)``
        with (low, high) the rating scale, so the fractional part never overturns a count. ``"none"``:
        the score is the count alone and equal counts are left as ties for the metrics' tie rule.

    Notes
    -----
    Items without a training rating score 0. Popularity counts ratings of any value, so a much-rated,
    much-disliked item ranks high: the rank-1 problem of the blog post in its purest form.
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"tie_break": Choice(("mean", "none"))}

    tie_break = param.Selector(default="mean", objects=["mean", "none"],
                               doc="Order of items with equal counts: higher mean rating first, or left tied.")

    def _item_scores(self, counts, sums, train):
        if self.tie_break == "none":
            return counts.copy()
        lo, hi = train.scale
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counts > 0, sums / np.maximum(counts, 1), lo)
        frac = np.clip((means - lo) / (hi - lo), 0.0, 1.0)
        return counts + 0.5 * frac


class ItemMean(_ItemModel):
    """Rank items by their mean training rating, damped towards the global mean.

    The score of item i is ``(s_i + damping · μ) / (n_i + damping)`` where ``s_i`` and ``n_i`` are
    the sum and number of its training ratings and μ the global mean rating: a Bayesian average
    with ``damping`` pseudo-ratings at μ. An item rated once at 5 is not trusted over an item rated
    200 times at 4.4; unseen items score μ.

    Parameters
    ----------
    damping : float
        Pseudo-count of ratings at the global mean (≥ 0; 0 is the plain item mean). The default
        (10) was chosen on validation data on MovieLens 100K (see :data:`DEFAULT_DAMPING`).
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"damping": Uniform(0.0, 50.0)}

    damping = param.Number(default=DEFAULT_DAMPING, bounds=(0.0, None), inclusive_bounds=(True, True),
                           softbounds=(0.0, 100.0),
                           doc="Pseudo-count of ratings at the global mean added to every item (0: plain mean).")

    def _item_scores(self, counts, sums, train):
        return damped_item_mean(train, self.damping)
