"""The rank-1 problem (the rank-functional blog post, "The rank 1 problem"): NDCG@10 against the latent dimension.

"One of the annoying properties of the point-wise rank functional with the linear factorisation [...] is
that [on] some datasets, the number of hidden features can be as little as 1 or 2. [...] just ranking
items according to their popularity will do a good job." The post suggests testing "only [on] items which
are not popular and are controversial (i.e., the rating variance/entropy is high among users). With more
diversity, more features will be needed."

The experiment: CofiRank (NDCG loss), GCR (Log[M]) and RegSVD at latent dimension 1, 2, 5, 10, 20, 50, 100,
with PopRec beside them (it has no dimension), on MovieLens 100K under

``all``            weak generalization (:func:`cofiviz.protocols.weak_generalization`, N = 20 training
                   ratings per user, the rest ranked), every test item;
``controversial``  the same split with the test part restricted to the 25 % of items (with >= 10 training
                   ratings) whose training ratings have the highest variance, and to the users left with
                   at least 5 such test items (:func:`cofiviz.protocols.controversial_items`).

Each (model, dimension, protocol, seed) is one cell of an :class:`~cofiviz.experiment.Experiment`, so a
:class:`~cofiviz.store.ResultsStore` keeps finished cells and an interrupted run resumes.
:func:`table` and :func:`lift` turn the results into the post's two views; :func:`random_baseline` is
the floor of the same test lists.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .experiment import Experiment, make_split
from .metrics import score_lists

__all__ = ["DIMS", "MODELS", "PROTOCOLS", "experiments", "table", "random_baseline", "lift"]

DIMS = (1, 2, 5, 10, 20, 50, 100)

#: Model settings (the dimension is added per cell). CofiRank: the paper's NDCG loss and λ = 10 with
#: fewer outer iterations than its 31 (the ranking settles within ~10); GCR: Log[M], the library's
#: defaults; RegSVD: SGD with the library's defaults.
MODELS = {
    "cofirank": {"label": "CofiRank", "params": {"loss": "ndcg", "reg": 10.0, "max_iter": 10}},
    "gcr": {"label": "GCR", "params": {"loss": "log_m", "lr": 0.1, "reg": 0.1, "max_iter": 100, "patience": 0}},
    "regsvd": {"label": "RegSVD", "params": {"max_iter": 30}},
}

BASE = {"name": "weak", "n_train": 20}
PROTOCOLS = {
    "all": BASE,
    "controversial": {"name": "controversial", "base": "weak", "n_train": 20, "measure": "variance",
                      "top_fraction": 0.25, "min_item_count": 10, "min_test_items": 5},
}


def experiments(protocol: str, dims=DIMS, models=tuple(MODELS), seeds=(0,)):
    """The :class:`~cofiviz.experiment.Experiment` of one protocol: each model at each dimension, and PopRec."""
    specs = [{"model": "poprec", "label": "PopRec"}]
    for name in models:
        spec = MODELS[name]
        specs.append({"model": name, "label": spec["label"], "params": {**spec["params"], "rank": list(dims)}})
    return Experiment(specs, data="movielens-100k", protocol=dict(PROTOCOLS[protocol]), seeds=list(seeds),
                      metrics=["ndcg@10"], trace={"parts": ["train"], "metrics": ["ndcg@10"], "every": 1000},
                      name=f"rank1-{protocol}")


def table(results, dims=DIMS) -> pd.DataFrame:
    """Rows: latent dimension; columns: model labels (PopRec repeated); values ``mean`` (``± std``)."""
    r = results.results
    r = r[(r["part"] == "test") & (r["metric"] == "ndcg@10")].copy()
    r["rank"] = r.get("model.rank")
    g = r.groupby(["label", "rank"], dropna=False)["value"].agg(["mean", "std", "count"]).reset_index()
    out = pd.DataFrame(index=pd.Index(list(dims), name="dim"))
    for label, sub in g.groupby("label", sort=False):
        if sub["rank"].isna().all():
            row = sub.iloc[0]
            out[label] = _fmt(row["mean"], row["std"], row["count"])
        else:
            vals = {int(k): _fmt(m, s, c) for k, m, s, c in zip(sub["rank"], sub["mean"], sub["std"], sub["count"])}
            out[label] = [vals.get(d, "") for d in dims]
    cols = [c for c in ("PopRec", "CofiRank", "GCR", "RegSVD") if c in out.columns]
    return out[cols + [c for c in out.columns if c not in cols]]


def random_baseline(protocol: str, seeds=(0,), draws: int = 20) -> float:
    """Mean NDCG@10 of uniformly random orders of each test user's items, on the same splits (the floor)."""
    spec = dict(PROTOCOLS[protocol])
    name = spec.pop("name")
    vals = []
    for seed in seeds:
        t = make_split({"name": "movielens-100k"}, name, spec, seed).test
        rng = np.random.default_rng(1000 + seed)
        vals += [float(np.nanmean(score_lists(t.indptr, t.ratings, rng.random(len(t)), metrics=["ndcg@10"])["ndcg@10"]))
                 for _ in range(draws)]
    return float(np.mean(vals))


def lift(results, dims=DIMS) -> pd.DataFrame:
    """Model minus PopRec NDCG@10 (same seed, then averaged): where popularity stops being enough."""
    r = results.results
    r = r[(r["part"] == "test") & (r["metric"] == "ndcg@10")]
    pop = r[r["model"] == "poprec"].set_index("seed")["value"]
    r = r[r["model"] != "poprec"].copy()
    r["lift"] = r["value"].to_numpy() - pop.reindex(r["seed"]).to_numpy()
    g = r.groupby(["label", "model.rank"])["lift"].mean().unstack("label")
    g.index = g.index.astype(int).rename("dim")
    g = g.reindex(list(dims))
    return g[[c for c in ("CofiRank", "GCR", "RegSVD") if c in g.columns]].round(4)


def _fmt(mean, std, count) -> str:
    return f"{mean:.4f}" if count < 2 or pd.isna(std) else f"{mean:.4f} ± {std:.4f}"
