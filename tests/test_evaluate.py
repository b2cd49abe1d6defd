"""cofiviz.evaluate: tidy per-user results and a summary that records the conditions of the numbers."""

from __future__ import annotations

import numpy as np
import pytest

import cofiviz
from cofiviz import Ratings, Split, evaluate
from cofiviz.util.errors import DataError, ParameterError
from cofiviz.evaluation import Evaluation, check_metrics, mean_metrics
from cofiviz.metrics import TIE_RULE, average_precision, ndcg, zero_one
from cofiviz.models import ItemMean, PopRec

from contract import planted


class Counting(ItemMean):
    """ItemMean that counts its score calls and can fold users in."""

    register = False

    def score(self, users, items):
        self.calls = getattr(self, "calls", 0) + 1
        return super().score(users, items)


class Folding(Counting):
    register = False

    def fold_in(self, given):
        self.folded = given


@pytest.fixture(scope="module")
def split():
    return planted(seed=2)


@pytest.fixture(scope="module")
def model(split):
    return ItemMean().fit(split.train)


def test_tidy_per_user_table_and_summary(model, split):
    ev = evaluate(model, split, metrics=["ndcg@10", "ap", "gap", "zero_one"])
    assert isinstance(ev, Evaluation)
    pu = ev.per_user
    assert list(pu.columns) == ["user", "metric", "value", "n_candidates"]
    assert set(pu["metric"]) == {"ndcg@10", "ap", "gap", "zero_one"}
    assert len(pu) == 4 * split.test.n_users
    assert set(pu["user"]) == set(split.test.user_ids.tolist())  # original ids, not indices
    assert (pu["n_candidates"] == 10).all()
    s = ev.summary
    for col in ("metric", "mean", "std", "n_users", "n_skipped", "protocol", "tie_rule", "threshold", "ymax"):
        assert col in s.columns
    assert list(s["metric"]) == ["ndcg@10", "ap", "gap", "zero_one"]
    assert (s["protocol"] == "planted").all() and (s["tie_rule"] == TIE_RULE).all()
    assert (s["threshold"] == 4.0).all() and (s["ymax"] == 5).all()
    assert (s["n_users"] + s["n_skipped"] == split.test.n_users).all()
    for row in s.itertuples():
        vals = pu.loc[pu["metric"] == row.metric, "value"]
        assert row.mean == pytest.approx(vals.mean())  # pandas skips NaN: the scored users' mean
        assert row.n_skipped == vals.isna().sum()
    assert ev.means["ndcg@10"] == ev["ndcg@10"] == s["mean"].iloc[0]
    assert ev.info["model"] == "itemmean" and ev.info["n_users"] == split.test.n_users
    assert "<table" in ev._repr_html_() and "ndcg@10" in repr(ev)


def test_values_match_the_single_list_metrics(model, split):
    ev = evaluate(model, split, metrics=["ndcg@10", "ap", "zero_one"])
    test, train = split.test, split.train
    for u in (0, 13, 59):
        sl, tl = test.user_slice(u), train.user_slice(u)
        y, s = test.ratings[sl], model.score(u, test.items[sl])
        ty, ts = train.ratings[tl], model.score(u, train.items[tl])
        uid = test.user_ids[u]
        got = ev.per_user.set_index(["user", "metric"])["value"]
        assert got[(uid, "ndcg@10")] == pytest.approx(ndcg(y, s, k=10))
        np.testing.assert_allclose(got[(uid, "ap")], average_precision(y, s, threshold=4))
        assert got[(uid, "zero_one")] == pytest.approx(zero_one(y, s, ty, ts))


def test_one_score_call_covers_every_pair(split):
    m = Counting().fit(split.train)
    m.calls = 0
    evaluate(m, split, metrics=["ndcg@10", "gap", "zero_one"])
    assert m.calls == 1


