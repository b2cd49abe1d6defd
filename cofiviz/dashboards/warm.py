"""Warm-up for the dashboards: build each one once and run its code paths on tiny inputs.

Called by ``serve_setup.py`` (``panel serve --setup``) so that the first visitor of each app finds its
modules imported, its numba kernels compiled and its shared data cached; the comparisons' results of every
reproduction are read in a background thread. When the recommendations page is
served, its models start training in the background here (:func:`~cofiviz.background.recommenders.pool`): MovieLens 100K's, and
MovieLens 1M's after them when ``$COFIVIZ_RECOMMENDERS_ML1M=1``.
"""

from __future__ import annotations

import time

from ..background.recommenders import ML1M, ml1m_from_environment, pool
from .comparisons import Comparisons, read_all
from .losses import LossShapes
from .monitor import TrainingMonitor
from .playground import MetricPlayground
from .recommendations import Recommendations

__all__ = ["warm_dashboards"]


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
