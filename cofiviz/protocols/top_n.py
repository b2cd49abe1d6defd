"""Top-N recommendation with sampled unrated items counted irrelevant (GAPfm §5.1): on one table, with or without
validation, and on the Netflix Prize's training and probe sets as the paper ran it."""

from __future__ import annotations

import math

import numpy as np

from ..util.errors import DataError, ParameterError
from ..util.jsonable import jsonable
from ..ratings import Ratings
from ..split import Split
from ._common import (Record, all_dropped, assemble, check_ratings, check_seed, choice, group_shuffle, ids_of,
                      int_at_least, random_ranks, sizes)
from .registry import REFERENCES, register

__all__ = ["top_n", "gapfm_top_n", "gapfm_netflix"]

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
    relevance_threshold = _check_threshold(relevance_threshold)
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

    keep_user, pool, unrated = _enough_unrated(ratings, rec, keep_user, counts, n_negatives, too_few_unrated)

    rng = np.random.default_rng(seed)
    rank = random_ranks(ratings.users, ratings.indptr, rng)
    row = keep_user[ratings.users]
    train = ratings.take(row & (rank < n_train), name="train")
    test = ratings.take(row & (rank >= n_train), name="test")
    negatives = _negatives(ratings, rec, np.flatnonzero(keep_user), n_negatives, pool, unrated, rng)
    relevant = np.bincount(test.users[test.ratings >= relevance_threshold], minlength=ratings.n_users)
    rec.note("users_without_relevant_test", int(np.count_nonzero(keep_user & (relevant == 0))))
    return assemble(ratings, {"train": train, "test": test, "negatives": negatives}, rec)


def _check_threshold(relevance_threshold) -> float:
    try:
        relevance_threshold = float(relevance_threshold)
    except (TypeError, ValueError):
        raise ParameterError(f"relevance_threshold must be a rating value, got {relevance_threshold!r}") from None
    if not math.isfinite(relevance_threshold):
        raise ParameterError(f"relevance_threshold must be a finite rating value, got {relevance_threshold!r}")
    return relevance_threshold


