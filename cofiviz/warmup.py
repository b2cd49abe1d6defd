"""Compile (or load from numba's on-disk cache) every numba kernel once, ahead of first use.

``import cofiviz`` compiles nothing; the first call of a kernel does, which takes seconds. Servers
(``make serve``, the dashboards' setup) and ``cofiviz warmup`` call :func:`warmup` once so that no
visitor waits for a compilation. With a warm cache (``cache=True`` kernels, ``NUMBA_CACHE_DIR``
writable) it takes well under a second per module.
"""

from __future__ import annotations

import importlib
import time
from typing import Callable

__all__ = ["warmup"]


def _targets() -> list[tuple[str, Callable[[], object]]]:
    """``(module name, warmup function)`` for the metrics and every registered model module."""
    found: list[tuple[str, Callable[[], object]]] = []
    seen: set[str] = set()

    def add(modname: str) -> None:
        if modname in seen:
            return
        seen.add(modname)
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            return
        fn = getattr(mod, "warmup", None)
        if callable(fn) and fn is not warmup:
            found.append((modname, fn))

    add("cofiviz.metrics")
    from .models.registry import available_models, get_model_class
    for name in available_models():
        add(get_model_class(name).__module__)
    for extra in ("cofiviz.losses", "cofiviz.solvers"):
        add(extra)
    return found


def warmup(verbose: bool = False) -> float:
    """Run each module's ``warmup()`` on tiny inputs so that its numba kernels are compiled or loaded.

    Parameters
    ----------
    verbose : bool
        Print one line per module with the seconds it took.

    Returns
    -------
    float
        Seconds taken in total.
    """
    start = time.perf_counter()
    for modname, fn in _targets():
        t0 = time.perf_counter()
        fn()
        if verbose:
            print(f"  {modname}: {time.perf_counter() - t0:.2f} s")
    return time.perf_counter() - start
