"""Yelp's review file (JSON lines): a user's copy read into :class:`~cofiviz.Ratings` with Yelp's string ids, and
ratings written in that format.

The format
    Yelp's data sets hold their reviews as JSON lines, one review object a line, with (among others) ``user_id``
    and ``business_id`` (strings of 22 characters) and ``stars`` (a whole number 1 to 5; written ``5`` or ``5.0``):
    ``yelp_academic_dataset_review.json`` in the Yelp Open Dataset, ``yelp_training_set_review.json`` (in
    ``yelp_training_set/``) in the RecSys 2013 challenge's data that LCR's Table 2 used (43,873 users and 11,537
    businesses after its filters). Every other key (``text``, ``date``, ``votes``, ...) is read past.

Reading streams the file line by line (it is several GB; ``.gz`` and the other compressions of
:mod:`.streams` are decompressed on the fly): each line is parsed by :func:`json.loads`, its three fields are
checked, and the ids are coded as they come (one dictionary entry per distinct user or business, not per review)
into ``int32`` columns, the stars into a ``float32`` column. Users and businesses are then indexed in the sorted
order of their ids, which are kept as strings.

A line that is not a JSON object with a non-empty string ``user_id`` and ``business_id`` and ``stars`` from 1 to
5 is an error naming the file, the line and the key; blank lines are counted in ``report["blank_lines"]``; several
reviews of one (user, business) pair (the Open Dataset has some) follow ``duplicates=`` as
:func:`cofiviz.datasets.read` does (the default refuses them and says how to merge them).
"""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import numpy as np

from ..util.errors import DataError, ParameterError
from ..ratings import Ratings
from .columnar import Column, check_duplicates_policy, merge_duplicates, user_item_order
from .streams import COMPRESSIONS, check_head, open_binary

__all__ = ["yelp", "write_yelp", "REVIEW_FILES"]

#: The review files looked for in a folder: the Yelp Open Dataset's, then the RecSys 2013 challenge's.
REVIEW_FILES = ("yelp_academic_dataset_review.json", "yelp_training_set_review.json",
                "yelp_training_set/yelp_training_set_review.json")
_KEYS = ("user_id", "business_id", "stars")
_BATCH = 1 << 16


def _locate(path) -> Path:
    if path is None:
        raise ParameterError("yelp reads your own copy of Yelp's review file: give path=FILE "
                             "(yelp_academic_dataset_review.json, or the folder that holds it; --data yelp=PATH on "
                             "the command line)")
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise DataError(f"{p}: no such file or folder; expected Yelp's review file (JSON lines), e.g. "
                        f"{REVIEW_FILES[0]}, or its folder")
    if p.is_dir():
        found = [p / f"{name}{suffix}" for name in REVIEW_FILES for suffix in ("", *COMPRESSIONS)
                 if (p / f"{name}{suffix}").is_file()]
        if len(found) != 1:
            names = sorted(q.name for q in p.iterdir())
            listing = ", ".join(names[:12]) if names else "nothing (the folder is empty)"
            raise DataError(f"{p}: " + (f"holds several review files ({', '.join(map(str, found))}); give the one to "
                                        "read" if found else
                                        f"holds no Yelp review file ({', '.join(REVIEW_FILES)}); it holds {listing}"))
        p = found[0]
    return p


def _field(path: Path, number: int, review: dict, key: str):
    if key not in review:
        raise DataError(f"{path}: line {number}: the review has no {key!r} key (its keys: "
                        f"{', '.join(list(review)[:10])}); expected a review object with user_id, business_id and "
                        "stars")
    value = review[key]
    if key == "stars":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and 1 <= value <= 5):
            raise DataError(f"{path}: line {number}: key 'stars' holds {value!r}, expected a number from 1 to 5")
    elif not isinstance(value, str) or not value:
        raise DataError(f"{path}: line {number}: key {key!r} holds {value!r}, expected a non-empty string id")
    return value


