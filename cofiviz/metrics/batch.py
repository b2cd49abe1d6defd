"""Many users, many metrics, one ranking per list: :func:`score_lists`.

Users' candidate lists are given in CSR layout (``offsets``, ``ratings``, ``scores``). One numba kernel runs a
``prange`` over blocks of users, checks each list and sorts it once under the tie rule, and builds its ideal order
once (by counting grades when the ratings are small integers) when a requested family needs it
(:func:`cofiviz.metrics.ranking.prepare_lists`); then each requested metric's family kernel, declared in the table
of :mod:`cofiviz.metrics.table`, reads those arrays in its own parallel pass. Memory is O(total candidates) for
the inputs and the ranked lists plus O(n_metrics * n_users) for the result, and no Python object is created per
user.
"""

from __future__ import annotations

import numpy as np

from ._validation import MAX_GAP_GRADE, check_real, check_ymax
from .family import Options
from .names import parse_metrics
from .ranking import Batch, prepare_lists
from .table import family

__all__ = ["score_lists"]


def score_lists(offsets, ratings, scores, metrics=("ndcg@10", "ap", "gap"), threshold=4, ymax=None, d=3,
                alpha=5) -> dict[str, np.ndarray]:
    """Score many users' candidate lists with several metrics in one parallel pass.

    User ``u``'s candidates are ``ratings[offsets[u]:offsets[u + 1]]`` with predicted scores
    ``scores[offsets[u]:offsets[u + 1]]`` (CSR layout). Each list is sorted once under the tie rule
    (scores descending; among equal scores the lower true rating first, then the lower position) and
    every requested metric is computed from that ranking, with the definitions of the single-list
    functions :func:`ndcg`, :func:`average_precision`, :func:`gap`, :func:`precision_at_k`,
    :func:`mrr`, :func:`eru`, :func:`neru`, :func:`graded_precision`, :func:`graded_recall` and :func:`err`.

    Parameters
    ----------
    offsets : array_like of int, shape (n_users + 1,)
        CSR offsets: ``offsets[0] == 0``, non-decreasing, ``offsets[-1] == len(ratings)``.
    ratings : array_like, shape (n_candidates,)
        True graded relevance, finite and >= 0 (0 = unrated, irrelevant).
    scores : array_like, shape (n_candidates,)
        Predicted scores, higher = ranked earlier; no NaN (+-inf allowed).
    metrics : sequence of str or comma-separated str, default ("ndcg@10", "ap", "gap")
        Names from :func:`~cofiviz.metrics.names.metric_forms` (case-insensitive): ``ndcg``, ``ndcg@K``, ``ap``,
        ``ap@K``, ``gap``, ``gap@K``, ``p@K``, ``mrr``, ``eru``, ``eru@K``, ``neru``, ``neru@K``, ``gp@K``,
        ``gr@K``, ``err``, ``err@K``, and those of registered families (:func:`cofiviz.metrics.table.register`).
        ``ndcg`` without a cutoff is NDCG over the whole list.
    threshold : float, default 4
        Relevance threshold (rating >= threshold) of ``ap``, ``p@K`` and ``mrr`` (GAPfm uses 5).
    ymax : int or None, default None
        Highest grade for ``gap``, ``gp@K`` and ``gr@K`` (at most 50), which need integer ratings in
        ``0..ymax``; ``None`` takes ``int(max(ratings))`` over the whole batch (at least 1). The
        values of these metrics do not depend on ``ymax`` (the 1 / 2^ymax factor of every delta_l
        cancels, see :mod:`cofiviz.metrics.gap`), so ``ymax`` only validates the grades; it is
        ignored when no GAP-family metric is requested. ``err`` takes it as the top of its gain
        ``(2^g - 1) / 2^ymax`` (any positive real; ``None``: the largest rating of the batch, at least 1).
    d, alpha : float, default 3 and 5
        Neutral vote and half-life of ``eru`` / ``neru``.

    Returns
    -------
    dict of str to numpy.ndarray
        Canonical lower-case metric name (``"ndcg@10"``) -> float64 array of length ``n_users``. NaN
        marks a skipped user: an empty list for every metric, and otherwise as documented per metric
        (``ndcg``: no rating > 0; ``ap`` and ``mrr``: no rating >= threshold; ``gap``, ``gp``,
        ``gr``: no rated candidate; ``neru``: no rating > d; ``err`` skips only empty lists). Average with
        ``np.nanmean``.

    Raises
    ------
    DataError
        Bad offsets, mismatched lengths, NaN scores, non-finite or negative ratings, non-integer
        grades or grades above ``ymax`` for the GAP family.
    ParameterError
        Unknown metric names (the message lists the valid forms) or bad parameters.

    Examples
    --------
    >>> out = score_lists([0, 3, 5], [3, 0, 1, 5, 4], [0.9, 0.2, 0.4, 0.1, 0.3], ["ndcg@10", "ap"])
    >>> sorted(out), out["ap"].tolist()
    (['ap', 'ndcg@10'], [nan, 1.0])
    """
    specs = parse_metrics(metrics)
    t = check_real(threshold, "threshold", positive=True)
    dd = check_real(d, "d")
    aa = check_real(alpha, "alpha", greater_than=1.0)
    fams = {s.family: family(s.family) for s in specs}
    graded = any(f.graded for f in fams.values())
    # ymax only matters to the GAP family (a caller may pass its rating scale's top for any metrics)
    ym = None if (ymax is None or not graded) else check_ymax(ymax)
    bt = Batch(offsets, ratings, scores)
    names = [s.name for s in specs]
    if bt.n_users == 0:
        return {name: np.empty(0) for name in names}
    options = Options(threshold=t, ymax=ymax, d=dd, alpha=aa)
    constants = {name: f.constants(bt, options) for name, f in fams.items()}
    limit = float(MAX_GAP_GRADE if ym is None else ym)
    out = {}
    with bt.threads():
        lists = prepare_lists(bt, any(f.needs_ideal for f in fams.values()), graded, limit)
        bt.raise_for(lists.status, ym)
        for spec in specs:
            values = np.empty(bt.n_users)
            fams[spec.family].kernel(lists.offsets, lists.ranked, lists.ideal, lists.gmax,
                                     0 if spec.k is None else spec.k, lists.n_blocks, *constants[spec.family], values)
            out[spec.name] = values
    return {name: out[name] for name in names}
