"""Running a reproduction, or reading what the results store and the shipped results already hold of it.

:func:`reproduce` runs every cell that neither the store nor the shipped results (:mod:`.shipped`) hold yet
(in process, or on Dask: every row's cells in one sweep), compares with the paper and writes the HTML report;
:func:`status` runs nothing and compares whatever part they hold (the comparisons dashboard and the notebooks show
it at once); :func:`compute_cell` runs one missing cell (the dashboard's Compute button). :func:`verify_shipped`
recomputes shipped cells and :func:`ship_reproduction` regenerates a reproduction's shipped files.

Rows on data sets read from the user's files (:class:`~cofiviz.reproductions.spec.OtherData`) run with ``data=``
their spec (``{"name": "netflix-prize", "path": FOLDER}``). Their cells' store keys hash that spec, the folder's
absolute path included, and the data version (a hash of the ratings read), so another folder or changed files
never share cells. :func:`stored_runs` finds the runs of a reproduction on such data in a store from the cells'
manifests, without reading the data again; :func:`preview` lists the rows and published numbers before any run.
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

from .. import datasets
from ..util.errors import DataError
from ..engine.experiment import Experiment, data_version, run_cell
from ..util.jsonable import canonical_json
from ..metrics.names import lower_is_better
from ..engine.results import Results
from ..evaluation.significance import holm
from ..engine.store import ResultsStore, default_store
from ..engine.sweep import sweep
from .lcr import figure_summary
from .report import PAIRED_COLUMNS, ReproductionReport, compare, write_html
from .shipped import ShippedStore, Verification, covering_keys, load, ship, verify, with_shipped
from .spec import Reproduction, data_label, data_option, get

__all__ = ["reproduce", "status", "cached_status", "compute_cell", "ReproductionStatus", "verify_shipped", "ship_reproduction",
           "shipped_note", "preview", "stored_runs", "data_note", "other_data_note", "one_sweep", "View", "views",
           "files_needed"]


def _store(store) -> ResultsStore:
    """The results store at ``store`` (default :func:`~cofiviz.engine.store.default_store`), its path made absolute: the
    Dask workers of a sweep write into it by that path, from whatever folder they were started in."""
    return store if isinstance(store, ResultsStore) else ResultsStore(Path(store or default_store()).resolve())


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
    needs : str
        For a :func:`preview` of rows on the user's files that have not run: the option that runs them
        (``--data netflix-prize=FOLDER``); empty otherwise.
    """

    reproduction: Reproduction
    quick: bool
    cells: list
    results: Results
    table: pd.DataFrame
    missing: list
    version: str
    sources: dict = field(default_factory=dict)
    needs: str = ""

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
           shipped: bool = True, version: str | None = None) -> ReproductionStatus:
    """The part of a reproduction already in the results store or shipped, compared with the paper; runs nothing.

    Parameters are those of :func:`reproduce`, and ``version``: the data version to compute the cells' keys with
    (what a stored run's manifests record, :func:`stored_runs`) instead of loading the data to hash it.

    Raises
    ------
    DataError
        No ``data`` for a reproduction that runs only on the user's files (the message names them).
    """
    rep = get(name).on(data)
    store = _layered(store, rep.name, shipped)
    exps, missing = rep.experiments(quick)
    done = set(store.done_keys())
    if version is None:
        version = data_version(exps[0][1].data) if exps else ""
    cells = [(c, c.key(version), None) for _, exp in exps for c in exp.cells()]
    cells = [(c, k, k in done) for c, k, _ in cells]
    results = store.read_many(k for _, k, d in cells if d)
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


