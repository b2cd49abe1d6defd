"""The Netflix Prize data in its published layouts: a user's copy read into :class:`~cofiviz.Ratings` with the probe
set marked, and ratings written in that layout.

The files (the Netflix Prize's README, which the data set's two distributions share)
    * ``training_set/mv_0000001.txt`` … ``mv_0017770.txt``, one file per movie: the first line is the movie id
      and a colon (``1:``), every other line ``CustomerID,Rating,Date`` (a whole number, 1 to 5 stars,
      ``YYYY-MM-DD``). 100,480,507 ratings of 480,189 customers on 17,770 movies.
    * or ``combined_data_1.txt`` … ``combined_data_4.txt`` (the copy on Kaggle): the same ``MovieID:`` blocks of
      ``CustomerID,Rating,Date`` lines, one after the other, the movies spread over four files.
    * ``probe.txt`` beside them: ``MovieID:`` lines, each followed by ``CustomerID`` lines: 1,408,395 (customer,
      movie) pairs whose ratings are in the training set.
    * ``movie_titles.txt`` (optional): ``MovieID,YearOfRelease,Title``; a title may hold commas (everything after
      the second comma is the title), the year may be ``NULL``. Read as latin-1 unless told otherwise.

Reading (:func:`netflix_prize`) streams: each file is read in chunks of at most 8 MiB and every chunk is parsed
by NumPy as bytes (newlines, commas, colons and digits found by vectorised comparisons), straight into
preallocated ``int32`` columns of customer and movie ids and an ``int8`` column of stars; no Python object is
made per rating, and the dates are checked (``YYYY-MM-DD``) and dropped. Customers and movies are then numbered
in the order of their ids (a presence table, no sort) and the ratings ordered by (customer, movie) with one
stable sort. The peak is the sort's (the int32/int8 columns, their permutation and the float64 ratings that
:class:`~cofiviz.Ratings` keeps): ``netflix_like`` data written by :func:`write_netflix_prize` peaked at 0.51 GB
resident for 10M ratings and 1.02 GB for 30M (``/usr/bin/time -v``; the interpreter with cofiviz imported holds
0.24 GB), about 26 bytes a rating: about 3 GB for the full 100M.

Every line that is not what the layout says is an error naming the file, the line and the column (``CustomerID``,
``Rating``, ``Date``); so is a rating line before any movie line, a movie line in an ``mv_`` file that is not its
own movie, a probe pair that is not a rating of the training set, a folder that holds no layout or both, a missing
``combined_data`` file. Blank lines are counted in ``report["blank_lines"]``; files of the folder that are not
read are listed in ``report["ignored"]``; several ratings of one (customer, movie) pair follow ``duplicates=`` as
:func:`cofiviz.datasets.read` does.

Writing (:func:`write_netflix_prize`) renders lines as bytes by NumPy too, so that ``netflix_like`` data of any
size can be written in either layout (with a probe set drawn at random) for the reader and for benchmarks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from ..util.errors import DataError, ParameterError
from ..ratings import Ratings
from .columnar import Column, check_duplicates_policy, dense_codes, merge_duplicates, user_item_order

__all__ = ["netflix_prize", "write_netflix_prize", "LAYOUTS", "NETFLIX_PRIZE"]

#: The two layouts of the ratings: one file per movie under ``training_set/``, or four ``combined_data`` files.
LAYOUTS = ("training_set", "combined")
#: The published figures of the training set and the probe set.
NETFLIX_PRIZE = {"n_ratings": 100_480_507, "n_users": 480_189, "n_items": 17_770, "n_probe": 1_408_395}

COMBINED = tuple(f"combined_data_{k}.txt" for k in range(1, 5))
PROBE = "probe.txt"
TITLES = "movie_titles.txt"
_MV = re.compile(r"mv_(\d{7})\.txt")
_COMBINED = re.compile(r"combined_data_(\d+)\.txt")
#: Bytes read and parsed at once.
_CHUNK_BYTES = 1 << 23
#: The most digits an id may have (so that it fits in an int32).
_MAX_DIGITS = 9
#: The shortest rating line, ``1,1,2005-01-01`` and its newline: a file of B bytes holds at most B / 15 ratings.
_SHORTEST = 15
_NL, _CR, _COMMA, _COLON, _DASH, _ZERO, _NINE = 10, 13, 44, 58, 45, 48, 57
#: The days of the real ratings (1999-11-11 .. 2005-12-31), the dates :func:`write_netflix_prize` draws from.
_FIRST_DAY, _END_DAY = np.datetime64("1999-11-11"), np.datetime64("2006-01-01")
#: Leading bytes of compressed files and archives.
_PACKED = ((b"\x1f\x8b", "gzip-compressed data"), (b"\xfd7zXZ\x00", "xz-compressed data"),
           (b"BZh", "bzip2-compressed data"), (b"PK\x03\x04", "a zip archive"))
#: Ratings rendered at once by the writer.
_WRITE_BATCH = 1 << 21


# ---------------------------------------------------------------------------------------------- parsing bytes
@dataclass
class _Chunk:
    """The lines of one chunk of a file, parsed: the data lines' values, and where each one stands."""

    customers: np.ndarray         # int64, one per data line
    movies: np.ndarray            # int64, the movie of each data line (its last movie line)
    stars: np.ndarray | None      # int8, one per data line (None in the probe file)
    data_lines: np.ndarray        # index of each data line among the chunk's lines
    header_lines: np.ndarray      # index of each movie line
    header_movies: np.ndarray     # int64, the movie id of each movie line
    n_lines: int
    blank: int
    last_movie: int | None


