"""The papers' evaluation protocols: each cuts a :class:`~cofiviz.Ratings` table into a :class:`~cofiviz.Split`.

Every protocol is a function ``protocol(ratings, <parameters>, seed=0) -> Split``:

* **seeded and reproducible**: the same input, parameters and seed give the identical split; another
  seed gives another one. All randomness comes from one ``numpy.random.default_rng(seed)``.
* **vectorised**: the per-user random choice is one random key per rating, one sort by (user, key)
  and a per-user rank (``rank = position - indptr[user]``); a user's first N ranks are a uniformly
  random N-subset of that user's ratings. O(n log n), no Python loop over ratings or users.
* **honest about what it removes**: ``split.protocol`` records the protocol's ``name``, every parameter
  (``params``), the ``seed``, the paper it follows (``reference``), the input's size (``input``), each
  filter in order (``filters``: rule, threshold, number of users / items / ratings removed and their
  original ids), the totals (``dropped``) and the size of every part (``sizes``). Nothing is dropped
  silently. The dict is JSON-ready and is written to ``protocol.json`` by :meth:`Split.write`.

Index space
    All parts of a split share one index space holding exactly the users and items that appear in at
    least one part (train, valid, test, negatives, given); users and items removed by a filter leave
    it (their original ids are listed in ``protocol["filters"]``). This is the index space that
    :meth:`Split.read` rebuilds from the written files, so a split survives a write/read round trip
    with the same ``n_users`` and ``n_items``.

Protocols (registry names in brackets, see :data:`PROTOCOLS` and :func:`get`)
    * :func:`weak_generalization` [``weak``], with the presets :func:`cofirank_weak`
      [``cofirank-weak``] (CofiRank §6: N given, users with fewer than N + 10 ratings dropped) and
      :func:`lcr_weak` [``lcr-weak``] (LCR §5.3: N given + 10 validation, fewer than N + 20 dropped);
    * :func:`fixed_ratio` [``fixed-ratio``] (LCR §5.2: a fixed fraction, 0.5, of each user's ratings);
    * :func:`strong_generalization` [``strong``] (CofiRank §6 after Yu et al.: new users folded in);
    * :func:`top_n` [``top-n``] (GAPfm §5.1: held-out items plus 1000 sampled unrated items);
    * :func:`controversial_items` [``controversial``] (the blog post: test only on items whose
      ratings have a high variance or entropy).

:func:`make` runs a protocol by name with checked keyword parameters (what the CLI and the dashboards
call); :func:`parameters` lists a protocol's parameters and defaults.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from .errors import DataError, ParameterError
from .jsonable import jsonable
from .ratings import Ratings
from .split import Split

__all__ = ["weak_generalization", "cofirank_weak", "lcr_weak", "fixed_ratio", "strong_generalization", "top_n",
           "controversial_items", "PROTOCOLS", "get", "make", "parameters", "REFERENCES"]

#: What each protocol follows, word for word where the paper is exact.
REFERENCES = {
    "weak": "CofiRank §6 (Weimer et al., NIPS 2007) weak generalization, LCR §5.3 variant with validation",
    "cofirank-weak": ("CofiRank §6: 'we randomly select N = 10, 20, 50 ratings for each user for training and "
                      "evaluate on the remaining ratings. Users with less then 20, 30, 60 rated movies where "
                      "removed to ensure that we could evaluate on at least 10 movies per user'"),
    "lcr-weak": ("LCR §5.3 (Lee et al., WWW 2014): 'For each user, N randomly chosen items, with N = 10, 20, 50, "
                 "are used for training. Another 10 items are set aside for validation set, and all other items "
                 "are used for testing. Users with less than N + 20 ratings are dropped'"),
    "fixed-ratio": ("LCR §5.2: 'keeps a fixed proportion of ratings for each user in the training set and moves the "
                    "rest of the observations to the test set ... if the ratio is 0.5, a user with 100 ratings will "
                    "have 50 of its ratings kept for training ... A user with 8 ratings is not dropped, but trained "
                    "with 4 ratings and tested with the remaining 4'"),
    "strong": ("CofiRank §6 following Yu et al. (ICML 2006): 'Movies with less than 50 ratings are discarded. The "
               "100 users with the most rated movies are selected as the test set and the methods are trained on "
               "the remaining users. In evaluation, 10, 20 or 50 ratings from those of the 100 test users are "
               "selected. For those ratings, the user training procedure is applied to optimize U. M is kept fixed "
               "... The remaining ratings are tested using the same procedure as for the weak generalization'"),
    "top-n": ("GAPfm §5.1 (Shi et al.): 'Given 10/20/30/50' random rated movies per user for training; users with "
              "less than 50 ratings excluded; only users with at least 5 test ratings evaluated; 'randomly select "
              "1000 unrated items (which are assumed to be irrelevant to the user) in addition to the ground truth'; "
              "P@5 relevance threshold 5"),
    "controversial": ("Blog post 003 ('The rank 1 problem'): 'prepare test data that contains only items which are "
                      "not popular and are controversial (i.e., the rating variance/entropy is high among users)'"),
}

_BASES = ("weak", "cofirank-weak", "lcr-weak", "fixed-ratio", "strong", "top-n")
_MEASURES = ("variance", "entropy")
_STATISTICS = ("train", "all")
_TOO_FEW_UNRATED = ("error", "drop", "all")


# ====================================================================== parameter checks
def _check_ratings(ratings) -> Ratings:
    if not isinstance(ratings, Ratings):
        raise DataError(f"a protocol needs a cofiviz.Ratings table, got {type(ratings).__name__} "
                        "(build one with Ratings.from_dataframe(df, user=..., item=..., rating=...))")
    if len(ratings) == 0:
        raise DataError("the ratings table is empty: there is nothing to split")
    return ratings


def _as_int(value):
    """An int from an int, an integral float or a decimal string (as a command line gives it); else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    return None


