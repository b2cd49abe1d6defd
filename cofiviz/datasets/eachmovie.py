"""The EachMovie data set's vote file, ``Vote.txt``: a user's copy read into :class:`~cofiviz.Ratings`, and ratings
written in that format.

The format
    EachMovie (collected by DEC/Compaq's Systems Research Center, 1995–1997; no longer distributed, but
    researchers have copies) holds its votes in ``Vote.txt``, one vote a line, tab-separated:
    ``Person_ID  Movie_ID  Score  Weight  Modified``. ``Score`` is 0 to 1 in steps of 0.2 (six levels: 0, 0.2,
    0.4, 0.6, 0.8, 1); ``Weight`` is a number recorded with each vote (1 for almost every vote); ``Modified`` is the
    time of the vote, ``MM/DD/YY HH:MM:SS``. Where this description comes from: public loaders of the file, e.g.
    an ``EachMovieDataset`` class of a BERT4Rec-style code base that reads ``Vote.txt`` with ``pd.read_csv(...,
    sep='\t', names=['uid', 'sid', <score>, <weight>, 'timestamp'])`` and parses the timestamp with
    ``'%m/%d/%y %H:%M:%S'`` (it points at Chu Wei's EachMovie page,
    http://www.gatsby.ucl.ac.uk/~chuwei/data/EachMovie/eachmovie.html), and reading notes on Lemire &
    Maclachlan's Slope One paper giving EachMovie's ratings as 0, 0.2, 0.4, 0.6, 0.8, 1. The original README was
    not available here, so the reader is lenient where the descriptions disagree: the time may also be split by a
    tab into a date and a time (six fields), or be missing (four fields).

Stars
    CofiRank's text does not say how it turned EachMovie's scores into grades: its Table 1 counts 61,265 users,
    1,623 movies and 2,811,717 ratings (LCR's text: 61,265 users and 1,648 items), without saying whether
    anything was removed from the file, and its problem statement takes ratings in ``{1, ..., r}``, which NDCG's
    gain ``2^y - 1`` needs positive. So by default the six levels become 1 to 6 stars (``score × 5 + 1``);
    ``stars=False`` keeps the scores as they are, on the scale 0..1. Nothing is removed: users with few votes,
    votes of weight other than 1 and the times are all read (the times are not kept; the weights are summarised
    in ``report["weights"]``), so that a protocol's own filters say what they drop.

Every line that is not ``Person_ID Movie_ID Score Weight [time]`` is an error naming the file, the line and the
column; blank lines are counted in ``report["blank_lines"]``; several votes of one (person, movie) pair follow
``duplicates=`` as :func:`cofiviz.datasets.read` does. The file is read in chunks of half a million lines into
compact NumPy columns.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..util.errors import DataError, ParameterError
from ..ratings import Ratings
from .columnar import Column, check_duplicates_policy, dense_codes, merge_duplicates, user_item_order
from .streams import check_head

__all__ = ["eachmovie", "write_eachmovie", "VOTE_FILE"]

VOTE_FILE = "Vote.txt"
#: The columns of ``Vote.txt`` (the time may be one field or a date and a time).
COLUMNS = ("Person_ID", "Movie_ID", "Score", "Weight", "Modified", "Modified (time)")
_CHUNK_LINES = 1 << 19
_WHOLE = re.compile(r"\d{1,9}")


def _locate(path) -> Path:
    if path is None:
        raise ParameterError("eachmovie reads your own copy of EachMovie's vote file: give path=FILE (Vote.txt, or the "
                             "folder that holds it; --data eachmovie=PATH on the command line)")
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise DataError(f"{p}: no such file or folder; expected EachMovie's vote file, Vote.txt, or its folder")
    if p.is_dir():
        found = [q for q in sorted(p.iterdir()) if q.name.lower() == VOTE_FILE.lower() and q.is_file()]
        if not found:
            names = sorted(q.name for q in p.iterdir())
            raise DataError(f"{p}: holds no {VOTE_FILE} (EachMovie's vote file); it holds "
                            f"{', '.join(names[:12]) if names else 'nothing (the folder is empty)'}")
        p = found[0]
    if p.stat().st_size == 0:
        raise DataError(f"{p}: the file is empty; expected lines of Person_ID, Movie_ID, Score, Weight, Modified "
                        "separated by tabs")
    return p


def _bad(path: Path, frame: pd.DataFrame, mask: np.ndarray, column: int, expected: str) -> DataError:
    k = int(np.flatnonzero(mask)[0])
    value = frame.iloc[k, column]
    shown = "is missing (empty)" if value == "" else f"holds {value[:40]!r}"
    return DataError(f"{path}: line {int(frame.index[k])}: column {column + 1} ({COLUMNS[column]}) {shown}, expected "
                     f"{expected}")


def _whole(path: Path, frame: pd.DataFrame, column: int) -> np.ndarray:
    col = frame[column]
    try:
        values = col.astype(np.int64).to_numpy()
        if (values >= 0).all() and (values < 1 << 31).all():
            return values
    except (ValueError, TypeError, OverflowError):
        pass
    bad = ~col.str.fullmatch(_WHOLE.pattern).to_numpy(dtype=bool)
    raise _bad(path, frame, bad, column, "a whole number (an id, at most 9 digits)")


def eachmovie(path=None, *, stars: bool = True, duplicates: str = "error", name: str | None = None) -> Ratings:
    """EachMovie's votes from your own copy of ``Vote.txt`` (see the module documentation for the format).

    Parameters
    ----------
    path : str or path-like
        ``Vote.txt`` (any name; tab-separated) or the folder that holds it.
    stars : bool
        True (default): the scores 0, 0.2, …, 1 become 1 to 6 stars (``score × 5 + 1``, scale 1..6); False: the
        scores as they are (scale 0..1).
    duplicates : {"error", "first", "last", "mean"}
        Several votes of one (person, movie) pair: an error naming both lines (default), or keep the earliest
        or latest in the file, or their mean, as in :func:`cofiviz.datasets.read`.
    name : str, optional
        Label of the table (default ``"eachmovie"``).

    Returns
    -------
    Ratings
        User ids are the Person_IDs, item ids the Movie_IDs (integers). ``ratings.report`` holds the file, the
        blank lines, the number of votes at each score, a summary of the weights and merged duplicates.

    Raises
    ------
    ParameterError
        No ``path``.
    DataError
        A missing or empty file, or a bad line: the message names the file, the line and the column.
    """
    check_duplicates_policy(duplicates)
    path = _locate(path)
    check_head(path, "latin-1")
    capacity = path.stat().st_size // 9 + 16                   # '1\t1\t0\t1\n' and a little more
    persons, movies, levels = Column(np.int32, capacity), Column(np.int32, capacity), Column(np.int8, capacity)
    lines, weights = Column(np.int64, capacity), Column(np.float64, capacity)
    blank, before = 0, 0
    try:
        reader = pd.read_csv(path, sep="\t", header=None, names=range(len(COLUMNS)), dtype=str, keep_default_na=False,
                             na_filter=False, skip_blank_lines=False, chunksize=_CHUNK_LINES, engine="c",
                             quoting=csv.QUOTE_NONE, encoding="latin-1")
        for frame in reader:
            frame.index = pd.RangeIndex(before + 1, before + 1 + len(frame))
            before += len(frame)
            empty = (frame == "").all(axis=1).to_numpy()
            blank += int(empty.sum())
            frame = frame[~empty]
            if not len(frame):
                continue
            p, m = _whole(path, frame, 0), _whole(path, frame, 1)
            score = pd.to_numeric(frame[2], errors="coerce").to_numpy(dtype=np.float64)
            level = np.round(score * 5)
            bad = ~np.isfinite(score) | (score < 0) | (score > 1) | (np.abs(score * 5 - level) > 1e-6)
            if bad.any():
                raise _bad(path, frame, bad, 2, "a score 0, 0.2, 0.4, 0.6, 0.8 or 1")
            weight = pd.to_numeric(frame[3], errors="coerce").to_numpy(dtype=np.float64)
            bad = ~np.isfinite(weight)
            if bad.any():
                raise _bad(path, frame, bad, 3, "a number (the vote's weight)")
            for column, values in zip((persons, movies, levels, lines, weights),
                                      (p, m, level, frame.index.to_numpy(), weight)):
                column.extend(values)
    except pd.errors.ParserError as exc:
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if found:
            raise DataError(f"{path}: line {found.group(2)} has {found.group(3)} tab-separated fields, expected at "
                            f"most {len(COLUMNS)}: Person_ID, Movie_ID, Score, Weight, Modified") from None
        raise DataError(f"{path}: cannot be read as tab-separated text: {exc}") from None
    if len(persons) == 0:
        raise DataError(f"{path}: holds no votes (only blank lines); expected lines of Person_ID, Movie_ID, Score, "
                        "Weight, Modified separated by tabs")
    users, user_ids = dense_codes(persons.array(), in_place=True)
    items, item_ids = dense_codes(movies.array(), in_place=True)
    level, line, weight = levels.array(), lines.array(), weights.array()
    histogram = {f"{k / 5:g}": int(c) for k, c in enumerate(np.bincount(level, minlength=6))}
    report = {"format": "EachMovie Vote.txt (tab-separated Person_ID, Movie_ID, Score, Weight, Modified)",
              "file": str(path), "blank_lines": blank, "scores": histogram,
              "stars": "score × 5 + 1 (1..6)" if stars else "the scores as they are (0..1)",
              "weights": {"not_one": int(np.count_nonzero(weight != 1)), "min": float(weight.min()),
                          "max": float(weight.max())},
              "modified": "not kept"}
    order = user_item_order(users, items)
    if order is not None:
        users, items, level, line = users[order], items[order], level[order], line[order]

    def describe(row: int, n_pairs: int) -> str:
        return (f"{path}: lines {int(line[row])} and {int(line[row + 1])}: duplicate vote of person "
                f"{int(user_ids[users[row]])} on movie {int(item_ids[items[row]])} ({n_pairs:,} duplicated (person, "
                "movie) pair(s)); to merge them pass duplicates='last' (or 'first', 'mean'; --duplicates last on the "
                "command line)")

    users, items, values, merged = merge_duplicates(users, items, level, duplicates, describe)
    report.update(merged)
    values = values + 1 if stars else values / 5
    out = Ratings(users, items, values, user_ids=user_ids, item_ids=item_ids,
                  scale=(1.0, 6.0) if stars else (0.0, 1.0), name=name or "eachmovie")
    out.report = report
    return out


def write_eachmovie(ratings: Ratings, path, *, seed: int = 0) -> Path:
    """Write ``ratings`` as EachMovie's ``Vote.txt``, which :func:`eachmovie` reads back.

    Parameters
    ----------
    ratings : Ratings
        Whole-number stars 1..6 (written as the scores ``(stars - 1) / 5``); user and item ids whole numbers.
    path : path-like
        The file to write (its folder is created).
    seed : int
        Seeds the vote times (uniform over 1996–1997); every weight is 1.

    Returns
    -------
    Path
        ``path``.
    """
    values = ratings.ratings
    bad = (values != np.round(values)) | (values < 1) | (values > 6)
    if bad.any():
        raise DataError(f"EachMovie's scores are six levels, written from whole-number stars 1..6; {int(bad.sum()):,} "
                        f"ratings are not (e.g. {values[np.flatnonzero(bad)[0]]!r})")
    for what, ids in (("user", ratings.user_ids), ("item", ratings.item_ids)):
        if ids.dtype.kind not in "iu" or (len(ids) and ids.min() < 0):
            raise DataError(f"Vote.txt writes {what} ids as whole numbers; these are {ids.dtype}")
    rng = np.random.default_rng(seed)
    seconds = rng.integers(0, 2 * 365 * 86400, size=len(ratings))
    stamps = (np.datetime64("1996-01-01T00:00:00") + seconds.astype("timedelta64[s]")).astype(object)
    score = np.array(["0", "0.2", "0.4", "0.6", "0.8", "1"])[(values - 1).astype(np.int64)]
    frame = pd.DataFrame({"person": ratings.user_ids[ratings.users], "movie": ratings.item_ids[ratings.items],
                          "score": score, "weight": 1, "modified": [t.strftime("%m/%d/%y %H:%M:%S") for t in stamps]})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, sep="\t", header=False, index=False)
    return path
