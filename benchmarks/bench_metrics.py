"""Metrics benchmark: cofiviz.metrics.score_lists against ranx and a vectorised NumPy NDCG@10.

100,000 users x 100 candidates each (graded ratings 0..5, seeded; scores from a noisy predictor),
timed in one run:

- cofiviz: NDCG@10 + AP + GAP in ONE ``score_lists`` call (CSR arrays in, per-user arrays out); the
  first call (numba compile or cache load) is reported separately; then the median of several runs;
- the same call on one thread (``numba.set_num_threads(1)``): the per-core cost, which other jobs on a
  shared machine cannot take away;
- cofiviz NDCG@10 alone, for an apples-to-apples row against NumPy;
- NumPy: NDCG@10 alone, vectorised on the dense 100,000 x 100 arrays (argsort per row; this was
  faster here than an argpartition variant);
- ranx (if importable): NDCG@10 (``ndcg_burges``, the 2^r - 1 gain) and MAP (relevance >= 4) through
  its public API, building ``Qrels`` / ``Run`` from dicts of the same arrays (conversion included).
  ranx is not a cofiviz dependency: ``.venv/bin/pip install ranx`` to include it.

Usage::

    python benchmarks/bench_metrics.py [--users 100000] [--candidates 100] [--repeats 7] [--no-ranx]

Peak memory: ``tracemalloc`` (allocations made through Python / NumPy; numba's own allocations are
not traced) and the peak increase of the resident set size, sampled every 2 ms during one extra run
(for ranx: during its timed run). Small allocations reuse memory freed earlier in the process, so the
RSS column only shows what a contender needs on top of the inputs in large blocks.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import threading
import time
import tracemalloc

import numpy as np


# ------------------------------------------------------------------------------------- helpers
def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class RssPeak:
    """Sample the resident set size in a background thread; ``.increase`` = peak - start."""

    def __enter__(self):
        gc.collect()
        self.start = self.peak = _rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(0.002)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())
        self.increase = self.peak - self.start


def timed(fn, repeats):
    times = []
    result = None
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, times


def memory(fn, trace=True):
    """(tracemalloc peak bytes or None, RSS increase bytes) of one call."""
    traced = None
    if trace:
        gc.collect()
        tracemalloc.start()
        fn()
        traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    with RssPeak() as rss:
        fn()
    return traced, rss.increase


def mb(x):
    return "-" if x is None else f"{x / 2 ** 20:,.0f} MB"


# ------------------------------------------------------------------------------------ contenders
def numpy_ndcg10(Y, S, k=10):
    """Vectorised NDCG@10 on dense (users x candidates) arrays, gain 2^r - 1, NaN if the ideal is 0."""
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    top = np.argsort(-S, axis=1)[:, :k]
    g = np.take_along_axis(Y, top, axis=1)
    dcg = (2.0 ** g - 1.0) @ disc
    ideal = -np.sort(-Y, axis=1)[:, :k]
    idcg = (2.0 ** ideal - 1.0) @ disc
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(idcg > 0, dcg / idcg, np.nan)


def ranx_public(ratings2d, scores2d, threshold=4):
    """ranx NDCG@10 and MAP from the arrays through Qrels/Run built from dicts (conversion included)."""
    from ranx import Qrels, Run, evaluate

    n_users, n_cand = ratings2d.shape
    doc_ids = [f"d{i}" for i in range(n_cand)]
    qrels, run = {}, {}
    for u in range(n_users):
        q = f"u{u}"
        r = ratings2d[u].tolist()
        qrels[q] = {d: int(v) for d, v in zip(doc_ids, r) if v > 0}
        run[q] = dict(zip(doc_ids, scores2d[u].tolist()))
    ranx_run = Run.from_dict(run)
    evaluate(Qrels.from_dict(qrels), ranx_run, ["ndcg_burges@10", f"map-l{threshold}"], return_mean=False)
    # ranx orders queries by id ("u0", "u1", "u10", ...): read the per-user scores back by id
    per_user = ranx_run.scores
    ids = [f"u{u}" for u in range(n_users)]
    return (np.array([per_user["ndcg_burges@10"][q] for q in ids]),
            np.array([per_user[f"map-l{threshold}"][q] for q in ids]))


# ------------------------------------------------------------------------------------------ main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--ranx-repeats", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-ranx", action="store_true", help="skip ranx even if it is installed")
    args = ap.parse_args(argv)

    import numba

    import cofiviz.metrics as M

    U, N = args.users, args.candidates
    rng = np.random.default_rng(args.seed)
    ratings = rng.integers(0, 6, size=U * N).astype(np.float64)        # graded 0..5, 0 = unrated
    scores = 0.4 * ratings + rng.standard_normal(U * N)                  # a noisy predictor, no ties
    offsets = np.arange(0, U * N + 1, N, dtype=np.int64)
    Y, S = ratings.reshape(U, N), scores.reshape(U, N)                   # dense views for NumPy / ranx
    metrics = ["ndcg@10", "ap", "gap"]

    print(f"cofiviz metrics benchmark: {U:,} users x {N} candidates = {U * N:,} (rating, score) pairs")
    print(f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
          f"{os.cpu_count()} CPUs, numba threads {numba.get_num_threads()}; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")

    rows = []  # (name, what, median, min, first, traced, rss)

    def three():
        return M.score_lists(offsets, ratings, scores, metrics)

    def three_one_thread():
        numba.set_num_threads(1)  # the same call on one core: what the machine's sharing cannot take away
        try:
            return three()
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)

    def ndcg_only():
        return M.score_lists(offsets, ratings, scores, ["ndcg@10"])

    def numpy_only():
        return numpy_ndcg10(Y, S)

    # first calls: numba compile or cache load (excluded from the timings)
    t0 = time.perf_counter()
    out = three()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    ndcg_only()
    first1 = time.perf_counter() - t0
    np_out = numpy_only()
    print(f"threading layer {numba.threading_layer()}")

    # interleaved repeats, so that every contender sees the same share of a busy machine
    contenders = [three, three_one_thread, ndcg_only, numpy_only]
    times = {f: [] for f in contenders}
    for _ in range(args.repeats):
        for f in contenders:
            gc.collect()
            t0 = time.perf_counter()
            f()
            times[f].append(time.perf_counter() - t0)

    def row(name, what, f, first_s, mem=True):
        trc, rs = memory(f) if mem else (None, None)
        rows.append((name, what, statistics.median(times[f]), min(times[f]), first_s, trc, rs))

    row("cofiviz score_lists", "NDCG@10 + AP + GAP, one pass", three, first)
    row("cofiviz score_lists, 1 thread", "NDCG@10 + AP + GAP, one pass", three_one_thread, None, mem=False)
    row("cofiviz score_lists", "NDCG@10 alone", ndcg_only, first1)
    row("NumPy (dense, vectorised)", "NDCG@10 alone", numpy_only, None)
    diff = np.nanmax(np.abs(np_out - out["ndcg@10"]))
    checks = [f"NumPy NDCG@10 vs cofiviz: max |diff| = {diff:.2e} over {U:,} users"]

    # ranx
    ranx_note = None
    if args.no_ranx:
        ranx_note = "ranx skipped (--no-ranx)"
    else:
        try:
            import ranx  # noqa: F401
        except ImportError as exc:
            ranx_note = (f"ranx skipped: not importable ({exc}); `.venv/bin/pip install ranx` to include it "
                         "(it is not a cofiviz dependency)")
    if ranx_note is None:
        import warnings

        from numba.core.errors import NumbaTypeSafetyWarning

        warnings.simplefilter("ignore", NumbaTypeSafetyWarning)  # raised inside ranx's own kernels
        t0 = time.perf_counter()
        ranx_public(Y[:20], S[:20])            # ranx's own numba compile / cache load, on tiny data
        ranx_first = time.perf_counter() - t0
        with RssPeak() as rss_r:   # ranx builds millions of small objects: measure during the timed run
            (r_ndcg, r_map), tr = timed(lambda: ranx_public(Y, S), args.ranx_repeats)
        rssr = rss_r.increase
        rows.append(("ranx public API", "NDCG@10 + MAP, dicts -> Qrels/Run -> evaluate",
                     statistics.median(tr), min(tr), ranx_first, None, rssr))
        checks.append(f"ranx ndcg_burges@10 vs cofiviz: max |diff| = "
                      f"{np.nanmax(np.abs(np.asarray(r_ndcg) - np.nan_to_num(out['ndcg@10']))):.2e}; "
                      f"ranx map-l4 vs cofiviz ap: max |diff| = "
                      f"{np.nanmax(np.abs(np.asarray(r_map) - np.nan_to_num(out['ap']))):.2e}")

    # table
    base = rows[0][2]
    numpy_t = next(r[2] for r in rows if r[0].startswith("NumPy"))
    print()
    head = f"{'contender':<30} {'computes':<46} {'median s':>9} {'min s':>8} {'first s':>8} " \
           f"{'tracemalloc':>12} {'peak RSS +':>10} {'/ cofiviz':>9}"
    print(head)
    print("-" * len(head))
    for name, what, med, mn, fst, trc, rs in rows:
        fst_s = "-" if fst is None else f"{fst:.3f}"
        print(f"{name:<30} {what:<46} {med:>9.3f} {mn:>8.3f} {fst_s:>8} {mb(trc):>12} {mb(rs):>10} "
              f"{med / base:>8.1f}x")
    print("-" * len(head))
    print(f"median of {args.repeats} interleaved runs (ranx: {args.ranx_repeats}); 'first s' = first call "
          "(cofiviz: numba compile or cache load on the full data; ranx: its compile on 20 users)")
    for c in checks:
        print(c)
    if ranx_note:
        print(ranx_note)
    print()
    goal = base < numpy_t
    one = rows[1][2]

    def versus(x):
        return f"{numpy_t / x:.2f}x faster" if x < numpy_t else f"{x / numpy_t:.2f}x slower"

    print(f"GOAL cofiviz NDCG@10+AP+GAP ({base:.3f} s) < NumPy NDCG@10 alone ({numpy_t:.3f} s): "
          f"{'MET' if goal else 'NOT MET'} ({versus(base)}); on one thread {one:.3f} s ({versus(one)} than "
          f"NumPy, which is single-threaded)")
    ranx_rows = [r for r in rows if r[0].startswith("ranx")]
    if ranx_rows:
        print(f"     vs ranx public API NDCG@10+MAP ({ranx_rows[0][2]:.2f} s): {ranx_rows[0][2] / base:.0f}x faster "
              f"(goal >= 20x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
