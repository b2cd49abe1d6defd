"""The Netflix Prize reader and writer (cofiviz.datasets.netflix_prize, write_netflix_prize) on files the tests write.

A small synthetic data set is written in both layouts by the public writer (and read back whole), and tiny
folders are written by hand for every kind of bad input: each error must name the file, the line and the column.
``_CHUNK_BYTES`` is shrunk in one test so that lines, movie blocks and errors fall across chunk boundaries.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from cofiviz import DataError, ParameterError, Ratings
from cofiviz import datasets
from cofiviz.datasets import netflix as nf
from cofiviz.datasets import netflix_like, netflix_prize, write_netflix_prize


# ---------------------------------------------------------------------------------------------- helpers
def write_folder(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (text written as is, line ends included)."""
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode("latin-1"))
    return root


#: A tiny training_set/ layout: movies 1 and 2, customers 10, 11, 12; the probe set holds (11, 1) and (12, 2).
TINY = {"training_set/mv_0000001.txt": "1:\n10,3,2005-01-01\n11,5,2005-02-03\n12,1,2004-12-31\n",
        "training_set/mv_0000002.txt": "2:\n10,4,2003-03-03\n12,2,2001-01-01\n",
        "probe.txt": "1:\n11\n2:\n12\n"}


def tiny(tmp_path: Path, **changes) -> Path:
    files = {**TINY, **changes}
    return write_folder(tmp_path / "nf", {k: v for k, v in files.items() if v is not None})


@pytest.fixture(scope="module")
def small() -> Ratings:
    """300 users on 400 movies (about 100 ratings each), whole stars 1..5."""
    return netflix_like(n_ratings=30_000, n_users=300, n_items=400, seed=5)


@pytest.fixture(scope="module")
def probe_mask(small) -> np.ndarray:
    return np.random.default_rng(1).random(len(small)) < 0.05


@pytest.fixture(scope="module")
def written(tmp_path_factory, small, probe_mask) -> dict:
    root = tmp_path_factory.mktemp("netflix")
    return {layout: write_netflix_prize(small, root / layout, layout=layout, probe=probe_mask, seed=3)
            for layout in nf.LAYOUTS}


# ---------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("layout", nf.LAYOUTS)
def test_written_layout_reads_back_whole(written, small, probe_mask, layout):
    r = netflix_prize(written[layout])
    assert r.equals(small) and r.scale == (1.0, 5.0) and r.name == "netflix-prize"
    assert r.user_ids.dtype.kind == "i" and r.item_ids.dtype.kind == "i"       # Netflix's own ids, kept
    assert np.array_equal(r.user_ids[r.users], small.user_ids[small.users])
    assert np.array_equal(r.item_ids[r.items], small.item_ids[small.items])
    assert r.probe.dtype == bool and np.array_equal(r.probe, probe_mask)        # the same (user, item) order
    probe = r.take(r.probe)
    assert len(probe) == r.report["probe"]["ratings"] == int(probe_mask.sum())
    assert len(r.take(~r.probe)) + len(probe) == len(r)
    assert r.report["layout"] == layout and r.report["blank_lines"] == 0 and r.report["ignored"] == []
    assert r.report["files"] == (4 if layout == "combined" else int(np.count_nonzero(small.item_counts())))
    if layout == "combined":
        assert sum(r.report["ratings_per_file"].values()) == len(r)
        assert min(r.report["ratings_per_file"].values()) > 0.15 * len(r)     # four runs of about a quarter
    info = r.item_info
    assert list(info.columns) == ["item", "title", "release_year"] and np.array_equal(info["item"], r.item_ids)
    sequel = info.loc[info["item"] == 3]
    assert sequel["title"].iloc[0] == "Synthetic movie 3, the sequel"          # a title with a comma
    assert info.loc[info["item"] == 50, "release_year"].isna().all()            # NULL
    assert r.report["titles"]["rated_without_title"] == 0


