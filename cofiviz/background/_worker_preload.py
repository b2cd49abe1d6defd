"""Imported once by the training workers' forkserver: readies everything a run needs.

multiprocessing imports the modules named by ``set_forkserver_preload`` in the forkserver, and every
worker is forked from it with that state: cofiviz and every model imported, the numba kernels loaded
(``cofiviz.warmup``, in this process only) and the dashboards' data sets read, so that a run starts
training at once. The data sets of ``offered.LOADED_ON_FIRST_USE`` (MovieLens 1M) are not read here: a
run on one loads it itself. With a cold cache the kernels are not compiled here: a server's warm-up
compiles them in parallel processes meanwhile, and a worker loads (or compiles) the ones it needs.

Workers are forked after the warm-up's parallel kernels ran, so numba uses a fork-safe threading
layer here (GNU OpenMP is not fork-safe). Nothing may raise out of this import (the forkserver would
die): a failure is printed, and the workers then load what they need themselves.
"""

import time

_t0 = time.perf_counter()
try:
    import numba

    numba.config.THREADING_LAYER = "forksafe"

    import cofiviz
    from cofiviz.background import training_process  # noqa: F401  (the workers' entry point)
    from cofiviz.background.offered import load_dataset, preloaded_datasets
    from cofiviz.engine.warmup import PARALLEL_FROM, uncached_share

    if uncached_share() < PARALLEL_FROM:
        cofiviz.warmup(jobs=1)
    else:  # a server's warm-up compiles them meanwhile; a worker loads (or compiles) what it needs
        print("cofiviz training workers: numba's cache is cold; each run loads or compiles its own kernels")
    for _label in preloaded_datasets():
        try:
            load_dataset(_label)
        except Exception as _exc:  # the run that needs it reports the error
            print(f"cofiviz training workers: could not preload {_label}: {_exc}")
    print(f"cofiviz training workers: ready in {time.perf_counter() - _t0:.1f} s", flush=True)
except Exception as _exc:  # pragma: no cover - the workers still import what they need
    print(f"cofiviz training workers: preload failed: {_exc}", flush=True)
