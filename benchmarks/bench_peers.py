"""cofiviz beside the libraries a user would otherwise pick for the same models: seconds per epoch and quality.

    .venv/bin/pip install -e ".[peers]"      # Surprise, LensKit, Cornac (LensKit needs PyTorch)
    .venv/bin/python benchmarks/bench_peers.py [--data movielens-1m] [--pairs NAME ...] [--repeats 3]
        [--epochs E] [--users U] [--threads 1 default] [--cofirank-binary PATH] [--json OUT]
    .venv/bin/python benchmarks/bench_peers.py --markdown OUT.json       # the README's table of a --json file

Each pair fits the same model on both sides with the same factors, epochs and regularisation, on 90 % of each user's
ratings of MovieLens 1M (``protocols.fixed_ratio``, seed 0). cofiviz's side is the model as a user constructs it,
with no speed flag: its defaults are its fastest forms (``benchmarks/bench_forms.py``). Every pair runs under each
``--threads`` setting: ``1``, one thread each side (numba, BLAS and OpenMP through threadpoolctl, PyTorch), and
``default``, each library at the machine's default number of threads. The two sides are run alternately
``--repeats`` times in this one process (cofiviz, peer, cofiviz, peer, ...), so that both see the same load, run
``k`` seeding both sides with ``k``; numba's cache is warmed by a first small fit that is not timed. A side's time
is its quickest fit divided by its epochs. Quality is one shared evaluator for both sides: each side predicts the
test pairs, cofiviz's NDCG@10 (gain 2^r − 1, :mod:`cofiviz.metrics`) ranks each user's test items by those
predictions, and a side's quality is the mean over its runs (one per seed).

The pairs (a peer that is not installed is reported as skipped):

``regsvd-sgd/surprise-svd``      RegSVD's SGD against Surprise's ``SVD`` (Funk's biased SGD), 100 factors,
                                 γ = 0.005, λ = 0.02 (Surprise's defaults), epochs ``--epochs``; both sides start from
                                 N(0, 0.01²) factors (Cornac's start; Surprise's default is 0.1², cofiviz's too, and
                                 both rank a little lower from it).
``regsvd-sgd/cornac-svd``        RegSVD's SGD against Cornac's ``SVD`` (biased SGD, 32-bit), the same settings.
``svdpp/surprise-svdpp``         SVD++ against Surprise's ``SVDpp``, 20 factors, γ = 0.007, λ = 0.02, a quarter of the
                                 epochs.
``nmf/surprise-nmf``             NMF against Surprise's ``NMF``, 15 factors, Surprise's λ_u = λ_i = 0.06. Surprise
                                 multiplies each row's λ by its number of ratings; cofiviz's NMF penalises each row
                                 once, so its λ is 0.06 times the mean number of ratings of a row.
``nmf/cornac-nmf``               NMF against Cornac's ``NMF`` (Surprise's algorithm in Cornac), the same settings.
``regsvd-als/lenskit-biasedmf``  RegSVD's ALS (``solver="als"``; λ times each row's ratings,
                                 ``reg_weighting="ratings"``) against LensKit's ``BiasedMFScorer`` (exact solves in
                                 32-bit floats, λ weighted alike, its biases learned once beforehand), 50 factors,
                                 λ = 0.1.
``cofirank/authors``             CofiRank against the authors' C++ program (``--cofirank-binary``; how to build it:
                                 ``benchmarks/authors_cofirank.py``) on CofiRank's weak generalization of MovieLens 1M,
                                 N = 50, at the paper's settings (d = 100, λ = 10, 31 iterations). Seconds per
                                 iteration; the program's own wall time (it runs on one thread).

Two more rows time RegSVD's slower forms, which a user can ask for, against the same peers:
``regsvd-sgd64/surprise-svd`` (``dtype="float64", sgd_loss="after"``: 64-bit floats, one chain of additions per dot
product, a pass over the ratings after each epoch for its error) and ``regsvd-als-exact/lenskit-biasedmf``
(``als_solve="cholesky"``: exact solves of each row's normal equations); ``benchmarks/bench_peers_bounds.py`` times
their parts.

Peers checked and not paired: implicit (its ALS, BPR and logistic MF learn from implicit feedback; none is a cofiviz
model) and Cornac's ``MMMF`` (a BPR-style hinge loss on implicit feedback, not the ordinal MMMF of Rennie & Srebro
that cofiviz implements). RecBole (its model list read from its source, not installed): its general recommenders are
implicit-feedback and neural models (its ``ALS`` is implicit's; BPR, NeuMF, DMF, graph models, autoencoders) and its
``Pop`` counts interactions, which is no fit to time; none is a model cofiviz implements.

``--json OUT`` writes one row per pair and threads setting: ``pair``, ``label``, ``threads`` (``"1"`` or
``"default"``), ``cofiviz_s`` and ``peer_s`` (seconds per epoch),
``ratio`` (peer / cofiviz: above 1, cofiviz is faster), ``cofiviz_ndcg``, ``peer_ndcg``, ``versions``, the runs'
seconds and NDCG@10, or ``skipped`` with the reason (and cofiviz's side alone, where its peer is not installed).
:func:`markdown` turns such rows into the table of the README's performance section, which
``benchmarks/bench_peers.json`` holds (``tests/test_bench_peers.py`` checks that the README shows that file's
table).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

import cofiviz
from cofiviz import datasets
from cofiviz.metrics.scorer import PairScores, per_user_metrics
from cofiviz.models import NMF, CofiRank, RegSVD, SVDpp
from cofiviz.protocols import cofirank_weak, fixed_ratio

METRIC = "ndcg@10"


def ndcg(split, scores: np.ndarray) -> float:
    """Mean NDCG@10 over the test users of the ranking of their test items by ``scores`` (one per test pair)."""
    return float(np.nanmean(per_user_metrics(PairScores(split.test, scores), split.test, [METRIC])[METRIC]))


@dataclass
class Side:
    """One side of a pair: ``fit(split, seed)`` returns an object ``predict(split)`` turns into test-pair scores;
    ``params``: the settings of cofiviz's model (empty for a peer)."""

    fit: Callable
    predict: Callable
    epochs: int
    params: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ cofiviz sides