def test_the_files_look_like_the_netflix_prize(written):
    ts = written["training_set"] / "training_set"
    lines = (ts / "mv_0000003.txt").read_text().splitlines()
    assert lines[0] == "3:" and all(len(line.split(",")) == 3 for line in lines[1:])
    customer, stars, date = lines[1].split(",")
    assert customer.isdigit() and stars in "12345" and len(date) == 10 and date[4] == date[7] == "-"
    assert "1999-11-11" <= date <= "2005-12-31"
    assert sorted(p.name for p in written["combined"].iterdir()) == [
        "combined_data_1.txt", "combined_data_2.txt", "combined_data_3.txt", "combined_data_4.txt", "movie_titles.txt",
        "probe.txt"]
    probe = (written["combined"] / "probe.txt").read_text().splitlines()
    assert probe[0].endswith(":") and all(line.endswith(":") or line.isdigit() for line in probe)


def test_load_by_name_and_the_synthetic_alias(written, small):
    assert datasets.load("netflix-prize", path=written["combined"]).equals(small)
    assert datasets.load("Netflix_Prize", path=written["combined"]).equals(small)
    assert "netflix-prize" in datasets.available() and "netflix-prize" in datasets.user_files()
    assert "needs your own copy" in datasets.describe()["netflix-prize"]
    assert datasets.load("netflix", n_ratings=20_000, seed=0).name == "netflix-like"   # the alias stays synthetic
    with pytest.raises(ParameterError, match="give path=FOLDER"):
        datasets.load("netflix-prize")


def test_an_experiments_data_spec_names_it_with_its_path(written, small):
    from cofiviz.engine.loading import load_data

    ratings, version = load_data({"name": "netflix-prize", "path": str(written["training_set"])})
    assert ratings.equals(small) and ratings.probe is not None and len(version) == 16


def test_the_mv_files_folder_itself_with_probe_and_titles_above_it(written, small, probe_mask):
    r = netflix_prize(written["training_set"] / "training_set")
    assert r.equals(small) and np.array_equal(r.probe, probe_mask) and r.item_info is not None


def test_without_probe_or_titles(written, small):
    r = netflix_prize(written["combined"], probe=False, titles=False)
    assert r.equals(small) and r.probe is None and r.item_info is None
    assert "probe" not in r.report and "titles" not in r.report


def test_crlf_blank_lines_and_a_last_line_without_newline(tmp_path):
    root = tiny(tmp_path, **{"training_set/mv_0000001.txt":
                             "1:\r\n10,3,2005-01-01\r\n\r\n11,5,2005-02-03\n12,1,2004-12-31",
                             "probe.txt": "1:\n11\n\n2:\n12"})
    r = netflix_prize(root)
    assert len(r) == 5 and r.report["blank_lines"] == 1 and r.report["probe"]["blank_lines"] == 1
    df = r.to_dataframe()
    assert df.loc[(df["user"] == 12) & (df["item"] == 1), "rating"].item() == 1
    got = r.take(r.probe).to_dataframe()
    assert sorted(zip(got["user"], got["item"])) == [(11, 1), (12, 2)]


def test_other_files_are_listed_not_read(tmp_path):
    root = tiny(tmp_path, **{"qualifying.txt": "1:\n10,2005-09-06\n", "training_set/README": "x",
                             "movie_titles.txt": "1,2003,A, B\n2,NULL,C\n"})
    r = netflix_prize(root)
    assert r.report["ignored"] == ["training_set/README", "qualifying.txt"]
    assert list(r.item_info["title"]) == ["A, B", "C"] and r.item_info["release_year"].isna().tolist() == [False, True]


