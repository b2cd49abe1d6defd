"""Experiments: models × parameter grid × protocol × seeds × metrics → tidy pandas tables.

An :class:`Experiment` expands into :class:`Cell` s, one per (model configuration, protocol
configuration, seed). Running a cell loads the data (cached per process), makes the protocol's split
(cached per process), fits the model with a :class:`~cofiviz.trace.Trace` that records the training
curves, and evaluates the fitted model; its outcome is a :class:`~cofiviz.results.Results` of tidy
tables (final metrics, per-iteration traces, optionally per-user values). The training loss is always
traced; validation metrics are traced when the split has a validation part; test metrics per iteration
only when asked for (``trace={"parts": ["valid", "test"]}``: it costs a full evaluation per iteration).

Configurations are plain dicts, or YAML / TOML files (:meth:`Experiment.from_file`)::

    name: lcr-rank-sweep
    data: {name: synthetic, kind: local_low_rank, n_users: 300, n_items: 200}
    protocol: {name: lcr-weak, n_train: [10, 20]}      # a list is a grid axis
    seeds: [0, 1]
    metrics: [ndcg@10, ap]
    trace: {parts: [valid], metrics: [ndcg@10], every: 1}
    models:
      - {model: lcr, label: LCR, params: {rank: [5, 10], n_local: 10, max_iter: 5}}
      - poprec

In ``params`` and ``protocol``, a list value is an axis of the grid (no cofiviz parameter takes a
list); every combination is a cell. The model's ``seed`` follows the cell's seed unless ``params``
fix it; the protocol's ``seed`` is always the cell's seed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from . import datasets, protocols
from ._version import __version__
from .errors import CofivizError, DataError, ModelFitError, ParameterError
from .evaluation import evaluate
from .jsonable import jsonable
from .metrics.names import check_metrics
from .metrics.scorer import default_threshold
from .models import get_model_class
from .ratings import Ratings
from .results import Results
from .split import Split
from .store import ResultsStore
from .trace import Trace

__all__ = ["Experiment", "Cell", "Results", "run_cell", "load_data", "data_version", "make_split",
           "cell_key", "resolve_model"]

_TRACE_PARTS = ("train", "valid", "test")


# ====================================================================== helpers
def _canonical_json(obj) -> str:
    return json.dumps(jsonable(obj), sort_keys=True, separators=(",", ":"), default=str)


def _grid(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the list-valued entries of ``values`` (scalars are fixed)."""
    keys = list(values)
    axes = [values[k] if isinstance(values[k], (list, tuple)) else [values[k]] for k in keys]
    for k, axis in zip(keys, axes):
        if len(axis) == 0:
            raise ParameterError(f"grid axis {k!r} is an empty list")
    return [dict(zip(keys, combo)) for combo in itertools.product(*axes)]


def resolve_model(name: str):
    """The model class registered as ``name``.

    Raises
    ------
    ParameterError
        No such model; the message lists the available ones.
    """
    return get_model_class(str(name).strip())


# ====================================================================== data and splits (cached per process)
_DATA_CACHE: "OrderedDict[str, tuple[Ratings, str]]" = OrderedDict()
_SPLIT_CACHE: "OrderedDict[str, Split]" = OrderedDict()
_DATA_CACHE_SIZE = 4
_SPLIT_CACHE_SIZE = 8


def _fingerprint(r: Ratings) -> str:
    h = hashlib.sha256()
    for arr in (r.users, r.items, r.ratings):
        h.update(np.ascontiguousarray(arr).tobytes())
    for ids in (r.user_ids, r.item_ids):
        h.update("\x1f".join(map(str, np.asarray(ids).tolist())).encode())
    h.update(repr(tuple(r.scale)).encode())
    return h.hexdigest()[:16]


