"""One list's metric value cut into one term per ranked position: what each candidate adds to it.

Every built-in family declares its terms (:attr:`~cofiviz.metrics.family.Family.terms`, next to its kernel in its
own module); :func:`position_terms` validates a list as :func:`~cofiviz.metrics.score_lists` does, ranks it under
the tie rule, and returns the terms with the kernel's own value, so that a view of the terms (the metric
playground) shows the value the evaluator computes. A family registered without terms has none to show.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..util.errors import ParameterError
from ._validation import check_list
from .batch import score_lists
from .family import Options
from .names import parse_metric
from .ranking import ranked
from .table import family

__all__ = ["PositionTerms", "position_terms"]


class PositionTerms(NamedTuple):
    """What :func:`position_terms` returns.

    Attributes
    ----------
    order : numpy.ndarray of int64
        ``order[p]`` is the candidate at position ``p + 1`` (:func:`~cofiviz.metrics.rank_order`).
    terms : numpy.ndarray
        The term of each position, in ranked order; they add up to ``value`` (all NaN when the list is skipped).
    value : float
        The metric's value as :func:`~cofiviz.metrics.score_lists` computes it.
    parts : dict
        The quantities a formula of the value shows, named by the family (a normaliser, running sums, ...).
    """

    order: np.ndarray
    terms: np.ndarray
    value: float
    parts: dict


def position_terms(ratings, scores, metric: str, *, threshold: float = 4, ymax=None, d: float = 3,
                   alpha: float = 5) -> PositionTerms:
    """The per-position terms of ``metric`` on one candidate list.

    Parameters
    ----------
    ratings, scores : array_like, shape (n,)
        True graded relevance and predicted scores, as :func:`~cofiviz.metrics.score_lists` takes one list.
    metric : str
        A list metric's name (``"ndcg@5"``, ``"ap"``, ``"gap"``, ``"p@5"``, ``"mrr"``, ``"eru"``, ``"err"``, ...).
    threshold, ymax, d, alpha
        As :func:`~cofiviz.metrics.score_lists` takes them.

    Returns
    -------
    PositionTerms

    Raises
    ------
    ParameterError
        An unknown metric, bad parameters, or a registered family that declares no terms.
    DataError
        A list :func:`~cofiviz.metrics.score_lists` refuses.

    Examples
    --------
    >>> t = position_terms([3, 0, 1], [0.9, 0.5, 0.1], "mrr", threshold=1)
    >>> t.terms.tolist(), t.value
    ([1.0, 0.0, 0.0], 1.0)
    """
    spec = parse_metric(metric)
    fam = family(spec.family)
    if fam.terms is None:
        raise ParameterError(f"the metric family {fam.name!r} declares no per-position terms")
    y, s = check_list(ratings, scores)
    value = float(score_lists([0, len(y)], y, s, [spec.name], threshold=threshold, ymax=ymax, d=d,
                              alpha=alpha)[spec.name][0])
    if len(y) == 0:
        return PositionTerms(np.zeros(0, dtype=np.int64), np.zeros(0), value, {})
    yr, yi, order, _ = ranked(y, s)
    terms, parts = fam.terms(yr, yi, spec.k or 0, Options(float(threshold), ymax, float(d), float(alpha)))
    return PositionTerms(np.asarray(order, dtype=np.int64), terms, value, parts)
