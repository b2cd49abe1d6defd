"""Does ``--tune`` ever hand back a ranking model worse than the damped item mean? And do the defaults? A benchmark.

    .venv/bin/python benchmarks/bench_tuning_goal.py [--mode tune|defaults] [--budget 120] [--searcher random|optuna]
        [--models NAME ...] [--ns 10 20 50] [--seeds 0 1 2]
        [--cells FILE.jsonl] [--json OUT]

For each LCR-protocol split of MovieLens 100K (``lcr-weak``: N training ratings per user, 10 for validation, the
rest test; seeded) the damped item mean is tuned on the validation part (its damping searched, 60 trials, as
``cofiviz run itemmean --tune`` does), and each model is

``tune``      searched as ``cofiviz run MODEL --tune --budget B [--searcher S]`` does
              (:func:`cofiviz.search.tuning.tune` on the validation part, seeded by the split's seed, then refitted
              with the chosen setting; ``--searcher optuna``: Optuna's TPE with median pruning), or
``defaults``  fitted with its defaults, with the validation part for its early stopping.

The models (``--models``) default to the ranking models: those that can be reduced to the damped item mean
(``Model.item_mean_setting``).

Each cell (model, N, seed) gives the test NDCG@10 of the model (``picked``) and of the item mean, their
difference, and the two-sided p-value of the paired t-test on the users
(:func:`cofiviz.evaluation.significance.paired_test`).
The goal: no cell significantly below the item mean (difference < 0 with p < 0.05), and the mean difference over
the seeds above 0 at N = 50. The report also counts the cells below after Holm's adjustment over every cell of the
run (:func:`cofiviz.evaluation.significance.holm`): among 72 tests at the 5 % level, a few fall below by chance alone.

Cells are appended to ``--cells`` (JSON lines, default ``benchmarks/results/tuning-goal-MODE.jsonl``, git-ignored)
as they finish; a rerun skips the cells already there, so an interrupted run resumes. The search's time budget is
wall-clock seconds: on a busy machine it fits fewer trials.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

import cofiviz
from cofiviz import datasets
from cofiviz.metrics.scorer import per_user_metrics
from cofiviz.models import get_model_class, ranking_models
from cofiviz.search.tuning import tune
from cofiviz.protocols import lcr_weak
from cofiviz.evaluation.significance import holm, paired_test

METRIC = "ndcg@10"
#: the ranking models: those that can be reduced to the damped item mean (``Model.item_mean_setting``)
MODELS = ranking_models()
RESULTS = Path(__file__).resolve().parent / "results"
#: a cell is significantly below the item mean when its difference is negative with p below this
ALPHA = 0.05


def item_mean(split, seed: int):
    """ItemMean with its damping tuned on the split's validation part, and its per-user test NDCG@10."""
    model = get_model_class("itemmean")()
    tune(model, split.train, split.valid, budget=60, trials=60, seed=seed)
    return model, per_user(model, split)


def per_user(model, split) -> pd.Series:
    values = per_user_metrics(model, split.test, [METRIC], train=model.train_)[METRIC]
    return pd.Series(values, index=split.test.user_ids)


def cell(name: str, mode: str, split, seed: int, budget: float, base: pd.Series, searcher: str = "random") -> dict:
    """One (model, split) cell: the model tuned or at its defaults against the tuned item mean."""
    klass = get_model_class(name)
    model = klass()
    t0 = time.perf_counter()
    out: dict = {}
    if mode == "tune":
        tuning = tune(model, split.train, split.valid, budget=budget, seed=seed, searcher=searcher)
        out = {"trials": len(tuning.trials), "pruned": sum(bool(t.get("pruned")) for t in tuning.trials),
               "best_valid": tuning.trials[tuning.chosen]["score"], "item_mean_chosen": bool(tuning.check.get("item_mean")),
               "item_mean_gains": tuning.check.get("item_mean_gains"),
               "item_mean_gain": tuning.check.get("item_mean_gain"),
               "item_mean_noise": tuning.check.get("item_mean_noise"),
               "summary": tuning.summary(), "chosen": {k: v for k, v in tuning.best_params.items()
                                                       if k in tuning.trials[tuning.chosen]["params"]}}
    else:
        model.fit(split.train, valid=split.valid)
    got = paired_test(per_user(model, split), base, METRIC)
    return {**out, "picked": got["mean_a"], "itemmean": got["mean_b"], "diff": got["diff"], "p": got["t_test_p"],
            "n_users": got["n_users"], "seconds": time.perf_counter() - t0}


def below(row: dict) -> bool:
    return row["diff"] < 0 and row["p"] < ALPHA


