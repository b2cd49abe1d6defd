"""Protocols (cofiviz.protocols): sizes, disjointness, filters at the papers' exact boundaries, seeds, files.

Test tables are built by hand (``_table``) so each case controls every user's and item's count; one
test runs the real MovieLens 100K through ``cofiviz.datasets.movielens_100k()`` and checks (and prints)
how many users each weak-generalization variant keeps.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from cofiviz.util.errors import DataError, ParameterError
from cofiviz.ratings import Ratings
from cofiviz.split import Split
from cofiviz import protocols as P
from cofiviz.protocols.top_n import _sample_distinct


# ---------------------------------------------------------------------------------------------- helpers
def _table(counts, n_items=None, seed=0, name="toy") -> Ratings:
    """User ``u{k}`` rates ``counts[k]`` distinct random items (ids ``i{j}``) with random ratings 1..5."""
    rng = np.random.default_rng(seed)
    n_items = n_items or max(counts) + 5
    rows = []
    for k, c in enumerate(counts):
        items = rng.choice(n_items, size=c, replace=False)
        rows.append(pd.DataFrame({"user": f"u{k:04d}", "item": [f"i{j:04d}" for j in items],
                                  "rating": rng.integers(1, 6, size=c)}))
    return Ratings.from_dataframe(pd.concat(rows, ignore_index=True), scale=(1, 5), name=name)


def _keys(r: Ratings | None) -> set:
    if r is None:
        return set()
    df = r.to_dataframe()
    return set(zip(df["user"].astype(str), df["item"].astype(str)))


def _triples(r: Ratings) -> set:
    df = r.to_dataframe()
    return set(zip(df["user"].astype(str), df["item"].astype(str), df["rating"].astype(float)))


def _per_user(r: Ratings | None) -> dict:
    if r is None:
        return {}
    return r.to_dataframe().groupby("user").size().to_dict()


def _dropped_user_ids(split: Split) -> set:
    return {str(u) for f in split.protocol["filters"] for u in f.get("user_ids", [])}


def _rated_parts(split: Split):
    return [p for p in (split.train, split.valid, split.test, split.given) if p is not None]


def _assert_partition(split: Split, source: Ratings, removed: set = frozenset()):
    """Parts are pairwise disjoint and their union is the input minus the reported drops (and ``removed``)."""
    parts = _rated_parts(split)
    keys = [_keys(p) for p in parts]
    assert sum(len(k) for k in keys) == len(set().union(*keys)), "parts overlap"
    dropped_users = _dropped_user_ids(split)
    dropped_items = {str(i) for f in split.protocol["filters"] for i in f.get("item_ids", [])}
    expected = {t for t in _triples(source) if t[0] not in dropped_users and t[1] not in dropped_items}
    expected = {t for t in expected if (t[0], t[1]) not in removed}
    assert set().union(*[_triples(p) for p in parts]) == expected
    assert split.protocol["dropped"]["ratings"] == len(source) - sum(len(p) for p in parts)
    # one shared index space holding exactly the users and items in use
    for part in (p for _, p in split.parts()):
        assert list(part.user_ids) == list(split.train.user_ids)
        assert list(part.item_ids) == list(split.train.item_ids)
    used_users = set().union(*[set(p.users.tolist()) for _, p in split.parts()])
    used_items = set().union(*[set(p.items.tolist()) for _, p in split.parts()])
    assert used_users == set(range(split.train.n_users)) and used_items == set(range(split.train.n_items))


def _same_split(a: Split, b: Split) -> bool:
    return all(_triples(getattr(a, k)) == _triples(getattr(b, k)) if getattr(a, k) is not None
               else getattr(b, k) is None for k in ("train", "valid", "test", "negatives", "given"))


# ---------------------------------------------------------------------------------------------- weak
@pytest.mark.parametrize("n_train,n_valid,min_test", [(10, 0, 10), (10, 10, 10), (3, 2, 1), (1, 0, 1)])
def test_weak_generalization_exact_counts_disjoint_union(n_train, n_valid, min_test):
    counts = [5, 12, 19, 20, 21, 30, 31, 60, 1, 2, 40, 33]
    r = _table(counts, n_items=80, seed=1)
    s = P.weak_generalization(r, n_train=n_train, n_valid=n_valid, min_test=min_test, seed=7)
    need = n_train + n_valid + min_test
    kept = {f"u{k:04d}" for k, c in enumerate(counts) if c >= need}
    assert set(_per_user(s.train)) == kept
    assert all(v == n_train for v in _per_user(s.train).values())
    if n_valid:
        assert set(_per_user(s.valid)) == kept and all(v == n_valid for v in _per_user(s.valid).values())
    else:
        assert s.valid is None
    total = {f"u{k:04d}": c for k, c in enumerate(counts)}
    assert _per_user(s.test) == {u: total[u] - n_train - n_valid for u in kept}
    assert all(v >= min_test for v in _per_user(s.test).values())
    assert _dropped_user_ids(s) == set(total) - kept
    _assert_partition(s, r)
    pr = s.protocol
    assert pr["name"] == "weak" and pr["seed"] == 7
    assert pr["params"] == {"n_train": n_train, "n_valid": n_valid, "min_test": min_test}
    assert pr["filters"][0]["threshold"] == need
    assert pr["filters"][0]["users"] == len(total) - len(kept)
    assert pr["filters"][0]["ratings"] == sum(c for u, c in total.items() if u not in kept)
    json.dumps(pr)  # JSON-ready


@pytest.mark.parametrize("N", [10, 20, 50])
def test_cofirank_weak_drops_below_n_plus_10_exactly(N):
    # CofiRank §6: "Users with less then 20, 30, 60 rated movies where removed"
    counts = [N + 9, N + 10, N + 11, N + 9, N + 10]
    r = _table(counts, n_items=N + 30, seed=N)
    s = P.cofirank_weak(r, N, seed=0)
    assert set(_per_user(s.train)) == {"u0001", "u0002", "u0004"}
    assert _dropped_user_ids(s) == {"u0000", "u0003"}
    assert _per_user(s.test) == {"u0001": 10, "u0002": 11, "u0004": 10}
    assert s.valid is None
    assert s.protocol["name"] == "cofirank-weak"
    assert s.protocol["params"] == {"n_train": N, "n_valid": 0, "min_test": 10}


@pytest.mark.parametrize("N", [10, 20, 50])
def test_lcr_weak_drops_below_n_plus_20_exactly(N):
    # LCR §5.3: "Another 10 items are set aside for validation ... Users with less than N + 20 ratings are dropped"
    counts = [N + 19, N + 20, N + 21, N + 10]
    r = _table(counts, n_items=N + 40, seed=N + 1)
    s = P.lcr_weak(r, N, seed=0)
    assert set(_per_user(s.train)) == {"u0001", "u0002"}
    assert _per_user(s.valid) == {"u0001": 10, "u0002": 10}
    assert _per_user(s.test) == {"u0001": 10, "u0002": 11}
    assert _dropped_user_ids(s) == {"u0000", "u0003"}
    assert s.protocol["params"] == {"n_train": N, "n_valid": 10, "min_test": 10}


def test_weak_choice_is_uniform_within_user():
    # one user with 10 ratings, n_train=3: over many seeds every item is chosen ~ 3/10 of the time
    r = _table([10] * 400, n_items=10, seed=3)
    s = P.weak_generalization(r, n_train=3, n_valid=0, min_test=1, seed=11)
    freq = s.train.to_dataframe().groupby("item").size() / 400
    assert len(freq) == 10 and np.all(np.abs(freq.to_numpy() - 0.3) < 0.1)


# ---------------------------------------------------------------------------------------------- fixed ratio
def test_fixed_ratio_rounding_and_empty_parts():
    counts = [1, 2, 3, 7, 8, 100]
    r = _table(counts, n_items=120, seed=2)
    s = P.fixed_ratio(r, 0.5, seed=0)
    # round half up; LCR: "a user with 8 ratings is ... trained with 4 ratings and tested with the remaining 4"
    assert _per_user(s.train) == {"u0001": 1, "u0002": 2, "u0003": 4, "u0004": 4, "u0005": 50}
    assert _per_user(s.test) == {"u0001": 1, "u0002": 1, "u0003": 3, "u0004": 4, "u0005": 50}
    steps = {f["step"]: f for f in s.protocol["filters"]}
    assert steps["empty_test"]["user_ids"] == ["u0000"] and steps["empty_train"]["users"] == 0
    _assert_partition(s, r)

    s2 = P.fixed_ratio(r, 0.2, seed=0)  # 1 and 2 ratings round to an empty training part
    assert {f["step"]: f["user_ids"] for f in s2.protocol["filters"]}["empty_train"] == ["u0000", "u0001"]
    assert _per_user(s2.train) == {"u0002": 1, "u0003": 1, "u0004": 2, "u0005": 20}


def test_fixed_ratio_with_validation_sums_to_each_user():
    counts = [10, 20, 37, 4]
    r = _table(counts, n_items=50, seed=4)
    s = P.fixed_ratio(r, train_ratio=0.4, valid_ratio=0.1, seed=3)
    tr, va, te = _per_user(s.train), _per_user(s.valid), _per_user(s.test)
    assert tr == {"u0000": 4, "u0001": 8, "u0002": 15, "u0003": 2}
    # cumulative rounding: floor(0.5 * n + 1/2) - n_train
    assert va == {"u0000": 1, "u0001": 2, "u0002": 4}
    assert s.protocol["users_without_valid"] == 1        # u0003: 0.5 * 4 + 1/2 -> 2 = n_train
    for k, c in enumerate(counts):
        u = f"u{k:04d}"
        assert tr[u] + va.get(u, 0) + te[u] == c
    _assert_partition(s, r)


# ---------------------------------------------------------------------------------------------- strong
def _strong_table(seed=0):
    """300 users, 120 items; item counts spread around 50, user counts around the top-100 boundary."""
    rng = np.random.default_rng(seed)
    n_users, n_items = 300, 120
    p_item = np.linspace(0.05, 0.4, n_items)
    p_user = rng.uniform(0.3, 1.6, n_users)
    mask = rng.random((n_users, n_items)) < np.clip(p_user[:, None] * p_item[None, :], 0, 1)
    u, i = np.nonzero(mask)
    df = pd.DataFrame({"user": u + 1000, "item": i + 1, "rating": rng.integers(1, 6, len(u))})
    return Ratings.from_dataframe(df, scale=(1, 5), name="strong-toy")


def test_strong_generalization_matches_an_independent_computation():
    r = _strong_table()
    df = r.to_dataframe()
    item_n = df.groupby("item").size()
    assert (item_n < 50).any() and (item_n >= 50).any(), "the toy table must have items on both sides of 50"
    kept_items = set(item_n[item_n >= 50].index)
    f = df[df["item"].isin(kept_items)]
    user_n = f.groupby("user").size().reset_index(name="n")
    top = user_n.sort_values(["n", "user"], ascending=[False, True]).head(100)
    test_users = set(top["user"])

    s = P.strong_generalization(r, n_given=10, n_test_users=100, min_item_ratings=50, seed=5)
    assert {int(i) for f_ in s.protocol["filters"] for i in f_.get("item_ids", [])} == set(item_n.index) - kept_items
    assert set(s.train.item_ids.tolist()) <= kept_items
    assert set(s.test.to_dataframe()["user"]) == test_users
    assert set(s.given.to_dataframe()["user"]) == test_users
    assert set(s.train.to_dataframe()["user"]) == set(user_n["user"]) - test_users
    assert all(v == 10 for v in _per_user(s.given).values())
    n_of = dict(zip(user_n["user"], user_n["n"]))
    assert _per_user(s.test) == {u: n_of[u] - 10 for u in test_users}
    assert sorted(s.protocol["test_users"]["user_ids"]) == sorted(test_users)
    assert s.valid is None and s.negatives is None
    _assert_partition(s, r)

    # the seed changes the given ratings, never the test users
    s2 = P.strong_generalization(r, seed=6)
    assert _keys(s2.train) == _keys(s.train)
    assert set(_per_user(s2.given)) == test_users and _keys(s2.given) != _keys(s.given)


def test_strong_generalization_item_boundary_and_ties():
    # item A has exactly 50 ratings (kept), B exactly 49 (dropped); w rated only B.
    # C00..C29 have 50 ratings each: the 4 heavy users v00..v03 plus 46 of the 90 pool users p00..p89,
    # so the heavy users have 31 ratings on kept items and tie for the 2 test slots; pool users have <= 17.
    rows = [(f"v{k:02d}", "A", 4) for k in range(4)] + [(f"p{k:02d}", "A", 4) for k in range(46)]
    rows += [(f"v{k:02d}", "B", 2) for k in range(1, 4)] + [(f"p{k:02d}", "B", 2) for k in range(45)] + [("w", "B", 1)]
    for j in range(30):
        rows += [(f"v{k:02d}", f"C{j:02d}", 5) for k in range(4)]
        rows += [(f"p{(j * 46 + t) % 90:02d}", f"C{j:02d}", 3) for t in range(46)]
    r = Ratings.from_dataframe(pd.DataFrame(rows, columns=["user", "item", "rating"]), scale=(1, 5))
    assert r.item_counts().tolist().count(50) == 31 and r.item_counts().tolist().count(49) == 1
    s = P.strong_generalization(r, n_given=5, n_test_users=2, min_item_ratings=50, min_test=5, seed=0)
    steps = {f["step"]: f for f in s.protocol["filters"]}
    assert steps["min_item_ratings"]["item_ids"] == ["B"] and steps["min_item_ratings"]["ratings"] == 49
    assert "A" in s.train.item_ids.tolist() and "B" not in s.train.item_ids.tolist()
    assert steps["no_ratings_left"]["user_ids"] == ["w"]
    assert s.protocol["test_users"]["user_ids"] == ["v00", "v01"]      # ties broken by index (= sorted ids)
    assert s.protocol["test_users"]["boundary_count"] == 31
    assert s.protocol["test_users"]["tied_at_boundary"] == 4
    assert s.protocol["test_users"]["taken_at_boundary"] == 2
    assert _per_user(s.given) == {"v00": 5, "v01": 5} and _per_user(s.test) == {"v00": 26, "v01": 26}
    assert {"v02", "v03"} <= set(_per_user(s.train))
    for seed in range(5):                                                # the seed never changes the test users
        assert P.strong_generalization(r, n_given=5, n_test_users=2, min_test=5, seed=seed).protocol[
            "test_users"]["user_ids"] == ["v00", "v01"]
    _assert_partition(s, r)


def test_strong_generalization_short_test_user_is_dropped_not_replaced():
    counts = [15, 40, 30, 12, 11, 10, 9]
    r = _table(counts, n_items=45, seed=9)
    s = P.strong_generalization(r, n_given=10, n_test_users=3, min_item_ratings=1, min_test=10, seed=0)
    # top 3 by count: u0001 (40), u0002 (30), u0000 (15); u0000 has < 10 + 10 and is dropped
    assert set(_per_user(s.given)) == {"u0001", "u0002"}
    step = {f["step"]: f for f in s.protocol["filters"]}["test_user_min_ratings"]
    assert step["user_ids"] == ["u0000"] and step["ratings"] == 15
    assert "u0000" not in _per_user(s.train)


# ---------------------------------------------------------------------------------------------- top-N
def test_top_n_negatives_are_unrated_distinct_zero_rated():
    counts = [60, 55, 80, 49, 120, 70]
    r = _table(counts, n_items=400, seed=5)
    s = P.top_n(r, n_train=10, n_negatives=150, seed=2)
    assert _dropped_user_ids(s) == {"u0003"}                       # GAPfm: fewer than 50 ratings
    rated = _keys(r)
    neg = s.negatives.to_dataframe()
    assert np.all(neg["rating"].to_numpy() == 0)
    assert not any((u, i) in rated for u, i in zip(neg["user"], neg["item"]))
    assert not neg.duplicated(["user", "item"]).any()
    assert _per_user(s.negatives) == {u: 150 for u in _per_user(s.train)}
    assert all(v == 10 for v in _per_user(s.train).values())
    cand = s.candidates("test")
    assert len(cand) == len(s.test) + len(s.negatives) and cand.allow_zero
    assert s.protocol["params"]["n_negatives"] == 150 and s.protocol["params"]["relevance_threshold"] == 5
    _assert_partition(s, r)


def test_top_n_defaults_follow_gapfm():
    params = P.parameters("top-n")
    assert params["n_negatives"] == 1000          # "randomly select 1000 unrated items"
    assert params["min_user_ratings"] == 50       # "we exclude the users with less than 50 ratings"
    assert params["min_test"] == 5                # "users who have at least 5 rated movies in the probe set"
    assert params["relevance_threshold"] == 5     # "We set the relevance threshold to be 5"
    assert params["n_train"] == 10                # "Given 10" (20, 30, 50 also used)


def test_top_n_negatives_uniform_over_unrated_items():
    # 3000 users rated the same 3 of 10 items; 2 (plain draw) or 5 (complement draw) negatives of 7 unrated
    rows = [(f"u{k}", f"i{j}", 4) for k in range(3000) for j in (0, 4, 7)] + [("z", f"i{j}", 3) for j in range(10)]
    r = Ratings.from_dataframe(pd.DataFrame(rows, columns=["user", "item", "rating"]), scale=(1, 5))
    for k in (2, 5):
        s = P.top_n(r, n_train=1, n_negatives=k, min_user_ratings=1, min_test=1, too_few_unrated="drop", seed=k)
        neg = s.negatives.to_dataframe()
        assert set(neg["item"]) == {f"i{j}" for j in (1, 2, 3, 5, 6, 8, 9)}
        freq = neg.groupby("item").size().to_numpy() / 3000
        assert np.all(np.abs(freq - k / 7) < 5 * np.sqrt((k / 7) * (1 - k / 7) / 3000))
        assert _dropped_user_ids(s) == {"z"}                          # rated everything


def test_top_n_too_few_unrated_items():
    counts = [60, 90, 70]
    r = _table(counts, n_items=100, seed=6)
    with pytest.raises(ParameterError, match=r"n_negatives=20 .*expected n_negatives <= 10"):
        P.top_n(r, n_negatives=20, seed=0)
    s = P.top_n(r, n_negatives=20, too_few_unrated="drop", seed=0)
    assert _dropped_user_ids(s) == {"u0001"}
    s = P.top_n(r, n_negatives=20, too_few_unrated="all", seed=0)
    assert _per_user(s.negatives)["u0001"] == 10
    assert s.protocol["users_with_all_unrated"]["user_ids"] == ["u0001"]
    s = P.top_n(r, n_negatives=0, seed=0)
    assert s.negatives is None


def test_gapfm_top_n_carves_validation_from_the_held_out_items():
    counts = [60, 55, 80, 49, 120, 70, 52]
    r = _table(counts, n_items=400, seed=5)
    base = P.top_n(r, n_train=10, n_negatives=150, too_few_unrated="all", seed=4)
    s = P.gapfm_top_n(r, n_train=10, n_negatives=150, n_valid=5, n_valid_negatives=30, seed=4)
    assert _triples(s.train) == _triples(base.train) and _triples(s.negatives) == _triples(base.negatives)
    held = s.valid.to_dataframe()
    rated_valid = held[held["rating"] > 0]
    assert _triples(s.test) | set(zip(rated_valid["user"].astype(str), rated_valid["item"].astype(str),
                                      rated_valid["rating"].astype(float))) == _triples(base.test)
    assert not _keys(s.test) & _keys(s.valid)
    per_user_test = _per_user(base.test)
    assert rated_valid.groupby("user").size().to_dict() == {u: min(5, n - 1) for u, n in per_user_test.items()}
    zeros = held[held["rating"] == 0]
    n_rated, n_neg = _per_user(base.train), _per_user(base.negatives)
    free = {u: s.train.n_items - n_rated[u] - per_user_test[u] - n_neg[u] for u in per_user_test}
    assert min(free.values()) < 30 < max(free.values())       # some users have fewer items left than asked
    assert zeros.groupby("user").size().to_dict() == {u: min(30, f) for u, f in free.items()}
    used = _keys(r) | _keys(s.negatives)
    assert not any((u, i) in used for u, i in zip(zeros["user"].astype(str), zeros["item"].astype(str)))
    assert not zeros.duplicated(["user", "item"]).any()
    pr = s.protocol
    assert pr["name"] == "gapfm-top-n" and pr["seed"] == 4 and pr["reference"] == P.REFERENCES["gapfm-top-n"]
    assert pr["params"]["n_valid"] == 5 and pr["params"]["n_valid_negatives"] == 30
    assert pr["params"]["relevance_threshold"] == 5 and pr["params"]["too_few_unrated"] == "all"
    assert {k: pr["sizes"][k] for k in ("train", "valid", "test", "negatives")} == {
        "train": len(s.train), "valid": len(s.valid), "test": len(s.test), "negatives": len(s.negatives)}
    json.dumps(pr)


def test_gapfm_top_n_is_reproducible_and_checks_its_parameters(toy):
    a = P.make("gapfm-top-n", toy, n_negatives=40, n_valid=3, n_valid_negatives=20, seed=3)
    b = P.make("gapfm-top-n", toy, n_negatives=40, n_valid=3, n_valid_negatives=20, seed=3)
    c = P.make("gapfm-top-n", toy, n_negatives=40, n_valid=3, n_valid_negatives=20, seed=4)
    assert _same_split(a, b) and a.protocol == b.protocol and not _same_split(a, c)
    assert P.parameters("gapfm-top-n") == {"n_train": 10, "n_negatives": 1000, "n_valid": 5,
                                           "n_valid_negatives": 200, "seed": 0}
    with pytest.raises(ParameterError, match="n_valid must be an integer >= 0"):
        P.gapfm_top_n(toy, n_valid=-1)
    with pytest.raises(ParameterError, match="n_valid_negatives must be an integer >= 0"):
        P.gapfm_top_n(toy, n_valid_negatives=1.5)
    with pytest.raises(ParameterError, match=r"no parameter\(s\) 'min_test'"):
        P.make("gapfm-top-n", toy, min_test=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=8), st.integers(0, 2**16))
def test_sample_distinct_property(mk, seed):
    m = np.array([a for a, _ in mk])
    k = np.array([min(a, b) for a, b in mk])
    g, v = _sample_distinct(m, k, np.random.default_rng(seed))
    assert np.array_equal(np.bincount(g, minlength=len(m)), k)
    assert np.all((v >= 0) & (v < m[g]))
    assert len(np.unique(g * 1000 + v)) == len(g)


# ---------------------------------------------------------------------------------------------- controversial
def _train_variance(split: Split) -> pd.Series:
    return split.train.to_dataframe().groupby("item")["rating"].agg(["var", "size"])


@pytest.mark.parametrize("measure", ["variance", "entropy"])
def test_controversial_test_only_holds_high_dispersion_items(measure):
    r = _table([60] * 120, n_items=80, seed=8)
    s = P.controversial_items(r, base="weak", measure=measure, top_fraction=0.2, min_item_count=5,
                              n_train=20, seed=1)
    base = P.weak_generalization(r, n_train=20, seed=1)
    tr = base.train.to_dataframe()
    if measure == "variance":
        stat = tr.groupby("item")["rating"].var(ddof=1)
    else:
        def ent(x):
            p = x.value_counts(normalize=True).to_numpy()
            return float(-(p * np.log2(p)).sum())
        stat = tr.groupby("item")["rating"].apply(ent)
    size = tr.groupby("item").size()
    eligible = stat[size >= 5].sort_values(ascending=False)
    k = int(np.ceil(0.2 * len(eligible)))
    threshold = eligible.iloc[k - 1]
    chosen = set(eligible[eligible >= threshold - 1e-12].index)
    assert set(s.protocol["controversial"]["item_ids"]) == chosen
    assert abs(s.protocol["controversial"]["threshold"] - threshold) < 1e-9
    test_items = set(s.test.to_dataframe()["item"])
    assert test_items <= chosen
    assert all(stat[i] >= threshold - 1e-12 for i in test_items)
    # train and valid are the base split's; the test is the base test restricted to the chosen items
    assert _keys(s.train) == _keys(base.train)
    bt = base.test.to_dataframe()
    assert _keys(s.test) == {(u, i) for u, i in zip(bt["user"], bt["item"]) if i in chosen}
    assert s.protocol["test_ratings"]["kept"] == len(s.test)
    assert s.protocol["base"]["name"] == "weak"
    removed = {(u, i) for u, i in zip(bt["user"], bt["item"]) if i not in chosen}
    _assert_partition(s, r, removed=removed)


def test_controversial_does_not_look_at_test_ratings():
    r = _table([40] * 100, n_items=50, seed=12)
    s = P.controversial_items(r, n_train=10, seed=4)
    # change every test rating of the input: the chosen items must not move (statistics on train only)
    df = r.to_dataframe()
    test = _keys(P.weak_generalization(r, n_train=10, seed=4).test)
    flip = np.array([(u, i) in test for u, i in zip(df["user"], df["item"])])
    df.loc[flip, "rating"] = 6 - df.loc[flip, "rating"]
    r2 = Ratings.from_dataframe(df, scale=(1, 5))
    s2 = P.controversial_items(r2, n_train=10, seed=4)
    assert s2.protocol["controversial"]["item_ids"] == s.protocol["controversial"]["item_ids"]


def test_controversial_statistics_on_all_ratings():
    r = _table([40] * 100, n_items=50, seed=16)
    s = P.controversial_items(r, n_train=10, statistics="all", min_item_count=2, top_fraction=0.1, seed=0)
    var = r.to_dataframe().groupby("item")["rating"].var(ddof=1).sort_values(ascending=False)
    k = int(np.ceil(0.1 * len(var)))
    assert set(s.protocol["controversial"]["item_ids"]) == set(var[var >= var.iloc[k - 1] - 1e-12].index)
    assert s.protocol["params"]["statistics"] == "all"


def test_controversial_reports_users_left_without_test_items():
    r = _table([40] * 60, n_items=60, seed=13)
    s = P.controversial_items(r, n_train=10, top_fraction=0.05, min_item_count=3, min_test_items=3, seed=0)
    removed = s.protocol["test_users_removed"]
    assert removed["users"] > 0
    assert set(_per_user(s.test)).isdisjoint(set(removed["user_ids"]))
    assert all(v >= 3 for v in _per_user(s.test).values())
    assert set(removed["user_ids"]) <= set(_per_user(s.train))          # still training users
    assert s.protocol["test_users"]["kept"] == len(_per_user(s.test))


def test_controversial_can_exclude_popular_items():
    r = _table([30 + (k % 40) for k in range(150)], n_items=80, seed=15)
    s = P.controversial_items(r, n_train=10, min_item_count=3, top_fraction=0.3, exclude_popular=0.5, seed=0)
    n = s.train.to_dataframe().groupby("item").size()
    n = n[n >= 3].sort_values(ascending=False, kind="stable")
    chosen = set(s.protocol["controversial"]["item_ids"])
    assert s.protocol["controversial"]["popular_items_excluded"] == len(n) // 2
    # the most-rated half (ties by index, as pandas' stable sort of the sorted ids) is never chosen
    assert chosen and chosen.isdisjoint(set(n.index[: len(n) // 2]))


def test_controversial_on_top_n_and_strong():
    r = _table([70] * 80, n_items=150, seed=14)
    s = P.controversial_items(r, base="top-n", n_negatives=30, min_item_count=3, seed=0)
    assert set(_per_user(s.negatives)) == set(_per_user(s.test))
    assert set(s.test.to_dataframe()["item"]) <= set(s.protocol["controversial"]["item_ids"])
    s = P.make("controversial", r, base="strong", n_given=10, n_test_users=20, min_item_ratings=30,
               min_item_count=3, seed=0)
    assert s.protocol["params"]["min_item_ratings"] == 30 and s.protocol["base"]["params"]["min_item_ratings"] == 30
    assert set(_per_user(s.test)) <= set(_per_user(s.given))


# ---------------------------------------------------------------------------------------------- all protocols
CASES = [
    ("weak", {"n_train": 10, "n_valid": 5}),
    ("cofirank-weak", {"n_train": 10}),
    ("lcr-weak", {"n_train": 10}),
    ("fixed-ratio", {"train_ratio": 0.5, "valid_ratio": 0.1}),
    ("strong", {"n_given": 10, "n_test_users": 20, "min_item_ratings": 10}),
    ("top-n", {"n_train": 10, "n_negatives": 40}),
    ("controversial", {"n_train": 10, "min_item_count": 3}),
]


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(21)
    return _table(rng.integers(15, 110, size=150).tolist(), n_items=200, seed=22)


@pytest.mark.parametrize("name,params", CASES, ids=[c[0] for c in CASES])
def test_reproducible_and_seed_dependent(toy, name, params):
    a = P.make(name, toy, seed=3, **params)
    b = P.make(name, toy, seed=3, **params)
    c = P.make(name, toy, seed=4, **params)
    assert _same_split(a, b) and a.protocol == b.protocol
    assert not _same_split(a, c)
    assert a.protocol["seed"] == 3 and c.protocol["seed"] == 4
    assert set(params) <= set(a.protocol["params"])


@pytest.mark.parametrize("name,params", CASES, ids=[c[0] for c in CASES])
def test_write_read_round_trip(toy, name, params, tmp_path):
    s = P.make(name, toy, seed=1, **params)
    s.write(tmp_path / name)
    back = Split.read(tmp_path / name)
    assert _same_split(s, back)
    for part, r in s.parts():
        other = getattr(back, part)
        assert r.equals(other), part
        assert (other.n_users, other.n_items) == (r.n_users, r.n_items), part
    assert back.protocol == s.protocol
    assert back.train.scale == s.train.scale


@pytest.mark.parametrize("name,params", CASES, ids=[c[0] for c in CASES])
def test_every_split_partitions_its_input(toy, name, params):
    s = P.make(name, toy, seed=2, **params)
    removed = set()
    if name == "controversial":
        base = P.make("weak", toy, seed=2, n_train=10)
        removed = _keys(base.test) - _keys(s.test)
    _assert_partition(s, toy, removed=removed)
    for key in ("name", "params", "seed", "reference", "input", "filters", "sizes", "dropped"):
        assert key in s.protocol, key
    json.dumps(s.protocol)


# ---------------------------------------------------------------------------------------------- registry, errors
def test_registry_names():
    assert list(P.PROTOCOLS) == ["weak", "cofirank-weak", "lcr-weak", "fixed-ratio", "strong", "top-n",
                                 "gapfm-top-n", "gapfm-netflix", "controversial"]
    assert P.get("cofirank-weak") is P.cofirank_weak and P.get("Fixed_Ratio") is P.fixed_ratio
    with pytest.raises(ParameterError, match="unknown protocol 'nope'.*weak, cofirank-weak, lcr-weak"):
        P.get("nope")
    assert P.parameters("cofirank-weak") == {"n_train": 10, "seed": 0}
    assert P.parameters("lcr-weak") == {"n_train": 10, "seed": 0}
    assert P.parameters("strong")["n_test_users"] == 100 and P.parameters("strong")["min_item_ratings"] == 50
    assert P.parameters("fixed-ratio")["train_ratio"] == 0.5


def test_make_rejects_unknown_parameters(toy):
    with pytest.raises(ParameterError, match=r"no parameter\(s\) 'n_trian'.*valid parameters: .*n_train"):
        P.make("weak", toy, n_trian=10)
    with pytest.raises(ParameterError, match="no parameter"):
        P.make("controversial", toy, base="fixed-ratio", n_train=10)   # n_train is not fixed-ratio's
    P.make("controversial", toy, base="fixed-ratio", train_ratio=0.5, min_item_count=3)


@pytest.mark.parametrize("call,match", [
    (lambda r: P.weak_generalization(r, n_train=-1), "n_train must be an integer >= 1"),
    (lambda r: P.weak_generalization(r, n_train=0), "n_train must be an integer >= 1"),
    (lambda r: P.weak_generalization(r, n_valid=-2), "n_valid must be an integer >= 0"),
    (lambda r: P.weak_generalization(r, n_train=2.5), "n_train must be an integer"),
    (lambda r: P.cofirank_weak(r, True), "n_train must be an integer"),
    (lambda r: P.fixed_ratio(r, train_ratio=1.0), r"train_ratio must be a number in \(0, 1\)"),
    (lambda r: P.fixed_ratio(r, train_ratio=0), r"train_ratio must be a number in \(0, 1\)"),
    (lambda r: P.fixed_ratio(r, train_ratio=-0.5), r"train_ratio"),
    (lambda r: P.fixed_ratio(r, valid_ratio=1.5), r"valid_ratio must be a number in \[0, 1\)"),
    (lambda r: P.fixed_ratio(r, train_ratio=0.6, valid_ratio=0.4), r"train_ratio \+ valid_ratio must be < 1"),
    (lambda r: P.strong_generalization(r, n_given=0), "n_given must be an integer >= 1"),
    (lambda r: P.strong_generalization(r, n_test_users=-3), "n_test_users"),
    (lambda r: P.top_n(r, n_negatives=-1), "n_negatives must be an integer >= 0"),
    (lambda r: P.top_n(r, min_user_ratings=1, n_negatives=10**6), r"n_negatives=1000000 is more than"),
    (lambda r: P.top_n(r, too_few_unrated="skip"), "too_few_unrated must be one of"),
    (lambda r: P.controversial_items(r, measure="gini"), "measure must be one of 'variance', 'entropy'"),
    (lambda r: P.controversial_items(r, base="controversial"), "base must be one of"),
    (lambda r: P.controversial_items(r, top_fraction=0), r"top_fraction must be a number in \(0, 1\]"),
    (lambda r: P.weak_generalization(r, seed=-1), "seed must be a non-negative integer"),
    (lambda r: P.weak_generalization(r, seed=None), "seed must be a non-negative integer"),
])
def test_bad_parameters_name_the_parameter(toy, call, match):
    with pytest.raises(ParameterError, match=match):
        call(toy)


def test_everyone_dropped_is_a_data_error():
    r = _table([5, 8, 12], n_items=20, seed=0)
    with pytest.raises(DataError, match=r"every user was dropped: all 3 users have fewer than .* = 20 ratings "
                                        r"\(the most any user has is 12\)"):
        P.cofirank_weak(r, 10)
    with pytest.raises(DataError, match="every user was dropped"):
        P.lcr_weak(r, 10)
    with pytest.raises(DataError, match="every user was dropped"):
        P.top_n(r)
    with pytest.raises(DataError, match="every user was dropped"):
        P.fixed_ratio(_table([1, 1], n_items=3), 0.5)
    with pytest.raises(DataError, match="no item has at least min_item_ratings=50"):
        P.strong_generalization(r)
    with pytest.raises(DataError, match="a protocol needs a cofiviz.Ratings"):
        P.weak_generalization(pd.DataFrame({"user": [1], "item": [1], "rating": [1]}))


def test_numeric_strings_from_a_command_line_are_accepted(toy):
    a = P.make("weak", toy, n_train="10", seed="3")
    b = P.make("weak", toy, n_train=10, seed=3)
    assert _same_split(a, b)


# ---------------------------------------------------------------------------------------------- MovieLens 100K
def test_movielens_100k_weak_generalization_user_counts():
    from cofiviz.datasets import movielens_100k

    ml = movielens_100k()
    counts = ml.user_counts()
    assert len(ml) == 100_000 and np.count_nonzero(counts) == 943 and counts.min() == 20
    kept = {}
    for N in (10, 20, 50):
        c = P.cofirank_weak(ml, N, seed=0)
        l = P.lcr_weak(ml, N, seed=0)
        kept[N] = (c.protocol["sizes"]["train_users"], l.protocol["sizes"]["train_users"])
        assert kept[N][0] == int(np.sum(counts >= N + 10)) and kept[N][1] == int(np.sum(counts >= N + 20))
        assert len(c.train) == N * kept[N][0] and len(l.valid) == 10 * kept[N][1]
    print("\nMovieLens 100K users kept (CofiRank N+10, LCR N+20):",
          {N: {"cofirank_weak": a, "lcr_weak": b} for N, (a, b) in kept.items()})
    assert kept == {10: (943, 744), 20: (744, 645), 50: (497, 449)}
    s = P.strong_generalization(ml, seed=0)
    assert s.protocol["sizes"]["given_users"] == 100 and len(s.given) == 1000
    assert s.protocol["sizes"]["items"] == int(np.sum(ml.item_counts() >= 50))
    print("MovieLens 100K strong generalization:", s.protocol["sizes"], s.protocol["test_users"]["boundary_count"])


def test_gapfm_top_n_split_survives_files_and_the_command_line(tmp_path):
    """Its validation part holds unrated items (rating 0): written, read back and run on from the files."""
    import subprocess
    import sys

    from cofiviz.datasets import synthetic

    ratings = synthetic("popularity", n_users=80, n_items=120, density=0.35, seed=3)
    split = P.gapfm_top_n(ratings, n_train=5, n_negatives=30, n_valid=3, n_valid_negatives=10, seed=1)
    assert (split.valid.ratings == 0).any()
    d = split.write(tmp_path / "split")
    back = Split.read(d)
    for name in ("train", "valid", "test", "negatives"):
        assert getattr(back, name).equals(getattr(split, name)), name
    assert back.valid.allow_zero and not back.test.allow_zero
    run = subprocess.run([sys.executable, "-m", "cofiviz.cli", "run", "itemmean", "--train", str(d / "train.tsv"),
                          "--test", str(d / "test.tsv"), "--valid", str(d / "valid.tsv"), "--metrics", "gap@5",
                          "--quiet"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


# ---------------------------------------------------------------------------------------------- GAPfm on Netflix
@pytest.fixture(scope="module")
def netflix_files(tmp_path_factory):
    """A small data set written in the Netflix Prize's layout (5 % of the ratings in probe.txt) and read back."""
    from cofiviz.datasets import netflix_like, netflix_prize, write_netflix_prize

    r = netflix_like(n_ratings=40_000, n_users=300, n_items=500, seed=8)
    folder = write_netflix_prize(r, tmp_path_factory.mktemp("netflix"), probe_fraction=0.05, seed=1)
    return netflix_prize(folder)


