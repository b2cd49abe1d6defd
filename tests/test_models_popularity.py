"""PopRec and ItemMean: the shared model contract, their formulas, and ItemMean's strength on MovieLens."""

from __future__ import annotations

import numpy as np
import pytest

from cofiviz import Ratings
from cofiviz.util.errors import ParameterError
from cofiviz.models import ItemMean, PopRec

from contract import ModelContract, planted


class TestPopRecContract(ModelContract):
    bad_params = [{"seed": -1}, {"tie_break": "coin"}]

    def make_model(self, **params):
        return PopRec(**params)


class TestItemMeanContract(ModelContract):
    bad_params = [{"seed": -1}, {"damping": -1.0}, {"damping": "strong"}]

    def make_model(self, **params):
        return ItemMean(**params)


def _toy() -> Ratings:
    # item 0: 3 ratings (5, 5, 4); item 1: 3 ratings (1, 2, 1); item 2: 1 rating (5); item 3: none
    users = [0, 1, 2, 0, 1, 2, 3]
    items = [0, 0, 0, 1, 1, 1, 2]
    ratings = [5, 5, 4, 1, 2, 1, 5]
    return Ratings(users, items, ratings, user_ids=["a", "b", "c", "d"], item_ids=["w", "x", "y", "z"], scale=(1, 5))


def test_poprec_ranks_by_count_and_breaks_ties_by_mean():
    model = PopRec().fit(_toy())
    s = model.score(0, np.arange(4))
    assert s[0] > s[1] > s[2] > s[3] == 0.0  # equal counts (0, 1): higher mean first; unseen last
    assert np.floor(s).tolist() == [3, 3, 1, 0]
    plain = PopRec(tie_break="none").fit(_toy()).score(0, np.arange(4))
    assert plain.tolist() == [3.0, 3.0, 1.0, 0.0]


def test_itemmean_is_the_damped_mean():
    train = _toy()
    mu = train.ratings.mean()
    for d in (0.0, 1.0, 10.0):
        s = ItemMean(damping=d).fit(train).score(0, np.arange(4))
        expect = [(14 + d * mu) / (3 + d), (4 + d * mu) / (3 + d), (5 + d * mu) / (1 + d), mu]
        np.testing.assert_allclose(s, expect)
    # strong damping trusts the 3 ratings of item 0 over the single 5 of item 2; none trusts the 5
    assert ItemMean(damping=5).fit(train).score(0, 0) > ItemMean(damping=5).fit(train).score(0, 2)
    assert ItemMean(damping=0).fit(train).score(0, 2) > ItemMean(damping=0).fit(train).score(0, 0)


def test_non_iterative_models_hide_loop_parameters():
    for klass in (PopRec, ItemMean):
        assert klass.iterative is False
        for p in ("max_iter", "patience", "valid_metric", "seed"):
            assert klass.param[p].precedence == -1
    assert ItemMean.param["damping"].bounds == (0.0, None)
    with pytest.raises(ParameterError, match="tie_break"):
        PopRec(tie_break="random")


def test_popularity_learns_the_planted_popularity():
    split = planted(seed=1)
    from cofiviz.evaluation import mean_metrics

    pop = mean_metrics(PopRec().fit(split.train), split.test, ["ndcg@10"])["ndcg@10"]
    mean = mean_metrics(ItemMean().fit(split.train), split.test, ["ndcg@10"])["ndcg@10"]
    assert pop > 0.7 and mean > 0.7


# ---------------------------------------------------------------------------------- real MovieLens 100K
@pytest.fixture(scope="module")
def movielens():
    from cofiviz.datasets import movielens_100k

    return movielens_100k()


def test_itemmean_on_movielens(movielens):
    """ItemMean ≥ 0.69 NDCG@10 under CofiRank weak generalization (N = 10, seed 0), above PopRec and random."""
    from cofiviz import evaluate, protocols
    from cofiviz.metrics import score_lists

    split = protocols.cofirank_weak(movielens, n_train=10, seed=0)
    assert split.test.n_users == 943
    item_mean = evaluate(ItemMean().fit(split.train), split, metrics=["ndcg@10"]).means["ndcg@10"]
    pop = evaluate(PopRec().fit(split.train), split, metrics=["ndcg@10"]).means["ndcg@10"]
    t = split.test
    rng = np.random.default_rng(0)
    rand = np.mean([np.nanmean(score_lists(t.indptr, t.ratings, rng.random(len(t)), ["ndcg@10"])["ndcg@10"])
                    for _ in range(5)])
    assert item_mean >= 0.69
    assert item_mean > pop + 0.05 > rand + 0.05


def test_default_damping_is_what_validation_picks(movielens):
    """The default sits on the validation optimum's plateau (LCR weak validation part; test untouched)."""
    from cofiviz import evaluate, protocols

    split = protocols.lcr_weak(movielens, n_train=10, seed=0)
    grid = [0, 2, 5, 10, 20, 50, 100]
    valid = {d: evaluate(ItemMean(damping=d).fit(split.train), split, metrics=["ndcg@10"], part="valid")
             .means["ndcg@10"] for d in grid}
    assert valid[ItemMean().damping] >= max(valid.values()) - 0.002
    assert valid[ItemMean().damping] > valid[0] + 0.005
