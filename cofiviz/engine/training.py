"""One training run: a model fitted on a split with a trace of its curves, then evaluated.

:func:`train_and_evaluate` is the path every caller takes from (model, split, metrics, callbacks) to a
:class:`~cofiviz.engine.trace.Trace` and an :class:`~cofiviz.evaluation.Evaluation`: an experiment's cell
(:func:`cofiviz.engine.cell.run_cell`), ``cofiviz run``, the training monitor's worker process, and :func:`trace_fit`,
which returns one fit's curves as a table (LCR's figures).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import pandas as pd

from ..util.errors import ModelFitError, ParameterError
from ..evaluation import Evaluation, evaluate
from ..metrics.names import check_metrics
from ..models import get_model_class
from ..ratings import Ratings
from ..split import Split
from .trace import Trace

__all__ = ["Run", "TRACE_PARTS", "trace_parts", "train_and_evaluate", "trace_fit"]

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
                       callbacks: Iterable[Callable] = (), keep_divergence: bool = False,
                       early_stopping: bool = True, first: bool = True) -> Run:
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
        Passed to :class:`~cofiviz.engine.trace.Trace`.
    on_iteration : callable, optional
        Called after every iteration with its record as one flat dict (:meth:`Trace.flat`: ``iteration``,
        ``seconds``, ``elapsed``, ``loss`` and one ``<part>_<metric>`` entry per traced part and metric).
    callbacks : list of callable
        Called after the trace at every iteration (``callback(info)``; returning ``True`` stops the fit).
    keep_divergence : bool
        A diverging fit (:class:`~cofiviz.util.errors.ModelFitError`) is returned as :attr:`Run.diverged`, with
        the trace up to it and no evaluation, instead of raised.
    early_stopping : bool
        Give the fit ``split.valid`` (its early stopping, when the model's ``patience`` asks for it); False fits
        on ``split.train`` alone.
    first : bool
        The trace scores the first iteration whatever ``every`` says (:class:`~cofiviz.engine.trace.Trace`).

    Returns
    -------
    Run
    """
    metrics = list(metrics)
    tr = Trace(trace_parts(split, trace), list(trace_metrics), train=split.train, threshold=threshold, ymax=ymax,
               every=every, first=first, throttle=throttle,
               on_iteration=None if on_iteration is None else (lambda record: on_iteration(tr.flat(record))))
    t0 = time.perf_counter()
    try:
        model.fit(split.train, valid=split.valid if early_stopping else None, callbacks=[tr, *callbacks])
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


def trace_fit(split: Split, metrics=("zero_one", "ap", "ndcg@10"), part: str = "test", model: str = "lcr",
              every: int = 1, **params) -> pd.DataFrame:
    """Fit one model on ``split.train`` and score ``part`` after every ``every``-th iteration: tidy curves.

    What LCR's Figures 1, 2, 3 and 5 draw (zero-one error, AP and NDCG@10 per iteration on a fixed-ratio
    split).

    Parameters
    ----------
    split : Split
    metrics : sequence of str
        Metrics measured on ``part`` (``zero_one`` compares each test item with the user's other known
        ratings, LCR §5.1).
    part : {"test", "valid"}
    model : str
        A registered model (``lcr``, ``gcr``, ``llorma``...).
    every : int
        Score every ``every``-th iteration and the last.
    **params
        Model parameters (``rank``, ``n_local``, ``loss``, ``max_iter``...). Early stopping is off unless
        ``patience`` is given with a validation part; the convergence test is off unless ``tol`` is given.

    Returns
    -------
    pandas.DataFrame
        One row per (scored iteration, metric): ``iteration``, ``metric``, ``value``, ``seconds`` (training
        time of the iteration), ``loss`` (training objective), ``train_zero_one`` (where the model records
        it), and the model's name and settings: ``model``, ``rank``, ``n_local``, ``loss_name``, ``lr``,
        ``reg``, ``item_bias`` (those it has). ``attrs`` hold ``fit_seconds`` and ``stopped_reason``.
    """
    if not isinstance(split, Split):
        raise ParameterError(f"split must be a cofiviz.Split, got {type(split).__name__}")
    if part not in ("test", "valid") or getattr(split, part) is None:
        raise ParameterError(f"part must name a non-empty part of the split ('test' or 'valid'), got {part!r}")
    if part == "test" and split.given is not None:
        raise ParameterError("the test users of a strong-generalization split are scored after folding in their "
                             "given ratings, which a trace of the iterations does not do: trace part='valid'")
    params.setdefault("patience", 0)
    params.setdefault("tol", 0.0)
    fitted = get_model_class(model)(**params)
    train_zero_one: list[float] = []

    def note(info):
        log = getattr(info.model, "train_log_", None)
        train_zero_one.append(log[-1].get("train_zero_one", math.nan) if log else math.nan)

    t0 = time.perf_counter()
    run = train_and_evaluate(fitted, split, trace_metrics=check_metrics(metrics), trace=[part], every=every, first=False,
                             callbacks=[note], early_stopping=params["patience"] > 0)
    rows = [{"iteration": r["iteration"], "metric": metric, "value": value, "seconds": r["seconds"],
             "loss": r["loss"], "train_zero_one": z}
            for r, z in zip(run.trace.records, train_zero_one) for metric, value in r["values"].get(part, {}).items()]
    frame = pd.DataFrame(rows)
    frame["model"] = fitted.model_name()
    for key in ("rank", "n_local", "loss", "lr", "reg", "item_bias"):
        if key in fitted.param_names():
            frame["loss_name" if key == "loss" else key] = getattr(fitted, key)
    frame.attrs["fit_seconds"] = time.perf_counter() - t0
    frame.attrs["stopped_reason"] = fitted.stopped_reason_
    return frame
