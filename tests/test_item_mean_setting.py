"""Every ranking model can be reduced to the damped item mean (``item_mean_setting``), so that a search can
always fall back on the baseline: at that setting it ranks each user's items as :class:`ItemMean` does, saved
and loaded too, and :func:`cofiviz.search.tuning.tune` tries it and says in plain words when it wins."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cofiviz import Ratings
from cofiviz.models import ItemMean, available_models, get_model_class
from cofiviz.models.popularity import damped_item_mean
from cofiviz.search.tuning import ITEM_MEAN_DAMPINGS, anchors, tune

from contract import planted

RANKERS = ("cofirank", "gcr", "lcr", "llorma", "gapfm", "bilinear", "mmmf", "wlt")
WITH_SETTING = [name for name in available_models() if get_model_class(name).item_mean_setting is not None]
#: the smallest difference of two items' damped means whose order is checked: WLT's weights are held near 0,
#: not at 0, so they may order items whose means (nearly) tie
GAP = 1e-3


@pytest.fixture(scope="module")
def split():
    return planted(seed=4, n_users=40, n_items=50, per_user=20, n_test=6)


def test_every_ranking_model_has_an_item_mean_setting():
    assert set(RANKERS) <= set(WITH_SETTING)


def _small(name: str, **params):
    klass = get_model_class(name)
    small = {"n_local": 3} if "n_local" in klass.param_names() else {}
    return klass(**{**small, "max_iter": 5, **params})


@pytest.mark.parametrize("damping", [0.0, 10.0])
@pytest.mark.parametrize("name", WITH_SETTING)
def test_at_its_item_mean_setting_a_model_orders_items_as_the_damped_item_mean(split, name, damping, tmp_path):
    klass = get_model_class(name)
    model = _small(name, **klass.item_mean_setting, prior_damping=damping).fit(split.train)
    means = damped_item_mean(split.train, damping)
    assert np.allclose(ItemMean(damping=damping).fit(split.train).score(0, np.arange(len(means))), means)
    users, items = np.meshgrid(np.arange(split.train.n_users), np.arange(split.train.n_items), indexing="ij")
    scores = model.score(users, items)
    d_mean = means[:, None] - means[None, :]
    checked = np.abs(d_mean) > GAP
    assert checked.sum() > 100
    for u in range(split.train.n_users):
        d_score = scores[u][:, None] - scores[u][None, :]
        wrong = checked & (np.sign(d_score) != np.sign(d_mean))
        assert not wrong.any(), f"{name}: user {u} orders {int(wrong.sum())} pairs unlike the item mean"
    model.save(tmp_path / "m")
    np.testing.assert_array_equal(type(model).load(tmp_path / "m").score(users, items), scores)


def test_anchors_hold_the_item_mean_setting_at_every_damping_unless_a_parameter_is_fixed():
    klass = get_model_class("gapfm")
    got = anchors(klass)
    item_mean = [a for a in got if a.get("rank") == 0]
    assert [a["prior_damping"] for a in item_mean] == list(ITEM_MEAN_DAMPINGS)
    assert all({k: a[k] for k in klass.item_mean_setting} == klass.item_mean_setting for a in item_mean)
    assert not [a for a in anchors(klass, fixed=("rank",)) if a.get("rank") == 0]


def _item_quality_only(seed: int = 0) -> Ratings:
    """Ratings that are item quality plus noise: no user taste for factors to find."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(3.0, 1.0, 60)
    users, items = [], []
    for u in range(80):
        chosen = rng.choice(60, 25, replace=False)
        users += [u] * len(chosen)
        items += list(chosen)
    users, items = np.array(users), np.array(items)
    ratings = np.clip(np.rint(quality[items] + rng.normal(0, 0.7, len(items))), 1, 5)
    return Ratings.from_dataframe(pd.DataFrame({"user": users, "item": items, "rating": ratings}), scale=(1, 5))


def test_a_search_on_ratings_without_taste_keeps_the_item_mean_and_says_so():
    from cofiviz.protocols import weak_generalization

    split = weak_generalization(_item_quality_only(), n_train=8, seed=0)
    model = _small("gapfm", rank=5, item_prior=0.0, learning_rate=0.5)
    out = tune(model, split.train, budget=60, trials=10, seed=0)
    assert out.check["item_mean"], out.summary()
    assert model.rank == 0 and model.item_prior == 1.0
    assert out.summary().startswith("With these ratings the item mean alone ranks best on validation")
    assert "the factors add nothing" in out.summary()


def test_a_search_whose_factors_beat_the_item_mean_on_both_halves_chooses_them_and_says_by_how_much():
    """Planted rank-2 taste beside item quality (:func:`contract.planted`): what the item mean cannot rank, on
    validation lists long enough (15 ratings of 200 users) for the gain to clear the noise."""
    split = planted(seed=0, n_users=200, n_items=80, per_user=40, n_test=15, rank=2)
    model = _small("mmmf", rank=5, max_iter=50)
    out = tune(model, split.train, split.test, budget=60, trials=8, seed=0)
    gains, gain, noise = out.check["item_mean_gains"], out.check["item_mean_gain"], out.check["item_mean_noise"]
    assert not out.check["item_mean"] and min(gains) > 0 and gain > noise > 0, out.summary()
    assert model.rank == 5
    assert f"It beat the item mean alone (trial {out.check['item_mean_trial']}) by {gains[0]:+.4f}" in out.summary()


def test_the_gain_over_the_item_mean_and_its_noise_are_the_out_of_selection_differences_of_all_users():
    """By hand: users of half A take the best of B minus the reference (0.2, 0.2, 0.2), users of half B the best
    of A minus it (0.1, 0.3, NaN left out): mean 0.2, noise z·sd/√n of those five; signs flip for a
    lower-is-better metric."""
    from cofiviz.search import ITEM_MEAN_Z, cross_checked_noise

    in_a = np.array([True, True, True, False, False, False])
    ref = np.zeros(6)
    best_a = np.array([0.9, 0.9, 0.9, 0.1, 0.3, np.nan])
    best_b = np.array([0.2, 0.2, 0.2, 0.9, 0.9, 0.9])
    d = [0.2, 0.2, 0.2, 0.1, 0.3]
    gain, noise = cross_checked_noise(ref, best_a, best_b, in_a)
    assert gain == pytest.approx(0.2)
    assert noise == pytest.approx(ITEM_MEAN_Z * np.std(d, ddof=1) / np.sqrt(5))
    assert cross_checked_noise(ref, best_a, best_b, in_a, lower_is_better=True) == pytest.approx((-0.2, noise))
    assert np.isnan(cross_checked_noise(ref[:1], best_a[:1], best_b[:1], in_a[:1])[1])


def test_gains_within_the_noise_keep_the_item_mean_and_the_summary_says_by_how_much():
    """Planted rank-2 taste, but 30 users with 6 validation ratings each: the halves are too small for the
    factors' gains over the item mean to clear the noise, and the item mean is kept."""
    split = planted(seed=1, n_users=30, n_items=40, per_user=14, n_test=6)
    out = tune(_small("gcr", rank=5), split.train, split.test, budget=60, trials=12, seed=0)
    gains, gain, noise = out.check["item_mean_gains"], out.check["item_mean_gain"], out.check["item_mean_noise"]
    assert out.check["item_mean"] == (not (min(gains) > 0 and gain > noise))
    if out.check["item_mean"] and max(gains) > 0:
        assert "within the noise" in out.summary()
