"""Benchmark: a 40-cell sweep on a Dask LocalCluster of 2 workers against a plain loop in one process.

The cells: LCR rank × number of local models on MovieLens 100K (fixed-ratio 0.5 split, Log[M], a few
iterations, NDCG@10 and AP on the test part at the end), the shape of the LCR paper's Figure 5. When
the ``lcr`` model is not registered, ``regsvd`` (rank × reg) stands in and the output says so.

Both sides run every cell from scratch (a fresh results store each, so nothing is skipped) and write
each cell into the store, so they do the same work. The plain loop runs with ``NUMBA_NUM_THREADS=1``
(one core: what one process of a sweep gets); the workers each get one numba thread as well.
``local_cluster`` drops Dask's ``MALLOC_TRIM_THRESHOLD_`` from the workers (see its documentation);
the same sweep with Dask's setting kept (``trim_memory=True``) is timed too.
Reported: wall time of each, the ratio, the cluster's start-up, and the overhead per task:
``(sweep wall × workers − Σ task seconds) / tasks`` — the time per task a worker spent not computing
a cell (scheduling, serialisation, importing cofiviz and loading the data once per worker, idling at
the end).

A control runs the same cells split statically over ``--workers`` plain processes (no Dask, no
store): the ceiling any sweep can reach on the machine at that moment. On a shared machine whose two
cores are busy with other jobs, two processes may not run twice as fast as one; the control shows it.

Usage (the machine is shared: the numbers depend on the load, which is printed)::

    .venv/bin/python benchmarks/bench_sweep.py [--workers 2] [--max-iter 5] [--cells 40]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")   # before numba is imported: the plain loop uses one core

import argparse
import sys
import tempfile
import time


def build(cells: int, max_iter: int):
    from cofiviz.engine.experiment import Experiment, resolve_model
    from cofiviz.util.errors import ParameterError

    try:
        resolve_model("lcr")
        model = "lcr"
    except ParameterError:
        model = "regsvd"
    if model == "lcr":
        ranks = [5, 10, 15, 20, 25]
        n_local = [5, 10, 15, 20, 25, 30, 35, 40]
        # the training settings of the LCR figures (FIGURE_TRAINING in benchmarks/reproduce_lcr.py)
        params = {"rank": ranks, "n_local": n_local, "loss": "log_m", "lr": 0.3, "reg": 0.1, "init_scale": 0.5,
                  "max_iter": max_iter}
    else:
        params = {"rank": [5, 10, 15, 20, 25], "reg": [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0],
                  "max_iter": max_iter}
    exp = Experiment(models=[{"model": model, "params": params}], data="movielens-100k",
                     protocol={"name": "fixed-ratio", "train_ratio": 0.5}, seeds=[0], metrics=["ndcg@10", "ap"],
                     trace={"parts": []}, name="bench-sweep")
    assert len(exp) >= cells, len(exp)
    return exp, model


def _warm(config, name, key) -> float:
    import time as _t
    from cofiviz.engine.experiment import Cell, run_cell
    t = _t.perf_counter()
    run_cell(Cell.from_config(config, experiment=name), key)
    return _t.perf_counter() - t


def _chunk(configs, name, keys, warm_config, warm_key) -> float:
    """Control: a plain loop over a chunk of cells in a fresh process (warmed first, untimed)."""
    import time as _t
    from cofiviz.engine.experiment import Cell, run_cell
    run_cell(Cell.from_config(warm_config, experiment=name), warm_key)
    t = _t.perf_counter()
    for c, k in zip(configs, keys):
        run_cell(Cell.from_config(c, experiment=name), k)
    return _t.perf_counter() - t


def _dask_run(pairs, name, version, tmp, workers, batch=1, trim_memory=False) -> dict:
    """The cells on a fresh LocalCluster (``batch`` cells per task) into a fresh store; wall time of the
    sweep alone, with the cluster's start-up and the workers' warm-up timed apart."""
    import distributed

    from cofiviz.engine.store import ResultsStore
    from cofiviz.engine.sweep import local_cluster, run_cell_task, run_cells_task

    t0 = time.perf_counter()
    cluster = local_cluster(workers, numba_threads=1, dashboard_address=None, trim_memory=trim_memory)
    client = distributed.Client(cluster)
    startup = time.perf_counter() - t0
    try:
        # each worker imports cofiviz, loads the data and numba's cached kernels once: timed apart
        t0 = time.perf_counter()
        warm = client.run(_warm, pairs[0][0].config(), name, pairs[0][1])
        warmup = time.perf_counter() - t0
        store = ResultsStore(os.path.join(tmp, f"dask-{batch}-{int(trim_memory)}"))
        t0 = time.perf_counter()
        if batch <= 1:
            futs = [client.submit(run_cell_task, c.config(), name, k, version, str(store.root), 1,
                                  key=f"bench-{int(trim_memory)}-{k}", pure=False, retries=1) for c, k in pairs]
            summaries = client.gather(futs)
        else:
            chunks = [pairs[i:i + batch] for i in range(0, len(pairs), batch)]
            futs = [client.submit(run_cells_task, [c.config() for c, _ in ch], name, [k for _, k in ch], version,
                                  str(store.root), 1, pure=False, retries=1) for ch in chunks]
            summaries = [s for part in client.gather(futs) for s in part]
        wall = time.perf_counter() - t0
    finally:
        client.close()
        cluster.close()
    assert len(store.done_keys()) == len(pairs)
    return {"wall": wall, "startup": startup, "warmup": warmup, "warm": warm, "summaries": summaries}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=5)
    ap.add_argument("--cells", type=int, default=40)
    ap.add_argument("--batch", type=int, default=5, help="also run the sweep with this many cells per task")
    ap.add_argument("--no-control", action="store_true",
                    help="skip the control: the same cells split statically over plain processes, no Dask")
    args = ap.parse_args(argv)

    from cofiviz.engine.experiment import data_version, run_cell
    from cofiviz.engine.store import ResultsStore

    exp, model = build(args.cells, args.max_iter)
    pairs = exp.keys()[: args.cells]
    version = data_version(exp.data)
    print(f"{len(pairs)} cells of {model!r}{'' if model == 'lcr' else ' (STAND-IN: lcr is not registered)'} on "
          f"MovieLens 100K, max_iter={args.max_iter}; {os.cpu_count()} cores; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)

    # warm the numba cache and the data once in this process (the workers load both themselves)
    run_cell(pairs[0][0], pairs[0][1])

    with tempfile.TemporaryDirectory() as tmp:
        store = ResultsStore(os.path.join(tmp, "loop"))
        t0 = time.perf_counter()
        loop_task = 0.0
        for cell, key in pairs:
            t = time.perf_counter()
            store.write(key, run_cell(cell, key, expected_version=version), cell.config(), version)
            loop_task += time.perf_counter() - t
        loop = time.perf_counter() - t0
        print(f"plain loop, one process:        {loop:7.2f} s  ({loop / len(pairs):.3f} s per cell)", flush=True)

        run = _dask_run(pairs, exp.name, version, tmp, args.workers)
        wall, startup, warmup, summaries = run["wall"], run["startup"], run["warmup"], run["summaries"]
        print(f"worker warm-up (import, data, numba cache), in parallel: {warmup:.1f} s "
              f"({', '.join(f'{v:.1f}' for v in run['warm'].values())} s per worker)", flush=True)
        busy = sum(s["seconds"] for s in summaries)
        overhead = (wall * args.workers - busy) / len(pairs)
        print(f"Dask LocalCluster, {args.workers} workers:   {wall:7.2f} s  (+ {startup:.1f} s to start the cluster, "
              f"{warmup:.1f} s to warm the workers)")
        print(f"speed-up (loop / sweep):         {loop / wall:7.2f}x   (including start and warm-up: "
              f"{loop / (wall + startup + warmup):.2f}x; goal >= 1.7x on 2 cores)")
        by_pid = {}
        for s in summaries:
            by_pid.setdefault(s["pid"], []).append(s["seconds"])
        print("cells per worker: " + ", ".join(f"pid {p}: {len(v)} cells, median {sorted(v)[len(v) // 2]:.2f} s"
                                               for p, v in by_pid.items()))
        print(f"overhead per task:               {overhead * 1000:7.0f} ms  (Σ task seconds {busy:.1f} s over "
              f"{len(pairs)} tasks; a cell takes {busy / len(pairs):.3f} s on a worker vs "
              f"{loop_task / len(pairs):.3f} s in the loop)")
        # the same sweep with batches of cells per task (each cell still written as it finishes)
        if args.batch > 1:
            wall_b = _dask_run(pairs, exp.name, version, tmp, args.workers, batch=args.batch)["wall"]
            print(f"Dask, {args.batch} cells per task:        {wall_b:7.2f} s  -> {loop / wall_b:.2f}x over the loop")
        # the same sweep with Dask's own MALLOC_TRIM_THRESHOLD_ in the workers (local_cluster drops it)
        trim = _dask_run(pairs, exp.name, version, tmp, args.workers, trim_memory=True)
        busy_t = sum(s["seconds"] for s in trim["summaries"])
        print(f"Dask with MALLOC_TRIM_THRESHOLD_=65536 (Dask's default, trim_memory=True): {trim['wall']:7.2f} s  -> "
              f"{loop / trim['wall']:.2f}x over the loop; a cell takes {busy_t / len(pairs):.3f} s on a worker")
        os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)   # the nanny wrote it here; the control must not inherit it
        if not args.no_control:
            # what the machine gives two processes right now, without Dask: the ceiling of any sweep
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor
            chunks = [pairs[i::args.workers] for i in range(args.workers)]
            with ProcessPoolExecutor(args.workers, mp_context=mp.get_context("spawn")) as pool:
                futs = [pool.submit(_chunk, [c.config() for c, _ in ch], exp.name, [k for _, k in ch],
                                    pairs[0][0].config(), pairs[0][1]) for ch in chunks]
                secs = [f.result() for f in futs]
            control = max(secs)
            print(f"control, {args.workers} plain processes, static split, no Dask: {control:7.2f} s  -> "
                  f"{loop / control:.2f}x over the loop: the most this machine gives right now; Dask reaches "
                  f"{control / wall:.0%} of it")
        print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
