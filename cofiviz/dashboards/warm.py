"""Warm-up for the dashboards: build each one once and run its code paths on tiny inputs.

:func:`warm_server` is what a server does behind it, in a thread that ``serve_setup.py`` (``panel serve --setup``)
starts: it waits for the background warm-up of the numba kernels (:mod:`cofiviz.background.kernels`), loads every
kernel from the cache into the server, reads the data sets the pages offer and builds each dashboard once
(:func:`warm_dashboards`), so that later visitors find its modules imported, its kernels loaded and its shared
data cached; the comparisons' results of every reproduction are read in a background thread. When the
recommendations page is served, its models start training in the background here
(:func:`~cofiviz.background.recommenders.pool`): MovieLens 100K's, and MovieLens 1M's after them when
``$COFIVIZ_RECOMMENDERS_ML1M=1``. It says how far it is in the file :data:`~.serving.SERVER_STATUS` beside the
kernels' status (``{"server_pid": ..., "state": "warming" | "warm", "seconds": ...}``), which the test suite's
servers wait for.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Sequence

from ..background.kernels import modules_from_environment, prepares, wait, write_json
from ..background.offered import load_dataset, preloaded_datasets
from ..background.recommenders import ML1M, ml1m_from_environment, pool
from ..engine.warmup import locked_cache_writes, warmup
from .catalog import app
from .comparisons import Comparisons, read_all
from .losses import LossShapes
from .monitor import TrainingMonitor
from .playground import MetricPlayground
from .recommendations import Recommendations
from .serving import SERVER_STATUS

__all__ = ["warm_dashboards", "warm_server"]

#: the dashboards :func:`warm_dashboards` knows
_ALL = ("playground", "comparisons", "losses", "monitor", "recommendations")



def warm_dashboards(verbose: bool = True, apps=None) -> float:
    """Build every dashboard of ``apps`` once (app names as in ``apps/``; default: all). The monitor's
    default model trains for two iterations in a worker process, which also waits for the workers'
    forkserver to be ready; the recommendations page starts training its models in the background (MovieLens 1M's
too, queued behind MovieLens 100K's, when :func:`~cofiviz.background.recommenders.ml1m_from_environment`).

    Returns
    -------
    float
        Seconds taken.
    """
    t0 = time.perf_counter()

    def wanted(name: str) -> bool:
        return apps is None or name in apps

    if wanted("playground"):
        MetricPlayground().__panel__()
    if wanted("comparisons"):
        page = Comparisons.from_environment()
        page.__panel__()
        read_all(quick=page.quick, store=page.store, data=page.data)   # in the background
    if wanted("losses"):
        LossShapes().__panel__()
    if wanted("monitor"):
        mon = TrainingMonitor(max_iter=2)
        mon.__panel__()
        mon._on_run()
        mon.training.join(180)
    if wanted("recommendations"):
        Recommendations().__panel__()
        if ml1m_from_environment():  # MovieLens 1M's models from the start, after MovieLens 100K's
            pool(data=ML1M)
    seconds = time.perf_counter() - t0
    if verbose:
        print(f"cofiviz: dashboards warmed in {seconds:.1f} s")
    return seconds


def warm_server(folder: str | Path | None, apps: Sequence[str] | None = None) -> float:
    """Behind a server that answers already: wait for its kernels, then load them, the data and the dashboards.

    Parameters
    ----------
    folder : path or None
        The folder of the kernels' status (:func:`~.serving.served_kernels_folder`); None for a server without a
        background warm-up, whose kernels this thread compiles or loads itself.
    apps : sequence of str, optional
        The apps served (default: all). A dashboard whose kernels a restricted warm-up
        (``$COFIVIZ_WARMUP_MODULES``) does not prepare is not built here.

    Returns
    -------
    float
        Seconds taken.
    """
    t0 = time.perf_counter()
    server = os.getpid()

    def note(state: str) -> None:
        if folder is not None:
            try:
                write_json(Path(folder) / SERVER_STATUS, {"server_pid": server, "state": state,
                                                          "seconds": time.perf_counter() - t0})
            except FileNotFoundError:   # the server has ended and removed the folder
                pass

    note("warming")
    try:
        _warm_behind(folder, server, apps)
    except Exception as exc:  # the pages build what they need themselves; the server goes on
        print(f"cofiviz: the warm-up behind the server failed: {type(exc).__name__}: {exc}", flush=True)
    finally:
        note("warm")
    seconds = time.perf_counter() - t0
    print(f"cofiviz: server warm-up behind the server took {seconds:.1f} s", flush=True)
    return seconds


def _warm_behind(folder: str | Path | None, server: int, apps: Sequence[str] | None) -> None:
    """:func:`warm_server`'s work: wait for the kernels, load them, read the data sets, build the dashboards."""
    modules = modules_from_environment()
    # compiling here while the warm-up process writes the cache: every write of this process takes the lock
    with locked_cache_writes():
        status = wait(folder, server) if folder is not None else None
        if status is not None and status.get("state") == "failed":
            print(f"cofiviz: {status.get('message')}", flush=True)
        try:
            warmup(modules=modules)            # from the cache: the warm-up process compiled them
        except Exception as exc:  # a page that needs a kernel that cannot compile says so itself
            print(f"cofiviz: loading the numba kernels failed: {exc}", flush=True)
    for label in preloaded_datasets():
        try:
            load_dataset(label)
        except Exception as exc:  # a dataset that cannot load is reported in its page
            print(f"cofiviz: could not preload {label}: {exc}", flush=True)
    wanted = [name for name in (apps if apps is not None else _ALL)
              if name in _ALL and prepares(modules, app(name).kernels)]
    try:  # build each dashboard once so that every module, plot and kernel they need is loaded
        warm_dashboards(apps=wanted)
    except Exception as exc:  # a dashboard that cannot warm up still reports its own errors in its page
        print(f"cofiviz: dashboard warm-up failed: {exc}", flush=True)
