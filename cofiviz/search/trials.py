"""One candidate of a search: fitted on the training ratings, scored per user on the validation ratings.

Every search of cofiviz fits and scores its candidates with :func:`fit_and_score`, so that a grid of the command
line, a tuning run and a reproduction's validation score rank a setting by the same numbers: the fit early-stops on
the validation ratings when the model's ``patience`` asks for it, and the score is the mean over the validation
users of the metric of :func:`cofiviz.metrics.scorer.per_user_metrics` (each user's validation items ranked among
themselves), the users it skips (NaN) left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..metrics.scorer import per_user_metrics
from ..ratings import Ratings

__all__ = ["Scored", "fit_and_score", "mean_score"]


@dataclass
class Scored:
    """A fitted candidate: the model, its per-user validation values of the metric (None when not scored) and
    their mean over the scored users (NaN when none is)."""

    model: object
    values: np.ndarray | None
    score: float


def mean_score(values: np.ndarray) -> float:
    """The mean of per-user values over the scored (non-NaN) users; NaN when there is none."""
    scored = values[~np.isnan(values)]
    return float(scored.mean()) if len(scored) else float("nan")


def fit_and_score(klass, params: dict, train: Ratings, valid: Ratings, metric: str, *, callbacks=None,
                  threshold: float = 4.0, ymax: float | None = None,
                  score_if: Callable[[object], bool] | None = None) -> Scored:
    """Fit ``klass(**params)`` on ``train`` (early stopping on ``valid``) and score ``metric`` on ``valid``.

    Parameters
    ----------
    klass : Model subclass
    params : dict
        The candidate's parameters.
    train, valid : Ratings
        In one index space.
    metric : str
        A canonical metric name.
    callbacks : callable or list, optional
        Passed to ``fit`` (called after each iteration; returning True stops the fit).
    threshold, ymax : float
        As :func:`~cofiviz.metrics.scorer.per_user_metrics` takes them.
    score_if : callable, optional
        Called with the fitted model; when it returns False the candidate is not scored (a trial a pruner stopped).

    Returns
    -------
    Scored
    """
    model = klass(**params).fit(train, valid=valid, callbacks=callbacks)
    if score_if is not None and not score_if(model):
        return Scored(model, None, float("nan"))
    values = per_user_metrics(model, valid, [metric], train=model.train_, threshold=threshold, ymax=ymax)[metric]
    return Scored(model, values, mean_score(values))