def _cofiviz(klass, **params) -> Side:
    def fit(split, seed):
        return klass(**params, seed=seed).fit(split.train)

    def predict(model, split):
        return model.score(split.test.users, split.test.items)
    return Side(fit, predict, int(params["max_iter"]), dict(params))


# ------------------------------------------------------------------------------------------------ Surprise sides
def _surprise_trainset(split):
    import pandas as pd
    from surprise import Dataset, Reader

    t = split.train
    frame = pd.DataFrame({"u": t.users, "i": t.items, "r": t.ratings})
    lo, hi = float(t.ratings.min()), float(t.ratings.max())
    return Dataset.load_from_df(frame, Reader(rating_scale=(lo, hi))).build_full_trainset()


def _surprise(algo_name: str, epochs: int, **params) -> Side:
    import surprise

    cache: dict = {}

    def fit(split, seed):
        if id(split) not in cache:   # the trainset is built once per split, outside the timing's repeats
            cache.clear()
            cache[id(split)] = _surprise_trainset(split)
        algo = getattr(surprise, algo_name)(n_epochs=epochs, random_state=seed, **params)
        algo.fit(cache[id(split)])
        return algo

    def predict(algo, split):
        return np.array([algo.predict(int(u), int(i), clip=False).est
                         for u, i in zip(split.test.users, split.test.items)])
    return Side(fit, predict, epochs)


# ------------------------------------------------------------------------------------------------ LensKit side
def _lenskit_biasedmf(epochs: int, features: int, reg: float) -> Side:
    import pandas as pd
    from lenskit.als import BiasedMFScorer
    from lenskit.data import ItemList, from_interactions_df
    from lenskit.training import TrainingOptions

    cache: dict = {}

    def fit(split, seed):
        if id(split) not in cache:
            cache.clear()
            t = split.train
            cache[id(split)] = from_interactions_df(pd.DataFrame({"user_id": t.users, "item_id": t.items,
                                                                 "rating": t.ratings}))
        scorer = BiasedMFScorer(embedding_size=features, epochs=epochs, regularization=reg)
        scorer.train(cache[id(split)], TrainingOptions(rng=seed))
        return scorer

    def predict(scorer, split):
        out = np.empty(len(split.test))
        t = split.test
        for u in np.unique(t.users):
            rows = np.flatnonzero(t.users == u)
            got = scorer(query=int(u), items=ItemList(item_ids=t.items[rows]))
            out[rows] = got.scores()
        # an item or user the model has no embedding for scores NaN: the global mean, as Surprise predicts it
        return np.where(np.isnan(out), float(np.mean(split.train.ratings)), out)
    return Side(fit, predict, epochs)


