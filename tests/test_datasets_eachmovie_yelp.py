"""The EachMovie (Vote.txt) and Yelp (review JSON lines) readers and writers on files the tests write.

A small synthetic data set is written by the public writers and read back whole; tiny files written by hand hold
each kind of bad input, and every error must name the file, the line and the column (or JSON key).
"""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from cofiviz import DataError, ParameterError, Ratings
from cofiviz import datasets
from cofiviz.datasets import eachmovie, synthetic, write_eachmovie, write_yelp, yelp


@pytest.fixture(scope="module")
def six_stars() -> Ratings:
    return synthetic(n_users=80, n_items=50, density=0.3, seed=3, scale=(1, 6))


@pytest.fixture(scope="module")
def reviews() -> Ratings:
    """Ratings 1..5 with Yelp-like string ids."""
    r = synthetic(n_users=80, n_items=50, density=0.3, seed=4)
    df = r.to_dataframe()
    df["user"] = "U-" + df["user"].astype(str) + "_x9Qz"
    df["item"] = "biz" + df["item"].astype(str)
    return Ratings.from_dataframe(df, scale=(1, 5))


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ============================================================================ EachMovie
def test_eachmovie_written_and_read_back(tmp_path, six_stars):
    path = write_eachmovie(six_stars, tmp_path / "em" / "Vote.txt", seed=1)
    first = path.read_text().splitlines()[0].split("\t")
    assert len(first) == 5 and first[2] in ("0", "0.2", "0.4", "0.6", "0.8", "1") and first[3] == "1"
    assert first[4][2] == "/" and first[4][8] == " " and first[4][11] == ":"   # MM/DD/YY HH:MM:SS
    r = eachmovie(tmp_path / "em")                                             # the folder finds Vote.txt
    assert r.equals(six_stars) and r.scale == (1.0, 6.0) and r.name == "eachmovie"
    assert r.user_ids.dtype.kind == "i" and r.item_ids.dtype.kind == "i"
    assert sum(r.report["scores"].values()) == len(r) and r.report["weights"]["not_one"] == 0
    raw = eachmovie(path, stars=False)
    assert raw.scale == (0.0, 1.0) and np.allclose(raw.ratings, (six_stars.ratings - 1) / 5)
    assert datasets.load("eachmovie", path=path).equals(six_stars)
    assert datasets.load("each_movie", path=path).equals(six_stars)


def test_eachmovie_accepts_the_time_split_in_two_or_missing_and_counts_blank_lines(tmp_path):
    path = _write(tmp_path / "Vote.txt", "1\t10\t0.6\t1\t01/08/97\t03:06:40\n\n2\t10\t1\t0.5\n1\t11\t0\t1\t"
                                         "01/08/97 03:06:40\n")
    r = eachmovie(path)
    assert len(r) == 3 and r.report["blank_lines"] == 1
    assert sorted(r.ratings.tolist()) == [1.0, 4.0, 6.0]
    assert r.report["weights"] == {"not_one": 1, "min": 0.5, "max": 1.0}
    assert r.report["scores"] == {"0": 1, "0.2": 0, "0.4": 0, "0.6": 1, "0.8": 0, "1": 1}