# ---------------------------------------------------------------------------------------------- bad lines
@pytest.mark.parametrize("files, message", [
    ({"training_set/mv_0000001.txt": "1:\n10,3,2005-01-01\n11,6,2005-02-03\n"},
     r"mv_0000001\.txt: line 3 column 2 \(Rating\) holds '6', expected a whole number of stars from 1 to 5"),
    ({"training_set/mv_0000001.txt": "1:\n10,3.5,2005-01-01\n"},
     r"mv_0000001\.txt: line 2 column 2 \(Rating\) holds '3\.5'"),
    ({"training_set/mv_0000001.txt": "1:\n10,,2005-01-01\n"}, r"line 2 column 2 \(Rating\) holds ''"),
    ({"training_set/mv_0000002.txt": "2:\n10,4,2003-03-03\nx12,2,2001-01-01\n"},
     r"mv_0000002\.txt: line 3 column 1 \(CustomerID\) holds 'x12', expected a whole number"),
    ({"training_set/mv_0000002.txt": "2:\n10,4,2003-03-03\n1234567890,2,2001-01-01\n"},
     r"line 3 column 1 \(CustomerID\) holds '1234567890', expected a whole number of at most 9 digits"),
    ({"training_set/mv_0000001.txt": "1:\n10,3,2005/01/01\n"},
     r"mv_0000001\.txt: line 2 column 3 \(Date\) holds '2005/01/01', expected a date written YYYY-MM-DD"),
    ({"training_set/mv_0000001.txt": "1:\n10,3\n"},
     r"line 2 has 2 field\(s\) \('10,3'\), expected 3: CustomerID,Rating,Date"),
    ({"training_set/mv_0000001.txt": "1:\n10,3,2005-01-01,x\n"}, r"line 2 has 4 field\(s\)"),
    ({"training_set/mv_0000001.txt": "1:\n10\t3\t2005-01-01\n"}, r"line 2 has 1 field\(s\)"),
    ({"training_set/mv_0000001.txt": "one:\n10,3,2005-01-01\n"},
     r"mv_0000001\.txt: line 1 holds 'one:': a movie line is the movie id"),
    ({"training_set/mv_0000002.txt": "3:\n10,4,2003-03-03\n"},
     r"mv_0000002\.txt: line 1: the movie line says movie 3, but mv_0000002\.txt holds movie 2 only"),
    ({"training_set/mv_0000002.txt": "2:\n10,4,2003-03-03\n2:\n12,2,2001-01-01\n"},
     r"mv_0000002\.txt: line 3: a second movie line"),
    ({"training_set/mv_0000002.txt": "10,4,2003-03-03\n2:\n"},
     r"mv_0000002\.txt: line 1: a rating line before any movie line|mv_0000002\.txt: line 1: a rating line before "
     r"the movie line"),
    ({"training_set/mv_0000002.txt": "\n\n"}, r"mv_0000002\.txt: line 1: no movie line; expected the file to start "
                                              r"with its movie id and a colon \('2:'\)"),
    ({"training_set/mv_0000002.txt": ""}, r"mv_0000002\.txt: the file is empty"),
    ({"probe.txt": "1:\n11\n2:\nabc\n"}, r"probe\.txt: line 4 holds 'abc', expected a CustomerID"),
    ({"probe.txt": "11\n1:\n"}, r"probe\.txt: line 1: a customer line before any movie line"),
    ({"probe.txt": "1:\n11\n2:\n11\n"},
     r"probe\.txt: line 4: customer 11 on movie 2 is not a rating of the training set \(1 such line\(s\)\)"),
    ({"probe.txt": "1:\n99\n"}, r"probe\.txt: line 2: customer 99 on movie 1 is not a rating"),
    ({"probe.txt": "1:\n11\n12\n11\n"}, r"probe\.txt: lines 2 and 4: customer 11 on movie 1 is listed twice"),
    ({"probe.txt": ""}, r"probe\.txt: the file is empty"),
    ({"movie_titles.txt": "1,2003,A\n2,19x5,B\n"},
     r"movie_titles\.txt: line 2: column 2 \(YearOfRelease\) holds '19x5', expected a year or NULL"),
    ({"movie_titles.txt": "1,2003\n"}, r"movie_titles\.txt: line 1 has 2 field\(s\)"),
    ({"movie_titles.txt": "1,2003,A\n1,2004,B\n"}, r"movie_titles\.txt: lines 1 and 2: movie 1 is listed twice"),
    ({"training_set/mv_0000001.txt": "1:\n10,3,2005-01-01\n\x00\x01\x02\n"}, r"mv_0000001\.txt: line 3 has 1 field"),
    ({"probe.txt": "\x1f\x8b\x08\x00rest"}, r"probe\.txt: this is gzip-compressed data, not a text file; decompress "
                                            r"it first"),
    ({"training_set/mv_0000002.txt": "PK\x03\x04rest"}, r"mv_0000002\.txt: this is a zip archive, not a text file"),
])
def test_bad_input_names_file_line_and_column(tmp_path, files, message):
    with pytest.raises(DataError, match=message):
        netflix_prize(tiny(tmp_path, **files))