def _digits(buf: np.ndarray, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The whole numbers written in ``buf[start:stop]`` of each row, and whether each is 1 to 9 digits."""
    length = stop - start
    ok = (length >= 1) & (length <= _MAX_DIGITS)
    value = np.zeros(len(start), dtype=np.int64)
    for k in range(min(int(length.max()) if len(length) else 0, _MAX_DIGITS)):
        inside = ok & (k < length)
        digit = buf[np.where(inside, start + k, 0)].astype(np.int64) - _ZERO
        ok &= ~inside | ((digit >= 0) & (digit <= 9))
        value = np.where(inside, value * 10 + digit, value)
    return value, ok


def _parse(data: bytes, probe: bool, movie: int | None) -> tuple[_Chunk, int | None, str]:
    """Parse whole lines (``data`` ends with a newline): ``(chunk, index of the first bad line or None, kind)``.

    A line ending in ``:`` is a movie line; every other non-blank line is a rating line (``CustomerID,Rating,Date``)
    or, in the probe file, a customer line (``CustomerID``). ``movie`` is the movie of the lines before the chunk's
    first movie line (carried over from the previous chunk). ``kind`` says what is wrong with the bad line:
    ``"line"`` (its format) or ``"orphan"`` (a rating before any movie line).
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == _NL)
    starts = np.empty_like(ends)
    if len(ends):
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
    stop = ends - ((ends > starts) & (buf[np.maximum(ends - 1, 0)] == _CR))
    nonblank = stop > starts
    header = nonblank & (buf[np.maximum(stop - 1, 0)] == _COLON)
    h = np.flatnonzero(header)
    d = np.flatnonzero(nonblank & ~header)
    header_movies, ok_h = _digits(buf, starts[h], stop[h] - 1)
    ds, de = starts[d], stop[d]
    if probe:
        customers, ok = _digits(buf, ds, de)
        stars = None
    else:
        commas = np.flatnonzero(buf == _COMMA)
        if len(commas):
            j = np.searchsorted(commas, ds)
            first = np.where(j < len(commas), commas[np.minimum(j, len(commas) - 1)], len(buf))
        else:
            first = np.full(len(ds), len(buf), dtype=np.int64)
        has = first < de
        customers, ok = _digits(buf, ds, np.where(has, first, de))
        last = len(buf) - 1
        rating = buf[np.minimum(first + 1, last)]
        ok &= has & (first + 2 < de) & (rating >= _ZERO + 1) & (rating <= _ZERO + 5)
        ok &= buf[np.minimum(first + 2, last)] == _COMMA
        ok &= de - (first + 3) == 10                              # YYYY-MM-DD, then the line ends
        for k in range(10):
            c = buf[np.minimum(first + 3 + k, last)]
            ok &= (c == _DASH) if k in (4, 7) else ((c >= _ZERO) & (c <= _NINE))
        stars = (rating - _ZERO).astype(np.int8)
    bad = np.concatenate([h[~ok_h], d[~ok]])
    which = np.searchsorted(h, d, side="right") - 1
    orphan = d[which < 0] if movie is None else d[:0]
    carried = -1 if movie is None else movie
    movies = (np.where(which >= 0, header_movies[np.maximum(which, 0)], carried) if len(h) else
              np.full(len(d), carried, dtype=np.int64))
    chunk = _Chunk(customers, movies, stars, d, h, header_movies, len(ends), int(np.count_nonzero(~nonblank)),
                   int(header_movies[-1]) if len(h) else movie)
    first_bad = int(bad.min()) if len(bad) else None
    first_orphan = int(orphan[0]) if len(orphan) else None
    if first_orphan is not None and (first_bad is None or first_orphan < first_bad):
        return chunk, first_orphan, "orphan"
    return chunk, first_bad, "line"


def _explain(text: str, probe: bool) -> str:
    """What is wrong with one line that the parser refused, naming its column."""
    shown = repr(text[:80])
    if text.endswith(":"):
        return f"holds {shown}: a movie line is the movie id (a whole number) and a colon, e.g. '1:'"
    if probe:
        return f"holds {shown}, expected a CustomerID (a whole number) or a movie line such as '1:'"
    fields = text.split(",")
    if len(fields) != 3:
        return (f"has {len(fields)} field(s) ({shown}), expected 3: CustomerID,Rating,Date (or a movie line such as "
                f"'1:')")
    customer, rating, date = (f.strip("\r") for f in fields)
    if not (customer.isascii() and customer.isdigit() and len(customer) <= _MAX_DIGITS):
        return f"column 1 (CustomerID) holds {customer[:40]!r}, expected a whole number of at most 9 digits"
    if rating not in ("1", "2", "3", "4", "5"):
        return f"column 2 (Rating) holds {rating[:40]!r}, expected a whole number of stars from 1 to 5"
    return f"column 3 (Date) holds {date[:40]!r}, expected a date written YYYY-MM-DD"


def _line_text(data: bytes, index: int) -> str:
    """The ``index``-th line of ``data`` (0-based), without its line end."""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NL)
    start = int(ends[index - 1]) + 1 if index > 0 else 0
    end = int(ends[index]) if index < len(ends) else len(data)
    return data[start:end].rstrip(b"\r").decode("latin-1")


