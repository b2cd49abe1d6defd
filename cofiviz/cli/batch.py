"""``cofiviz sweep CONFIG`` and ``cofiviz reproduce NAME``: many cells, resumably, into a results store.

``cofiviz reproduce NAME --data NAME=PATH`` runs a table's rows on a data set read from the user's files (the
Netflix Prize, EachMovie, Yelp), with that data set's N values, splits, rows and published numbers; ``cofiviz
reproduce list`` says which reproductions have such rows, and which run on nothing else.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from .. import datasets
from ..util.errors import ParameterError
from ..engine.experiment import Experiment
from ..reproductions import REPRODUCTIONS, format_table, reproduce as run_reproduction
from ..reproductions.agreement import LOSS_ULP
from ..reproductions.run import ship_reproduction, verify_shipped
from ..reproductions.shipped import load as load_shipped, shipped_dir
from ..reproductions.spec import data_option
from ..engine.store import ResultsStore, default_store
from ..engine.sweep import sweep as run_sweep
from .options import UsageError, print_table, write_json

__all__ = ["add_parsers", "sweep", "reproduce", "data_argument"]


def add_parsers(sub) -> None:
    sw = sub.add_parser("sweep", help="run an experiment file (YAML / TOML) on Dask, resumably",
                        description="Run every cell of CONFIG that is not yet in the results store, on a "
                                    "LocalCluster (default) or the scheduler at --scheduler; finished cells are "
                                    "written to the store as they complete, so an interrupted sweep resumes.")
    sw.add_argument("config", metavar="CONFIG", help="experiment file (.yaml, .yml or .toml)")
    sw.add_argument("--store", default=None, metavar="DIR", help="results store (default cofiviz-results/store)")
    sw.add_argument("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address (tcp://host:8786)")
    sw.add_argument("--workers", type=int, default=None, help="local cluster workers (default: cores)")
    sw.add_argument("--numba-threads", type=int, default=None, help="numba threads per worker (default cores/workers)")
    sw.add_argument("--retries", type=int, default=3, help="retries of a failed task (default 3)")
    sw.add_argument("--batch", type=int, default=1, help="cells per Dask task (default 1)")
    sw.add_argument("--in-process", action="store_true", help="run the cells one by one in this process, no Dask")
    sw.add_argument("--out", default=None, metavar="FILE.parquet", help="also write the results table here")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw.set_defaults(func=sweep)

    rp = sub.add_parser("reproduce", help="reproduce a paper's table or figures; `reproduce list` lists them")
    rp.add_argument("name", metavar="NAME", help=f"{', '.join(REPRODUCTIONS)}, or list")
    rp.add_argument("--quick", action="store_true", help="a reduced version (one seed, first N, few iterations)")
    rp.add_argument("--store", default=None, metavar="DIR", help="results store (default cofiviz-results/store)")
    rp.add_argument("--html", default=None, metavar="OUT", help="report file (default cofiviz-results/reproduce-NAME.html)")
    rp.add_argument("--workers", type=int, default=0,
                    help="run every row's cells as one sweep on a local Dask cluster of N workers (default: in process)")
    rp.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="run every row's cells as one sweep on this Dask scheduler (tcp://host:8786); the store and "
                         "the --data files must be at the same paths on every worker")
    rp.add_argument("--json", default=None, metavar="OUT", help="write the comparison as JSON")
    rp.add_argument("--data", default=None, metavar="DATA",
                    help="the table's rows on your own files: netflix-prize=FOLDER (training_set/ or combined_data_1..4.txt "
                         "with probe.txt), eachmovie=PATH (Vote.txt), yelp=PATH (the review JSON lines), with that data "
                         "set's N values, splits, rows and published numbers (`reproduce list` says which tables have "
                         "them). Otherwise other data than the reproduction's own for a smoke test (the paper's "
                         "numbers stay MovieLens'): a dataset name, a ratings file, or a JSON object such as "
                         "'{\"name\": \"synthetic\", \"n_users\": 200}'")
    rp.add_argument("--no-progress", action="store_true")
    rp.add_argument("--verify", default=None, metavar="K",
                    help="recompute K randomly chosen shipped cells (or 'each-model': the quickest cell of each model) "
                         "and fail unless each agrees: every metric to the last bit, training losses within "
                         f"{LOSS_ULP} ulp")
    rp.add_argument("--seed", type=int, default=None, help="with --verify: which cells (default: a new choice each time)")
    rp.add_argument("--max-fit-seconds", type=float, default=None, metavar="S",
                    help="with --verify each-model: leave out models whose every cell took longer than S to fit")
    rp.add_argument("--ship", action="store_true",
                    help="compute what is missing of the full reproduction and regenerate its shipped files")
    rp.add_argument("--no-shipped", action="store_true",
                    help="ignore the results that ship with cofiviz: compute every cell the store does not hold")
    rp.set_defaults(func=reproduce)


def sweep(args) -> int:
    exp = Experiment.from_file(args.config)
    store = ResultsStore(args.store or default_store())
    t0 = time.perf_counter()
    if args.in_process:
        res = exp.run(store=store, progress=not args.no_progress)
        res.failed = []
    else:
        res = run_sweep(exp, store, scheduler=args.scheduler, n_workers=args.workers, numba_threads=args.numba_threads,
                        retries=args.retries, progress=not args.no_progress, batch_size=args.batch)
    seconds = time.perf_counter() - t0
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        res.results.to_parquet(out, index=False)
        if len(res.traces):
            res.traces.to_parquet(out.with_name(out.stem + "_traces" + out.suffix), index=False)
    summary = res.summary()
    print(f"{exp.name}: {len(res.cells)} of {len(exp)} cells in {store.root} ({seconds:.1f} s)")
    if len(summary):
        rows = summary.to_dict("records")
        print_table(rows, [c for c in ("label", "setting", "protocol_params", "metric", "mean", "std", "count")
                           if c in summary.columns])
    if args.out:
        print(f"wrote {args.out}")
    if res.failed:
        for key, what, err in res.failed:
            print(f"failed: {key} {what}: {err}", file=sys.stderr)
        return 1
    return 0


def data_argument(text: str) -> Any:
    """``--data`` of ``cofiviz reproduce``: a JSON data spec, ``NAME=PATH`` for a data set read from the user's files
    (``{"name": NAME, "path": PATH}``), a ratings file (``{"path": FILE}``) or a dataset name."""
    text = text.strip()
    if text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--data: not a JSON object ({exc})") from None
    needs = datasets.user_files()
    name, equals, where = text.partition("=")
    try:
        key = datasets.canonical(name)
    except ParameterError:
        key = None
    if equals or key in needs:
        if key not in needs:
            raise UsageError(f"--data {text!r}: NAME=PATH is for the data sets read from your own files "
                             f"({', '.join(needs)}), and {name!r} is not one of them")
        if not where:
            raise UsageError(f"--data {key} reads your own copy of its files: give {data_option(key)}, the path "
                             f"being {needs[key]}")
        return {"name": key, "path": where}
    return {"path": text} if Path(text).is_file() else text


def _listing(name: str, rep) -> str:
    """The lines of ``reproduce list`` for one reproduction: its title, what ships, which rows need the user's files."""
    sh = load_shipped(name)
    ships = f"  [ships {sh.provenance.get('n_cells', len(sh.keys))} cells]" if sh is not None else ""
    if rep.needs_files:
        return f"{name}: {rep.title}{ships}  [needs your files: {rep.files_message()}]"
    line = f"{name}: {rep.title}{ships}"
    for o in rep.other_data:
        ns = ", ".join(map(str, o.ns if o.ns is not None else rep.ns))
        line += (f"\n    + rows on {o.label} (N = {ns}) need your files: {data_option(o.dataset)} "
                 f"({o.files})")
    return line


