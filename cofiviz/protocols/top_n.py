"""Top-N recommendation with sampled unrated items counted irrelevant (GAPfm §5.1), with or without validation."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..jsonable import jsonable
from ..ratings import Ratings
from ..split import Split
from ._common import (Record, all_dropped, assemble, check_ratings, check_seed, choice, group_shuffle, ids_of,
                      int_at_least, random_ranks, sizes)
from .registry import REFERENCES, register

__all__ = ["top_n", "gapfm_top_n"]

#: What ``top_n`` does with a user who has fewer unrated items than ``n_negatives``.
_TOO_FEW_UNRATED = ("error", "drop", "all")


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
    order = group_shuffle(got_g, len(m), rng)
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


@register("top-n")
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
    ratings = check_ratings(ratings)
    n_train = int_at_least("n_train", n_train, 1)
    n_negatives = int_at_least("n_negatives", n_negatives, 0)
    min_user_ratings = int_at_least("min_user_ratings", min_user_ratings, 1)
    min_test = int_at_least("min_test", min_test, 1)
    try:
        relevance_threshold = float(relevance_threshold)
    except (TypeError, ValueError):
        raise ParameterError(f"relevance_threshold must be a rating value, got {relevance_threshold!r}") from None
    if not math.isfinite(relevance_threshold):
        raise ParameterError(f"relevance_threshold must be a finite rating value, got {relevance_threshold!r}")
    too_few_unrated = choice("too_few_unrated", too_few_unrated, _TOO_FEW_UNRATED)
    seed = check_seed(seed)
    rec = Record("top-n", ratings, {"n_train": n_train, "n_negatives": n_negatives,
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
        raise all_dropped(f"all {int(np.count_nonzero(active))} users have fewer than "
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
                f"{ids_of(ratings.user_ids, [worst])[0]!r} rated {int(counts[worst])} of the {len(pool)} items and has "
                f"only {int(unrated[worst])} unrated ones; expected n_negatives <= {fits}, or too_few_unrated='drop' "
                "(drop those users) or 'all' (give them every unrated item)")
        if too_few_unrated == "drop":
            rec.users_dropped("too_few_unrated", f"users with fewer than n_negatives = {n_negatives} unrated items",
                              short_idx, counts, threshold=n_negatives)
            keep_user = keep_user & ~short
            if not keep_user.any():
                raise all_dropped(f"every user has fewer than n_negatives = {n_negatives} unrated items")
        else:
            rec.note("users_with_all_unrated", {"users": len(short_idx),
                                                "rule": f"fewer than n_negatives = {n_negatives} unrated items: "
                                                        "every unrated item is a negative",
                                                "user_ids": ids_of(ratings.user_ids, short_idx)})

    rng = np.random.default_rng(seed)
    rank = random_ranks(ratings.users, ratings.indptr, rng)
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
    return assemble(ratings, {"train": train, "test": test, "negatives": negatives}, rec)


@register("gapfm-top-n")
def gapfm_top_n(ratings: Ratings, n_train: int = 10, n_negatives: int = 1000, n_valid: int = 5,
                n_valid_negatives: int = 200, seed: int = 0) -> Split:
    """GAPfm's top-N protocol with a validation part carved from each user's held-out items.

    GAPfm tunes its parameters on "1.5% ... of the data" set aside for validation (§5.1); this is
    :func:`top_n` (``too_few_unrated="all"``, the other parameters at the paper's values) followed by:

    * ``valid`` takes ``min(n_valid, k_u - 1)`` random held-out ratings of each user with ``k_u``
      held-out ratings (so at least one stays in ``test``), plus ``n_valid_negatives`` items (fewer when
      fewer remain) that the user rated nowhere and that are not among the user's test candidates,
      with rating 0 (irrelevant);
    * ``test`` keeps the other held-out ratings; ``negatives`` and ``train`` are :func:`top_n`'s.

    The carving draws from ``numpy.random.default_rng([seed, 17])``, users in index order, so the
    :func:`top_n` split underneath is the one ``top_n(..., seed=seed)`` makes. The validation part
    holds ratings 0: :meth:`Split.write` lists it among the unrated parts, so that :meth:`Split.read` reads
    it back.

    Parameters
    ----------
    ratings : Ratings
    n_train, n_negatives : int
        As in :func:`top_n`.
    n_valid : int >= 0
        Held-out ratings per user moved to validation.
    n_valid_negatives : int >= 0
        Unrated items per user added to validation with rating 0.
    seed : int

    Raises
    ------
    ParameterError
        A count below its minimum.
    DataError
        As :func:`top_n`.
    """
    ratings = check_ratings(ratings)
    n_valid = int_at_least("n_valid", n_valid, 0)
    n_valid_negatives = int_at_least("n_valid_negatives", n_valid_negatives, 0)
    seed = check_seed(seed)
    sp = top_n(ratings, n_train=n_train, n_negatives=n_negatives, too_few_unrated="all", seed=seed)
    rng = np.random.default_rng([seed, 17])
    test, neg = sp.test, sp.negatives
    n_items = test.n_items
    hold = np.zeros(len(test), dtype=bool)
    vu, vi = [], []
    for u in np.flatnonzero(test.user_counts() > 0):
        lo, hi = test.indptr[u], test.indptr[u + 1]
        k = min(n_valid, hi - lo - 1)
        if k > 0:
            hold[lo + rng.choice(hi - lo, size=k, replace=False)] = True
        used = np.zeros(n_items, dtype=bool)
        used[sp.train.items[sp.train.user_slice(u)]] = True
        used[test.items[lo:hi]] = True
        if neg is not None:
            used[neg.items[neg.user_slice(u)]] = True
        free = np.flatnonzero(~used)
        pick = rng.choice(free, size=min(n_valid_negatives, len(free)), replace=False)
        vu.append(np.full(len(pick), u))
        vi.append(pick)
    held = test.take(hold)
    vu = np.concatenate(vu) if vu else np.zeros(0, np.int64)
    vi = np.concatenate(vi) if vi else np.zeros(0, np.int64)
    valid = test.like(np.concatenate([held.users, vu]), np.concatenate([held.items, vi]),
                      np.concatenate([held.ratings, np.zeros(len(vu))]), name="valid", allow_zero=True)
    test = test.take(~hold, name="test")
    protocol = dict(sp.protocol)
    protocol.update(name="gapfm-top-n", params={**sp.protocol["params"], "n_valid": n_valid,
                                                 "n_valid_negatives": n_valid_negatives},
                    reference=REFERENCES["gapfm-top-n"])
    protocol["validation"] = (f"{n_valid} held-out rated items per user moved from test to valid, plus "
                              f"{n_valid_negatives} unrated items not among the test candidates (rating 0)")
    protocol["sizes"] = sizes({"train": sp.train, "valid": valid, "test": test, "negatives": neg})
    return Split(train=sp.train, test=test, valid=valid, negatives=neg, protocol=jsonable(protocol))
