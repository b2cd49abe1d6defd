"""What the columns of a ratings table may hold, checked by :meth:`cofiviz.Ratings.from_dataframe`.

Every ratings table from a user (a DataFrame, a file, a split's parts) passes these checks, so a value
of the wrong kind is an error naming its row (or line) and column instead of a silent conversion:

* **Ids** are integers or text. Booleans, dates, times, durations and bytes are refused. A column
  that mixes integers with numbers that have a fraction or are written with a decimal point
  (``1`` and ``2.5``, or ``'3'`` and ``'3.0'``) is refused: ids are matched as written, so ``'3.0'``
  and ``'3'`` would be two different users. So is a column whose ids would become the same text
  (the number ``1`` and the text ``'1'``). What is interpreted is reported: floats without a fraction
  (``1.0`` in a float column) are read as integers, decimal text (``'1.0'``) is kept as written.
* **Ratings** are numbers: booleans and dates are refused instead of becoming 1/0 or nanoseconds.
* With no declared scale the observed range becomes the scale, so a rating absurdly far from the
  others (``1e308`` among 1–5 stars) is refused with the advice to declare the scale
  (:func:`check_outliers`).
"""

from __future__ import annotations

import datetime as _dt
import re

import numpy as np
import pandas as pd

from ..util.errors import DataError

__all__ = ["check_ids", "check_rating_kind", "check_outliers", "OUTLIER_FACTOR"]

#: A rating is absurd when its magnitude exceeds this many times the size of the bulk of the ratings
#: (the largest of |first quartile|, |third quartile| and their distance).
OUTLIER_FACTOR = 1e4
_INT_TEXT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_DECIMAL_TEXT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+)")
#: pandas' inferred kinds that are never ids or ratings, with how a message names them.
_REFUSED = {"boolean": "a boolean", "datetime64": "a date/time", "datetime": "a date/time", "date": "a date",
            "timedelta64": "a duration", "timedelta": "a duration", "time": "a time of day", "period": "a period",
            "interval": "an interval", "complex": "a complex number", "bytes": "bytes"}
_REFUSED_TYPES = (((bool, np.bool_), "a boolean"), ((_dt.date, _dt.time, np.datetime64), "a date/time"),
                  ((_dt.timedelta, np.timedelta64), "a duration"), ((bytes,), "bytes"))


def _where(row_label: str) -> str:
    """``"file: line"`` → ``"line"``: how one more row is named inside a message."""
    return row_label.split(": ")[-1]


def _refused_kind(col: pd.Series) -> tuple[str, int] | None:
    """(what the column holds, first row holding it) for a kind of values that is refused, else None."""
    kind = col.dtype.kind
    if kind == "b" or isinstance(col.dtype, pd.BooleanDtype):
        return _REFUSED["boolean"], 0
    if isinstance(col.dtype, pd.PeriodDtype):
        return _REFUSED["period"], 0
    if isinstance(col.dtype, pd.IntervalDtype):
        return _REFUSED["interval"], 0
    if kind in "Mm" or isinstance(col.dtype, pd.DatetimeTZDtype):
        return (_REFUSED["timedelta"] if kind == "m" else _REFUSED["datetime"]), 0
    if kind == "c":
        return _REFUSED["complex"], 0
    if kind != "O":
        return None
    inferred = pd.api.types.infer_dtype(col, skipna=True)
    if inferred in ("string", "empty", "integer", "floating", "mixed-integer-float", "decimal"):
        return None
    if inferred in _REFUSED:
        first = int(np.flatnonzero(col.notna().to_numpy())[0])
        return _REFUSED[inferred], first
    # "mixed", "mixed-integer": look for the first value of a refused type
    for types, what in _REFUSED_TYPES:
        hit = col.map(lambda v, t=types: isinstance(v, t)).to_numpy(dtype=bool)
        if hit.any():
            return what, int(np.flatnonzero(hit)[0])
    return None


def _first_row(col: pd.Series, values) -> int:
    return int(np.flatnonzero(col.isin(list(values)).to_numpy())[0])


