"""Test only on controversial items: a base protocol's split whose test part keeps high-dispersion items."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..util import elementary
from ..util.errors import DataError
from ..ratings import Ratings
from ..split import Split
from ._common import assemble, check_ratings, check_seed, choice, fraction, int_at_least
from .registry import REFERENCES, make, normalise, register

__all__ = ["controversial_items"]

#: The protocols ``controversial_items`` may take its split from.
_BASES = ("weak", "cofirank-weak", "lcr-weak", "fixed-ratio", "strong", "top-n")
_MEASURES = ("variance", "entropy")
_STATISTICS = ("train", "all")


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
            value = -np.sum(np.where(table > 0, p * elementary.log2(np.where(table > 0, p, 1.0)), 0.0), axis=1)
    return n.astype(np.int64), value


@register("controversial")
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
    ratings = check_ratings(ratings)
    base = choice("base", normalise(base) if isinstance(base, str) else base, _BASES)
    measure = choice("measure", measure, _MEASURES)
    statistics = choice("statistics", statistics, _STATISTICS)
    top_fraction = fraction("top_fraction", top_fraction, high_open=False)
    min_item_count = int_at_least("min_item_count", min_item_count, 2 if measure == "variance" else 1)
    exclude_popular = fraction("exclude_popular", exclude_popular, low_open=False)
    min_test_items = int_at_least("min_test_items", min_test_items, 1)
    seed = check_seed(seed)
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
    out = assemble(split.train, parts, protocol)
    # the base report counts what the base dropped; add the non-controversial test ratings removed here
    out.protocol["dropped"]["test_ratings_not_controversial"] = int(len(test) - len(new_test))
    return out