# ------------------------------------------------------------------------------------------------ Cornac side
def _cornac_svd(epochs: int, k: int, lr: float, reg: float) -> Side:
    import cornac
    from cornac.data import Dataset

    def fit(split, seed):
        t = split.train
        data = Dataset.from_uir(list(zip(t.users.astype(str), t.items.astype(str), t.ratings.astype(float))),
                                seed=seed)
        model = cornac.models.SVD(k=k, max_iter=epochs, learning_rate=lr, lambda_reg=reg, seed=seed, verbose=False)
        model.fit(data)
        return model

    return Side(fit, _cornac_predict, epochs)


def _cornac_nmf(epochs: int, k: int, reg: float) -> Side:
    import cornac
    from cornac.data import Dataset

    def fit(split, seed):
        t = split.train
        data = Dataset.from_uir(list(zip(t.users.astype(str), t.items.astype(str), t.ratings.astype(float))),
                                seed=seed)
        model = cornac.models.NMF(k=k, max_iter=epochs, lambda_u=reg, lambda_v=reg, use_bias=False, seed=seed,
                                  verbose=False)
        model.fit(data)
        return model
    return Side(fit, _cornac_predict, epochs)


def _cornac_predict(model, split):
    """Cornac's score of each test pair; the global mean where the user or item was not trained."""
    uid, iid = model.train_set.uid_map, model.train_set.iid_map
    out = np.full(len(split.test), model.train_set.global_mean)
    for p, (u, i) in enumerate(zip(split.test.users.astype(str), split.test.items.astype(str))):
        if u in uid and i in iid:
            out[p] = model.score(uid[u], iid[i])
    return out


# ------------------------------------------------------------------------------------------------ the pairs
def _versions(*names: str) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"cofiviz": cofiviz.__version__}
    for n in names:
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            out[n] = None
    return out


#: each pair's row in the README's table
LABELS = {
    "regsvd-sgd/surprise-svd": "RegSVD SGD vs Surprise `SVD` (100 factors)",
    "regsvd-sgd/cornac-svd": "RegSVD SGD vs Cornac `SVD` (100 factors)",
    "svdpp/surprise-svdpp": "SVD++ vs Surprise `SVDpp` (20 factors)",
    "nmf/surprise-nmf": "NMF vs Surprise `NMF` (15 factors)",
    "nmf/cornac-nmf": "NMF vs Cornac `NMF` (15 factors)",
    "regsvd-als/lenskit-biasedmf": "RegSVD ALS vs LensKit `BiasedMFScorer` (50 factors)",
    "cofirank/authors": "CofiRank vs the authors' C++ program (weak, N = 50, seconds per iteration)",
    "regsvd-sgd64/surprise-svd": "opt-in: RegSVD SGD, `dtype=\"float64\", sgd_loss=\"after\"` vs Surprise `SVD`",
    "regsvd-als-exact/lenskit-biasedmf": "opt-in: RegSVD ALS, `als_solve=\"cholesky\"` vs LensKit `BiasedMFScorer`",
}
#: the rows that time a slower form a user asks for, not the model as constructed
OPT_IN = ("regsvd-sgd64/surprise-svd", "regsvd-als-exact/lenskit-biasedmf")
#: the threads settings: one per side, or each library's default
THREADS = ("1", "default")


