"""What every protocol shares: checking its parameters, the per-user random choice, and the report it records.

:class:`Record` collects a protocol's report while it runs (name, parameters, seed, reference, input size,
every filter with the ids it removed); :func:`_assemble` puts the parts into the index space of the users
and items they use and adds the sizes and totals to the report.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..util.errors import DataError, ParameterError
from ..util.jsonable import jsonable
from ..ratings import Ratings
from ..split import Split
from .registry import REFERENCES

__all__ = ["check_ratings", "as_int", "int_at_least", "fraction", "check_seed", "choice", "group_shuffle",
           "random_ranks", "ids_of", "Record", "sizes", "assemble", "all_dropped"]


# ---------------------------------------------------------------------------------- parameter checks
def check_ratings(ratings) -> Ratings:
    if not isinstance(ratings, Ratings):
        raise DataError(f"a protocol needs a cofiviz.Ratings table, got {type(ratings).__name__} "
                        "(build one with Ratings.from_dataframe(df, user=..., item=..., rating=...))")
    if len(ratings) == 0:
        raise DataError("the ratings table is empty: there is nothing to split")
    return ratings


def as_int(value):
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


def int_at_least(name: str, value, minimum: int) -> int:
    """``value`` as an int (see :func:`as_int`) of at least ``minimum``; else a :class:`ParameterError` naming it."""
    number = as_int(value)
    if number is None:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    value = number
    if value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def fraction(name: str, value, *, low_open: bool = True, high_open: bool = True, low: float = 0.0,
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


def check_seed(seed) -> int:
    number = as_int(seed)
    if number is None or number < 0:
        raise ParameterError(f"seed must be a non-negative integer (every protocol is reproducible), got {seed!r}")
    return number


def choice(name: str, value, choices) -> str:
    if value not in choices:
        raise ParameterError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


# ---------------------------------------------------------------------------------- building blocks
def group_shuffle(groups: np.ndarray, n_groups: int, rng: np.random.Generator) -> np.ndarray:
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


def random_ranks(users: np.ndarray, indptr: np.ndarray, rng: np.random.Generator,
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
    order = group_shuffle(groups, n_users, rng)
    rank = np.empty(len(users), dtype=np.int64)
    u = users[order]
    rank[order] = np.arange(len(users), dtype=np.int64) - indptr[u]
    return rank


def ids_of(ids: np.ndarray, index) -> list:
    return np.asarray(ids)[np.asarray(index, dtype=np.int64)].tolist()


class Record:
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
        self._dropped("user", step, rule, users, counts, extra)

    def items_dropped(self, step: str, rule: str, items: np.ndarray, counts: np.ndarray, **extra) -> None:
        """Record the items (indices into the input) removed by one filter with all their ratings."""
        self._dropped("item", step, rule, items, counts, extra)

    def _dropped(self, kind: str, step: str, rule: str, index: np.ndarray, counts: np.ndarray, extra: dict) -> None:
        index = np.asarray(index, dtype=np.int64)
        self.protocol["filters"].append({
            "step": step, "rule": rule, **extra, f"{kind}s": int(len(index)),
            "ratings": int(np.asarray(counts)[index].sum()) if len(index) else 0,
            f"{kind}_ids": ids_of(getattr(self.ratings, f"{kind}_ids"), index)})

    def note(self, key: str, value) -> None:
        self.protocol[key] = value


def sizes(parts: dict[str, Ratings | None]) -> dict[str, Any]:
    """The report's ``sizes``: users and items of the index space, ratings and users of every part."""
    first = next(p for p in parts.values() if p is not None)
    out: dict[str, Any] = {"users": first.n_users, "items": first.n_items}
    for k, p in parts.items():
        if p is not None:
            out[k] = len(p)
            out[f"{k}_users"] = int(np.count_nonzero(p.user_counts()))
    return out


def assemble(source: Ratings, parts: dict[str, Ratings | None], record: Record | dict) -> Split:
    """Put parts (all in ``source``'s index space) into the index space of the users and items they use."""
    present = [p for p in parts.values() if p is not None]
    keep_users = np.unique(np.concatenate([p.users for p in present])) if present else np.zeros(0, np.int64)
    keep_items = np.unique(np.concatenate([p.items for p in present])) if present else np.zeros(0, np.int64)
    out = {k: (None if p is None else p.reindexed(keep_users, keep_items)) for k, p in parts.items()}
    protocol = record.protocol if isinstance(record, Record) else record
    protocol["sizes"] = sizes(out)
    protocol["dropped"] = _totals(protocol, source, out)
    return Split(train=out["train"], test=out["test"], valid=out.get("valid"), negatives=out.get("negatives"),
                 given=out.get("given"), protocol=jsonable(protocol))


def _totals(protocol: dict, source: Ratings, out: dict) -> dict:
    kept = sum(len(p) for k, p in out.items() if p is not None and k != "negatives")
    n_in = protocol.get("input", {}).get("ratings", len(source))
    return {"users": sum(f.get("users", 0) for f in protocol["filters"]),
            "items": sum(f.get("items", 0) for f in protocol["filters"]),
            "ratings": int(n_in - kept)}


def all_dropped(what: str) -> DataError:
    return DataError(f"every user was dropped: {what}; nothing is left to split")