def test_bad_lines_of_the_combined_layout(tmp_path):
    good = {f"combined_data_{k}.txt": f"{k}:\n10,3,2005-01-01\n" for k in range(1, 5)}
    files = {**good, "combined_data_3.txt": "3:\n10,3,2005-01-01\n4:\n11,3,2005-01-01\n12,9,2005-01-01\n",
             "probe.txt": "1:\n10\n"}
    with pytest.raises(DataError, match=r"combined_data_3\.txt: line 5 column 2 \(Rating\) holds '9'"):
        netflix_prize(write_folder(tmp_path / "a", files))
    files = {**good, "combined_data_2.txt": "10,3,2005-01-01\n2:\n", "probe.txt": "1:\n10\n"}
    with pytest.raises(DataError, match=r"combined_data_2\.txt: line 1: a rating line before any movie line"):
        netflix_prize(write_folder(tmp_path / "b", files))
    files = {**good, "combined_data_4.txt": "", "probe.txt": "1:\n10\n"}       # an empty file is read as no ratings
    r = netflix_prize(write_folder(tmp_path / "c", files))
    assert len(r) == 3 and r.report["ratings_per_file"]["combined_data_4.txt"] == 0


def test_chunk_boundaries_do_not_change_the_result_or_the_line_numbers(written, small, probe_mask, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setattr(nf, "_CHUNK_BYTES", 4096)               # lines, blocks and the larger mv files span chunks
    sizes = [p.stat().st_size for p in (written["training_set"] / "training_set").iterdir()]
    assert min(sizes) < 4096 < max(sizes)                       # mv files read in batches, and alone in chunks
    for layout in nf.LAYOUTS:
        r = netflix_prize(written[layout])
        assert r.equals(small) and np.array_equal(r.probe, probe_mask)
    monkeypatch.setattr(nf, "_CHUNK_BYTES", 97)
    long_file = "1:\n" + "".join(f"{c},{1 + c % 5},2005-01-01\n" for c in range(10, 40)) + "41,7,2005-01-01\n"
    with pytest.raises(DataError, match=r"mv_0000001\.txt: line 32 column 2 \(Rating\) holds '7'"):
        netflix_prize(tiny(tmp_path, **{"training_set/mv_0000001.txt": long_file}))
    with pytest.raises(DataError, match=r"mv_0000001\.txt: line 20: a second movie line"):
        netflix_prize(tiny(tmp_path, **{"training_set/mv_0000001.txt": long_file.replace("28,4,", "1:\n28,4,")}))
    combined = {f"combined_data_{k}.txt": f"{k}:\n" + "".join(f"{c},3,2005-01-01\n" for c in range(10, 30))
                for k in range(1, 5)}
    combined["combined_data_2.txt"] += "30,3,2005-1-01\n"
    with pytest.raises(DataError, match=r"combined_data_2\.txt: line 22 column 3 \(Date\) holds '2005-1-01'"):
        netflix_prize(write_folder(tmp_path / "c", {**combined, "probe.txt": "1:\n10\n"}))


# ---------------------------------------------------------------------------------------------- folders
def test_folders_without_a_layout_or_with_both(tmp_path, written):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"no Netflix Prize ratings here; .*the folder holds nothing \(the folder is "
                                        r"empty\)"):
        netflix_prize(tmp_path / "empty")
    (tmp_path / "ts" / "training_set").mkdir(parents=True)
    (tmp_path / "ts" / "probe.txt").write_text("1:\n1\n")
    with pytest.raises(DataError, match=r"training_set: holds no mv_NNNNNNN\.txt files .*it holds nothing"):
        netflix_prize(tmp_path / "ts")
    write_folder(tmp_path / "other", {"ratings.csv": "1,2,3\n"})
    with pytest.raises(DataError, match=r"no Netflix Prize ratings here; .* the folder holds ratings\.csv"):
        netflix_prize(tmp_path / "other")
    mixed = tiny(tmp_path, **{f"combined_data_{k}.txt": f"{k}:\n10,3,2005-01-01\n" for k in range(1, 5)})
    with pytest.raises(DataError, match=r"holds both layouts .* pass layout='training_set' or layout='combined'"):
        netflix_prize(mixed)
    assert len(netflix_prize(mixed, layout="training_set")) == 5
    assert len(netflix_prize(mixed, layout="combined", probe=False)) == 4
    with pytest.raises(ParameterError, match="layout must be one of 'training_set', 'combined'"):
        netflix_prize(mixed, layout="kaggle")
    with pytest.raises(DataError, match=r"layout='combined' was asked for, but the folder holds no combined_data"):
        netflix_prize(tiny(tmp_path / "t2"), layout="combined")
    both = tiny(tmp_path / "t3", **{"mv_0000001.txt": "1:\n10,3,2005-01-01\n"})
    with pytest.raises(DataError, match="both in the folder itself and in training_set/"):
        netflix_prize(both)
    with pytest.raises(DataError, match=r"is a file; expected the folder"):
        netflix_prize(written["combined"] / "probe.txt")
    with pytest.raises(DataError, match=r"no such folder"):
        netflix_prize(tmp_path / "nowhere")