def _refuse_packed(path: Path) -> None:
    """A compressed or archived file under a text file's name is refused: the reader takes the plain text files."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    for magic, what in _PACKED:
        if head.startswith(magic):
            raise DataError(f"{path}: this is {what}, not a text file; decompress it first (the Netflix Prize reader "
                            "reads the plain text files)")


def _chunks(path: Path, probe: bool) -> Iterator[tuple[_Chunk, int]]:
    """The file's chunks parsed, each with the number of lines before it; a bad line is a :class:`DataError`."""
    _refuse_packed(path)
    movie, before, rest = None, 0, b""
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_CHUNK_BYTES)
            data = rest + block
            if not block:
                if not data:
                    return
                data += b"\n"                                     # a last line without a line break
                rest = b""
            else:
                cut = data.rfind(b"\n")
                if cut < 0:
                    if len(data) > _CHUNK_BYTES:
                        raise DataError(f"{path}: line {before + 1} is longer than {_CHUNK_BYTES:,} bytes: this is "
                                        "not a Netflix Prize file")
                    rest = data
                    continue
                data, rest = data[:cut + 1], data[cut + 1:]
            chunk, bad, kind = _parse(data, probe, movie)
            if bad is not None:
                if kind == "orphan":
                    what = "customer" if probe else "rating"
                    raise DataError(f"{path}: line {before + bad + 1}: a {what} line before any movie line; expected "
                                    f"the file to start with its movie id and a colon (e.g. '1:')")
                raise DataError(f"{path}: line {before + bad + 1} {_explain(_line_text(data, bad), probe)}")
            movie = chunk.last_movie
            yield chunk, before
            before += chunk.n_lines
            if not block:
                return


# ---------------------------------------------------------------------------------------------- the folder
@dataclass
class _Layout:
    """What a folder holds: the layout, its rating files (with the movie of each ``mv_`` file), probe and titles."""

    layout: str
    root: Path
    files: list                   # [(path, movie id or None, size in bytes)]
    probe: Path | None
    titles: Path | None
    ignored: list


def _listing(folder: Path, limit: int = 12) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    if not names:
        return "nothing (the folder is empty)"
    return ", ".join(names[:limit]) + (f", ... ({len(names)} entries)" if len(names) > limit else "")


def _mv_files(folder: Path) -> tuple[list, list]:
    """``([(path, movie, size)]`` of the ``mv_`` files in movie order, ``[other names]``)."""
    files, other = [], []
    with os.scandir(folder) as entries:
        for entry in entries:
            m = _MV.fullmatch(entry.name)
            if m and entry.is_file():
                files.append((int(m.group(1)), entry.name, entry.stat().st_size))
            else:
                other.append(entry.name)
    return [(folder / name, movie, size) for movie, name, size in sorted(files)], other


def _locate(path, layout: str | None, probe, titles) -> _Layout:
    """The files of the layout in ``path`` (see :func:`netflix_prize`)."""
    if path is None:
        raise ParameterError("netflix-prize reads your own copy of the Netflix Prize files: give path=FOLDER (the "
                             "folder that holds training_set/ or combined_data_1.txt … combined_data_4.txt, and "
                             "probe.txt; --data netflix-prize=FOLDER on the command line)")
    root = Path(os.fspath(path)).expanduser()
    if not root.exists():
        raise DataError(f"{root}: no such folder; expected the folder that holds the Netflix Prize's training_set/ "
                        "(or combined_data_1.txt … combined_data_4.txt) and probe.txt")
    if not root.is_dir():
        raise DataError(f"{root}: is a file; expected the folder that holds the Netflix Prize's training_set/ (or "
                        "combined_data_1.txt … combined_data_4.txt) and probe.txt")
    if layout is not None and layout not in LAYOUTS:
        raise ParameterError(f"layout must be one of {', '.join(map(repr, LAYOUTS))} or None (found in the folder), "
                             f"got {layout!r}")
    here, other_here = _mv_files(root)
    sub = root / "training_set"
    in_sub, other_sub = _mv_files(sub) if sub.is_dir() else ([], [])
    combined = {int(m.group(1)): root / name for name in os.listdir(root)
                if (m := _COMBINED.fullmatch(name)) and (root / name).is_file()}
    if in_sub and here:
        raise DataError(f"{root}: holds mv_NNNNNNN.txt files both in the folder itself and in training_set/; keep "
                        "them in one place")
    found = (["training_set"] if (in_sub or here) else []) + (["combined"] if combined else [])
    if layout is None:
        if len(found) == 2:
            raise DataError(f"{root}: holds both layouts of the Netflix Prize ratings, training_set/ (one file per "
                            f"movie) and {', '.join(combined[k].name for k in sorted(combined))}; they hold the "
                            "same ratings: pass layout='training_set' or layout='combined' (in Python), or keep one "
                            "of them in the folder")
        if not found and sub.is_dir():
            raise DataError(f"{sub}: holds no mv_NNNNNNN.txt files (the Netflix Prize's training_set/ holds 17,770, "
                            f"one per movie); it holds {_listing(sub)}")
        if not found:
            raise DataError(f"{root}: no Netflix Prize ratings here; expected training_set/mv_0000001.txt … (one "
                            f"file per movie) or combined_data_1.txt … combined_data_4.txt; the folder holds "
                            f"{_listing(root)}")
        layout = found[0]
    elif layout not in found:
        raise DataError(f"{root}: layout={layout!r} was asked for, but the folder holds "
                        + ("no mv_NNNNNNN.txt files (in training_set/ or the folder itself)" if layout == "training_set"
                           else "no combined_data_N.txt files") + f"; it holds {_listing(root)}")
    known = {PROBE, TITLES}
    if layout == "training_set":
        folder = sub if in_sub else root
        files, other = (in_sub, other_sub) if in_sub else (here, other_here)
        ignored = [f"{folder.name}/{n}" if folder is sub else n for n in sorted(other)]
        if folder is sub:
            ignored += sorted(n for n in os.listdir(root) if n not in known and n != "training_set")
        else:
            ignored = [n for n in ignored if n not in known]
    else:
        numbers = sorted(combined)
        missing = [k for k in range(1, 5) if k not in combined]
        extra = [k for k in numbers if k not in range(1, 5)]
        if missing or extra:
            problem = (f"{', '.join(f'combined_data_{k}.txt' for k in missing)} {'is' if len(missing) == 1 else 'are'} "
                       "missing" if missing else
                       f"{', '.join(f'combined_data_{k}.txt' for k in extra)} is not part of the layout")
            raise DataError(f"{root}: {problem}: the four-file layout is combined_data_1.txt … combined_data_4.txt "
                            f"(found: {', '.join(combined[k].name for k in numbers)})")
        files = [(combined[k], None, combined[k].stat().st_size) for k in range(1, 5)]
        ignored = sorted(n for n in os.listdir(root) if n not in known and not _COMBINED.fullmatch(n)
                         and n != "training_set")
    # probe.txt and movie_titles.txt stand beside training_set/ (or in the folder of the mv_ files, or above it)
    near = [root] if (layout == "combined" or in_sub) else [root, root.parent]
    probe_path = _optional(probe, PROBE, near, required=True, what="the probe set")
    titles_path = _optional(titles, TITLES, near, required=False, what="the movie titles")
    return _Layout(layout, root, files, probe_path, titles_path, ignored)


