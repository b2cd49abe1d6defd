"""Warm-up for the dashboards: build each one once and run its code paths on tiny inputs.

Called by ``serve_setup.py`` (``panel serve --setup``) so that the first visitor of each app finds its
modules imported, its numba kernels compiled and its shared data cached.
"""

from __future__ import annotations

import time

from .comparisons import Comparisons
from .losses import LossShapes
from .monitor import TrainingMonitor
from .playground import MetricPlayground
from .recommendations import warm as warm_recommendations

__all__ = ["warm_dashboards"]


def warm_dashboards(verbose: bool = True) -> float:
    """Build every dashboard once (and train the monitor's default model for two iterations in a worker
    process, which also waits for the workers' forkserver to be ready).

    Returns
    -------
    float
        Seconds taken.
    """
    t0 = time.perf_counter()
    MetricPlayground().__panel__()
    Comparisons.from_environment().__panel__()
    LossShapes().__panel__()
    mon = TrainingMonitor(max_iter=2)
    mon.__panel__()
    mon._on_run()
    mon._work.join(180)
    warm_recommendations()
    seconds = time.perf_counter() - t0
    if verbose:
        print(f"cofiviz: dashboards warmed in {seconds:.1f} s")
    return seconds
