"""Run by `panel serve --setup` before the server listens: start what the server needs, and leave the long work behind it.

First starts the training workers' forkserver when a page it serves trains models in them
(:func:`cofiviz.dashboards.catalog.needs_workers`), which readies its own copy of cofiviz (modules, data sets, and
the kernels when numba's cache holds them) in the background; a server of pages that train nothing starts none. Then selects numba's thread-safe ``omp`` threading
layer before any parallel kernel runs here: Panel runs the sessions' callbacks on several threads
(``--num-threads``) and the comparisons page computes cells in a thread per session, and the ``workqueue`` layer
crashes when parallel kernels are launched from several threads at once.

Then starts the background warm-up of the numba kernels (:func:`cofiviz.background.kernels.start`) unless
``cofiviz serve`` started it for this server, and returns: a thread (:func:`cofiviz.dashboards.warm.warm_server`)
waits for the kernels to be in the cache, loads them here, reads the data sets the pages offer (all but
``cofiviz.background.offered.LOADED_ON_FIRST_USE``: MovieLens 1M, which the first page that shows it reads) and
builds every dashboard once. Meanwhile the server answers: the landing page and each page say that kernels are
being prepared, and a page opens once its own are ready (:mod:`cofiviz.dashboards.gate`).
"""

import atexit
import os
import shutil
import sys
import threading
import time

t0 = time.perf_counter()
from cofiviz.background.training_process import start_forkserver  # noqa: E402
from cofiviz.dashboards.catalog import needs_workers  # noqa: E402
from cofiviz.dashboards.serving import served_apps  # noqa: E402

if needs_workers(served_apps(sys.argv)):
    start_forkserver()
from cofiviz.dashboards._shared import use_thread_safe_numba  # noqa: E402

use_thread_safe_numba()
from cofiviz.background.kernels import start as start_kernels, status_of  # noqa: E402
from cofiviz.dashboards.catalog import first_kernels  # noqa: E402
from cofiviz.dashboards.gate import watch_kernels  # noqa: E402
from cofiviz.dashboards.serving import served_kernels_folder  # noqa: E402
from cofiviz.dashboards.warm import warm_server  # noqa: E402

folder = served_kernels_folder(sys.argv)
if folder is not None:
    if status_of(folder, os.getpid()) is None:   # `panel serve` run without `cofiviz serve`
        start_kernels(folder, first=first_kernels())
    atexit.register(shutil.rmtree, folder, True)
watch_kernels(folder)
threading.Thread(target=warm_server, args=(folder, served_apps(sys.argv)), daemon=True,
                 name="cofiviz-warm-server").start()
print(f"cofiviz: server setup took {time.perf_counter() - t0:.1f} s; the kernels, data and dashboards warm up "
      "behind it", flush=True)
