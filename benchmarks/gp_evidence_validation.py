"""The Gaussian-process models with fixed hyper-parameters against the same models with them learned by evidence, on
validation: the comparison that chose each model's default form (``cofiviz.models.gp``).

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/gp_evidence_validation.py [--models gpr gpor cgpr cgpor]
        [--ns 10 20 50] [--seeds 0 1 2] [--json OUT]

The validation protocol keeps ``cofirank-table3``'s test users out of sight: the strong-generalization split of
MovieLens 100K (items with fewer than 50 ratings dropped, the 100 users with the most ratings tested) is made, and
its training users alone are split again the same way, so that *their* 100 heaviest users are folded in from N given
ratings and ranked. Each model is fitted on the rest in both forms (``hyperparameters="fixed"`` and ``"evidence"``,
its other parameters at their defaults, the collaborative ones for ``--max-iter`` EM iterations) and scored by
NDCG@10. One line per (model, N, seed) and a summary per model: the mean difference learned − fixed, and on how many
splits the learned form was ahead.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from cofiviz import evaluate
from cofiviz.datasets import movielens_100k
from cofiviz.models import get_model_class
from cofiviz.protocols import make

FORMS = ("fixed", "evidence")


def validation_split(ratings, n_given: int, seed: int):
    """The strong-generalization split of ``cofirank-table3``'s training users (its test users left out)."""
    outer = make("strong", ratings, n_given=n_given, seed=0)
    return make("strong", outer.train, n_given=n_given, seed=seed)


def run(models=("gpr", "gpor", "cgpr", "cgpor"), ns=(10, 20, 50), seeds=(0, 1, 2), max_iter: int = 20,
        evidence_iter: int | None = None, ratings=None, log=print) -> list[dict]:
    """One row per model, N, seed and form: ``model``, ``N``, ``seed``, ``form``, ``ndcg``, ``seconds``."""
    ratings = movielens_100k() if ratings is None else ratings
    rows = []
    for n in ns:
        for seed in seeds:
            split = validation_split(ratings, n, seed)
            for name in models:
                klass = get_model_class(name)
                for form in FORMS:
                    params = {"hyperparameters": form}
                    if klass.iterative:
                        params["max_iter"] = max_iter
                    if evidence_iter is not None:
                        params["evidence_iter"] = evidence_iter
                    t0 = time.perf_counter()
                    model = klass(**params).fit(split.train)
                    ndcg = float(evaluate(model, split, metrics=["ndcg@10"]).means["ndcg@10"])
                    rows.append({"model": name, "N": n, "seed": seed, "form": form, "ndcg": ndcg,
                                 "seconds": time.perf_counter() - t0})
                    if log is not None:
                        log(f"{name} N={n} seed={seed} {form}: NDCG@10 {ndcg:.4f} ({rows[-1]['seconds']:.1f} s)")
    return rows


def summary(rows: list[dict]) -> dict:
    """Per model: the mean of learned − fixed over the splits, and the splits where the learned form was ahead."""
    out = {}
    for name in dict.fromkeys(r["model"] for r in rows):
        pairs = {}
        for r in rows:
            if r["model"] == name:
                pairs.setdefault((r["N"], r["seed"]), {})[r["form"]] = r["ndcg"]
        diffs = np.array([p["evidence"] - p["fixed"] for p in pairs.values()])
        out[name] = {"mean_diff": float(diffs.mean()), "ahead": int((diffs > 0).sum()), "splits": len(diffs)}
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["gpr", "gpor", "cgpr", "cgpor"])
    p.add_argument("--ns", nargs="+", type=int, default=[10, 20, 50])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--max-iter", type=int, default=20, help="EM iterations of the collaborative models")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    rows = run(args.models, args.ns, args.seeds, args.max_iter)
    for name, s in summary(rows).items():
        print(f"{name}: learned − fixed {s['mean_diff']:+.4f} on average, learned ahead on {s['ahead']} of "
              f"{s['splits']} splits")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "summary": summary(rows)}, fh, indent=1)


if __name__ == "__main__":
    main()