def load_data(data: dict) -> tuple[Ratings, str]:
    """``(ratings, data_version)`` of a data spec ``{"name": ..., **loader_kwargs}`` or ``{"path": FILE}``.

    Loaded once per process (a small LRU cache). The data version is a hash of the ratings' content
    (triples, ids and scale), so a changed file or generator gives new store keys.
    """
    key = _canonical_json(data)
    if key in _DATA_CACHE:
        _DATA_CACHE.move_to_end(key)
        return _DATA_CACHE[key]
    spec = dict(data)
    if "path" in spec:
        path = spec.pop("path")
        ratings = datasets.read(path, **spec)
    else:
        name = spec.pop("name", None)
        if name is None:
            raise ParameterError("data needs a 'name' (a dataset: " + ", ".join(datasets.available())
                                 + ") or a 'path' (a ratings file)")
        ratings = datasets.load(name, **spec)
    out = (ratings, _fingerprint(ratings))
    _DATA_CACHE[key] = out
    while len(_DATA_CACHE) > _DATA_CACHE_SIZE:
        _DATA_CACHE.popitem(last=False)
    return out


def data_version(data: dict) -> str:
    """The content hash of a data spec (see :func:`load_data`)."""
    return load_data(data)[1]


def make_split(data: dict, protocol: str, params: dict, seed: int) -> Split:
    """The protocol's split of the data (cached per process)."""
    key = _canonical_json([data, protocol, params, seed])
    if key in _SPLIT_CACHE:
        _SPLIT_CACHE.move_to_end(key)
        return _SPLIT_CACHE[key]
    ratings, _ = load_data(data)
    split = protocols.make(protocol, ratings, seed=seed, **params)
    _SPLIT_CACHE[key] = split
    while len(_SPLIT_CACHE) > _SPLIT_CACHE_SIZE:
        _SPLIT_CACHE.popitem(last=False)
    return split


# ====================================================================== cells
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
        return jsonable(resolve_model(self.model).key_defaults(self.params))

    def key(self, data_version: str) -> str:
        """Stable hash of (configuration, the model's defaults it relies on, data version, cofiviz version).

        The defaults are part of the key so that a cell computed before a default changed is never read as
        a result of the new default; parameters at a ``key_neutral`` value are not (:meth:`Model.key_params`).
        """
        params = jsonable(resolve_model(self.model).key_params(dict(sorted(self.params.items()))))
        return cell_key({**self.config(), "params": params, "defaults": self.model_defaults()}, data_version)

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items() if k != "seed")
        pp = ", ".join(f"{k}={v}" for k, v in self.protocol_params.items())
        return f"{self.label or self.model}({shown}) on {self.protocol}({pp}) seed {self.seed}"


def cell_key(config: dict, data_version: str, version: str | None = None) -> str:
    """Stable 20-hex-digit hash of a cell configuration, the data version and the cofiviz version."""
    payload = _canonical_json({"cell": config, "data_version": data_version,
                               "cofiviz": __version__ if version is None else version})
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


# ====================================================================== results
def _identity_columns(cell: Cell, key: str) -> dict:
    out = {"cell": key, "experiment": cell.experiment, "label": cell.label or cell.model, "model": cell.model,
           "params": _canonical_json({k: v for k, v in cell.params.items()}),
           "setting": _canonical_json({k: v for k, v in cell.params.items() if k != "seed"}),
           "protocol": cell.protocol, "protocol_params": _canonical_json(cell.protocol_params),
           "data": _canonical_json(cell.data), "seed": int(cell.seed)}
    for k, v in cell.params.items():
        out[f"model.{k}"] = v
    for k, v in cell.protocol_params.items():
        out[f"protocol.{k}"] = v
    return out


