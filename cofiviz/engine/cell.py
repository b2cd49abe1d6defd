"""A cell of an experiment: one model configuration, one protocol configuration, one seed, and its run.

A :class:`Cell` is identified by its configuration; its store key (:meth:`Cell.key`, :func:`cell_key`) hashes
that configuration with the model defaults it relies on (:mod:`cofiviz.engine.result_keys`), the data version and
the cofiviz version. :func:`run_cell` runs it in this process (:func:`cofiviz.engine.training.train_and_evaluate`)
and returns its :class:`~cofiviz.engine.results.Results`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..util._version import __version__
from ..util.errors import DataError
from ..util.jsonable import canonical_json, jsonable
from .loading import load_data, make_split
from ..metrics.names import check_metrics
from ..metrics.scorer import default_threshold
from ..models import get_model_class
from .result_keys import key_defaults, key_params
from .results import Results
from .training import train_and_evaluate

__all__ = ["Cell", "cell_key", "resolve_model", "run_cell"]


def resolve_model(name: str):
    """The model class registered as ``name``.

    Raises
    ------
    ParameterError
        No such model; the message lists the available ones.
    """
    return get_model_class(str(name).strip())


@dataclass(frozen=True)
class Cell:
    """One run: one model configuration, one protocol configuration, one seed.

    Attributes
    ----------
    model : str
        Registry name of the model.
    params : dict
        The model's parameters (the model seed included).
    protocol : str
    protocol_params : dict
        The protocol's parameters (its seed is :attr:`seed`).
    seed : int
    data : dict
        Data spec (see :func:`load_data`).
    metrics : tuple of str
        Final metrics.
    trace_metrics : tuple of str
        Metrics of the per-iteration trace.
    trace_parts : tuple of str
        Parts scored per iteration (``valid`` only when the split has one; ``test`` costs a full
        evaluation per iteration).
    trace_every : int
        Score every ``trace_every``-th iteration (and the last).
    per_user : bool
        Keep one row per (user, metric) of the test part.
    label : str
        A display name (defaults to the model name).
    threshold : float or None
        Relevance threshold of the binary metrics (default: the protocol's).
    experiment : str
        The experiment's name (not part of the key).
    """

    model: str
    params: dict
    protocol: str
    protocol_params: dict
    seed: int
    data: dict
    metrics: tuple
    trace_metrics: tuple = ()
    trace_parts: tuple = ("valid",)
    trace_every: int = 1
    per_user: bool = False
    label: str = ""
    threshold: float | None = None
    experiment: str = ""

    def config(self) -> dict:
        """The JSON-ready configuration that identifies the cell (the store key hashes it)."""
        return jsonable({"model": self.model, "params": dict(sorted(self.params.items())),
                          "protocol": self.protocol, "protocol_params": dict(sorted(self.protocol_params.items())),
                          "seed": self.seed, "data": self.data, "metrics": list(self.metrics),
                          "trace_metrics": list(self.trace_metrics), "trace_parts": list(self.trace_parts),
                          "trace_every": self.trace_every, "per_user": self.per_user, "label": self.label,
                          "threshold": self.threshold})

    @classmethod
    def from_config(cls, config: dict, experiment: str = "") -> "Cell":
        c = dict(config)
        for k in ("metrics", "trace_metrics", "trace_parts"):
            c[k] = tuple(c.get(k, ()))
        return cls(experiment=experiment, **c)

    def model_defaults(self) -> dict:
        """The model's defaults of the parameters the cell does not set (JSON-ready)."""
        return jsonable(key_defaults(resolve_model(self.model), self.params))

    def key(self, data_version: str) -> str:
        """Stable hash of (configuration, the model's defaults it relies on, data version, cofiviz version).

        The defaults are part of the key so that a cell computed before a default changed is never read as
        a result of the new default; parameters at a :data:`~cofiviz.engine.result_keys.KEY_NEUTRAL` value are not
        (:func:`~cofiviz.engine.result_keys.key_params`).
        """
        params = jsonable(key_params(resolve_model(self.model), dict(sorted(self.params.items()))))
        return cell_key({**self.config(), "params": params, "defaults": self.model_defaults()}, data_version)

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items() if k != "seed")
        pp = ", ".join(f"{k}={v}" for k, v in self.protocol_params.items())
        return f"{self.label or self.model}({shown}) on {self.protocol}({pp}) seed {self.seed}"


