"""Every model at Netflix size on one machine: fit and evaluation on ``netflix_like`` at 1M, 10M and 100M
ratings; a benchmark.

Data and protocol
-----------------
``cofiviz.datasets.netflix_like(n)`` (seed 0): the Netflix Prize's shape (17,770 items, about 209 ratings a
user, so 4,779 / 47,789 / 477,893 users at 1M / 10M / 100M), planted local low-rank structure. One split per
size, CofiRank's weak generalization at N = 10 (``cofirank-weak``, ``n_train=10``, seed 0): the setting the
papers' Netflix rows share (CofiRank's Table 2 at N = 10, GAPfm's Table 2 at Given 10). Each user keeps 10
ratings for training and every other rating is a test rating, so at 100M the models fit 4.8M ratings and are
scored on 95M: the evaluation, not the fit, is what holds the most data.

Measured per (model, size)
--------------------------
Every registered model (``cofiviz.models.available_models()``) at its defaults, ``--iterations`` iterations
(default 3; ``patience=0``, ``tol=0``, no validation data, so no convergence test ends the fit early), in a
child process of its own:

* seconds per iteration: the median of ``history_[k]["seconds"]`` after the first iteration (one pass for a
  model that does not iterate); ``setup s``: the fit's seconds outside its iterations (initialisation);
* evaluation seconds: ``cofiviz.evaluate(model, split, "ndcg@10")`` on every test rating (users scored a block
  at a time, :data:`cofiviz.metrics.scorer.SCORE_BLOCK` candidate pairs per block);
* NDCG@10 after those iterations, beside the damped item mean's and the planted truth's (the ranking by the
  noise-free planted scores: the ceiling). These are not the models' converged values: the fits stop after
  ``--iterations`` iterations;
* peak memory: the child's peak resident set size (``VmHWM``), and **Δ**: that minus the peak of a baseline
  child that imports cofiviz and loads the split, and nothing else. The goal: Δ ≤ 2 GB, so that what the
  model and its evaluation add to the data stays bounded whatever the number of test ratings.

The split of each size is made once by a child (generation and split seconds and peak memory reported)
and kept in ``--cache`` (``np.save`` of each part's arrays; about 1.6 GB at 100M), from which every other
child loads it.

A fit whose estimate (the previous size's fit and evaluation scaled by the work of an iteration and by the
test ratings) exceeds ``--budget`` seconds runs fewer iterations, or is skipped with the estimate as the
reason. Not run at all, with the reason: a model whose class declares itself heavy (``Model.scale.heavy``: the
collaborative Gaussian processes, whose every EM iteration multiplies and factorises ``items × items`` matrices,
minutes on MovieLens 1M's 3,706 items and about (17,770 / 3,706)³ = 110 times that here), and a model whose
fitted state alone (``Model.state_size``, eight bytes a value) is over 8 GB (:data:`STATE_LIMIT_MB`, what a
16 GB machine can give a model beside the 100M split; no registered model's is: GPR and GPOR keep their posterior
means as one coefficient per training rating and read their kernel from the items' features).

Usage (both cores free)::

    .venv/bin/python benchmarks/bench_netflix_scale.py [--sizes 1M 10M 100M] [--models ...]
        [--iterations 3] [--budget 300] [--cache DIR] [--json OUT] [--into EARLIER.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_scale  # noqa: E402
from bench_scale import fit_params, peak_rss_mb, rss_mb, unit_of, work_counts, work_of  # noqa: E402

SIZES = {"1M": 1_000_000, "10M": 10_000_000, "100M": 100_000_000}
PROTOCOL = ("cofirank-weak", {"n_train": 10})
METRIC = "ndcg@10"
MEMORY_GOAL_MB = 2048.0
#: a model whose fitted state alone is larger is not run: what a 16 GB machine can give a model beside the 100M split
STATE_LIMIT_MB = 8192.0
PARTS = ("train", "test")
FIELDS = ("users", "items", "ratings")


# ---------------------------------------------------------------------------------------------- data
def make_split(n_ratings: int):
    """The benchmark's split of ``netflix_like(n_ratings)``, and the seconds of generation and split."""
    from cofiviz import protocols
    from cofiviz.datasets import netflix_like

    t0 = time.perf_counter()
    ratings = netflix_like(n_ratings, seed=0)
    t1 = time.perf_counter()
    name, params = PROTOCOL
    split = protocols.make(name, ratings, seed=0, **params)
    return ratings, split, t1 - t0, time.perf_counter() - t1


