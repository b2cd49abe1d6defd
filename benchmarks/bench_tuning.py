"""Does tuning within a budget beat the damped item mean? Each model tuned on the validation part of MovieLens
100K's LCR-protocol splits, against ItemMean with its damping searched on the same validation part.

    .venv/bin/python benchmarks/bench_tuning.py [--models cofirank gcr lcr llorma gapfm bilinear]
                                                [--ns 10 20 50] [--seeds 0 1 2] [--budget 120] [--json OUT]

For each split (``lcr-weak``: N training ratings per user, 10 for validation, the rest test) and model:
``cofiviz.search.tune(model, train, valid, budget=B, seed=seed)`` (the model's search space, a seeded random
search, the refit with the chosen setting: the best drawn trial, or the reference, the best of the configured model and its anchors,
when the cross-check of :mod:`cofiviz.search.tuning` finds no gain on both halves; the row says which), then
NDCG@10 per test user beside ItemMean's (damping tuned on the same validation part with the same method), the
mean per-user difference and its p-values (scipy's paired t-test and Wilcoxon signed-rank test). Prints one row
per (model, N, seed) and the means over seeds; ``--json`` keeps every row.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

import cofiviz
from cofiviz import datasets
from cofiviz.evaluation import evaluate
from cofiviz.models import get_model_class, ranking_models
from cofiviz.protocols import lcr_weak
from cofiviz.search import tune
from cofiviz.evaluation.significance import paired_test

METRIC = "ndcg@10"


def per_user(model, split) -> pd.Series:
    ev = evaluate(model, split, metrics=[METRIC], part="test")
    pu = ev.per_user[ev.per_user["metric"] == METRIC]
    return pd.Series(pu["value"].to_numpy(dtype=float), index=pu["user"].to_numpy())


def paired(a: pd.Series, b: pd.Series) -> dict:
    res = paired_test(a, b, metric=METRIC)
    return {k: res[k] for k in ("n_users", "diff", "t_test_p", "wilcoxon_p")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=ranking_models(), help="default: the ranking models")
    p.add_argument("--ns", nargs="+", type=int, default=[10, 20, 50])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--budget", type=float, default=120.0)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    cofiviz.warmup()
    ratings = datasets.load("movielens-100k")
    rows = []
    print(f"{'model':10s} {'N':>3} {'seed':>4} {'model':>7} {'ItemMean':>8} {'diff':>8} {'t p':>9} {'Wilcoxon p':>10} "
          f"{'trials':>6} {'s':>5}  chosen")
    for n in args.ns:
        for seed in args.seeds:
            split = lcr_weak(ratings, n_train=n, seed=seed)
            base = get_model_class("itemmean")()
            tune(base, split.train, split.valid, budget=args.budget, trials=60, seed=seed)
            base_pu = per_user(base, split)
            for name in args.models:
                model = get_model_class(name)()
                t0 = time.perf_counter()
                tune(model, split.train, split.valid, budget=args.budget, seed=seed)
                seconds = time.perf_counter() - t0
                pu = per_user(model, split)
                t = model.tuning_
                chosen = t.trials[t.chosen]["params"]
                row = {"model": name, "N": n, "seed": seed, "ndcg@10": float(pu.mean()),
                       "itemmean": float(base_pu.mean()), "itemmean_damping": base.damping, **paired(pu, base_pu),
                       "trials": len(t.trials), "chosen_trial": t.chosen, "seconds": seconds,
                       "cross_check_gains": t.check.get("gains"), "reference": t.check.get("reference"),
                       "kept_reference": t.check.get("kept_reference"),
                       "chosen": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in chosen.items()}}
                rows.append(row)
                print(f"{name:10s} {n:>3} {seed:>4} {row['ndcg@10']:7.4f} {row['itemmean']:8.4f} {row['diff']:+8.4f} "
                      f"{row['t_test_p']:9.2e} {row['wilcoxon_p']:10.2e} {row['trials']:>6} {seconds:5.0f}  "
                      f"{'reference' if row['kept_reference'] else 'drawn'} trial {t.chosen}: {row['chosen']}",
                      flush=True)
    frame = pd.DataFrame(rows)
    print("\nmeans over seeds (a model beats the item mean where diff > 0 with small p-values):")
    summary = frame.groupby(["model", "N"]).agg(ndcg=("ndcg@10", "mean"), itemmean=("itemmean", "mean"),
                                                 diff=("diff", "mean"), max_t_p=("t_test_p", "max"),
                                                 max_wilcoxon_p=("wilcoxon_p", "max"), beats=("diff", lambda d: int((d > 0).sum())),
                                                 seeds=("diff", "size"))
    print(summary.to_string(float_format=lambda v: f"{v:.4g}"))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"budget": args.budget, "metric": METRIC, "rows": rows}, fh, indent=1, default=str)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