def test_a_missing_combined_file_or_probe_file(tmp_path):
    files = {f"combined_data_{k}.txt": f"{k}:\n10,3,2005-01-01\n" for k in (1, 2, 4)}
    with pytest.raises(DataError, match=r"combined_data_3\.txt is missing: the four-file layout is "
                                        r"combined_data_1\.txt … combined_data_4\.txt \(found: combined_data_1\.txt, "
                                        r"combined_data_2\.txt, combined_data_4\.txt\)"):
        netflix_prize(write_folder(tmp_path / "a", files))
    files = {f"combined_data_{k}.txt": f"{k}:\n10,3,2005-01-01\n" for k in range(1, 6)}
    with pytest.raises(DataError, match=r"combined_data_5\.txt is not part of the layout"):
        netflix_prize(write_folder(tmp_path / "b", files))
    root = tiny(tmp_path, **{"probe.txt": None})
    with pytest.raises(DataError, match=r"nf/probe\.txt: no such file; the probe set of the Netflix Prize is "
                                        r"probe\.txt beside training_set/ .*pass probe=False"):
        netflix_prize(root)
    assert netflix_prize(root, probe=False).probe is None
    write_folder(tmp_path / "elsewhere", {"p.txt": "2:\n10\n"})
    r = netflix_prize(root, probe=tmp_path / "elsewhere" / "p.txt")
    assert r.report["probe"]["ratings"] == 1 and r.probe.sum() == 1
    with pytest.raises(DataError, match=r"p2\.txt: no such file \(the probe set, probe\.txt\)"):
        netflix_prize(root, probe=tmp_path / "p2.txt")
    with pytest.raises(DataError, match=r"t\.txt: no such file \(the movie titles"):
        netflix_prize(root, probe=False, titles=tmp_path / "t.txt")


