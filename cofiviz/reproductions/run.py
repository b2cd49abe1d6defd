"""Running a reproduction, or reading what the results store and the shipped results already hold of it.

:func:`reproduce` runs every cell that neither the store nor the shipped results (:mod:`.shipped`) hold yet
(in process, or on Dask), compares with the paper and writes the HTML report; :func:`status` runs nothing
and compares whatever part they hold (the comparisons dashboard and the notebooks show it at once);
:func:`compute_cell` runs one missing cell (the dashboard's Compute button). :func:`verify_shipped`
recomputes shipped cells and :func:`ship_reproduction` regenerates a reproduction's shipped files.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ..errors import DataError
from ..experiment import data_version, run_cell
from ..metrics.names import lower_is_better
from ..results import Results
from ..significance import holm
from ..store import ResultsStore, default_store
from ..sweep import sweep
from .lcr import figure_summary
from .report import PAIRED_COLUMNS, ReproductionReport, compare, write_html
from .shipped import ShippedStore, Verification, covering_keys, load, ship, verify, with_shipped
from .spec import Reproduction, get

__all__ = ["reproduce", "status", "cached_status", "compute_cell", "ReproductionStatus", "verify_shipped", "ship_reproduction",
           "shipped_note"]


def _store(store) -> ResultsStore:
    return store if isinstance(store, ResultsStore) else ResultsStore(store or default_store())


def _layered(store, name: str, shipped: bool) -> ResultsStore:
    store = _store(store)
    return with_shipped(store, name) if shipped else store


def shipped_note(name: str, n_shipped: int) -> str:
    """One sentence on the shipped cells a table shows ('' when it shows none)."""
    sh = load(name)
    if not n_shipped or sh is None:
        return ""
    p = sh.provenance
    machine = p.get("machine", {})
    return (f"{n_shipped} cells are shipped with cofiviz (computed with cofiviz {p.get('cofiviz_version', '?')} on "
            f"{p.get('date', '?')}, {machine.get('cores', '?')} cores, {p.get('seconds', 0) / 3600:.1f} h of "
            f"computation); `cofiviz reproduce {name} --verify K` recomputes K of them and compares.")


def shipped_tests(rep: Reproduction, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the paired tests of the shipped table filled in where the per-user values they need did not
    ship (``Reproduction.ship_per_user`` False): on each row whose tests are missing, whose chosen cells are those
    the shipped row reports and whose (metric, N) has the best method the shipped table has, with the same cells,
    the same cells give the same values, so their tests are the shipped ones. Holm's correction then runs again
    over every test of the table, the filled and the computed ones alike (it gives the shipped ``p_holm`` where
    every test is filled)."""
    sh = None if rep.ship_per_user or not len(table) else load(rep.name)
    if sh is None or not len(sh.table):
        return table
    ref = sh.table.set_index(["metric", "N", "method"])
    best_then = {(m, n): set(g.loc[g["vs_best"] == 0, "cells"].astype(str)) for (m, n), g in sh.table.groupby(["metric", "N"])}
    best_now = {}
    for (m, n), g in table[table["status"] == "ok"].groupby(["metric", "N"]):
        means = g["cofiviz"].dropna()
        if len(means):
            best_now[(m, n)] = str(g.at[means.idxmin() if lower_is_better(m) else means.idxmax(), "cells"])
    out = table.copy()
    for i, row in out.iterrows():
        key = (row["metric"], row["N"], row["method"])
        if key not in ref.index or not row.get("cells") or row[PAIRED_COLUMNS].notna().any():
            continue
        if best_now.get(key[:2]) not in best_then.get(key[:2], set()):
            continue
        shipped = ref.loc[key]
        if str(shipped["cells"]) == str(row["cells"]):
            for c in PAIRED_COLUMNS:
                out.at[i, c] = shipped[c]
    out["p_holm"] = holm(out["wilcoxon_p"].to_numpy(dtype=float))
    return out


def _table(rep: Reproduction, results: Results, missing: list, quick: bool) -> pd.DataFrame:
    if rep.is_figures:
        return figure_summary(results)
    return shipped_tests(rep, compare(rep, results, missing, quick))