def _pairs(r: Ratings | None) -> set:
    return set() if r is None else set(zip(r.user_ids[r.users].tolist(), r.item_ids[r.items].tolist()))


def test_gapfm_netflix_follows_the_papers_counts(netflix_files):
    r = netflix_files
    df = r.to_dataframe()
    df["probe"] = r.probe
    training = df[~df["probe"]].groupby("user").size().reindex(r.user_ids, fill_value=0)
    in_probe = df[df["probe"]].groupby("user").size().reindex(r.user_ids, fill_value=0)
    kept = set(training.index[training >= 50])
    tested = set(training.index[(training >= 50) & (in_probe >= 5)])
    assert 0 < len(tested) < len(kept) < r.n_users                      # every rule removes someone
    s = P.gapfm_netflix(r, n_train=10, n_negatives=100, seed=3)
    # users: every kept user has a Given-10 fold of training-set ratings, the others are filtered and named
    assert set(_per_user(s.train)) == kept and set(_per_user(s.train).values()) == {10}
    (dropped,) = [f for f in s.protocol["filters"] if f["step"] == "min_user_ratings"]
    assert set(dropped["user_ids"]) == set(r.user_ids.tolist()) - kept and dropped["users"] == r.n_users - len(kept)
    probe_pairs = set(zip(df.loc[df["probe"], "user"], df.loc[df["probe"], "item"]))
    assert not (_pairs(s.train) & probe_pairs)                         # Given N from the training set only
    # test: exactly the probe ratings of the users with at least 5 of them
    assert _pairs(s.test) == {(u, i) for u, i in probe_pairs if u in tested}
    assert set(_per_user(s.test)) == tested
    assert _triples(s.test) <= _triples(r)
    # negatives: 100 distinct items per test user (all of them when fewer), unrated in the training set and in the
    # probe set, among the movies with a rating; rating 0
    rated = set(zip(df["user"], df["item"]))
    negatives = s.negatives.to_dataframe()
    unrated = int(np.count_nonzero(r.item_counts())) - df.groupby("user").size()
    expected = {u: min(100, int(unrated[u])) for u in tested}
    assert negatives.groupby("user").size().to_dict() == {u: k for u, k in expected.items() if k}
    assert (unrated[list(tested)] < 100).any() and s.protocol["users_with_all_unrated"]["users"] > 0
    assert not (set(zip(negatives["user"], negatives["item"])) & rated) and (negatives["rating"] == 0).all()
    assert not negatives.duplicated(["user", "item"]).any()
    pr = s.protocol
    assert pr["name"] == "gapfm-netflix" and pr["params"]["relevance_threshold"] == 5.0 and s.valid is None
    assert pr["test_users"]["users"] == len(tested) and pr["test_users"]["kept_users_not_tested"] == len(kept - tested)
    assert pr["training_set"]["probe_ratings"] == int(r.probe.sum())
    assert pr["unused"]["training_ratings_outside_the_folds"] == int(training[list(kept)].sum()) - 10 * len(kept)
    assert pr["unused"]["probe_ratings_of_users_not_tested"] == int(in_probe[list(kept - tested)].sum())
    assert pr["dropped"]["ratings"] == len(r) - len(s.train) - len(s.test)
    json.dumps(pr)