def _int(name: str, value, minimum: int) -> int:
    as_int = _as_int(value)
    if as_int is None:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    value = as_int
    if value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def _fraction(name: str, value, *, low_open: bool = True, high_open: bool = True, low: float = 0.0,
              high: float = 1.0) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, (bool, np.bool_)) or not math.isfinite(v):
        ok = False
    else:
        ok = (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
    if not ok:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ParameterError(f"{name} must be a number in {interval}, got {value!r}")
    return v


def _seed(seed) -> int:
    as_int = _as_int(seed)
    if as_int is None or as_int < 0:
        raise ParameterError(f"seed must be a non-negative integer (every protocol is reproducible), got {seed!r}")
    return as_int


def _choice(name: str, value, choices) -> str:
    if value not in choices:
        raise ParameterError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


# ====================================================================== building blocks
def _group_shuffle(groups: np.ndarray, n_groups: int, rng: np.random.Generator) -> np.ndarray:
    """An order of ``range(len(groups))`` sorted by group and uniformly shuffled within each group.

    One integer sort key per element: the group in the high bits, random bits below it (at least 40
    of them, so two elements of one group tie with probability < 2**-40; a tie keeps a fixed order).
    Several times faster than ``lexsort`` on (group, random float).
    """
    gbits = max(1, int(n_groups).bit_length())
    rbits = 62 - gbits
    if rbits < 40:
        key = rng.random(len(groups))
        return np.lexsort((key, groups))
    key = (groups.astype(np.int64) << rbits) | rng.integers(0, 1 << rbits, size=len(groups), dtype=np.int64)
    return np.argsort(key)


def _random_ranks(users: np.ndarray, indptr: np.ndarray, rng: np.random.Generator,
                  exclude: np.ndarray | None = None) -> np.ndarray:
    """A uniformly random rank ``0 .. n_u - 1`` of each rating within its user (users sorted).

    One random key per rating, one sort by (user, key): the position of a rating in that order
    minus its user's first position is its rank. Ratings flagged in ``exclude`` are placed after all
    others of their user, so the ranks of the remaining ratings are ``0 .. k_u - 1`` as if the
    excluded ones were not there.
    """
    n_users = len(indptr) - 1
    groups = users.astype(np.int64)
    if exclude is not None:                 # 2u + 1 sorts after 2u: excluded ratings go last in their user
        groups = 2 * groups + exclude
        n_users = 2 * n_users
    order = _group_shuffle(groups, n_users, rng)
    rank = np.empty(len(users), dtype=np.int64)
    u = users[order]
    rank[order] = np.arange(len(users), dtype=np.int64) - indptr[u]
    return rank


def _ids(ids: np.ndarray, index) -> list:
    return np.asarray(ids)[np.asarray(index, dtype=np.int64)].tolist()


class _Record:
    """Collects a protocol's report while it runs."""

    def __init__(self, name: str, ratings: Ratings, params: dict, seed: int | None):
        self.ratings = ratings
        self.protocol: dict[str, Any] = {
            "name": name,
            "params": dict(params),
            "seed": seed,
            "reference": REFERENCES.get(name, ""),
            "input": {"name": ratings.name, "users": int(np.count_nonzero(ratings.user_counts())),
                      "items": int(np.count_nonzero(ratings.item_counts())), "ratings": len(ratings)},
            "filters": [],
        }

    def users_dropped(self, step: str, rule: str, users: np.ndarray, counts: np.ndarray, **extra) -> None:
        """Record the users (indices into the input) removed by one filter with all their ratings."""
        users = np.asarray(users, dtype=np.int64)
        self.protocol["filters"].append({
            "step": step, "rule": rule, **extra, "users": int(len(users)),
            "ratings": int(np.asarray(counts)[users].sum()) if len(users) else 0,
            "user_ids": _ids(self.ratings.user_ids, users)})

    def items_dropped(self, step: str, rule: str, items: np.ndarray, counts: np.ndarray, **extra) -> None:
        items = np.asarray(items, dtype=np.int64)
        self.protocol["filters"].append({
            "step": step, "rule": rule, **extra, "items": int(len(items)),
            "ratings": int(np.asarray(counts)[items].sum()) if len(items) else 0,
            "item_ids": _ids(self.ratings.item_ids, items)})

    def note(self, key: str, value) -> None:
        self.protocol[key] = value


def _assemble(source: Ratings, parts: dict[str, Ratings | None], record: _Record | dict) -> Split:
    """Put parts (all in ``source``'s index space) into the index space of the users and items they use."""
    present = [p for p in parts.values() if p is not None]
    keep_users = np.unique(np.concatenate([p.users for p in present])) if present else np.zeros(0, np.int64)
    keep_items = np.unique(np.concatenate([p.items for p in present])) if present else np.zeros(0, np.int64)
    out = {k: (None if p is None else p.reindexed(keep_users, keep_items)) for k, p in parts.items()}
    protocol = record.protocol if isinstance(record, _Record) else record
    sizes: dict[str, Any] = {"users": int(len(keep_users)), "items": int(len(keep_items))}
    for k, p in out.items():
        if p is not None:
            sizes[k] = len(p)
            sizes[f"{k}_users"] = int(np.count_nonzero(p.user_counts()))
    protocol["sizes"] = sizes
    protocol["dropped"] = _totals(protocol, source, out)
    return Split(train=out["train"], test=out["test"], valid=out.get("valid"), negatives=out.get("negatives"),
                 given=out.get("given"), protocol=jsonable(protocol))


def _totals(protocol: dict, source: Ratings, out: dict) -> dict:
    kept = sum(len(p) for k, p in out.items() if p is not None and k != "negatives")
    n_in = protocol.get("input", {}).get("ratings", len(source))
    return {"users": sum(f.get("users", 0) for f in protocol["filters"]),
            "items": sum(f.get("items", 0) for f in protocol["filters"]),
            "ratings": int(n_in - kept)}


def _all_dropped(what: str) -> DataError:
    return DataError(f"every user was dropped: {what}; nothing is left to split")


# ====================================================================== weak generalization
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
    ratings = _check_ratings(ratings)
    n_train, n_valid, min_test = _int("n_train", n_train, 1), _int("n_valid", n_valid, 0), _int("min_test", min_test, 1)
    seed = _seed(seed)
    need = n_train + n_valid + min_test
    rec = _Record(_name, ratings, {"n_train": n_train, "n_valid": n_valid, "min_test": min_test}, seed)

    counts = ratings.user_counts()
    keep_user = counts >= need
    dropped = np.flatnonzero((counts > 0) & ~keep_user)
    rec.users_dropped("min_user_ratings", f"users with fewer than n_train + n_valid + min_test = {need} ratings",
                      dropped, counts, threshold=need)
    if not keep_user.any():
        raise _all_dropped(f"all {int(np.count_nonzero(counts))} users have fewer than n_train + n_valid + min_test "
                           f"= {n_train} + {n_valid} + {min_test} = {need} ratings (the most any user has is "
                           f"{int(counts.max())})")

    rng = np.random.default_rng(seed)
    rank = _random_ranks(ratings.users, ratings.indptr, rng)
    row = keep_user[ratings.users]
    parts = {"train": ratings.take(row & (rank < n_train), name="train"),
             "valid": ratings.take(row & (rank >= n_train) & (rank < n_train + n_valid), name="valid")
             if n_valid else None,
             "test": ratings.take(row & (rank >= n_train + n_valid), name="test")}
    return _assemble(ratings, parts, rec)


def cofirank_weak(ratings: Ratings, n_train: int = 10, seed: int = 0) -> Split:
    """CofiRank §6 weak generalization: N random training ratings per user, the rest for testing.

    Users with fewer than N + 10 ratings are dropped ("Users with less then 20, 30, 60 rated movies
    where removed to ensure that we could evaluate on at least 10 movies per user"); no validation
    part. Same as ``weak_generalization(ratings, n_train, n_valid=0, min_test=10, seed)``.
    """
    return weak_generalization(ratings, n_train=n_train, n_valid=0, min_test=10, seed=seed, _name="cofirank-weak")


def lcr_weak(ratings: Ratings, n_train: int = 10, seed: int = 0) -> Split:
    """LCR §5.3 weak generalization: N training, 10 validation ratings per user, the rest for testing.

    Users with fewer than N + 20 ratings are dropped ("to guarantee at least 10 items can be used for
    testing"). Same as ``weak_generalization(ratings, n_train, n_valid=10, min_test=10, seed)``.
    """
    return weak_generalization(ratings, n_train=n_train, n_valid=10, min_test=10, seed=seed, _name="lcr-weak")


# ====================================================================== fixed ratio
def _round_half_up(x: np.ndarray) -> np.ndarray:
    # the 1e-9 absorbs float error in ratio * count (0.7 * 10 = 7.000000000000001, 0.29 * 100 = 28.999...)
    return np.floor(x + 0.5 + 1e-9).astype(np.int64)


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
    ratings = _check_ratings(ratings)
    train_ratio = _fraction("train_ratio", train_ratio)
    valid_ratio = _fraction("valid_ratio", valid_ratio, low_open=False)
    if train_ratio + valid_ratio >= 1.0:
        raise ParameterError(f"train_ratio + valid_ratio must be < 1 to leave ratings for testing, got "
                             f"{train_ratio:g} + {valid_ratio:g} = {train_ratio + valid_ratio:g}")
    seed = _seed(seed)
    rec = _Record("fixed-ratio", ratings, {"train_ratio": train_ratio, "valid_ratio": valid_ratio}, seed)
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
        raise _all_dropped(f"with train_ratio={train_ratio:g} and valid_ratio={valid_ratio:g} every user's training "
                           f"or test part is empty (users have at most {int(counts.max())} ratings)")
    if valid_ratio > 0:
        rec.note("users_without_valid", int(np.count_nonzero(keep_user & (n_trv == n_tr))))

    rng = np.random.default_rng(seed)
    rank = _random_ranks(ratings.users, ratings.indptr, rng)
    row = keep_user[ratings.users]
    a, b = n_tr[ratings.users], n_trv[ratings.users]
    parts = {"train": ratings.take(row & (rank < a), name="train"),
             "valid": ratings.take(row & (rank >= a) & (rank < b), name="valid") if valid_ratio > 0 else None,
             "test": ratings.take(row & (rank >= b), name="test")}
    return _assemble(ratings, parts, rec)


# ====================================================================== strong generalization
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
    ratings = _check_ratings(ratings)
    n_given = _int("n_given", n_given, 1)
    n_test_users = _int("n_test_users", n_test_users, 1)
    min_item_ratings = _int("min_item_ratings", min_item_ratings, 1)
    min_test = _int("min_test", min_test, 1)
    seed = _seed(seed)
    rec = _Record("strong", ratings, {"n_given": n_given, "n_test_users": n_test_users,
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
        "user_ids": _ids(ratings.user_ids, np.sort(test_users))})
    short = test_users[counts[test_users] < n_given + min_test]
    rec.users_dropped("test_user_min_ratings", f"test users with fewer than n_given + min_test = {n_given + min_test} "
                      "ratings on the kept items (not replaced)", short, counts, threshold=n_given + min_test)
    is_test = np.zeros(ratings.n_users, dtype=bool)
    is_test[test_users] = True
    kept_test = is_test.copy()
    kept_test[short] = False
    if not kept_test.any():
        raise _all_dropped(f"all {n_test_users} test users have fewer than n_given + min_test = {n_given + min_test} "
                           "ratings on the kept items")

    rng = np.random.default_rng(seed)
    rank = _random_ranks(ratings.users, ratings.indptr, rng, exclude=~row_item)
    test_row = kept_test[ratings.users] & row_item
    parts = {"train": ratings.take(~is_test[ratings.users] & row_item, name="train"),
             "test": ratings.take(test_row & (rank >= n_given), name="test"),
             "given": ratings.take(test_row & (rank < n_given), name="given")}
    return _assemble(ratings, parts, rec)


# ====================================================================== top-N with sampled negatives
def _sample_distinct(m: np.ndarray, k: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """For each group g, ``k[g]`` distinct values drawn uniformly from ``range(m[g])``; vectorised.

    Returns ``(group, value)`` sorted by group, then value. Groups asking for more than half of their range draw
    the values to leave out instead, so rejection of repeats always keeps at least half of the draws
    and the number of rounds stays small. Every step treats the values of a group symmetrically, so
    the chosen set is a uniformly random ``k``-subset.
    """
    m = np.asarray(m, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    flip = 2 * k > m
    kk = np.where(flip, m - k, k)
    width = int(m.max()) + 1 if len(m) else 1
    groups = np.arange(len(m), dtype=np.int64)
    got_g = np.zeros(0, dtype=np.int64)
    got_v = np.zeros(0, dtype=np.int64)
    have = np.zeros(len(m), dtype=np.int64)
    while True:
        need = kk - have
        short = groups[need > 0]
        if len(short) == 0:
            break
        draws = np.ceil(need[short] * 1.5).astype(np.int64) + 4
        g = np.repeat(short, draws)
        v = np.floor(rng.random(len(g)) * m[g]).astype(np.int64)
        key = np.sort(np.concatenate([got_g * width + got_v, g * width + v]))
        if len(key) > 1:
            key = key[np.concatenate([[True], key[1:] != key[:-1]])]   # distinct (np.unique, but faster)
        got_g, got_v = key // width, key % width
        have = np.bincount(got_g, minlength=len(m))
    # keep a uniformly random kk-subset of each group's distinct draws
    order = _group_shuffle(got_g, len(m), rng)
    starts = np.zeros(len(m) + 1, dtype=np.int64)
    np.cumsum(have, out=starts[1:])
    rank = np.empty(len(got_g), dtype=np.int64)
    rank[order] = np.arange(len(got_g)) - starts[got_g[order]]
    sel = rank < kk[got_g]
    sel_g, sel_v = got_g[sel], got_v[sel]
    if not flip.any():
        key = np.sort(sel_g * width + sel_v)
        return key // width, key % width
    # flipped groups: every value of range(m) except the selected ones
    keep_plain = ~flip[sel_g]
    fg = groups[flip]
    all_g = np.repeat(fg, m[fg])
    fstarts = np.zeros(len(fg) + 1, dtype=np.int64)
    np.cumsum(m[fg], out=fstarts[1:])
    all_v = np.arange(len(all_g), dtype=np.int64) - np.repeat(fstarts[:-1], m[fg])
    excluded = np.isin(all_g * width + all_v, sel_g[~keep_plain] * width + sel_v[~keep_plain])
    out_g = np.concatenate([sel_g[keep_plain], all_g[~excluded]])
    out_v = np.concatenate([sel_v[keep_plain], all_v[~excluded]])
    key = np.sort(out_g * width + out_v)
    return key // width, key % width


def _sample_unrated(ratings: Ratings, users: np.ndarray, k: np.ndarray, pool: np.ndarray,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``k[j]`` distinct items of ``pool`` (sorted item indices) that ``users[j]`` has not rated, uniformly.

    Draws ranks among each user's unrated pool items, then maps rank r to the item: with the user's
    rated pool positions a_0 < a_1 < ..., and b_j = a_j - j (unrated items before a_j), the r-th
    unrated position is r + #{j : b_j <= r}.
    """
    P = len(pool)
    pos = np.searchsorted(pool, ratings.items)              # every rated item is in the pool
    j = np.arange(len(ratings), dtype=np.int64) - ratings.indptr[ratings.users]
    b_key = ratings.users.astype(np.int64) * (P + 1) + (pos - j)  # sorted: users sorted, b non-decreasing
    counts = ratings.user_counts()
    m = P - counts[users]
    grp, r = _sample_distinct(m, k, rng)
    u = users[grp].astype(np.int64)
    n_before = (np.searchsorted(b_key, u * (P + 1) + r, side="right") - ratings.indptr[u])
    return u, pool[r + n_before]


def top_n(ratings: Ratings, n_train: int = 10, n_negatives: int = 1000, relevance_threshold: float = 5,
          min_user_ratings: int = 50, min_test: int = 5, too_few_unrated: str = "error", seed: int = 0) -> Split:
    """Top-N recommendation with sampled unrated items counted irrelevant (GAPfm §5.1).

    The paper's protocol, with its numbers as defaults: users with fewer than ``min_user_ratings`` (50)
    ratings are excluded; each user's training fold is ``n_train`` random ratings ("Given 10", 20, 30
    and 50 in the paper); only users with at least ``min_test`` (5) held-out ratings are evaluated;
    "we first randomly select 1000 unrated items (which are assumed to be irrelevant to the user) in
    addition to the ground truth (i.e., rated items) for each user ... and then evaluate the
    recommendation list that consists of only the selected unrated items and the ground truth items"
    (``n_negatives=1000``); P@5 counts ratings >= 5 as relevant (``relevance_threshold=5``, recorded
    in ``protocol`` for the metrics; GAP@5, NDCG@5 and P@5 are the paper's measures).

    The paper tests on Netflix's separate probe set; on one table the held-out ratings are each
    user's ratings outside the training fold (as in weak generalization), so users with fewer than
    ``max(min_user_ratings, n_train + min_test)`` ratings are dropped.

    Negatives
        For each kept user, ``n_negatives`` distinct items drawn uniformly from the items the user has
        *not* rated anywhere in the input, among the items that have at least one rating in the input;
        stored in ``split.negatives`` with rating 0. ``split.candidates("test")`` is the held-out
        ratings plus the negatives. A user with fewer unrated items than ``n_negatives`` is an error
        (``too_few_unrated="error"``, the default: the paper's 1000 assumes a catalogue much larger
        than a user's ratings; MovieLens 100K has 1682 items and its most active user rated 737), or is
        dropped (``"drop"``), or gets every unrated item (``"all"``); both are reported.
        ``n_negatives=0`` ranks the held-out ratings only (``negatives`` is ``None``).

    Raises
    ------
    ParameterError
        A count below its minimum, or more negatives than some user's unrated items under
        ``too_few_unrated="error"`` (the message gives the largest value that fits).
    DataError
        Every user has too few ratings.
    """
    ratings = _check_ratings(ratings)
    n_train = _int("n_train", n_train, 1)
    n_negatives = _int("n_negatives", n_negatives, 0)
    min_user_ratings = _int("min_user_ratings", min_user_ratings, 1)
    min_test = _int("min_test", min_test, 1)
    try:
        relevance_threshold = float(relevance_threshold)
    except (TypeError, ValueError):
        raise ParameterError(f"relevance_threshold must be a rating value, got {relevance_threshold!r}") from None
    if not math.isfinite(relevance_threshold):
        raise ParameterError(f"relevance_threshold must be a finite rating value, got {relevance_threshold!r}")
    too_few_unrated = _choice("too_few_unrated", too_few_unrated, _TOO_FEW_UNRATED)
    seed = _seed(seed)
    rec = _Record("top-n", ratings, {"n_train": n_train, "n_negatives": n_negatives,
                                     "relevance_threshold": relevance_threshold, "min_user_ratings": min_user_ratings,
                                     "min_test": min_test, "too_few_unrated": too_few_unrated}, seed)

    counts = ratings.user_counts()
    active = counts > 0
    few = active & (counts < min_user_ratings)
    rec.users_dropped("min_user_ratings", f"users with fewer than min_user_ratings = {min_user_ratings} ratings",
                      np.flatnonzero(few), counts, threshold=min_user_ratings)
    few_test = active & ~few & (counts < n_train + min_test)
    rec.users_dropped("min_test", f"users with fewer than n_train + min_test = {n_train + min_test} ratings",
                      np.flatnonzero(few_test), counts, threshold=n_train + min_test)
    keep_user = active & ~few & ~few_test
    if not keep_user.any():
        raise _all_dropped(f"all {int(np.count_nonzero(active))} users have fewer than "
                           f"max(min_user_ratings, n_train + min_test) = {max(min_user_ratings, n_train + min_test)} "
                           f"ratings (the most any user has is {int(counts.max())})")

    item_counts = ratings.item_counts()
    pool = np.flatnonzero(item_counts > 0)
    unrated = len(pool) - counts
    short = keep_user & (unrated < n_negatives)
    if short.any():
        short_idx = np.flatnonzero(short)
        worst = short_idx[np.argmin(unrated[short_idx])]
        if too_few_unrated == "error":
            fits = int(unrated[keep_user].min())
            raise ParameterError(
                f"n_negatives={n_negatives} is more than the unrated items of {len(short_idx)} user(s): user "
                f"{_ids(ratings.user_ids, [worst])[0]!r} rated {int(counts[worst])} of the {len(pool)} items and has only "
                f"{int(unrated[worst])} unrated ones; expected n_negatives <= {fits}, or too_few_unrated='drop' "
                "(drop those users) or 'all' (give them every unrated item)")
        if too_few_unrated == "drop":
            rec.users_dropped("too_few_unrated", f"users with fewer than n_negatives = {n_negatives} unrated items",
                              short_idx, counts, threshold=n_negatives)
            keep_user = keep_user & ~short
            if not keep_user.any():
                raise _all_dropped(f"every user has fewer than n_negatives = {n_negatives} unrated items")
        else:
            rec.note("users_with_all_unrated", {"users": len(short_idx),
                                                "rule": f"fewer than n_negatives = {n_negatives} unrated items: "
                                                        "every unrated item is a negative",
                                                "user_ids": _ids(ratings.user_ids, short_idx)})

    rng = np.random.default_rng(seed)
    rank = _random_ranks(ratings.users, ratings.indptr, rng)
    row = keep_user[ratings.users]
    train = ratings.take(row & (rank < n_train), name="train")
    test = ratings.take(row & (rank >= n_train), name="test")
    negatives = None
    kept = np.flatnonzero(keep_user)
    if n_negatives > 0:
        k = np.minimum(n_negatives, unrated[kept])
        nu, ni = _sample_unrated(ratings, kept, k, pool, rng)
        negatives = ratings.like(nu, ni, np.zeros(len(nu)), name="negatives", allow_zero=True)
    rec.note("negative_pool", {"items": int(len(pool)), "rule": "items with at least one rating in the input that "
                                                                 "the user has not rated; rating 0 (irrelevant)"})
    relevant = np.bincount(test.users[test.ratings >= relevance_threshold], minlength=ratings.n_users)
    rec.note("users_without_relevant_test", int(np.count_nonzero(keep_user & (relevant == 0))))
    return _assemble(ratings, {"train": train, "test": test, "negatives": negatives}, rec)


# ====================================================================== controversial items
def _item_dispersion(r: Ratings, measure: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-item rating count and variance (ddof=1) or entropy (bits, over the distinct rating values)."""
    n = r.item_counts().astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        if measure == "variance":
            s1 = np.bincount(r.items, weights=r.ratings, minlength=r.n_items)
            mean = s1 / n
            dev = r.ratings - mean[r.items]
            ss = np.bincount(r.items, weights=dev * dev, minlength=r.n_items)
            value = ss / (n - 1)
        else:
            levels, code = np.unique(r.ratings, return_inverse=True)
            table = np.bincount(r.items.astype(np.int64) * len(levels) + code,
                                minlength=r.n_items * len(levels)).reshape(r.n_items, len(levels))
            p = table / n[:, None]
            value = -np.sum(np.where(table > 0, p * np.log2(np.where(table > 0, p, 1.0)), 0.0), axis=1)
    return n.astype(np.int64), value


def controversial_items(ratings: Ratings, base: str = "weak", measure: str = "variance", top_fraction: float = 0.1,
                        min_item_count: int = 10, statistics: str = "train", exclude_popular: float = 0.0,
                        min_test_items: int = 1, seed: int = 0, **base_params) -> Split:
    """A base protocol's split whose test part keeps only controversial items (the blog post's proposal).

    "It has been suggested that we should prepare test data that contains only items which are not
    popular and are controversial (i.e., the rating variance/entropy is high among users)" — the case
    where ranking by popularity stops being enough.

    1. ``base`` (``"weak"`` by default, any of ``weak``, ``cofirank-weak``, ``lcr-weak``,
       ``fixed-ratio``, ``strong``, ``top-n``) splits the ratings with ``seed`` and ``base_params``.
    2. Each item's dispersion (``measure="variance"``: sample variance of its ratings;
       ``"entropy"``: entropy in bits of the distribution of its rating values) is computed on
       ``statistics="train"``: the split's training ratings (plus the ``given`` ratings of strong
       generalization) — the default, so the choice of test items never looks at test ratings;
       ``"all"`` uses every rating of the input, test ratings included (a mild leak: an item is more
       likely selected when the held-out ratings disagree with the rest; use it only to compare).
    3. Eligible items have at least ``min_item_count`` ratings in that table and are not among the
       ``exclude_popular`` fraction of most-rated ones ("not popular"; 0 keeps all).
    4. The controversial items are the ``ceil(top_fraction * eligible)`` eligible items with the
       highest dispersion; items tied with the last one (within a relative 1e-10, so float rounding
       cannot split a tie) are included (``protocol["controversial"]`` records the threshold, the
       counts and the item ids).
    5. ``test`` keeps only ratings of controversial items; users left with fewer than
       ``min_test_items`` of them leave the test part (and their negatives), keep their training
       ratings, and are reported in ``protocol["test_users_removed"]``. ``train``, ``valid`` and
       ``given`` are the base split's.

    The parameter names differ from the base protocols' (``min_item_count``, not ``min_item_ratings``;
    ``min_test_items``, not ``min_test``) so that ``base_params`` can set those of the base.

    ``protocol["base"]`` holds the base split's own report; ``protocol["test_ratings"]`` says how many
    test ratings the base split had and how many remain.
    """
    ratings = _check_ratings(ratings)
    base = _choice("base", _normalise(base) if isinstance(base, str) else base, _BASES)
    measure = _choice("measure", measure, _MEASURES)
    statistics = _choice("statistics", statistics, _STATISTICS)
    top_fraction = _fraction("top_fraction", top_fraction, high_open=False)
    min_item_count = _int("min_item_count", min_item_count, 2 if measure == "variance" else 1)
    exclude_popular = _fraction("exclude_popular", exclude_popular, low_open=False)
    min_test_items = _int("min_test_items", min_test_items, 1)
    seed = _seed(seed)
    split = make(base, ratings, seed=seed, **base_params)

    if statistics == "train":
        stat = split.train if split.given is None else split.train.like(
            np.concatenate([split.train.users, split.given.users]),
            np.concatenate([split.train.items, split.given.items]),
            np.concatenate([split.train.ratings, split.given.ratings]))
    else:
        where = pd.Index(ratings.item_ids).get_indexer(split.train.item_ids)
        inv = np.full(ratings.n_items, -1, dtype=np.int64)
        inv[where] = np.arange(len(where))
        row = inv[ratings.items] >= 0
        stat = split.train.like(np.zeros(int(row.sum()), dtype=np.int64), inv[ratings.items[row]],
                                ratings.ratings[row])
    n, value = _item_dispersion(stat, measure)
    eligible = n >= min_item_count
    popular_excluded = 0
    if exclude_popular > 0 and eligible.any():
        cand = np.flatnonzero(eligible)
        n_pop = int(math.floor(exclude_popular * len(cand) + 1e-9))
        if n_pop:
            by_count = cand[np.lexsort((cand, -n[cand]))]
            eligible[by_count[:n_pop]] = False
            popular_excluded = n_pop
    n_eligible = int(np.count_nonzero(eligible))
    if n_eligible == 0:
        raise DataError(f"no item has at least min_item_count={min_item_count} ratings in the {statistics!r} "
                        f"statistics table (the most any item has is {int(n.max()) if len(n) else 0}); lower "
                        "min_item_count or use statistics='all'")
    k = max(1, int(math.ceil(top_fraction * n_eligible - 1e-9)))
    vals = value[eligible]
    threshold = float(np.sort(vals)[::-1][k - 1])
    controversial = eligible & (value >= threshold - 1e-10 * max(1.0, abs(threshold)))

    test = split.test
    keep_row = controversial[test.items]
    per_user = np.bincount(test.users[keep_row], minlength=test.n_users)
    base_test_users = test.user_counts() > 0
    removed = base_test_users & (per_user < min_test_items)
    keep_row &= ~removed[test.users]
    if not keep_row.any():
        raise DataError(f"no user has at least min_test_items={min_test_items} test ratings on the "
                        f"{int(controversial.sum())} controversial items; lower min_test_items, raise top_fraction "
                        "or lower min_item_count")
    new_test = test.take(keep_row, name="test")
    negatives = split.negatives
    if negatives is not None:
        negatives = negatives.take(~removed[negatives.users], name="negatives", allow_zero=True)
        if len(negatives) == 0:
            negatives = None

    base_protocol = dict(split.protocol)
    params = {"base": base, "measure": measure, "top_fraction": top_fraction, "min_item_count": min_item_count,
              "statistics": statistics, "exclude_popular": exclude_popular, "min_test_items": min_test_items,
              **base_params}
    protocol: dict[str, Any] = {
        "name": "controversial", "params": params, "seed": seed, "reference": REFERENCES["controversial"],
        "input": base_protocol.get("input"), "base": base_protocol, "filters": list(base_protocol.get("filters", [])),
        "controversial": {
            "measure": measure, "statistics": statistics, "threshold": threshold, "eligible_items": n_eligible,
            "popular_items_excluded": popular_excluded, "items": int(np.count_nonzero(controversial)),
            "item_ids": split.train.item_ids[np.flatnonzero(controversial)].tolist()},
        "test_ratings": {"base": len(test), "on_controversial_items": int(np.count_nonzero(controversial[test.items])),
                         "kept": len(new_test)},
        "test_users_removed": {
            "rule": f"test users with fewer than min_test_items = {min_test_items} ratings on controversial items "
                    "(they keep their training ratings)",
            "users": int(np.count_nonzero(removed)),
            "ratings": int(np.count_nonzero(controversial[test.items] & removed[test.users])),
            "user_ids": split.train.user_ids[np.flatnonzero(removed)].tolist()},
        "test_users": {"base": int(np.count_nonzero(base_test_users)),
                       "kept": int(np.count_nonzero(new_test.user_counts()))},
    }
    parts = {"train": split.train, "valid": split.valid, "test": new_test, "negatives": negatives,
             "given": split.given}
    out = _assemble(split.train, parts, protocol)
    # the base report counts what the base dropped; add the non-controversial test ratings removed here
    out.protocol["dropped"]["test_ratings_not_controversial"] = int(len(test) - len(new_test))
    return out


# ====================================================================== registry
#: Protocol functions by registry name (the names of ``cofiviz split PROTOCOL``).
PROTOCOLS: dict[str, Callable[..., Split]] = {
    "weak": weak_generalization,
    "cofirank-weak": cofirank_weak,
    "lcr-weak": lcr_weak,
    "fixed-ratio": fixed_ratio,
    "strong": strong_generalization,
    "top-n": top_n,
    "controversial": controversial_items,
}


def _normalise(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def get(name: str) -> Callable[..., Split]:
    """The protocol function registered as ``name`` (case-insensitive; ``_`` and ``-`` are the same).

    Raises
    ------
    ParameterError
        An unknown name; the message lists the valid ones.
    """
    key = _normalise(name) if isinstance(name, str) else name
    if key not in PROTOCOLS:
        raise ParameterError(f"unknown protocol {name!r}; valid protocols: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[key]


def parameters(name: str) -> dict[str, Any]:
    """A protocol's parameters and their defaults (the ratings argument left out)."""
    fn = get(name)
    out = {}
    for p in list(inspect.signature(fn).parameters.values())[1:]:
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name.startswith("_"):
            continue
        out[p.name] = p.default
    return out


def make(name: str, ratings: Ratings, **params) -> Split:
    """Run protocol ``name`` on ``ratings`` with keyword ``params`` (checked by name).

    Raises
    ------
    ParameterError
        An unknown protocol, or a parameter the protocol does not take (the message lists the valid
        ones; ``controversial`` also accepts its base protocol's parameters).
    """
    fn = get(name)
    valid = parameters(name)
    allowed = set(valid)
    if fn is controversial_items:
        base = _normalise(params.get("base", valid["base"])) if isinstance(params.get("base", "weak"), str) else None
        if base in _BASES:
            allowed |= set(parameters(base))
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ParameterError(f"protocol {_normalise(name)!r} has no parameter(s) {', '.join(map(repr, unknown))}; "
                             f"valid parameters: {', '.join(sorted(allowed))}")
    return fn(ratings, **params)
