"""The one rule that picks the best of several settings from their validation scores.

Every search in cofiviz — a ``--set KEY=V1,V2`` grid of the command line, a reproduction choosing each
method's setting on the validation ratings, a tuning run — compares settings by a validation metric and
keeps the best with :func:`best_index`: the highest score, or the lowest for an error metric such as
``zero_one`` (:func:`cofiviz.metrics.names.lower_is_better`); a NaN score (a setting that could not be
scored) never wins; among equal scores the first wins, so a search is deterministic and prefers the
setting listed first.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..metrics.names import lower_is_better

__all__ = ["best_index"]


def best_index(scores: Sequence[float], metric: str | Sequence[str]) -> int:
    """Position of the best of ``scores`` for ``metric`` (see the module documentation).

    Parameters
    ----------
    scores : sequence of float
        One validation score per setting, in the order the settings were listed.
    metric : str or sequence of str
        The metric the scores measure; for a score that averages several metrics, all of them (lower
        is better only when it is for every one).

    Returns
    -------
    int
        The position of the best score; 0 when no score is a finite number.
    """
    names = [metric] if isinstance(metric, str) else list(metric)
    sign = -1.0 if names and all(lower_is_better(m) for m in names) else 1.0
    best, best_value = 0, -math.inf
    for i, s in enumerate(scores):
        value = -math.inf if s is None or not math.isfinite(float(s)) else sign * float(s)
        if value > best_value:
            best, best_value = i, value
    return best
