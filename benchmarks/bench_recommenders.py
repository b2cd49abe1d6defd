"""How long the recommendations page's background worker takes to train each model on MovieLens 1M; a benchmark.

Each model is trained by its recipe (:func:`cofiviz.background.recommenders.recipe`: tuned for ``--budget``
seconds on a seeded sample of 1,000 users, then refitted on all of MovieLens 1M; CGPR and CGPOR by EM on a
sample of users, then every user folded in) with :func:`~cofiviz.background.recommenders.train_one`, in a child
process set up as the page's worker is (``leave_a_core(spare=0)``: a lower priority, a numba thread per
core), which reports the seconds, the trials, the iterations of the refit and its peak resident memory
(``VmHWM``). The models are saved into a temporary folder (or ``--dir``), never into the page's own.

Usage (the machine is shared: the load average is printed on every row)::

    .venv/bin/python benchmarks/bench_recommenders.py [--models cgpr gpr regsvd ...] [--budget 30] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile


def _child(name: str, directory: str, budget: float, out) -> None:
    from cofiviz.background.offered import load_dataset
    from cofiviz.background.recommenders import ML1M, train_one
    from cofiviz.background.training_process import leave_a_core

    leave_a_core(spare=0)
    ratings = load_dataset(ML1M)
    try:
        meta = train_one(name, directory, budget=budget, ratings=ratings, data=ML1M)
    except Exception as exc:  # reported as the row's result
        meta = {"error": f"{type(exc).__name__}: {exc}"}
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) / 1024.0 for line in fh if line.startswith("VmHWM:"))
    out.send({**meta, "peak_mb": peak})


def main(argv=None) -> None:
    from cofiviz.background.recommenders import BUDGET, ordered
    from cofiviz.models import available_models

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=None, help="models (default: every registered one, in order)")
    ap.add_argument("--budget", type=float, default=BUDGET, help=f"tuning seconds per model (default {BUDGET:g})")
    ap.add_argument("--dir", default=None, help="where to save the models (default: a temporary folder)")
    args = ap.parse_args(argv)
    names = ordered(args.models or available_models())
    directory = args.dir or tempfile.mkdtemp(prefix="cofiviz-bench-recommenders-")
    ctx = multiprocessing.get_context("fork")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; MovieLens 1M, budget "
          f"{args.budget:g} s; saved into {directory}")
    print(f"{'model':<9} {'seconds':>8} {'trials':>6} {'iter':>5} {'peak MB':>8}  load  recipe")
    total = 0.0
    for name in names:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(name, directory, args.budget, send))
        proc.start()
        send.close()
        res = recv.recv() if recv.poll(None) else {"error": "no result"}
        proc.join()
        if "error" in res:
            print(f"{name:<9} failed: {res['error']}", flush=True)
            continue
        total += res["seconds"]
        print(f"{name:<9} {res['seconds']:8.1f} {str(res['trials']):>6} {res['iterations']:5d} {res['peak_mb']:8.0f}  "
              f"{os.getloadavg()[0]:.2f}  {res['note'] or 'tuned on 1,000 users, refitted on all'}", flush=True)
        with open(os.path.join(directory, f"{name}.bench.json"), "w") as fh:
            json.dump(res, fh, default=str)
    print(f"total: {total / 60:.1f} minutes")


if __name__ == "__main__":
    main()
