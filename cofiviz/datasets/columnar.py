"""Building a :class:`~cofiviz.Ratings` table from columns streamed out of large files, in compact NumPy arrays.

The readers of the Netflix Prize, EachMovie and Yelp files read millions of ratings in chunks. What they share
is here, and none of it holds a Python object per rating:

* :class:`Column` — a growing NumPy array of one dtype (``int32`` ids, ``int8`` stars, ...). Its capacity is
  reserved up front from an upper bound on the rows (``np.empty`` maps pages but does not touch them, so an
  over-estimate costs address space, not memory) and grows by half when the bound was wrong.
* :func:`dense_codes` — the index of each original id among the sorted distinct ids, as
  :meth:`Ratings.from_dataframe` numbers them. Non-negative integer ids below a bound use a presence table
  (linear time, no sort); others fall back to ``np.unique``.
* :func:`user_item_order` — the permutation that sorts ratings by (user, item) and keeps the file order of
  equal pairs (stable sorts), so that duplicates can be merged as ``datasets.read`` merges them.
* :func:`merge_duplicates` — several ratings of one (user, item) pair: an error, or the first, the last or their
  mean, with the ``report["duplicates"]`` record of :meth:`Ratings.from_dataframe`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..util.errors import DataError
from ..ratings import DUPLICATE_POLICIES

__all__ = ["Column", "dense_codes", "user_item_order", "merge_duplicates", "check_duplicates_policy"]

#: Ratings remapped at once when codes replace ids in place (bounds the temporary arrays).
_STEP = 1 << 22


class Column:
    """A growing one-dimensional NumPy array.

    Parameters
    ----------
    dtype : numpy dtype
    capacity : int
        Rows reserved at first (an upper bound on what will be appended avoids every copy).
    """

    def __init__(self, dtype, capacity: int = 1 << 16):
        self._data = np.empty(max(int(capacity), 16), dtype=dtype)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def extend(self, values: np.ndarray) -> None:
        """Append ``values`` (cast to the column's dtype)."""
        n = len(values)
        need = self._size + n
        if need > len(self._data):
            grown = np.empty(max(need, len(self._data) + len(self._data) // 2), dtype=self._data.dtype)
            grown[:self._size] = self._data[:self._size]
            self._data = grown
        self._data[self._size:need] = values
        self._size = need

    def array(self) -> np.ndarray:
        """The values appended, as a view of the reserved buffer (its untouched tail is never resident)."""
        return self._data[:self._size]


def dense_codes(ids: np.ndarray, *, in_place: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, distinct)``: ``distinct`` is the sorted distinct values of ``ids`` and ``codes[k]`` the position of
    ``ids[k]`` in it (``int32``).

    Non-negative integers no larger than a few times their count (or 2**26) are coded through a presence table
    in linear time; other ids go through ``np.unique``. With ``in_place=True`` an ``int32`` array of integer ids
    is overwritten with its codes, in slices, so that no second array of its size is made.
    """
    ids = np.asarray(ids)
    if ids.dtype.kind in "iu" and len(ids):
        lo, hi = int(ids.min()), int(ids.max())
        if lo >= 0 and hi <= max(4 * len(ids), 1 << 26):
            present = np.zeros(hi + 1, dtype=bool)
            present[ids] = True
            distinct = np.flatnonzero(present).astype(np.int64)
            lookup = np.cumsum(present, dtype=np.int64).astype(np.int32) - 1
            del present
            out = ids if (in_place and ids.dtype == np.int32) else np.empty(len(ids), dtype=np.int32)
            for s in range(0, len(ids), _STEP):
                out[s:s + _STEP] = lookup[ids[s:s + _STEP]]
            return out, distinct
    distinct, codes = np.unique(ids, return_inverse=True)
    return codes.astype(np.int32).reshape(-1), distinct


def user_item_order(users: np.ndarray, items: np.ndarray) -> np.ndarray | None:
    """The permutation that sorts rows by (user, item), equal pairs kept in their original order; None when the
    rows are already in that order.

    When the items never decrease along the rows (files grouped by item, items in increasing order, as the
    Netflix Prize's), one stable sort by user is enough; otherwise a stable sort by item comes first.
    """
    if len(users) < 2:
        return None
    du = np.diff(users)
    if not (du < 0).any():
        same = du == 0
        del du
        if np.all(items[1:][same] >= items[:-1][same]):
            return None
    else:
        del du
    items_increase = not (np.diff(items) < 0).any()
    if items_increase:
        return np.argsort(users, kind="stable")
    by_item = np.argsort(items, kind="stable")
    return by_item[np.argsort(users[by_item], kind="stable")]


def check_duplicates_policy(duplicates: str) -> str:
    """``duplicates`` if it is one of :data:`~cofiviz.ratings.DUPLICATE_POLICIES`, else a :class:`DataError`."""
    if duplicates not in DUPLICATE_POLICIES:
        raise DataError(f"duplicates must be one of {DUPLICATE_POLICIES}, got {duplicates!r}")
    return duplicates


def merge_duplicates(users: np.ndarray, items: np.ndarray, ratings: np.ndarray, policy: str,
                     describe: Callable[[int, int], str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Several ratings of one (user, item) pair in rows sorted by (user, item), file order within a pair.

    Parameters
    ----------
    users, items, ratings : array
        Sorted by (user, item) (see :func:`user_item_order`).
    policy : {"error", "first", "last", "mean"}
        As ``datasets.read``'s ``duplicates``: refuse, keep the earliest or latest in file order, or average.
    describe : callable
        ``describe(first_row, n_pairs)``: the message of the error for the pair starting at ``first_row`` (where
        in the files it is, and the advice), called only under ``"error"``.

    Returns
    -------
    (users, items, ratings as float64, report)
        ``report`` is ``{}`` without duplicates, else ``{"duplicates": {"policy", "pairs", "rows_merged"}}``.

    Raises
    ------
    DataError
        A duplicated pair under ``policy="error"``, with ``describe``'s message.
    """
    if len(users) < 2:
        return users, items, ratings.astype(np.float64), {}
    same = (users[1:] == users[:-1]) & (items[1:] == items[:-1])
    if not same.any():
        return users, items, ratings.astype(np.float64), {}
    starts = np.flatnonzero(np.concatenate([[True], ~same]))           # first row of each distinct pair
    n_pairs = int(np.count_nonzero(same[np.concatenate([[True], ~same[:-1]])]))  # pairs with a second row
    if policy == "error":
        first = int(np.flatnonzero(same)[0])
        raise DataError(describe(first, n_pairs))
    n_rows = len(users)
    if policy == "first":
        keep = starts
        values = ratings[keep].astype(np.float64)
    elif policy == "last":
        keep = np.concatenate([starts[1:] - 1, [n_rows - 1]])
        values = ratings[keep].astype(np.float64)
    else:
        keep = starts
        sizes = np.diff(np.concatenate([starts, [n_rows]]))
        values = np.add.reduceat(ratings.astype(np.float64), starts) / sizes
    report = {"duplicates": {"policy": policy, "pairs": n_pairs, "rows_merged": int(n_rows - len(keep))}}
    return users[keep], items[keep], values, report
