"""Fit a grid of settings and choose one on validation data, with the one rule of :mod:`cofiviz.search.rule`.

Two shapes of the same search:

:func:`choose_setting`
    Over an experiment's tidy results (:class:`~cofiviz.engine.results.Results`): every setting was fitted on
    every seed's split; each setting's validation score is the mean over seeds (and over the criterion's
    metrics); the chosen setting's test rows are returned. What a reproduction reports per method.
:func:`grid_search`
    On one given split: fit every candidate on ``train``, score it on ``valid``, keep the best. What
    ``cofiviz run MODEL --set KEY=V1,V2`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pandas as pd

from ..ratings import Ratings
from .rule import best_index
from .trials import fit_and_score

__all__ = ["choose_setting", "grid_search", "GridSearch"]


def choose_setting(results: pd.DataFrame, metric: str, criterion: Sequence[str],
                   selection: str = "per_metric") -> tuple[pd.DataFrame, str]:
    """The test rows of ``metric`` of the setting chosen on validation, and that setting's JSON text.

    Parameters
    ----------
    results : DataFrame
        Tidy results of one method (:attr:`Results.results`): columns ``setting``, ``part``, ``metric``,
        ``value``, one row per (cell, part, metric).
    metric : str
        The test metric to report.
    criterion : sequence of str
        The validation metrics whose mean scores a setting (``[metric]`` to choose per metric).
    selection : {"per_metric", "mean", "none"}
        ``"none"`` (or a single setting, or no validation part) takes the first setting as listed.

    Returns
    -------
    (DataFrame, str)
        The chosen setting's test rows of ``metric`` (one per seed) and the setting.
    """
    settings = list(dict.fromkeys(results["setting"]))
    if len(settings) > 1 and selection != "none" and (results["part"] == "valid").any():
        valid = results[(results["part"] == "valid") & results["metric"].isin(criterion)]
        grouped = valid.groupby("setting")["value"]
        # a setting with a NaN validation value (a diverged seed) scores NaN, never the best
        score = grouped.mean().where(~grouped.apply(lambda v: bool(v.isna().any())))
        best = score.index[best_index(score.to_numpy().tolist(), list(criterion))]
    else:
        best = settings[0]
    rows = results[(results["setting"] == best) & (results["part"] == "test") & (results["metric"] == metric)]
    return rows, best


@dataclass
class GridSearch:
    """What :func:`grid_search` returns: every candidate's validation score and the chosen one."""

    metric: str
    candidates: list[dict]
    scores: list[float]
    chosen: int
    extra: dict = field(default_factory=dict)

    @property
    def best(self) -> dict:
        """The chosen candidate's parameters."""
        return self.candidates[self.chosen]


def grid_search(klass, candidates: Sequence[dict], train: Ratings, valid: Ratings, metric: str, *,
                threshold: float = 4.0, ymax: float | None = None,
                log: Callable[[dict, float], Any] | None = None) -> GridSearch:
    """Fit ``klass(**candidate)`` on ``train`` for every candidate, score ``metric`` on ``valid``, choose.

    Each candidate is fitted and scored by :func:`~cofiviz.search.trials.fit_and_score`, as a tuning run's trials
    are: early stopping on ``valid`` when its ``patience`` asks for it, the mean of ``metric`` over the users of
    ``valid``; the chosen candidate is the one :func:`~cofiviz.search.rule.best_index` picks. ``log(candidate,
    score)`` is called after each fit.
    """
    scores = []
    for cand in candidates:
        score = fit_and_score(klass, cand, train, valid, metric, threshold=threshold, ymax=ymax).score
        scores.append(score)
        if log is not None:
            log(cand, score)
    return GridSearch(metric, [dict(c) for c in candidates], scores, best_index(scores, metric))