def _optional(given, name: str, near: list, required: bool, what: str) -> Path | None:
    """The file for ``given`` (True: ``name`` in the first of ``near`` that has it; a path: that file; False: none)."""
    if given is False or given is None:
        return None
    if given is True:
        for folder in near:
            if (folder / name).is_file():
                return folder / name
        if not required:
            return None
        flag = "probe" if name == PROBE else "titles"
        raise DataError(f"{near[0] / name}: no such file; {what} of the Netflix Prize is {name} beside training_set/ "
                        f"(or the combined_data files); pass {flag}=False to read the ratings without it, or "
                        f"{flag}=PATH to name the file")
    p = Path(os.fspath(given)).expanduser()
    if not p.is_file():
        raise DataError(f"{p}: no such file ({what}, {name})")
    return p


# ---------------------------------------------------------------------------------------------- reading
def _read_ratings(where: _Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Customer ids, movie ids (int32) and stars (int8) of every rating, in file order, and what was read."""
    capacity = sum(size for _, _, size in where.files) // _SHORTEST + 16
    columns = Column(np.int32, capacity), Column(np.int32, capacity), Column(np.int8, capacity)
    blank, per_file = 0, {}

    def add(chunk: _Chunk) -> int:
        for column, values in zip(columns, (chunk.customers, chunk.movies, chunk.stars)):
            column.extend(values)
        return chunk.blank

    if where.layout == "combined":
        for path, _, _ in where.files:
            count = len(columns[0])
            for chunk, _ in _chunks(path, probe=False):
                blank += add(chunk)
            per_file[path.name] = len(columns[0]) - count
    else:
        batch, size = [], 0
        for entry in where.files + [None]:
            if entry is not None and (not batch or size + entry[2] <= _CHUNK_BYTES):
                batch.append(entry)
                size += entry[2]
                continue
            if len(batch) == 1 and batch[0][2] > _CHUNK_BYTES:
                for chunk in _large_mv_file(*batch[0][:2]):
                    blank += add(chunk)
            elif batch:
                blank += add(_mv_batch(batch))
            batch, size = ([entry], entry[2]) if entry is not None else ([], 0)
    customers, movies, stars = (column.array() for column in columns)
    return customers, movies, stars, {"blank_lines": blank, "per_file": per_file}


def _mv_batch(batch: list) -> _Chunk:
    """Several whole ``mv_`` files parsed at once (one parse of their bytes joined), each checked to hold one movie
    line, its own movie's, before its ratings."""
    blobs = []
    for path, movie, _ in batch:
        with open(path, "rb") as fh:
            data = fh.read()
        if not data:
            raise DataError(f"{path}: the file is empty; expected its first line to be its movie id and a colon "
                            f"('{movie}:'), then CustomerID,Rating,Date lines")
        if data[:1] in (b"\x1f", b"\xfd", b"B", b"P"):
            _refuse_packed(path)
        blobs.append(data if data.endswith(b"\n") else data + b"\n")
    first = np.concatenate([[0], np.cumsum([blob.count(b"\n") for blob in blobs])])
    data = b"".join(blobs)
    chunk, bad, kind = _parse(data, False, None)
    movie_of = np.array([movie for _, movie, _ in batch], dtype=np.int64)
    h_file = np.searchsorted(first, chunk.header_lines, side="right") - 1
    d_file = np.searchsorted(first, chunk.data_lines, side="right") - 1
    which = np.searchsorted(chunk.header_lines, chunk.data_lines, side="right") - 1
    problems = [] if bad is None else [(bad, kind)]
    wrong = np.flatnonzero(chunk.header_movies != movie_of[h_file])
    if len(wrong):
        problems.append((int(chunk.header_lines[wrong[0]]), "wrong"))
    second = np.flatnonzero(h_file[1:] == h_file[:-1])
    if len(second):
        problems.append((int(chunk.header_lines[second[0] + 1]), "second"))
    orphan = np.flatnonzero((which < 0) | (h_file[np.maximum(which, 0)] != d_file)) if len(h_file) else \
        np.arange(len(d_file))
    if len(orphan):
        problems.append((int(chunk.data_lines[orphan[0]]), "orphan"))
    headless = np.flatnonzero(np.bincount(h_file, minlength=len(batch)) == 0)
    if len(headless):
        problems.append((int(first[headless[0]]), "headless"))
    if problems:
        line, kind = min(problems)
        f = int(np.searchsorted(first, line, side="right") - 1)
        path, movie, _ = batch[f]
        where = f"{path}: line {line - first[f] + 1}"
        if kind == "line":
            raise DataError(f"{where} {_explain(_line_text(data, line), False)}")
        if kind == "wrong":
            raise DataError(f"{where}: the movie line says movie {int(chunk.header_movies[wrong[0]])}, but {path.name} "
                            f"holds movie {movie} only (an mv_NNNNNNN.txt file holds the movie its name gives)")
        if kind == "second":
            raise DataError(f"{where}: a second movie line; an mv_NNNNNNN.txt file names its movie once, on its first "
                            "line")
        raise DataError(f"{where}: " + ("no movie line; " if kind == "headless" else "a rating line before the movie "
                                        "line; ") + f"expected the file to start with its movie id and a colon "
                        f"('{movie}:')")
    return chunk


def _large_mv_file(path: Path, movie: int) -> Iterator[_Chunk]:
    """An ``mv_`` file larger than a chunk, read in chunks, checked as :func:`_mv_batch` checks files."""
    if os.path.getsize(path) == 0:
        raise DataError(f"{path}: the file is empty; expected its first line to be its movie id and a colon "
                        f"('{movie}:'), then CustomerID,Rating,Date lines")
    for chunk, before in _chunks(path, probe=False):
        if len(chunk.header_lines):
            wrong = np.flatnonzero(chunk.header_movies != movie)
            if len(wrong):
                raise DataError(f"{path}: line {before + int(chunk.header_lines[wrong[0]]) + 1}: the movie line says "
                                f"movie {int(chunk.header_movies[wrong[0]])}, but {path.name} holds movie {movie} "
                                "only (an mv_NNNNNNN.txt file holds the movie its name gives)")
            if before > 0 or len(chunk.header_lines) > 1:
                k = int(chunk.header_lines[0 if before > 0 else 1])
                raise DataError(f"{path}: line {before + k + 1}: a second movie line; an mv_NNNNNNN.txt file names "
                                "its movie once, on its first line")
        yield chunk


def _locate_pair(where: _Layout, customer: int, movie: int, limit: int = 2) -> list[str]:
    """Where the ratings of (customer, movie) are, as ``"FILE: line N"`` (the error path of duplicates)."""
    found = []
    files = [(p, m) for p, m, _ in where.files if m is None or m == movie]
    for path, _ in files:
        for chunk, before in _chunks(path, probe=False):
            hit = np.flatnonzero((chunk.customers == customer) & (chunk.movies == movie))
            found += [f"{path}: line {before + int(chunk.data_lines[k]) + 1}" for k in hit]
            if len(found) >= limit:
                return found[:limit]
    return found


def _read_probe(path: Path, user_ids: np.ndarray, item_ids: np.ndarray, users: np.ndarray,
                items: np.ndarray) -> tuple[np.ndarray, dict]:
    """The mask of the ratings (sorted by user, then item) that ``probe.txt`` lists, and what it held."""
    if os.path.getsize(path) == 0:
        raise DataError(f"{path}: the file is empty; expected movie lines ('1:') each followed by CustomerID lines")
    capacity = os.path.getsize(path) // 2 + 16
    customers, movies, lines = Column(np.int32, capacity), Column(np.int32, capacity), Column(np.int64, capacity)
    blank = 0
    for chunk, before in _chunks(path, probe=True):
        customers.extend(chunk.customers)
        movies.extend(chunk.movies)
        lines.extend(before + chunk.data_lines + 1)
        blank += chunk.blank
    pc, pm, pl = customers.array(), movies.array(), lines.array()
    if len(pc) == 0:
        raise DataError(f"{path}: holds no customer lines; expected movie lines ('1:') each followed by CustomerID "
                        "lines")
    u = np.searchsorted(user_ids, pc)
    i = np.searchsorted(item_ids, pm)
    known = (u < len(user_ids)) & (i < len(item_ids))
    known &= (user_ids[np.minimum(u, len(user_ids) - 1)] == pc) & (item_ids[np.minimum(i, len(item_ids) - 1)] == pm)
    n_items = len(item_ids)
    keys = u.astype(np.int64) * n_items + i
    rated = users.astype(np.int64) * n_items + items         # ascending: sorted by (user, item), no repeats
    pos = np.searchsorted(rated, keys)
    found = known & (pos < len(rated))
    found[found] = rated[pos[found]] == keys[found]
    del rated
    if not found.all():
        k = int(np.flatnonzero(~found)[0])
        raise DataError(f"{path}: line {int(pl[k])}: customer {int(pc[k])} on movie {int(pm[k])} is not a rating of "
                        f"the training set ({int(np.count_nonzero(~found)):,} such line(s)); the probe set lists "
                        "ratings that the training set holds")
    order = np.argsort(keys, kind="stable")
    repeated = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if len(repeated):
        a, b = sorted((int(order[repeated[0]]), int(order[repeated[0] + 1])))
        raise DataError(f"{path}: lines {int(pl[a])} and {int(pl[b])}: customer {int(pc[a])} on movie {int(pm[a])} is "
                        f"listed twice ({len(repeated):,} repeated pair(s)); each probe rating is listed once")
    mask = np.zeros(len(users), dtype=bool)
    mask[pos] = True
    return mask, {"file": str(path), "ratings": int(len(pc)), "users": int(len(np.unique(u))),
                  "items": int(len(np.unique(i))), "blank_lines": blank}


def _read_titles(path: Path, encoding: str) -> pd.DataFrame:
    """``movie_titles.txt`` as a table of ``item``, ``title``, ``release_year`` (nullable)."""
    ids, years, titles = [], [], []
    seen: dict[int, int] = {}
    try:
        text = path.read_bytes().decode(encoding)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: cannot be decoded as {encoding} ({exc.reason}); pass titles_encoding= the file's "
                        "own encoding") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split(",", 2)
        if len(fields) < 3:
            raise DataError(f"{path}: line {number} has {len(fields)} field(s) ({line[:80]!r}), expected "
                            "MovieID,YearOfRelease,Title")
        movie, year, title = fields[0].strip(), fields[1].strip(), fields[2].strip()
        if not (movie.isascii() and movie.isdigit()):
            raise DataError(f"{path}: line {number}: column 1 (MovieID) holds {movie[:40]!r}, expected a whole number")
        if year.upper() != "NULL" and not (year.isascii() and year.isdigit()):
            raise DataError(f"{path}: line {number}: column 2 (YearOfRelease) holds {year[:40]!r}, expected a year or "
                            "NULL")
        if int(movie) in seen:
            raise DataError(f"{path}: lines {seen[int(movie)]} and {number}: movie {int(movie)} is listed twice")
        seen[int(movie)] = number
        ids.append(int(movie))
        years.append(None if year.upper() == "NULL" else int(year))
        titles.append(title)
    return pd.DataFrame({"item": np.asarray(ids, dtype=np.int64), "title": titles,
                         "release_year": pd.array(years, dtype="Int64")})