def _enough_unrated(ratings: Ratings, rec: Record, keep_user: np.ndarray, counts: np.ndarray, n_negatives: int,
                    too_few_unrated: str, tested_only: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The users kept once those with fewer unrated items than ``n_negatives`` are handled as ``too_few_unrated``
    says (an error, dropped or given every unrated item, recorded), the pool of items negatives come from (those
    with a rating in the input), and each user's number of unrated pool items.

    With ``tested_only``, ``keep_user`` are the users to test and "drop" only leaves them untested (they keep their
    training ratings): it is recorded as a note, not as a filter that removed them.
    """
    pool = np.flatnonzero(ratings.item_counts() > 0)
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
        if too_few_unrated == "drop" and tested_only:
            rec.note("not_tested_too_few_unrated", {"users": len(short_idx),
                                                    "rule": f"fewer than n_negatives = {n_negatives} unrated items: "
                                                            "trained on, not tested",
                                                    "user_ids": ids_of(ratings.user_ids, short_idx)})
            keep_user = keep_user & ~short
            if not keep_user.any():
                raise all_dropped(f"every user to test has fewer than n_negatives = {n_negatives} unrated items")
        elif too_few_unrated == "drop":
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
    return keep_user, pool, unrated


def _negatives(ratings: Ratings, rec: Record, users: np.ndarray, n_negatives: int, pool: np.ndarray,
               unrated: np.ndarray, rng: np.random.Generator) -> Ratings | None:
    """``n_negatives`` unrated pool items of each of ``users`` (all of them when fewer), rating 0; None for none."""
    rec.note("negative_pool", {"items": int(len(pool)), "rule": "items with at least one rating in the input that "
                                                                 "the user has not rated; rating 0 (irrelevant)"})
    if n_negatives == 0:
        return None
    nu, ni = _sample_unrated(ratings, users, np.minimum(n_negatives, unrated[users]), pool, rng)
    return ratings.like(nu, ni, np.zeros(len(nu)), name="negatives", allow_zero=True)


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


@register("gapfm-netflix")
def gapfm_netflix(ratings: Ratings, n_train: int = 10, n_negatives: int = 1000, min_user_ratings: int = 50,
                  min_probe: int = 5, n_valid: int = 0, relevance_threshold: float = 5,
                  too_few_unrated: str = "all", seed: int = 0) -> Split:
    """GAPfm's Netflix protocol (GAPfm §5.1 "Experimental setup"): "Given N" training ratings, tested on the probe set.

    The Netflix Prize's ratings come as a training set and a probe set of pairs whose ratings the training set
    holds (:func:`cofiviz.datasets.netflix_prize` marks them in ``ratings.probe``); GAPfm uses the training set
    *minus* the probe set for training and the probe set for testing. In the paper's words (§5.1.1–5.1.2):

    1. "we exclude the users with less than 50 ratings from the training set" (``min_user_ratings``; the paper's
       Table 1 leaves 319,275 users and 95,085,018 ratings);
    2. "under the condition of 'Given 10', we randomly select 10 rated movies for each user in order to generate a
       training data fold" (``n_train``: 10, 20, 30, 40 or 50 in its Tables 2–3): ``split.train``;
    3. "measure the recommendation performance only based on the ground truth of the users who have at least 5
       rated movies in the probe set" (``min_probe``): ``split.test`` holds those users' probe ratings;
    4. "randomly select 1000 unrated items (which are assumed to be irrelevant to the user) in addition to the
       ground truth" (``n_negatives``): ``split.negatives``, rating 0, drawn as :func:`top_n` draws them;
    5. P@5 counts rating 5 as relevant (``relevance_threshold``, recorded for the metrics).

    Where the text runs out, these are choices:

    * the training set is the Netflix ratings minus the probe pairs (the published training set *includes* the
      probe ratings), and a user's count of step 1 is of those ratings;
    * a test user is a user kept by step 1 (a user needs a training fold to be ranked); users kept with fewer than
      ``min_probe`` probe ratings are trained on and not tested, and their probe ratings are in no part
      (``protocol["unused"]`` counts them); a user with fewer than ``n_train + n_valid`` training-set ratings (only
      when ``n_train + n_valid > min_user_ratings``) is dropped too;
    * the training-set ratings outside a user's Given-N fold are in no part (the fold is the only input);
    * the unrated items are those the user rated neither in the training set nor in the probe set, among the
      movies that have a rating; a test user with fewer than ``n_negatives`` of them (Netflix has customers who
      rated nearly all 17,770 movies) gets every unrated movie by default (``too_few_unrated="all"``, recorded in
      ``protocol["users_with_all_unrated"]``); ``"drop"`` leaves such users untested, ``"error"`` refuses;
    * the paper's validation set ("1.5% ... of the data in the training set") is not specified further: with
      ``n_valid > 0`` each kept user's validation part is ``n_valid`` more random training-set ratings outside the
      fold (ranked among themselves; the default 0 makes none).

    Parameters
    ----------
    ratings : Ratings
        The Netflix Prize ratings with their ``probe`` mask (``datasets.netflix_prize(path)``, or any table with a
        boolean ``probe`` array aligned with its ratings).
    n_train : int >= 1
        N of "Given N".
    n_negatives : int >= 0
        Sampled unrated items per test user.
    min_user_ratings : int >= 1
        Users with fewer training-set ratings are excluded.
    min_probe : int >= 1
        Users with fewer probe ratings are not tested.
    n_valid : int >= 0
        Validation ratings per kept user (training-set ratings outside the fold).
    relevance_threshold : float
        The rating from which P@k counts an item relevant (recorded in ``protocol["params"]``).
    too_few_unrated : {"all", "drop", "error"}
        A test user with fewer unrated movies than ``n_negatives``: every unrated movie is a negative (default),
        the user is not tested (still trained on), or an error.
    seed : int
        Seeds the folds, the validation ratings and the negatives.

    Returns
    -------
    Split
        ``train`` (N ratings of every kept user), ``valid`` (or None), ``test`` (probe ratings of the test users),
        ``negatives``; ``protocol`` records the filters with the users they removed, the test users and what was
        left unused.

    Raises
    ------
    DataError
        Ratings without a probe mask, a probe mask of the wrong shape, no user with ``min_user_ratings``
        training-set ratings, or no kept user with ``min_probe`` probe ratings.
    ParameterError
        A count below its minimum, an unknown ``too_few_unrated``, or more negatives than some test user's unrated
        items under ``too_few_unrated="error"``.
    """
    ratings = check_ratings(ratings)
    probe = getattr(ratings, "probe", None)
    if probe is None:
        raise DataError("gapfm-netflix tests on the Netflix Prize's probe set, and these ratings have none: read them "
                        "with cofiviz.datasets.netflix_prize(path) (probe.txt beside the training set; --data "
                        "netflix-prize=FOLDER on the command line), which marks the probe ratings in ratings.probe")
    probe = np.asarray(probe)
    if probe.dtype != bool or probe.shape != (len(ratings),):
        raise DataError(f"ratings.probe must be a boolean array with one value per rating ({len(ratings):,}), got "
                        f"{probe.dtype} of shape {probe.shape}")
    n_train = int_at_least("n_train", n_train, 1)
    n_negatives = int_at_least("n_negatives", n_negatives, 0)
    min_user_ratings = int_at_least("min_user_ratings", min_user_ratings, 1)
    min_probe = int_at_least("min_probe", min_probe, 1)
    n_valid = int_at_least("n_valid", n_valid, 0)
    relevance_threshold = _check_threshold(relevance_threshold)
    too_few_unrated = choice("too_few_unrated", too_few_unrated, _TOO_FEW_UNRATED)
    seed = check_seed(seed)
    rec = Record("gapfm-netflix", ratings, {"n_train": n_train, "n_negatives": n_negatives,
                                             "min_user_ratings": min_user_ratings, "min_probe": min_probe,
                                             "n_valid": n_valid, "relevance_threshold": relevance_threshold,
                                             "too_few_unrated": too_few_unrated}, seed)

    counts = ratings.user_counts()
    in_probe = np.bincount(ratings.users[probe], minlength=ratings.n_users)
    in_training = counts - in_probe
    rec.note("training_set", {"rule": "every rating minus the probe set's", "ratings": int(in_training.sum()),
                              "users": int(np.count_nonzero(in_training)), "probe_ratings": int(in_probe.sum()),
                              "probe_users": int(np.count_nonzero(in_probe))})
    active = counts > 0
    few = active & (in_training < min_user_ratings)
    rec.users_dropped("min_user_ratings", f"users with fewer than min_user_ratings = {min_user_ratings} ratings in "
                      "the training set (probe ratings not counted)", np.flatnonzero(few), counts,
                      threshold=min_user_ratings)
    short = active & ~few & (in_training < n_train + n_valid)
    rec.users_dropped("n_train_n_valid", f"users with fewer than n_train + n_valid = {n_train + n_valid} ratings in "
                      "the training set", np.flatnonzero(short), counts, threshold=n_train + n_valid)
    keep_user = active & ~few & ~short
    if not keep_user.any():
        raise all_dropped(f"all {int(np.count_nonzero(active))} users have fewer than "
                           f"max(min_user_ratings, n_train + n_valid) = {max(min_user_ratings, n_train + n_valid)} "
                           f"ratings in the training set (the most any user has is {int(in_training.max())})")
    tested = keep_user & (in_probe >= min_probe)
    if not tested.any():
        raise DataError(f"no user kept has at least min_probe = {min_probe} probe ratings (the most any kept user has "
                        f"is {int(in_probe[keep_user].max())}): there is no one to test")
    tested, pool, unrated = _enough_unrated(ratings, rec, tested, counts, n_negatives, too_few_unrated,
                                            tested_only=True)
    rec.note("test_users", {"rule": f"users kept with at least min_probe = {min_probe} probe ratings; the others "
                                    "are trained on and not tested", "users": int(np.count_nonzero(tested)),
                            "kept_users_not_tested": int(np.count_nonzero(keep_user & ~tested))})

    rng = np.random.default_rng(seed)
    rank = random_ranks(ratings.users, ratings.indptr, rng, exclude=probe)   # ranks among training-set ratings
    row = keep_user[ratings.users] & ~probe
    train = ratings.take(row & (rank < n_train), name="train")
    valid = ratings.take(row & (rank >= n_train) & (rank < n_train + n_valid), name="valid") if n_valid else None
    test_row = tested[ratings.users] & probe
    test = ratings.take(test_row, name="test")
    negatives = _negatives(ratings, rec, np.flatnonzero(tested), n_negatives, pool, unrated, rng)
    rec.note("unused", {"training_ratings_outside_the_folds": int(np.count_nonzero(row & (rank >= n_train + n_valid))),
                        "probe_ratings_of_users_not_tested": int(np.count_nonzero(keep_user[ratings.users] & probe
                                                                                  & ~test_row))})
    relevant = np.bincount(test.users[test.ratings >= relevance_threshold], minlength=ratings.n_users)
    rec.note("users_without_relevant_test", int(np.count_nonzero(tested & (relevant == 0))))
    return assemble(ratings, {"train": train, "valid": valid, "test": test, "negatives": negatives}, rec)