# ---------------------------------------------------------------------------------------------- duplicates
def test_duplicates_follow_the_policy_of_read(tmp_path):
    files = {"combined_data_1.txt": "1:\n10,3,2005-01-01\n11,4,2005-01-01\n",
             "combined_data_2.txt": "2:\n10,2,2005-01-01\n",
             "combined_data_3.txt": "1:\n10,5,2005-01-02\n",
             "combined_data_4.txt": "3:\n12,1,2005-01-01\n",
             "probe.txt": "2:\n10\n"}
    root = write_folder(tmp_path / "d", files)
    with pytest.raises(DataError, match=r"combined_data_1\.txt: line 2 and .*combined_data_3\.txt: line 2: duplicate "
                                        r"rating of customer 10 on movie 1 \(1 duplicated \(customer, movie\) "
                                        r"pair\(s\)\); to merge them pass duplicates='last'"):
        netflix_prize(root)
    value = {}
    for policy in ("first", "last", "mean"):
        r = netflix_prize(root, duplicates=policy)
        assert len(r) == 4 and r.report["duplicates"] == {"policy": policy, "pairs": 1, "rows_merged": 1}
        df = r.to_dataframe()
        value[policy] = df.loc[(df["user"] == 10) & (df["item"] == 1), "rating"].item()
        assert r.take(r.probe).to_dataframe()[["user", "item"]].values.tolist() == [[10, 2]]
    assert value == {"first": 3.0, "last": 5.0, "mean": 4.0}
    ts = tiny(tmp_path, **{"training_set/mv_0000002.txt": "2:\n10,4,2003-03-03\n12,2,2001-01-01\n10,1,2004-01-01\n"})
    with pytest.raises(DataError, match=r"mv_0000002\.txt: line 2 and .*mv_0000002\.txt: line 4: duplicate rating of "
                                        "customer 10 on movie 2"):
        netflix_prize(ts)
    with pytest.raises(DataError, match="duplicates must be one of"):
        netflix_prize(ts, duplicates="keep")


# ---------------------------------------------------------------------------------------------- writer
def test_the_writer_refuses_what_the_layout_cannot_hold(tmp_path, small):
    half = small.like(small.users, small.items, small.ratings - 0.5)
    with pytest.raises(DataError, match="whole-number ratings from 1 to 5"):
        write_netflix_prize(half, tmp_path / "a")
    text = Ratings.from_dataframe(small.to_dataframe().assign(user=lambda d: "u" + d["user"].astype(str)))
    with pytest.raises(DataError, match="writes user ids as whole numbers"):
        write_netflix_prize(text, tmp_path / "b")
    with pytest.raises(ParameterError, match="probe_fraction must be a number in"):
        write_netflix_prize(small, tmp_path / "c", probe_fraction=1.5)
    with pytest.raises(ParameterError, match="layout must be one of"):
        write_netflix_prize(small, tmp_path / "c", layout="kaggle")
    with pytest.raises(DataError, match="probe must be a boolean array of one value per rating"):
        write_netflix_prize(small, tmp_path / "c", probe=np.ones(3, dtype=bool))


def test_the_probe_draw_is_seeded(tmp_path, small):
    a = netflix_prize(write_netflix_prize(small, tmp_path / "a", layout="combined", probe_fraction=0.02, seed=7))
    b = netflix_prize(write_netflix_prize(small, tmp_path / "b", layout="combined", probe_fraction=0.02, seed=7))
    c = netflix_prize(write_netflix_prize(small, tmp_path / "c", layout="combined", probe_fraction=0.02, seed=8))
    assert a.probe.sum() == round(0.02 * len(small)) and np.array_equal(a.probe, b.probe)
    assert not np.array_equal(a.probe, c.probe)


def test_reading_streams_into_compact_columns(tmp_path):
    """A million ratings read with a traced peak of well under 100 bytes each (the table itself keeps 17)."""
    r = netflix_like(n_ratings=1_000_000, n_items=2000, seed=2)
    folder = write_netflix_prize(r, tmp_path / "m", layout="combined", seed=0, titles=False)
    del r
    tracemalloc.start()
    try:
        got = netflix_prize(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(got) == 1_000_000
    assert got.users.dtype == np.int32 and got.items.dtype == np.int32 and got.ratings.dtype == np.float64
    assert peak / len(got) < 80, f"{peak / len(got):.1f} bytes per rating at the peak"
