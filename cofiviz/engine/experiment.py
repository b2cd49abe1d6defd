"""Experiments: models × parameter grid × protocol × seeds × metrics → tidy pandas tables.

An :class:`Experiment` expands into :class:`Cell` s, one per (model configuration, protocol
configuration, seed). Running a cell loads the data (cached per process), makes the protocol's split
(cached per process), fits the model with a :class:`~cofiviz.engine.trace.Trace` that records the training
curves, and evaluates the fitted model; its outcome is a :class:`~cofiviz.engine.results.Results` of tidy
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

import itertools
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import protocols
from .cell import Cell, cell_key, resolve_model, run_cell
from ..util.errors import CofivizError, DataError, ParameterError
from .loading import data_version, load_data, make_split
from ..metrics.names import check_metrics
from .results import Results
from .store import ResultsStore
from .training import TRACE_PARTS as _TRACE_PARTS

__all__ = ["Experiment", "Cell", "Results", "run_cell", "load_data", "data_version", "make_split",
           "cell_key", "resolve_model"]


def _grid(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the list-valued entries of ``values`` (scalars are fixed)."""
    keys = list(values)
    axes = [values[k] if isinstance(values[k], (list, tuple)) else [values[k]] for k in keys]
    for k, axis in zip(keys, axes):
        if len(axis) == 0:
            raise ParameterError(f"grid axis {k!r} is an empty list")
    return [dict(zip(keys, combo)) for combo in itertools.product(*axes)]


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
        """Run every cell in this process, one after another (see :func:`cofiviz.engine.sweep.sweep` for Dask).

        Parameters
        ----------
        store : ResultsStore or path, optional
            Finished cells are read from it instead of run; new ones are written to it.
        progress : bool
            Show a tqdm progress bar.
        on_cell : callable, optional
            Called as ``on_cell(cell, key, results)`` after each cell that ran.
        errors : {"raise", "record"}
            What a cell that fails with a :class:`~cofiviz.util.errors.CofivizError` (data that cannot be
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