def test_skipped_users_are_counted_and_kept_as_nan(split):
    # user 0 gets only ratings below the threshold in test: AP cannot score that user
    t = split.test
    r = t.ratings.copy()
    r[t.user_slice(0)] = 2.0
    s2 = Split(train=split.train, test=t.like(t.users, t.items, r), protocol=split.protocol)
    ev = evaluate(ItemMean().fit(s2.train), s2, metrics=["ndcg@10", "ap"])
    ap = ev.per_user[ev.per_user["metric"] == "ap"].set_index("user")["value"]
    assert np.isnan(ap[t.user_ids[0]])
    row = ev.summary.set_index("metric").loc["ap"]
    assert row["n_skipped"] >= 1 and row["n_users"] + row["n_skipped"] == t.n_users


def test_sampled_negatives_join_the_test_lists(split):
    rng = np.random.default_rng(0)
    train, test = split.train, split.test
    users, items = [], []
    for u in range(train.n_users):
        rated = set(train.items[train.user_slice(u)].tolist()) | set(test.items[test.user_slice(u)].tolist())
        pool = np.array(sorted(set(range(train.n_items)) - rated))
        pick = rng.choice(pool, size=5, replace=False)
        users += [u] * 5
        items += pick.tolist()
    neg = train.like(users, items, np.zeros(len(users)), allow_zero=True)
    s2 = Split(train=train, test=test, negatives=neg, protocol={"name": "top-n", "params": {"relevance_threshold": 5}})
    ev = evaluate(PopRec().fit(train), s2, metrics=["ndcg@5", "p@5", "gap"])
    assert (ev.per_user["n_candidates"] == 15).all()
    assert ev.info["n_negatives"] == len(neg)
    assert (ev.summary["threshold"] == 5.0).all()  # the protocol's own relevance threshold
    assert (evaluate(PopRec().fit(train), s2, metrics=["p@5"], threshold=4).summary["threshold"] == 4.0).all()


def test_valid_and_train_parts(split):
    rng = np.random.default_rng(1)
    mask = rng.random(len(split.train)) < 0.3
    s2 = Split(train=split.train.take(~mask), test=split.test, valid=split.train.take(mask), protocol={"name": "x"})
    m = ItemMean().fit(s2.train)
    ev = evaluate(m, s2, part="valid", metrics="ndcg@10,ap")
    assert set(ev.summary["part"]) == {"valid"}
    assert ev.means["ndcg@10"] == pytest.approx(mean_metrics(m, s2.valid, ["ndcg@10"])["ndcg@10"])
    assert evaluate(m, s2, part="train", metrics=["ndcg@10"]).info["n_candidates"] == len(s2.train)
    with pytest.raises(DataError, match="no 'valid' part"):
        evaluate(m, split, part="valid")


def test_strong_generalization_folds_in_given_ratings():
    full = planted(seed=3, n_users=150, n_items=60, per_user=40)
    ratings = Ratings(np.concatenate([full.train.users, full.test.users]),
                      np.concatenate([full.train.items, full.test.items]),
                      np.concatenate([full.train.ratings, full.test.ratings]),
                      user_ids=full.train.user_ids, item_ids=full.train.item_ids, scale=(1, 5))
    split = cofiviz.protocols.strong_generalization(ratings, n_given=10, n_test_users=20, min_item_ratings=1)
    assert split.given is not None
    m = Folding().fit(split.train)
    ev = evaluate(m, split, metrics=["ndcg@10", "zero_one"])
    assert m.folded is split.given and ev.info["folded_in"]
    assert ev.info["n_users"] == 20
    # zero_one compares test items with the given ratings (the test users' only known ones)
    assert ev.summary.set_index("metric").loc["zero_one", "n_users"] == 20
    plain = evaluate(ItemMean().fit(split.train), split, metrics=["ndcg@10"])
    assert not plain.info["folded_in"]


def test_real_protocol_is_recorded(split):
    ratings = Ratings(np.concatenate([split.train.users, split.test.users]),
                      np.concatenate([split.train.items, split.test.items]),
                      np.concatenate([split.train.ratings, split.test.ratings]),
                      user_ids=split.train.user_ids, item_ids=split.train.item_ids, scale=(1, 5))
    weak = cofiviz.protocols.cofirank_weak(ratings, n_train=10, seed=0)
    ev = cofiviz.evaluate(ItemMean().fit(weak.train), weak)
    assert set(ev.summary["protocol"]) == {"cofirank-weak"}
    assert ev.info["protocol"]["seed"] == 0