def test_gapfm_netflix_is_seeded_and_validates(netflix_files, tmp_path):
    r = netflix_files
    a = P.make("gapfm-netflix", r, n_train=20, n_negatives=50, n_valid=5, seed=1)
    b = P.make("gapfm-netflix", r, n_train=20, n_negatives=50, n_valid=5, seed=1)
    c = P.make("gapfm-netflix", r, n_train=20, n_negatives=50, n_valid=5, seed=2)
    assert _same_split(a, b) and a.protocol == b.protocol and not _same_split(a, c)
    assert _triples(a.test) == _triples(c.test)                       # the probe set does not depend on the seed
    assert set(_per_user(a.valid).values()) == {5} and not (_pairs(a.valid) & (_pairs(a.train) | _pairs(a.test)))
    assert not (_pairs(a.valid) & _pairs(r.take(r.probe)))            # validation from the training set too
    a.write(tmp_path / "split")
    back = Split.read(tmp_path / "split")
    assert _same_split(a, back) and back.protocol == a.protocol
    # a user who rated nearly every movie gets every unrated one (the default), is left untested, or is an error
    heavy = P.gapfm_netflix(r, n_negatives=200, seed=0)
    assert 0 < heavy.protocol["users_with_all_unrated"]["users"] < heavy.protocol["test_users"]["users"]
    untested = P.gapfm_netflix(r, n_negatives=200, too_few_unrated="drop", seed=0)
    note = untested.protocol["not_tested_too_few_unrated"]
    assert note["users"] == heavy.protocol["users_with_all_unrated"]["users"]
    assert set(note["user_ids"]) <= set(_per_user(untested.train))
    assert not set(note["user_ids"]) & set(_per_user(untested.test))
    assert _triples(untested.train) == _triples(heavy.train)
    with pytest.raises(ParameterError, match="n_negatives=200 is more than the unrated items"):
        P.gapfm_netflix(r, n_negatives=200, too_few_unrated="error")


