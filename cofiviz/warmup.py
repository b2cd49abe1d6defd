"""Compile (or load from numba's on-disk cache) every numba kernel once, ahead of first use.

``import cofiviz`` compiles nothing; the first call of a kernel does, which takes seconds. Servers
(``make serve``, the dashboards' setup) and ``cofiviz warmup`` call :func:`warmup` once so that no
visitor waits for a compilation. With a warm cache (``cache=True`` kernels, ``NUMBA_CACHE_DIR``
writable) it takes well under a second per module.
"""

from __future__ import annotations

import sys
import time
from typing import Callable

from . import losses, metrics, solvers
from .models import available_models, get_model_class

__all__ = ["warmup"]


def _targets() -> list[tuple[str, Callable[[], object]]]:
    """``(module name, warmup function)`` for the metrics, every registered model's module, the losses and
    the solvers, each once."""
    modules = [metrics] + [sys.modules[get_model_class(name).__module__] for name in available_models()]
    found: dict[str, Callable[[], object]] = {}
    for mod in modules + [losses, solvers]:
        fn = getattr(mod, "warmup", None)
        if callable(fn) and mod.__name__ not in found:
            found[mod.__name__] = fn
    return list(found.items())


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