def reproduce(args) -> int:
    if args.name == "list":
        for name, rep in REPRODUCTIONS.items():
            print(_listing(name, rep))
        return 0
    data: Any = data_argument(args.data) if args.data else None
    if args.verify is not None:
        return _verify(args)
    if args.ship:
        if args.quick or args.data:
            raise UsageError("--ship ships the full reproduction on its own data set: drop --quick and --data")
        provenance = ship_reproduction(args.name, store=args.store, workers=args.workers, scheduler=args.scheduler,
                                       progress=not args.no_progress,
                                       command="cofiviz reproduce " + " ".join(sys.argv[2:] or [args.name, "--ship"]))
        print(f"shipped {provenance['n_cells']} cells of {args.name} into {shipped_dir()} "
              f"({sum(provenance['bytes'].values()) / 1e6:.2f} MB)")
        return 0
    report = run_reproduction(args.name, quick=args.quick, store=args.store, html_path=args.html,
                              workers=args.workers, scheduler=args.scheduler, progress=not args.no_progress,
                              data=data, shipped=not args.no_shipped)
    title = report.title or REPRODUCTIONS[report.name].title
    print(f"{title}{' — QUICK' if args.quick else ''} ({report.seconds:.0f} s, {len(report.results.cells)} cells)")
    if len(report.table):
        print(format_table(report.table))
    for note in report.notes:
        print(f"- {note}")
    print(f"wrote {report.html}")
    if args.json:
        write_json(args.json, {"name": report.name, "quick": args.quick, "table": report.table.to_dict("records"),
                               "notes": report.notes, "html": str(report.html)})
    return 0


def _verify(args) -> int:
    text = str(args.verify).strip()
    each_model = text == "each-model"
    if not each_model:
        try:
            k = int(text)
        except ValueError:
            raise UsageError(f"--verify: a number of cells K or 'each-model', not {text!r}") from None
        if k < 1:
            raise UsageError(f"--verify: K must be at least 1, not {k}")
    result = verify_shipped(args.name, None if each_model else k, seed=args.seed, each_model=each_model,
                            max_fit_seconds=args.max_fit_seconds,
                            log=lambda line: print(line, flush=True))      # each cell as it is recomputed
    print(result.summary())
    if args.json:
        write_json(args.json, {"name": result.name, "seconds": result.seconds, "ok": result.ok,
                               "counts": result.counts(),
                               "cells": [{"key": c.key, "cell": c.description, "status": c.status, "line": c.line(),
                                          "ulp": None if c.largest is None else c.largest.ulp}
                                         for c in result.cells]})
    return 0 if result.ok else 1
