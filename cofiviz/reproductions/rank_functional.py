"""The rank-functional lab on MovieLens 100K: the experiments of the blog post *Designing the rank functional*.

The rank-1 problem
    "One of the annoying properties of the point-wise rank functional with the linear factorisation [...] is
    that [on] some datasets, the number of hidden features can be as little as 1 or 2. [...] just ranking
    items according to their popularity will do a good job." The post suggests testing "only [on] items
    which are not popular and are controversial (i.e., the rating variance/entropy is high among users).
    With more diversity, more features will be needed." :func:`rank1_experiments` fits CofiRank (NDCG loss),
    GCR (Log[M]) and RegSVD at latent dimension 1, 2, 5, 10, 20, 50, 100, with PopRec beside them, under

    ``all``            weak generalization (N = 20 training ratings per user, the rest ranked), every test
                       item;
    ``controversial``  the same split with the test part restricted to the 25 % of items (with >= 10
                       training ratings) whose training ratings have the highest variance, and to the users
                       left with at least 5 such test items (:func:`cofiviz.protocols.controversial_items`).

    :func:`rank1_table` and :func:`lift` are the post's two views; :func:`random_baseline` is the floor of
    the same test lists (only gains over the floor and over PopRec compare across the two protocols).

Side features and ties (the bilinear rank functional, :class:`cofiviz.models.Bilinear`)
    :func:`strong_experiment`: side features for new users on strong generalization (the 100 heaviest users
    folded in from 10 given ratings with the item side frozen): ``features`` = ``latent`` (one-hot ids),
    ``given`` (user age / gender / occupation and item genres / year only) and ``both``, with the listwise
    Plackett–Luce loss (λ = 0.05 and 0.3; also with user features only), Davidson's tie-aware loss and LCR's
    Log[M] surrogate; PopRec beside them. No validation part: both λ are shown, none is chosen on the test
    users. :func:`coldstart_experiment`: the same with 1 or 3 given ratings. :func:`ties_experiment`: the
    objectives compared on weak generalization (N = 20, 50): pairs of equal ratings used as ties or dropped
    (Rao–Kupper θ = 2, Davidson ν = 1), Plackett–Luce with Breslow's and Efron's tie rules, the
    ordered-partition likelihood that chooses each group of equal ratings as a whole (the model of the blog
    post's reference, Tran, Phung & Venkatesh, SDM 2011) with the mean and with the product potential
    (``pl_ties="partition"``, ``"partition_product"``), and the
    smoothed-rank NDCG loss (ApproxNDCG, the blog post's smoothed rank, γ = 0.3, 1, 3: no validation part,
    every γ is shown). Every fit runs a fixed number of iterations (no early stopping).

Each (model, setting, protocol, seed) is a cell of an :class:`~cofiviz.engine.experiment.Experiment`, so a
:class:`~cofiviz.engine.store.ResultsStore` keeps finished cells and an interrupted run resumes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..engine.experiment import Experiment, make_split
from ..metrics import score_lists

__all__ = ["DIMS", "MODELS", "PROTOCOLS", "rank1_experiments", "rank1_table", "random_baseline", "lift", "COMMON",
           "strong_experiment", "coldstart_experiment", "ties_experiment", "bilinear_table"]

DIMS = (1, 2, 5, 10, 20, 50, 100)

#: Model settings (the dimension is added per cell). CofiRank: the paper's NDCG loss and λ = 10 with
#: fewer outer iterations than its 31 (the ranking settles within ~10); GCR: Log[M], the library's
#: defaults; RegSVD: SGD with the library's defaults.
MODELS = {
    "cofirank": {"label": "CofiRank", "params": {"loss": "ndcg", "reg": 10.0, "max_iter": 10,
                                                       "item_prior": "none", "init": "uniform",
                                                       "reg_users": None}},
    "gcr": {"label": "GCR", "params": {"loss": "log_m", "lr": 0.1, "reg": 0.1, "max_iter": 100, "patience": 0}},
    "regsvd": {"label": "RegSVD", "params": {"max_iter": 30}},
}

PROTOCOLS = {
    "all": {"name": "weak", "n_train": 20},
    "controversial": {"name": "controversial", "base": "weak", "n_train": 20, "measure": "variance",
                      "top_fraction": 0.25, "min_item_count": 10, "min_test_items": 5},
}


def rank1_experiments(protocol: str, dims=DIMS, models=tuple(MODELS), seeds=(0,)):
    """The :class:`~cofiviz.engine.experiment.Experiment` of one protocol: each model at each dimension, and PopRec."""
    specs = [{"model": "poprec", "label": "PopRec"}]
    for name in models:
        spec = MODELS[name]
        specs.append({"model": name, "label": spec["label"], "params": {**spec["params"], "rank": list(dims)}})
    return Experiment(specs, data="movielens-100k", protocol=dict(PROTOCOLS[protocol]), seeds=list(seeds),
                      metrics=["ndcg@10"], trace={"parts": ["train"], "metrics": ["ndcg@10"], "every": 1000},
                      name=f"rank1-{protocol}")


def rank1_table(results, dims=DIMS) -> pd.DataFrame:
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


#: Every bilinear fit: rank 10, 200 AdaGrad steps of base rate 0.2, no early stopping. λ = 0.3 is where the
#: latent factors stop overfitting 20 ratings per user on weak generalization (λ ≤ 0.1 overfits); the strong
#: table shows λ = 0.05 beside it.
COMMON = {"rank": 10, "max_iter": 200, "lr": 0.2, "reg": 0.3, "reg_bias": 0.3, "tol": 0.0}


def strong_experiment(seeds=(0,)):
    models = [{"model": "poprec", "label": "PopRec"},
              {"model": "bilinear", "label": "PL", "params": {**COMMON, "loss": "plackett_luce", "reg": [0.05, 0.3],
                                                              "features": ["latent", "given", "both"]}},
              {"model": "bilinear", "label": "PL, user features only",
               "params": {**COMMON, "loss": "plackett_luce", "reg": [0.05, 0.3], "features": ["given", "both"],
                          "item_features": "none"}}]
    for loss in ("davidson", "log_m"):
        models.append({"model": "bilinear", "label": loss,
                       "params": {**COMMON, "loss": loss, "features": ["latent", "both"]}})
    return Experiment(models, data="movielens-100k", protocol={"name": "strong", "n_given": 10}, seeds=list(seeds),
                      metrics=["ndcg@10", "ap"], trace={"parts": ["train"], "every": 1000}, name="bilinear-strong")


def coldstart_experiment(seeds=(0,)):
    pl = {**COMMON, "loss": "plackett_luce"}
    models = [{"model": "poprec", "label": "PopRec"},
              {"model": "bilinear", "label": "PL", "params": {**pl, "features": ["latent", "both"]}},
              {"model": "bilinear", "label": "PL, user features only",
               "params": {**pl, "features": ["given", "both"], "item_features": "none"}}]
    return Experiment(models, data="movielens-100k", protocol={"name": "strong", "n_given": [1, 3]},
                      seeds=list(seeds), metrics=["ndcg@10", "ap"], trace={"parts": ["train"], "every": 1000},
                      name="bilinear-coldstart")


def ties_experiment(seeds=(0,)):
    lat = {**COMMON, "features": "latent"}
    models = [{"model": "poprec", "label": "PopRec"},
              {"model": "bilinear", "label": "Rao-Kupper", "params": {**lat, "loss": "rao_kupper", "theta": 2.0,
                                                                        "ties": ["use", "drop"]}},
              {"model": "bilinear", "label": "Davidson", "params": {**lat, "loss": "davidson", "nu": 1.0,
                                                                      "ties": ["use", "drop"]}},
              {"model": "bilinear", "label": "Plackett-Luce", "params": {**lat, "loss": "plackett_luce",
                                                                           "pl_ties": ["breslow", "efron"]}},
              {"model": "bilinear", "label": "Ordered partition", "params": {**lat, "loss": "plackett_luce",
                                                                               "pl_ties": ["partition",
                                                                                           "partition_product"]}},
              {"model": "bilinear", "label": "Smoothed rank", "params": {**lat, "loss": "smoothed_rank",
                                                                           "gamma": [0.3, 1.0, 3.0]}}]
    return Experiment(models, data="movielens-100k", protocol={"name": "weak", "n_train": [20, 50]},
                      seeds=list(seeds), metrics=["ndcg@10", "ap"], trace={"parts": ["train"], "every": 1000},
                      name="bilinear-ties")


def bilinear_table(results, columns: list[str]) -> pd.DataFrame:
    r = results.results
    r = r[r["part"] == "test"].copy()
    for c in columns:
        r[c] = r[c].astype(object).where(r[c].notna(), "-").astype(str) if c in r else "-"
    g = r.groupby(["label"] + columns + ["metric"], sort=False)["value"].agg(["mean", "std", "count"]).reset_index()
    g["value"] = [f"{m:.4f}" if c < 2 else f"{m:.4f} ± {s:.4f}" for m, s, c in zip(g["mean"], g["std"], g["count"])]
    return g.pivot_table(index=["label"] + columns, columns="metric", values="value", aggfunc="first", sort=False)
