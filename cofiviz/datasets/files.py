"""Reading a user's own ratings file: CSV, TSV, whitespace-separated text and Parquet.

Text files may be compressed: a name ending in ``.gz``, ``.bz2``, ``.xz`` or ``.zip`` (one file
inside) is decompressed, for the header sniffing as for the parsing (see :mod:`.streams`), and gives
exactly the table of the plain file. A file that is not text (binary data, a first line of more than a
MiB, no number in the rating column of its first lines) is refused before it is parsed.

A ratings file holds one rating per line, ``user item rating`` (more columns are allowed and
ignored; which ones is reported). The header is optional: when the first line's rating field (the
third, unless told otherwise) is not a number, and its two id fields are not both numbers, it is
taken to be a header, and the columns named like ``user``/``user_id``, ``item``/``movie_id``,
``rating``/``score`` are used; otherwise the first three columns are. Ids may be numbers or
strings; a column whose ids are all plain integers (no leading zeros) keeps them as integers. Line
numbers assume that no quoted field spans several lines.

Every bad line is an error that names the file, the line (1-based, as an editor shows it) and the
column: an empty file, a file with fewer than three columns, a line with too many fields, a missing
id, a missing, non-numeric, NaN or infinite rating, a rating outside the declared scale, a duplicate
(user, item) pair (unless ``duplicates="first"``, ``"last"`` or ``"mean"``). Every piece of advice an
error gives names the Python keyword and the ``cofiviz run`` / ``cofiviz split`` flag that follow it
(``encoding=`` / ``--encoding``, ``sep=`` / ``--sep``, ``user=`` / ``--user``, ...). Nothing is dropped
silently: lines
that are blank, a header, columns that are not used, rows removed by ``dropna=True`` and merged
duplicates are all recorded in ``ratings.report``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..util.errors import DataError
from ..ratings import DUPLICATE_POLICIES, Ratings
from .streams import check_encoding, check_head, compression, member_name, open_binary, text_lines

__all__ = ["read", "read_frame", "PARQUET_SUFFIXES"]

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
#: Header names recognised for each role (compared case-insensitively, ignoring ``_``, ``-`` and spaces).
ALIASES = {
    "user": ("user", "userid", "users", "uid", "customer", "customerid"),
    "item": ("item", "itemid", "items", "iid", "movie", "movieid", "product", "productid"),
    "rating": ("rating", "ratings", "score", "value", "stars", "grade"),
}
_NA_TOKENS = {"", "na", "n/a", "nan", "null", "none", "<na>"}
_INT_RE = r"^-?(?:0|[1-9][0-9]*)$"
_MAX_LISTED = 10
#: Data lines read ahead of the parser: when none of them holds a number in the rating column (and the
#: file goes on), the file is not a ratings table and is refused before it is parsed whole.
_SAMPLE_LINES = 100


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", str(name)).lower()


def _decode_error(path: Path, encoding: str, exc: UnicodeDecodeError) -> DataError:
    bad = exc.object[exc.start:exc.end][:8] if isinstance(exc.object, (bytes, bytearray)) else b""
    shown = f" {bytes(bad)!r}" if bad else ""
    return DataError(f"{path}: cannot be decoded as {_encoding_name(encoding)} ({exc.reason}{shown}); pass "
                     f"--encoding latin-1 (encoding='latin-1' in Python), or the file's own encoding")


def _encoding_name(encoding: str) -> str:
    return "utf-8" if encoding == "utf-8-sig" else encoding


def _first_lines(path: Path, encoding: str, n: int = 1) -> tuple[int, list[str], bool]:
    """The number of blank lines before the first non-blank line, up to ``n`` lines from there, and
    whether that is the whole file."""
    skipped, lines = 0, []
    try:
        for line, _ in text_lines(path, encoding):
            if not lines and not line.strip():
                skipped += 1
                continue
            if len(lines) >= n:
                return skipped, lines, False
            lines.append(line)
    except UnicodeDecodeError as exc:
        raise _decode_error(path, encoding, exc) from None
    return skipped, lines, True


def _sniff_sep(line: str) -> str:
    if "\t" in line:
        return "\t"
    if "::" in line:
        return "::"
    for sep in (",", ";", "|"):
        if sep in line:
            return sep
    return r"\s+"


def _split(line: str, sep: str) -> list[str]:
    parts = line.split() if sep == r"\s+" else line.split(sep)
    return [p.strip().strip('"').strip("'").strip() for p in parts]


def _sep_name(sep: str) -> str:
    return {"\t": "tab", ",": "comma", ";": "semicolon", "|": "'|'", "::": "'::'", r"\s+": "whitespace"}.get(
        sep, repr(sep))


def _has_header(fields: list[str], user, item, rating) -> bool:
    """A header when columns are given by name, or the first line's rating field is not a number
    (unless both id fields are numbers: then it is a data line with a bad rating, reported as such)."""
    specs = (user, item, rating)
    if any(isinstance(s, str) and s in fields for s in specs):
        return True
    up, ip, rp = (int(s) if isinstance(s, (int, np.integer)) else d for s, d in zip(specs, (0, 1, 2)))
    if max(up, ip, rp) >= len(fields):
        return False
    value = fields[rp]
    return value != "" and not _is_number(value) and not (_is_number(fields[up]) and _is_number(fields[ip]))


def _pick_columns(names: list[str], header: bool, user, item, rating, path: Path) -> dict[str, int]:
    """Column position for each role, from explicit names/positions, header aliases or position."""
    given = {"user": user, "item": item, "rating": rating}
    pos: dict[str, int] = {}
    for role, spec in given.items():
        if spec is None:
            continue
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            if not 0 <= int(spec) < len(names):
                raise DataError(f"{path}: {role}={spec} is not a column position; the file has {len(names)} "
                                f"columns (positions 0..{len(names) - 1})")
            pos[role] = int(spec)
        elif not header:
            raise DataError(f"{path}: {role}={spec!r} names a column, but the file has no header line "
                            f"(its first line looks like data); give a 0-based position instead "
                            f"(--{role} POSITION, {role}=POSITION in Python)")
        elif spec in names:
            pos[role] = names.index(spec)
        else:
            raise DataError(f"{path}: no column named {spec!r} for {role}; the header has columns {names}")
    if header:
        normed = [_norm(n) for n in names]
        for role in ("user", "item", "rating"):
            if role in pos:
                continue
            for k, n in enumerate(normed):
                if n in ALIASES[role] and k not in pos.values():
                    pos[role] = k
                    break
    for role, default in (("user", 0), ("item", 1), ("rating", 2)):
        if role not in pos:
            if default in pos.values():
                raise DataError(f"{path}: cannot tell which column holds the {role} (the header has columns "
                                f"{names}); pass --{role} NAME or --{role} POSITION ({role}=NAME or "
                                f"{role}=POSITION in Python)")
            pos[role] = default
    if len(set(pos.values())) < 3:
        raise DataError(f"{path}: user, item and rating must be three different columns, got {pos}")
    return pos


def _check_sample(path: Path, lines: list[str], first_line: int, sep: str, rp: int, label: str,
                  complete: bool) -> None:
    """Refuse a file none of whose first data lines holds a number in the rating column.

    Only when the file goes on beyond the sample: a short file is parsed whole and every bad line is
    reported with its count by the validation.
    """
    if complete:
        return
    sample = [(first_line + k, line) for k, line in enumerate(lines) if line.strip()]
    if not sample:
        return
    values = []
    for _, line in sample:
        fields = _split(line, sep)
        values.append(fields[rp] if rp < len(fields) else "")
    if any(v != "" and _is_number(v) for v in values):
        return
    number, value = sample[0][0], values[0]
    shown = "is missing (empty)" if value == "" else f"holds {value[:80]!r}"
    raise DataError(f"{path}: line {number}: column {label!r} {shown}, expected a number, and so does every one of "
                    f"the first {len(sample)} data lines: this does not look like a ratings table (lines of "
                    f"'user item rating', separator: {_sep_name(sep)})")


def _parse_text(path: Path, sep: str | None, encoding: str, user, item, rating):
    """(frame of raw strings indexed by line number, chosen names, report) for a text file."""
    kind = compression(path)
    after = " after decompression" if kind else ""
    head = check_head(path, encoding)
    if not head:
        raise DataError(f"{path}: the file is empty (0 bytes{after}); expected lines of 'user item rating'")
    skipped, first, complete = _first_lines(path, encoding, n=1 + _SAMPLE_LINES)
    if not first:
        raise DataError(f"{path}: the file is empty (only blank lines); expected lines of 'user item rating'")
    line0 = first[0]
    if sep is None:
        sep = _sniff_sep(line0)
    fields = _split(line0, sep)
    if len(fields) < 3:
        raise DataError(
            f"{path}: line {skipped + 1} has {len(fields)} column(s) ({line0[:80]!r}) when split on "
            f"{_sep_name(sep)}; a ratings file needs at least 3 columns: user item rating"
            + ("" if sep != r"\s+" else " (if the file uses another separator, pass --sep SEP, sep=SEP in "
                                        "Python)"))
    header = _has_header(fields, user, item, rating)
    names = fields if header else ["user", "item", "rating"] + [f"column {k + 1}" for k in range(3, len(fields))]
    pos = _pick_columns(names, header, user, item, rating, path)
    _check_sample(path, first[1:] if header else first, skipped + (2 if header else 1), sep, pos["rating"],
                  names[pos["rating"]], complete)
    engine = "python" if len(sep) > 1 and sep != r"\s+" else "c"
    kwargs: dict[str, Any] = dict(sep=sep, header=None, dtype=str, keep_default_na=False, na_filter=False,
                                  skip_blank_lines=False, skiprows=skipped + (1 if header else 0),
                                  encoding=encoding, engine=engine, skipinitialspace=True,
                                  names=list(range(len(fields))))
    try:
        with open_binary(path) as fh:
            df = pd.read_csv(fh, **kwargs)
    except pd.errors.EmptyDataError:
        df = pd.DataFrame(columns=list(range(len(fields))), dtype=str)
    except pd.errors.ParserError as exc:
        msg = str(exc)
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", msg)
        if m:
            line = int(m.group(2))  # pandas counts physical lines, skipped ones included
            raise DataError(f"{path}: line {line} has {m.group(3)} fields, expected {m.group(1)} like the first "
                            f"line (separator: {_sep_name(sep)})") from None
        raise DataError(f"{path}: cannot be parsed as {_sep_name(sep)}-separated text: {msg}") from None
    except UnicodeDecodeError as exc:
        raise _decode_error(path, encoding, exc) from None
    start = skipped + (2 if header else 1)
    df.index = pd.RangeIndex(start, start + len(df), name="line")
    df.columns = list(range(len(fields)))
    for k in df.columns:
        df[k] = df[k].fillna("").astype(str).str.strip()
    blank = np.ones(len(df), dtype=bool)
    for k in df.columns:
        blank &= (df[k] == "").to_numpy()
    fmt = f"{_sep_name(sep)}-separated text" + (f" ({kind}-compressed)" if kind else "")
    report: dict[str, Any] = {"format": fmt, "header": fields if header else None}
    if kind == "zip":
        report["member"] = member_name(path)
    if skipped or blank.any():
        lines = list(range(1, skipped + 1)) + df.index[blank].tolist()
        report["blank_lines"] = {"count": len(lines), "lines": lines[:_MAX_LISTED]}
        df = df[~blank]
    if len(df) == 0:
        what = "only a header line" if header else "no data lines"
        raise DataError(f"{path}: the file has {what}; expected lines of 'user item rating'")
    return df, names, pos, report, True


def _parse_parquet(path: Path, user, item, rating):
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types
        raise DataError(f"{path}: cannot be read as Parquet: {exc}") from None
    names = [str(c) for c in df.columns]
    if len(names) < 3:
        raise DataError(f"{path}: the table has {len(names)} column(s) {names}; a ratings table needs at least 3: "
                        f"user item rating")
    if len(df) == 0:
        raise DataError(f"{path}: the table is empty (no rows); expected rows of user, item, rating")
    df.columns = list(range(len(names)))
    df.index = pd.RangeIndex(0, len(df), name="row")
    pos = _pick_columns(names, True, user, item, rating, path)
    return df, names, pos, {"format": "parquet"}, False


def _load(path, *, user=None, item=None, rating=None, sep=None, encoding="utf-8"):
    path = Path(os.fspath(path))
    if check_encoding(encoding) == "utf-8":
        encoding = "utf-8-sig"                              # a byte-order mark is not part of the header
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a ratings file (CSV, TSV, Parquet)")
    if path.suffix.lower() in PARQUET_SUFFIXES:
        df, names, pos, report, lines = _parse_parquet(path, user, item, rating)
    else:
        df, names, pos, report, lines = _parse_text(path, sep, encoding, user, item, rating)
    unused = [names[k] for k in range(len(names)) if k not in pos.values()]
    report["columns"] = {role: names[k] for role, k in pos.items()}
    if unused:
        report["ignored_columns"] = unused
    out = pd.DataFrame({"user": df[pos["user"]], "item": df[pos["item"]], "rating": df[pos["rating"]]},
                       index=df.index)
    out.attrs["lines"] = lines
    return path, out, names, pos, report


def _missing_mask(col: pd.Series) -> np.ndarray:
    if col.dtype.kind in "fiubMm":
        return col.isna().to_numpy()
    text = col.astype(str).str.strip().str.lower()
    return (col.isna() | text.isin(_NA_TOKENS)).to_numpy()


def _convert_ids(col: pd.Series) -> pd.Series:
    """Integer ids when every id is a plain integer (no leading zeros), the stripped strings otherwise.

    Only text is converted; any other column (numbers, and also booleans or dates from a Parquet
    table) is left as it is for :meth:`Ratings.from_dataframe` to accept or refuse.
    """
    if col.dtype.kind in "iu":
        return col.astype(np.int64)
    if pd.api.types.infer_dtype(col, skipna=True) not in ("string", "empty"):
        return col
    text = col.astype(str).str.strip()
    if len(text) and text.str.fullmatch(_INT_RE).all():
        try:
            return text.astype(np.int64)
        except (OverflowError, ValueError):
            return text
    return text


def _blank_to_nan(col: pd.Series) -> pd.Series:
    """Empty rating fields become missing values (reported as "missing"), other text stays as written."""
    if col.dtype.kind in "fiub":
        return col
    text = col.astype(str).str.strip()
    return text.astype(object).where(text != "", None)


def _check_ids(frame: pd.DataFrame, col: str, label: str, where: str) -> None:
    miss = _missing_mask(frame[col])
    if miss.any():
        k = int(np.flatnonzero(miss)[0])
        raw = frame[col].iloc[k]
        shown = "empty" if pd.isna(raw) or str(raw).strip() == "" else f"{str(raw).strip()!r}"
        raise DataError(f"{where} {frame.index[k]}: column {label!r} is missing ({shown}); every rating needs a "
                        f"{col} id ({int(miss.sum())} such {where.split(': ')[-1]}(s))")


def read_frame(path, *, user=None, item=None, rating=None, sep=None, encoding: str = "utf-8") -> pd.DataFrame:
    """A ratings file as a DataFrame with columns ``user``, ``item``, ``rating``, not yet validated.

    The index is the 1-based line number of each row in a text file (``df.attrs["lines"]`` is true, so
    that :meth:`Ratings.from_dataframe` says "line N"), or the 0-based row number of a Parquet table.
    Ids are converted to integers when they all are plain integers; ratings are left as read (text in
    a text file), so that a bad value is reported exactly as written. ``df.attrs["report"]`` records
    the header, blank lines and ignored columns.

    Raises
    ------
    DataError
        For a file that is missing, empty, not text (binary data, a line longer than a MiB), not a
        ratings table (no number in the rating column of its first data lines), not decompressible
        under its name, has fewer than three columns, a line with too many fields, or a missing user
        or item id (naming file, line and column).
    ParameterError
        An unknown ``encoding``.
    """
    path, out, names, pos, report = _load(path, user=user, item=item, rating=rating, sep=sep, encoding=encoding)
    where = f"{path}: line" if out.attrs["lines"] else f"{path}: row"
    for role in ("user", "item"):
        _check_ids(out, role, role, where)
        out[role] = _convert_ids(out[role])
    out["rating"] = _blank_to_nan(out["rating"])
    out.attrs["report"] = report
    out.attrs["path"] = str(path)
    return out


def read(path, *, user=None, item=None, rating=None, sep=None, scale=None, duplicates: str = "error",
         dropna: bool = False, encoding: str = "utf-8", name: str | None = None) -> Ratings:
    """Read and validate a ratings file (CSV, TSV, whitespace-separated text or Parquet).

    Parameters
    ----------
    path : str or path-like
        ``.parquet``/``.pq`` files are read as Parquet, anything else as text; ``.gz``, ``.bz2``,
        ``.xz`` and ``.zip`` (one file inside) text files are decompressed.
    user, item, rating : str or int, optional
        The column of each role, by header name or 0-based position. By default the header names
        (``user``/``user_id``/``userId``, ``item``/``item_id``/``movie_id``, ``rating``/``score``, ...)
        decide, else the first three columns are used.
    sep : str, optional
        Field separator; by default sniffed from the first line (tab, ``::``, comma, semicolon, ``|``,
        else whitespace).
    scale : (float, float), optional
        The declared rating scale; a rating outside it is an error. Default: the observed range, once
        no rating lies absurdly far from the others (see :meth:`Ratings.from_dataframe`).
    duplicates : {"error", "first", "last", "mean"}
        Several ratings of one (user, item) pair are an error by default; ``"first"`` keeps the one
        earliest in the file, ``"last"`` the one latest, ``"mean"`` averages them. Merges are recorded
        in ``report["duplicates"]``.
    dropna : bool
        Drop (instead of rejecting) rows whose rating is missing, NaN or infinite. What is dropped is
        recorded in ``report["dropped"]``; a user left with no rating at all is still an error.
    encoding : str
        Text encoding (``"latin-1"`` for MovieLens' own ``u.item``); of the decompressed text for a
        compressed file.
    name : str, optional
        Label of the table (default: the file name).

    Returns
    -------
    Ratings
        With ``ratings.report`` recording the format, header, columns used and ignored, blank lines,
        rows dropped and duplicates merged.

    Raises
    ------
    DataError
        Naming the file, the line (or Parquet row) and the column of the first bad value, and how many
        rows share the problem.
    """
    if duplicates not in DUPLICATE_POLICIES:
        raise DataError(f"duplicates must be one of {DUPLICATE_POLICIES}, got {duplicates!r}")
    path, frame, names, pos, report = _load(path, user=user, item=item, rating=rating, sep=sep, encoding=encoding)
    where = f"{path}: line" if frame.attrs["lines"] else f"{path}: row"
    labels = {role: names[pos[role]] for role in ("user", "item", "rating")}
    if dropna:
        values = pd.to_numeric(frame["rating"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        text = frame["rating"].astype(str).str.strip().str.lower()
        # non-numeric text is corruption, not missingness: it stays an error
        nonnum = np.isnan(values) & ~_missing_mask(frame["rating"]) & ~text.isin(["nan", "+nan", "-nan"]).to_numpy()
        drop = (~np.isfinite(values) & ~nonnum) | _missing_mask(frame["user"]) | _missing_mask(frame["item"])
        if drop.any():
            dropped_lines = frame.index[drop]
            kept_users = set(frame.loc[~drop, "user"].astype(str).str.strip())
            lost = frame.loc[drop, "user"]
            lost = lost[~_missing_mask(lost)].astype(str).str.strip()
            emptied = sorted(set(lost) - kept_users)
            if emptied:
                lines_of = [int(x) for x in frame.index[drop & frame["user"].astype(str).str.strip().isin(
                    emptied).to_numpy()][:_MAX_LISTED]]
                raise DataError(
                    f"{path}: dropping {int(drop.sum())} row(s) with a missing, NaN or infinite rating or a missing "
                    f"id (dropna=True) would leave {len(emptied)} user(s) with no ratings: "
                    f"{emptied[:_MAX_LISTED]} ({where.split(': ')[-1]}s {lines_of}); fix those rows or remove "
                    f"those users from the file")
            kept_items = set(frame.loc[~drop, "item"].astype(str).str.strip())
            lost_items = frame.loc[drop, "item"]
            lost_items = sorted(set(lost_items[~_missing_mask(lost_items)].astype(str).str.strip()) - kept_items)
            report["dropped"] = {"rows": int(drop.sum()), "reason": "missing, NaN or infinite rating or missing id "
                                 "(dropna=True)", "lines" if frame.attrs["lines"] else "rows":
                                 [int(x) for x in dropped_lines[:_MAX_LISTED]],
                                 "items_left_without_ratings": lost_items[:_MAX_LISTED],
                                 "n_items_left_without_ratings": len(lost_items)}
            frame = frame[~drop]
    for role in ("user", "item"):
        _check_ids(frame, role, labels[role], where)
        frame[role] = _convert_ids(frame[role])
    frame["rating"] = _blank_to_nan(frame["rating"])
    renamed = frame.rename(columns=labels)
    ratings = Ratings.from_dataframe(renamed, user=labels["user"], item=labels["item"], rating=labels["rating"],
                                     scale=scale, duplicates=duplicates, name=name or path.name,
                                     row_label=where)
    report.update(ratings.report)
    ratings.report = report
    return ratings