def test_bad_arguments_are_clear_errors(model, split):
    with pytest.raises(ParameterError) as err:
        evaluate(model, split, metrics=["ndcg@10", "accuracy"])
    assert "accuracy" in str(err.value) and "ndcg@K" in str(err.value) and "zero_one" in str(err.value)
    with pytest.raises(ParameterError, match="needs a cutoff"):
        check_metrics(["p"])
    with pytest.raises(ParameterError):
        check_metrics([])
    with pytest.raises(ParameterError, match="part"):
        evaluate(model, split, part="holdout")
    with pytest.raises(ParameterError, match="threshold"):
        evaluate(model, split, threshold=float("nan"))
    with pytest.raises(ParameterError, match="model"):
        evaluate("itemmean", split)
    with pytest.raises(ParameterError, match="Split"):
        evaluate(model, split.test)
    with pytest.raises(DataError, match="not fitted"):
        evaluate(ItemMean(), split)
    other = planted(seed=2, n_items=90)
    with pytest.raises(DataError, match="index space"):
        evaluate(model, other)


def test_check_metrics_canonicalises_and_dedupes():
    assert check_metrics("NDCG@10, ap,ndcg@10,Zero-One") == ["ndcg@10", "ap", "zero_one"]


@pytest.mark.parametrize("block", [1, 7, 64, 10**9])
def test_scoring_a_block_of_users_at_a_time_gives_every_users_values(split, block):
    """``per_user_metrics`` scores at most ``block`` candidate (and training) pairs per ``model.score`` call, a user
    with more in a call alone: every user's values are those of one call over every list, the GAP family's and
    ERR's top grade that of all the lists, zero-one's training pairs those of the same users."""
    from cofiviz.metrics.scorer import per_user_metrics, user_blocks
    from cofiviz.models import RegSVD

    model = RegSVD(rank=3, max_iter=3, seed=1).fit(split.train)
    metrics = ["ndcg@10", "ap", "gap", "err@5", "zero_one"]
    whole = per_user_metrics(model, split.test, metrics, train=split.train, ymax=None, block=10**12)
    counting = Counting().fit(split.train)
    got = per_user_metrics(model, split.test, metrics, train=split.train, ymax=None, block=block)
    for m in metrics:
        np.testing.assert_array_equal(got[m], whole[m], err_msg=m)
    per_user_metrics(counting, split.test, ["ndcg@10"], block=block)
    sizes = np.concatenate([[0], np.cumsum(np.diff(split.test.indptr))])
    assert counting.calls == len(user_blocks(sizes, block))
    blocks = user_blocks(sizes, block)
    assert blocks[0][0] == 0 and blocks[-1][1] == split.test.n_users
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert all(sizes[u1] - sizes[u0] <= block or u1 == u0 + 1 for u0, u1 in blocks)


@pytest.mark.parametrize("block", [1, 7, 10**12])
def test_scores_given_beforehand_are_looked_up_by_pair_whatever_the_blocks(split, block):
    """Another program's predictions, one per test pair, score as the model that made them would, block by block;
    a pair without a score and a wrong number of scores are refused."""
    from cofiviz.metrics import PairScores
    from cofiviz.metrics.scorer import per_user_metrics
    from cofiviz.models import RegSVD

    model = RegSVD(rank=3, max_iter=3, seed=1).fit(split.train)
    given = model.score(split.test.users, split.test.items)
    want = per_user_metrics(model, split.test, ["ndcg@10", "ap"], block=10**12)
    got = per_user_metrics(PairScores(split.test, given), split.test, ["ndcg@10", "ap"], block=block)
    for m in want:
        np.testing.assert_array_equal(got[m], want[m], err_msg=m)
    fixed = PairScores(split.test, given)
    np.testing.assert_array_equal(fixed.score(split.test.users[::-1], split.test.items[::-1]), given[::-1])
    with pytest.raises(DataError, match="one score per pair"):
        PairScores(split.test, given[:-1])
    unscored = np.setdiff1d(np.arange(split.test.n_items), split.test.items[split.test.user_slice(0)])[0]
    with pytest.raises(DataError, match=f"user 0, item {unscored}"):
        fixed.score([0], [unscored])