def report(rows: list[dict], models, ns) -> str:
    lines = [f"{'model':9s} {'N':>3} {'seed':>4} {'picked':>7} {'item mean':>9} {'diff':>8} {'p':>6}  note"]
    for r in sorted(rows, key=lambda r: (models.index(r["model"]) if r["model"] in models else 99, r["N"], r["seed"])):
        note = ("BELOW" if below(r) else "") + (" item mean chosen" if r.get("item_mean_chosen") else "")
        lines.append(f"{r['model']:9s} {r['N']:>3} {r['seed']:>4} {r['picked']:7.4f} {r['itemmean']:9.4f} "
                     f"{r['diff']:+8.4f} {r['p']:6.3f}  {note.strip()}")
    lines.append(f"\nmeans over seeds (diff), and cells significantly below the item mean (p < {ALPHA})")
    lines.append(f"{'model':9s} " + " ".join(f"{'N=' + str(n):>16s}" for n in ns))
    for name in models:
        cols = []
        for n in ns:
            sel = [r for r in rows if r["model"] == name and r["N"] == n]
            cols.append(f"{np.mean([r['diff'] for r in sel]):+.4f} ({sum(map(below, sel))}/{len(sel)})"
                        if sel else "-")
        lines.append(f"{name:9s} " + " ".join(f"{c:>16s}" for c in cols))
    n_below = sum(map(below, rows))
    n50 = [name for name in models if any(r["model"] == name and r["N"] == 50 for r in rows)]
    above50 = [name for name in n50 if np.mean([r["diff"] for r in rows if r["model"] == name and r["N"] == 50]) > 0]
    adjusted = holm([r["p"] for r in rows])
    n_below_holm = sum(bool(r["diff"] < 0 and q < ALPHA) for r, q in zip(rows, adjusted))
    lines.append(f"\n{len(rows)} cells, {n_below} significantly below the item mean ({n_below_holm} after Holm's "
                 f"adjustment over the {len(rows)} cells, the family a reader scans); above it on average at N = 50: "
                 f"{len(above50)} of {len(n50)} models")
    return "\n".join(lines)


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["tune", "defaults"], default="tune")
    p.add_argument("--budget", type=float, default=120.0, help="seconds of each search (default 120)")
    p.add_argument("--searcher", choices=["random", "optuna"], default="random", help="the search's draws (tune mode)")
    p.add_argument("--models", nargs="+", default=MODELS)
    p.add_argument("--ns", nargs="+", type=int, default=[10, 20, 50])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--cells", default=None, help="JSON lines of finished cells (read, then appended to)")
    p.add_argument("--json", default=None, help="write every cell here at the end")
    p.add_argument("--data", default="movielens-100k", help="a data set name of cofiviz.datasets")
    args = p.parse_args(argv)
    cells = Path(args.cells or RESULTS / f"tuning-goal-{args.mode}.jsonl")
    cells.parent.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in cells.read_text().splitlines() if line.strip()] if cells.exists() else []
    key = (lambda r: (r["model"], r["N"], r["seed"], r.get("budget"), r.get("searcher", "random")))
    done = {key(r) for r in rows}
    budget = args.budget if args.mode == "tune" else None
    searcher = args.searcher if args.mode == "tune" else "random"
    cofiviz.warmup()
    ratings = datasets.load(args.data)
    for n in args.ns:
        for seed in args.seeds:
            todo = [m for m in args.models if (m, n, seed, budget, searcher) not in done]
            if not todo:
                continue
            split = lcr_weak(ratings, n_train=n, seed=seed)
            _, base = item_mean(split, seed)
            for name in todo:
                row = {"model": name, "N": n, "seed": seed, "budget": budget, "mode": args.mode, "searcher": searcher,
                       **cell(name, args.mode, split, seed, args.budget, base, searcher)}
                rows.append(row)
                with cells.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(f"{name:9s} N={n:<3d} seed {seed}: {row['picked']:.4f} vs item mean {row['itemmean']:.4f} "
                      f"({row['diff']:+.4f}, p {row['p']:.3f}) in {row['seconds']:.0f} s"
                      + (f", {row['trials']} trials: {row['summary']}" if "summary" in row else ""), flush=True)
    mine = [r for r in rows if r["model"] in args.models and r["N"] in args.ns and r["seed"] in args.seeds
            and r.get("budget") == budget and r.get("searcher", "random") == searcher]
    print("\n" + report(mine, args.models, args.ns))
    if args.json:
        Path(args.json).write_text(json.dumps(mine, indent=1))
    return mine


if __name__ == "__main__":
    main()
