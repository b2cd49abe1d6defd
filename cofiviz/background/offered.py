"""The data sets the pages offer, by label, loaded once per process.

A label (``"MovieLens 100K"``) names a :mod:`cofiviz.datasets` loader and its arguments (:data:`DATASETS`). A
server's setup and the training workers' forkserver load the labels of :func:`preloaded_datasets` as they start;
the others (:data:`LOADED_ON_FIRST_USE`) are loaded by the first page or run that asks for them.
"""

from __future__ import annotations

import functools

from .. import datasets
from ..ratings import Ratings

__all__ = ["DATASETS", "LOADED_ON_FIRST_USE", "preloaded_datasets", "load_dataset"]

#: the data sets the dashboards offer: label -> (cofiviz.datasets name, keyword arguments)
DATASETS = {
    "MovieLens 100K": ("movielens-100k", {}),
    "MovieLens 1M": ("movielens-1m", {}),
    "Synthetic: popularity-dominated": ("synthetic", {"kind": "popularity", "n_users": 1000, "n_items": 800,
                                                      "seed": 0}),
    "Synthetic: locally low-rank": ("synthetic", {"kind": "local_low_rank", "n_users": 1000, "n_items": 800,
                                                  "seed": 0}),
    "Synthetic: small (300 users, 200 items)": ("synthetic", {"kind": "local_low_rank", "n_users": 300,
                                                              "n_items": 200, "n_ratings": 12000, "seed": 0}),
}

#: labels that are loaded when a page first asks for them, not when a server or the training workers
#: start: a million ratings would make every start slower for a data set few sessions open
LOADED_ON_FIRST_USE = frozenset({"MovieLens 1M"})


def preloaded_datasets() -> list[str]:
    """The labels of :data:`DATASETS` that a server's setup and the training workers load as they start."""
    return [label for label in DATASETS if label not in LOADED_ON_FIRST_USE]


@functools.lru_cache(maxsize=8)
def load_dataset(label: str) -> Ratings:
    """The dataset behind a dashboard label, loaded once per process (read-only, shared)."""
    name, kwargs = DATASETS[label]
    return datasets.load(name, **kwargs)
