"""Sweeps on a real dask.distributed LocalCluster (process workers): killed workers, interrupted sweeps."""

from __future__ import annotations

import os
import signal
import time

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from cofiviz.engine.experiment import Experiment  # noqa: E402
from cofiviz.engine.store import ResultsStore  # noqa: E402
from cofiviz.engine.sweep import local_cluster, sweep  # noqa: E402

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 150, "n_items": 90, "density": 0.3}


def experiment(max_iter=15, seeds=(0, 1, 2)):
    return Experiment(models=[{"model": "regsvd", "params": {"rank": [2, 4], "max_iter": max_iter}}, "itemmean"],
                      data=DATA, protocol={"name": "weak", "n_train": 5, "n_valid": 3, "min_test": 5},
                      seeds=list(seeds), metrics=["ndcg@10", "ap"], trace={"parts": ["valid", "test"]},
                      name="sweep-test")


@pytest.fixture(scope="module")
def client():
    cluster = local_cluster(2, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _check_complete(store: ResultsStore, exp: Experiment, res):
    keys = sorted(k for _, k in exp.keys())
    assert sorted(store.done_keys()) == keys
    r = res.results
    assert sorted(r["cell"].unique()) == keys
    # exactly one row per (cell, part, metric): nothing lost, nothing duplicated
    assert r.groupby(["cell", "part", "metric"]).size().eq(1).all()
    assert len(r) == len(keys) * 2 * 2
    assert not res.failed


def test_workers_limit_numba_threads(client):
    env = client.run(lambda: os.environ.get("NUMBA_NUM_THREADS"))
    assert set(env.values()) == {"1"}
    info = client.scheduler_info(n_workers=-1)["workers"]
    assert all(w["nthreads"] == 1 for w in info.values())


def test_workers_keep_glibc_malloc_tuning(client):
    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_ before spawning, which turns off glibc's adaptive mmap
    # threshold; local_cluster drops it unless trim_memory=True (benchmarks/bench_sweep.py times both)
    env = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert set(env.values()) == {None}
    cluster = local_cluster(1, dashboard_address=None, trim_memory=True)
    try:
        with distributed.Client(cluster) as c:
            kept = c.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        assert set(kept.values()) == {"65536"}
    finally:
        cluster.close()
    # the nanny wrote Dask's value into this process's environment; the next default cluster drops it
    cluster = local_cluster(1, dashboard_address=None)
    try:
        with distributed.Client(cluster) as c:
            again = c.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        assert set(again.values()) == {None}
    finally:
        cluster.close()


def test_sweep_matches_a_plain_run(client, tmp_path):
    exp = experiment(max_iter=3, seeds=(0,))
    res = sweep(exp, tmp_path / "s", client=client, progress=False)
    _check_complete(ResultsStore(tmp_path / "s"), exp, res)
    local = exp.run()
    cols = ["cell", "part", "metric", "value"]
    a = res.results[cols].sort_values(cols[:3]).reset_index(drop=True)
    b = local.results[cols].sort_values(cols[:3]).reset_index(drop=True)
    assert a[cols[:3]].equals(b[cols[:3]])
    assert (a["value"] - b["value"]).abs().max() < 1e-9


def test_killed_worker_tasks_are_retried(client, tmp_path):
    exp = experiment()
    store = ResultsStore(tmp_path / "s")
    pids = client.run(os.getpid)
    killed = {}

    def on_result(key, summary):
        if killed:
            return
        processing = client.processing()
        busy = [w for w, tasks in processing.items() if tasks]
        if busy:
            victim = busy[0]
            killed["worker"], killed["tasks"] = victim, list(processing[victim])
            os.kill(pids[victim], signal.SIGKILL)

    res = sweep(exp, store, client=client, progress=False, retries=2, on_result=on_result)
    assert killed, "no worker was busy when the first cell finished"
    assert killed["tasks"]
    _check_complete(store, exp, res)
    # the nanny restarted the killed worker
    client.wait_for_workers(2, timeout=60)


def test_interrupted_sweep_resumes(client, tmp_path):
    exp = experiment(max_iter=6)
    store = ResultsStore(tmp_path / "s")

    class Stop(Exception):
        pass

    seen = []

    def stop_after_three(key, summary):
        seen.append(key)
        if len(seen) == 3:
            raise Stop

    with pytest.raises(Stop):
        sweep(exp, store, client=client, progress=False, on_result=stop_after_three)
    time.sleep(1.0)        # tasks already running when the client stopped may still finish
    first = {k: store.manifest(k)["written"] for k in store.done_keys()}
    assert set(seen) <= set(first)
    assert 3 <= len(first) < len(exp)
    # the second run does only the rest; finished cells are not rewritten
    ran = []
    res = sweep(exp, store, client=client, progress=False, on_result=lambda k, s: ran.append(k))
    assert not set(ran) & set(seen)
    assert ran and set(ran) <= set(exp_keys(exp)) - set(first)
    for k, written in first.items():
        assert store.manifest(k)["written"] == written
    _check_complete(store, exp, res)


def exp_keys(exp):
    return [k for _, k in exp.keys()]


def test_cli_sweep_on_a_scheduler_address(client, tmp_path, capsys):
    from cofiviz.cli import main

    cfg = tmp_path / "e.toml"
    cfg.write_text("""
name = "cli-sweep"
seeds = [0, 1]
metrics = ["ndcg@10", "ap"]
[data]
name = "synthetic"
kind = "popularity"
n_users = 100
n_items = 60
density = 0.3
[protocol]
name = "weak"
n_train = 4
min_test = 4
[[models]]
model = "itemmean"
params = {damping = [1.0, 5.0]}
""")
    store = tmp_path / "store"
    out = tmp_path / "r.parquet"
    code = main(["sweep", str(cfg), "--store", str(store), "--scheduler", client.scheduler.address,
                 "--no-progress", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "4 of 4 cells" in captured.out and "Dask dashboard" in captured.err
    assert len(pd.read_parquet(out)) == 4 * 2
    assert len(ResultsStore(store).done_keys()) == 4
    # in-process run of the same file: everything is read from the store
    assert main(["sweep", str(cfg), "--store", str(store), "--in-process", "--no-progress"]) == 0
    assert "4 of 4 cells" in capsys.readouterr().out
    assert main(["sweep", str(tmp_path / "missing.yaml")]) == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [nosuchmodel]\n")
    assert main(["sweep", str(bad)]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_batches_of_cells_per_task(client, tmp_path):
    exp = experiment(max_iter=2, seeds=(0, 1))
    store = ResultsStore(tmp_path / "s")
    seen = []
    res = sweep(exp, store, client=client, progress=False, batch_size=3, on_result=lambda k, s: seen.append(k))
    _check_complete(store, exp, res)
    assert sorted(seen) == sorted(exp_keys(exp))