def check_ids(col: pd.Series, label: str, role: str, labels, row_label: str) -> tuple[pd.Series, str | None]:
    """The ids as they are used (numbers without a fraction as integers), and a note on how they were
    read when that is not plain integers or text; values that are not ids are refused.

    Parameters
    ----------
    col : pandas.Series
        The ids (no missing values).
    label : str
        The column's name, for messages.
    role : {"user", "item"}
    labels : array
        Row labels (line numbers for files).
    row_label : str
        How rows are named (``"row"``, ``"ratings.csv: line"``).

    Returns
    -------
    (pandas.Series, str or None)

    Raises
    ------
    DataError
        Refused kinds of values, integers mixed with decimal numbers, or ids that would become equal.
    """
    refused = _refused_kind(col)
    if refused is not None:
        what, k = refused
        raise DataError(f"{row_label} {labels[k]}: column {label!r} holds {show_value(col.iloc[k])}, {what}; expected "
                        f"{role} ids (integers or text)")
    if col.dtype.kind in "iu":
        return col, None
    uniques = pd.unique(col)
    if col.dtype.kind == "f":
        values = np.asarray(uniques, dtype=np.float64)
        whole = np.isfinite(values) & (values == np.round(values))
        if whole.all():
            return col.astype(np.int64), "floats without a fraction (1.0) read as integers (1)"
        if whole.any():
            _mixing(col, label, role, labels, row_label, uniques[~whole][:1], uniques[whole][:1])
        return col, "numbers with a fraction kept as text as written"
    classes = np.array([_classify(v) for v in uniques])
    ints, decimals = uniques[classes == "int"], uniques[classes == "decimal"]
    if len(ints) and len(decimals):
        _mixing(col, label, role, labels, row_label, decimals[:1], ints[:1])
    inferred = pd.api.types.infer_dtype(col, skipna=True)
    if inferred == "mixed-integer-float":     # Python ints and floats without a fraction: one kind, integers
        return col.astype(np.int64), "floats without a fraction (1.0) read as integers (1)"
    texts = pd.Series([str(v) for v in uniques]) if inferred != "string" else pd.Series([], dtype=str)
    if texts.duplicated().any():
        twins = texts[texts.duplicated(keep=False)]
        first = twins.iloc[0]
        a, b = (uniques[i] for i in twins.index[twins == first][:2])
        ka, kb = sorted((_first_row(col, [a]), _first_row(col, [b])))
        raise DataError(f"{row_label} {labels[kb]}: column {label!r} holds {show_value(col.iloc[kb])} and "
                        f"{_where(row_label)} {labels[ka]} holds {show_value(col.iloc[ka])}, two different values that "
                        f"are the same {role} id {first!r} once written as text; write every id the same way")
    if len(decimals):
        return col, "decimal numbers kept as text as written ('1.0' is not '1')"
    return col, None


def _classify(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "other"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "int" if np.isfinite(value) and float(value).is_integer() else "decimal"
    if isinstance(value, str):
        text = value.strip()
        if _INT_TEXT.fullmatch(text):
            return "int"
        if _DECIMAL_TEXT.fullmatch(text):
            return "decimal"
    return "other"


def _mixing(col, label, role, labels, row_label, decimal, whole) -> None:
    k, j = _first_row(col, decimal), _first_row(col, whole)
    n_dec = int(sum(_classify(v) == "decimal" for v in pd.unique(col)))
    raise DataError(
        f"{row_label} {labels[k]}: column {label!r} holds {show_value(col.iloc[k])}, a number with a fraction or a decimal "
        f"point, while other {role} ids are whole numbers (e.g. {show_value(col.iloc[j])} on {_where(row_label)} "
        f"{labels[j]}; {n_dec} distinct id(s) with a fraction or decimal point): ids are matched as written, so "
        f"'3.0' and '3' would be two different {role}s; write every id the same way")


def check_rating_kind(col: pd.Series, label: str, labels, row_label: str) -> None:
    """Refuse a rating column of booleans, dates or other values that only look numeric to pandas."""
    refused = _refused_kind(col)
    if refused is not None:
        what, k = refused
        hint = ("; booleans are not ratings: write 1 and 0 if that is what they mean" if "boolean" in what else "")
        raise DataError(f"{row_label} {labels[k]}: column {label!r} holds {show_value(col.iloc[k])}, {what}; expected "
                        f"a number{hint}")


def check_outliers(values: np.ndarray, label: str, labels, row_label: str) -> None:
    """Refuse ratings absurdly far from the others when no scale is declared.

    The size of the bulk is ``ref = max(|q1|, |q3|, q3 - q1)`` with q1 and q3 the quartiles taken
    between observed values (inward, so that with a few ratings the outlier itself is not one of
    them); when ``ref`` is 0 (mostly zeros) it is the upper quartile of the non-zero magnitudes. A
    rating whose magnitude exceeds ``OUTLIER_FACTOR * ref`` is absurd. On real scales nothing comes
    close: 1–5 stars allow up to 5e4, 0–100 scores about 1e6, play counts with a median of a few
    hundred several million.

    Raises
    ------
    DataError
        Naming the row (line) and value of the first absurd rating, their number, and the
        ``--scale`` / ``scale=`` that would accept them if they are meant.
    """
    if len(values) < 3:
        return
    a = float(np.quantile(values, 0.25, method="higher"))
    b = float(np.quantile(values, 0.75, method="lower"))
    q1, q3 = min(a, b), max(a, b)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = max(abs(q1), abs(q3), q3 - q1)
        if ref == 0:
            nonzero = np.abs(values[values != 0])
            if len(nonzero) == 0:
                return
            ref = float(np.quantile(nonzero, 0.75, method="lower"))
        limit = OUTLIER_FACTOR * ref
        far = np.abs(values) > limit
    if not np.isfinite(limit) or not far.any():
        return
    k = int(np.flatnonzero(far)[0])
    lo, hi = float(values.min()), float(values.max())
    flag = f"--scale={lo:g},{hi:g}" if lo < 0 else f"--scale {lo:g},{hi:g}"
    raise DataError(
        f"{row_label} {labels[k]}: column {label!r} is {values[k]:g}, absurdly far from the other ratings (their "
        f"quartiles are about {q1:g} and {q3:g}; {int(far.sum())} rating(s) beyond ±{limit:g}) and no scale was declared, so "
        f"the observed range would become the scale; fix the {_where(row_label)}, or if the value is meant, declare "
        f"the scale, e.g. {flag} (scale=({lo:g}, {hi:g}) in Python)")


def show_value(value) -> str:
    """A value as a data error quotes it: ``repr`` of the Python value (``3`` and ``'3'``, not ``np.int64(3)``)."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)
