"""Speed and memory of every model at ten times the scale: MovieLens 100K against MovieLens 1M; a benchmark.

Cases
-----
Every registered model (``cofiviz.models.available_models()``) with its defaults, fitted for
``--iterations`` iterations (default 5; ``patience=0``, ``tol=0`` where the model has one, so that no
convergence test ends the fit early; no validation data), on two data sets (``ml100k``: MovieLens 100K,
``ml1m``: MovieLens 1M) and two splits of each, seed 0:

``weak50``    CofiRank weak generalization, N = 50 (``cofirank-weak``, ``n_train=50``);
``ratio0.5``  a fixed-ratio split, half of each user's ratings for training (``fixed-ratio``,
              ``train_ratio=0.5``).

and ``lcr-q50-r20``: LCR with q = 50 local models of rank 20 (``n_local=50, rank=20``) on the
``ratio0.5`` splits, against the goal of at most 1.5 s per iteration on ML-1M on 2 cores; and
``cofirank-fixed-λ``: CofiRank at the fixed λ = 2 whatever the number of users (``reg_users=None``, as
the paper). Its default scales the item phase's λ with the training users (``λ = 2 · min(users, 5000) / 500``,
``reg_users=500``, ``reg_users_max=5000``) and keeps each user's at 2.
CofiRank's loss is a sum over users, so at a fixed λ the penalty weighs about six times less against the
loss on ML-1M and the bundle method of each phase needs more oracle calls to reach its tolerance: a harder
optimisation problem, not more work per call. Every CofiRank row notes the λ of its fit and the bundle
method's oracle calls per iteration (item phase; mean over users); the goal of linear time counts the
defaults, and this case is shown for contrast.

Measured per (model, data, split)
---------------------------------
* seconds per iteration: the median of ``history_[k]["seconds"]`` over the iterations after the first
  (the first may load kernels from numba's cache); a closed-form model (``iterative = False``) has one
  pass, reported as it is. A fit whose first run takes under 20 s runs ``--repeats`` times in all
  (default 3, each in its own child) and the quickest run counts: other processes can only slow a
  run down, so the least time is the closest to what the code itself needs (the advice of Python's
  ``timeit``), and the ratios below compare like with like;
* the work of an iteration, in the unit the model's kernels loop over: training ratings for most
  models; preference pairs (pairs of a user's training items with different ratings) for GCR and LCR,
  whose pair pass visits each of them; all pairs of a user's training items for GAPfm (the smoothed
  GAP sums over every pair, ties included); for CofiRank (its default NDCG loss), the sum over users of
  ``n_u²``: each call of its loss oracle assigns a user's ``n_u`` items to the list positions, which
  ``cofiviz.solvers.lap.lap_rank2`` solves in ``O(k · n_u²)`` (for the truncation ``k``); for WLT
  also ``Σ n_u²``: its LambdaRank pass visits every ordered pair of each training list (a user's
  items dealt into ``folds`` lists, so ``Σ n_u² / folds`` pairs: the same ratio); for the
  Gaussian-process models, the sum over users of ``n_u³`` (the Cholesky factorisation and inverse of
  each user's ``n_u × n_u`` kernel) plus
  ``nnz · I`` (each user's posterior mean on all ``I`` items of the index space: ``n_u · I`` per
  user), plus ``I³`` for the collaborative ones, whose EM step multiplies and factorises
  ``I × I`` matrices;
* seconds per million units of work, and on the ML-1M rows the ratios ML-1M / ML-100K of the time per
  iteration and of the work. Goal: time grows at most linearly with the work (time ratio ≤ work ratio).
  A model that reports ``passes_`` (WLT: one pass with the Hessian, then one per length its line
  search tries, so its iterations differ in work) is compared by its time per pass, the median of
  each iteration's seconds over its passes; its seconds per million units of work are per pass too,
  and the note gives the passes of every iteration;
* peak memory: each fit runs in a child process, which reports its peak resident set size at its end
  (``VmHWM`` of ``/proc/self/status``: the high-water mark of the process's own memory since it
  started; ``ru_maxrss`` is not used, since Linux carries the parent's peak into a child's across the
  fork and exec); a baseline child per (data, split) imports cofiviz, loads the data and makes the
  split, and nothing else. "Δ MB" is the fit child's peak minus the baseline's: the model's
  arrays, its loaded numba kernels and the fit's temporaries. Goal: every fit child under 2 GB.

A fit whose estimated time (its ML-100K fit scaled by the work ratio) exceeds ``--budget`` seconds runs
fewer iterations (down to one), or is skipped when even one iteration would exceed it; the estimate is
printed as the reason. Every fit also stops after the iteration that passes the budget (a callback), and
a child still running at ``2 × budget + 60`` s is ended and reported. Nothing registered is left out:
every model prints a row, measured or skipped.

Usage (run with both cores free, not niced: beside other work a niced child's short iterations wait for
the CPU and come out several times slower; the load average is printed on every row)::

    .venv/bin/python benchmarks/bench_scale.py [--models lcr gcr ...] [--datasets ml100k ml1m]
        [--splits weak50 ratio0.5] [--iterations 5] [--budget 240] [--json OUT]

The first call of ``cofiviz.datasets.movielens_1m()`` downloads its data (about 14 MB) into the cache.
``cofiviz.warmup()`` runs first in this process, so that the children load the kernels from numba's
on-disk cache instead of compiling them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

DATASETS = {"ml100k": "MovieLens 100K", "ml1m": "MovieLens 1M"}
SPLITS = {"weak50": ("cofirank-weak", {"n_train": 50}), "ratio0.5": ("fixed-ratio", {"train_ratio": 0.5})}
LCR_GOAL = "lcr-q50-r20"
#: extra cases: name -> (registered model, parameters, the splits it runs on)
COFIRANK_FIXED = "cofirank-fixed-λ"
EXTRA = {LCR_GOAL: ("lcr", {"n_local": 50, "rank": 20}, ("ratio0.5",)),
         COFIRANK_FIXED: ("cofirank", {"reg_users": None}, tuple(SPLITS))}
#: cases shown beside a model's defaults for contrast, left out of the linearity goal
CONTRAST = {COFIRANK_FIXED}
LCR_GOAL_SECONDS = 1.5
#: fits quicker than this run ``--repeats`` times, and the quickest run counts
REPEAT_UNDER_SECONDS = 20.0
MEMORY_GOAL_MB = 2048.0


# ---------------------------------------------------------------------------------------------- work
def work_counts(train) -> dict:
    """Sizes of a training table (a ``cofiviz.Ratings``) in every unit of work.

    ``ratings``; ``pairs``: pairs of a user's ratings with different values, each pair once;
    ``item_pairs``: all pairs of a user's ratings, ties included; ``user_squares``: the sum over users of
    ``n_u²``; ``user_cubes``: the sum over users of
    ``n_u³``; ``items``: items with at least one training rating; ``index_items``: the size of the item
    index space (the side of the collaborative Gaussian processes' ``items × items`` matrices).
    """
    counts = np.diff(train.indptr).astype(np.int64)
    item_pairs = int((counts * (counts - 1) // 2).sum())
    order = np.lexsort((train.ratings, train.users))
    u, r = train.users[order], train.ratings[order]
    starts = np.ones(len(u), dtype=bool)
    starts[1:] = (u[1:] != u[:-1]) | (r[1:] != r[:-1])
    runs = np.diff(np.append(np.flatnonzero(starts), len(u))).astype(np.int64)  # equal ratings of one user
    ties = int((runs * (runs - 1) // 2).sum())
    return {"ratings": int(len(train)), "pairs": item_pairs - ties, "item_pairs": item_pairs,
            "user_squares": float((counts.astype(np.float64) ** 2).sum()),
            "user_cubes": float((counts.astype(np.float64) ** 3).sum()),
            "items": int(np.count_nonzero(np.bincount(train.items, minlength=train.n_items))),
            "index_items": int(train.n_items), "users": int(np.count_nonzero(counts))}


def unit_of(model: str) -> str:
    """What one iteration of registered model ``model`` grows with: what its class declares
    (``Model.scale.unit``, :data:`cofiviz.models.scale.WORK_UNITS`)."""
    from cofiviz.models import get_model_class

    return get_model_class(model).scale.unit


def work_of(model: str, counts: dict) -> float:
    """The work of one iteration of registered model ``model`` on a table of these ``counts``."""
    unit = unit_of(model)
    if unit == "pairs":
        return float(counts["pairs"])
    if unit == "Σn²":
        return counts["user_squares"]
    if unit == "item pairs":
        return float(counts["item_pairs"])
    if unit.startswith("Σn³"):
        cubes = counts["user_cubes"] + float(counts["ratings"]) * counts["index_items"]
        return cubes + float(counts["index_items"]) ** 3 if unit.endswith("I³") else cubes
    return float(counts["ratings"])


def quickest(runs: list[dict]) -> dict:
    """Of several runs of one fit, the one with the least time per pass (or per iteration), with every run's
    time (``run_seconds``), their number (``repeats``) and the highest peak memory of them."""
    key = "seconds_per_pass" if all(r.get("seconds_per_pass") for r in runs) else "seconds_per_iteration"
    best = dict(min(runs, key=lambda r: r[key]))
    best.update(repeats=len(runs), run_seconds=[r[key] for r in runs], peak_mb=max(r["peak_mb"] for r in runs))
    return best


def time_ratio(row: dict, small: dict) -> float:
    """``row``'s time over ``small``'s: per pass when both report passes (iterations that differ in their
    number of passes differ in work), else per iteration."""
    per_pass = bool(row.get("seconds_per_pass") and small.get("seconds_per_pass"))
    key = "seconds_per_pass" if per_pass else "seconds_per_iteration"
    return row[key] / small[key]


# ---------------------------------------------------------------------------------------------- child
def fit_params(klass, case_params: dict, iterations: int, train) -> dict:
    """The parameters a case fits ``klass`` with on ``train``: ``iterations`` iterations, no early stopping
    (``patience=0``, ``tol=0``), the case's parameters."""
    params = {"max_iter": iterations, "patience": 0, **case_params}
    if "tol" in klass.param_names():
        params["tol"] = 0.0
    return params


def _load(dataset: str):
    from cofiviz import datasets

    return datasets.movielens_100k() if dataset == "ml100k" else datasets.movielens_1m()


def _split(ratings, split: str):
    from cofiviz import protocols

    name, params = SPLITS[split]
    return protocols.make(name, ratings, seed=0, **params)


def rss_mb() -> float:
    """This process's resident set size now, in MB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """This process's peak resident set size (``VmHWM``), in MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0  # kB
    raise RuntimeError("/proc/self/status has no VmHWM line")


def child(spec: dict, out: str) -> None:
    """One measurement in this process: ``spec["kind"]`` is ``"baseline"`` (load and split only) or
    ``"fit"`` (also warm the model's kernels and fit it); the result goes to the JSON file ``out``."""
    import numba

    import cofiviz
    from cofiviz import models

    split = _split(_load(spec["dataset"]), spec["split"])
    rec = {"threads": numba.get_num_threads(), "rss_after_split_mb": rss_mb()}
    if spec["kind"] == "fit":
        klass = models.get_model_class(spec["model"])
        warm = getattr(sys.modules[klass.__module__], "warmup", None)
        t0 = time.perf_counter()
        if callable(warm):
            warm()
        rec["warmup_seconds"] = time.perf_counter() - t0
        rec["rss_before_fit_mb"] = rss_mb()
        params = fit_params(klass, spec["params"], spec["iterations"], split.train)
        model = klass(**params)
        budget = spec["budget"]
        model.fit(split.train, callbacks=[lambda info: info.elapsed > budget])
        secs = [h["seconds"] for h in model.history_]
        rec.update({"params": params, "iterative": bool(klass.iterative), "iterations": len(secs),
                    "iteration_seconds": secs,
                    "seconds_per_iteration": statistics.median(secs[1:]) if len(secs) > 1 else secs[0],
                    "fit_seconds": model.fit_seconds_, "setup_seconds": model.fit_seconds_ - sum(secs),
                    "stopped": model.stopped_reason_, "cofiviz": cofiviz.__version__})
        if getattr(model, "phase_log_", None):  # CofiRank: oracle calls of the bundle method per phase
            rec["item_bmrm_calls"] = [p["item_bmrm_iter"] for p in model.phase_log_]
            rec["user_bmrm_calls_mean"] = [p["user_bmrm_iter_mean"] for p in model.phase_log_]
        passes = getattr(model, "passes_", None)  # WLT: passes over the data per iteration (line search)
        if passes and len(passes) == len(secs):
            rec["passes"] = [int(p) for p in passes]
            per_pass = [t / p for t, p in zip(secs, passes)]
            rec["seconds_per_pass"] = statistics.median(per_pass[1:]) if len(secs) > 1 else per_pass[0]
        if getattr(model, "reg_effective_", None) is not None:  # CofiRank: its item phase's λ, scaled with the users or not
            rec["reg"] = float(model.reg_effective_)
    rec["peak_mb"] = peak_rss_mb()
    with open(out, "w") as fh:
        json.dump(rec, fh)


def run_repeated(spec: dict, timeout: float, repeats: int) -> dict:
    """:func:`run_child`, again up to ``repeats`` runs in all when the first fit took under
    ``REPEAT_UNDER_SECONDS``; the quickest run (:func:`quickest`)."""
    runs = [run_child(spec, timeout)]
    if runs[0].get("error") or runs[0]["fit_seconds"] >= REPEAT_UNDER_SECONDS:
        return {**runs[0], "repeats": 1}
    for _ in range(repeats - 1):
        res = run_child(spec, timeout)
        if res.get("error"):
            return res
        runs.append(res)
    return quickest(runs)


def run_child(spec: dict, timeout: float, script: str = __file__) -> dict:
    """Run ``spec`` in a child process (``script --child SPEC OUT``, this benchmark by default); its result
    (with its peak resident set size, ``peak_mb``) and its wall time, or ``error`` when it failed or was ended
    at ``timeout`` seconds."""
    with tempfile.TemporaryDirectory() as d:
        out, log = os.path.join(d, "out.json"), os.path.join(d, "log.txt")
        t0 = time.monotonic()
        with open(log, "w") as logfh:
            proc = subprocess.Popen([sys.executable, os.path.abspath(script), "--child", json.dumps(spec), out],
                                    stdout=logfh, stderr=subprocess.STDOUT)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            timed_out = True
        wall = time.monotonic() - t0
        res = {}
        if proc.returncode == 0 and os.path.exists(out):
            with open(out) as fh:
                res = json.load(fh)
        elif timed_out:
            res["error"] = f"ended after {timeout:.0f} s (timeout)"
        else:
            with open(log) as fh:
                tail = [line for line in fh.read().strip().splitlines() if line.strip()][-1:]
            res["error"] = f"exit code {proc.returncode}: {tail[0] if tail else 'no output'}"
    res["child_seconds"] = wall
    return res


# ---------------------------------------------------------------------------------------------- parent
def _cases(names) -> list[tuple[str, str, dict, tuple]]:
    from cofiviz.models import available_models

    registered = available_models()
    known = set(registered) | set(EXTRA)
    unknown = sorted(set(names or ()) - known)
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; choose among {sorted(known)}")
    # quickest first, by the seconds of each model's fit on MovieLens 100K measured when its recommendation
    # settings shipped (models without them last); an extra case right after its model
    from cofiviz.background.recommenders import ordered

    extras = {model: [n for n, (m, _, _) in EXTRA.items() if m == model] for model in registered}
    order = [n for model in ordered(registered) for n in (model, *extras[model])]
    chosen = [n for n in order if names is None or n in names]
    return [(n, *EXTRA[n]) if n in EXTRA else (n, n, {}, tuple(SPLITS)) for n in chosen]


def _fmt(x, spec):
    return "" if x is None else format(x, spec)


def _row_text(r: dict) -> str:
    head = f"{r['case']:<15} {r['dataset']:<6} {r['split']:<8}"
    if r.get("skipped") or r.get("error"):
        what = f"skipped: {r['skipped']}" if r.get("skipped") else f"FAILED: {r['error']}"
        return f"{head} {what} [load {r['load']:.2f}]"
    cols = [f"{r['iterations']:>2}", _fmt(r["seconds_per_iteration"], "9.4f"), _fmt(r["setup_seconds"], "7.2f"),
            f"{r['ratings']:>9,}", f"{r['work']:>15,.0f}", f"{r['unit']:<12}", _fmt(r["seconds_per_million"], "10.4f"),
            _fmt(r.get("time_ratio"), "6.2f").rjust(6), _fmt(r.get("work_ratio"), "6.2f").rjust(6),
            {True: "yes", False: "NO", None: ""}[r.get("linear")].rjust(4),
            f"{r['peak_mb']:>7.0f}", f"{r['delta_mb']:>6.0f}", f"{r['load']:>5.2f}"]
    note = f"  ({r['note']})" if r.get("note") else ""
    return f"{head} " + " ".join(cols) + note


HEADER = (f"{'model':<15} {'data':<6} {'split':<8} {'it':>2} {'s/iter':>9} {'setup s':>7} {'ratings':>9} "
          f"{'work':>15} {'unit':<12} {'s/M work':>10} {'t ×':>6} {'w ×':>6} {'lin':>4} {'peak MB':>7} "
          f"{'Δ MB':>6} {'load':>5}")


def _estimate(small: dict, work_ratio: float, ratings_ratio: float, iterations: int) -> float:
    """Seconds of an ``iterations``-iteration fit on the larger data, from the fit on the smaller."""
    return small["setup_seconds"] * ratings_ratio + iterations * small["seconds_per_iteration"] * work_ratio


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="models: every registered model and " + ", ".join(EXTRA))
    ap.add_argument("--models", nargs="+", default=None, help="models to run (default: all, quickest first)")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    ap.add_argument("--iterations", type=int, default=5, help="iterations per fit (default 5)")
    ap.add_argument("--budget", type=float, default=240.0,
                    help="seconds one fit may take; longer fits run fewer iterations or are skipped (default 240)")
    ap.add_argument("--repeats", type=int, default=3,
                    help=f"runs of each fit whose first run took under {REPEAT_UNDER_SECONDS:.0f} s; the quickest counts "
                         "(default 3)")
    ap.add_argument("--json", default=None, help="write every row here")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(json.loads(args.child[0]), args.child[1])
        return {}
    if args.iterations < 1:
        ap.error("--iterations must be at least 1")

    import numba

    import cofiviz
    from cofiviz.models import get_model_class

    cases = _cases(args.models)
    print(f"machine: {os.cpu_count()} cores, numba threads {numba.config.NUMBA_NUM_THREADS}, "
          f"load average {os.getloadavg()[0]:.2f} at the start; cofiviz {cofiviz.__version__}", flush=True)
    t0 = time.perf_counter()
    cofiviz.warmup()
    print(f"cofiviz.warmup(): {time.perf_counter() - t0:.1f} s (compiles, or loads from numba's cache, every kernel)",
          flush=True)

    counts, baselines = {}, {}
    for ds in args.datasets:
        t0 = time.perf_counter()
        ratings = _load(ds)
        load_s = time.perf_counter() - t0
        for sp in args.splits:
            c = counts[ds, sp] = work_counts(_split(ratings, sp).train)
            print(f"{DATASETS[ds]} ({len(ratings):,} ratings, loaded in {load_s:.1f} s), {sp}: "
                  f"{c['ratings']:,} training ratings of {c['users']:,} users on {c['items']:,} items; "
                  f"{c['pairs']:,} preference pairs, {c['item_pairs']:,} item pairs", flush=True)
        del ratings
    for (ds, sp) in counts:
        baselines[ds, sp] = b = run_child({"kind": "baseline", "dataset": ds, "split": sp}, timeout=600)
        if b.get("error"):
            raise SystemExit(f"the baseline child of {ds} {sp} failed: {b['error']}")
        print(f"baseline child {ds} {sp}: peak {b['peak_mb']:.0f} MB (import, load, split)", flush=True)

    print(f"\n{len(cases)} cases; {args.iterations} iterations per fit, budget {args.budget:.0f} s per fit; "
          f"s/iter: median after the first iteration; t × and w ×: ML-1M / ML-100K of the time per iteration and "
          f"of the work; lin: t × ≤ w ×; peak MB: the fit child's peak resident size; Δ MB: minus the baseline "
          f"child's; load: 1-minute load average after the fit\n", flush=True)
    print(HEADER, flush=True)
    rows = []
    for case, model, params, case_splits in cases:
        for sp in args.splits:
            if sp not in case_splits:
                continue
            small = None
            for ds in args.datasets:
                c = counts[ds, sp]
                row = {"case": case, "model": model, "params": params, "dataset": ds, "split": sp,
                       "unit": unit_of(model), "ratings": c["ratings"], "work": work_of(model, c),
                       "pairs": c["pairs"] if unit_of(model) == "pairs" else None}
                iterations = args.iterations if get_model_class(model).iterative else 1
                note = None
                if small is not None and not small.get("skipped") and not small.get("error"):
                    w_ratio = row["work"] / small["work"]
                    r_ratio = c["ratings"] / small["ratings"]
                    if _estimate(small, w_ratio, r_ratio, iterations) > args.budget:
                        fits = [n for n in range(iterations, 0, -1)
                                if _estimate(small, w_ratio, r_ratio, n) <= args.budget]
                        one = _estimate(small, w_ratio, r_ratio, 1)
                        if not fits:
                            row["skipped"] = (f"one iteration estimated at {one:.0f} s from the {small['dataset']} "
                                              f"fit × {w_ratio:.1f} ({row['unit']}), over the {args.budget:.0f} s "
                                              f"budget")
                        else:
                            note = (f"{fits[0]} iteration(s): {iterations} estimated at "
                                    f"{_estimate(small, w_ratio, r_ratio, iterations):.0f} s")
                            iterations = fits[0]
                if not row.get("skipped"):
                    spec = {"kind": "fit", "dataset": ds, "split": sp, "model": model, "params": params,
                            "iterations": iterations, "budget": args.budget}
                    res = run_repeated(spec, timeout=2 * args.budget + 60, repeats=args.repeats)
                    row.update(res)
                    if not res.get("error"):
                        row["delta_mb"] = res["peak_mb"] - baselines[ds, sp]["peak_mb"]
                        row["seconds_per_million"] = (row.get("seconds_per_pass") or row["seconds_per_iteration"]) / (
                            row["work"] / 1e6)
                        notes = [note] if note else []
                        if not res["iterative"]:
                            notes.append("one pass")
                        elif res["iterations"] < iterations:
                            notes.append(res["stopped"])
                        elif res["iterations"] == 1:
                            notes.append("the only iteration")
                        if res.get("repeats", 1) > 1:
                            notes.append(f"quickest of {res['repeats']} runs: "
                                         + "/".join(f"{x:.4g}" for x in res["run_seconds"]) + " s")
                        if res.get("reg") is not None:
                            notes.append(f"λ {res['reg']:.3g}")
                        if res.get("passes"):
                            notes.append(f"{res['seconds_per_pass']:.4g} s per pass; passes per iteration "
                                         + "/".join(map(str, res["passes"])))
                        if res.get("item_bmrm_calls"):
                            notes.append("BMRM calls per iteration: item " + "/".join(map(str, res["item_bmrm_calls"]))
                                         + ", user mean " + "/".join(f"{x:.1f}" for x in res["user_bmrm_calls_mean"]))
                        row["note"] = "; ".join(notes) or None
                        if small is not None and not small.get("error") and not small.get("skipped"):
                            row["time_ratio"] = time_ratio(row, small)
                            row["work_ratio"] = row["work"] / small["work"]
                            row["linear"] = bool(row["time_ratio"] <= row["work_ratio"])
                row["load"] = os.getloadavg()[0]
                rows.append(row)
                print(_row_text(row), flush=True)
                if small is None:
                    small = row

    _summary(rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"counts": {f"{d} {s}": c for (d, s), c in counts.items()},
                       "baselines": {f"{d} {s}": b for (d, s), b in baselines.items()}, "rows": rows}, fh, indent=2)
    return {"rows": rows, "counts": counts}


