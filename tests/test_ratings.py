"""The Ratings table and the Split: validation, views, cutting, and file round trips."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cofiviz import DataError, Ratings, Split
from cofiviz.datasets import read, synthetic


def _frame(**cols) -> pd.DataFrame:
    return pd.DataFrame(cols)


@pytest.fixture
def small() -> Ratings:
    df = _frame(user=["b", "a", "a", "c", "b"], item=[20, 10, 30, 10, 10], rating=[4.0, 5.0, 1.0, 3.0, 2.5])
    return Ratings.from_dataframe(df, scale=(1, 5), name="small")


def test_from_dataframe_keeps_ids_and_sorts(small):
    assert list(small.user_ids) == ["a", "b", "c"] and list(small.item_ids) == [10, 20, 30]
    assert (len(small), small.n_users, small.n_items) == (5, 3, 3)
    assert small.users.tolist() == [0, 0, 1, 1, 2] and small.items.tolist() == [0, 2, 0, 1, 0]
    assert small.ratings.tolist() == [5.0, 1.0, 2.5, 4.0, 3.0]
    assert small.indptr.tolist() == [0, 2, 4, 5]
    assert small.user_counts().tolist() == [2, 2, 1] and small.item_counts().tolist() == [3, 1, 1]
    assert small.user_slice(1) == slice(2, 4)
    assert small.global_mean == pytest.approx(3.1)
    assert small.scale == (1.0, 5.0)
    df = small.to_dataframe()
    assert df.values.tolist() == [["a", 10, 5.0], ["a", 30, 1.0], ["b", 10, 2.5], ["b", 20, 4.0], ["c", 10, 3.0]]
    csr = small.to_csr()
    assert csr.shape == (3, 3) and csr[1, 1] == 4.0 and csr[1, 2] == 0
    assert "5 ratings, 3 users, 3 items" in repr(small)


def test_default_scale_is_the_observed_range():
    r = Ratings.from_dataframe(_frame(user=[1, 2], item=[1, 1], rating=[2.0, 4.0]))
    assert r.scale == (2.0, 4.0)
    const = Ratings.from_dataframe(_frame(user=[1, 2], item=[1, 1], rating=[3.0, 3.0]))
    assert const.scale[0] < const.scale[1]


@pytest.mark.parametrize("df,message", [
    (_frame(user=[1, None], item=[1, 2], rating=[1.0, 2.0]), "row 1: column 'user' is missing"),
    (_frame(user=[1, 2], item=[1, None], rating=[1.0, 2.0]), "row 1: column 'item' is missing"),
    (_frame(user=[1, 2], item=[1, 2], rating=["4", "four"]), "row 1: column 'rating' holds 'four', expected a number"),
    (_frame(user=[1, 2], item=[1, 2], rating=[1.0, None]), "row 1: column 'rating' is missing"),
    (_frame(user=[1, 2], item=[1, 2], rating=[1.0, np.inf]), "row 1: column 'rating' is inf, expected a finite"),
    (_frame(user=[1, 2], item=[1, 2], rating=[1.0, 9.0]), "row 1: column 'rating' is 9, outside the declared scale"),
    (_frame(user=[1], item=[1]), "missing column(s) ['rating']"),
    (pd.DataFrame({"user": [], "item": [], "rating": []}), "the ratings table is empty"),
])
def test_from_dataframe_errors_name_row_and_column(df, message):
    with pytest.raises(DataError) as err:
        Ratings.from_dataframe(df, scale=(1, 5))
    assert message in str(err.value)


def test_row_labels_come_from_the_index():
    df = _frame(user=[1, 2, 3], item=[1, 2, 3], rating=[1.0, 2.0, np.nan])
    df.index = [7, 8, 9]
    with pytest.raises(DataError, match="line 9: column 'rating'"):
        Ratings.from_dataframe(df, row_label="line")


def test_duplicate_error_names_two_rows_of_the_same_pair():
    # rows 0 and 1 are both duplicated, but of different pairs: the message must pair 0 with 2
    df = _frame(user=[1, 2, 1, 2], item=[5, 6, 5, 6], rating=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(DataError) as err:
        Ratings.from_dataframe(df)
    assert "rows 0 and 2: duplicate rating of user 1 on item 5 (2 duplicated (user, item) pair(s))" in str(err.value)


def test_duplicate_policies_and_report():
    df = _frame(user=[1, 1, 1, 2], item=[5, 5, 6, 5], rating=[1.0, 3.0, 4.0, 2.0])
    last = Ratings.from_dataframe(df, duplicates="last")
    assert last.to_dataframe().values.tolist() == [[1, 5, 3.0], [1, 6, 4.0], [2, 5, 2.0]]
    mean = Ratings.from_dataframe(df, duplicates="mean")
    assert mean.to_dataframe().values.tolist() == [[1, 5, 2.0], [1, 6, 4.0], [2, 5, 2.0]]
    assert mean.report == {"duplicates": {"policy": "mean", "pairs": 1, "rows_merged": 1}}
    with pytest.raises(DataError, match="duplicates must be one of"):
        Ratings.from_dataframe(df, duplicates="drop")


def test_reports_are_not_shared_between_tables(small):
    a = small.take(np.arange(2))
    b = small.take(np.arange(3))
    a.report["note"] = "mine"
    assert "note" not in b.report and "note" not in Ratings.report


def test_constructor_checks_and_sorting():
    with pytest.raises(DataError, match="same length"):
        Ratings([0, 1], [0], [1.0, 2.0], user_ids=[1, 2], item_ids=[1])
    with pytest.raises(DataError, match="user index out of range"):
        Ratings([0, 2], [0, 0], [1.0, 2.0], user_ids=[1, 2], item_ids=[1])
    with pytest.raises(DataError, match="item index out of range"):
        Ratings([0, 1], [0, 1], [1.0, 2.0], user_ids=[1, 2], item_ids=[1])
    with pytest.raises(DataError, match="lowest < highest"):
        Ratings([0], [0], [1.0], user_ids=[1], item_ids=[1], scale=(5, 1))
    rng = np.random.default_rng(0)
    u, i = rng.integers(0, 50, 2000), rng.integers(0, 40, 2000)
    r = Ratings(u, i, np.arange(2000.0), user_ids=np.arange(50), item_ids=np.arange(40))
    order = np.lexsort((i, u))
    assert np.array_equal(r.users, u[order]) and np.array_equal(r.items, i[order])
    assert np.array_equal(r.ratings, np.arange(2000.0)[order])
    again = Ratings(r.users, r.items, r.ratings, user_ids=r.user_ids, item_ids=r.item_ids)
    assert np.array_equal(again.ratings, r.ratings)


def test_take_like_reindexed(small):
    part = small.take(small.users == 1)
    assert len(part) == 2 and part.n_users == 3 and part.name == "small"
    like = small.like([2], [1], [5.0], name="x")
    assert like.to_dataframe().values.tolist() == [["c", 20, 5.0]] and like.scale == small.scale
    sub = small.take(small.users != 2).reindexed(keep_users=[0, 1])
    assert sub.n_users == 2 and list(sub.user_ids) == ["a", "b"] and len(sub) == 4
    with pytest.raises(DataError, match="not kept"):
        small.reindexed(keep_users=[0, 1])


def test_side_tables_follow_reindexing():
    r = synthetic("local_low_rank", n_users=30, n_items=20, density=0.5, seed=0)
    keep = np.arange(0, 20, 2)
    sub = r.take(np.isin(r.items, keep)).reindexed(keep_items=keep)
    assert list(sub.item_info["item"]) == list(keep)


@pytest.mark.parametrize("sep,suffix", [("\t", "tsv"), (",", "csv")])
def test_write_then_read_round_trip(tmp_path, small, sep, suffix):
    path = small.write(tmp_path / f"r.{suffix}", sep=sep)
    back = read(path)
    assert back.equals(small)
    assert list(back.user_ids) == ["a", "b", "c"] and back.item_ids.dtype.kind == "i"


def test_write_read_round_trip_synthetic_and_int_ids(tmp_path):
    r = synthetic("popularity", n_users=60, n_items=40, density=0.2, seed=1)
    back = read(r.write(tmp_path / "s.tsv"), scale=r.scale)
    assert back.equals(r) and back.scale == r.scale
    assert np.array_equal(back.user_ids, r.user_ids[np.unique(r.users)])


def test_split_write_read_round_trip(tmp_path):
    r = synthetic("low_rank", n_users=40, n_items=30, density=0.4, seed=2)
    rng = np.random.default_rng(0)
    part = rng.integers(0, 3, len(r))
    train, valid, test = r.take(part == 0, name="train"), r.take(part == 1, name="valid"), r.take(part == 2,
                                                                                               name="test")
    rated = set(zip(r.users.tolist(), r.items.tolist()))
    unrated = [(u, i) for u in test.users[:20].tolist() for i in range(r.n_items) if (u, i) not in rated]
    nu, ni = np.array(unrated[::7][:20]).T                              # negatives: items the user never rated
    neg = r.like(nu, ni, np.zeros(len(nu)), name="negatives", allow_zero=True)
    split = Split(train=train, test=test, valid=valid, negatives=neg,
                  protocol={"name": "unit-test", "seed": 0, "removed": {"users": 0}})
    d = split.write(tmp_path / "split")
    assert sorted(p.name for p in d.iterdir()) == ["negatives.tsv", "protocol.json", "test.tsv", "train.tsv",
                                                    "valid.tsv"]
    assert json.loads((d / "protocol.json").read_text())["scale"] == [1.0, 5.0]
    back = Split.read(d)
    assert back.protocol == {"name": "unit-test", "seed": 0, "removed": {"users": 0}}
    for name in ("train", "valid", "test", "negatives"):
        assert getattr(back, name).equals(getattr(split, name)), name
    assert back.train.scale == back.test.scale == (1.0, 5.0)
    assert np.array_equal(back.train.user_ids, back.test.user_ids)       # one shared index space
    assert back.negatives.allow_zero and (back.negatives.ratings == 0).all()
    cand = back.candidates("test")
    assert len(cand) == len(back.test) + len(neg) and len(neg) == 20


def test_split_read_with_string_ids_and_csv(tmp_path, small):
    # test: a's rating of item 30 and c's of item 10; train: the rest (users a, b; items 10, 20)
    held = ((small.users == 0) & (small.items == 2)) | (small.users == 2)
    split = Split(train=small.take(~held, name="train"), test=small.take(held, name="test"))
    back = Split.read(split.write(tmp_path / "s", sep=","))
    assert back.train.equals(split.train) and back.test.equals(split.test)
    assert list(back.test.user_ids) == ["a", "b", "c"]
    # user 'c' and item 30 have no training rating: counted, not refused
    assert back.report["unseen"]["test"] == {"users_unseen": 1, "users": 2, "items_unseen": 1, "items": 2}


def test_split_read_needs_train_and_test(tmp_path):
    (tmp_path / "train.tsv").write_text("user\titem\trating\n1\t1\t1\n")
    with pytest.raises(DataError, match="expected train.tsv and test.tsv"):
        Split.read(tmp_path)


def test_write_keeps_non_integer_ratings_exact(tmp_path):
    df = _frame(user=[1, 1, 1, 2], item=[1, 1, 1, 2], rating=[1.0, 2.0, 2.0, 0.1])
    r = Ratings.from_dataframe(df, duplicates="mean", scale=(0, 5))
    assert r.ratings[0] == pytest.approx(5 / 3)
    back = read(r.write(tmp_path / "m.tsv"), scale=(0, 5))
    assert np.array_equal(back.ratings, r.ratings)                        # 1.6666666666666667, not 1.66667
    ints = Ratings.from_dataframe(_frame(user=[1, 2], item=[1, 1], rating=[4.0, 5.0]))
    assert (tmp_path / "i.tsv").exists() is False
    assert ints.write(tmp_path / "i.tsv").read_text().splitlines() == ["user\titem\trating", "1\t1\t4", "2\t1\t5"]


def test_item_index_lists_each_items_ratings_in_table_order():
    r = Ratings([2, 0, 1, 0, 2, 1], [1, 3, 1, 0, 3, 3], [1.0, 2.0, 3.0, 4.0, 5.0, 2.0],
                user_ids=[10, 11, 12], item_ids=list("abcde"), scale=(1, 5))
    indptr, positions = r.item_index()
    assert indptr.dtype == np.int64 and positions.dtype == np.int64
    assert indptr.tolist() == [0, 1, 3, 3, 6, 6]
    for i in range(r.n_items):
        at = positions[indptr[i]:indptr[i + 1]]
        assert (r.items[at] == i).all()
        assert (np.diff(at) > 0).all()                   # the table's order: by user, then item
    assert sorted(positions.tolist()) == list(range(len(r)))
    assert r.item_index()[1] is positions                # computed once per table
    sub = r.take(r.users != 0)
    assert sub.item_index()[0].tolist() == [0, 0, 2, 2, 4, 4]


def test_ratings_store_contiguous_arrays_of_the_kernels_dtypes_whatever_they_are_given():
    users = np.array([0, 9, 1, 9, 1, 9], dtype=np.int64)[::2]           # strided, another dtype
    items = np.array([2.0, 9, 0, 9, 1, 9])[::2]
    ratings = np.array([5, 9, 3, 9, 4, 9], dtype=np.int16)[::2]
    r = Ratings(users, items, ratings, user_ids=np.arange(2), item_ids=np.arange(3))
    for a, dtype in ((r.users, np.int32), (r.items, np.int32), (r.ratings, np.float64), (r.indptr, np.int64)):
        assert a.dtype == dtype and a.flags.c_contiguous
    assert r.users.tolist() == [0, 1, 1] and r.items.tolist() == [2, 0, 1] and r.ratings.tolist() == [5.0, 3.0, 4.0]
