"""How far above the damped item mean could tuning get? The ceiling of each model's search space on MovieLens
100K's LCR-protocol splits, against what validation picks; a benchmark.

    .venv/bin/python benchmarks/bench_tuning_ceiling.py [--models cofirank gcr lcr llorma gapfm bilinear]
        [--ns 10 20 50] [--seeds 0 1 2] [--draws 40] [--json OUT]

For each split (``lcr-weak``: N training ratings per user, 10 for validation, the rest test) and model: the
configured model, its anchors (``tune_anchors``) and ``--draws`` settings drawn from its ``search_space`` (seeded
by the split's seed), each fitted as a trial of :func:`cofiviz.models.tuning.tune` is (early stopping on the
validation part), then scored on validation (NDCG@10, NDCG@5, AP) and on test (NDCG@10). Beside ItemMean with
its damping tuned on the same validation part, per (model, N), as means over the seeds:

``picked``     the test NDCG@10 of the setting with the best validation NDCG@10, minus the item mean's;
``reference``  the same among the configured model and its anchors only;
``ceiling``    the best test NDCG@10 of all the settings tried, minus the item mean's: what a selection that
               knew the test part could reach among them (it rises with ``--draws``: the best of more noisy
               settings is higher by chance too);
``ρ``          Spearman's rank correlation between validation and test NDCG@10 over the settings.

A ceiling near zero says the search space holds no setting clearly above the item mean on that split, whatever
the selection; a ceiling well above ``picked`` says the selection is what loses.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from scipy.stats import spearmanr

import cofiviz
from cofiviz import datasets
from cofiviz.errors import ModelFitError
from cofiviz.metrics.scorer import per_user_metrics
from cofiviz.models import get_model_class
from cofiviz.models.space import sample
from cofiviz.models.tuning import trial_params
from cofiviz.protocols import lcr_weak

METRIC = "ndcg@10"
VALID_METRICS = ("ndcg@10", "ndcg@5", "ap")


def settings(klass, draws: int, seed: int) -> list[tuple[str, dict]]:
    """The configured model, its anchors and ``draws`` settings from its search space, in that order."""
    rng = np.random.default_rng(seed)
    space = getattr(klass, "search_space", {}) or {}
    out = [("configured", {})] + [("anchor", dict(a)) for a in getattr(klass, "tune_anchors", ())]
    return out + [("draw", sample(space, rng)) for _ in range(draws if space else 0)]


def mean_metric(model, ratings, metrics) -> dict:
    return {k: float(np.nanmean(v)) for k, v in per_user_metrics(model, ratings, list(metrics)).items()}


def summarise(trials: list[dict], itemmean_test: float) -> dict:
    """``picked``, ``reference``, ``ceiling`` (each minus ``itemmean_test``) and ``rho`` of one split's trials."""
    valid = np.array([t["valid"][METRIC] for t in trials])
    test = np.array([t["test"] for t in trials])
    refs = [k for k, t in enumerate(trials) if t["kind"] in ("configured", "anchor")]
    ref = max(refs, key=lambda k: valid[k])
    rho = spearmanr(valid, test).correlation if len(trials) > 2 else float("nan")
    return {"picked": float(test[int(np.argmax(valid))] - itemmean_test), "reference": float(test[ref] - itemmean_test),
            "ceiling": float(test.max() - itemmean_test), "rho": float(rho)}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["cofirank", "gcr", "lcr", "llorma", "gapfm", "bilinear"])
    p.add_argument("--ns", nargs="+", type=int, default=[10, 20, 50])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--draws", type=int, default=40, help="settings drawn from each search space (default 40)")
    p.add_argument("--json", default=None, help="write every trial and summary here")
    args = p.parse_args(argv)
    cofiviz.warmup()
    ratings = datasets.load("movielens-100k")
    rows, trials = [], []
    for n in args.ns:
        for seed in args.seeds:
            split = lcr_weak(ratings, n_train=n, seed=seed)
            base = get_model_class("itemmean")()
            base.tune(split.train, split.valid, budget=60, trials=60, seed=seed)
            im_test = mean_metric(base, split.test, [METRIC])[METRIC]
            for name in args.models:
                klass = get_model_class(name)
                done, t0 = [], time.perf_counter()
                for kind, drawn in settings(klass, args.draws, seed):
                    try:
                        model = klass(**trial_params(klass, klass().get_params(), drawn, METRIC)).fit(
                            split.train, valid=split.valid)
                    except ModelFitError:  # a diverging setting is a failed trial, as in tune()
                        continue
                    done.append({"model": name, "N": n, "seed": seed, "kind": kind, "params": repr(drawn),
                                 "valid": mean_metric(model, split.valid, VALID_METRICS),
                                 "test": mean_metric(model, split.test, [METRIC])[METRIC]})
                trials += done
                row = {"model": name, "N": n, "seed": seed, "settings": len(done), "itemmean": im_test,
                       "seconds": time.perf_counter() - t0, **summarise(done, im_test)}
                rows.append(row)
                print(f"{name:9s} N={n:<3d} seed {seed}: {len(done):3d} settings in {row['seconds']:5.1f} s; minus the "
                      f"item mean ({im_test:.4f}): picked {row['picked']:+.4f}, reference {row['reference']:+.4f}, "
                      f"ceiling {row['ceiling']:+.4f}; ρ {row['rho']:.2f}", flush=True)
    print(f"\nmeans over seeds {args.seeds}, NDCG@10 on test minus the tuned item mean's\n"
          f"{'model':9s} {'N':>3} {'picked':>8} {'reference':>9} {'ceiling':>8} {'ρ':>5}")
    for name in args.models:
        for n in args.ns:
            sel = [r for r in rows if r["model"] == name and r["N"] == n]
            m = {k: np.mean([r[k] for r in sel]) for k in ("picked", "reference", "ceiling", "rho")}
            print(f"{name:9s} {n:>3} {m['picked']:+8.4f} {m['reference']:+9.4f} {m['ceiling']:+8.4f} {m['rho']:5.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "trials": trials}, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