@dataclass
class ReproductionStatus:
    """What the results store already holds of one reproduction (see :func:`status`); nothing is run.

    Attributes
    ----------
    reproduction : Reproduction
    quick : bool
    cells : list of (Cell, str, bool)
        Every cell of the reproduction with its store key and whether the store has it.
    results : Results
        The stored cells' results.
    table : DataFrame
        :func:`~cofiviz.reproductions.report.compare` of the stored cells (``status`` "not run" where a
        cell is missing); for figures, :func:`~cofiviz.reproductions.lcr.figure_summary`.
    missing : list of Method
        Methods of the paper that cofiviz does not implement.
    version : str
        The data version (hash) the keys were computed with.
    sources : dict
        ``key -> "computed" | "shipped"`` of the cells held (a cell of the user's store is "computed").
    """

    reproduction: Reproduction
    quick: bool
    cells: list
    results: Results
    table: pd.DataFrame
    missing: list
    version: str
    sources: dict = field(default_factory=dict)

    @property
    def n_shipped(self) -> int:
        """How many of the cells held come from the shipped results."""
        return sum(1 for v in self.sources.values() if v == "shipped")

    @property
    def pending(self) -> list:
        """``(cell, key)`` of the cells the store does not have yet."""
        return [(c, k) for c, k, done in self.cells if not done]

    @property
    def n_done(self) -> int:
        return sum(1 for *_, done in self.cells if done)


def status(name: str, *, quick: bool = False, store=None, data: Any = None,
           shipped: bool = True) -> ReproductionStatus:
    """The part of a reproduction already in the results store or shipped, compared with the paper; runs nothing.

    Parameters are those of :func:`reproduce`.
    """
    rep = get(name)
    store = _layered(store, rep.name, shipped)
    exps, missing = rep.experiments(quick, data)
    done = set(store.done_keys())
    cells = [(c, k, k in done) for _, exp in exps for c, k in exp.keys()]
    results = store.read_many(k for _, k, d in cells if d)
    version = data_version(exps[0][1].data) if exps else ""
    sources = ({k: store.source(k) for _, k, d in cells if d} if isinstance(store, ShippedStore)
               else {k: "computed" for _, k, d in cells if d})
    return ReproductionStatus(rep, quick, cells, results, _table(rep, results, missing, quick), missing, version,
                              sources)


_STATUSES: dict = {}
_STATUSES_LOCK = threading.Lock()


def _stamp(store) -> tuple:
    """What changes when a cell is written into the user's store: its cells directory's entries."""
    cells = _store(store).cells_dir
    try:
        return (os.stat(cells).st_mtime_ns, len(os.listdir(cells)))
    except OSError:
        return (None,)


def cached_status(name: str, *, quick: bool = False, store=None, data: Any = None) -> ReproductionStatus:
    """:func:`status`, remembered in this process until a cell is written into ``store``.

    The shipped results never change while a process runs, and the user's store changes only by cells
    added to (or removed from) its ``cells`` directory, which changes the directory's modification time: a
    page that switches between reproductions reads each one once. The returned status is shared; read it,
    never change it.
    """
    key = (name, bool(quick), str(_store(store).root), json.dumps(data, sort_keys=True, default=str))
    stamp = _stamp(store)
    with _STATUSES_LOCK:
        hit = _STATUSES.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    st = status(name, quick=quick, store=store, data=data)
    with _STATUSES_LOCK:
        _STATUSES[key] = (stamp, st)
    return st


def compute_cell(cell, key: str, store, version: str | None = None) -> Results:
    """Run one cell of a reproduction and write it into the store."""
    store = _store(store)
    version = version or data_version(cell.data)
    res = run_cell(cell, key, expected_version=version)
    store.write(key, res, cell.config(), version)
    return res


