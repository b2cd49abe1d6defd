"""Ranking metrics on plain NumPy arrays, one list at a time or many users in one numba pass.

Conventions (the same for every metric):

- **Ratings** are graded relevance: finite numbers >= 0, where 0 means "unrated, irrelevant" (the
  sampled negatives of the top-N protocol). GAP, GP@n and GR@n need integer grades ``0..ymax``.
- **Scores** are predictions: higher = ranked earlier. NaN is rejected; +-inf is allowed.
- **Tie rule** (pessimistic): candidates are ordered by score, descending; *among equal scores the
  lower true rating goes first*, and among equal scores and equal ratings the lower candidate
  position goes first (for determinism). A tie in the predictions therefore never helps: a constant
  predictor gets the worst possible order and never scores above a random order, and in the
  zero-one pair error a pair with equal scores and different ratings counts as an error.
- Positions are 1-based. Each function returns NaN for a list it *skips* (documented per metric:
  e.g. NDCG when no rating is above 0, AP and MRR when nothing is relevant, GAP when nothing is
  rated); average over users with ``np.nanmean``.

Each family of list metrics is declared once in its module and listed in the table of
:mod:`~cofiviz.metrics.table` (:func:`families`; :func:`register` adds one from outside). Single lists: :func:`ndcg`, :func:`average_precision`, :func:`gap`, :func:`precision_at_k`,
:func:`mrr`, :func:`eru`, :func:`neru`, :func:`zero_one`, :func:`graded_precision`,
:func:`graded_recall`, :func:`err`. Many users (CSR layout): :func:`score_lists` (every list metric, one pass,
names in :data:`METRIC_FORMS`, parsed by :func:`parse_metric`) and :func:`zero_one_lists`.
:func:`rank_order` exposes the ranking itself. Metric names (:mod:`~cofiviz.metrics.names`):
:func:`check_metrics`, :func:`lower_is_better`. A model's rankings of every user's list
(:mod:`~cofiviz.metrics.scorer`): :func:`per_user_metrics`, :func:`mean_metrics`, and :class:`PairScores` for
scores given beforehand.

Sources: NDCG from CofiRank (Weimer et al., NIPS 2007), AP from LCR (Lee et al., WWW 2014, §5.1),
GAP / GP@n / GR@n from GAPfm (Shi et al., eqs 2-5 and appendix D), P@k from GAPfm §5.1, ERU / NERU
from CofiRank appendix A.4, zero-one pair error from LCR (eq 6 and §5.1), ERR from Chapelle et al. (CIKM 2009,
eq. 4). Importing this package compiles nothing; kernels compile (or load from numba's on-disk cache) at first use, or ahead of time
with :func:`warmup`.
"""

from __future__ import annotations

import numpy as np

from .batch import score_lists
from .err import err, satisfaction
from .eru import eru, neru
from .gap import gap, graded_precision, graded_recall, thresholding_probabilities
from .family import Family
from .names import METRIC_FORMS, ZERO_ONE, MetricSpec, check_metrics, lower_is_better, metric_forms, parse_metric
from .ndcg import ndcg
from .pairs import zero_one, zero_one_lists
from .precision import average_precision, mrr, precision_at_k
from .ranking import TIE_RULE, rank_order
from .scorer import PairScores, default_threshold, mean_metrics, per_user_metrics, resolve_ymax
from .table import families, register, unregister
from .terms import PositionTerms, position_terms

__all__ = ["position_terms", "PositionTerms", "ndcg", "average_precision", "gap", "precision_at_k", "mrr", "eru", "neru", "err", "zero_one",
           "zero_one_lists", "graded_precision", "graded_recall", "score_lists", "parse_metric",
           "METRIC_FORMS", "MetricSpec", "rank_order", "TIE_RULE", "thresholding_probabilities", "warmup",
           "ZERO_ONE", "check_metrics", "lower_is_better", "per_user_metrics", "mean_metrics", "PairScores", "default_threshold",
           "resolve_ymax", "satisfaction", "Family", "families", "register", "unregister", "metric_forms"]


def warmup() -> None:
    """Compile (or load from numba's cache) the kernels behind every public function by calling each
    once on tiny arrays.

    Servers and benchmarks call this ahead of time so that the first real request does not pay for
    compilation. Safe to call repeatedly.
    """
    y = np.array([3.0, 0.0, 5.0, 1.0, 5.0])
    s = np.array([0.5, 0.1, 0.5, 0.9, 0.2])
    off = np.array([0, 3, 3, 5], dtype=np.int64)
    rank_order(y, s)
    for f in families():
        if f.warm is not None:
            f.warm(y, s)
    score_lists(off, y, s, [form.replace("K", "2") for form in metric_forms()])
    zero_one(y[:2], s[:2], y[2:], s[2:])
    zero_one_lists(off, y, s, np.array([0, 1, 1, 2]), y[:2], s[:2])
