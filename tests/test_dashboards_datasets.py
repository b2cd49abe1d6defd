"""The dashboards' data sets: MovieLens 1M is offered, and loaded on first use rather than at every start."""

from __future__ import annotations

import runpy
import threading

import numba
import pytest

import cofiviz
from cofiviz.background import offered, training_process
from cofiviz.background.offered import DATASETS, LOADED_ON_FIRST_USE, load_dataset, preloaded_datasets
from cofiviz.dashboards import _shared, serving, warm


def test_movielens_1m_is_offered_and_loaded_on_first_use_only():
    assert "MovieLens 1M" in DATASETS and DATASETS["MovieLens 1M"] == ("movielens-1m", {})
    assert LOADED_ON_FIRST_USE <= set(DATASETS)
    assert preloaded_datasets() == [label for label in DATASETS if label != "MovieLens 1M"]
    assert "MovieLens 100K" in preloaded_datasets()


@pytest.fixture
def loads(monkeypatch):
    """Record the labels loaded through ``offered.load_dataset`` instead of loading them."""
    seen: list[str] = []
    monkeypatch.setattr(offered, "load_dataset", seen.append)
    monkeypatch.setattr(cofiviz, "warmup", lambda *a, **k: 0.0)
    return seen


def test_training_workers_preload_leaves_movielens_1m_out(loads, monkeypatch, capsys):
    monkeypatch.setattr(numba.config, "THREADING_LAYER", numba.config.THREADING_LAYER)  # the module sets it
    runpy.run_module("cofiviz.background._worker_preload")
    assert "ready in" in capsys.readouterr().out
    assert loads == preloaded_datasets() and "MovieLens 1M" not in loads


def test_server_setup_leaves_movielens_1m_out(loads, monkeypatch, capsys):
    monkeypatch.setattr(training_process, "start_forkserver", lambda: None)
    monkeypatch.setattr(_shared, "use_thread_safe_numba", lambda: "omp")
    monkeypatch.setattr(serving, "served_apps", lambda argv: None)
    monkeypatch.setattr(warm, "warm_dashboards", lambda **kw: 0.0)
    monkeypatch.setattr(warm, "load_dataset", loads.append)
    monkeypatch.setattr(warm, "warmup", lambda *a, **k: 0.0)
    runpy.run_path(str(serving.SETUP))
    for thread in threading.enumerate():   # the setup returns at once; the data load behind the server
        if thread.name == "cofiviz-warm-server":
            thread.join(120)
    out = capsys.readouterr().out
    assert "server setup took" in out and "warm-up behind the server took" in out
    assert loads == preloaded_datasets() and "MovieLens 1M" not in loads


def test_movielens_1m_loads_when_a_page_asks():
    r = load_dataset("MovieLens 1M")
    assert (len(r), r.n_users, r.n_items) == (1_000_209, 6_040, 3_706)
    assert load_dataset("MovieLens 1M") is r                       # loaded once per process