def _summary(rows: list[dict]) -> None:
    measured = [r for r in rows if not r.get("skipped") and not r.get("error")]
    print("\ngoals")
    scaled = [r for r in measured if r.get("linear") is not None and r["case"] not in CONTRAST]
    above = [f"{r['case']} {r['split']} (t × {r['time_ratio']:.2f} > w × {r['work_ratio']:.2f})"
             for r in scaled if not r["linear"]]
    print(f"  time at most linear in the work: held for {len(scaled) - len(above)} of {len(scaled)} (model, split)"
          + (f"; not for {', '.join(above)}" if above else "")
          + (f"; not counted: {', '.join(sorted(CONTRAST))}, shown for contrast"
             if CONTRAST & {r["case"] for r in measured} else ""))
    big = [f"{r['case']} {r['dataset']} {r['split']} ({r['peak_mb']:.0f} MB)" for r in measured
           if r["peak_mb"] >= MEMORY_GOAL_MB]
    print(f"  peak memory under {MEMORY_GOAL_MB / 1024:.0f} GB: held for {len(measured) - len(big)} of {len(measured)} fits"
          + (f"; not for {', '.join(big)}" if big else "")
          + (f"; largest {max(measured, key=lambda r: r['peak_mb'])['peak_mb']:.0f} MB" if measured else ""))
    for r in measured:
        if r["case"] == LCR_GOAL and r["dataset"] == "ml1m":
            verdict = "meets" if r["seconds_per_iteration"] <= LCR_GOAL_SECONDS else "misses"
            print(f"  LCR q=50 r=20 on ML-1M {r['split']}: {r['seconds_per_iteration']:.3f} s per iteration with "
                  f"{r['threads']} thread(s), {r['pairs']:,} pairs: {verdict} the {LCR_GOAL_SECONDS} s goal")
        elif r["case"] == LCR_GOAL:
            print(f"  LCR q=50 r=20 on ML-100K {r['split']}: {r['seconds_per_iteration']:.3f} s per iteration, "
                  f"{r['pairs']:,} pairs")
    for r in rows:
        if r.get("skipped") or r.get("error"):
            print(f"  not measured: {r['case']} {r['dataset']} {r['split']}: {r.get('skipped') or r.get('error')}")


if __name__ == "__main__":
    main()