def pairs(epochs: int, mean_count: float) -> dict[str, tuple[Callable[[], Side], Callable[[], Side], tuple]]:
    """name -> (cofiviz side, peer side, the peer's distribution names); the sides are built lazily, so that a
    peer's import error skips its pair only. SVD++ runs a quarter of the epochs (Surprise's takes seconds per
    epoch on MovieLens 1M). The SGD pairs start both sides from N(0, 0.01²) factors, Cornac's own start (Surprise's
    ``init_std_dev=0.01``, cofiviz's ``init_scale=0.01``)."""
    short = max(1, epochs // 4)
    sgd = {"rank": 100, "lr": 0.005, "reg": 0.02, "reg_bias": 0.02, "max_iter": epochs, "tol": 0.0,
           "init_scale": 0.01}
    surprise_svd = {"n_factors": 100, "lr_all": 0.005, "reg_all": 0.02, "init_std_dev": 0.01}
    als = {"rank": 50, "solver": "als", "reg": 0.1, "reg_bias": 0.1, "max_iter": epochs, "tol": 0.0}
    return {
        "regsvd-sgd/surprise-svd": (
            lambda: _cofiviz(RegSVD, **sgd),
            lambda: _surprise("SVD", epochs, **surprise_svd), ("scikit-surprise",)),
        "regsvd-sgd/cornac-svd": (
            lambda: _cofiviz(RegSVD, **sgd),
            lambda: _cornac_svd(epochs, 100, 0.005, 0.02), ("cornac",)),
        "svdpp/surprise-svdpp": (
            lambda: _cofiviz(SVDpp, rank=20, lr=0.007, reg=0.02, reg_bias=0.02, max_iter=short, tol=0.0),
            lambda: _surprise("SVDpp", short, n_factors=20, lr_all=0.007, reg_all=0.02), ("scikit-surprise",)),
        "nmf/surprise-nmf": (
            lambda: _cofiviz(NMF, rank=15, reg=0.06 * mean_count, max_iter=epochs, tol=0.0),
            lambda: _surprise("NMF", epochs, n_factors=15, reg_pu=0.06, reg_qi=0.06), ("scikit-surprise",)),
        "nmf/cornac-nmf": (
            lambda: _cofiviz(NMF, rank=15, reg=0.06 * mean_count, max_iter=epochs, tol=0.0),
            lambda: _cornac_nmf(epochs, 15, 0.06), ("cornac",)),
        "regsvd-als/lenskit-biasedmf": (
            lambda: _cofiviz(RegSVD, **als),
            lambda: _lenskit_biasedmf(epochs, 50, 0.1), ("lenskit", "torch")),
        "regsvd-sgd64/surprise-svd": (
            lambda: _cofiviz(RegSVD, **sgd, dtype="float64", sgd_loss="after"),
            lambda: _surprise("SVD", epochs, **surprise_svd), ("scikit-surprise",)),
        "regsvd-als-exact/lenskit-biasedmf": (
            lambda: _cofiviz(RegSVD, **als, als_solve="cholesky"),
            lambda: _lenskit_biasedmf(epochs, 50, 0.1), ("lenskit", "torch")),
    }


def time_pair(ours: Side, peer: Side, split, repeats: int) -> dict:
    """Alternate the two sides ``repeats`` times, run ``k`` fitting both with seed ``k``: the quickest fit of each,
    per epoch, and each side's quality, the mean NDCG@10 of its fits (one per seed)."""
    seconds = {"cofiviz": [], "peer": []}
    quality = {"cofiviz": [], "peer": []}
    for seed in range(repeats):
        for name, side in (("cofiviz", ours), ("peer", peer)):
            t0 = time.perf_counter()
            model = side.fit(split, seed)
            seconds[name].append(time.perf_counter() - t0)
            quality[name].append(ndcg(split, side.predict(model, split)))
    c_s, p_s = min(seconds["cofiviz"]) / ours.epochs, min(seconds["peer"]) / peer.epochs
    return {"cofiviz_s": c_s, "peer_s": p_s, "ratio": p_s / c_s,
            "cofiviz_ndcg": float(np.mean(quality["cofiviz"])), "peer_ndcg": float(np.mean(quality["peer"])),
            "cofiviz_runs": seconds["cofiviz"], "peer_runs": seconds["peer"],
            "cofiviz_ndcg_runs": quality["cofiviz"], "peer_ndcg_runs": quality["peer"]}


def time_side(ours: Side, split, repeats: int) -> dict:
    """cofiviz's side alone (its peer is not installed): its quickest fit per epoch and its mean quality."""
    runs, quality = [], []
    for seed in range(repeats):
        t0 = time.perf_counter()
        model = ours.fit(split, seed)
        runs.append(time.perf_counter() - t0)
        quality.append(ndcg(split, ours.predict(model, split)))
    return {"cofiviz_s": min(runs) / ours.epochs, "cofiviz_ndcg": float(np.mean(quality)), "cofiviz_runs": runs,
            "cofiviz_ndcg_runs": quality}


def cofirank_pair(binary: str, ratings, repeats: int) -> dict:
    """CofiRank against the authors' program on CofiRank's weak generalization, N = 50, seed 0, both in the
    program's form at the paper's settings (``benchmarks/authors_cofirank.py``); seconds per iteration, the program's
    own wall time."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import authors_cofirank as A

    split = cofirank_weak(ratings, n_train=50, seed=0)
    params = {**A.COFIVIZ_ORIGINAL_FORM["ndcg"], "seed": 0}
    iterations = int(params.get("max_iter", 31))
    seconds = {"cofiviz": [], "peer": []}
    ours = peer_ndcg = None
    CofiRank(**{**params, "max_iter": 2}).fit(cofirank_weak(ratings.take(ratings.users < 50), 10, 0).train)  # untimed
    for _ in range(repeats):
        t0 = time.perf_counter()
        model = CofiRank(**params).fit(split.train)
        seconds["cofiviz"].append(time.perf_counter() - t0)
        ours = model.score(split.test.users, split.test.items)
        with tempfile.TemporaryDirectory() as tmp:
            peer_ndcg, secs = A.run_authors(binary, split, "ndcg", "weak", Path(tmp))
        seconds["peer"].append(secs)
    c_s, p_s = min(seconds["cofiviz"]) / iterations, min(seconds["peer"]) / iterations
    return {"cofiviz_s": c_s, "peer_s": p_s, "ratio": p_s / c_s, "cofiviz_ndcg": ndcg(split, ours),
            "peer_ndcg": peer_ndcg, "cofiviz_runs": seconds["cofiviz"], "peer_runs": seconds["peer"]}


@contextlib.contextmanager
def threads(setting: str):
    """Run the block with one thread in numba, BLAS and OpenMP (threadpoolctl) and PyTorch (``"1"``), or with each
    library's default (``"default"``: numba's ``NUMBA_NUM_THREADS``, the pools' own sizes, PyTorch's start value)."""
    import numba
    from threadpoolctl import threadpool_limits

    try:
        import torch
    except ImportError:
        torch = None
    if setting not in THREADS:
        raise SystemExit(f"unknown threads setting {setting!r}; the settings are {list(THREADS)}")
    one = setting == "1"
    before = numba.get_num_threads(), (torch.get_num_threads() if torch else None)
    numba.set_num_threads(1 if one else numba.config.NUMBA_NUM_THREADS)
    if torch:
        torch.set_num_threads(1 if one else _TORCH_DEFAULT)
    try:
        with threadpool_limits(limits=1 if one else None):
            yield
    finally:
        numba.set_num_threads(before[0])
        if torch:
            torch.set_num_threads(before[1])


try:   # PyTorch's own number of threads, read before anything changes it
    import torch as _torch
    _TORCH_DEFAULT = _torch.get_num_threads()
except ImportError:
    _TORCH_DEFAULT = None


def run(data: str = "movielens-1m", names=None, repeats: int = 3, epochs: int = 20, users: int | None = None,
        cofirank_binary: str | None = None, thread_settings=THREADS, log=print) -> list[dict]:
    """Every pair (``names``: a subset) under each of ``thread_settings``, one row each; ``users`` keeps the first
    users only (a small slice)."""
    ratings = datasets.load(data)
    if users is not None:
        ratings = ratings.take(ratings.users < users)
    split = fixed_ratio(ratings, 0.9, seed=0)
    counts = np.concatenate([np.bincount(split.train.users), np.bincount(split.train.items)])
    mean_count = float(np.mean(counts[counts > 0]))
    table = pairs(epochs, mean_count)
    every = [n for n in table if n not in OPT_IN] + ["cofirank/authors"] + list(OPT_IN)
    names = every if names is None else list(names)
    unknown = [n for n in names if n not in every]
    if unknown:
        raise SystemExit(f"unknown pairs {unknown}; the pairs are {every}")
    rows = []
    for setting in thread_settings:
        with threads(setting):
            rows += [_row(name, setting, table, ratings, split, repeats, cofirank_binary, log) for name in names]
    return rows


def _row(name, setting, table, ratings, split, repeats, cofirank_binary, log) -> dict:
    """One pair's row under one threads setting."""
    row: dict = {"pair": name, "label": LABELS[name], "threads": setting}
    if name == "cofirank/authors":
        if cofirank_binary is None:
            row["skipped"] = "no --cofirank-binary (benchmarks/authors_cofirank.py says how to build it)"
        else:
            row.update(cofirank_pair(cofirank_binary, ratings, repeats), versions=_versions())
    else:
        make_ours, make_peer, dists = table[name]
        ours = make_ours()
        warm = fixed_ratio(ratings.take(ratings.users < 50), 0.9, seed=0)   # compile, load caches: untimed
        ours.fit(warm, 0)
        try:
            peer = make_peer()
        except ImportError as e:   # cofiviz's side alone, and the reason
            row["skipped"] = f"not installed: {e.name or e}"
            row.update(time_side(ours, split, repeats), versions=_versions())
        else:
            peer.fit(warm, 0)
            row.update(time_pair(ours, peer, split, repeats), versions=_versions(*dists))
    log(_line(row))
    return row


