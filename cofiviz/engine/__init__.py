"""The engine: runs of models on splits and what keeps their results.

One training run (:mod:`.training`: fit with a trace, :mod:`.trace`, then evaluate), data specs loaded once per
process (:mod:`.loading`), a cell and its run (:mod:`.cell`), experiments of many cells (:mod:`.experiment`), what a
result's key records and the key migrations of the shipped results (:mod:`.result_keys`), tidy results
(:mod:`.results`), the results store (:mod:`.store`), sweeps over Dask (:mod:`.sweep`) and the warm-up that
compiles the kernels (:mod:`.warmup`). It sits above the models and the evaluation and below the reproductions, the
background processes and the pages (``ARCHITECTURE.md``).
"""
