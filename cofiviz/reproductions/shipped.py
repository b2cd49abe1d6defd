"""The full results of every reproduction, shipped inside the package so that a first visit shows them at once.

For each reproduction ``NAME``, ``cofiviz/reproductions/shipped/`` holds

``NAME.results.parquet``   the ``results`` rows of every full cell (zstd-compressed Parquet);
``NAME.per_user.parquet``  the per-user test values of the cells the table reports (its chosen settings), from
                           which the paired significance tests are computed;
``NAME.traces.parquet``    the per-iteration curves, for reproductions of figures only;
``NAME.table.parquet``     the comparison table with its paired tests, for reproductions whose per-user values are
                           too many to ship (``Reproduction.ship_per_user`` False: the MovieLens 1M leaderboards);
``NAME.json``              provenance: the cofiviz version, the date, the command, the machine, the seconds of
                           computation, the data version and the number of cells.

A cell of the user's own results store takes precedence over a shipped one (:class:`Results` come from there
when both hold a key). Every cell is seeded, so a shipped cell recomputed on any machine gives the same numbers:
to the last bit for every metric, per-user value and curve, and within a stated number of ulp for training
losses (:mod:`.agreement` says what holds for each kind of value). :func:`verify` recomputes cells and
compares, ``cofiviz reproduce NAME --verify K`` runs it, and the test suite recomputes one cell of every model
of every reproduction under each BLAS kernel of the CPU. :func:`ship` regenerates the files from a results
store (``cofiviz reproduce NAME --ship`` computes what is missing first). ``$COFIVIZ_SHIPPED`` points
everything here at another directory.
"""

from __future__ import annotations

import json
import os
import platform
import random
import socket
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..util._version import __version__
from ..util.errors import DataError
from ..engine.experiment import Cell, resolve_model, run_cell
from ..engine.result_keys import neutral_params
from ..engine.results import Results
from ..engine.store import ResultsStore
from .agreement import CellAgreement, compare
from .spec import Reproduction

__all__ = ["SHIPPED_DIR", "shipped_dir", "Shipped", "ShippedStore", "with_shipped", "load", "ship", "verify", "Verification",
           "stale", "covering_keys", "covering_cells"]

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
_TABLES = ("results", "per_user", "traces", "table")


@dataclass
class Shipped:
    """One reproduction's shipped results: tidy tables of every full cell and where they come from."""

    name: str
    results: pd.DataFrame
    per_user: pd.DataFrame = field(default_factory=pd.DataFrame)
    traces: pd.DataFrame = field(default_factory=pd.DataFrame)
    provenance: dict = field(default_factory=dict)
    #: the comparison table at shipping time, where the per-user values do not ship (else empty)
    table: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __post_init__(self):
        # each table's row positions per cell (in file order): a cell's rows are taken, never copied ahead
        self._rows = {t: (getattr(self, t).groupby("cell", sort=False).indices if len(getattr(self, t)) else {})
                      for t in ("results", "per_user", "traces")}

    @property
    def keys(self) -> set[str]:
        """The store keys of the shipped cells."""
        return set(self._rows["results"])

    def __contains__(self, key: str) -> bool:
        return key in self._rows["results"]

    def _take(self, table: str, keys: list[str]) -> pd.DataFrame:
        rows = self._rows[table]
        parts = [rows[k] for k in keys if k in rows]
        if not parts:
            return pd.DataFrame()
        return getattr(self, table).iloc[np.concatenate(parts)].reset_index(drop=True)

    def read(self, key: str) -> Results:
        """The shipped :class:`~cofiviz.engine.results.Results` of one cell."""
        return self.read_many([key])

    def read_many(self, keys) -> Results:
        """The shipped :class:`~cofiviz.engine.results.Results` of the cells ``keys``, in that order."""
        keys = list(keys)
        for key in keys:
            if key not in self:
                raise DataError(f"cell {key} is not in the shipped results of {self.name}")
        return Results(self._take("results", keys), self._take("traces", keys), self._take("per_user", keys))

    def config(self, key: str) -> dict:
        """The configuration of a shipped cell (what :meth:`Cell.from_config` rebuilds it from)."""
        return json.loads(self.results["config"].iloc[self._rows["results"][key][0]])


def _paths(name: str, directory: Path) -> dict[str, Path]:
    out = {t: directory / f"{name}.{t}.parquet" for t in _TABLES}
    out["json"] = directory / f"{name}.json"
    return out


