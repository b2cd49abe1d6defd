"""Values of the wrong kind in ratings tables: ids mixing integers and fractions, booleans, dates, absurd ratings.

Each gets an error naming the line (or row) and the column, or an explicit report, never a silent
conversion; through DataFrames, CSV and Parquet files and the command line alike.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cofiviz import DataError, Ratings
from cofiviz.datasets import movielens_100k, read


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cofiviz.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def _csv(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# ------------------------------------------------------------------------------------------ ids
def test_text_ids_mixing_integers_and_decimals_name_line_and_column(tmp_path):
    p = _csv(tmp_path, "mixed.csv", "user,item,rating\n1,10,4\n2.5,11,5\n3.0,10,3\n")
    with pytest.raises(DataError) as err:
        read(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}: line 3: column 'user' holds '2.5', a number with a fraction or a decimal point, "
                          "while other user ids are whole numbers (e.g. '1' on line 2; 2 distinct id(s)")
    assert "'3.0' and '3' would be two different users" in msg
    q = _csv(tmp_path, "items.tsv", "1\t7\t4\n1\t8.0\t5\n")
    with pytest.raises(DataError, match=r"items\.tsv: line 2: column 'item' holds '8\.0'"):
        read(q)


def test_consistent_decimal_text_ids_are_kept_as_written_and_reported(tmp_path):
    r = read(_csv(tmp_path, "dec.csv", "user,item,rating\n1.0,10,4\n2.0,11,5\n"))
    assert r.user_ids.tolist() == ["1.0", "2.0"]
    assert r.report["ids"] == {"user": "decimal numbers kept as text as written ('1.0' is not '1')"}
    # leading zeros and words are text, not numbers with a fraction
    r = read(_csv(tmp_path, "codes.csv", "user,item,rating\n007,a,4\n7,b,5\n"))
    assert sorted(r.user_ids.tolist()) == ["007", "7"] and "ids" not in r.report


def test_dataframe_and_parquet_float_ids(tmp_path):
    df = pd.DataFrame({"user": [1.0, 2.0, 3.0], "item": [1, 2, 3], "rating": [1.0, 2.0, 3.0]})
    r = Ratings.from_dataframe(df)
    assert r.user_ids.tolist() == [1, 2, 3] and r.user_ids.dtype.kind == "i"
    assert r.report["ids"] == {"user": "floats without a fraction (1.0) read as integers (1)"}
    df.loc[1, "user"] = 2.5
    with pytest.raises(DataError, match=r"^row 1: column 'user' holds 2\.5, a number with a fraction"):
        Ratings.from_dataframe(df)
    df.to_parquet(tmp_path / "f.parquet")
    with pytest.raises(DataError, match=r"f\.parquet: row 1: column 'user' holds 2\.5"):
        read(tmp_path / "f.parquet")
    # Python ints and floats in one object column
    obj = pd.DataFrame({"user": pd.Series([1, 2.5, 3], dtype=object), "item": [1, 2, 3], "rating": [1.0, 2, 3]})
    with pytest.raises(DataError, match=r"row 1: column 'user' holds 2\.5"):
        Ratings.from_dataframe(obj)


def test_ids_that_would_become_the_same_text(tmp_path):
    df = pd.DataFrame({"user": pd.Series([1, "1", "a"], dtype=object), "item": [1, 2, 3], "rating": [1.0, 2, 3]})
    with pytest.raises(DataError, match=r"row 1: column 'user' holds '1' and row 0 holds 1, two different values "
                                        r"that are the same user id '1' once written as text"):
        Ratings.from_dataframe(df)


def test_datetime_and_boolean_ids_are_refused(tmp_path):
    days = pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"])
    df = pd.DataFrame({"user": days, "item": [1, 2, 3], "rating": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match=r"^row 0: column 'user' holds Timestamp\('2024-01-01 00:00:00'\), a "
                                        r"date/time; expected user ids \(integers or text\)"):
        Ratings.from_dataframe(df)
    df.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(DataError, match=r"d\.parquet: row 0: column 'user' holds Timestamp.*a date/time"):
        read(tmp_path / "d.parquet")
    tz = pd.DataFrame({"user": [1, 2, 3], "item": days.tz_localize("UTC"), "rating": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match=r"column 'item' holds Timestamp.*a date/time"):
        Ratings.from_dataframe(tz)
    objs = pd.DataFrame({"user": pd.Series(["a", days[0], "c"], dtype=object), "item": [1, 2, 3],
                         "rating": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match=r"row 1: column 'user' holds Timestamp.*a date/time"):
        Ratings.from_dataframe(objs)
    flags = pd.DataFrame({"user": [1, 2, 3], "item": [True, False, True], "rating": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match=r"row 0: column 'item' holds True, a boolean; expected item ids"):
        Ratings.from_dataframe(flags)


# ------------------------------------------------------------------------------------------ ratings
def test_boolean_ratings_are_refused_naming_the_column(tmp_path):
    p = _csv(tmp_path, "liked.csv", "user,item,liked\n1,10,True\n1,11,False\n2,10,True\n")
    with pytest.raises(DataError) as err:
        read(p, rating="liked")
    assert str(err.value) == (f"{p}: line 2: column 'liked' holds 'True', expected a number (3 non-numeric row(s)); "
                              "booleans are not ratings: write 1 and 0 if that is what they mean")
    df = pd.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rating": [True, False, True]})
    with pytest.raises(DataError, match=r"^row 0: column 'rating' holds True, a boolean; expected a number; "
                                        r"booleans are not ratings"):
        Ratings.from_dataframe(df)
    df.to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DataError, match=r"b\.parquet: row 0: column 'rating' holds True, a boolean"):
        read(tmp_path / "b.parquet")
    df["rating"] = pd.Series([True, False, True], dtype="boolean")
    with pytest.raises(DataError, match="a boolean"):
        Ratings.from_dataframe(df)
    df["rating"] = pd.Series([4.0, True, 3.0], dtype=object)            # one boolean among numbers
    with pytest.raises(DataError, match=r"row 1: column 'rating' holds True, a boolean"):
        Ratings.from_dataframe(df)


def test_datetime_ratings_are_refused():
    df = pd.DataFrame({"user": [1, 2], "item": [1, 1], "rating": pd.to_datetime(["2024-01-01", "2024-01-02"])})
    with pytest.raises(DataError, match=r"row 0: column 'rating' holds Timestamp.*a date/time; expected a number"):
        Ratings.from_dataframe(df)
    df["rating"] = pd.to_timedelta([1, 2], unit="D")
    with pytest.raises(DataError, match=r"column 'rating' holds Timedelta.*a duration"):
        Ratings.from_dataframe(df)


def test_an_absurd_rating_names_its_line_and_advises_a_scale(tmp_path):
    p = _csv(tmp_path, "stars.csv", "user,item,rating\n1,10,4\n1,11,5\n2,10,1e308\n2,12,1\n3,11,2\n3,10,3\n")
    with pytest.raises(DataError) as err:
        read(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}: line 4: column 'rating' is 1e+308, absurdly far from the other ratings")
    assert "1 rating(s) beyond" in msg and "no scale was declared" in msg
    assert "--scale 1,1e+308 (scale=(1, 1e+308) in Python)" in msg
    # following the advice declares the value meant; a declared 1..5 scale reports it as outside instead
    assert read(p, scale=(1, 1e308)).ratings.max() == 1e308
    with pytest.raises(DataError, match=r"line 4: column 'rating' is 1e\+308, outside the declared scale \[1, 5\]"):
        read(p, scale=(1, 5))
    # negative, in a DataFrame
    df = pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": [1, 2, 1, 2, 1], "rating": [-2.0, 3.0, -1e300, 1.0, 0.0]})
    with pytest.raises(DataError, match=r"^row 2: column 'rating' is -1e\+300, absurdly far.*--scale=-1e\+300,3 "
                                        r"\(scale=\(-1e\+300, 3\) in Python\)"):
        Ratings.from_dataframe(df)
    # among implicit ones (the bulk has no spread at all)
    ones = pd.DataFrame({"user": np.arange(10), "item": 1, "rating": [1.0] * 9 + [1e12]})
    with pytest.raises(DataError, match=r"row 9: column 'rating' is 1e\+12, absurdly far"):
        Ratings.from_dataframe(ones)
    # a sentinel among mostly zeros
    zeros = pd.DataFrame({"user": np.arange(10), "item": 1, "rating": [0.0] * 7 + [1.0, 1.0, 99999999.0]})
    with pytest.raises(DataError, match=r"row 9: column 'rating' is 1e\+08"):
        Ratings.from_dataframe(zeros)


def _scales():
    rng = np.random.default_rng(0)
    n = 20_000
    return {
        "stars-1-5": rng.integers(1, 6, n).astype(float),
        "half-stars": rng.integers(1, 11, n) / 2.0,
        "percent-0-100": rng.integers(0, 101, n).astype(float),
        "one-to-ten": rng.integers(1, 11, n).astype(float),
        "jester-minus10-10": np.round(rng.uniform(-10, 10, n), 2),
        "implicit-ones": np.ones(n),
        "mostly-zero": (rng.random(n) < 0.05).astype(float),
        "skewed-stars": np.where(rng.random(n) < 0.95, 5.0, 1.0),
        "play-counts": np.round(rng.lognormal(5, 1.5, n)) + 1,
        "spending-mostly-zero": np.where(rng.random(n) < 0.8, 0.0, np.round(rng.lognormal(3, 1.5, n), 2)),
        "probabilities": rng.random(n) * 1e-3,
        "two-extremes": np.array([1.0, 5.0] * (n // 2)),
    }


@pytest.mark.parametrize("name", list(_scales()))
def test_legitimate_scales_are_never_flagged(name):
    values = _scales()[name]
    n = len(values)
    df = pd.DataFrame({"user": np.arange(n) // 50, "item": np.arange(n) % 50 + 100 * (np.arange(n) // 50),
                       "rating": values})
    r = Ratings.from_dataframe(df)
    assert r.scale == (values.min(), values.max()) or values.min() == values.max()


def test_movielens_100k_without_a_declared_scale_is_not_flagged():
    ml = movielens_100k()
    again = Ratings.from_dataframe(ml.to_dataframe())                 # scale taken from the data
    assert again.equals(ml) and again.scale == (1.0, 5.0)


# ------------------------------------------------------------------------------------------ CLI
def test_cli_reports_kinds_of_values_with_exit_1(tmp_path):
    base = "".join(f"{u},{i},{1 + (u + i) % 5}\n" for u in range(1, 8) for i in range(1, 9) if u != i)
    _csv(tmp_path, "test.csv", "user,item,rating\n1,1,3\n2,2,4\n")
    cases = {
        "mixed.csv": ("user,item,rating\n" + base + "3.5,2,4\n",
                      "mixed.csv: line 51: column 'user' holds '3.5', a number with a fraction"),
        "bools.csv": ("user,item,rating\n1,2,true\n" + base.replace(",3\n", ",false\n"),
                      "bools.csv: line 2: column 'rating' holds 'true', expected a number"),
        "absurd.csv": ("user,item,rating\n" + base + "9,9,1e308\n", "absurd.csv: line 51: column 'rating' is 1e+308"),
    }
    for name, (text, message) in cases.items():
        _csv(tmp_path, name, text)
        proc = cli("run", "poprec", "--train", name, "--test", "test.csv", cwd=tmp_path)
        assert proc.returncode == 1, (name, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
        assert proc.stderr.startswith(f"cofiviz: error: {message}"), proc.stderr
    proc = cli("run", "poprec", "--train", "absurd.csv", "--test", "test.csv", "--scale", "1,1e308", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
