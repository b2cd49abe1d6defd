"""Strong generalization (CofiRank §6 after Yu et al. 2006): new users folded in from N given ratings."""

from __future__ import annotations

import numpy as np

from ..util.errors import DataError
from ..ratings import Ratings
from ..split import Split
from ._common import Record, all_dropped, assemble, check_ratings, check_seed, ids_of, int_at_least, random_ranks
from .registry import register

__all__ = ["strong_generalization"]


@register("strong")
def strong_generalization(ratings: Ratings, n_given: int = 10, n_test_users: int = 100,
                          min_item_ratings: int = 50, min_test: int = 10, seed: int = 0) -> Split:
    """New users at test time (CofiRank §6, after Yu et al. 2006): fold them in from N given ratings.

    1. Items with fewer than ``min_item_ratings`` (50) ratings in the input are dropped.
    2. The ``n_test_users`` (100) users with the most ratings left are the test users; ties in the
       count are broken by the user's position in the table (smaller index, i.e. the smaller
       original id when ids are sorted, first), so the choice is deterministic and does not depend
       on the seed. ``protocol["test_users"]`` records the boundary count and how many users tied there.
    3. Test users with fewer than ``n_given + min_test`` ratings are dropped (not replaced); with the
       paper's data this never happens (CofiRank: "the remaining ratings are tested using the same
       procedure as for the weak generalization", i.e. at least 10 test ratings).
    4. Every other user is a training user with all their remaining ratings.

    Layout of the returned :class:`Split`
        * ``train``: every rating of the training users (on the kept items);
        * ``given``: ``n_given`` random ratings of each test user — a model folds the test user in
          from these with the item factors frozen ("the user training procedure is applied to optimize
          U. M is kept fixed");
        * ``test``: the test users' remaining ratings, ranked and scored as in weak generalization;
        * ``valid``: ``None``.
        No user appears in both ``train`` and ``given``/``test``.

    The seed only changes which N ratings are given ("We repeat the whole process 10 times": the test
    users are the same in every repetition).

    Raises
    ------
    ParameterError
        ``n_given``, ``n_test_users``, ``min_item_ratings`` or ``min_test`` below 1.
    DataError
        No item has ``min_item_ratings`` ratings, there are not more users than ``n_test_users``
        (no one left to train on), or every test user has too few ratings.
    """
    ratings = check_ratings(ratings)
    n_given = int_at_least("n_given", n_given, 1)
    n_test_users = int_at_least("n_test_users", n_test_users, 1)
    min_item_ratings = int_at_least("min_item_ratings", min_item_ratings, 1)
    min_test = int_at_least("min_test", min_test, 1)
    seed = check_seed(seed)
    rec = Record("strong", ratings, {"n_given": n_given, "n_test_users": n_test_users,
                                      "min_item_ratings": min_item_ratings, "min_test": min_test}, seed)

    item_counts = ratings.item_counts()
    keep_item = item_counts >= min_item_ratings
    rec.items_dropped("min_item_ratings", f"items with fewer than {min_item_ratings} ratings",
                      np.flatnonzero((item_counts > 0) & ~keep_item), item_counts, threshold=min_item_ratings)
    if not keep_item.any():
        raise DataError(f"no item has at least min_item_ratings={min_item_ratings} ratings (the most any item has is "
                        f"{int(item_counts.max())}); nothing is left to split")
    row_item = keep_item[ratings.items]
    counts_before = ratings.user_counts()
    counts = np.bincount(ratings.users[row_item], minlength=ratings.n_users)
    emptied = np.flatnonzero((counts_before > 0) & (counts == 0))
    rec.users_dropped("no_ratings_left", "users whose every rating was on a dropped item", emptied, counts_before)

    active = np.flatnonzero(counts > 0)
    if len(active) <= n_test_users:
        raise DataError(f"strong generalization needs more than n_test_users={n_test_users} users (the test users) "
                        f"plus users to train on, but only {len(active)} users have ratings on the kept items")
    order = active[np.lexsort((active, -counts[active]))]     # most ratings first, ties by index
    test_users = order[:n_test_users]
    boundary = int(counts[test_users[-1]])
    rec.note("test_users", {
        "rule": f"the {n_test_users} users with the most ratings on the kept items; ties broken by smaller user index",
        "boundary_count": boundary,
        "tied_at_boundary": int(np.count_nonzero(counts[active] == boundary)),
        "taken_at_boundary": int(np.count_nonzero(counts[test_users] == boundary)),
        "user_ids": ids_of(ratings.user_ids, np.sort(test_users))})
    short = test_users[counts[test_users] < n_given + min_test]
    rec.users_dropped("test_user_min_ratings", f"test users with fewer than n_given + min_test = {n_given + min_test} "
                      "ratings on the kept items (not replaced)", short, counts, threshold=n_given + min_test)
    is_test = np.zeros(ratings.n_users, dtype=bool)
    is_test[test_users] = True
    kept_test = is_test.copy()
    kept_test[short] = False
    if not kept_test.any():
        raise all_dropped(f"all {n_test_users} test users have fewer than n_given + min_test = {n_given + min_test} "
                           "ratings on the kept items")

    rng = np.random.default_rng(seed)
    rank = random_ranks(ratings.users, ratings.indptr, rng, exclude=~row_item)
    test_row = kept_test[ratings.users] & row_item
    parts = {"train": ratings.take(~is_test[ratings.users] & row_item, name="train"),
             "test": ratings.take(test_row & (rank >= n_given), name="test"),
             "given": ratings.take(test_row & (rank < n_given), name="given")}
    return assemble(ratings, parts, rec)