def reproduce(name: str, *, quick: bool = False, store=None, html_path: str | os.PathLike | None = None,
              data: Any = None, workers: int = 0, scheduler: str | None = None, progress: bool = False,
              log: Callable[[str], Any] | None = None, shipped: bool = True) -> ReproductionReport:
    """Run (or load from the store) one reproduction; compare with the paper; write the HTML report.

    Parameters
    ----------
    name : str
        One of :data:`cofiviz.reproductions.REPRODUCTIONS`.
    quick : bool
        The reduced version (first N, one seed, first setting of each grid, few iterations); its numbers
        are not the paper's.
    store : ResultsStore or path, optional
        Default :func:`cofiviz.store.default_store`.
    html_path : path, optional
        Default ``cofiviz-results/reproduce-<name>[-quick].html``.
    data : str or dict, optional
        The data (default: the reproduction's own data set, :attr:`Reproduction.dataset`; tests pass a small
        synthetic set).
    workers : int
        0 runs the cells in this process; more runs them on a local Dask cluster of that many workers.
    scheduler : str, optional
        A Dask scheduler address to run the cells on.
    log : callable, optional
        Receives one line per step (default: standard error).
    shipped : bool
        Take the cells that ship with cofiviz as done (the user's store takes precedence); ``False`` computes
        every cell the store does not hold.

    Raises
    ------
    ParameterError
        An unknown reproduction name (the valid ones are listed).
    """
    if log is None:
        def log(msg):
            print(msg, file=sys.stderr, flush=True)
    rep = get(name)
    store = _layered(store, rep.name, shipped)
    t0 = time.perf_counter()
    exps, missing = rep.experiments(quick, data)
    for m in missing:
        log(f"{rep.name}: {m.label} is missing ({m.note or f'model {m.model!r} not registered'})")
    parts = []
    for m, exp in exps:
        log(f"{rep.name}: {m.label}: {len(exp)} cells")
        if workers or scheduler:
            parts.append(sweep(exp, store, scheduler=scheduler, n_workers=workers or None, progress=progress,
                               log=log))
        else:
            parts.append(exp.run(store=store, progress=progress, errors="record"))
    results = Results.concat(parts)
    results.failed = [f for p in parts for f in getattr(p, "failed", [])]
    for key, what, err in results.failed:
        log(f"{rep.name}: cell {key} failed: {what}: {err}")
    seconds = time.perf_counter() - t0
    notes = list(rep.notes)
    if isinstance(store, ShippedStore):
        keys = {k for _, exp in exps for _, k in exp.keys()}
        n_shipped = sum(1 for k in keys if store.source(k) == "shipped")
        if n_shipped:
            notes.append(shipped_note(rep.name, n_shipped))
    table = pd.DataFrame() if rep.is_figures else shipped_tests(rep, compare(rep, results, missing, quick))
    notes += rep.findings(table, results)
    if rep.is_figures and missing:
        notes.append("LCR is not registered: the figures could not be computed.")
    for key, what, err in results.failed:
        notes.append(f"FAILED cell {what}: {err}")
    if quick:
        notes.insert(0, "QUICK version: first N only, one seed, the first setting of each grid and a few "
                        "iterations; the numbers are not comparable with the paper's.")
    out = Path(html_path) if html_path else Path("cofiviz-results") / f"reproduce-{rep.name}{'-quick' if quick else ''}.html"
    write_html(out, rep, table, results, notes, quick, seconds)
    return ReproductionReport(rep.name, table, results, notes, out, seconds)


def verify_shipped(name: str, k: int | None = None, *, seed: int | None = None, each_model: bool = False,
                   max_fit_seconds: float | None = None, log: Callable[[str], Any] | None = None) -> Verification:
    """Recompute shipped cells of reproduction ``name`` and compare them with what ships.

    ``k`` cells are drawn at random (``seed`` fixes the draw), or, with ``each_model``, the quickest cell of
    each model (:func:`~cofiviz.reproductions.shipped.covering_keys`, leaving out models whose every cell took
    longer than ``max_fit_seconds`` to fit).

    Raises
    ------
    DataError
        Nothing of ``name`` ships.
    """
    rep = get(name)
    sh = load(rep.name)
    if sh is None:
        raise DataError(f"no shipped results of {rep.name}; `cofiviz reproduce {rep.name} --ship` makes them")
    if each_model:
        return verify(sh, 0, keys=covering_keys(sh, max_fit_seconds), log=log)
    return verify(sh, k, seed=seed, log=log)


def ship_reproduction(name: str, *, store=None, directory=None, command: str = "", workers: int = 0,
                      scheduler: str | None = None, progress: bool = False,
                      log: Callable[[str], Any] | None = None) -> dict:
    """Compute what is missing of the full reproduction ``name`` and write its shipped files; returns their
    provenance.

    Every full cell ships its results rows; the cells of each table row's chosen setting (all cells of a
    reproduction of figures) ship their per-user test values; figures ship their curves. The seconds recorded
    are those the store's cells took to fit.
    """
    rep = get(name)
    t0 = time.perf_counter()
    report = reproduce(rep.name, store=store, workers=workers, scheduler=scheduler, progress=progress, log=log,
                       html_path=None)
    st = status(rep.name, store=store)
    if st.pending:
        raise DataError(f"{rep.name}: {len(st.pending)} cells failed or are missing (first: "
                        f"{st.pending[0][0].describe()}); nothing shipped")
    if rep.is_figures:
        chosen = {k for _, k, _ in st.cells}
    else:
        chosen = {k for text in report.table.get("cells", pd.Series(dtype=str)) for k in str(text).split(",") if k}
    fit = st.results.results
    seconds = float(fit.drop_duplicates("cell")["fit_seconds"].sum()) if "fit_seconds" in fit.columns else \
        time.perf_counter() - t0
    return ship(rep.name, [(c, k) for c, k, _ in st.cells], _layered(store, rep.name, True), chosen,
                command=command or f"cofiviz reproduce {rep.name} --ship", seconds=seconds,
                data_version=st.version, traces=rep.is_figures, directory=directory,
                table=None if rep.ship_per_user or rep.is_figures else report.table)