def _item_info(item_ids: np.ndarray, table: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """One row per item index from the titles table, and what did not match."""
    indexed = table.set_index("item")
    info = pd.DataFrame({"item": item_ids})
    info["title"] = indexed["title"].reindex(item_ids).to_numpy()
    info["release_year"] = indexed["release_year"].reindex(item_ids).array
    listed = np.isin(item_ids, table["item"].to_numpy())
    without = item_ids[~listed]
    return info, {"movies": int(len(table)), "rated_without_title": int(len(without)),
                  "rated_without_title_ids": without[:10].tolist(),
                  "listed_without_ratings": int(len(table) - np.count_nonzero(listed))}


def netflix_prize(path=None, *, probe=True, titles=True, layout: str | None = None, duplicates: str = "error",
                  titles_encoding: str = "latin-1", name: str | None = None) -> Ratings:
    """The Netflix Prize ratings from your own copy of its files, the probe set marked.

    Parameters
    ----------
    path : str or path-like
        The folder that holds ``training_set/`` (or the ``mv_NNNNNNN.txt`` files themselves) or
        ``combined_data_1.txt`` … ``combined_data_4.txt``, with ``probe.txt`` (and ``movie_titles.txt``) beside them.
    probe : bool or path-like
        ``True``: ``probe.txt`` beside the ratings is read and required; a path: that file; ``False``: no probe set
        (``ratings.probe`` is None).
    titles : bool or path-like
        ``True``: ``movie_titles.txt`` beside the ratings is read if it is there; a path: that file (required);
        ``False``: not read.
    layout : {"training_set", "combined"}, optional
        Which layout to read when the folder holds both (otherwise the one it holds).
    duplicates : {"error", "first", "last", "mean"}
        Several ratings of one (customer, movie) pair: an error naming both lines (default), or keep the earliest
        or latest in file order (``training_set/`` in movie order; ``combined_data_1`` … ``_4``), or their mean,
        as in :func:`cofiviz.datasets.read`.
    titles_encoding : str
        The text encoding of ``movie_titles.txt`` (latin-1 in the published copy).
    name : str, optional
        Label of the table (default ``"netflix-prize"``).

    Returns
    -------
    Ratings
        The ratings on the scale 1..5; user ids are Netflix's customer ids and item ids its movie ids (both
        integers, indexed in increasing order). ``ratings.probe`` is a boolean array aligned with
        ``ratings.users`` / ``items`` / ``ratings``: true for the pairs of ``probe.txt``, so that the training set
        minus the probe set is ``ratings.take(~ratings.probe)`` and the probe set ``ratings.take(ratings.probe)``
        (a table made by ``take`` has no ``probe`` of its own). ``item_info`` holds ``item``, ``title`` and
        ``release_year`` when the titles were read. ``ratings.report`` says which layout and files were read, the
        blank lines, the files not read, the probe set's size, the titles that did not match and merged
        duplicates.

    Raises
    ------
    ParameterError
        No ``path``, or an unknown ``layout``.
    DataError
        A folder with no layout or with both, an empty ``training_set/``, a missing ``combined_data`` file or
        ``probe.txt``, or a bad line: the message names the file, the line and the column.
    """
    check_duplicates_policy(duplicates)
    where = _locate(path, layout, probe, titles)
    customers, movies, stars, read = _read_ratings(where)
    if len(customers) == 0:
        raise DataError(f"{where.root}: the {where.layout} files hold no rating lines (CustomerID,Rating,Date)")
    users, user_ids = dense_codes(customers, in_place=True)
    items, item_ids = dense_codes(movies, in_place=True)
    del customers, movies
    order = user_item_order(users, items)
    if order is not None:
        users, items, stars = users[order], items[order], stars[order]
        del order

    def describe(row: int, n_pairs: int) -> str:
        customer, movie = int(user_ids[users[row]]), int(item_ids[items[row]])
        places = _locate_pair(where, customer, movie)
        return (f"{' and '.join(places)}: duplicate rating of customer {customer} on movie {movie} ({n_pairs:,} "
                "duplicated (customer, movie) pair(s)); to merge them pass duplicates='last' (or 'first', 'mean'; "
                "--duplicates last on the command line)")

    users, items, values, merged = merge_duplicates(users, items, stars, duplicates, describe)
    del stars
    report: dict = {"format": ("Netflix Prize, training_set/ (one mv_NNNNNNN.txt per movie)"
                               if where.layout == "training_set" else "Netflix Prize, combined_data_1..4.txt"),
                    "layout": where.layout, "folder": str(where.root), "files": len(where.files),
                    "blank_lines": read["blank_lines"], "dates": "checked (YYYY-MM-DD) and not kept",
                    "ignored": where.ignored}
    if read["per_file"]:
        report["ratings_per_file"] = read["per_file"]
    report.update(merged)
    item_info = None
    if where.titles is not None:
        item_info, report["titles"] = _item_info(item_ids, _read_titles(where.titles, titles_encoding))
        report["titles"]["file"] = str(where.titles)
    out = Ratings(users, items, values, user_ids=user_ids, item_ids=item_ids, scale=(1.0, 5.0), item_info=item_info,
                  name=name or "netflix-prize")
    del users, items, values
    out.probe = None
    if where.probe is not None:
        out.probe, report["probe"] = _read_probe(where.probe, out.user_ids, out.item_ids, out.users, out.items)
    out.report = report
    return out


# ---------------------------------------------------------------------------------------------- writing
def _n_digits(values: np.ndarray) -> np.ndarray:
    return np.searchsorted(10 ** np.arange(1, 19, dtype=np.int64), values, side="right") + 1


def _render(headers: np.ndarray, counts: np.ndarray, customers: np.ndarray, stars: np.ndarray | None,
            dates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of ``MovieID:`` blocks: movie ``headers[j]`` followed by its ``counts[j]`` lines of ``customers``
    (``CustomerID,Rating,Date`` with ``stars`` and rows of the date table ``dates``, or ``CustomerID`` alone when
    ``stars`` is None), and the byte offset where each block starts."""
    m, n = len(headers), len(customers)
    head_at = np.arange(m) + np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    is_head = np.zeros(m + n, dtype=bool)
    is_head[head_at] = True
    value = np.empty(m + n, dtype=np.int64)
    value[is_head] = headers
    value[~is_head] = customers
    nd = _n_digits(value)
    tail = np.where(is_head, 2, 1 if stars is None else 14)      # ':\n', '\n' or ',R,YYYY-MM-DD\n'
    end = np.cumsum(nd + tail)
    start = end - nd - tail
    out = np.empty(int(end[-1]) if len(end) else 0, dtype=np.uint8)
    power = 10 ** np.arange(19, dtype=np.int64)
    for k in range(int(nd.max()) if len(nd) else 0):
        sel = np.flatnonzero(k < nd)
        out[start[sel] + k] = _ZERO + (value[sel] // power[nd[sel] - 1 - k]) % 10
    out[end - 1] = _NL
    out[start[is_head] + nd[is_head]] = _COLON
    if stars is not None:
        at = start[~is_head] + nd[~is_head]
        out[at] = _COMMA
        out[at + 1] = _ZERO + stars
        out[at + 2] = _COMMA
        table = _date_table()
        for k in range(10):
            out[at + 3 + k] = table[dates, k]
    return out, start[head_at]


def _date_table() -> np.ndarray:
    days = np.arange(_FIRST_DAY, _END_DAY).astype(str)
    return np.frombuffer("".join(days).encode("ascii"), dtype=np.uint8).reshape(-1, 10)


def _whole_ids(ids: np.ndarray, what: str, limit: int) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise DataError(f"the Netflix Prize layout writes {what} ids as whole numbers; these {what} ids are "
                        f"{ids.dtype} (e.g. {ids[0]!r})" if len(ids) else f"no {what} ids")
    if len(ids) and (ids.min() < 0 or ids.max() >= limit):
        raise DataError(f"the Netflix Prize layout writes {what} ids as whole numbers from 0 to {limit - 1:,}; these "
                        f"run from {ids.min()} to {ids.max()}")
    return ids.astype(np.int64)


def write_netflix_prize(ratings: Ratings, folder, *, layout: str = "training_set", probe_fraction: float = 0.015,
                        probe: np.ndarray | None = None, seed: int = 0, titles: bool = True) -> Path:
    """Write ``ratings`` as the Netflix Prize's files, which :func:`netflix_prize` reads back.

    Parameters
    ----------
    ratings : Ratings
        Whole-number ratings 1..5; user and item ids whole numbers (items below 10,000,000, the seven digits of
        an ``mv_`` file name), e.g. ``datasets.netflix_like(n_ratings=...)``.
    folder : path-like
        Created if needed; the files are written into it.
    layout : {"training_set", "combined"}
        ``training_set/mv_NNNNNNN.txt`` (one file per rated movie) or ``combined_data_1.txt`` …
        ``combined_data_4.txt`` (the movies in increasing order, cut into four runs of about equal ratings).
    probe_fraction : float in [0, 1)
        The share of the ratings drawn uniformly (seeded) for ``probe.txt`` (the real probe set is 1.4 %).
    probe : array of bool, optional
        The probe set itself, aligned with ``ratings`` (e.g. ``ratings.probe`` of data read by
        :func:`netflix_prize`); overrides ``probe_fraction``.
    seed : int
        Seeds the probe draw, the dates (uniform over 1999-11-11 .. 2005-12-31) and the titles' years.
    titles : bool
        Write ``movie_titles.txt`` with a synthetic title for every item (every seventh holds a comma, every
        fiftieth year is ``NULL``, as in the real file).

    Returns
    -------
    Path
        ``folder``. In each movie's block the lines follow the customer ids.
    """
    if not isinstance(ratings, Ratings):
        raise DataError(f"write_netflix_prize needs a cofiviz.Ratings table, got {type(ratings).__name__}")
    if layout not in LAYOUTS:
        raise ParameterError(f"layout must be one of {', '.join(map(repr, LAYOUTS))}, got {layout!r}")
    if not (isinstance(probe_fraction, (int, float)) and 0 <= probe_fraction < 1):
        raise ParameterError(f"probe_fraction must be a number in [0, 1), got {probe_fraction!r}")
    values = ratings.ratings
    bad = (values != np.round(values)) | (values < 1) | (values > 5)
    if bad.any():
        raise DataError(f"the Netflix Prize layout holds whole-number ratings from 1 to 5; {int(bad.sum()):,} ratings "
                        f"are not (e.g. {values[np.flatnonzero(bad)[0]]!r})")
    user_ids = _whole_ids(ratings.user_ids, "user", 10 ** _MAX_DIGITS)
    item_ids = _whole_ids(ratings.item_ids, "item", 10 ** 7)
    rng = np.random.default_rng(seed)
    n = len(ratings)
    if probe is None:
        probe = np.zeros(n, dtype=bool)
        probe[rng.choice(n, size=int(round(probe_fraction * n)), replace=False)] = True
    else:
        probe = np.asarray(probe, dtype=bool)
        if probe.shape != (n,):
            raise DataError(f"probe must be a boolean array of one value per rating ({n:,}), got shape {probe.shape}")
    dates = rng.integers(0, int((_END_DAY - _FIRST_DAY).astype(int)), size=n).astype(np.int16)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    order = np.argsort(ratings.items, kind="stable")          # by movie, then customer (the table is user-sorted)
    movies = ratings.items[order]
    counts = np.bincount(movies, minlength=ratings.n_items)
    rated = np.flatnonzero(counts)
    bounds = np.concatenate([[0], np.cumsum(counts[rated])])
    if layout == "training_set":
        (folder / "training_set").mkdir(exist_ok=True)
        outputs = None
    else:
        part = np.minimum(bounds[:-1] * 4 // max(n, 1), 3)     # file of each rated movie: four runs of about n / 4
        outputs = [open(folder / name, "wb") for name in COMBINED]
    try:
        a = 0
        while a < len(rated):
            b = max(a + 1, int(np.searchsorted(bounds, bounds[a] + _WRITE_BATCH, side="right")) - 1)
            b = min(b, len(rated))
            if outputs is not None:
                b = a + int(np.count_nonzero(part[a:b] == part[a]))   # a batch stays within one file
            rows = order[bounds[a]:bounds[b]]
            text, starts = _render(item_ids[rated[a:b]], counts[rated[a:b]], user_ids[ratings.users[rows]],
                                   values[rows].astype(np.int64), dates[rows])
            if outputs is not None:
                outputs[int(part[a])].write(text.tobytes())
            else:
                edges = np.concatenate([starts, [len(text)]])
                for j, movie in enumerate(item_ids[rated[a:b]]):
                    (folder / "training_set" / f"mv_{int(movie):07d}.txt").write_bytes(
                        text[edges[j]:edges[j + 1]].tobytes())
            a = b
    finally:
        for fh in outputs or []:
            fh.close()
    rows = order[probe[order]]                                 # the probe pairs by movie, then customer
    p_movies, p_counts = np.unique(ratings.items[rows], return_counts=True)
    text, _ = _render(item_ids[p_movies], p_counts, user_ids[ratings.users[rows]], None, None) if len(rows) else \
        (np.zeros(0, dtype=np.uint8), None)
    (folder / PROBE).write_bytes(text.tobytes())
    if titles:
        years = rng.integers(1920, 2006, size=len(item_ids))
        lines = []
        for k, movie in enumerate(item_ids.tolist()):
            year = "NULL" if movie % 50 == 0 else str(int(years[k]))
            title = f"Synthetic movie {movie}" + (", the sequel" if movie % 7 == 3 else "")
            lines.append(f"{movie},{year},{title}\n")
        (folder / TITLES).write_text("".join(lines), encoding="latin-1")
    return folder
