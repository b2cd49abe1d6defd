"""Run an :class:`~cofiviz.engine.experiment.Experiment` on Dask (``dask.distributed``), resumably.

:func:`sweep` computes every cell's store key, skips the cells the :class:`~cofiviz.engine.store.ResultsStore`
already holds, and submits one task per remaining cell to a Dask cluster: a :func:`local_cluster` by
default (process workers, one thread each, as many as cores), or any scheduler address.

Who writes results
    Each task writes its own cell into the store (atomically, see :mod:`cofiviz.engine.store`) before it
    returns. A finished cell is therefore on disk even when the client dies a moment later, and an
    interrupted sweep loses nothing that finished. Retries are idempotent: a task re-run after a
    worker died, or two copies of one task racing, write the cell once (the store refuses to write a
    complete cell twice). With a remote scheduler, the store must live on a file system every worker
    sees (and cofiviz must be installed on the workers).

Threads
    numba's parallel kernels would start one thread per core in every worker and oversubscribe the
    machine. Local workers are started with ``NUMBA_NUM_THREADS`` (and the BLAS / OpenMP thread
    counts) set to ``numba_threads`` (default: cores // workers, at least 1); every task also calls
    ``numba.set_num_threads`` so workers of a remote cluster obey the same limit.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from typing import Any, Callable

from ..util.errors import ParameterError
from .experiment import Cell, Experiment, data_version, run_cell
from .results import Results
from .store import ResultsStore

__all__ = ["sweep", "local_cluster", "run_cell_task", "run_cells_task", "worker_env"]

_THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def worker_env(numba_threads: int) -> dict[str, str]:
    """Environment of a local worker process: numba and BLAS limited to ``numba_threads`` threads."""
    return {v: str(int(numba_threads)) for v in _THREAD_VARS}


def local_cluster(n_workers: int | None = None, numba_threads: int | None = None,
                  dashboard_address: str | None = ":0", trim_memory: bool = False, **kwargs):
    """A ``LocalCluster`` of process workers with one thread each and numba threads limited.

    By default the workers keep glibc's own ``malloc`` tuning. Dask's nanny sets
    ``MALLOC_TRIM_THRESHOLD_=65536`` in every worker (``distributed.nanny.pre-spawn-environ``) to hand
    freed memory back to the system; setting it also switches off glibc's adaptive mmap threshold,
    so every NumPy array above 128 KiB is a fresh ``mmap`` whose pages fault in again. The kernels
    here allocate such arrays at every iteration, and a cell ran measurably slower on a worker than
    in a plain process (``benchmarks/bench_sweep.py``). ``trim_memory=True`` keeps Dask's setting.

    Parameters
    ----------
    n_workers : int, optional
        Default: the number of cores.
    numba_threads : int, optional
        numba / BLAS threads per worker; default ``max(1, cores // n_workers)``.
    dashboard_address : str or None
        ``":0"`` (default) picks a free port; ``None`` disables the dashboard.
    trim_memory : bool
        Keep Dask's ``MALLOC_TRIM_THRESHOLD_`` in the workers (default ``False``, see above).
    """
    import dask
    from distributed import LocalCluster

    cores = os.cpu_count() or 1
    n_workers = int(n_workers or cores)
    if n_workers < 1:
        raise ParameterError(f"n_workers must be a positive integer, got {n_workers!r}")
    numba_threads = int(numba_threads or max(1, cores // n_workers))
    spawn_env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {})
    if not trim_memory:
        dask_value = spawn_env.pop("MALLOC_TRIM_THRESHOLD_", None)
        # an earlier nanny of this process wrote Dask's value into os.environ; workers inherit it
        if dask_value is not None and os.environ.get("MALLOC_TRIM_THRESHOLD_") == str(dask_value):
            del os.environ["MALLOC_TRIM_THRESHOLD_"]
    with dask.config.set({"distributed.nanny.pre-spawn-environ": spawn_env}):
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                            env=worker_env(numba_threads), dashboard_address=dashboard_address,
                            **kwargs)


def run_cell_task(config: dict, experiment: str, key: str, version: str, store_root: str,
                  numba_threads: int | None = None) -> dict:
    """What a Dask task runs: one cell, written into the store. Returns a small summary."""
    if numba_threads:
        try:
            import numba
            numba.set_num_threads(max(1, min(int(numba_threads), numba.config.NUMBA_NUM_THREADS)))
        except Exception:  # noqa: BLE001 - numba missing or the layer refuses: run with its default
            pass
    store = ResultsStore(store_root)
    t0 = time.perf_counter()
    if store.is_done(key):
        return {"key": key, "status": "already done", "seconds": 0.0, "pid": os.getpid()}
    cell = Cell.from_config(config, experiment=experiment)
    res = run_cell(cell, key, expected_version=version)
    wrote = store.write(key, res, cell.config(), version, extra={"experiment": experiment})
    return {"key": key, "status": "written" if wrote else "already done", "seconds": time.perf_counter() - t0,
            "pid": os.getpid(), "rows": int(len(res.results))}


def run_cells_task(configs: list, experiment: str, keys: list, version: str, store_root: str,
                   numba_threads: int | None = None) -> list[dict]:
    """A batch of cells in one Dask task, each written into the store as soon as it finishes."""
    return [run_cell_task(c, experiment, k, version, store_root, numba_threads) for c, k in zip(configs, keys)]


def sweep(experiment: Experiment, store: ResultsStore | str | os.PathLike, *, scheduler: str | None = None,
          client=None, n_workers: int | None = None, numba_threads: int | None = None, retries: int = 3,
          batch_size: int = 1,
          progress: bool = True, on_result: Callable[[str, dict], Any] | None = None,
          log: Callable[[str], Any] | None = None) -> Results:
    """Run ``experiment``'s unfinished cells on Dask; return every cell's results from the store.

    Parameters
    ----------
    experiment : Experiment
    store : ResultsStore or path
        Finished cells are skipped; every task writes its cell here.
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``); default: a new :func:`local_cluster`,
        closed at the end.
    client : distributed.Client, optional
        Use this client (the caller owns it; it is not closed).
    n_workers, numba_threads : int, optional
        Size of the local cluster and numba threads per task (see :func:`local_cluster`).
    retries : int
        Times a failed task is retried (a worker dying mid-task does not count against it: the
        scheduler reschedules the task elsewhere).
    batch_size : int
        Cells per task (default 1). Each cell of a batch is still written to the store as soon as
        it finishes, so a retried batch redoes only its unfinished cells.
    progress : bool
        A tqdm progress bar over the cells (finished ones counted from the start).
    on_result : callable, optional
        Called as ``on_result(key, summary)`` after each cell finishes; an exception raised there
        stops the sweep (the rest is cancelled; finished cells stay in the store).
    log : callable, optional
        Where messages go (default: stderr).

    Returns
    -------
    Results
        All cells of the experiment that are in the store; ``results.failed`` lists
        ``(key, description, error)`` of cells whose task failed after its retries.
    """
    if log is None:
        def log(msg):
            print(msg, file=sys.stderr, flush=True)
    if not isinstance(store, ResultsStore):
        store = ResultsStore(store)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise ParameterError(f"retries must be a non-negative integer, got {retries!r}")

    version = data_version(experiment.data)
    pairs = experiment.keys()
    all_keys = [k for _, k in pairs]
    done = set(store.done_keys())
    todo = [(c, k) for c, k in pairs if k not in done]
    todo = list({k: (c, k) for c, k in todo}.values())   # one task per distinct key
    log(f"{experiment.name}: {len(pairs)} cells, {len(pairs) - len(todo)} already in {store.root}, "
        f"{len(todo)} to run")
    failed: list[tuple[str, str, str]] = []
    if todo:
        own_client = own_cluster = None
        if client is None:
            from distributed import Client
            if scheduler:
                own_client = client = Client(scheduler)
            else:
                own_cluster = local_cluster(n_workers, numba_threads)
                own_client = client = Client(own_cluster)
        if numba_threads is None:
            n = len(client.scheduler_info(n_workers=-1).get("workers", {})) or 1
            numba_threads = max(1, (os.cpu_count() or 1) // n)
        log(f"Dask dashboard: {client.dashboard_link}")
        futures = {}
        bar = None
        try:
            from distributed import as_completed

            token = uuid.uuid4().hex[:8]
            if batch_size <= 1:
                for cell, key in todo:
                    fut = client.submit(run_cell_task, cell.config(), experiment.name, key, version,
                                        str(store.root), numba_threads, key=f"cofiviz-cell-{key}-{token}",
                                        pure=False, retries=retries)
                    futures[fut] = [(cell, key)]
            else:
                for i in range(0, len(todo), batch_size):
                    chunk = todo[i:i + batch_size]
                    fut = client.submit(run_cells_task, [c.config() for c, _ in chunk], experiment.name,
                                        [k for _, k in chunk], version, str(store.root), numba_threads,
                                        key=f"cofiviz-cells-{chunk[0][1]}-{len(chunk)}-{token}", pure=False,
                                        retries=retries)
                    futures[fut] = chunk
            if progress:
                from tqdm.auto import tqdm
                bar = tqdm(total=len(pairs), initial=len(pairs) - len(todo), desc=experiment.name, unit="cell")
            for fut in as_completed(list(futures)):
                chunk = futures[fut]
                if fut.status == "error":
                    exc = fut.exception()
                    summaries = []
                    for cell, key in chunk:
                        if store.is_done(key):      # finished before a later cell of its batch failed
                            summaries.append({"key": key, "status": "written"})
                            continue
                        failed.append((key, cell.describe(), f"{type(exc).__name__}: {exc}"))
                        log(f"cell {key} ({cell.describe()}) failed: {type(exc).__name__}: {exc}")
                        summaries.append({"key": key, "status": "failed", "error": str(exc)})
                else:
                    result = fut.result()
                    summaries = result if isinstance(result, list) else [result]
                for summary in summaries:
                    if bar is not None:
                        bar.update(1)
                    if on_result is not None:
                        on_result(summary["key"], summary)
        finally:
            pending = [f for f in futures if not f.done()]
            if pending:
                client.cancel(pending)
            if bar is not None:
                bar.close()
            if own_client is not None:
                own_client.close()
            if own_cluster is not None:
                own_cluster.close()
    out = store.load(all_keys)
    out.failed = failed
    return out