def cached_status(name: str, *, quick: bool = False, store=None, data: Any = None,
                  version: str | None = None) -> ReproductionStatus:
    """:func:`status`, remembered in this process until a cell is written into ``store``.

    The shipped results never change while a process runs, and the user's store changes only by cells
    added to (or removed from) its ``cells`` directory, which changes the directory's modification time: a
    page that switches between reproductions reads each one once. The returned status is shared; read it,
    never change it.
    """
    key = (name, bool(quick), str(_store(store).root), json.dumps(data, sort_keys=True, default=str), version)
    stamp = _stamp(store)
    with _STATUSES_LOCK:
        hit = _STATUSES.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    st = status(name, quick=quick, store=store, data=data, version=version)
    with _STATUSES_LOCK:
        _STATUSES[key] = (stamp, st)
    return st


def preview(name: str, dataset: str, *, quick: bool = False) -> ReproductionStatus:
    """The rows of reproduction ``name`` on the data set ``dataset`` (read from the user's files) before they run:
    the published numbers beside empty cofiviz columns, each row's status the option that runs it; nothing is read
    or run, and no cell is listed.

    Raises
    ------
    DataError
        The reproduction has no rows on ``dataset``.
    """
    rep = get(name).on_dataset(dataset)
    _, missing = rep.experiments(quick)
    table = compare(rep, Results(), missing, quick)
    needs = data_option(rep.data_name)
    if len(table):
        table.loc[table["status"] == "not run", "status"] = f"needs your files: {needs}"
    return ReproductionStatus(rep, quick, [], Results(), table, missing, "", {}, needs)


_RUNS: dict = {}


