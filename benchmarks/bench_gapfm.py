"""GAPfm speed: time per iteration against training size, and adaptive selection against full updates.

``scaling``   (paper §5.3.2, Fig. 3) synthetic low-rank ratings with every user at ``--per-user`` ratings
              (the paper's "Given" folds; 50 by default), from 1M to 20M ratings (20,000 to 400,000 users,
              17,770 items as Netflix); seconds per iteration (best of iterations 2..k,
              ``monitor_loss=False``) split into the parallel user step (eq 10) and the item step (eq 11),
              and the slope of log(time) on log(ratings) (linear growth = 1; goal ≤ 1.1).
``adaptive``  (paper §5.3.3, Fig. 4, Table 3) Given 50: full item updates against adaptive selection of
              K = 20 items per user (and random selection of 20, the paper's control). Time per
              iteration on synthetic tables (``--adaptive-ratings``, 2M by default) where every user has
              50 (the paper's condition) or 200 ratings, with 1 and with all threads, and
              GAP@5 / NDCG@5 / P@5 on MovieLens 100K's top-N protocol at Given 50
              (``protocols.top_n``, 1000 sampled unrated items; the iteration chosen on a validation part
              carved from the held-out items, :func:`cofiviz.protocols.gapfm_top_n`).
``threads``   (paper §5.3.1, Fig. 2) time of the user step with 1, 2, ... threads.

Usage::

    nice -n 19 .venv/bin/python benchmarks/bench_gapfm.py scaling adaptive threads
    nice -n 19 .venv/bin/python benchmarks/bench_gapfm.py scaling --sizes 1e6 2e6 --iterations 2   # quick
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from cofiviz.engine.experiment import make_split
from cofiviz.models.gapfm import GAPfm, warmup
from cofiviz.search import best_index
from cofiviz.engine.trace import Trace


def _table(n_ratings: int, per_user: int, seed: int = 0):
    from cofiviz.datasets import synthetic

    n_users = max(1, int(n_ratings) // per_user)
    return synthetic("low_rank", n_users=n_users, n_items=17_770, n_ratings=n_users * per_user, user_skew=0.0,
                     min_user_ratings=per_user, seed=seed)


def _time_steps(train, iterations: int, **params) -> dict:
    """Seconds per iteration of GAPfm on ``train``: total, user step, item step (best of iterations 2..)."""
    from cofiviz.models import _gapfm_kernels as K
    from cofiviz.models.gapfm import GAPfm, _SELECTION

    model = GAPfm(max_iter=1, monitor_loss=False, **params)
    model.fit(train)                                   # setup + iteration 1 (caches, page faults)
    p = model._data
    lr, lam = float(model.learning_rate), float(model.reg)
    mode = _SELECTION[model.selection]
    user_t, item_t = [], []
    for _ in range(iterations):
        t0 = time.perf_counter()
        K.user_step(model.U_, model.V_, model.prior_, p.indptr, p.items, p.s, p.shift, p.scale, p.code, lr, lam, model._values)
        t1 = time.perf_counter()
        keys = model._key_rng.random(len(p.items)) if mode else np.zeros(len(p.items))
        order = model._order_rng.permutation(len(p.indptr) - 1).astype(np.int64)
        K.item_step_sequential(model.U_, model.V_, model.prior_, p.indptr, p.items, p.grades, p.s, p.shift, p.scale, p.code,
                               order, mode, int(model.n_selected), keys, p.ymax, lr, lam, model._lam_items)
        t2 = time.perf_counter()
        user_t.append(t1 - t0)
        item_t.append(t2 - t1)
    u, i = float(np.min(user_t)), float(np.min(item_t))          # best of: least disturbed by other load
    return {"user_step": u, "item_step": i, "total": u + i}


def bench_scaling(sizes, per_user, iterations, log) -> dict:
    import numba

    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        train = _table(int(n), per_user)
        gen = time.perf_counter() - t0
        res = _time_steps(train, iterations, rank=10)
        rows.append({"ratings": len(train), "users": int(train.n_users), **res, "generate_seconds": gen})
        log(f"  {len(train):>11,} ratings: {res['total']:.3f} s/iteration (user step {res['user_step']:.3f} s, "
            f"item step {res['item_step']:.3f} s)")
        del train
    x = np.log([r["ratings"] for r in rows])
    slope = {k: float(np.polyfit(x, np.log([r[k] for r in rows]), 1)[0]) for k in ("total", "user_step", "item_step")}
    print(f"\n### GAPfm time per iteration vs training size ({per_user} ratings per user, rank 10, "
          f"{numba.get_num_threads()} thread(s))\n")
    print("| ratings | users | s / iteration | user step (eq 10) | item step (eq 11) |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['ratings']:,} | {r['users']:,} | {r['total']:.3f} | {r['user_step']:.3f} | {r['item_step']:.3f} |")
    print(f"\nlog-log slope: total {slope['total']:.3f}, user step {slope['user_step']:.3f}, "
          f"item step {slope['item_step']:.3f} (goal ≤ 1.1)")
    return {"rows": rows, "slope": slope, "per_user": per_user, "threads": numba.get_num_threads()}


def bench_threads(n_ratings, per_user, iterations, log) -> dict:
    import numba

    train = _table(int(n_ratings), per_user)
    out = []
    top = numba.config.NUMBA_NUM_THREADS
    for th in sorted({1, 2, top}):
        numba.set_num_threads(th)
        res = _time_steps(train, iterations, rank=10)
        out.append({"threads": th, **res})
        log(f"  {th} thread(s): user step {res['user_step']:.3f} s")
    numba.set_num_threads(top)
    print(f"\n### Parallel user step ({len(train):,} ratings)\n")
    print("| threads | user step s | speed-up |")
    print("|---:|---:|---:|")
    for r in out:
        print(f"| {r['threads']} | {r['user_step']:.3f} | {out[0]['user_step'] / r['user_step']:.2f} |")
    return {"ratings": len(train), "rows": out}


def _topn_quality(seeds, K, log, extra_rates=(), max_iter: int = 150) -> dict:
    """GAP@5 / NDCG@5 / P@5 at Given 50 on MovieLens 100K for full, adaptive and random item updates
    (and adaptive at each learning rate of ``extra_rates``: it updates fewer items per iteration).

    Each variant is fitted on every seed's ``gapfm-top-n`` split for ``max_iter`` iterations with its
    validation and test parts traced; the iteration with the best validation GAP@5 (mean over seeds) is
    chosen with the rule of :mod:`cofiviz.search`, and its test values are reported."""
    splits = [make_split({"name": "movielens-100k"}, "gapfm-top-n", {"n_train": 50}, s) for s in seeds]
    metrics = ["gap@5", "ndcg@5", "p@5"]
    base = dict(rank=10, reg=0.1, learning_rate=0.02, user_weight="one", init_scale=0.01, max_iter=max_iter, patience=0)
    out = {}
    variants = [("full", {}), (f"adaptive K={K}", dict(selection="adaptive", n_selected=K)),
                (f"random K={K}", dict(selection="random", n_selected=K))]
    variants += [(f"adaptive K={K}, lr {lr:g}", dict(selection="adaptive", n_selected=K, learning_rate=lr))
                 for lr in extra_rates]
    for label, extra in variants:
        params = {**base, **extra}
        curves = []
        for seed, sp in zip(seeds, splits):
            trace = Trace({"valid": sp.valid, "test": sp.candidates("test")}, metrics, train=sp.train, threshold=5.0)
            GAPfm(seed=seed, **params).fit(sp.train, callbacks=[trace])
            curves.append(trace.wide())
        valid = np.mean([[row["valid_gap@5"] for row in c] for c in curves], axis=0)
        best = best_index(valid.tolist(), "gap@5")
        test = {m: [c[best][f"test_{m}"] for c in curves] for m in metrics}
        out[label] = {"params": params, "iteration": best + 1,
                      "test_mean": {m: float(np.mean(v)) for m, v in test.items()},
                      "test_std": {m: float(np.std(v)) for m, v in test.items()}}
        log(f"  {label}: GAP@5 {out[label]['test_mean']['gap@5']:.4f} (iteration {out[label]['iteration']})")
    return out


def bench_adaptive(n_ratings, K, iterations, seeds, log, list_lengths=(50, 200), extra_rates=(),
                   quality_only=False) -> dict:
    import numba

    top = numba.config.NUMBA_NUM_THREADS
    times = {}
    for per_user in (() if quality_only else list_lengths):
        train = _table(int(n_ratings), per_user)
        for th in sorted({1, top}):
            numba.set_num_threads(th)
            for label, extra in (("full", {}), (f"adaptive K={K}", dict(selection="adaptive", n_selected=K)),
                                 (f"random K={K}", dict(selection="random", n_selected=K))):
                t = times[(per_user, th, label)] = _time_steps(train, iterations, rank=10, **extra)
                log(f"  Given {per_user}, {th} thread(s) {label}: {t['total']:.3f} s/iteration")
        del train
    numba.set_num_threads(top)
    quality = _topn_quality(seeds, K, log, extra_rates)
    print(f"\n### Adaptive selection (time: synthetic, {int(n_ratings):,} ratings, every user with 'Given' ratings; "
          f"quality: MovieLens 100K top-N at Given 50, seeds {seeds})\n")
    if times:
        print("| Given | updates | threads | s / iteration | item step s | time saved |")
        print("|---:|---|---:|---:|---:|---:|")
    for (per_user, th, label), t in times.items():
        full = times[(per_user, th, "full")]["total"]
        print(f"| {per_user} | {label} | {th} | {t['total']:.3f} | {t['item_step']:.3f} | "
              f"{100 * (1 - t['total'] / full):.0f}% |")
    print("\n| updates (Given 50, MovieLens 100K top-N) | GAP@5 | NDCG@5 | P@5 | iteration |")
    print("|---|---:|---:|---:|---:|")
    for label, q in quality.items():
        m, sd = q["test_mean"], q["test_std"]
        print(f"| {label} | {m['gap@5']:.4f} ± {sd['gap@5']:.4f} | {m['ndcg@5']:.4f} | {m['p@5']:.4f} | "
              f"{q['iteration']} |")
    g_full, g_ada = quality["full"]["test_mean"]["gap@5"], quality[f"adaptive K={K}"]["test_mean"]["gap@5"]
    g_rnd = quality[f"random K={K}"]["test_mean"]["gap@5"]
    print(f"\nGAP@5 change with adaptive selection: {100 * (g_ada / g_full - 1):+.1f}% "
          "(paper: about −5%, 0.206 vs 0.216); with random selection of as many items: "
          f"{100 * (g_rnd / g_full - 1):+.1f}% (paper: random 19% below adaptive)")
    return {"ratings": int(n_ratings),
            "times": {f"Given {pu}, {th} threads, {label}": t for (pu, th, label), t in times.items()},
            "quality": {k: {kk: v[kk] for kk in ("params", "iteration", "test_mean", "test_std")}
                        for k, v in quality.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parts", nargs="+", choices=["scaling", "adaptive", "threads"])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e6, 2e6, 5e6, 10e6, 20e6])
    ap.add_argument("--per-user", type=int, default=50)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--adaptive-ratings", type=float, default=2e6)
    ap.add_argument("--threads-ratings", type=float, default=2e6)
    ap.add_argument("-K", type=int, default=20)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--adaptive-learning-rates", type=float, nargs="*", default=[0.05],
                    help="also run adaptive selection's quality at these learning rates (default 0.05)")
    ap.add_argument("--quality-only", action="store_true", help="adaptive: skip the timing part")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    warmup()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    out = {}
    if "scaling" in args.parts:
        out["scaling"] = bench_scaling(args.sizes, args.per_user, args.iterations, log)
    if "adaptive" in args.parts:
        out["adaptive"] = bench_adaptive(args.adaptive_ratings, args.K, args.iterations, args.seeds, log,
                                         extra_rates=args.adaptive_learning_rates, quality_only=args.quality_only)
    if "threads" in args.parts:
        out["threads"] = bench_threads(args.threads_ratings, args.per_user, args.iterations, log)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
