"""Speed and memory of CofiRank; a benchmark, not a timed test.

Cases
-----
``ml100k``     MovieLens 100K, CofiRank weak generalization N = 10, paper settings (d = 100, λ = 10,
               k = 10, 31 outer iterations), seeds 0-2: wall time of ``fit`` (numba compilation
               excluded and reported separately), the ratio to the authors' C++ program's own time on
               the same protocol, seconds per outer iteration, and NDCG@10 next to that program's and the
               paper's (the numbers :mod:`cofiviz.reproductions.cofirank` holds).
``eachmovie``  EachMovie-sized synthetic data (61,265 users × 1,623 items, 10 ratings per user): one
               outer iteration; target < 30 s and < 150 MB peak resident memory above the
               interpreter's baseline.
``netflix``    Netflix-sized synthetic data (480,189 users × 17,770 items, 20 ratings per user): one
               outer iteration, time and peak memory printed.

Run heavy cases niced on a shared machine::

    NUMBA_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/bench_cofirank.py ml100k
    NUMBA_NUM_THREADS=2 nice -n 19 .venv/bin/python benchmarks/bench_cofirank.py eachmovie

Memory is the peak resident set size sampled every 5 ms by a thread (``/proc/self/statm``), minus
the resident size measured right after ``import cofiviz`` (the interpreter's baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from cofiviz.reproductions.cofirank import AUTHORS_CODE, AUTHORS_CODE_SECONDS, TABLE2

ORIGINAL_SECONDS = AUTHORS_CODE_SECONDS["ndcg"][10]
ORIGINAL_NDCG = AUTHORS_CODE["ndcg"][10]
PAPER_NDCG = next(c.value for c in TABLE2 if (c.method, c.n_train) == ("CofiRank-NDCG", 10))


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRSS:
    """Samples the resident set size in a background thread; ``peak`` is the maximum seen."""

    def __init__(self, interval: float = 0.005):
        self.interval, self.peak, self._stop = interval, rss_mb(), threading.Event()

    def __enter__(self):
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb())
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_mb())


def cold_compile_seconds() -> float:
    """Seconds to compile CofiRank's kernels from scratch (fresh, empty numba cache dir)."""
    with tempfile.TemporaryDirectory() as d:
        code = ("import time; t=time.perf_counter(); from cofiviz.models import cofirank; cofirank.warmup(); "
                "print(time.perf_counter()-t)")
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "NUMBA_CACHE_DIR": d},
                             capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])


def bench_ml100k(seeds, params, compile_cold: bool) -> dict:
    import cofiviz
    from cofiviz.evaluation import mean_metrics
    from cofiviz.models import cofirank

    t0 = time.perf_counter()
    cofirank.warmup()
    warm = time.perf_counter() - t0
    ratings = cofiviz.datasets.movielens_100k()
    rows = []
    for seed in seeds:
        split = cofiviz.protocols.cofirank_weak(ratings, n_train=10, seed=seed)
        model = cofirank.CofiRank(seed=seed, **params)
        t0 = time.perf_counter()
        model.fit(split.train)
        fit = time.perf_counter() - t0
        ndcg = mean_metrics(model, split.test, ["ndcg@10"])["ndcg@10"]
        per_iter = [r["seconds"] for r in model.history_]
        rows.append({"seed": seed, "fit_seconds": fit, "ndcg@10": ndcg, "iterations": len(per_iter),
                     "seconds_per_iteration": float(np.mean(per_iter)),
                     "first_iteration_seconds": per_iter[0]})
        print(f"  seed {seed}: fit {fit:6.2f} s ({len(per_iter)} outer iterations, "
              f"{np.mean(per_iter) * 1000:.1f} ms each, first {per_iter[0] * 1000:.0f} ms)  NDCG@10 {ndcg:.4f}",
              flush=True)
    fit = float(np.mean([r["fit_seconds"] for r in rows]))
    ndcg = float(np.mean([r["ndcg@10"] for r in rows]))
    out = {"case": "ml100k", "params": params, "threads": _threads(), "warmup_seconds": warm,
           "fit_seconds_mean": fit, "ratio_to_original": fit / ORIGINAL_SECONDS, "ndcg@10_mean": ndcg,
           "original_ndcg@10": ORIGINAL_NDCG, "paper_ndcg@10": PAPER_NDCG, "runs": rows}
    if compile_cold:
        out["cold_compile_seconds"] = cold_compile_seconds()
    print(f"ml100k N=10 {params}: fit {fit:.2f} s = {fit / ORIGINAL_SECONDS:.3f} × the original's {ORIGINAL_SECONDS} s "
          f"NDCG@10 {ndcg:.4f} (original code {ORIGINAL_NDCG}, paper {PAPER_NDCG}); "
          f"kernels loaded in {warm:.2f} s" + (f", cold compile {out['cold_compile_seconds']:.1f} s"
                                                 if compile_cold else ""))
    return out