def _manifest_data(store: ResultsStore) -> list[tuple[dict, str, str, float]]:
    """``(data spec, data version, protocol, when written)`` of every cell of the user's store whose data set is read
    from the user's files, from the cells' manifests (remembered until a cell is written or removed)."""
    root = str(store.root)
    stamp = _stamp(store)
    with _STATUSES_LOCK:
        hit = _RUNS.get(root)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    out = []
    names = set(datasets.user_files())
    try:
        entries = list(os.scandir(store.cells_dir))
    except OSError:
        entries = []
    for entry in entries:
        try:
            with open(os.path.join(entry.path, "manifest.json")) as fh:
                manifest = json.load(fh)
            config = manifest["config"]
            spec = config["data"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(spec, dict) and spec.get("name") in names:
            out.append((spec, str(manifest.get("data_version", "")), str(config.get("protocol", "")),
                        float(manifest.get("written", 0.0) or 0.0)))
    with _STATUSES_LOCK:
        _RUNS[root] = (stamp, out)
    return out


def stored_runs(name: str, *, quick: bool = False, store=None) -> list[ReproductionStatus]:
    """The runs of reproduction ``name`` on the user's files that the store holds cells of, newest first.

    Each distinct (data spec, data version) of the store's cells on one of the reproduction's
    :attr:`~cofiviz.reproductions.spec.Reproduction.other_data` sets with its protocol is a candidate; its
    :func:`status` is computed with that version (the data is not read again: the Netflix Prize takes minutes), and
    the candidates holding at least one of the reproduction's cells are returned.
    """
    rep = get(name)
    wanted = {o.dataset for o in rep.other_data}
    if not wanted:
        return []
    newest: dict = {}
    for spec, version, protocol, written in _manifest_data(_store(store)):
        if spec.get("name") in wanted and protocol == rep.protocol:
            k = (canonical_json(spec), version)
            newest[k] = max(newest.get(k, 0.0), written)
    runs = []
    for (spec, version), _ in sorted(newest.items(), key=lambda kv: -kv[1]):
        st = cached_status(name, quick=quick, store=store, data=json.loads(spec), version=version)
        if st.n_done:
            runs.append(st)
    return runs


def files_needed(name: str, have=()) -> list[str]:
    """One sentence per data set of reproduction ``name``'s rows on the user's files (but those in ``have``): which
    rows, at which N, need which files, and the command that runs them."""
    rep = get(name)
    out = []
    for o in rep.other_data:
        if o.dataset in have:
            continue
        rows = ", ".join(dict.fromkeys(c.method for c in o.paper_numbers)) or "its rows"
        ns = ", ".join(map(str, o.ns if o.ns is not None else rep.ns))
        what = "Its rows" if rep.needs_files else f"The rows on {o.label}"
        out.append(f"{what} ({rows}; N = {ns}) need your copy of {o.label}'s files, "
                   f"{data_option(o.dataset).split('=')[1]} being {o.files}: run `cofiviz reproduce {rep.name} "
                   f"{data_option(o.dataset)}`.")
    return out


@dataclass
class View:
    """One data set a reproduction's table can be shown on (:func:`views`): its own (``data=None``, or the data spec
    a page was given), a run on the user's files that the store holds (``data`` its spec, ``version`` its data version),
    or the rows on the user's files before they run (``dataset`` set: :func:`preview`)."""

    label: str
    data: Any = None
    version: str | None = None
    dataset: str | None = None

    def read(self, name: str, *, quick: bool = False, store=None) -> ReproductionStatus:
        """The reproduction's status on this data (:func:`cached_status`, or :func:`preview`)."""
        if self.dataset is not None:
            return preview(name, self.dataset, quick=quick)
        return cached_status(name, quick=quick, store=store, data=self.data, version=self.version)


def _spec_label(data: Any) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data_label(data)
    name = data.get("name")
    return data_label(name) if name else str(data.get("path", data))


def views(name: str, *, quick: bool = False, store=None, data: Any = None) -> list[View]:
    """The data sets reproduction ``name`` can be shown on, in this order: its own (or ``data``, which a table that
    runs only on the user's files takes when it names them), each run on the user's files that ``store`` holds
    (:func:`stored_runs`, newest first), then its rows on the user's files not run yet (a :func:`preview` each)."""
    rep = get(name)
    out, have = [], set()
    named = data.get("name") if isinstance(data, dict) else data
    if not rep.needs_files:
        out.append(View(_spec_label(data) or data_label(rep.data_name or "")
                        + ("" if not rep.other_data else " (the paper's own)"), data))
    elif data is not None and named is not None and rep.other(named) is not None and \
            isinstance(data, dict) and data.get("path"):
        # a page given the user's files for a table that runs on nothing else
        out.append(View(f"{data_label(rep.other(named).dataset)}: {data['path']}", data))
        have.add(rep.other(named).dataset)
    for st in stored_runs(name, quick=quick, store=store):
        spec = st.reproduction.dataset
        have.add(st.reproduction.data_name)
        out.append(View(f"{data_label(st.reproduction.data_name)}: {spec.get('path')} (data version "
                        f"{st.version[:8]})", spec, st.version))
    for o in rep.other_data:
        if o.dataset not in have:
            out.append(View(f"{o.label}: not run yet (needs your files)", dataset=o.dataset))
    return out


def data_note(rep: Reproduction, version: str) -> str:
    """One sentence on the user's files a bound reproduction ran on ('' for other data)."""
    spec = rep.dataset if isinstance(rep.dataset, dict) else {}
    if rep.data_name not in datasets.user_files() or not spec.get("path"):
        return ""
    return (f"Data: {data_label(rep.data_name)} read from {spec['path']} (data version {version}). The store key of "
            "every cell hashes its data spec, this path included, and the data version, a hash of the ratings read: "
            "another folder, or changed files, never share cells.")


def other_data_note(rep: Reproduction) -> str:
    """One sentence on a table's rows that need the user's files ('' when it has none)."""
    if not rep.other_data:
        return ""
    runs = ", ".join(f"`cofiviz reproduce {rep.name} {data_option(o.dataset)}` ({o.label}: {o.files})"
                     for o in rep.other_data)
    return f"The paper's table has rows on {' and '.join(o.label for o in rep.other_data)} too, run on your copy of their files: {runs}."


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
        Default :func:`cofiviz.engine.store.default_store`.
    html_path : path, optional
        Default ``cofiviz-results/reproduce-<name>[-quick].html``.
    data : str or dict, optional
        The data (default: the reproduction's own data set, :attr:`Reproduction.dataset`): a data set read from
        the user's files that the table has rows on (``{"name": "netflix-prize", "path": FOLDER}``: its own N values,
        splits, rows and published numbers, :meth:`Reproduction.on`), or any other spec (tests pass a small
        synthetic set; the rows and numbers stay the reproduction's own).
    workers : int
        0 runs the cells in this process; more runs every row's cells in one sweep on a local Dask cluster of
        that many workers.
    scheduler : str, optional
        A Dask scheduler address to run the cells on (one sweep; the store and the data's path must be seen by
        every worker).
    log : callable, optional
        Receives one line per step (default: standard error).
    shipped : bool
        Take the cells that ship with cofiviz as done (the user's store takes precedence); ``False`` computes
        every cell the store does not hold.

    Raises
    ------
    ParameterError
        An unknown reproduction name (the valid ones are listed).
    DataError
        No ``data`` for a reproduction that runs only on the user's files, or such data without its path: the
        message names the files and the option.
    """
    if log is None:
        def log(msg):
            print(msg, file=sys.stderr, flush=True)
    base = get(name)
    rep = base.on(data)
    store = _layered(store, rep.name, shipped)
    t0 = time.perf_counter()
    exps, missing = rep.experiments(quick)
    for m in missing:
        log(f"{rep.name}: {m.label} is missing ({m.note or f'model {m.model!r} not registered'})")
    parts = []
    for m, exp in exps:
        log(f"{rep.name}: {m.label}: {len(exp)} cells")
    if workers or scheduler:
        for exp in one_sweep([exp for _, exp in exps]):
            log(f"{rep.name}: one Dask sweep of {len(exp)} cells ({len(exp.models)} model entries)")
            parts.append(sweep(exp, store, scheduler=scheduler, n_workers=workers or None, progress=progress,
                               log=log))
    else:
        for _, exp in exps:
            parts.append(exp.run(store=store, progress=progress, errors="record"))
    results = Results.concat(parts)
    results.failed = [f for p in parts for f in getattr(p, "failed", [])]
    for key, what, err in results.failed:
        log(f"{rep.name}: cell {key} failed: {what}: {err}")
    seconds = time.perf_counter() - t0
    notes = list(rep.notes)
    version = data_version(exps[0][1].data) if exps else ""
    for extra in (data_note(rep, version), other_data_note(rep)):
        if extra:
            notes.append(extra)
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
    out = Path(html_path) if html_path else Path("cofiviz-results") / f"reproduce-{rep.experiment_name(quick)}.html"
    write_html(out, rep, table, results, notes, quick, seconds)
    return ReproductionReport(rep.name, table, results, notes, out, seconds, rep.title, rep.command(quick))


def one_sweep(experiments: list[Experiment]) -> list[Experiment]:
    """The experiments of a reproduction's rows merged into as few as can run as one Dask sweep: those on the same
    data, protocol, seeds, metrics, trace, threshold and per-user setting become one experiment whose models are
    all of theirs (a reproduction's table: one). Every cell keeps its configuration, so its store key is the one
    it has in its row's experiment."""
    groups: dict = {}
    for exp in experiments:
        sig = canonical_json([exp.data, exp.protocol, exp.protocol_params, exp.seeds, list(exp.metrics),
                              list(exp.trace_metrics), list(exp.trace_parts), exp.trace_every, exp.per_user,
                              exp.threshold])
        groups.setdefault(sig, []).append(exp)
    out = []
    for group in groups.values():
        first = group[0]
        if len(group) == 1:
            out.append(first)
            continue
        out.append(Experiment(models=[m for e in group for m in e.models], data=first.data,
                              protocol={"name": first.protocol, **first.protocol_params}, seeds=first.seeds,
                              metrics=list(first.metrics),
                              trace={"metrics": list(first.trace_metrics), "parts": list(first.trace_parts),
                                     "every": first.trace_every},
                              per_user=first.per_user, threshold=first.threshold, name=first.name))
    return out


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
