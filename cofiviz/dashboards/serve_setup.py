"""Run by `panel serve --setup` before the first visitor: load the data and compile the kernels."""

import time

t0 = time.perf_counter()
import cofiviz  # noqa: E402
from cofiviz.dashboards.overview import DATASETS, load_dataset  # noqa: E402

cofiviz.warmup()
for label in DATASETS:
    try:
        load_dataset(label)
    except Exception as exc:  # a dataset that cannot load is reported in its page
        print(f"cofiviz: could not preload {label}: {exc}")
print(f"cofiviz: server warm-up took {time.perf_counter() - t0:.1f} s")