def _sorted_codes(codes: dict, column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ids of ``codes`` (id → code in order of appearance) sorted, and ``column``'s codes renumbered to match."""
    ids = np.array(list(codes), dtype=str)
    order = np.argsort(ids, kind="stable")
    rank = np.empty(len(ids), dtype=np.int32)
    rank[order] = np.arange(len(ids), dtype=np.int32)
    return rank[column], ids[order]


def yelp(path=None, *, duplicates: str = "error", name: str | None = None) -> Ratings:
    """Yelp's reviews from your own copy of the review file (see the module documentation for the format).

    Parameters
    ----------
    path : str or path-like
        The review file (JSON lines, maybe ``.gz``/``.bz2``/``.xz``/``.zip``-compressed) or the folder that holds
        it (:data:`REVIEW_FILES`).
    duplicates : {"error", "first", "last", "mean"}
        Several reviews of one (user, business) pair: an error naming both lines (default), or keep the earliest
        or latest in the file, or their mean, as in :func:`cofiviz.datasets.read`.
    name : str, optional
        Label of the table (default ``"yelp"``).

    Returns
    -------
    Ratings
        Stars on the scale 1..5; user ids are Yelp's ``user_id`` and item ids its ``business_id`` (strings).
        ``ratings.report`` holds the file, the blank lines and merged duplicates.

    Raises
    ------
    ParameterError
        No ``path``.
    DataError
        A missing or empty file, or a bad line: the message names the file, the line and the key.
    """
    check_duplicates_policy(duplicates)
    path = _locate(path)
    if not check_head(path, "utf-8"):
        raise DataError(f"{path}: the file is empty; expected one JSON review object a line")
    users, items, stars, lines = Column(np.int32), Column(np.int32), Column(np.float32), Column(np.int64)
    user_codes: dict[str, int] = {}
    item_codes: dict[str, int] = {}
    batch: list = [[], [], [], []]
    blank = 0

    def flush() -> None:
        for column, values in zip((users, items, stars, lines), batch):
            column.extend(np.asarray(values))
            values.clear()

    number = 0
    with open_binary(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig")
        try:
            for number, line in enumerate(text, start=1):
                line = line.strip()
                if not line:
                    blank += 1
                    continue
                try:
                    review = json.loads(line)
                except ValueError as exc:
                    raise DataError(f"{path}: line {number}: not JSON ({getattr(exc, 'msg', exc)} at character "
                                    f"{getattr(exc, 'pos', -1) + 1}); expected one review object a line") from None
                if not isinstance(review, dict):
                    raise DataError(f"{path}: line {number}: holds a JSON {type(review).__name__}, expected a review "
                                    "object with user_id, business_id and stars")
                user, item, star = (_field(path, number, review, key) for key in _KEYS)
                batch[0].append(user_codes.setdefault(user, len(user_codes)))
                batch[1].append(item_codes.setdefault(item, len(item_codes)))
                batch[2].append(star)
                batch[3].append(number)
                if len(batch[3]) >= _BATCH:
                    flush()
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}: after line {number}: cannot be decoded as UTF-8 ({exc.reason}); Yelp's files "
                            "are UTF-8") from None
    flush()
    if len(users) == 0:
        raise DataError(f"{path}: holds no reviews (only blank lines); expected one JSON review object a line")
    u, user_ids = _sorted_codes(user_codes, users.array())
    i, item_ids = _sorted_codes(item_codes, items.array())
    del user_codes, item_codes
    s, line = stars.array(), lines.array()
    order = user_item_order(u, i)
    if order is not None:
        u, i, s, line = u[order], i[order], s[order], line[order]

    def describe(row: int, n_pairs: int) -> str:
        user, item = str(user_ids[u[row]]), str(item_ids[i[row]])
        return (f"{path}: lines {int(line[row])} and {int(line[row + 1])}: two reviews of user {user!r} on business "
                f"{item!r} ({n_pairs:,} duplicated (user, business) pair(s)); to merge them pass "
                "duplicates='last' (or 'first', 'mean'; --duplicates last on the command line)")

    u, i, values, merged = merge_duplicates(u, i, s, duplicates, describe)
    out = Ratings(u, i, values, user_ids=user_ids, item_ids=item_ids, scale=(1.0, 5.0), name=name or "yelp")
    out.report = {"format": "Yelp reviews (JSON lines: user_id, business_id, stars)", "file": str(path),
                  "blank_lines": blank, **merged}
    return out


def write_yelp(ratings: Ratings, path, *, seed: int = 0) -> Path:
    """Write ``ratings`` as Yelp's review file (JSON lines), which :func:`yelp` reads back.

    Each line is a review object as Yelp writes them: ``review_id``, ``user_id``, ``business_id`` (the ids as
    text), ``stars`` (whole numbers written as integers), ``useful``/``funny``/``cool`` counts, a ``text`` holding
    quotes, braces, commas, non-ASCII letters and the words ``"user_id":`` (which a reader must not take for a
    key) and a ``date``. Meant for small and medium tables (one :func:`json.dumps` per review).

    Parameters
    ----------
    ratings : Ratings
        Ratings from 1 to 5.
    path : path-like
        The file to write (its folder is created).
    seed : int
        Seeds the dates and the counts.

    Returns
    -------
    Path
        ``path``.
    """
    values = ratings.ratings
    if len(values) and (values.min() < 1 or values.max() > 5):
        raise DataError(f"Yelp's stars are 1 to 5; these ratings run from {values.min():g} to {values.max():g}")
    rng = np.random.default_rng(seed)
    days = rng.integers(0, 3650, size=len(ratings))
    counts = rng.integers(0, 4, size=(len(ratings), 3))
    users = ratings.user_ids[ratings.users].astype(str)
    items = ratings.item_ids[ratings.items].astype(str)
    start = np.datetime64("2005-01-01")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for k in range(len(ratings)):
            star = float(values[k])
            review = {"review_id": f"review-{k:07d}", "user_id": str(users[k]), "business_id": str(items[k]),
                      "stars": int(star) if star.is_integer() else star,
                      "useful": int(counts[k, 0]), "funny": int(counts[k, 1]), "cool": int(counts[k, 2]),
                      "text": f'Crème brûlée, {{"user_id": "{users[k]}"}} – said "{star:g} stars"\nsecond line',
                      "date": str(start + int(days[k]))}
            fh.write(json.dumps(review, ensure_ascii=False) + "\n")
    return path