@lru_cache(maxsize=16)
def _load(name: str, directory: str) -> Shipped | None:
    paths = _paths(name, Path(directory))
    if not paths["results"].is_file():
        return None
    tables = {t: pd.read_parquet(p) if p.is_file() else pd.DataFrame() for t, p in paths.items() if t != "json"}
    provenance = json.loads(paths["json"].read_text()) if paths["json"].is_file() else {}
    return Shipped(name, tables["results"], tables["per_user"], tables["traces"], provenance, tables["table"])


def shipped_dir() -> Path:
    """Where shipped results are read from: ``$COFIVIZ_SHIPPED``, else :data:`SHIPPED_DIR` in the package."""
    return Path(os.environ.get("COFIVIZ_SHIPPED") or SHIPPED_DIR)


def load(name: str, directory: str | os.PathLike | None = None) -> Shipped | None:
    """The shipped results of reproduction ``name`` (read once per process), or ``None`` if none ship."""
    return _load(name, str(Path(directory) if directory is not None else shipped_dir()))


class ShippedStore(ResultsStore):
    """The user's results store with shipped results beneath it: what either holds is done.

    Reads come from the user's store first (a cell computed here takes precedence), then from the shipped
    results; writes go to the user's store. Everything that takes a :class:`~cofiviz.engine.store.ResultsStore`
    (an experiment's ``run``, a sweep, :func:`~cofiviz.reproductions.run.status`) takes one.
    """

    def __init__(self, root, shipped: list[Shipped]):
        super().__init__(root)
        self.shipped = [s for s in shipped if s is not None]

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self.shipped) or "none"
        return f"<ShippedStore {str(self.root)!r} over the shipped results of {names}>"

    def _shipped(self, key: str) -> Shipped | None:
        return next((s for s in self.shipped if key in s), None)

    def source(self, key: str) -> str | None:
        """``"computed"`` (in the user's store), ``"shipped"`` or ``None`` (in neither)."""
        if super().is_done(key):
            return "computed"
        return "shipped" if self._shipped(key) is not None else None

    def is_done(self, key: str, verify: bool = True) -> bool:
        return super().is_done(key, verify) or self._shipped(key) is not None

    def done_keys(self, verify: bool = True) -> list[str]:
        own = super().done_keys(verify)
        seen = set(own)
        return own + sorted({k for s in self.shipped for k in s.keys} - seen)

    def read(self, key: str) -> Results:
        if super().is_done(key):
            return super().read(key)
        shipped = self._shipped(key)
        if shipped is None:
            return super().read(key)  # raises the store's DataError
        return shipped.read(key)

    def read_many(self, keys) -> Results:
        """The cells ``keys`` in that order; each run of consecutive keys from one shipped reproduction is taken
        from its tables at once."""
        runs: list[tuple[object, list[str]]] = []          # (the source, its keys): None is the user's store
        for key in keys:
            source = None if super().is_done(key) else self._shipped(key)
            if runs and runs[-1][0] is source:
                runs[-1][1].append(key)
            else:
                runs.append((source, [key]))
        return Results.concat(super(ShippedStore, self).read_many(ks) if source is None else source.read_many(ks)
                              for source, ks in runs)


def with_shipped(store: ResultsStore, names: list[str] | str, directory: str | os.PathLike | None = None
                 ) -> ShippedStore:
    """``store`` with the shipped results of reproductions ``names`` beneath it."""
    names = [names] if isinstance(names, str) else list(names)
    base = store.shipped if isinstance(store, ShippedStore) else []
    return ShippedStore(store.root, [*base, *(load(n, directory) for n in names)])


def stale(rep: Reproduction, quick: bool = False, data=None,
          directory: str | os.PathLike | None = None) -> tuple[list[str], list[str]]:
    """``(missing, orphaned)``: the keys of ``rep``'s cells that the shipped results lack, and the shipped keys
    no cell of the current code has (a changed configuration, default or version). Both empty when the shipped
    results are current; everything missing when nothing ships."""
    sh = load(rep.name, directory)
    exps, _ = rep.experiments(quick, data)
    current = [k for _, exp in exps for _, k in exp.keys()]
    shipped = sh.keys if sh is not None else set()
    return [k for k in current if k not in shipped], sorted(shipped - set(current))


