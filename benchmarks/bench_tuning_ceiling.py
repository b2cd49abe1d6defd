"""How far above the damped item mean could tuning get? The ceiling of each model's search space on MovieLens
100K's LCR-protocol splits, against what validation picks; a benchmark.

    .venv/bin/python benchmarks/bench_tuning_ceiling.py [--models cofirank gcr lcr llorma gapfm bilinear]
        [--ns 10 20 50] [--seeds 0 1 2] [--draws 40] [--json OUT]

For each split (``lcr-weak``: N training ratings per user, 10 for validation, the rest test) and model: the
configured model, its anchors (:func:`cofiviz.search.tuning.anchors`: ``tune_anchors`` and the item mean alone)
and ``--draws`` settings drawn from its ``search_space`` (seeded by the split's seed), each fitted as a trial of
:func:`cofiviz.search.tuning.tune` is (early stopping on the validation part), then scored on validation (NDCG@10, NDCG@5, AP) and on test (NDCG@10). Beside ItemMean with
its damping tuned on the same validation part, per (model, N), as means over the seeds:

``picked``     the test NDCG@10 of the setting with the best validation NDCG@10, minus the item mean's;
``reference``  the same among the configured model and its anchors only;
``ceiling``    the best test NDCG@10 of all the settings tried, minus the item mean's: what a selection that
               knew the test part could reach among them (it rises with ``--draws``: the best of more noisy
               settings is higher by chance too);
``ρ``          Spearman's rank correlation between validation and test NDCG@10 over the settings;
``p``          for the picked and the ceiling settings, the two-sided p-values of the paired t-test and the Wilcoxon
               signed-rank test of their per-user test NDCG@10 against the item mean's
               (:func:`cofiviz.evaluation.significance.paired_test`).

A ceiling near zero says the search space holds no setting clearly above the item mean on that split, whatever
the selection; a ceiling well above ``picked`` says the selection is what loses. The ceiling's p-value is
optimistic (the setting was chosen on the same test part), so a ceiling that is not significant is strong
evidence that no setting tried is above the item mean.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

import cofiviz
from cofiviz import datasets
from cofiviz.util.errors import ModelFitError
from cofiviz.metrics.scorer import per_user_metrics
from cofiviz.models import get_model_class, ranking_models
from cofiviz.protocols import lcr_weak
from cofiviz.search import anchors, trial_params, tune
from cofiviz.search.space import sample
from cofiviz.evaluation.significance import paired_test

METRIC = "ndcg@10"
VALID_METRICS = ("ndcg@10", "ndcg@5", "ap")


def settings(klass, draws: int, seed: int) -> list[tuple[str, dict]]:
    """The configured model, its anchors (the item mean alone among them) and ``draws`` settings from its search
    space, in that order."""
    rng = np.random.default_rng(seed)
    space = getattr(klass, "search_space", {}) or {}
    out = [("configured", {})] + [("anchor", a) for a in anchors(klass)]
    return out + [("draw", sample(space, rng)) for _ in range(draws if space else 0)]


def mean_metric(model, ratings, metrics) -> dict:
    return {k: float(np.nanmean(v)) for k, v in per_user_metrics(model, ratings, list(metrics)).items()}


def summarise(trials: list[dict], itemmean_test: float, per_user: list | None = None,
              itemmean_per_user=None) -> dict:
    """``picked``, ``reference``, ``ceiling`` (each minus ``itemmean_test``) and ``rho`` of one split's trials.

    With ``per_user`` (each trial's per-user test values, aligned with ``itemmean_per_user``), also the paired
    tests of the picked and the ceiling settings against the item mean: ``{picked,ceiling}_{t,w}_p``.
    """
    valid = np.array([t["valid"][METRIC] for t in trials])
    test = np.array([t["test"] for t in trials])
    refs = [k for k, t in enumerate(trials) if t["kind"] in ("configured", "anchor")]
    ref = max(refs, key=lambda k: valid[k])
    rho = spearmanr(valid, test).correlation if len(trials) > 2 else float("nan")
    picked, best = int(np.argmax(valid)), int(np.argmax(test))
    out = {"picked": float(test[picked] - itemmean_test), "reference": float(test[ref] - itemmean_test),
           "ceiling": float(test[best] - itemmean_test), "rho": float(rho)}
    if per_user is not None:
        base = pd.Series(itemmean_per_user)
        for name, k in (("picked", picked), ("ceiling", best)):
            got = paired_test(pd.Series(per_user[k]), base, METRIC)
            out[f"{name}_t_p"], out[f"{name}_w_p"] = got["t_test_p"], got["wilcoxon_p"]
    return out


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=ranking_models(), help="default: the ranking models")
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
            tune(base, split.train, split.valid, budget=60, trials=60, seed=seed)
            im_users = per_user_metrics(base, split.test, [METRIC])[METRIC]
            im_test = float(np.nanmean(im_users))
            for name in args.models:
                klass = get_model_class(name)
                done, users, t0 = [], [], time.perf_counter()
                for kind, drawn in settings(klass, args.draws, seed):
                    try:
                        model = klass(**trial_params(klass, klass().get_params(), drawn, METRIC)).fit(
                            split.train, valid=split.valid)
                    except ModelFitError:  # a diverging setting is a failed trial, as in tune()
                        continue
                    users.append(per_user_metrics(model, split.test, [METRIC])[METRIC])
                    done.append({"model": name, "N": n, "seed": seed, "kind": kind, "params": repr(drawn),
                                 "valid": mean_metric(model, split.valid, VALID_METRICS),
                                 "test": float(np.nanmean(users[-1]))})
                trials += done
                row = {"model": name, "N": n, "seed": seed, "settings": len(done), "itemmean": im_test,
                       "seconds": time.perf_counter() - t0, **summarise(done, im_test, users, im_users)}
                rows.append(row)
                print(f"{name:9s} N={n:<3d} seed {seed}: {len(done):3d} settings in {row['seconds']:5.1f} s; minus the "
                      f"item mean ({im_test:.4f}): picked {row['picked']:+.4f}, reference {row['reference']:+.4f}, "
                      f"ceiling {row['ceiling']:+.4f}; ρ {row['rho']:.2f}; p (t, Wilcoxon) picked "
                      f"{row['picked_t_p']:.3f} {row['picked_w_p']:.3f}, ceiling {row['ceiling_t_p']:.3f} "
                      f"{row['ceiling_w_p']:.3f}", flush=True)
    print(f"\nmeans over seeds {args.seeds}, NDCG@10 on test minus the tuned item mean's; 'ceiling > 0 at p<.05': "
          f"the splits whose ceiling is above the item mean with both paired tests' p below 0.05\n"
          f"{'model':9s} {'N':>3} {'picked':>8} {'reference':>9} {'ceiling':>8} {'ρ':>5} {'ceiling > 0 at p<.05':>21}")
    for name in args.models:
        for n in args.ns:
            sel = [r for r in rows if r["model"] == name and r["N"] == n]
            m = {k: np.mean([r[k] for r in sel]) for k in ("picked", "reference", "ceiling", "rho")}
            sig = sum(r["ceiling"] > 0 and max(r["ceiling_t_p"], r["ceiling_w_p"]) < 0.05 for r in sel)
            print(f"{name:9s} {n:>3} {m['picked']:+8.4f} {m['reference']:+9.4f} {m['ceiling']:+8.4f} {m['rho']:5.2f} "
                  f"{f'{sig} of {len(sel)}':>21}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "trials": trials}, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
