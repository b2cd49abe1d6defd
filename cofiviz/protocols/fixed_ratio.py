"""A fixed fraction of each user's ratings for training (LCR §5.2)."""

from __future__ import annotations

import numpy as np

from ..util.errors import ParameterError
from ..ratings import Ratings
from ..split import Split
from ._common import Record, all_dropped, assemble, check_ratings, check_seed, fraction, random_ranks
from .registry import Offered, register

__all__ = ["fixed_ratio"]


def _round_half_up(x: np.ndarray) -> np.ndarray:
    # the 1e-9 absorbs float error in ratio * count (0.7 * 10 = 7.000000000000001, 0.29 * 100 = 28.999...)
    return np.floor(x + 0.5 + 1e-9).astype(np.int64)


@register("fixed-ratio", offered=Offered(None, {"valid_ratio": 0.1}))
def fixed_ratio(ratings: Ratings, train_ratio: float = 0.5, valid_ratio: float = 0.0, seed: int = 0) -> Split:
    """A fixed fraction of each user's ratings for training (LCR §5.2, ratio 0.5), optionally some for validation.

    Rounding rule (round half up, cumulative): a user with n ratings gets
    ``n_train = floor(train_ratio * n + 1/2)`` training ratings,
    ``n_valid = floor((train_ratio + valid_ratio) * n + 1/2) - n_train`` validation ratings and the rest
    for testing, so the parts always add up to n and a half goes to training (train_ratio 0.5: 8 → 4 + 4
    as in the paper, 7 → 4 + 3, 1 → 1 + 0).

    Users whose training part or test part would be empty are dropped (each reason reported apart in
    ``protocol["filters"]``); the paper keeps users with few ratings, so nothing else is filtered. With
    ``valid_ratio > 0``, users whose validation part rounds to zero are kept and counted in
    ``protocol["users_without_valid"]``. LCR's cross validation sets aside 20 % of the training data:
    with a 0.5 ratio that is ``train_ratio=0.4, valid_ratio=0.1``.

    Raises
    ------
    ParameterError
        ``train_ratio`` outside (0, 1), ``valid_ratio`` outside [0, 1) or ``train_ratio + valid_ratio >= 1``.
    DataError
        Every user would have an empty training or test part.
    """
    ratings = check_ratings(ratings)
    train_ratio = fraction("train_ratio", train_ratio)
    valid_ratio = fraction("valid_ratio", valid_ratio, low_open=False)
    if train_ratio + valid_ratio >= 1.0:
        raise ParameterError(f"train_ratio + valid_ratio must be < 1 to leave ratings for testing, got "
                             f"{train_ratio:g} + {valid_ratio:g} = {train_ratio + valid_ratio:g}")
    seed = check_seed(seed)
    rec = Record("fixed-ratio", ratings, {"train_ratio": train_ratio, "valid_ratio": valid_ratio}, seed)
    rec.note("rounding", "n_train = floor(train_ratio*n + 1/2); n_valid = floor((train_ratio+valid_ratio)*n + 1/2) "
                         "- n_train; n_test = the rest")

    counts = ratings.user_counts()
    n_tr = _round_half_up(train_ratio * counts)
    n_trv = _round_half_up((train_ratio + valid_ratio) * counts)
    active = counts > 0
    no_train = active & (n_tr == 0)
    no_test = active & ~no_train & (n_trv >= counts)
    rec.users_dropped("empty_train", f"users whose training part rounds to 0 ratings (train_ratio={train_ratio:g})",
                      np.flatnonzero(no_train), counts)
    rec.users_dropped("empty_test", "users whose test part would be empty (too few ratings to split)",
                      np.flatnonzero(no_test), counts)
    keep_user = active & ~no_train & ~no_test
    if not keep_user.any():
        raise all_dropped(f"with train_ratio={train_ratio:g} and valid_ratio={valid_ratio:g} every user's training "
                           f"or test part is empty (users have at most {int(counts.max())} ratings)")
    if valid_ratio > 0:
        rec.note("users_without_valid", int(np.count_nonzero(keep_user & (n_trv == n_tr))))

    rng = np.random.default_rng(seed)
    rank = random_ranks(ratings.users, ratings.indptr, rng)
    row = keep_user[ratings.users]
    a, b = n_tr[ratings.users], n_trv[ratings.users]
    parts = {"train": ratings.take(row & (rank < a), name="train"),
             "valid": ratings.take(row & (rank >= a) & (rank < b), name="valid") if valid_ratio > 0 else None,
             "test": ratings.take(row & (rank >= b), name="test")}
    return assemble(ratings, parts, rec)
