"""How the parts of a split read from files must relate to each other (used by :meth:`Split.from_frames`).

Files written apart can disagree in ways that each file alone cannot show:

* **No shared ids.** A test (or validation) file none of whose users, or none of whose items, occur
  in the training data is an error with both counts and an example id from each side; the usual
  cause, ids written ``1.0`` in one file and ``1`` in the other, is named when the ids are the same
  numbers. Users of ``given`` (the strong-generalization ratings a model folds new users in from)
  count as known. Partial overlap is allowed and counted: :func:`check_parts` returns, for test and
  validation, how many of their users and items have no rating in train (nor in given).
* **A (user, item) pair in two parts.** A held-out rating that repeats a training pair, a given
  rating repeated in test, or a sampled negative (an item the user has *not* rated) that is rated in
  another part is an error naming the first such line, the line it repeats and the count.

Protocols built in process (:mod:`cofiviz.protocols`) produce disjoint parts by construction and
are not checked here: a top-N split's test items may legitimately be absent from train.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..ratings.columns import show_value
from ..util.errors import DataError

__all__ = ["check_parts", "ORDER"]

#: Parts in the order repeats are looked for (a repeat is reported in the later part).
ORDER = ("train", "given", "valid", "test", "negatives")
#: For each part, the parts whose users / items it must share some of.
_KNOWN = {
    "test": {"user": ("train", "given"), "item": ("train", "given")},
    "valid": {"user": ("train", "given"), "item": ("train", "given")},
    "given": {"item": ("train",)},
    "negatives": {"user": ("test",), "item": ("train", "given", "valid", "test")},
}


def _present(parts: dict, names, attr: str, size: int) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    for name in names:
        p = parts.get(name)
        if p is not None:
            mask[getattr(p, attr)] = True
    return mask


def _numbers(ids: np.ndarray) -> np.ndarray:
    return pd.to_numeric(pd.Series(ids.astype(str)), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def check_parts(parts: dict, sources: dict[str, str], row_keys: Callable[[str], np.ndarray],
                row_labels: dict[str, tuple[str, np.ndarray]]) -> dict:
    """Check the parts of a split against each other; return what is unseen in test and valid.

    Parameters
    ----------
    parts : dict of str → Ratings
        ``train``, ``test`` and optionally ``valid``, ``given``, ``negatives``, in one index space.
    sources : dict of str → str
        How each part is named in messages (its file).
    row_keys : callable
        ``row_keys(part)``: ``user * n_items + item`` of every row of that part's table, in file
        order (only called to name the line of an error).
    row_labels : dict of str → (str, array)
        For each part, how its rows are named (``"test.tsv: line"``) and each row's label.

    Returns
    -------
    dict
        ``{"test": {"users_unseen": .., "users": .., "items_unseen": .., "items": ..}, "valid": {...}}``.

    Raises
    ------
    DataError
        A part that shares no user or no item with the parts it must share them with, or a
        (user, item) pair in two parts.
    """
    train = parts["train"]
    n_users, n_items = train.n_users, train.n_items
    for part, need in _KNOWN.items():
        if parts.get(part) is None:
            continue
        for what, refs in need.items():
            attr, ids, size = ("users", train.user_ids, n_users) if what == "user" else ("items", train.item_ids, n_items)
            here = _present(parts, (part,), attr, size)
            known = _present(parts, refs, attr, size)
            if here.any() and known.any() and not (here & known).any():
                _no_overlap(part, [r for r in refs if parts.get(r) is not None and len(parts[r])], what, ids,
                            here, known, sources)
    unseen = {}
    for part in ("test", "valid"):
        p = parts.get(part)
        if p is None:
            continue
        known_u = _present(parts, ("train", "given"), "users", n_users)
        known_i = _present(parts, ("train", "given"), "items", n_items)
        here_u = _present(parts, (part,), "users", n_users)
        here_i = _present(parts, (part,), "items", n_items)
        unseen[part] = {"users_unseen": int(np.count_nonzero(here_u & ~known_u)), "users": int(here_u.sum()),
                        "items_unseen": int(np.count_nonzero(here_i & ~known_i)), "items": int(here_i.sum())}
    _check_repeats(parts, sources, row_keys, row_labels, n_items)
    return unseen


def _no_overlap(part: str, refs: list[str], what: str, ids: np.ndarray, here: np.ndarray, known: np.ndarray,
                sources: dict[str, str]) -> None:
    mine, theirs = ids[here], ids[known]
    a, b = _numbers(mine), _numbers(theirs)
    same_numbers = np.intersect1d(a[np.isfinite(a)], b[np.isfinite(b)])
    if len(same_numbers):
        x = same_numbers[0]
        ex_mine, ex_theirs = mine[np.flatnonzero(a == x)[0]], theirs[np.flatnonzero(b == x)[0]]
    else:
        ex_mine, ex_theirs = mine[0], theirs[0]
    ref_text = " and ".join(f"{sources[r]} ({r})" for r in refs)
    hint = ""
    if len(same_numbers):
        hint = (f" The ids look like the same numbers written differently ({show_value(ex_mine)} and {show_value(ex_theirs)}, "
                f"{len(same_numbers):,} such number(s)): write every id the same way in all files.")
    raise DataError(f"{sources[part]} ({part}): none of its {len(mine):,} {what}s is in {ref_text}, which "
                    f"{'have' if len(refs) > 1 else 'has'} {len(theirs):,} {what}s: e.g. {what} {show_value(ex_mine)} in "
                    f"{part} and {show_value(ex_theirs)} in {refs[0] if len(refs) == 1 else ' / '.join(refs)}; the "
                    f"parts of a split must share {what}s.{hint}")


def _keys(p, n_items: int) -> np.ndarray:
    """Sorted ``user * n_items + item`` of a part (a Ratings table is sorted by user, then item)."""
    return p.users.astype(np.int64) * n_items + p.items


def _check_repeats(parts: dict, sources: dict[str, str], row_keys, row_labels, n_items: int) -> None:
    present = [name for name in ORDER if parts.get(name) is not None]
    keys = {name: _keys(parts[name], n_items) for name in present}
    for j, later in enumerate(present):
        for earlier in present[:j]:
            a, b = keys[earlier], keys[later]
            if not len(a) or not len(b):
                continue
            pos = np.minimum(np.searchsorted(a, b), len(a) - 1)
            repeated = a[pos] == b
            if not repeated.any():
                continue
            count = int(repeated.sum())
            shared = b[repeated]
            rows_b = row_keys(later)
            kb = int(np.flatnonzero(np.isin(rows_b, shared))[0])
            key = rows_b[kb]
            ka = int(np.flatnonzero(row_keys(earlier) == key)[0])
            label_b, lines_b = row_labels[later]
            label_a, lines_a = row_labels[earlier]
            p = parts[later]
            user, item = p.user_ids[key // n_items], p.item_ids[key % n_items]
            if later == "negatives":
                why = (f"a negative is an item the user has not rated, so it cannot also be a rating in {earlier}; "
                       "remove it from one of the files")
            else:
                why = (f"every (user, item) pair belongs to one part of a split only (a {later} rating that is also "
                       f"in {earlier} would be scored on what the model was given); remove the repeated lines from "
                       "one of the files")
            raise DataError(f"{label_b} {lines_b[kb]}: user {show_value(user)} on item {show_value(item)} is also in "
                            f"{sources[earlier]} ({label_a.split(': ')[-1]} {lines_a[ka]}); {count:,} (user, item) "
                            f"pair(s) of {later} repeat {earlier}: {why}")