def cell_key(config: dict, data_version: str, version: str | None = None) -> str:
    """Stable 20-hex-digit hash of a cell configuration, the data version and the cofiviz version."""
    payload = canonical_json({"cell": config, "data_version": data_version,
                               "cofiviz": __version__ if version is None else version})
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def _identity_columns(cell: Cell, key: str) -> dict:
    out = {"cell": key, "experiment": cell.experiment, "label": cell.label or cell.model, "model": cell.model,
           "params": canonical_json({k: v for k, v in cell.params.items()}),
           "setting": canonical_json({k: v for k, v in cell.params.items() if k != "seed"}),
           "protocol": cell.protocol, "protocol_params": canonical_json(cell.protocol_params),
           "data": canonical_json(cell.data), "seed": int(cell.seed)}
    for k, v in cell.params.items():
        out[f"model.{k}"] = v
    for k, v in cell.protocol_params.items():
        out[f"protocol.{k}"] = v
    return out


def run_cell(cell: Cell, key: str | None = None, expected_version: str | None = None) -> Results:
    """Run one cell in this process: data, split, fit with a trace, evaluate.

    A fit that diverges (:class:`~cofiviz.util.errors.ModelFitError`) is an outcome of its setting, not a failure:
    :meth:`Results.diverged`, stored like any other cell, so that a grid with diverging settings completes (a
    setting with a NaN validation value is never chosen, :func:`cofiviz.search.selection.choose_setting`).

    Parameters
    ----------
    cell : Cell
    key : str, optional
        The cell's store key (computed here when not given).
    expected_version : str, optional
        The data version the caller computed; a different one here (another copy of the data on a
        worker) raises :class:`~cofiviz.util.errors.DataError` rather than storing mislabelled results.

    Returns
    -------
    Results
    """
    ratings, version = load_data(cell.data)
    if expected_version is not None and version != expected_version:
        raise DataError(f"data {cell.data} has version {version} here, but the sweep expected {expected_version}; "
                        "every worker must see the same data")
    key = key or cell.key(version)
    split = make_split(cell.data, cell.protocol, cell.protocol_params, cell.seed)
    klass = resolve_model(cell.model)
    model = klass(**cell.params)
    threshold = cell.threshold if cell.threshold is not None else default_threshold(split)
    ident = _identity_columns(cell, key)

    run = train_and_evaluate(model, split, metrics=list(cell.metrics), parts=("test", "valid"),
                             trace_metrics=cell.trace_metrics, trace=cell.trace_parts, threshold=threshold,
                             every=cell.trace_every, keep_divergence=True)
    trace = run.trace
    if run.diverged is not None:
        parts = ["test"] + (["valid"] if split.valid is not None and len(split.valid) else [])
        return Results.diverged(ident, parts, check_metrics(list(cell.metrics)), trace.tidy(), threshold=float(threshold),
                                fit_seconds=run.fit_seconds, iterations=len(model.history_),
                                best_iteration=-1, stopped_reason=f"diverged: {run.diverged}")
    final = {"fit_seconds": run.fit_seconds, "iterations": len(model.history_),
             "best_iteration": model.best_iteration_ if model.best_iteration_ is not None else -1,
             "stopped_reason": model.stopped_reason_}

    ev = run.evaluations["test"]
    frames = [e.summary.assign(part=part) for part, e in run.evaluations.items()]
    summ = pd.concat(frames, ignore_index=True)
    res = pd.DataFrame({**{k: [v] * len(summ) for k, v in ident.items()},
                        "part": summ["part"].to_numpy(), "metric": summ["metric"].to_numpy(),
                        "value": summ["mean"].to_numpy(dtype=float), "std": summ["std"].to_numpy(dtype=float),
                        "n_users": summ["n_users"].to_numpy(dtype=np.int64),
                        "n_skipped": summ["n_skipped"].to_numpy(dtype=np.int64),
                        "threshold": float(threshold), **{k: [v] * len(summ) for k, v in final.items()}})
    traces = trace.tidy()
    for k, v in reversed(list(ident.items())):
        traces.insert(0, k, [v] * len(traces))
    per_user = pd.DataFrame()
    if cell.per_user:
        pu = ev.per_user.copy()
        pu["user"] = pu["user"].astype(str)
        per_user = pd.DataFrame({"cell": key, "label": ident["label"], "seed": ident["seed"],
                                 "user": pu["user"].to_numpy(), "metric": pu["metric"].to_numpy(),
                                 "value": pu["value"].to_numpy(dtype=float),
                                 "n_candidates": pu["n_candidates"].to_numpy()})
    return Results(res, traces, per_user)