def run_cell(cell: Cell, key: str | None = None, expected_version: str | None = None) -> Results:
    """Run one cell in this process: data, split, fit with a trace, evaluate.

    A fit that diverges (:class:`~cofiviz.errors.ModelFitError`) is an outcome of its setting, not a failure:
    :meth:`Results.diverged`, stored like any other cell, so that a grid with diverging settings completes (a
    setting with a NaN validation value is never chosen, :func:`cofiviz.selection.choose_setting`).

    Parameters
    ----------
    cell : Cell
    key : str, optional
        The cell's store key (computed here when not given).
    expected_version : str, optional
        The data version the caller computed; a different one here (another copy of the data on a
        worker) raises :class:`~cofiviz.errors.DataError` rather than storing mislabelled results.

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

    parts: dict[str, Ratings] = {}
    for part in cell.trace_parts:
        if part == "valid" and split.valid is not None and len(split.valid):
            parts["valid"] = split.valid
        elif part == "test" and split.given is None:   # strong generalization: test users need fold-in
            parts["test"] = split.candidates("test")
        elif part == "train":
            parts["train"] = split.train
    trace = Trace(parts, cell.trace_metrics, train=split.train, threshold=threshold, every=cell.trace_every)

    t0 = time.perf_counter()
    try:
        model.fit(split.train, valid=split.valid, callbacks=[trace])
    except ModelFitError as exc:
        parts = ["test"] + (["valid"] if split.valid is not None and len(split.valid) else [])
        return Results.diverged(ident, parts, check_metrics(list(cell.metrics)), trace.tidy(), threshold=float(threshold),
                                fit_seconds=time.perf_counter() - t0, iterations=len(model.history_),
                                best_iteration=-1, stopped_reason=f"diverged: {exc}")
    fit_seconds = time.perf_counter() - t0
    final = {"fit_seconds": fit_seconds, "iterations": len(model.history_),
             "best_iteration": model.best_iteration_ if model.best_iteration_ is not None else -1,
             "stopped_reason": model.stopped_reason_}

    frames = []
    ev = evaluate(model, split, metrics=list(cell.metrics), part="test", threshold=threshold)
    frames.append(ev.summary.assign(part="test"))
    if split.valid is not None and len(split.valid):
        evv = evaluate(model, split, metrics=list(cell.metrics), part="valid", threshold=threshold)
        frames.append(evv.summary.assign(part="valid"))
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


# ====================================================================== the experiment
def _normalise_models(models) -> list[dict]:
    if models is None:
        raise ParameterError("an experiment needs at least one model (models: [...])")
    if isinstance(models, (str, dict)):
        if isinstance(models, dict) and not ("model" in models or "name" in models):
            # mapping form: {poprec: {}, itemmean: {damping: [5, 10]}}
            models = [{"model": k, "params": v or {}} for k, v in models.items()]
        else:
            models = [models]
    out = []
    for m in models:
        if isinstance(m, str):
            m = {"model": m}
        if not isinstance(m, dict):
            raise ParameterError(f"a model entry must be a name or a mapping, got {m!r}")
        m = dict(m)
        name = m.pop("model", m.pop("name", None))
        if name is None:
            raise ParameterError(f"a model entry needs 'model': {m!r}")
        params = dict(m.pop("params", {}) or {})
        params.update(m.pop("grid", {}) or {})
        label = m.pop("label", None)
        if m:
            raise ParameterError(f"model entry {name!r} has unknown key(s) {sorted(m)}; "
                                 "valid keys: model, label, params, grid")
        out.append({"model": str(name).lower(), "params": params, "label": label})
    if not out:
        raise ParameterError("an experiment needs at least one model (models: [...])")
    return out


class Experiment:
    """Models × parameter grid × protocol × seeds × metrics.

    Parameters
    ----------
    models : list
        Each entry a model name, or ``{"model": NAME, "label": ..., "params": {...}}``; list values in
        ``params`` (or a separate ``grid``) are grid axes. A mapping ``{NAME: params}`` works too.
    data : str or dict
        A dataset name (``"movielens-100k"``), or ``{"name": ..., **loader_kwargs}``, or
        ``{"path": FILE}``.
    protocol : str or dict
        A protocol name, or ``{"name": ..., **params}``; list values are grid axes.
    seeds : int or list of int
        Seeds of the split and (unless the model's params fix it) of the model.
    metrics : list of str
        Final metrics (default ``ndcg@10, ap, gap``).
    trace : dict, optional
        ``{"metrics": [...], "parts": ["valid"], "every": 1}``: what is scored per iteration (default:
        the final metrics on the validation part, when there is one). ``"test"`` in ``parts`` scores
        the test part per iteration too (it costs a full evaluation per iteration).
    per_user : bool
        Keep per-user rows of the test part.
    threshold : float, optional
        Relevance threshold (default: the protocol's, else 4).
    name : str
        The experiment's name (shown in tables; not part of the store key).

    Raises
    ------
    ParameterError
        Unknown model, model parameter, protocol, protocol parameter or metric (the message lists
        the valid ones) — checked when the experiment is built, before anything runs.
    """

    def __init__(self, models, data="movielens-100k", protocol="weak", seeds=(0,), metrics=("ndcg@10", "ap", "gap"),
                 trace: dict | None = None, per_user: bool = False, threshold: float | None = None,
                 name: str = "experiment"):
        self.name = str(name)
        self.models = _normalise_models(models)
        self.data = {"name": data} if isinstance(data, str) else dict(data or {})
        if isinstance(protocol, str):
            protocol = {"name": protocol}
        protocol = dict(protocol)
        pname = protocol.pop("name", None)
        if pname is None:
            raise ParameterError("protocol needs a 'name'")
        self.protocol = str(pname).strip().lower().replace("_", "-")
        protocols.get(self.protocol)          # an unknown name: ParameterError listing the valid ones
        self.protocol_params = protocol
        if "seed" in protocol:
            raise ParameterError("the protocol's seed is the experiment's seeds; remove 'seed' from protocol")
        valid = protocols.allowed_parameters(self.protocol, protocol.get("base")) - {"seed"}
        unknown = sorted(set(protocol) - valid)
        if unknown:
            raise ParameterError(f"protocol {self.protocol!r} has no parameter(s) {', '.join(map(repr, unknown))}; "
                                 f"valid parameters: {', '.join(sorted(valid))}")
        seeds = [seeds] if isinstance(seeds, (int, np.integer)) else list(seeds)
        if not seeds or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0 for s in seeds):
            raise ParameterError(f"seeds must be non-negative integers, got {seeds!r}")
        self.seeds = [int(s) for s in seeds]
        self.metrics = tuple(check_metrics(metrics))
        trace = dict(trace or {})
        unknown = sorted(set(trace) - {"metrics", "parts", "every"})
        if unknown:
            raise ParameterError(f"trace has unknown key(s) {unknown}; valid keys: metrics, parts, every")
        self.trace_metrics = tuple(check_metrics(trace["metrics"])) if trace.get("metrics") else self.metrics
        parts = trace.get("parts", ["valid"])
        parts = [parts] if isinstance(parts, str) else list(parts)
        bad = [p for p in parts if p not in _TRACE_PARTS]
        if bad:
            raise ParameterError(f"trace parts must be among {', '.join(_TRACE_PARTS)}; got {bad}")
        self.trace_parts = tuple(parts)
        every = trace.get("every", 1)
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ParameterError(f"trace every must be a positive integer, got {every!r}")
        self.trace_every = every
        self.per_user = bool(per_user)
        self.threshold = None if threshold is None else float(threshold)
        for m in self.models:  # validate names and every parameter value now
            klass = resolve_model(m["model"])
            for combo in _grid(m["params"]):
                klass(**combo)
        self._cells: list[Cell] | None = None

    # -------------------------------------------------------------- construction from files
    @classmethod
    def from_dict(cls, config: dict) -> "Experiment":
        """Build from a mapping with the constructor's keywords (what a YAML / TOML file holds)."""
        if not isinstance(config, dict):
            raise ParameterError(f"an experiment configuration must be a mapping, got {type(config).__name__}")
        allowed = {"models", "data", "protocol", "seeds", "metrics", "trace", "per_user", "threshold", "name"}
        unknown = sorted(set(config) - allowed)
        if unknown:
            raise ParameterError(f"unknown experiment key(s) {unknown}; valid keys: {', '.join(sorted(allowed))}")
        return cls(**config)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Experiment":
        """Read a ``.yaml`` / ``.yml`` or ``.toml`` configuration (see the module documentation).

        Raises
        ------
        DataError
            A missing or unparsable file.
        ParameterError
            A configuration with unknown keys, models, parameters or protocols.
        """
        path = Path(path)
        if not path.is_file():
            raise DataError(f"{path}: no such experiment file")
        text = path.read_text()
        suffix = path.suffix.lower()
        try:
            if suffix == ".toml":
                import tomllib
                config = tomllib.loads(text)
            elif suffix in (".yaml", ".yml"):
                try:
                    import yaml
                except ImportError:
                    raise DataError(f"{path}: reading YAML needs PyYAML (pip install pyyaml); or write the "
                                    "experiment as TOML (.toml), which needs nothing extra") from None
                config = yaml.safe_load(text)
            else:
                raise DataError(f"{path}: expected a .yaml, .yml or .toml experiment file")
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - parser errors vary by library
            raise DataError(f"{path}: cannot parse the experiment file: {exc}") from None
        config = dict(config or {})
        config.setdefault("name", path.stem)
        return cls.from_dict(config)

    # -------------------------------------------------------------- cells
    def cells(self) -> list[Cell]:
        """Every cell: model configurations × protocol configurations × seeds (in that order)."""
        if self._cells is not None:
            return list(self._cells)
        out = []
        for m in self.models:
            klass = resolve_model(m["model"])
            has_seed = "seed" in klass.param_names()
            for params in _grid(m["params"]):
                for pp in _grid(self.protocol_params):
                    for seed in self.seeds:
                        p = dict(params)
                        if has_seed and "seed" not in m["params"]:
                            p["seed"] = seed
                        out.append(Cell(model=m["model"], params=p, protocol=self.protocol, protocol_params=pp,
                                        seed=seed, data=self.data, metrics=self.metrics,
                                        trace_metrics=self.trace_metrics, trace_parts=self.trace_parts,
                                        trace_every=self.trace_every, per_user=self.per_user,
                                        label=m["label"] or m["model"], threshold=self.threshold,
                                        experiment=self.name))
        self._cells = out
        return list(out)

    def __len__(self) -> int:
        return len(self.cells())

    def __repr__(self) -> str:
        return (f"<Experiment {self.name!r}: {len(self.models)} model spec(s), protocol {self.protocol}, "
                f"{len(self.seeds)} seed(s), {len(self)} cells>")

    def keys(self) -> list[tuple[Cell, str]]:
        """``(cell, store key)`` pairs (the data is loaded here to compute its version)."""
        version = data_version(self.data)
        return [(c, c.key(version)) for c in self.cells()]

    # -------------------------------------------------------------- running
    def run(self, store=None, progress: bool = False, on_cell: Callable[[Cell, str, Results], Any] | None = None,
            errors: str = "raise") -> Results:
        """Run every cell in this process, one after another (see :func:`cofiviz.sweep.sweep` for Dask).

        Parameters
        ----------
        store : ResultsStore or path, optional
            Finished cells are read from it instead of run; new ones are written to it.
        progress : bool
            Show a tqdm progress bar.
        on_cell : callable, optional
            Called as ``on_cell(cell, key, results)`` after each cell that ran.
        errors : {"raise", "record"}
            What a cell that fails with a :class:`~cofiviz.errors.CofivizError` (data that cannot be
            loaded or split, say) does: stop the run, or be listed in ``results.failed`` as ``(key,
            description, error)`` while the other cells run (a failed cell is not stored: it runs again next
            time). A diverging fit is not a failure but a stored result (:func:`run_cell`).
        """
        if errors not in ("raise", "record"):
            raise ParameterError(f"errors must be 'raise' or 'record', got {errors!r}")
        if store is not None and not isinstance(store, ResultsStore):
            store = ResultsStore(store)
        pairs = self.keys()
        version = data_version(self.data)
        done = set(store.done_keys()) if store is not None else set()
        it = pairs
        bar = None
        if progress:
            from tqdm.auto import tqdm    # a progress bar only when asked for (its notebook form warns on import)

            bar = tqdm(total=len(pairs), desc=self.name, unit="cell")
        out = []
        failed = []
        for cell, key in it:
            if key in done:
                out.append(store.read(key))
            else:
                try:
                    res = run_cell(cell, key, expected_version=version)
                except CofivizError as exc:
                    if errors == "raise":
                        raise
                    failed.append((key, cell.describe(), f"{type(exc).__name__}: {exc}"))
                    if bar is not None:
                        bar.update(1)
                    continue
                if store is not None:
                    store.write(key, res, cell.config(), version)
                out.append(res)
                if on_cell is not None:
                    on_cell(cell, key, res)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        result = Results.concat(out)
        result.failed = failed
        return result
