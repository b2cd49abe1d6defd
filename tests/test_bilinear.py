"""The bilinear rank functional with side features ("The rank 1 problem"): the model contract, the gradient of its
objective by finite differences for every loss family and feature mode, feature encoding, learning planted
structure (beats random and PopRec; the ordered-partition and smoothed-rank objectives beat random), side
features helping new users under strong generalization, ties used versus dropped, fold-in, and the command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cofiviz import Ratings, Split, evaluate, protocols
from cofiviz.util.errors import DataError, ParameterError
from cofiviz.evaluation import mean_metrics
from cofiviz.models import Bilinear, PopRec
from cofiviz.models.base import Model
from cofiviz.models.bilinear import BILINEAR_LOSSES, encode_features

from contract import ModelContract, planted, random_ndcg

#: side features on, a light penalty and no item-mean offset: the model whose parts the tests below check
#: (the defaults add the damped item mean, which leaves little for the factors of small planted tables to learn)
PLAIN = {"features": "both", "reg": 0.1, "item_prior": 0.0}


def plain(**params) -> Bilinear:
    return Bilinear(**{**PLAIN, **params})


class TestBilinearContract(ModelContract):
    bad_params = [{"seed": -1}, {"rank": -1}, {"lr": 0.0}, {"reg": -1.0}, {"theta": 1.0}, {"nu": 0.0},
                  {"loss": "squared"}, {"features": "some"}, {"pl_ties": "random"}, {"ties": "keep"},
                  {"gamma": 0.0}, {"gamma": -1.0}]
    diverging_params = {"lr": 1e6}

    def make_model(self, **params):
        return Bilinear(**{"rank": 3, "max_iter": 30, **params})


class TestBilinearRaoKupperContract(ModelContract):
    bad_params = [{"seed": -1}, {"theta": 0.5}]
    diverging_params = {"lr": 100.0, "solver": "gd"}

    def make_model(self, **params):
        return Bilinear(**{"rank": 3, "max_iter": 30, "loss": "rao_kupper", **params})


# ---------------------------------------------------------------------------------------------- data
def featured(seed: int = 0, n_users: int = 240, n_items: int = 60, per_user: int = 30, n_groups: int = 4,
             n_genres: int = 4, noise: float = 0.3) -> Ratings:
    """Ratings driven by side features: a user's group × an item's genre affinity decides the rating.

    Every genre is liked by some groups and disliked by others (the affinity matrix has zero column
    means), so item popularity says nothing about a user's taste; how often an item is rated is random.
    """
    rng = np.random.default_rng(seed)
    group = rng.integers(0, n_groups, n_users)
    genre = np.arange(n_items) % n_genres
    A = rng.normal(size=(n_groups, n_genres))
    A -= A.mean(axis=0, keepdims=True)
    A /= A.std()
    weight = rng.uniform(0.5, 1.5, n_items)
    users, items, ratings = [], [], []
    for u in range(n_users):
        its = np.sort(rng.choice(n_items, per_user, replace=False, p=weight / weight.sum()))
        raw = 3.0 + 1.3 * A[group[u], genre[its]] + rng.normal(scale=noise, size=per_user)
        users.append(np.full(per_user, u))
        items.append(its)
        ratings.append(np.clip(np.round(raw), 1, 5))
    users, items, ratings = map(np.concatenate, (users, items, ratings))
    user_info = pd.DataFrame({"user": np.arange(n_users), "group": [f"g{g}" for g in group],
                              "zip": [f"{z:05d}" for z in rng.integers(0, 99999, n_users)]})
    item_info = pd.DataFrame({"item": np.arange(n_items), "title": [f"item {i}" for i in range(n_items)],
                              "genre": [f"k{k}" for k in genre]})
    return Ratings(users, items, ratings, user_ids=np.arange(n_users), item_ids=np.arange(n_items), scale=(1, 5),
                   user_info=user_info, item_info=item_info, name="featured")


@pytest.fixture(scope="module")
def feat_ratings():
    return featured(seed=0)


@pytest.fixture(scope="module")
def strong(feat_ratings):
    return protocols.strong_generalization(feat_ratings, n_given=3, n_test_users=60, min_item_ratings=20, seed=0)


def _unused(model: Bilinear, key: str) -> bool:
    """Latent parts of a side without ids (``features="given"``) are not parameters of the model."""
    side = {"U": "user", "V": "item", "c": "item"}.get(key)
    return side is not None and not model.sides_[f"{side}_latent"]


def _randomised(model: Bilinear, seed: int = 1):
    rng = np.random.default_rng(seed)
    for key in ("U", "V", "W", "H", "c", "d"):
        arr = getattr(model, f"{key}_")
        if _unused(model, key):
            continue
        arr[...] = rng.normal(scale=0.6, size=arr.shape)
    return model


def _small_featured() -> Ratings:
    r = featured(seed=3, n_users=8, n_items=10, per_user=6)
    return r


# ---------------------------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("loss, extra", [("plackett_luce", {}), ("plackett_luce", {"pl_ties": "efron"}),
                                         ("plackett_luce", {"pl_ties": "partition"}),
                                         ("plackett_luce", {"pl_ties": "partition_product"}),
                                         ("smoothed_rank", {"gamma": 1.7}), ("rao_kupper", {"theta": 1.7}), ("davidson", {"nu": 0.6}),
                                         ("rao_kupper", {"ties": "drop"}), ("log_m", {"margin": 0.3}),
                                         ("log_a", {}), ("exp_a", {}), ("plackett_luce", {"item_prior": 1.5}),
                                         ("log_m", {"item_prior": 2.0, "prior_damping": 3.0})])
@pytest.mark.parametrize("features", ["both", "latent", "given"])
def test_gradient_by_central_differences(loss, extra, features):
    train = _small_featured()
    m = plain(rank=2, max_iter=1, loss=loss, features=features, reg=0.3, reg_bias=0.2, **extra).fit(train)
    _randomised(m)
    grads = m.gradient()
    h = 1e-6
    rng = np.random.default_rng(0)
    checked = 0
    for key in ("U", "V", "W", "H", "c", "d"):
        arr = getattr(m, f"{key}_")
        if arr.size == 0:
            continue
        for flat in rng.choice(arr.size, size=min(4, arr.size), replace=False):
            idx = np.unravel_index(flat, arr.shape)
            old = arr[idx]
            arr[idx] = old + h
            up = m.objective()
            arr[idx] = old - h
            down = m.objective()
            arr[idx] = old
            fd = (up - down) / (2 * h)
            if _unused(m, key):
                assert grads[key][idx] == 0.0      # an unused part is not learned
                continue
            assert grads[key][idx] == pytest.approx(fd, rel=1e-5, abs=1e-6), (key, idx)
            checked += 1
    assert checked >= 8


# ---------------------------------------------------------------------------------------------- features
def test_encode_features_auto_and_named_columns():
    info = pd.DataFrame({"user": [1, 2, 3, 4], "age": [20, 35, 50, 65], "gender": ["M", "F", "F", "M"],
                         "zip": ["a", "b", "c", "d"], "flag": [True, False, True, False]})
    X, names = encode_features(info, "auto", bins=3)
    assert X.shape[0] == 4 and "flag" in names and "gender=F" in names
    assert not any(n.startswith(("user", "zip")) for n in names)
    assert set(np.unique(X)) <= {0.0, 1.0}
    age_cols = [k for k, n in enumerate(names) if n.startswith("age=")]
    assert len(age_cols) == 3 and np.all(X[:, age_cols].sum(axis=1) == 1)
    X2, names2 = encode_features(info, "gender")
    assert names2 == ["gender=F", "gender=M"] and X2.shape == (4, 2)
    assert encode_features(info, "gender+flag")[1] == encode_features(info, "gender, flag")[1] == names2 + ["flag"]
    assert encode_features(info, "none")[0].shape == (4, 0)
    assert encode_features(None, "auto")[0].shape == (0, 0)
    with pytest.raises(DataError, match="user_features.*occupation"):
        encode_features(info, "occupation")


def test_feature_modes_and_their_errors(feat_ratings):
    m = plain(rank=2, max_iter=2).fit(feat_ratings)
    assert m.user_feature_names_ == ["group=g0", "group=g1", "group=g2", "group=g3"]
    assert m.item_feature_names_ == ["genre=k0", "genre=k1", "genre=k2", "genre=k3"]
    assert m.sides_ == {"user_latent": True, "item_latent": True, "user_features": True, "item_features": True}
    g = plain(rank=2, max_iter=2, features="given").fit(feat_ratings)
    assert not g.sides_["user_latent"] and not g.sides_["item_latent"]
    assert np.all(g.U_ == 0) and np.all(g.V_ == 0)
    lat = plain(rank=2, max_iter=2, features="latent").fit(feat_ratings)
    assert lat.X_.shape[1] == 0 and lat.Z_.shape[1] == 0
    only_items = plain(rank=2, max_iter=2, features="given", user_features="none").fit(feat_ratings)
    assert only_items.sides_["user_latent"] and not only_items.sides_["item_latent"]
    no_sides = planted(seed=0).train                   # no side tables
    assert plain(rank=2, max_iter=2).fit(no_sides).X_.shape[1] == 0
    with pytest.raises(DataError, match="features='given'"):
        plain(rank=2, max_iter=2, features="given").fit(no_sides)
    with pytest.raises(DataError, match="item_features"):
        plain(rank=2, max_iter=2, item_features="colour").fit(feat_ratings)


def test_save_load_keeps_features_and_feature_names(feat_ratings, tmp_path):
    m = plain(rank=3, max_iter=5).fit(feat_ratings)
    m.save(tmp_path / "bl")
    back = Model.load(tmp_path / "bl")
    assert back.user_feature_names_ == m.user_feature_names_
    np.testing.assert_array_equal(back.X_, m.X_)
    np.testing.assert_array_equal(back.score(np.arange(20), np.arange(20)), m.score(np.arange(20), np.arange(20)))


# ---------------------------------------------------------------------------------------------- learning
@pytest.fixture(scope="module")
def planted_split():
    return planted(seed=0)


@pytest.mark.parametrize("loss", ["plackett_luce", "rao_kupper", "davidson", "log_m", "hinge_a"])
def test_every_loss_learns_planted_structure_and_beats_random_and_poprec(planted_split, loss):
    s = planted_split
    m = plain(rank=3, loss=loss, max_iter=150, tol=0, lr=0.05).fit(s.train)
    losses = [h["loss"] for h in m.history_]
    assert losses[-1] < losses[0]
    got = mean_metrics(m, s.test, ["ndcg@10"])["ndcg@10"]
    pop = mean_metrics(PopRec().fit(s.train), s.test, ["ndcg@10"])["ndcg@10"]
    assert got > random_ndcg(s) + 0.05
    assert got > pop + 0.01, (got, pop)


@pytest.mark.parametrize("loss, extra", [("plackett_luce", {"pl_ties": "partition"}),
                                         ("plackett_luce", {"pl_ties": "partition_product"}),
                                         ("smoothed_rank", {"gamma": 1.0, "reg": 0.01, "reg_bias": 0.01})])
def test_the_ordered_partition_and_smoothed_rank_objectives_learn_planted_structure(planted_split, loss, extra):
    """The settings of the test above; the smoothed NDCG loss of a user is at most about 1 and is not divided by
    the list's length, so its gradients are smaller than the likelihoods' and λ = 0.1 would outweigh them: it
    gets λ = 0.01."""
    s = planted_split
    m = plain(rank=3, loss=loss, max_iter=150, tol=0, lr=0.05, **extra).fit(s.train)
    losses = [h["loss"] for h in m.history_]
    assert losses[-1] < losses[0]
    got = mean_metrics(m, s.test, ["ndcg@10"])["ndcg@10"]
    assert got > random_ndcg(s) + 0.05, (got, random_ndcg(s))


def test_gamma_is_the_smoothed_rank_scale_and_margin_the_surrogates():
    s = planted(seed=1)
    fit = lambda **p: plain(rank=2, max_iter=5, seed=0, **p).fit(s.train).score(s.test.users, s.test.items)  # noqa: E731
    np.testing.assert_array_equal(fit(loss="log_m", gamma=5.0), fit(loss="log_m", gamma=0.5))
    np.testing.assert_array_equal(fit(loss="smoothed_rank", margin=1.0), fit(loss="smoothed_rank", margin=0.0))
    assert not np.allclose(fit(loss="smoothed_rank", gamma=5.0), fit(loss="smoothed_rank", gamma=0.5))
    assert not np.allclose(fit(pl_ties="partition"), fit(pl_ties="breslow"))


def test_the_smoothed_rank_needs_ratings_that_are_not_negative():
    r = Ratings([0, 0, 1, 1], [0, 1, 0, 1], [-1.0, 2.0, 0.5, 3.0], user_ids=[1, 2], item_ids=[1, 2])
    with pytest.raises(DataError, match="smoothed_rank.*>= 0.*-1"):
        plain(loss="smoothed_rank", max_iter=2).fit(r)
    plain(loss="plackett_luce", max_iter=2).fit(r)


def test_side_features_help_new_users(strong):
    """Strong generalization with 3 given ratings: features that drive the ratings beat ids alone and PopRec."""
    s = strong
    assert s.given is not None and s.train.user_info is not None
    res = {}
    for feats in ("both", "given", "latent"):
        m = plain(rank=4, features=feats, max_iter=120, tol=0, seed=0).fit(s.train)
        res[feats] = evaluate(m, s, metrics=["ndcg@10"])["ndcg@10"]
    res["poprec"] = evaluate(PopRec().fit(s.train), s, metrics=["ndcg@10"])["ndcg@10"]
    test_only = Split(train=s.train, test=s.test, protocol={"name": "t"})
    res["random"] = random_ndcg(test_only)
    assert res["both"] > res["latent"] + 0.03, res
    assert res["given"] > res["latent"] + 0.03, res
    assert res["both"] > res["poprec"] + 0.05, res
    assert res["latent"] > res["random"], res


def test_fold_in_touches_only_new_users_and_uses_their_ratings(strong):
    s = strong
    m = plain(rank=4, features="latent", max_iter=40, seed=0).fit(s.train)
    before = m.U_.copy()
    V = m.V_.copy()
    m.fold_in(s.given)
    new = s.given.user_counts() > 0
    np.testing.assert_array_equal(m.U_[~new], before[~new])
    np.testing.assert_array_equal(m.V_, V)
    assert m.folded_in_ == {"n_users": int(new.sum()), "steps": m.fold_in_iter}
    # the folded-in users rank their own given items better than the unfolded (zero) ones would
    g = s.given
    fitted = mean_metrics(m, g, ["ndcg@10"])["ndcg@10"]
    m.U_[new] = 0.0
    assert fitted > mean_metrics(m, g, ["ndcg@10"])["ndcg@10"]
    with pytest.raises(DataError, match="index space"):
        m.fold_in(planted(seed=0).train)
    # a larger fold-in penalty keeps the new users closer to the feature-only (here: zero) prediction
    norm = np.linalg.norm(m.fold_in(s.given).U_[new], axis=1).mean()
    m.fold_in_reg = 10 * m.reg
    assert np.linalg.norm(m.fold_in(s.given).U_[new], axis=1).mean() < norm


def test_ties_used_and_dropped_are_different_fits():
    s = planted(seed=2)
    used = plain(rank=3, loss="davidson", ties="use", max_iter=20).fit(s.train)
    dropped = plain(rank=3, loss="davidson", ties="drop", max_iter=20).fit(s.train)
    assert not np.allclose(used.score(s.test.users, s.test.items), dropped.score(s.test.users, s.test.items))
    # the surrogates ignore `ties` (they always drop equal ratings)
    a = plain(rank=3, loss="log_m", ties="use", max_iter=5).fit(s.train)
    b = plain(rank=3, loss="log_m", ties="drop", max_iter=5).fit(s.train)
    np.testing.assert_array_equal(a.score(s.test.users, s.test.items), b.score(s.test.users, s.test.items))


def test_a_table_without_usable_pairs_is_a_clear_error():
    r = Ratings([0, 0, 1, 1], [0, 1, 0, 1], [3.0, 3.0, 4.0, 4.0], user_ids=[1, 2], item_ids=[1, 2])
    for params in ({"loss": "plackett_luce"}, {"loss": "plackett_luce", "pl_ties": "partition"},
                   {"loss": "smoothed_rank"}):
        with pytest.raises(DataError, match="two training ratings"):
            plain(max_iter=2, **params).fit(r)
    plain(loss="davidson", max_iter=2).fit(r)   # ties are usable evidence
    zeros = Ratings([0, 0, 1, 1], [0, 1, 0, 1], [0.0, 0.0, 0.0, 0.0], user_ids=[1, 2], item_ids=[1, 2])
    with pytest.raises(DataError, match="above 0"):
        plain(loss="smoothed_rank", max_iter=2).fit(zeros)


def test_every_loss_is_a_parameter_value():
    assert set(BILINEAR_LOSSES) >= {"plackett_luce", "smoothed_rank", "rao_kupper", "davidson", "log_m", "hinge_a"}
    with pytest.raises(ParameterError, match="loss"):
        Bilinear(loss="listnet")
    assert Bilinear(pl_ties="partition").pl_ties == "partition"
    assert "smoothed_rank" in Bilinear.search_space["loss"].values and "gamma" in Bilinear.search_space


# ---------------------------------------------------------------------------------------------- command line
@pytest.mark.parametrize("loss", ["plackett_luce", "rao_kupper", "davidson", "smoothed_rank"])
def test_cli_runs_bilinear_with_each_new_loss(tmp_path, loss):
    from cofiviz.cli import main

    s = planted(seed=4)
    s.train.write(tmp_path / "train.tsv")
    s.test.write(tmp_path / "test.tsv")
    out = tmp_path / "out.json"
    argv = ["run", "bilinear", "--train", str(tmp_path / "train.tsv"), "--test", str(tmp_path / "test.tsv"),
            "--set", f"loss={loss}", "--set", "max_iter=20", "--set", "theta=1.5", "--json", str(out), "--quiet"]
    assert main(argv) == 0
    res = json.loads(out.read_text())
    assert res["model"] == "bilinear" and res["params"]["loss"] == loss and res["params"]["theta"] == 1.5
    assert 0.0 < res["metrics"]["ndcg@10"] <= 1.0
    assert len(res["iterations"]) >= 1


# ---------------------------------------------------------------------------------------------- item-mean offset
def test_item_offsets_are_the_damped_item_mean_and_shrunk_parts_leave_its_ranking(tmp_path):
    """``item_prior=β`` adds β·(m̃_i − μ) to every score (m̃: the item mean damped by ``prior_damping``). Under
    heavy penalties the learned parts vanish and the scores are the offsets; the offsets are saved and loaded."""
    from cofiviz.models import ItemMean

    train = _small_featured()
    items = np.arange(train.n_items)
    want = 1.5 * (ItemMean(damping=4.0).fit(train).score(np.zeros(train.n_items, int), items) - train.global_mean)
    heavy = dict(rank=2, reg=1000.0, reg_bias=1000.0, solver="gd", lr=5e-4, max_iter=60, tol=0.0)
    m = plain(item_prior=1.5, prior_damping=4.0, **heavy).fit(train)
    np.testing.assert_allclose(m.prior_, want, rtol=1e-12, atol=1e-12)
    for u in range(train.n_users):
        np.testing.assert_allclose(m.score(np.full(train.n_items, u), items), want, atol=5e-3)
    off = plain(**heavy).fit(train)
    assert np.max(np.abs(off.score(np.zeros(train.n_items, int), items))) < 5e-3
    back = Bilinear.load(m.save(tmp_path / "bilinear"))
    np.testing.assert_array_equal(back.score(np.zeros(train.n_items, int), items),
                                  m.score(np.zeros(train.n_items, int), items))
