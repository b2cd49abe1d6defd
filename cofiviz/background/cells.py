"""A reproduction's missing cells computed for a page, one after another, away from the server's event loop.

The comparisons page lists the cells its table still misses; :func:`compute_cells` runs the ones a visitor chose,
each written into the results store as ``cofiviz reproduce`` writes it (:func:`~cofiviz.reproductions.compute_cell`),
and reports each finished cell, so that the page only displays. It runs in the calling thread (the page's session
worker), leaves a core to the server's event loop (numba's threads), and stops before the next cell once ``stop``
is set. Parallel kernels started from several threads at once are serialised under :data:`KERNEL_LOCK` when
numba's threading layer is not thread-safe.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import numba

from ..reproductions import compute_cell

__all__ = ["compute_cells", "describe_cell", "KERNEL_LOCK", "kernels_need_lock"]

#: Serialises numba-parallel work from several threads when the threading layer is not thread-safe
#: (numba's ``workqueue`` layer crashes on concurrent parallel kernels; ``omp`` and ``tbb`` do not).
KERNEL_LOCK = threading.RLock()


def kernels_need_lock() -> bool:
    """True when concurrent parallel kernels from several threads are unsafe (workqueue) or unknown."""
    try:
        return numba.threading_layer() == "workqueue"
    except ValueError:  # no parallel kernel launched yet: the layer is not chosen, be careful
        return numba.config.THREADING_LAYER not in ("omp", "tbb", "threadsafe")


def describe_cell(cell) -> str:
    """A cell in at most 150 characters, as a page lists it."""
    text = cell.describe()
    return text if len(text) < 150 else text[:147] + "…"


def compute_cells(todo, store, version: str | None, stop: threading.Event,
                  on_cell: Callable[[int, int, str, float], object] | None = None) -> tuple[int, str | None]:
    """Compute the ``(cell, key)`` pairs of ``todo`` in order, each written into ``store``.

    Parameters
    ----------
    todo : list of (cell, str)
        The cells and their store keys (a reproduction status's ``pending``).
    store : ResultsStore
    version : str or None
        The data version the cells were listed for (None: read from each cell's data).
    stop : threading.Event
        Checked before each cell: once set, no further cell starts.
    on_cell : callable, optional
        Called after each computed cell with ``(computed so far, len(todo), describe_cell(cell), seconds)``.

    Returns
    -------
    (int, str or None)
        How many cells were computed, and the last failure as a sentence (a failed cell does not stop the others).
    """
    numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS - 1))  # a core for the event loop
    error, ran = None, 0
    for cell, key in todo:
        if stop.is_set():
            break
        t0 = time.perf_counter()
        try:
            if kernels_need_lock():
                with KERNEL_LOCK:
                    compute_cell(cell, key, store, version)
            else:
                compute_cell(cell, key, store, version)
        except Exception as exc:  # said on the page; the other cells still run
            error = f"Cell {describe_cell(cell)} failed: {exc}"
            continue
        ran += 1
        if on_cell is not None:
            on_cell(ran, len(todo), describe_cell(cell), time.perf_counter() - t0)
    return ran, error