def _machine() -> dict:
    """Where the cells were computed, with the CPU paths NumPy and OpenBLAS took there (what a newcomer's machine
    is compared against when a recomputed cell differs)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        simd = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    except ImportError:   # another NumPy layout: the paths are not recorded
        simd = None
    try:
        import threadpoolctl
        blas = sorted({f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpoolctl.threadpool_info()
                       if i.get("user_api") == "blas"})
    except ImportError:   # threadpoolctl is a test extra: without it the BLAS kernel is not recorded
        blas = None
    return {"host": socket.gethostname(), "platform": platform.platform(), "processor": platform.machine(),
            "cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
            "numpy_simd": simd, "blas_kernels": blas}


def ship(name: str, cells: list[tuple[Cell, str]], store, chosen: set[str], *, command: str, seconds: float,
         data_version: str, traces: bool = False, directory: str | os.PathLike | None = None,
         table: pd.DataFrame | None = None) -> dict:
    """Write the shipped files of reproduction ``name`` from the cells in ``store``; returns the provenance.

    Parameters
    ----------
    cells : list of (Cell, key)
        Every full cell of the reproduction; each must be in ``store``.
    chosen : set of str
        The keys of the cells the reproduction's table reports, whose per-user values ship.
    traces : bool
        Ship the per-iteration curves (the reproductions of figures draw them).
    table : DataFrame, optional
        The comparison table with its paired tests, shipped in place of the per-user values (none of those
        ship when it is given).
    """
    directory = Path(directory) if directory is not None else shipped_dir()
    directory.mkdir(parents=True, exist_ok=True)
    missing = [k for _, k in cells if not store.is_done(k)]
    if missing:
        raise DataError(f"{name}: {len(missing)} of {len(cells)} cells are not in {store.root} (first: {missing[0]}); "
                        "compute them before shipping")
    results, per_user, curves = [], [], []
    for cell, key in cells:
        res = store.read(key)
        results.append(res.results.assign(config=json.dumps(cell.config(), sort_keys=True)))
        if table is None and key in chosen and len(res.per_user):
            per_user.append(res.per_user.assign(value=res.per_user["value"].astype("float64")))
        if traces and len(res.traces):
            curves.append(res.traces)
    tables = {"results": pd.concat(results, ignore_index=True),
              "per_user": pd.concat(per_user, ignore_index=True) if per_user else pd.DataFrame(),
              "traces": pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(),
              "table": table.reset_index(drop=True) if table is not None else pd.DataFrame()}
    paths = _paths(name, directory)
    for t, frame in tables.items():
        if len(frame):
            _uniform_columns(frame).to_parquet(paths[t], index=False, compression="zstd")
        else:
            paths[t].unlink(missing_ok=True)
    provenance = {"reproduction": name, "cofiviz_version": __version__,
                  "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": command, "machine": _machine(),
                  "seconds": round(float(seconds), 1), "data_version": data_version, "n_cells": len(cells),
                  "bytes": {t: paths[t].stat().st_size for t in _TABLES if paths[t].is_file()}}
    paths["json"].write_text(json.dumps(provenance, indent=1) + "\n")
    _load.cache_clear()
    return provenance


def _uniform_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each column of values of several kinds (text beside numbers: two models may name different
    parameters alike, as GCR's numeric ``item_prior`` and CofiRank's named one) as text, which Parquet can
    store; the exact parameters of every cell are in its ``config`` column."""
    out = frame
    for col in frame.columns:
        if frame[col].dtype != object:
            continue
        kinds = {str if isinstance(v, str) else bool if isinstance(v, (bool, np.bool_))
                 else float if isinstance(v, (int, float, np.integer, np.floating)) else type(v)
                 for v in frame[col] if not (isinstance(v, float) and v != v) and v is not None}
        if len(kinds) > 1:
            out = out.copy() if out is frame else out
            out[col] = [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in frame[col]]
    return out


@dataclass
class Verification:
    """What :func:`verify` found: each recomputed cell and how it agrees with what ships."""

    name: str
    cells: list[CellAgreement]
    seconds: float

    @property
    def keys(self) -> list[str]:
        return [c.key for c in self.cells]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.cells)

    @property
    def mismatches(self) -> list[str]:
        """One line per cell that differs beyond its tolerance."""
        return [c.line() for c in self.cells if not c.ok]

    def counts(self) -> dict[str, int]:
        """How many cells agree to the last bit (``exact``), within tolerance (``within``) or differ."""
        return {s: sum(c.status == s for c in self.cells) for s in ("exact", "within", "differs")}

    def summary(self) -> str:
        n = self.counts()
        return (f"{self.name}: of {len(self.cells)} shipped cells recomputed, {n['exact']} agree to the last bit, "
                f"{n['within']} within tolerance, {n['differs']} differ ({self.seconds:.0f} s)")


