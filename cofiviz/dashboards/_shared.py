"""Helpers the dashboards share: model discovery, per-process caches of read-only data, kernel safety."""

from __future__ import annotations

import importlib
import pkgutil
import threading

import panel as pn

__all__ = ["model_names", "load_models", "KERNEL_LOCK", "use_thread_safe_numba", "cached_split"]

#: Serialises numba-parallel work from several threads when the threading layer is not thread-safe
#: (numba's ``workqueue`` layer crashes on concurrent parallel kernels; ``omp`` and ``tbb`` do not).
KERNEL_LOCK = threading.RLock()


def use_thread_safe_numba() -> str:
    """Ask numba for the thread-safe ``omp`` layer (effective only before the first parallel kernel runs).

    Returns the configured layer name. :func:`kernels_need_lock` tells whether the layer actually in
    use still needs :data:`KERNEL_LOCK`.
    """
    import os

    # idle OpenMP threads sleep instead of spinning: on a small machine spinning workers starve the
    # server's event loop (read by libgomp when it loads, so set before the first parallel kernel)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import numba

    if numba.config.THREADING_LAYER in ("default", "workqueue"):
        numba.config.THREADING_LAYER = "omp"
    return numba.config.THREADING_LAYER


def kernels_need_lock() -> bool:
    """True when concurrent parallel kernels from several threads are unsafe (workqueue) or unknown."""
    import numba

    try:
        return numba.threading_layer() == "workqueue"
    except ValueError:  # no parallel kernel launched yet: the layer is not chosen, be careful
        return numba.config.THREADING_LAYER not in ("omp", "tbb", "threadsafe")


def load_models() -> None:
    """Import every model module of :mod:`cofiviz.models` so that each registers itself.

    A module that fails to import (a model under construction) is skipped: the dashboards list the
    models that work.
    """
    from .. import models

    for info in pkgutil.iter_modules(models.__path__):
        if info.name.startswith("_") or info.name == "base":
            continue
        try:
            importlib.import_module(f"{models.__name__}.{info.name}")
        except Exception as exc:  # pragma: no cover - depends on other engineers' work in progress
            print(f"cofiviz dashboards: model module {info.name} not available: {exc}")


def model_names() -> list[str]:
    """Registered model names, every model module imported first."""
    from ..models.base import available_models

    load_models()
    return available_models()


@pn.cache(max_items=16)
def cached_split(data_label: str, protocol: str, params: tuple):
    """A protocol's split of a dashboard data set, computed once per server process (read-only)."""
    from .. import protocols
    from .overview import load_dataset

    return protocols.make(protocol, load_dataset(data_label), **dict(params))
