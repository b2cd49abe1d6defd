"""Scoring a model's rankings of every user's list: per-user and mean metrics, the threshold and ``ymax`` rules.

A *model* here is anything with ``score(users, items) -> scores`` over index pairs (every
:class:`cofiviz.models.Model`); the lists are a :class:`~cofiviz.Ratings` table's per-user rows. The
training loop's early stopping, the experiments' traces and :func:`cofiviz.evaluate` all score
through :func:`per_user_metrics`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..util.errors import DataError
from ..ratings import Ratings
from ..split import Split
from .batch import score_lists
from .names import ZERO_ONE, check_metrics
from .pairs import zero_one_lists

__all__ = ["per_user_metrics", "mean_metrics", "default_threshold", "resolve_ymax", "user_blocks", "SCORE_BLOCK",
           "PairScores"]


#: candidate pairs a model scores at once: the scores and what ``model.score`` makes to compute them (a gather of
#: factor rows, say) are held for one block of users of at most this many pairs (a user with more is a block alone)
SCORE_BLOCK = 1 << 18


def user_blocks(indptr: np.ndarray, size: int = SCORE_BLOCK) -> list[tuple[int, int]]:
    """Consecutive ranges ``[u0, u1)`` of users covering ``indptr``'s users, each holding at most ``size`` entries
    (a user with more is a range alone)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    n = len(indptr) - 1
    out, u0 = [], 0
    while u0 < n:
        u1 = int(np.searchsorted(indptr, indptr[u0] + size, side="right")) - 1
        u1 = min(max(u1, u0 + 1), n)
        out.append((u0, u1))
        u0 = u1
    return out


class PairScores:
    """Scores given beforehand, one per pair of a table (another program's predictions), as a model whose
    ``score(users, items)`` returns those of the pairs asked, in the order asked: what :func:`per_user_metrics`
    takes, whatever blocks of users it asks for.

    Parameters
    ----------
    ratings : Ratings
        The pairs scored.
    scores : array of float
        One score per pair of ``ratings``, in its order.

    Raises
    ------
    DataError
        ``scores`` has not one value per pair; ``score`` is asked for a pair ``ratings`` does not hold.
    """

    def __init__(self, ratings: Ratings, scores):
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (len(ratings),):
            raise DataError(f"scores: expected one score per pair of the table ({len(ratings)}), got shape "
                            f"{scores.shape}")
        self._n_items = int(ratings.n_items)
        keys = ratings.users.astype(np.int64) * self._n_items + ratings.items.astype(np.int64)
        order = np.argsort(keys, kind="stable")
        self._keys, self._scores = keys[order], scores[order]

    def score(self, users, items) -> np.ndarray:
        q = np.asarray(users, dtype=np.int64) * self._n_items + np.asarray(items, dtype=np.int64)
        if len(self._keys) == 0:
            bad, at = np.arange(len(q)), np.zeros(0, dtype=np.int64)
        else:
            at = np.minimum(np.searchsorted(self._keys, q), len(self._keys) - 1)
            bad = np.flatnonzero(self._keys[at] != q)
        if len(bad):
            k = int(bad[0])
            raise DataError(f"no score was given for the pair (user {int(np.asarray(users)[k])}, item "
                            f"{int(np.asarray(items)[k])})")
        return self._scores[at]


def per_user_metrics(model, ratings: Ratings, metrics: Sequence[str] | str, *, train: Ratings | None = None,
                     threshold: float = 4, ymax: float | None = None,
                     block: int = SCORE_BLOCK) -> dict[str, np.ndarray]:
    """Per-user values (length ``ratings.n_users``, ``NaN`` where skipped) of ``model`` ranking ``ratings``.

    The users are scored a block at a time (:func:`user_blocks`: at most ``block`` candidate pairs, and for
    ``zero_one`` as many training pairs, per ``model.score`` call), so that memory beyond the lists stays bounded
    whatever their number; each user's values are those of scoring every list at once. Returns
    ``{canonical metric name: values}`` in the order of ``metrics`` (:func:`~cofiviz.metrics.names.check_metrics`).

    Raises
    ------
    ParameterError
        An unknown metric name.
    DataError
        ``zero_one`` without ``train``.
    """
    metrics = check_metrics(metrics)
    listwise = [m for m in metrics if m != ZERO_ONE]
    want01 = ZERO_ONE in metrics
    if want01 and train is None:
        raise DataError("zero_one needs the users' training ratings (train=...)")
    kwargs: dict = {"threshold": threshold}
    ymax = resolve_ymax(ymax, ratings)
    if ymax is None and len(ratings):   # what one pass over every list would take: the largest rating of them all
        top = max(1.0, float(np.max(ratings.ratings)))
        ymax = int(top) if top == int(top) else top
    if ymax is not None:
        kwargs["ymax"] = ymax
    out = {m: np.full(ratings.n_users, np.nan) for m in metrics}
    indptr = ratings.indptr
    sizes = np.diff(indptr) + (np.diff(train.indptr) if want01 else 0)
    for u0, u1 in user_blocks(np.concatenate([[0], np.cumsum(sizes)]), block):
        p0, p1 = int(indptr[u0]), int(indptr[u1])
        users, items = ratings.users[p0:p1], ratings.items[p0:p1]
        if want01:
            t0, t1 = int(train.indptr[u0]), int(train.indptr[u1])
            users = np.concatenate([users, train.users[t0:t1]])
            items = np.concatenate([items, train.items[t0:t1]])
        scores = model.score(users, items) if len(users) else np.zeros(0)
        offsets = indptr[u0:u1 + 1] - p0
        if listwise:
            res = score_lists(offsets, ratings.ratings[p0:p1], scores[:p1 - p0], metrics=listwise, **kwargs)
            for m in listwise:
                out[m][u0:u1] = res[m]
        if want01:
            out[ZERO_ONE][u0:u1] = zero_one_lists(offsets, ratings.ratings[p0:p1], scores[:p1 - p0],
                                                  train.indptr[u0:u1 + 1] - t0, train.ratings[t0:t1],
                                                  scores[p1 - p0:])
    return out


def mean_metrics(model, ratings: Ratings, metrics: Sequence[str] | str, *, train: Ratings | None = None,
                 threshold: float = 4, ymax: float | None = None) -> dict[str, float]:
    """``{metric: mean over scored users}`` of ``model`` ranking each user's items in ``ratings``.

    What a training callback uses to follow validation metrics over iterations; ``train`` defaults
    to the model's training table (needed by ``zero_one`` only).
    """
    if train is None:
        train = getattr(model, "train_", None)
    per_user = per_user_metrics(model, ratings, metrics, train=train, threshold=threshold, ymax=ymax)
    return {m: (float(np.nanmean(v)) if np.any(~np.isnan(v)) else float("nan")) for m, v in per_user.items()}


def default_threshold(split: Split) -> float:
    """The relevance threshold a split's protocol declares (``params.relevance_threshold``), else 4."""
    params = (split.protocol or {}).get("params", {}) if isinstance(split.protocol, dict) else {}
    value = params.get("relevance_threshold") if isinstance(params, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 4.0


def resolve_ymax(ymax: float | None, ratings: Ratings) -> float | None:
    """GAP's ``ymax``: as given, else the rating scale's maximum when it is a whole number (5 on
    MovieLens), else ``None`` (:func:`score_lists` then takes the largest rating in the lists)."""
    if ymax is not None:
        return ymax
    hi = float(ratings.scale[1])
    return int(hi) if hi == int(hi) and 1 <= hi <= 60 else None