def _shipped_cell(shipped: Shipped, key: str, version: str | None) -> Cell:
    """The cell of a shipped ``key``. A configuration written before its model gained a
    :data:`~cofiviz.engine.result_keys.KEY_NEUTRAL` parameter lacks it, and the cell it describes is then the one with that parameter at its neutral value
    (what the model computed then, and what the key says), not at the parameter's new default."""
    cell = Cell.from_config(shipped.config(key), experiment=shipped.name)
    neutral = {p: v for p, v in neutral_params(resolve_model(cell.model)).items() if p not in cell.params}
    if not neutral or version is None:
        return cell
    then = replace(cell, params={**cell.params, **neutral})
    return then if cell.key(version) != key and then.key(version) == key else cell


def covering_keys(shipped: Shipped, max_fit_seconds: float | None = None) -> list[str]:
    """One shipped cell per model, chosen without chance: the cell whose recorded fit was quickest (ties by key).

    A model whose every cell took longer than ``max_fit_seconds`` to fit is left out (a collaborative GP's cell
    of MovieLens 1M takes minutes).
    """
    res = shipped.results
    fits = res.groupby(["model", "cell"])["fit_seconds"].max().reset_index()
    if max_fit_seconds is not None:
        fits = fits[fits["fit_seconds"] <= max_fit_seconds]
    fits = fits.sort_values(["model", "fit_seconds", "cell"], kind="stable")
    return fits.drop_duplicates("model")["cell"].tolist()


def covering_cells(shipped: dict[str, Shipped], max_fit_seconds: float | None = None) -> dict[str, list[str]]:
    """Few shipped cells, chosen without chance, that cover every model and every reproduction of ``shipped``
    (reproduction name -> its shipped results): each model's quickest cell of all the reproductions, then the
    quickest cell of each reproduction none of those is in (ties by reproduction name and key).

    A model whose every cell took longer than ``max_fit_seconds`` to fit is left out, as in :func:`covering_keys`.
    Returns reproduction name -> its chosen keys (an empty list for none).
    """
    frames = []
    for name, sh in shipped.items():
        fits = sh.results.groupby(["model", "cell"])["fit_seconds"].max().reset_index()
        frames.append(fits.assign(name=name))
    fits = pd.concat(frames, ignore_index=True)
    if max_fit_seconds is not None:
        fits = fits[fits["fit_seconds"] <= max_fit_seconds]
    fits = fits.sort_values(["fit_seconds", "name", "cell"], kind="stable")
    chosen = fits.drop_duplicates("model")
    rest = fits[~fits["name"].isin(set(chosen["name"]))].drop_duplicates("name")
    picked = pd.concat([chosen, rest])
    return {name: sorted(picked.loc[picked["name"] == name, "cell"]) for name in shipped}


def verify(shipped: Shipped, k: int, *, seed: int | None = None, keys: list[str] | None = None,
           log=None) -> Verification:
    """Recompute ``k`` randomly chosen shipped cells (or ``keys``) and compare them with what ships.

    Each cell is compared by :func:`~cofiviz.reproductions.agreement.compare`: its results rows (values,
    standard deviations, user counts, iterations, the stopping reason), its per-user values and its curves,
    each kind of value within its tolerance in ulp (:data:`~cofiviz.reproductions.agreement.KINDS`: zero for
    every metric; fit times are left out). ``log`` receives one line per cell.
    """
    t0 = time.perf_counter()
    if keys is None:
        pool = sorted(shipped.keys)
        keys = random.Random(seed).sample(pool, min(int(k), len(pool)))
    cells = []
    version = shipped.provenance.get("data_version")
    for key in keys:
        cell = _shipped_cell(shipped, key, version)
        got = run_cell(cell, key, expected_version=version)
        found = compare(key, cell.describe(), shipped.read(key), got)
        cells.append(found)
        if log is not None:
            log(found.line())
    return Verification(shipped.name, cells, time.perf_counter() - t0)