def save_split(split, directory: Path) -> None:
    """Each part's user, item and rating arrays as ``.npy`` files, the index space in ``meta.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    for part in PARTS:
        r = getattr(split, part)
        for f in FIELDS:
            np.save(directory / f"{part}.{f}.npy", np.ascontiguousarray(getattr(r, f)))
    meta = {"n_users": int(split.train.n_users), "n_items": int(split.train.n_items),
            "scale": list(split.train.scale), "protocol": dict(split.protocol)}
    (directory / "meta.json").write_text(json.dumps(meta, default=str))


def load_split(directory: Path):
    """The split :func:`save_split` wrote, in its index space."""
    from cofiviz import Ratings, Split

    meta = json.loads((directory / "meta.json").read_text())
    ids = {"user_ids": np.arange(meta["n_users"]), "item_ids": np.arange(meta["n_items"])}
    parts = {}
    for part in PARTS:
        u, i, y = (np.load(directory / f"{part}.{f}.npy") for f in FIELDS)
        parts[part] = Ratings(u, i, y, scale=tuple(meta["scale"]), **ids)
    return Split(train=parts["train"], test=parts["test"], protocol=meta["protocol"])


# ---------------------------------------------------------------------------------------------- children
def child(spec: dict, out: str) -> None:
    """One measurement in this process (``spec["kind"]``): ``prepare`` (make, measure and keep the split),
    ``baseline`` (load it only) or ``fit`` (load it, fit a model, evaluate it)."""
    import numba

    import cofiviz

    rec: dict = {"threads": numba.get_num_threads(), "cofiviz": cofiviz.__version__}
    directory = Path(spec["directory"])
    if spec["kind"] == "prepare":
        from cofiviz.evaluation import evaluate  # noqa: F401  (the same imports as the other children)
        from cofiviz.metrics import PairScores, mean_metrics

        ratings, split, gen_s, split_s = make_split(spec["n_ratings"])
        test = split.test
        truth = PairScores(test, ratings.truth.score(test.user_ids[test.users], test.item_ids[test.items]))
        rec.update(generate_seconds=gen_s, split_seconds=split_s, n_ratings=len(ratings),
                   users=int(ratings.n_users), items=int(ratings.n_items), test_ratings=len(test),
                   counts=work_counts(split.train),
                   truth=float(mean_metrics(truth, test, [METRIC])[METRIC]))
        del ratings, truth
        save_split(split, directory)
    else:
        split = load_split(directory)
        rec["rss_after_load_mb"] = rss_mb()
        if spec["kind"] == "fit":
            rec.update(fit_and_evaluate(spec, split))
    rec["peak_mb"] = peak_rss_mb()
    with open(out, "w") as fh:
        json.dump(rec, fh)


def fit_and_evaluate(spec: dict, split) -> dict:
    """Fit ``spec["model"]`` for ``spec["iterations"]`` iterations (stopping after the one that passes
    ``spec["budget"]`` seconds) and evaluate it on the test ratings."""
    from cofiviz import models
    from cofiviz.evaluation import evaluate

    klass = models.get_model_class(spec["model"])
    warm = getattr(sys.modules[klass.__module__], "warmup", None)
    if callable(warm):
        warm()
    params = fit_params(klass, {}, spec["iterations"], split.train)
    model = klass(**params)
    budget = spec["budget"]
    model.fit(split.train, callbacks=[lambda info: info.elapsed > budget])
    secs = [h["seconds"] for h in model.history_]
    fit_peak = peak_rss_mb()
    t0 = time.perf_counter()
    ev = evaluate(model, split, METRIC)
    eval_s = time.perf_counter() - t0
    value = float(ev.summary.loc[ev.summary["metric"] == METRIC, "mean"].iloc[0])
    return {"params": params, "iterative": bool(klass.iterative), "iterations": len(secs),
            "iteration_seconds": secs,
            "seconds_per_iteration": statistics.median(secs[1:]) if len(secs) > 1 else secs[0],
            "setup_seconds": model.fit_seconds_ - sum(secs), "fit_seconds": model.fit_seconds_,
            "stopped": model.stopped_reason_, "fit_peak_mb": fit_peak,
            "evaluate_seconds": eval_s, "value": value}


def run_child(spec: dict, timeout: float) -> dict:
    """``spec`` run in a child process of this benchmark (:func:`bench_scale.run_child`)."""
    return bench_scale.run_child(spec, timeout, script=__file__)


# ---------------------------------------------------------------------------------------------- parent
def estimate(small: dict, work_ratio: float, test_ratio: float, iterations: int) -> float:
    """Seconds of fitting ``iterations`` iterations and evaluating on the larger size, from the smaller's row."""
    return (small["setup_seconds"] * work_ratio + iterations * small["seconds_per_iteration"] * work_ratio
            + small["evaluate_seconds"] * test_ratio)


