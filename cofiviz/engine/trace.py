"""The per-iteration recorder: a fit callback that scores parts of a split as a model trains.

:class:`Trace` is what every consumer of training curves uses — an experiment's cells, the command
line's ``iterations`` list, the training monitor, LCR's figures — so that "NDCG on the validation part
after iteration 7" means the same everywhere::

    trace = Trace({"valid": split.valid, "test": split.candidates("test")}, ["ndcg@10", "ap"],
                  train=split.train)
    model.fit(split.train, valid=split.valid, callbacks=[trace])
    trace.tidy()        # one row per (iteration, part, metric), the training loss included
    trace.wide()        # one dict per iteration: {"iteration", "seconds", ..., "valid_ndcg@10", ...}

After iteration ``i`` it scores each part with :func:`cofiviz.metrics.scorer.mean_metrics` when ``i`` is a
multiple of ``every``, the model's last (its ``max_iter``, or its only iteration for a closed-form model)
or, unless ``first=False``, the first; other iterations record the loss and the time only. With ``throttle``
(seconds), scoring that costs more than that is spaced out: an iteration ``every`` schedules is scored only
once the model has trained at least as long as scoring takes (the shorter of the last two scorings: the first
may carry one-off costs), so that scoring takes about half the time at most and the iterations keep coming
(what the training monitor does on MovieLens 1M, where scoring a million test candidates can take longer
than an iteration). Scoring only reads the model: what it learns is the same whatever is scored.
:func:`cofiviz.engine.training.trace_fit` fits one model on a split under a :class:`Trace` and returns the curves as one
table (what LCR's figures draw).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Iterable, Mapping

import pandas as pd

from ..util.errors import ParameterError
from ..metrics.names import check_metrics
from ..metrics.scorer import mean_metrics
from ..ratings import Ratings

__all__ = ["Trace", "TIDY_COLUMNS"]

#: The columns of :meth:`Trace.tidy`.
TIDY_COLUMNS = ["iteration", "seconds", "elapsed", "loss", "part", "metric", "value"]


class Trace:
    """Record the loss, the time and metrics of parts of a split after each training iteration.

    Parameters
    ----------
    parts : mapping of str to Ratings or None
        The lists to score, by name (``"train"``, ``"valid"``, ``"test"``...), in the order the rows
        list them. A part that is ``None`` or empty is not scored; :meth:`wide` gives it NaN values.
    metrics : sequence of str
        Metric names (:func:`cofiviz.metrics.names.check_metrics`).
    train : Ratings
        The training ratings (the pair metric ``zero_one`` compares a test item with them).
    threshold : float
        Relevance threshold of the binary metrics (AP, P@k).
    ymax : float, optional
        GAP's highest grade (default: from the rating scale).
    every : int
        Score every ``every``-th iteration (and the last, and the first unless ``first=False``).
    first : bool
        Score the first iteration whatever ``every`` is.
    on_iteration : callable, optional
        Called with each iteration's record (a dict, see :attr:`records`) as soon as it is made.
    throttle : float, optional
        Seconds: once two scorings of the parts have been timed and the shorter of the last two took longer
        than this, an iteration is scored only when the training time since the last scoring (the iterations'
        ``seconds``) has reached that time; the first and the last iterations are scored whatever it says.
        None (the default): every iteration ``every`` and ``first`` schedule is scored.
    """

    def __init__(self, parts: Mapping[str, Ratings | None], metrics: Iterable[str] | str, *, train: Ratings,
                 threshold: float = 4.0, ymax: float | None = None, every: int = 1, first: bool = True,
                 on_iteration: Callable[[dict], Any] | None = None, throttle: float | None = None):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ParameterError(f"every must be a positive integer, got {every!r}")
        if throttle is not None and (isinstance(throttle, bool) or not isinstance(throttle, (int, float))
                                     or not throttle >= 0):
            raise ParameterError(f"throttle must be a number of seconds >= 0 or None, got {throttle!r}")
        self.parts = dict(parts)
        self.metrics = check_metrics(metrics) if metrics else []
        self.train = train
        self.threshold = threshold
        self.ymax = ymax
        self.every = every
        self.first = first
        self.on_iteration = on_iteration
        self.throttle = throttle
        #: seconds the last scoring of the parts took (the one before it is kept too), and the training seconds
        #: since the last
        self.scoring_seconds = 0.0
        self._scorings: list[float] = []
        self._trained_since = 0.0
        #: one dict per iteration: ``iteration``, ``seconds``, ``elapsed``, ``loss`` and ``values``
        #: (``{part: {metric: value}}``, empty for an iteration that was not scored)
        self.records: list[dict] = []

    def __call__(self, info) -> None:
        model = info.model
        last = info.iteration >= model.max_iter or not model.iterative
        opening = self.first and info.iteration == 1
        self._trained_since += info.seconds
        scored = info.iteration % self.every == 0 or opening or last
        cost = min(self._scorings) if len(self._scorings) == 2 else 0.0
        if scored and not (opening or last) and self.throttle is not None \
                and cost > self.throttle and self._trained_since < cost:
            scored = False
        values: dict[str, dict[str, float]] = {}
        if self.metrics and scored:
            t0 = time.perf_counter()
            for part, ratings in self.parts.items():
                if ratings is not None and len(ratings):
                    values[part] = mean_metrics(model, ratings, self.metrics, train=self.train,
                                                threshold=self.threshold, ymax=self.ymax)
            self.scoring_seconds = time.perf_counter() - t0
            self._scorings = [*self._scorings[-1:], self.scoring_seconds]
            self._trained_since = 0.0
        record = {"iteration": info.iteration, "seconds": info.seconds, "elapsed": info.elapsed, "loss": info.loss,
                  "values": values}
        self.records.append(record)
        if self.on_iteration is not None:
            self.on_iteration(record)

    @property
    def iterations(self) -> int:
        """The number of iterations recorded."""
        return len(self.records)

    def tidy(self) -> pd.DataFrame:
        """One row per (iteration, part, metric) in :data:`TIDY_COLUMNS`; the training loss of every
        iteration is the row ``part="train", metric="loss"``, listed first."""
        rows = []
        for r in self.records:
            base = {k: r[k] for k in ("iteration", "seconds", "elapsed", "loss")}
            rows.append({**base, "part": "train", "metric": "loss", "value": r["loss"]})
            for part, vals in r["values"].items():
                for metric, value in vals.items():
                    rows.append({**base, "part": part, "metric": metric, "value": value})
        return pd.DataFrame(rows, columns=TIDY_COLUMNS)

    def flat(self, record: dict, *, prefix: bool = True,
             fields: Iterable[str] = ("iteration", "seconds", "elapsed", "loss")) -> dict:
        """One record of :attr:`records` as one flat dict: the ``fields`` and one entry per (part, metric).

        With ``prefix`` the entries are named ``"<part>_<metric>"`` and every part of :attr:`parts`
        appears (NaN where it was not scored); without, they are named by the metric alone (for a single
        part) and only the scored values appear.
        """
        row = {k: record[k] for k in fields}
        if prefix:
            for part in self.parts:
                vals = record["values"].get(part, {})
                for metric in self.metrics:
                    row[f"{part}_{metric}"] = float(vals.get(metric, math.nan))
        else:
            for vals in record["values"].values():
                row.update(vals)
        return row

    def wide(self, *, prefix: bool = True, fields: Iterable[str] = ("iteration", "seconds", "elapsed", "loss"),
             scored_only: bool = False) -> list[dict]:
        """Every iteration as a flat dict (:meth:`flat`); ``scored_only`` leaves out the iterations that were
        not scored."""
        return [self.flat(r, prefix=prefix, fields=fields) for r in self.records
                if r["values"] or not scored_only]