@pytest.mark.parametrize("text, message", [
    ("1\t10\t0.6\t1\t01/08/97 03:06:40\n1\t11\t0.3\t1\t01/08/97 03:06:40\n",
     r"Vote\.txt: line 2: column 3 \(Score\) holds '0\.3', expected a score 0, 0\.2, 0\.4, 0\.6, 0\.8 or 1"),
    ("1\t10\t1.2\t1\tx\n", r"line 1: column 3 \(Score\) holds '1\.2'"),
    ("1\t10\t\t1\tx\n", r"line 1: column 3 \(Score\) is missing \(empty\)"),
    ("1\t10\t0.2\t1\tx\nabc\t10\t0.2\t1\tx\n",
     r"Vote\.txt: line 2: column 1 \(Person_ID\) holds 'abc', expected a whole number"),
    ("1\t-10\t0.2\t1\tx\n", r"line 1: column 2 \(Movie_ID\) holds '-10'"),
    ("1\t10\t0.2\n", r"line 1: column 4 \(Weight\) is missing \(empty\), expected a number"),
    ("1\t10\t0.2\theavy\tx\n", r"line 1: column 4 \(Weight\) holds 'heavy'"),
    ("1\t10\t0.2\t1\tx\n2\t10\t0.2\t1\tx\ty\tz\n", r"Vote\.txt: line 2 has 7 tab-separated fields, expected at most 6"),
    ("1,10,0.2,1\n", r"line 1: column 1 \(Person_ID\) holds '1,10,0\.2,1'"),
    ("", r"Vote\.txt: the file is empty"),
    ("\n\n", r"Vote\.txt: holds no votes \(only blank lines\)"),
    ("1\t10\t0.2\t1\tx\n1\t11\t0.2\t1\tx\n1\t10\t1\t1\tx\n",
     r"Vote\.txt: lines 1 and 3: duplicate vote of person 1 on movie 10 \(1 duplicated \(person, movie\) "
     r"pair\(s\)\); to merge them pass duplicates='last'"),
])
def test_eachmovie_bad_input_names_file_line_and_column(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        eachmovie(_write(tmp_path / "Vote.txt", text))


def test_eachmovie_duplicates_and_paths(tmp_path):
    path = _write(tmp_path / "Vote.txt", "1\t10\t0.2\t1\tx\n1\t11\t0.2\t1\tx\n1\t10\t1\t1\tx\n")
    got = {p: eachmovie(path, duplicates=p) for p in ("first", "last", "mean")}
    assert [float(got[p].ratings[0]) for p in ("first", "last", "mean")] == [2.0, 6.0, 4.0]
    assert got["mean"].report["duplicates"] == {"policy": "mean", "pairs": 1, "rows_merged": 1}
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"empty: holds no Vote\.txt .* it holds nothing \(the folder is empty\)"):
        eachmovie(tmp_path / "empty")
    with pytest.raises(DataError, match="no such file or folder"):
        eachmovie(tmp_path / "nowhere.txt")
    with pytest.raises(ParameterError, match="give path=FILE"):
        datasets.load("eachmovie")
    with pytest.raises(DataError, match="duplicates must be one of"):
        eachmovie(path, duplicates="drop")


def test_eachmovie_writer_needs_six_whole_levels(tmp_path, reviews):
    half = synthetic(n_users=20, n_items=10, density=0.5, seed=0, quantize=False)
    with pytest.raises(DataError, match="whole-number stars 1..6"):
        write_eachmovie(half, tmp_path / "Vote.txt")
    with pytest.raises(DataError, match="writes user ids as whole numbers"):
        write_eachmovie(reviews, tmp_path / "Vote.txt")


# ============================================================================ Yelp
def test_yelp_written_and_read_back(tmp_path, reviews):
    path = write_yelp(reviews, tmp_path / "y" / "yelp_academic_dataset_review.json", seed=2)
    review = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert {"review_id", "user_id", "business_id", "stars", "text", "date"} <= set(review)
    assert '"user_id"' in review["text"]                                      # a key's name inside the text
    r = yelp(tmp_path / "y")                                                  # the folder finds the file
    assert r.equals(reviews) and r.scale == (1.0, 5.0) and r.name == "yelp"
    assert r.user_ids.dtype.kind == "U" and list(r.user_ids) == sorted(r.user_ids)
    assert r.report["blank_lines"] == 0 and "duplicates" not in r.report
    assert datasets.load("yelp", path=path).equals(reviews)
    for suffix, opener in ((".gz", gzip.open), (".bz2", bz2.open)):
        packed = tmp_path / f"reviews.json{suffix}"
        with opener(packed, "wb") as fh:
            fh.write(path.read_bytes())
        assert yelp(packed).equals(reviews)


