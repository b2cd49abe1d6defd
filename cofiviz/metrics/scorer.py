"""Scoring a model's rankings of every user's list: per-user and mean metrics, the threshold and ``ymax`` rules.

A *model* here is anything with ``score(users, items) -> scores`` over index pairs (every
:class:`cofiviz.models.Model`); the lists are a :class:`~cofiviz.Ratings` table's per-user rows. The
training loop's early stopping, the experiments' traces and :func:`cofiviz.evaluate` all score
through :func:`per_user_metrics`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import DataError
from ..ratings import Ratings
from ..split import Split
from .batch import score_lists
from .names import ZERO_ONE, check_metrics
from .pairs import zero_one_lists

__all__ = ["per_user_metrics", "mean_metrics", "default_threshold", "resolve_ymax"]


def per_user_metrics(model, ratings: Ratings, metrics: Sequence[str] | str, *, train: Ratings | None = None,
                     threshold: float = 4, ymax: float | None = None) -> dict[str, np.ndarray]:
    """Per-user values (length ``ratings.n_users``, ``NaN`` where skipped) of ``model`` ranking ``ratings``.

    One ``model.score`` call covers every candidate pair (and, for ``zero_one``, the pairs of
    ``train``). Returns ``{canonical metric name: values}`` in the order of ``metrics``
    (:func:`~cofiviz.metrics.names.check_metrics`).

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
    n = len(ratings)
    users, items = ratings.users, ratings.items
    if want01:
        if train is None:
            raise DataError("zero_one needs the users' training ratings (train=...)")
        users = np.concatenate([users, train.users])
        items = np.concatenate([items, train.items])
    scores = model.score(users, items) if len(users) else np.zeros(0)
    out: dict[str, np.ndarray] = {}
    if listwise:
        kwargs = {"threshold": threshold}
        ymax = resolve_ymax(ymax, ratings)
        if ymax is not None:
            kwargs["ymax"] = ymax
        res = score_lists(ratings.indptr, ratings.ratings, scores[:n], metrics=listwise, **kwargs)
        for m in listwise:
            out[m] = np.asarray(res[m], dtype=np.float64)
    if want01:
        out[ZERO_ONE] = np.asarray(zero_one_lists(ratings.indptr, ratings.ratings, scores[:n],
                                                  train.indptr, train.ratings, scores[n:]), dtype=np.float64)
    return {m: out[m] for m in metrics}


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