@pytest.mark.parametrize("params, error, match", [
    ({"n_train": 0}, ParameterError, "n_train must be an integer >= 1"),
    ({"min_probe": 0}, ParameterError, "min_probe must be an integer >= 1"),
    ({"n_valid": -1}, ParameterError, "n_valid must be an integer >= 0"),
    ({"too_few_unrated": "skip"}, ParameterError, "too_few_unrated must be one of"),
    ({"relevance_threshold": "high"}, ParameterError, "relevance_threshold must be a rating value"),
    ({"min_user_ratings": 10**6}, DataError, r"every user was dropped: .* ratings in the training set"),
    ({"min_probe": 10**6}, DataError, "no user kept has at least min_probe = 1000000 probe ratings"),
])
def test_gapfm_netflix_bad_parameters(netflix_files, params, error, match):
    with pytest.raises(error, match=match):
        P.make("gapfm-netflix", netflix_files, **params)


def test_gapfm_netflix_needs_the_probe_set(toy):
    with pytest.raises(DataError, match="these ratings have none: read them with cofiviz.datasets.netflix_prize"):
        P.gapfm_netflix(toy)
    toy_probe = toy.take(np.arange(len(toy)))
    toy_probe.probe = np.zeros(3, dtype=bool)
    with pytest.raises(DataError, match="ratings.probe must be a boolean array with one value per rating"):
        P.gapfm_netflix(toy_probe)