def test_yelp_recsys_2013_file_name_float_stars_and_blank_lines(tmp_path):
    lines = [{"user_id": "a", "business_id": "x", "stars": 4.0, "type": "review", "votes": {"useful": 1}},
             {"user_id": "b", "business_id": "x", "stars": 2}]
    _write(tmp_path / "yelp_training_set" / "yelp_training_set_review.json",
           json.dumps(lines[0]) + "\n\n" + json.dumps(lines[1]) + "\n")
    r = yelp(tmp_path)
    assert len(r) == 2 and r.report["blank_lines"] == 1 and list(r.user_ids) == ["a", "b"]
    assert r.ratings.tolist() == [4.0, 2.0]


@pytest.mark.parametrize("lines, message", [
    (['{"user_id": "a", "business_id": "x", "stars": 4}', '{"user_id": "b", "business_id": "x", "stars": 4'],
     r"review\.json: line 2: not JSON \(Expecting ',' delimiter at character 48\)"),
    (['["a", "x", 4]'], r"line 1: holds a JSON list, expected a review object"),
    (['{"user_id": "a", "business_id": "x"}'], r"line 1: the review has no 'stars' key \(its keys: user_id, "
                                               r"business_id\)"),
    (['{"user_id": "a", "stars": 3}'], r"line 1: the review has no 'business_id' key"),
    (['{"user_id": "a", "business_id": "x", "stars": 6}'],
     r"line 1: key 'stars' holds 6, expected a number from 1 to 5"),
    (['{"user_id": "a", "business_id": "x", "stars": "5"}'], r"line 1: key 'stars' holds '5', expected a number"),
    (['{"user_id": "a", "business_id": "x", "stars": true}'], r"key 'stars' holds True"),
    (['{"user_id": "a", "business_id": "x", "stars": NaN}'], r"key 'stars' holds nan"),
    (['{"user_id": 7, "business_id": "x", "stars": 3}'], r"line 1: key 'user_id' holds 7, expected a non-empty string"),
    (['{"user_id": "", "business_id": "x", "stars": 3}'], r"key 'user_id' holds ''"),
    (['{"user_id": "a", "business_id": "x", "stars": 3}', '{"user_id": "a", "business_id": "y", "stars": 3}',
      '{"user_id": "a", "business_id": "x", "stars": 5}'],
     r"review\.json: lines 1 and 3: two reviews of user 'a' on business 'x' \(1 duplicated \(user, business\) "
     r"pair\(s\)\); to merge them pass duplicates='last'"),
    ([], r"review\.json: the file is empty"),
    (["", " "], r"review\.json: holds no reviews \(only blank lines\)"),
])
def test_yelp_bad_input_names_file_line_and_key(tmp_path, lines, message):
    path = _write(tmp_path / "review.json", "\n".join(lines) + ("\n" if lines else ""))
    with pytest.raises(DataError, match=message):
        yelp(path)


def test_yelp_duplicates_decoding_and_paths(tmp_path):
    text = "\n".join(json.dumps({"user_id": "a", "business_id": b, "stars": s})
                     for b, s in (("x", 1), ("y", 3), ("x", 5)))
    path = _write(tmp_path / "review.json", text)
    assert [float(yelp(path, duplicates=p).ratings[0]) for p in ("first", "last", "mean")] == [1.0, 5.0, 3.0]
    bad = tmp_path / "latin.json"
    bad.write_bytes('{"user_id": "Ren\xe9", "business_id": "x", "stars": 3}\n'.encode("latin-1"))
    with pytest.raises(DataError, match=r"latin\.json: after line 0: cannot be decoded as UTF-8"):
        yelp(bad)
    (tmp_path / "none").mkdir()
    with pytest.raises(DataError, match=r"none: holds no Yelp review file"):
        yelp(tmp_path / "none")
    _write(tmp_path / "two" / "yelp_academic_dataset_review.json", text)
    _write(tmp_path / "two" / "yelp_training_set_review.json", text)
    with pytest.raises(DataError, match=r"two: holds several review files"):
        yelp(tmp_path / "two")
    with pytest.raises(ParameterError, match="give path=FILE"):
        datasets.load("yelp")
