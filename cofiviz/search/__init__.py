"""Search: choosing a model's setting on validation ratings, outside the models.

A model declares what may be searched (its ``search_space`` of :mod:`.space` distributions, its ``presets``, its
``item_mean_setting`` and ``tune_anchors``) and knows nothing of how; every search lives here and takes any model:

:mod:`.rule`
    :func:`best_index`, the one rule that picks the best of several validation scores.
:mod:`.space`
    The distributions a search space is made of, and the seeded settings drawn from one (:func:`draw_settings`,
    which the leaderboards fit).
:mod:`.trials`
    :func:`fit_and_score`, the one way a search fits a candidate and scores it on validation, per user.
:mod:`.selection`
    :func:`grid_search` (a given list of candidates on one split: ``cofiviz run --set KEY=V1,V2``) and
    :func:`choose_setting` (a setting chosen over an experiment's tidy results: the reproductions).
:mod:`.searchers`
    Where a tuning run's drawn settings come from: seeded random draws or Optuna's TPE.
:mod:`.crosscheck`
    The two-fold cross-check of a selection and the item-mean baseline every search of a ranking model must beat.
:mod:`.tuning`
    :func:`tune`: a seeded search of a model's space within a time budget, the cross-checked choice, the refit.
"""

from __future__ import annotations

from . import space
from .crosscheck import ITEM_MEAN_Z, cross_checked_gain, cross_checked_gains, cross_checked_noise
from .rule import best_index
from .searchers import SEARCHERS
from .selection import GridSearch, choose_setting, grid_search
from .space import draw_settings
from .trials import fit_and_score
from .tuning import EARLY_STOP_PATIENCE, ITEM_MEAN_DAMPINGS, Tuning, anchors, trial_params, tune

__all__ = ["best_index", "space", "draw_settings", "fit_and_score", "grid_search", "GridSearch", "choose_setting",
           "SEARCHERS", "tune", "Tuning", "anchors", "trial_params", "EARLY_STOP_PATIENCE", "ITEM_MEAN_DAMPINGS",
           "ITEM_MEAN_Z", "cross_checked_gain", "cross_checked_gains", "cross_checked_noise"]
