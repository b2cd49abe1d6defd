"""Run by `panel serve --setup` before the first visitor: load the data and compile the kernels.

The data sets loaded here are all the dashboards' data sets except those loaded on first use
(``cofiviz.background.offered.LOADED_ON_FIRST_USE``: MovieLens 1M), which the first page that shows one reads.

First starts the training workers' forkserver, which readies its own copy of cofiviz (modules, kernels,
data sets) in the background while this process warms up. Then selects numba's thread-safe ``omp``
threading layer before any parallel kernel runs here: Panel runs the sessions' callbacks on several
threads (``--num-threads``) and the comparisons page computes cells in a thread per session, and the
``workqueue`` layer crashes when parallel kernels are launched from several threads at once.
"""

import sys
import time

t0 = time.perf_counter()
from cofiviz.background.training_process import start_forkserver  # noqa: E402

start_forkserver()
from cofiviz.dashboards._shared import use_thread_safe_numba  # noqa: E402

use_thread_safe_numba()
import cofiviz  # noqa: E402
from cofiviz.background.offered import load_dataset, preloaded_datasets  # noqa: E402
from cofiviz.dashboards.serving import served_apps  # noqa: E402
from cofiviz.dashboards.warm import warm_dashboards  # noqa: E402

cofiviz.warmup()
for label in preloaded_datasets():
    try:
        load_dataset(label)
    except Exception as exc:  # a dataset that cannot load is reported in its page
        print(f"cofiviz: could not preload {label}: {exc}")

try:  # build each dashboard once so that every module, plot and kernel they need is loaded and compiled
    warm_dashboards(apps=served_apps(sys.argv))
except Exception as exc:  # a dashboard that cannot warm up still reports its own errors in its page
    print(f"cofiviz: dashboard warm-up failed: {exc}")
print(f"cofiviz: server warm-up took {time.perf_counter() - t0:.1f} s")