def _threads() -> int:
    import numba
    return numba.get_num_threads()


def _release_freed_memory() -> None:
    """Hand memory freed by the data generator back to the OS, so the pre-fit size is the data's."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # pragma: no cover - not glibc
        pass


def bench_synthetic(case: str, baseline_mb: float, params) -> dict:
    import cofiviz
    from cofiviz.models import cofirank

    if case == "eachmovie":
        n_users, n_items, per_user = 61_265, 1_623, 10
    else:
        n_users, n_items, per_user = 480_189, 17_770, 20
    cofirank.warmup()
    kernels_mb = rss_mb() - baseline_mb
    t0 = time.perf_counter()
    ratings = cofiviz.datasets.synthetic("low_rank", n_users=n_users, n_items=n_items,
                                         n_ratings=n_users * per_user, min_user_ratings=per_user, seed=0)
    gen = time.perf_counter() - t0
    ratings.truth = None  # the planted model is not part of the training data
    _release_freed_memory()
    counts = ratings.user_counts()
    data_mb = rss_mb() - baseline_mb - kernels_mb
    print(f"{case}: {len(ratings):,} ratings, {ratings.n_users:,} users × {ratings.n_items:,} items "
          f"({counts.min()}–{counts.max()} per user), generated in {gen:.1f} s; resident size over the "
          f"interpreter baseline: +{kernels_mb:.0f} MB for the loaded numba kernels, +{data_mb:.0f} MB data",
          flush=True)
    model = cofirank.CofiRank(max_iter=1, **params)
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        model.fit(ratings)
        fit = time.perf_counter() - t0
    log = model.phase_log_[0]
    out = {"case": case, "params": params, "threads": _threads(), "n_ratings": len(ratings),
           "outer_iteration_seconds": fit, "user_phase_seconds": log["user_phase_seconds"],
           "item_phase_seconds": log["item_phase_seconds"], "item_bmrm_iter": log["item_bmrm_iter"],
           "user_bmrm_iter_mean": log["user_bmrm_iter_mean"],
           "peak_rss_above_baseline_mb": mem.peak - baseline_mb, "kernels_mb": kernels_mb, "data_mb": data_mb,
           "peak_rss_above_prefit_mb": mem.peak - (baseline_mb + kernels_mb + data_mb)}
    print(f"{case}: one outer iteration {fit:.1f} s (user phase {log['user_phase_seconds']:.1f} s, "
          f"{log['user_bmrm_iter_mean']:.1f} BMRM calls per user; item phase {log['item_phase_seconds']:.1f} s, "
          f"{log['item_bmrm_iter']} BMRM calls); peak resident {out['peak_rss_above_baseline_mb']:.0f} MB above the "
          f"interpreter baseline, of which the fit itself {out['peak_rss_above_prefit_mb']:.0f} MB", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", choices=["ml100k", "eachmovie", "netflix"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--reference-order", default="rating", choices=["rating", "item_id"])
    ap.add_argument("--max-planes", type=int, default=100)
    ap.add_argument("--cold-compile", action="store_true", help="also time a compilation from an empty cache")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    import cofiviz  # noqa: F401  (the baseline includes the library)

    baseline = rss_mb()
    params = {"reference_order": args.reference_order, "bmrm_max_planes": args.max_planes}
    if args.case == "ml100k":
        out = bench_ml100k(args.seeds, params, args.cold_compile)
    else:
        out = bench_synthetic(args.case, baseline, params)
    out["baseline_rss_mb"] = baseline
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
