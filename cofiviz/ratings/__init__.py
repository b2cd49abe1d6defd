"""The ratings table every part of cofiviz passes around.

A :class:`Ratings` holds (user, item, rating) triples with the original ids kept. Users and items are
numbered ``0 .. n_users-1`` and ``0 .. n_items-1`` in an *index space* (``user_ids``, ``item_ids``)
that all parts of a :class:`~cofiviz.split.Split` share, so a model trained on ``split.train`` scores
the users and items of ``split.test`` with the same indices. Triples are stored sorted by user, then
item, which gives a per-user CSR view (``indptr``) at no extra cost, and :meth:`Ratings.item_index`
gives the item-major view.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .columns import check_ids, check_outliers, check_rating_kind
from ..util.errors import DataError

__all__ = ["Ratings", "DUPLICATE_POLICIES"]

#: What to do with several ratings of one (user, item) pair: refuse them, keep the earliest or the latest
#: in the table's order, or average them.
DUPLICATE_POLICIES = ("error", "first", "last", "mean")


def _show(value) -> str:
    """An id or raw value for a message: ``1`` or ``'abc'``, never ``np.int64(1)``."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _sorted_by_user_item(users: np.ndarray, items: np.ndarray) -> bool:
    """Whether triples are already ordered by user, then item (an O(n) check that saves a sort)."""
    if len(users) < 2:
        return True
    du = np.diff(users)
    if (du < 0).any():
        return False
    same = du == 0
    del du
    return bool(np.all(items[1:][same] >= items[:-1][same]))


