"""Score a fitted model's rankings on a split: tidy per-user results plus a summary.

:func:`evaluate` ranks each user's candidate list of one part of a :class:`~cofiviz.Split` (the test
items, plus the sampled unrated items of the top-N protocol) by the model's scores and measures the
rankings with :func:`cofiviz.metrics.score_lists` in one numba pass. The result records what is
needed to compare numbers honestly: the protocol, the metrics' tie rule, the relevance threshold and
``ymax``, and how many users each metric scored and skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd

from ..util.errors import DataError, ParameterError
from ..metrics.names import ZERO_ONE, check_metrics
from ..metrics.ranking import TIE_RULE
from ..metrics.scorer import default_threshold, mean_metrics, per_user_metrics, resolve_ymax
from ..models.base import Model
from ..ratings import Ratings
from ..split import Split

# check_metrics, mean_metrics, per_user_metrics, default_threshold and ZERO_ONE live in the metrics
# package; they are re-exported here, where the scoring of a model on a split is looked for.
__all__ = ["evaluate", "Evaluation", "mean_metrics", "per_user_metrics", "check_metrics",
           "DEFAULT_METRICS", "ZERO_ONE", "default_threshold"]

DEFAULT_METRICS = ("ndcg@10", "ap", "gap")


@dataclass
class Evaluation:
    """The outcome of :func:`evaluate`.

    Attributes
    ----------
    per_user : pandas.DataFrame
        Long format, one row per (user, metric): ``user`` (original id), ``metric``, ``value``
        (``NaN`` where the metric skips the user, e.g. AP for a user with no relevant item) and
        ``n_candidates`` (length of the user's ranked list).
    summary : pandas.DataFrame
        One row per metric: ``metric``, ``mean`` and ``std`` over scored users, ``n_users`` scored,
        ``n_skipped``, and the conditions: ``part``, ``protocol``, ``tie_rule``, ``threshold``,
        ``ymax``, ``model``.
    info : dict
        Model name and parameters, protocol description, part, number of candidates, seconds taken.
    """

    per_user: pd.DataFrame
    summary: pd.DataFrame
    info: dict = field(default_factory=dict)

    @property
    def means(self) -> dict[str, float]:
        """``{metric: mean over scored users}``."""
        return {m: float(v) for m, v in zip(self.summary["metric"], self.summary["mean"])}

    def __getitem__(self, metric: str) -> float:
        means = self.means
        if metric not in means:
            raise KeyError(f"{metric!r} was not evaluated; evaluated: {', '.join(means)}")
        return means[metric]

    def _repr_html_(self) -> str:
        title = (f"<b>{self.info.get('model', 'model')}</b> on {self.info.get('part', 'test')} "
                 f"({self.info.get('protocol', '?')})")
        return f"<div>{title}</div>" + self.summary.to_html(index=False, float_format=lambda x: f"{x:.4f}")

    def __repr__(self) -> str:
        with pd.option_context("display.float_format", "{:.4f}".format, "display.width", 120):
            return f"Evaluation of {self.info.get('model', 'model')}:\n{self.summary.to_string(index=False)}"


# ---------------------------------------------------------------------------------- evaluate
def evaluate(model, split: Split, metrics: str | Iterable[str] = DEFAULT_METRICS, part: str = "test",
             threshold: float | None = None, ymax: float | None = None) -> Evaluation:
    """Rank each user's candidates in ``split``'s ``part`` with ``model`` and measure the rankings.

    Parameters
    ----------
    model : cofiviz.models.Model
        A fitted model whose index space is the split's (fit it on ``split.train``).
    split : Split
    metrics : list of str or comma-separated str
        Any names :func:`cofiviz.metrics.parse_metric` accepts (``"ndcg@10"``, ``"ap"``, ``"gap"``,
        ``"p@5"``, ...) and ``"zero_one"``, the pairwise error of LCR §5.1: each candidate is compared
        with every other known rating of the user — the other candidates and the user's training
        ratings — while pairs of two training items are left out (lower is better).
    part : {"test", "valid", "train"}
        Which lists to rank. For ``"test"`` the top-N protocol's sampled negatives are appended
        (:meth:`Split.candidates`).
    threshold : float, optional
        Relevance threshold of the binary metrics (AP, P@k, ...): rating ≥ threshold is relevant.
        Default: the protocol's ``relevance_threshold`` when it records one (top-N: 5), else 4.
    ymax : float, optional
        Highest grade for GAP's thresholding probabilities; default the rating scale's maximum (5 on
        MovieLens) when it is a whole number, else the largest rating in the lists.

    Returns
    -------
    Evaluation
        ``per_user`` (tidy: user, metric, value, n_candidates), ``summary`` (one row per metric
        with the protocol, tie rule, threshold and ymax) and ``info``.

    Notes
    -----
    Users with no candidates in ``part`` are not listed. A user listed with ``NaN`` is one the
    metric cannot score (e.g. AP with no relevant candidate, NDCG with all-zero gains); such users are
    counted in ``n_skipped`` and left out of the mean. For the strong-generalization protocol
    (a split with a ``given`` part), a model that folds in (``Model.folds_in``) first fits the test users from
    their given ratings (item factors frozen); the given ratings then also serve as those users' known
    ratings for ``zero_one``.

    Raises
    ------
    ParameterError
        Unknown metric or part, or a non-positive threshold.
    DataError
        A split whose index space is not the model's, or an unfitted model.
    """
    if not isinstance(model, Model):
        raise ParameterError(f"model must be a cofiviz model, got {type(model).__name__}")
    if not isinstance(split, Split):
        raise ParameterError(f"split must be a cofiviz.Split, got {type(split).__name__}")
    if part not in ("test", "valid", "train"):
        raise ParameterError(f"part must be 'test', 'valid' or 'train', got {part!r}")
    if threshold is None:
        threshold = default_threshold(split)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)) \
            or not np.isfinite(threshold):
        raise ParameterError(f"threshold must be a finite number, got {threshold!r}")
    if ymax is not None and (isinstance(ymax, bool) or not isinstance(ymax, (int, float, np.integer, np.floating))
                             or not ymax > 0):
        raise ParameterError(f"ymax must be a positive number or None, got {ymax!r}")
    metrics = check_metrics(metrics)
    model._require_fitted()
    cand = split.candidates(part)
    fitted = model.train_
    if cand.n_users != fitted.n_users or cand.n_items != fitted.n_items:
        raise DataError(f"the split's index space ({cand.n_users} users x {cand.n_items} items) is not the "
                        f"model's ({fitted.n_users} x {fitted.n_items}); fit the model on split.train")

    known = split.train
    given = split.given
    folded = False
    if given is not None and len(given) and part == "test":
        if model.folds_in():
            model.fold_in(given)
            folded = True
        known = _concat(split.train, given)

    t0 = time.perf_counter()
    values = per_user_metrics(model, cand, metrics, train=known, threshold=threshold, ymax=ymax)
    seconds = time.perf_counter() - t0

    n_cand = np.diff(cand.indptr)
    listed = np.flatnonzero(n_cand > 0)
    user_ids = cand.user_ids[listed]
    frames = []
    for m in metrics:
        frames.append(pd.DataFrame({"user": user_ids, "metric": m, "value": values[m][listed],
                                    "n_candidates": n_cand[listed].astype(np.int64)}))
    per_user = pd.concat(frames, ignore_index=True)

    protocol = dict(split.protocol or {})
    proto_name = str(protocol.get("name", protocol.get("protocol", "custom")))
    ymax_used = resolve_ymax(ymax, cand)
    rows = []
    for m in metrics:
        v = values[m][listed]
        ok = ~np.isnan(v)
        rows.append({"metric": m,
                     "mean": float(v[ok].mean()) if ok.any() else float("nan"),
                     "std": float(v[ok].std(ddof=1)) if ok.sum() > 1 else float("nan"),
                     "n_users": int(ok.sum()), "n_skipped": int((~ok).sum()),
                     "part": part, "protocol": proto_name, "tie_rule": TIE_RULE,
                     "threshold": float(threshold), "ymax": ymax_used, "model": model.model_name()})
    summary = pd.DataFrame(rows)
    info = {"model": model.model_name(), "params": model.get_params(), "part": part,
            "protocol": protocol, "n_users": int(len(listed)), "n_candidates": int(len(cand)),
            "n_negatives": int(len(split.negatives)) if (part == "test" and split.negatives is not None) else 0,
            "threshold": float(threshold), "ymax": ymax_used, "tie_rule": TIE_RULE,
            "folded_in": folded, "seconds": seconds}
    return Evaluation(per_user=per_user, summary=summary, info=info)


def _concat(a: Ratings, b: Ratings) -> Ratings:
    return a.like(np.concatenate([a.users, b.users]), np.concatenate([a.items, b.items]),
                  np.concatenate([a.ratings, b.ratings]), name="known")