def markdown(rows: list[dict]) -> str:
    """The rows of a ``--json`` file as a Markdown table: pair, threads, seconds per epoch of both sides,
    peer / cofiviz, NDCG@10 of both sides and the versions (a pair whose peer was skipped shows the reason)."""
    lines = ["| pair | threads | cofiviz s/epoch | peer s/epoch | peer / cofiviz | NDCG@10 cofiviz / peer | "
             "peer version |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        label = r.get("label", r["pair"])
        threads_ = "one per side" if r["threads"] == "1" else "default"
        if "peer_s" not in r:
            ours = f"{r['cofiviz_s']:.4f}" if "cofiviz_s" in r else ""
            lines.append(f"| {label} | {threads_} | {ours} | skipped: {r['skipped']} | | | |")
            continue
        peers = ", ".join(f"{k} {v}" for k, v in r["versions"].items() if k != "cofiviz" and v) or "(built from source)"
        lines.append(f"| {label} | {threads_} | {r['cofiviz_s']:.4f} | {r['peer_s']:.4f} | {r['ratio']:.2f} | "
                     f"{r['cofiviz_ndcg']:.4f} / {r['peer_ndcg']:.4f} | {peers} |")
    return "\n".join(lines) + "\n"


def _line(row: dict) -> str:
    if "skipped" in row:
        ours = (f"cofiviz {row['cofiviz_s']:8.4f} s  NDCG@10 {row['cofiviz_ndcg']:.4f}  " if "cofiviz_s" in row
                else "")
        return f"{row['pair']:30s} threads {row['threads']:7s} {ours}peer skipped: {row['skipped']}"
    return (f"{row['pair']:30s} threads {row['threads']:7s} cofiviz {row['cofiviz_s']:8.4f} s  peer {row['peer_s']:8.4f} s  "
            f"peer/cofiviz {row['ratio']:6.2f}  NDCG@10 {row['cofiviz_ndcg']:.4f} / {row['peer_ndcg']:.4f}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="movielens-1m")
    p.add_argument("--pairs", nargs="+", default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--users", type=int, default=None, help="keep the first U users only (a small slice)")
    p.add_argument("--threads", nargs="+", default=list(THREADS), choices=THREADS,
                   help="one thread per side, each library's default, or both (default)")
    p.add_argument("--cofirank-binary", default=None)
    p.add_argument("--json", default=None)
    p.add_argument("--markdown", default=None, metavar="ROWS_JSON",
                   help="print the table of a --json file (nothing is run)")
    args = p.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())), end="")
        return
    rows = run(args.data, args.pairs, args.repeats, args.epochs, args.users, args.cofirank_binary, args.threads)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