def _ids_array(values) -> np.ndarray:
    """Ids as a NumPy array that round-trips through ``.npz`` without pickle (ints or unicode)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        if np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            return arr.astype(np.int64)
        return arr.astype(str)
    return arr.astype(str)


class Ratings:
    """Ratings of users on items, with original ids, a rating scale and optional side tables.

    Parameters
    ----------
    users, items : array of int
        Indices into ``user_ids`` and ``item_ids``.
    ratings : array of float
        The rating values; must be finite and inside ``scale`` (0 is allowed for the sampled
        "unrated, irrelevant" candidates of the top-N protocol when ``allow_zero`` is true).
    user_ids, item_ids : array
        Original ids; position ``u`` holds the id of user index ``u``.
    scale : (float, float)
        Declared rating scale (lowest, highest).
    user_info, item_info : pandas.DataFrame, optional
        Side tables with one row per user (item) index, in index order (e.g. MovieLens titles).
    name : str, optional
        A label for reports.

    Notes
    -----
    Use :meth:`from_dataframe` to build one from user data: it validates every row. The constructor
    only checks shapes and index ranges (it is what protocols use to cut an existing table).
    """

    def __init__(self, users, items, ratings, *, user_ids, item_ids, scale=(1.0, 5.0),
                 user_info: pd.DataFrame | None = None, item_info: pd.DataFrame | None = None,
                 name: str | None = None, allow_zero: bool = False):
        # stored as every numba kernel reads them: contiguous int32 indices and float64 ratings (int64 ``indptr``)
        users = np.ascontiguousarray(users, dtype=np.int32)
        items = np.ascontiguousarray(items, dtype=np.int32)
        ratings = np.ascontiguousarray(ratings, dtype=np.float64)
        if not (users.ndim == items.ndim == ratings.ndim == 1) or not (len(users) == len(items) == len(ratings)):
            raise DataError("users, items and ratings must be 1-D arrays of the same length, got "
                            f"shapes {users.shape}, {items.shape}, {ratings.shape}")
        self.user_ids = _ids_array(user_ids)
        self.item_ids = _ids_array(item_ids)
        n_users, n_items = len(self.user_ids), len(self.item_ids)
        if len(users) and (users.min() < 0 or users.max() >= n_users):
            raise DataError(f"user index out of range [0, {n_users})")
        if len(items) and (items.min() < 0 or items.max() >= n_items):
            raise DataError(f"item index out of range [0, {n_items})")
        lo, hi = float(scale[0]), float(scale[1])
        if not lo < hi:
            raise DataError(f"scale must be (lowest, highest) with lowest < highest, got {scale!r}")
        self.scale = (lo, hi)
        self.allow_zero = bool(allow_zero)
        if not _sorted_by_user_item(users, items):
            order = np.lexsort((items, users))
            users, items, ratings = users[order], items[order], ratings[order]
        self.users, self.items, self.ratings = users, items, ratings
        counts = np.bincount(users, minlength=n_users)
        self.indptr = np.zeros(n_users + 1, dtype=np.int64)
        np.cumsum(counts, out=self.indptr[1:])
        self.user_info = user_info
        self.item_info = item_info
        self.name = name
        self.report = {}
        self._item_index: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ construction from user data
    @classmethod
    def from_dataframe(cls, df: pd.DataFrame, user: str = "user", item: str = "item",
                       rating: str = "rating", *, scale: tuple[float, float] | None = None,
                       duplicates: str = "error", name: str | None = None,
                       row_label: str = "row", user_info=None, item_info=None) -> "Ratings":
        """Build validated ratings from a DataFrame.

        Parameters
        ----------
        df : pandas.DataFrame
            One row per rating.
        user, item, rating : str
            Column names of the user id, item id and rating value.
        scale : (float, float), optional
            Declared rating scale; every rating must lie inside it. Default: the observed
            (min, max), once no rating lies absurdly far from the others (more than
            :data:`cofiviz.ratings.columns.OUTLIER_FACTOR` times the size of the bulk, e.g. 1e308 among 1–5
            stars): such a rating is an error that advises declaring the scale.
        duplicates : {"error", "first", "last", "mean"}
            What to do with several ratings of one (user, item) pair: raise (default), keep the
            first or the last one in file order, or average them. Whatever is merged is reported in
            ``ratings.report``.
        row_label : str
            How rows are named in error messages (``"row"`` uses the DataFrame index; files read
            with :func:`cofiviz.datasets.read` say ``"line"`` and give the line number).

        Raises
        ------
        DataError
            Naming the row and column at fault: a missing column, an empty table, a missing or
            non-numeric rating, a missing id, a NaN or infinite rating, a rating outside ``scale``
            (or absurdly far from the others without one), a duplicate (user, item) pair under
            ``duplicates="error"``, ids that are booleans, dates or times or that mix integers with
            decimal numbers (``1`` and ``2.5``, ``'3'`` and ``'3.0'``), ratings that are booleans or
            dates. See :mod:`cofiviz.ratings.columns`; how ids were read when they are neither plain
            integers nor text is recorded in ``report["ids"]``.
        """
        if not isinstance(df, pd.DataFrame):
            raise DataError(f"expected a pandas DataFrame, got {type(df).__name__}")
        missing = [c for c in (user, item, rating) if c not in df.columns]
        if missing:
            raise DataError(f"missing column(s) {missing}; the table has columns {list(df.columns)}")
        if duplicates not in DUPLICATE_POLICIES:
            raise DataError(f"duplicates must be one of {DUPLICATE_POLICIES}, got {duplicates!r}")
        if len(df) == 0:
            raise DataError("the ratings table is empty (no rows)")
        labels = df.index.to_numpy()

        ids, notes = {}, {}
        for col, role in ((user, "user"), (item, "item")):
            isna = df[col].isna().to_numpy()
            if isna.any():
                k = int(np.flatnonzero(isna)[0])
                raise DataError(f"{row_label} {labels[k]}: column {col!r} is missing (empty); "
                                f"every rating needs a {col} id ({int(isna.sum())} such row(s))")
            ids[role], note = check_ids(df[col], col, role, labels, row_label)
            if note:
                notes[col] = note
        raw = df[rating]
        check_rating_kind(raw, rating, labels, row_label)
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad_num = np.isnan(values) & raw.notna().to_numpy() & ~raw.astype(str).str.strip().str.lower().isin(
            ["nan", "+nan", "-nan"]).to_numpy()
        if bad_num.any():
            k = int(np.flatnonzero(bad_num)[0])
            boolean = str(raw.iloc[k]).strip().lower() in ("true", "false")
            raise DataError(f"{row_label} {labels[k]}: column {rating!r} holds {_show(raw.iloc[k])}, expected a "
                            f"number ({int(bad_num.sum())} non-numeric row(s))"
                            + ("; booleans are not ratings: write 1 and 0 if that is what they mean" if boolean
                               else ""))
        isna = raw.isna().to_numpy()
        if isna.any():
            k = int(np.flatnonzero(isna)[0])
            raise DataError(f"{row_label} {labels[k]}: column {rating!r} is missing (empty), expected a "
                            f"number ({int(isna.sum())} such row(s))")
        nonfinite = ~np.isfinite(values)
        if nonfinite.any():
            k = int(np.flatnonzero(nonfinite)[0])
            raise DataError(f"{row_label} {labels[k]}: column {rating!r} is {values[k]}, expected a finite "
                            f"number ({int(nonfinite.sum())} NaN or infinite row(s))")
        if scale is None:
            check_outliers(values, rating, labels, row_label)
            scale = (float(values.min()), float(values.max()))
            if scale[0] == scale[1]:
                scale = (scale[0] - 1.0, scale[1]) if scale[0] > 0 else (scale[0], scale[1] + 1.0)
        lo, hi = float(scale[0]), float(scale[1])
        outside = (values < lo) | (values > hi)
        if outside.any():
            k = int(np.flatnonzero(outside)[0])
            raise DataError(f"{row_label} {labels[k]}: column {rating!r} is {values[k]:g}, outside the declared "
                            f"scale [{lo:g}, {hi:g}] ({int(outside.sum())} such row(s))")

        user_codes, user_ids = pd.factorize(ids["user"], sort=True)
        item_codes, item_ids = pd.factorize(ids["item"], sort=True)
        report: dict[str, Any] = {"ids": notes} if notes else {}
        key = user_codes.astype(np.int64) * max(len(item_ids), 1) + item_codes
        dup = pd.Series(key).duplicated(keep=False).to_numpy()
        if dup.any():
            n_pairs = int(pd.Series(key[dup]).nunique())
            if duplicates == "error":
                k0 = int(np.flatnonzero(dup)[0])
                first = (k0, k0 + 1 + int(np.flatnonzero(key[k0 + 1:] == key[k0])[0]))
                raise DataError(
                    f"{row_label}s {labels[first[0]]} and {labels[first[1]]}: duplicate rating of user "
                    f"{_show(df[user].iloc[first[0]])} on item {_show(df[item].iloc[first[0]])} ({n_pairs} duplicated "
                    f"(user, item) pair(s)); to merge them pass --duplicates last (or first, mean; "
                    f"duplicates='last' in Python)")
            frame = pd.DataFrame({"k": key, "u": user_codes, "i": item_codes, "r": values})
            if duplicates in ("first", "last"):
                frame = frame.drop_duplicates("k", keep=duplicates)
            else:
                frame = frame.groupby("k", sort=False).agg(u=("u", "first"), i=("i", "first"), r=("r", "mean"))
            report["duplicates"] = {"policy": duplicates, "pairs": n_pairs,
                                    "rows_merged": int(len(values) - len(frame))}
            user_codes, item_codes, values = frame["u"].to_numpy(), frame["i"].to_numpy(), frame["r"].to_numpy()
        out = cls(user_codes, item_codes, values, user_ids=np.asarray(user_ids), item_ids=np.asarray(item_ids),
                  scale=(lo, hi), name=name, user_info=user_info, item_info=item_info)
        out.report = report
        return out

    # ------------------------------------------------------------------ basic views
    report: dict = {}

    @property
    def n_users(self) -> int:
        """Size of the user index space (users without ratings in this table included)."""
        return len(self.user_ids)

    @property
    def n_items(self) -> int:
        """Size of the item index space."""
        return len(self.item_ids)

    def __len__(self) -> int:
        return len(self.ratings)

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return (f"<Ratings{label}: {len(self):,} ratings, {self.n_users:,} users, {self.n_items:,} items, "
                f"scale {self.scale[0]:g}..{self.scale[1]:g}>")

    def user_counts(self) -> np.ndarray:
        """Number of ratings of each user index."""
        return np.diff(self.indptr)

    def item_counts(self) -> np.ndarray:
        """Number of ratings of each item index."""
        return np.bincount(self.items, minlength=self.n_items)

    def item_index(self) -> tuple[np.ndarray, np.ndarray]:
        """The item-major view: ``(item_indptr, positions)``, both int64.

        ``positions[item_indptr[i]:item_indptr[i + 1]]`` are the positions in ``users``, ``items`` and
        ``ratings`` of item ``i``'s ratings, in the table's order (user, then item). Computed once per
        table and cached; the arrays are shared, so callers must not write into them.
        """
        if self._item_index is None:
            positions = np.argsort(self.items, kind="stable").astype(np.int64)
            item_indptr = np.zeros(self.n_items + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.items, minlength=self.n_items), out=item_indptr[1:])
            self._item_index = (item_indptr, positions)
        return self._item_index

    def user_slice(self, u: int) -> slice:
        """Positions of user ``u``'s ratings in ``items`` and ``ratings``."""
        return slice(int(self.indptr[u]), int(self.indptr[u + 1]))

    @property
    def global_mean(self) -> float:
        return float(self.ratings.mean()) if len(self) else float("nan")

    def to_dataframe(self) -> pd.DataFrame:
        """Columns ``user``, ``item``, ``rating`` with the original ids."""
        return pd.DataFrame({"user": self.user_ids[self.users], "item": self.item_ids[self.items],
                             "rating": self.ratings})

    def to_csr(self):
        """The ratings as a ``scipy.sparse.csr_matrix`` of shape (n_users, n_items)."""
        from scipy.sparse import csr_matrix
        return csr_matrix((self.ratings, self.items, self.indptr), shape=(self.n_users, self.n_items))

    # ------------------------------------------------------------------ cutting
    def take(self, positions, *, name: str | None = None, allow_zero: bool | None = None) -> "Ratings":
        """A table of the ratings at ``positions`` (boolean mask or indices), in the same index space."""
        positions = np.asarray(positions)
        return Ratings(self.users[positions], self.items[positions], self.ratings[positions],
                       user_ids=self.user_ids, item_ids=self.item_ids, scale=self.scale,
                       user_info=self.user_info, item_info=self.item_info, name=name or self.name,
                       allow_zero=self.allow_zero if allow_zero is None else allow_zero)

    def like(self, users, items, ratings, *, name: str | None = None, allow_zero: bool = False) -> "Ratings":
        """New triples in this table's index space (ids, scale and side tables kept)."""
        return Ratings(users, items, ratings, user_ids=self.user_ids, item_ids=self.item_ids, scale=self.scale,
                       user_info=self.user_info, item_info=self.item_info, name=name or self.name,
                       allow_zero=allow_zero)

    def reindexed(self, keep_users=None, keep_items=None) -> "Ratings":
        """The same ratings in a smaller index space holding only ``keep_users`` / ``keep_items``.

        Ratings of dropped users or items must already be gone; they are an error here.
        """
        keep_users = np.arange(self.n_users) if keep_users is None else np.asarray(keep_users)
        keep_items = np.arange(self.n_items) if keep_items is None else np.asarray(keep_items)
        umap = np.full(self.n_users, -1, dtype=np.int64)
        umap[keep_users] = np.arange(len(keep_users))
        imap = np.full(self.n_items, -1, dtype=np.int64)
        imap[keep_items] = np.arange(len(keep_items))
        u, i = umap[self.users], imap[self.items]
        if (u < 0).any() or (i < 0).any():
            raise DataError("reindexed(): some ratings belong to users or items that are not kept")
        ui = None if self.user_info is None else self.user_info.iloc[keep_users].reset_index(drop=True)
        ii = None if self.item_info is None else self.item_info.iloc[keep_items].reset_index(drop=True)
        return Ratings(u, i, self.ratings, user_ids=self.user_ids[keep_users], item_ids=self.item_ids[keep_items],
                       scale=self.scale, user_info=ui, item_info=ii, name=self.name, allow_zero=self.allow_zero)

    # ------------------------------------------------------------------ files
    def write(self, path: str | os.PathLike, sep: str = "\t") -> Path:
        """Write ``user item rating`` lines (with a header) using the original ids."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        df = self.to_dataframe()
        if len(df) and np.array_equal(self.ratings, np.round(self.ratings)):
            df["rating"] = self.ratings.astype(np.int64)      # "4", not "4.0"
        df.to_csv(path, sep=sep, index=False)                 # other floats: shortest exact repr
        return path

    def equals(self, other: "Ratings") -> bool:
        """Same triples under the same original ids (index spaces may differ)."""
        a = self.to_dataframe().astype({"user": str, "item": str}).sort_values(["user", "item"], ignore_index=True)
        b = other.to_dataframe().astype({"user": str, "item": str}).sort_values(["user", "item"], ignore_index=True)
        return a.equals(b)
