"""Weak generalization (CofiRank §6, LCR §5.3): each user's ratings split into training, validation and test."""

from __future__ import annotations

import numpy as np

from ..ratings import Ratings
from ..split import Split
from ._common import Record, all_dropped, assemble, check_ratings, check_seed, int_at_least, random_ranks
from .registry import Offered, register

__all__ = ["weak_generalization", "cofirank_weak", "lcr_weak"]


# offered on the pages with a validation part of 5 ratings (early stopping, tuning) and 5 test ratings at least
@register("weak", offered=Offered("n_train", {"n_valid": 5, "min_test": 5}))
def weak_generalization(ratings: Ratings, n_train: int = 10, n_valid: int = 0, min_test: int = 10,
                        seed: int = 0, *, _name: str = "weak") -> Split:
    """Per user, ``n_train`` random ratings for training, ``n_valid`` more for validation, the rest for testing.

    CofiRank §6 weak generalization (``n_valid=0``, see :func:`cofirank_weak`) and its LCR §5.3
    variant (``n_valid=10``, see :func:`lcr_weak`).

    Parameters
    ----------
    ratings : Ratings
    n_train : int >= 1
        Training ratings per user (the papers' N = 10, 20, 50).
    n_valid : int >= 0
        Validation ratings per user (LCR: 10; CofiRank: none).
    min_test : int >= 1
        Users with fewer than ``n_train + n_valid + min_test`` ratings are dropped, so that every
        kept user has at least ``min_test`` test ratings (both papers: 10, i.e. CofiRank drops users
        with fewer than N + 10 ratings, LCR those with fewer than N + 20).
    seed : int
        Seed of the random choice of each user's training and validation ratings.

    Returns
    -------
    Split
        ``train`` with exactly ``n_train`` ratings per kept user, ``valid`` (``None`` when
        ``n_valid == 0``) with exactly ``n_valid``, ``test`` with the rest (at least ``min_test``).
        ``protocol["filters"]`` lists the dropped users.

    Raises
    ------
    ParameterError
        A negative or non-integer count (``n_train`` and ``min_test`` must be at least 1).
    DataError
        Every user has fewer than ``n_train + n_valid + min_test`` ratings.
    """
    ratings = check_ratings(ratings)
    n_train = int_at_least("n_train", n_train, 1)
    n_valid = int_at_least("n_valid", n_valid, 0)
    min_test = int_at_least("min_test", min_test, 1)
    seed = check_seed(seed)
    need = n_train + n_valid + min_test
    rec = Record(_name, ratings, {"n_train": n_train, "n_valid": n_valid, "min_test": min_test}, seed)

    counts = ratings.user_counts()
    keep_user = counts >= need
    dropped = np.flatnonzero((counts > 0) & ~keep_user)
    rec.users_dropped("min_user_ratings", f"users with fewer than n_train + n_valid + min_test = {need} ratings",
                      dropped, counts, threshold=need)
    if not keep_user.any():
        raise all_dropped(f"all {int(np.count_nonzero(counts))} users have fewer than n_train + n_valid + min_test "
                           f"= {n_train} + {n_valid} + {min_test} = {need} ratings (the most any user has is "
                           f"{int(counts.max())})")

    rng = np.random.default_rng(seed)
    rank = random_ranks(ratings.users, ratings.indptr, rng)
    row = keep_user[ratings.users]
    parts = {"train": ratings.take(row & (rank < n_train), name="train"),
             "valid": ratings.take(row & (rank >= n_train) & (rank < n_train + n_valid), name="valid")
             if n_valid else None,
             "test": ratings.take(row & (rank >= n_train + n_valid), name="test")}
    return assemble(ratings, parts, rec)


@register("cofirank-weak", offered=Offered("n_train", {}))
def cofirank_weak(ratings: Ratings, n_train: int = 10, seed: int = 0) -> Split:
    """CofiRank §6 weak generalization: N random training ratings per user, the rest for testing.

    Users with fewer than N + 10 ratings are dropped ("Users with less then 20, 30, 60 rated movies
    where removed to ensure that we could evaluate on at least 10 movies per user"); no validation
    part. Same as ``weak_generalization(ratings, n_train, n_valid=0, min_test=10, seed)``.
    """
    return weak_generalization(ratings, n_train=n_train, n_valid=0, min_test=10, seed=seed, _name="cofirank-weak")


@register("lcr-weak", offered=Offered("n_train", {}))
def lcr_weak(ratings: Ratings, n_train: int = 10, seed: int = 0) -> Split:
    """LCR §5.3 weak generalization: N training, 10 validation ratings per user, the rest for testing.

    Users with fewer than N + 20 ratings are dropped ("to guarantee at least 10 items can be used for
    testing"). Same as ``weak_generalization(ratings, n_train, n_valid=10, min_test=10, seed)``.
    """
    return weak_generalization(ratings, n_train=n_train, n_valid=10, min_test=10, seed=seed, _name="lcr-weak")