def unrun_reason(model: str, n_users: int, n_items: int) -> str | None:
    """Why a model is not run at this size, or ``None``: it declares itself heavy (``Model.scale.heavy``: an
    iteration on MovieLens 1M takes minutes, and here the items are 4.8 times MovieLens 1M's), or its fitted state
    alone (:meth:`cofiviz.models.Model.state_size`, eight bytes a value) is over :data:`STATE_LIMIT_MB`."""
    from cofiviz.models import get_model_class

    klass = get_model_class(model)
    if klass.scale.heavy:
        return f"declared heavy: {klass.scale.why}, {n_items:,} × {n_items:,} here"
    sizes = klass().state_size(n_users, n_items)
    mb = 8 * sum(sizes.values()) / 2**20
    if mb <= STATE_LIMIT_MB:
        return None
    big = sorted(sizes, key=sizes.get, reverse=True)[:2]
    return (f"its fitted state alone ({', '.join(f'{k}: {sizes[k]:,} values' for k in big)}) takes "
            f"{mb / 1024:,.1f} GB, over the {STATE_LIMIT_MB / 1024:.0f} GB a model is given here")


def markdown(result: dict) -> str:
    """The README's table: one row per model, per size its s/iter, evaluation s and Δ peak memory."""
    sizes = list(result["sizes"])
    head = ["model"] + [f"{s}: s/iter · eval s · Δ MB" for s in sizes] + [f"NDCG@10 at {sizes[-1]}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = {(r["model"], r["size"]): r for r in result["rows"]}
    for model in result["models"]:
        cells = [model]
        last = None
        for s in sizes:
            r = by.get((model, s))
            if r is None:
                cells.append("")
            elif r.get("skipped"):
                cells.append("skipped")
            elif r.get("error"):
                cells.append("failed")
            else:
                delta = round(r["delta_mb"]) or 0   # no "-0"
                cells.append(f"{r['seconds_per_iteration']:.3g} · {r['evaluate_seconds']:.3g} · {delta:,}")
                last = r if s == sizes[-1] else last
        cells.append(f"{last['value']:.4f}" if last else "")
        lines.append("| " + " | ".join(cells) + " |")
    top = result["prepared"][sizes[-1]]
    lines.append("")
    lines.append(f"At {sizes[-1]}: {top['n_ratings']:,} ratings of {top['users']:,} users; the split's "
                 f"{top['counts']['ratings']:,} training and {top['test_ratings']:,} test ratings take "
                 f"{result['baselines'][sizes[-1]]['peak_mb']:,.0f} MB loaded; the planted truth's NDCG@10 is "
                 f"{top['truth']:.4f}.")
    skipped: dict[str, list[str]] = {}
    for r in result["rows"]:
        if r.get("skipped"):
            skipped.setdefault(f"{r['model']}: {r['skipped']}", []).append(r["size"])
    for why, at in skipped.items():
        lines.append(f"Not run at {', '.join(at)}: {why}.")
    other = sorted({(r["model"], r["budget"]) for r in result["rows"]
                    if r.get("budget", result["budget"]) != result["budget"]})
    for model, budget in other:
        lines.append(f"{model} ran with a budget of {budget:.0f} s (`--models {model} --budget {budget:.0f} --into`); "
                     f"the others with {result['budget']:.0f} s.")
    measured = [r for r in result["rows"] if "delta_mb" in r]
    if measured:
        worst = max(measured, key=lambda r: r["peak_mb"] - r["fit_peak_mb"])
        lines.append(f"The evaluation raised a process's peak above its fit's by at most "
                     f"{worst['peak_mb'] - worst['fit_peak_mb']:,.0f} MB ({worst['model']} at {worst['size']}).")
    over = [f"{r['model']} at {r['size']} ({r['delta_mb']:,.0f} MB)" for r in result["rows"]
            if r.get("delta_mb", 0) > result["memory_goal_mb"]]
    lines.append(f"Over the {result['memory_goal_mb'] / 1024:.0f} GB goal above the split: "
                 + (", ".join(over) if over else "none") + ".")
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--models", nargs="+", default=None, help="models to run (default: every registered one)")
    ap.add_argument("--iterations", type=int, default=3, help="iterations per fit (default 3)")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds a fit and its evaluation may take (default 300)")
    ap.add_argument("--cache", default=None, help="where the splits are kept (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="write every row here")
    ap.add_argument("--into", default=None,
                    help="a JSON file of an earlier run: this run's rows replace its rows of the same model and size "
                         "(each row keeps the budget it ran with and its Δ against its own run's baseline)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(json.loads(args.child[0]), args.child[1])
        return {}
    if args.iterations < 1:
        ap.error("--iterations must be at least 1")

    import cofiviz
    from cofiviz.background.recommenders import ordered
    from cofiviz.models import available_models, get_model_class

    registered = available_models()
    unknown = sorted(set(args.models or ()) - set(registered))
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose among {registered}")
    chosen = [m for m in ordered(registered) if args.models is None or m in args.models]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; cofiviz {cofiviz.__version__}",
          flush=True)
    t0 = time.perf_counter()
    cofiviz.warmup()
    print(f"cofiviz.warmup(): {time.perf_counter() - t0:.1f} s", flush=True)

    keep = tempfile.TemporaryDirectory() if args.cache is None else None
    cache = Path(args.cache or keep.name)
    prepared, baselines, rows = {}, {}, []
    previous: dict[str, dict] = {}
    try:
        for size in args.sizes:
            directory = cache / f"netflix-like-{size}-weak10"
            spec = {"kind": "prepare", "n_ratings": SIZES[size], "directory": str(directory)}
            p = prepared[size] = run_child(spec, timeout=3600)
            if p.get("error"):
                raise SystemExit(f"making the {size} split failed: {p['error']}")
            b = baselines[size] = run_child({"kind": "baseline", "directory": str(directory)}, timeout=600)
            if b.get("error"):
                raise SystemExit(f"loading the {size} split failed: {b['error']}")
            c = p["counts"]
            print(f"\n{size}: {p['n_ratings']:,} ratings of {p['users']:,} users × {p['items']:,} items "
                  f"(generated in {p['generate_seconds']:.1f} s, split in {p['split_seconds']:.1f} s, peak "
                  f"{p['peak_mb']:,.0f} MB); {c['ratings']:,} training, {p['test_ratings']:,} test ratings; the "
                  f"split loaded: peak {b['peak_mb']:,.0f} MB; planted truth {METRIC} {p['truth']:.4f}", flush=True)
            print(f"{'model':<10} {'it':>2} {'s/iter':>9} {'setup s':>8} {'eval s':>8} {METRIC:>8} {'peak MB':>8} "
                  f"{'Δ MB':>7}", flush=True)
            for model in chosen:
                row = {"model": model, "size": size, "unit": unit_of(model), "work": work_of(model, c),
                       "budget": args.budget}
                klass = get_model_class(model)
                iterations = args.iterations if klass.iterative else 1
                reason = unrun_reason(model, p["users"], p["items"])
                small = previous.get(model)
                if reason is None and small is not None:
                    w_ratio = row["work"] / small["work"]
                    t_ratio = p["test_ratings"] / prepared[small["size"]]["test_ratings"]
                    fits = [n for n in range(iterations, 0, -1)
                            if estimate(small, w_ratio, t_ratio, n) <= args.budget]
                    if not fits:
                        reason = (f"one iteration and the evaluation estimated at "
                                  f"{estimate(small, w_ratio, t_ratio, 1):.0f} s from the {small['size']} row, over "
                                  f"the {args.budget:.0f} s budget")
                    else:
                        iterations = fits[0]
                elif reason is None and model in previous and previous[model] is None:
                    reason = "skipped or failed at the smaller size"
                if reason:
                    row["skipped"] = reason
                    previous[model] = None
                    print(f"{model:<10} skipped: {reason}", flush=True)
                else:
                    spec = {"kind": "fit", "directory": str(directory), "model": model, "iterations": iterations,
                            "budget": args.budget}
                    res = run_child(spec, timeout=3 * args.budget + 120)
                    row.update(res)
                    if res.get("error"):
                        previous[model] = None
                        print(f"{model:<10} FAILED: {res['error']}", flush=True)
                    else:
                        row["baseline_mb"] = b["peak_mb"]
                        row["delta_mb"] = res["peak_mb"] - b["peak_mb"]
                        previous[model] = row
                        print(f"{model:<10} {res['iterations']:>2} {res['seconds_per_iteration']:>9.3f} "
                              f"{res['setup_seconds']:>8.2f} {res['evaluate_seconds']:>8.2f} {res['value']:>8.4f} "
                              f"{res['peak_mb']:>8,.0f} {row['delta_mb']:>7,.0f}", flush=True)
                rows.append(row)
    finally:
        if keep is not None:
            keep.cleanup()
    result = {"sizes": list(args.sizes), "models": chosen, "protocol": {"name": PROTOCOL[0], **PROTOCOL[1]},
              "metric": METRIC, "iterations": args.iterations, "budget": args.budget,
              "memory_goal_mb": MEMORY_GOAL_MB, "prepared": prepared, "baselines": baselines, "rows": rows}
    measured = [r for r in rows if "delta_mb" in r]
    over = [f"{r['model']} {r['size']} ({r['delta_mb']:,.0f} MB)" for r in measured if r["delta_mb"] > MEMORY_GOAL_MB]
    print(f"\nΔ peak memory ≤ {MEMORY_GOAL_MB / 1024:.0f} GB: held for {len(measured) - len(over)} of "
          f"{len(measured)} fits" + (f"; not for {', '.join(over)}" if over else ""), flush=True)
    if args.into:
        result = merged(json.loads(Path(args.into).read_text()), result)
        Path(args.into).write_text(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return result


def merged(earlier: dict, later: dict) -> dict:
    """``earlier`` with ``later``'s rows in place of its rows of the same model and size."""
    new = {(r["model"], r["size"]): r for r in later["rows"]}
    rows = [new.pop((r["model"], r["size"]), r) for r in earlier["rows"]]
    return {**earlier, "rows": rows + list(new.values())}


if __name__ == "__main__":
    main()
