"""A validation part carved out of a training table, for a search when no validation ratings are given."""

from __future__ import annotations

import numpy as np

from ..util.errors import DataError
from ..ratings import Ratings

__all__ = ["carve_validation"]


def carve_validation(train: Ratings, seed: int = 0) -> tuple[Ratings, Ratings]:
    """A seeded tenth of each user's training ratings as validation; the rest stays train.

    Each user with at least 5 training ratings gives ``max(2, round(n / 10))`` of them (a list of one
    item cannot be ranked, so two at least); users with fewer give none. Both parts keep ``train``'s index
    space.

    Returns
    -------
    (Ratings, Ratings)
        The training ratings left (``"train (90%)"``) and the validation ratings (``"valid (10% of train)"``).

    Raises
    ------
    DataError
        No user has 5 or more training ratings.
    """
    rng = np.random.default_rng(seed)
    counts = train.user_counts()
    hold = np.zeros(len(train), dtype=bool)
    for u in np.flatnonzero(counts >= 5):
        n = int(counts[u])
        k = max(2, int(round(n / 10)))
        start = int(train.indptr[u])
        pick = rng.choice(n, size=k, replace=False)
        hold[start + pick] = True
    if not hold.any():
        raise DataError("cannot carve a validation tenth out of train: no user has 5 or more training ratings; "
                        "pass --valid FILE (valid= in Python) to search parameters")
    return train.take(~hold, name="train (90%)"), train.take(hold, name="valid (10% of train)")
