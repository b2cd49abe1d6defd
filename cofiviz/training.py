"""One training run: a model fitted on a split with a trace of its curves, then evaluated.

:func:`train_and_evaluate` is the path every caller takes from (model, split, metrics, callbacks) to a
:class:`~cofiviz.trace.Trace` and an :class:`~cofiviz.evaluation.Evaluation`: an experiment's cell
(:func:`cofiviz.cell.run_cell`), ``cofiviz run`` and the training monitor's worker process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .errors import ModelFitError, ParameterError
from .evaluation import Evaluation, evaluate
from .ratings import Ratings
from .split import Split
from .trace import Trace

__all__ = ["Run", "TRACE_PARTS", "trace_parts", "train_and_evaluate"]

#: The parts a trace may score per iteration
TRACE_PARTS = ("train", "valid", "test")


@dataclass
class Run:
    """What :func:`train_and_evaluate` gives back.

    Attributes
    ----------
    model : cofiviz.models.Model
        The fitted model (fitted up to the divergence when :attr:`diverged` is set).
    trace : Trace
        The per-iteration curves.
    fit_seconds : float
        Wall-clock seconds of the fit (tracing included).
    evaluations : dict
        ``{part: Evaluation}`` of the parts asked for; empty when the fit diverged.
    diverged : ModelFitError or None
        The divergence, when the caller asked to keep it as an outcome.
    """

    model: Any
    trace: Trace
    fit_seconds: float
    evaluations: dict[str, Evaluation] = field(default_factory=dict)
    diverged: ModelFitError | None = None


def _has(part: Ratings | None) -> bool:
    return part is not None and len(part) > 0


def trace_parts(split: Split, parts: Iterable[str]) -> dict[str, Ratings]:
    """The rating tables a trace scores for the part names ``parts``.

    ``valid`` only when the split has a non-empty validation part; ``test`` (the test candidates) only
    under weak generalization: under strong generalization the test users are not in the training data
    and are scored after folding in their given ratings, which an iteration's trace does not do.

    Raises
    ------
    ParameterError
        A name that is not one of :data:`TRACE_PARTS`.
    """
    out: dict[str, Ratings] = {}
    for part in parts:
        if part not in TRACE_PARTS:
            raise ParameterError(f"trace part {part!r} is not one of {list(TRACE_PARTS)}")
        if part == "train":
            out["train"] = split.train
        elif part == "valid" and _has(split.valid):
            out["valid"] = split.valid
        elif part == "test" and split.given is None:
            out["test"] = split.candidates("test")
    return out


def train_and_evaluate(model, split: Split, *, metrics: Iterable[str] = (), parts: Iterable[str] = ("test",),
                       trace_metrics: Iterable[str] = (), trace: Iterable[str] = ("valid",),
                       threshold: float = 4.0, ymax: float | None = None, every: int = 1,
                       throttle: float | None = None, on_iteration: Callable[[dict], Any] | None = None,
                       callbacks: Iterable[Callable] = (), keep_divergence: bool = False) -> Run:
    """Fit ``model`` on ``split.train`` (early stopping on ``split.valid``) with a trace, then evaluate it.

    Parameters
    ----------
    model : cofiviz.models.Model
        An unfitted model.
    split : Split
    metrics : list of str
        What the evaluation measures after the fit; empty: no evaluation.
    parts : list of str
        The parts evaluated after the fit (``"test"``, ``"valid"``); ``"valid"`` is skipped when the split
        has no validation part.
    trace_metrics : list of str
        What the trace scores per iteration (the training loss is always recorded).
    trace : list of str
        The parts the trace scores per iteration (:func:`trace_parts`).
    threshold, ymax : float
        Relevance threshold of the binary metrics and the top grade of GAP, for the trace and the evaluation.
    every, throttle
        Passed to :class:`~cofiviz.trace.Trace`.
    on_iteration : callable, optional
        Called after every iteration with its record as one flat dict (:meth:`Trace.flat`: ``iteration``,
        ``seconds``, ``elapsed``, ``loss`` and one ``<part>_<metric>`` entry per traced part and metric).
    callbacks : list of callable
        Called after the trace at every iteration (``callback(info)``; returning ``True`` stops the fit).
    keep_divergence : bool
        A diverging fit (:class:`~cofiviz.errors.ModelFitError`) is returned as :attr:`Run.diverged`, with
        the trace up to it and no evaluation, instead of raised.

    Returns
    -------
    Run
    """
    metrics = list(metrics)
    tr = Trace(trace_parts(split, trace), list(trace_metrics), train=split.train, threshold=threshold, ymax=ymax,
               every=every, throttle=throttle,
               on_iteration=None if on_iteration is None else (lambda record: on_iteration(tr.flat(record))))
    t0 = time.perf_counter()
    try:
        model.fit(split.train, valid=split.valid, callbacks=[tr, *callbacks])
    except ModelFitError as exc:
        if not keep_divergence:
            raise
        return Run(model, tr, time.perf_counter() - t0, diverged=exc)
    fit_seconds = time.perf_counter() - t0
    evaluations = {}
    if metrics:
        for part in parts:
            if part == "valid" and not _has(split.valid):
                continue
            evaluations[part] = evaluate(model, split, metrics=metrics, part=part, threshold=threshold, ymax=ymax)
    return Run(model, tr, fit_seconds, evaluations)
