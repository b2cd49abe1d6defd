"""Benchmark: every ranking model at its defaults at Netflix size, beside the damped item mean and the planted
truth: do the defaults learn as the users grow?

``netflix_like(n)`` (``--netflix 1M 10M``) split as :mod:`bench_netflix_scale` splits it (``cofirank-weak``: ten
training ratings a user, seed 0; the split made in the process). Each ranking model
(:func:`cofiviz.models.ranking_models`, the models that declare the setting that reduces them to the item mean) at
its defaults, its fit stopped after ``--fit-budget`` seconds (its iterations so far kept; the table marks it), and
the damped item mean (``ItemMean`` at its defaults), NDCG@10 on every test rating beside the planted truth's (the
ranking by the noise-free planted scores: the ceiling). A default whose factors vanish as the users grow ranks as
the item mean does; one that diverges at a size is reported with the fit's own message. Each row records the
parameters it ran with (the suite checks that the shipped rows ran at today's defaults).

On MovieLens 100K the same question, on splits that chose nothing, is ``bench_tuning_goal.py --mode defaults
--seeds 3 4 5``.

Usage::

    .venv/bin/python benchmarks/bench_defaults.py --netflix 1M 10M [--fit-budget 600] [--json OUT]
    .venv/bin/python benchmarks/bench_defaults.py --netflix 100M --models lcr --into benchmarks/bench_defaults.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from cofiviz.util.errors import ModelFitError  # noqa: E402
from cofiviz.evaluation import evaluate  # noqa: E402
from cofiviz.models import get_model_class, ranking_models  # noqa: E402

METRIC = "ndcg@10"
BASELINE = "itemmean"


def _fit(name: str, train, budget: float | None = None):
    """``name`` at its defaults fitted on ``train``; with ``budget``, stopped after the iteration that passes that
    many seconds. Returns the model, the fit's seconds and whether the budget stopped it."""
    model = get_model_class(name)()
    stopped = []

    def over(info) -> bool:
        if budget is not None and info.elapsed > budget:
            stopped.append(True)
            return True
        return False

    t0 = time.perf_counter()
    model.fit(train, callbacks=[over])
    return model, time.perf_counter() - t0, bool(stopped)


def netflix(sizes, models, budget: float) -> list[dict]:
    """Each ranking model at its defaults on ``netflix_like`` of each size, beside the item mean and the truth."""
    import bench_netflix_scale as ns
    from cofiviz.metrics import PairScores, mean_metrics

    rows = []
    for size in sizes:
        ratings, split, _, _ = ns.make_split(ns.SIZES[size])
        test = split.test
        truth = PairScores(test, ratings.truth.score(test.user_ids[test.users], test.item_ids[test.items]))
        truth_value = float(mean_metrics(truth, test, [METRIC])[METRIC])
        del ratings, truth
        for name in [BASELINE, *models]:
            try:
                model, seconds, stopped = _fit(name, split.train, budget)
            except ModelFitError as exc:       # a default that diverges at this size: the row says how
                rows.append({"size": size, "model": name, "truth": truth_value, "diverged": str(exc),
                             "params": get_model_class(name)().get_params()})
                print(f"  {size} {name:9s} diverged: {exc}", flush=True)
                continue
            value = float(evaluate(model, split, metrics=[METRIC]).means[METRIC])
            history = getattr(model, "history_", []) or []
            row = {"size": size, "model": name, "value": value, "truth": truth_value, "seconds": seconds,
                   "iterations": len(history), "stopped_by_budget": stopped, "params": model.get_params()}
            rows.append(row)
            print(f"  {size} {name:9s} {value:.4f} (truth {truth_value:.4f}; {len(history)} iterations in "
                  f"{seconds:.0f} s{', stopped by the budget' if row['stopped_by_budget'] else ''})", flush=True)
        base = next(r["value"] for r in rows if r["size"] == size and r["model"] == BASELINE)
        for r in rows:
            if r["size"] == size and "value" in r:
                r["item_mean"] = base
                r["diff"] = r["value"] - base
    return rows


def markdown(result: dict) -> str:
    """The README's table of a run: each model's NDCG@10 and its difference from the item mean's, per size."""
    lines = []
    nf = result.get("netflix") or []
    if nf:
        sizes = list(dict.fromkeys(r["size"] for r in nf))
        lines += ["| model | " + " | ".join(f"{s}: NDCG@10 (− item mean)" for s in sizes) + " |",
                  "|---" * (len(sizes) + 1) + "|"]
        for name in dict.fromkeys(r["model"] for r in nf):
            cells = []
            for s in sizes:
                r = next((r for r in nf if r["model"] == name and r["size"] == s), None)
                cells.append("" if r is None else "not run" if "skipped" in r else "diverged" if "diverged" in r else
                             f"{r['value']:.4f} ({r['diff']:+.4f})" + (" †" if r["stopped_by_budget"] else ""))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        truth = {s: next(r["truth"] for r in nf if r["size"] == s and "truth" in r) for s in sizes}
        lines.append("| planted truth | " + " | ".join(f"{truth[s]:.4f}" for s in sizes) + " |")
        if any(r.get("stopped_by_budget") for r in nf):
            lines += ["", f"† stopped by the {result['fit_budget']:.0f}-s budget of a fit, before its own end."]
        lines += [f"Not run: {r['model']} at {r['size']}: {r['skipped']}" for r in nf if "skipped" in r]
        lines += [f"Diverged: {r['model']} at {r['size']}: {r['diverged']}" for r in nf if "diverged" in r]
    return "\n".join(lines) + "\n"


def merged(earlier: dict, later: dict) -> dict:
    """``earlier``'s run with ``later``'s rows in place of the rows of the same size and model (the others kept),
    each row's difference from the item mean taken again from the merged rows."""
    new = {(r["size"], r["model"]) for r in later["netflix"]}
    rows = [r for r in earlier["netflix"] if (r["size"], r["model"]) not in new] + list(later["netflix"])
    sizes = list(dict.fromkeys([r["size"] for r in earlier["netflix"]] + [r["size"] for r in later["netflix"]]))
    models = list(dict.fromkeys([BASELINE, *earlier["models"], *later["models"]]))
    rows.sort(key=lambda r: (sizes.index(r["size"]), models.index(r["model"])))
    for size in sizes:
        base = next((r["value"] for r in rows if r["size"] == size and r["model"] == BASELINE), None)
        for r in rows:
            if r["size"] == size and "value" in r and base is not None:
                r["item_mean"], r["diff"] = base, r["value"] - base
    return {**earlier, "models": [m for m in models if m != BASELINE], "netflix": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--netflix", nargs="+", default=["1M", "10M"], help="netflix_like sizes (1M, 10M, 100M)")
    ap.add_argument("--models", nargs="+", default=None, help="default: every ranking model")
    ap.add_argument("--fit-budget", type=float, default=600.0, help="seconds a Netflix-size fit may take")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--into", type=Path, default=None,
                    help="an earlier run's JSON: this run's rows replace its rows of the same size and model")
    args = ap.parse_args(argv)
    models = args.models or ranking_models()
    result = {"metric": METRIC, "protocol": "cofirank-weak", "n_train": 10, "models": models,
              "fit_budget": args.fit_budget, "netflix": netflix(args.netflix, models, args.fit_budget)}
    if args.into:
        result = merged(json.loads(args.into.read_text()), result)
        args.into.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
