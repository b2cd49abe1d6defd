"""WLT (win / loss / tie features + LambdaRank, Volkovs & Zemel 2012): the model contract, the features against a
plain-Python reference on a hand-made table with ties, the objective against a plain reference and its gradient and
Hessian against finite differences, and learning on planted data (better than random and than PopRec)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cofiviz import Ratings, evaluate
from cofiviz.models import PopRec
from cofiviz.models.wlt import WLT, level_index, rating_levels

from contract import ModelContract, planted, random_ndcg


class TestWLTContract(ModelContract):
    bad_params = [{"seed": -1}, {"n_neighbors": -1}, {"lr": 0.0}, {"reg": -1.0}, {"sigma": 0.0}, {"folds": 1},
                  {"ndcg_k": -1}, {"tol": -1.0}]

    def make_model(self, **params):
        return WLT(**{"max_iter": 10, **params})

    def test_load_refuses_arrays_that_do_not_fit_the_training_table(self, fitted, tmp_path):
        pytest.skip("WLT learns no per-user or per-item array: its weights and levels fit a table of any size "
                    "(the saved table itself is what it scores from)")


# ------------------------------------------------------------------------------------------------ features
def hand_made() -> Ratings:
    """Five users, six items, ratings 1..5 with ties inside users' lists and across them."""
    rows = [(0, 0, 5), (0, 1, 3), (0, 2, 3), (0, 3, 1),
            (1, 0, 4), (1, 1, 4), (1, 2, 2), (1, 4, 5),
            (2, 1, 5), (2, 2, 1), (2, 3, 3), (2, 4, 3), (2, 5, 2),
            (3, 0, 2), (3, 2, 2), (3, 3, 4), (3, 5, 5),
            (4, 0, 3), (4, 4, 1), (4, 5, 3)]
    u, i, r = (np.array(c) for c in zip(*rows))
    return Ratings(u, i, r.astype(float), user_ids=np.arange(5), item_ids=np.arange(6), scale=(1, 5), name="hand")


def reference_features(table: Ratings, u: int, n: int, K: int, profile: set[int]) -> np.ndarray:
    """Eqs (1)-(2) of cofiviz.models.wlt by plain loops: ``profile`` is u's items that count as theirs."""
    rating = {(int(a), int(b)): float(c) for a, b, c in zip(table.users, table.items, table.ratings)}
    items_of = {v: {b for (a, b) in rating if a == v} for v in range(table.n_users)}
    levels = list(rating_levels(table.ratings))
    level = {m: levels.index(rating[u, m]) for m in profile}
    L = len(levels)
    profile = set(profile) - {n}
    raters = sorted(v for v in range(table.n_users) if (v, n) in rating and v != u)
    if K > 0 and len(raters) > K:
        raters = sorted(raters, key=lambda v: (-len(profile & items_of[v]), v))[:K]
    per_level = np.zeros((L, 3))
    whole = np.zeros(3)
    used = 0
    for v in raters:
        counts = np.zeros(3)
        for m in items_of[v] - {n}:
            d = rating[v, n] - rating[v, m]
            kind = 0 if d > 0 else (1 if d < 0 else 2)
            counts[kind] += 1
            if m in profile:
                per_level[level[m], kind] += 1
        if counts.sum():
            whole += counts / counts.sum()
            used += 1
    slots = max(used, K)
    out = np.zeros(3 * (L + 1))
    if slots == 0:
        return out
    for lev in range(L):
        size = sum(1 for m in profile if level[m] == lev)
        if size:
            out[3 * lev:3 * lev + 3] = per_level[lev] / (size * slots)
    out[3 * L:] = whole / slots
    return out


@pytest.fixture(scope="module")
def hand_model():
    return WLT(max_iter=1).fit(hand_made())


@pytest.mark.parametrize("K", [0, 1, 2, 5])
def test_features_equal_the_reference_for_rated_and_unrated_items(hand_model, K):
    table = hand_model.train_
    model = WLT(n_neighbors=K, max_iter=1).fit(table)
    users, items = np.meshgrid(np.arange(5), np.arange(6), indexing="ij")
    X = model.pair_features(users.ravel(), items.ravel())
    assert X.shape == (30, 18) and model.feature_names()[:3] == ["W@1", "L@1", "T@1"]
    for row, (u, n) in enumerate(zip(users.ravel(), items.ravel())):
        own = set(table.items[table.user_slice(u)].tolist())
        np.testing.assert_allclose(X[row], reference_features(table, u, n, K, own), rtol=0, atol=1e-15,
                                   err_msg=f"pair ({u}, {n}), K = {K}")
    if K == 0:  # by hand: item 0's raters other than user 0 tie it with a third, a third and half of their items
        assert X[0, 17] == pytest.approx((1 / 3 + 1 / 3 + 1 / 2) / 3, abs=1e-15)


def test_training_lists_describe_each_part_by_the_other_parts():
    table = hand_made()
    model = WLT(n_neighbors=2, folds=2, seed=4, max_iter=1).fit(table)
    list_ptr, labels, X, _ = model._training_table().lists(2, 2, 4)
    assert list_ptr[-1] == len(table) and np.all(np.diff(list_ptr) > 0)
    # the reference: recompute every list from the parts the model dealt
    rng = np.random.default_rng(4)
    n = len(table)
    shuffled = np.lexsort((rng.random(n), table.users))
    parts = np.empty(n, dtype=int)
    parts[shuffled] = (np.arange(n) - table.indptr[table.users[shuffled]]) % 2
    order = np.lexsort((parts, table.users))
    for row, p in enumerate(order):
        u, item = int(table.users[p]), int(table.items[p])
        mine = table.user_slice(u)
        profile = {int(m) for m, q in zip(table.items[mine], parts[mine]) if q != parts[p]}
        np.testing.assert_allclose(X[row], reference_features(table, u, item, 2, profile), rtol=0, atol=1e-15)
        assert labels[row] == table.ratings[p]
    # each list is one part of one user's items
    for a, b in zip(list_ptr[:-1], list_ptr[1:]):
        assert len(set(table.users[order[a:b]].tolist())) == 1 and len(set(parts[order[a:b]].tolist())) == 1


def test_a_training_pair_does_not_see_its_own_rating():
    table = hand_made()
    changed = table.ratings.copy()
    changed[0] = 1.0  # user 0's rating of item 0: 5 -> 1 (still a level of the table)
    other = Ratings(table.users, table.items, changed, user_ids=table.user_ids, item_ids=table.item_ids, scale=(1, 5))
    a = WLT(max_iter=1).fit(table).pair_features(0, 0)
    b = WLT(max_iter=1).fit(other).pair_features(0, 0)
    np.testing.assert_array_equal(a, b)


def test_levels_and_binning():
    assert rating_levels(np.array([4.0, 1.0, 4.0, 2.5])).tolist() == [1.0, 2.5, 4.0]
    many = np.linspace(0, 10, 101)
    levels = rating_levels(many)
    assert len(levels) == 10 and levels[0] == pytest.approx(0.5) and levels[-1] == pytest.approx(9.5)
    assert level_index(np.array([0.0, 0.99, 1.01, 10.0]), levels).tolist() == [0, 0, 1, 9]
    assert level_index(np.array([3.0, 7.0]), np.array([5.0])).tolist() == [0, 0]
    spread = np.linspace(0, 10, 120)  # 120 distinct ratings: ten levels, 33 weights
    model = WLT(max_iter=1).fit(Ratings(np.repeat(np.arange(20), 6), np.tile(np.arange(6), 20), spread,
                                        user_ids=np.arange(20), item_ids=np.arange(6), scale=(0, 10)))
    assert model.w_.shape == (33,) and len(model.feature_names()) == 33


# ------------------------------------------------------------------------------------------------ objective
def _softplus(z):
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def reference_objective(list_ptr, labels, X, w, sigma, reg, k=0, offset=None):
    """Eq (4) by plain loops: LambdaRank's |ΔNDCG|-weighted logistic pair loss, mean over lists with a pair (the
    scores ``Xw`` plus each row's fixed ``offset``)."""
    total, lists = 0.0, 0
    offset = np.zeros(len(X)) if offset is None else offset
    for a, b in zip(list_ptr[:-1], list_ptr[1:]):
        y, s = labels[a:b], X[a:b] @ w + offset[a:b]
        m = len(y)
        order = sorted(range(m), key=lambda i: (-s[i], i))
        pos = {i: r + 1 for r, i in enumerate(order)}
        disc = {i: (1 / math.log2(1 + pos[i]) if (k <= 0 or pos[i] <= k) else 0.0) for i in range(m)}
        gains = [2.0 ** v - 1 for v in y]
        ideal = sorted(gains, reverse=True)
        idcg = sum(g / math.log2(2 + r) for r, g in enumerate(ideal) if k <= 0 or r + 1 <= k)
        pairs = [(i, j) for i in range(m) for j in range(m) if y[i] > y[j]]
        if not pairs or idcg <= 0:
            continue
        lists += 1
        for i, j in pairs:
            delta = abs(gains[i] - gains[j]) * abs(disc[i] - disc[j]) / idcg
            total += delta * _softplus(-sigma * (s[i] - s[j]))
    return total / max(lists, 1) + reg / 2 * float(w @ w)


@pytest.fixture(scope="module")
def small():
    split = planted(seed=3, n_users=12, n_items=15, per_user=8, n_test=2)
    return WLT(n_neighbors=4, reg=0.01, sigma=1.5, max_iter=1).fit(split.train)


@pytest.mark.parametrize("k", [0, 3])
def test_objective_equals_the_reference_and_its_gradient_and_hessian_the_finite_differences(small, k):
    """With the default item offset: it enters every score of the lists, and the derivatives keep their form."""
    small.set_params(ndcg_k=k)
    list_ptr, labels, X, items = small._training_table().lists(4, 2, 0)
    assert small.item_prior > 0 and np.any(small.prior_)
    rng = np.random.default_rng(11)
    w = rng.normal(0, 2.0, X.shape[1])
    f, g, H = small.objective(w, hessian=True)
    assert f == pytest.approx(reference_objective(list_ptr, labels, X, w, 1.5, 0.01, k, small.prior_[items]),
                              rel=1e-12)
    assert small.objective(w)[0] == f
    # |ΔNDCG| is constant while no two scores of a list swap: at this generic point central differences with a
    # step far below the smallest score gap see a smooth function
    eps = 1e-6
    fd = np.array([(small.objective(w + eps * e)[0] - small.objective(w - eps * e)[0]) / (2 * eps)
                   for e in np.eye(len(w))])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    fd_h = np.array([(small.objective(w + eps * e)[1] - small.objective(w - eps * e)[1]) / (2 * eps)
                     for e in np.eye(len(w))])
    np.testing.assert_allclose(H, fd_h, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-15)
    small.set_params(ndcg_k=0)


def test_newton_steps_lower_the_objective_and_stop_at_a_stationary_point(small):
    model = WLT(n_neighbors=4, reg=0.01, max_iter=200, tol=0.0, item_prior=0.0).fit(small.train_)
    losses = [row["loss"] for row in model.history_]
    assert all(b <= a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < model.objective(np.zeros_like(model.w_))[0]
    assert model.stopped_reason_.startswith("converged")


def test_passes_count_every_evaluation_of_the_objective(small):
    model = WLT(n_neighbors=4, reg=0.01, max_iter=6, tol=0.0, lr=8.0)  # a long first step: the search halves it
    calls = []
    objective = model.objective

    def counted(w, hessian=False):
        calls.append(hessian)
        return objective(w, hessian)

    model.objective = counted
    model.fit(small.train_)
    per_step, run = [], None
    for hessian in calls[1:]:  # the first evaluation is the set-up's
        if hessian:
            run = [1]
            per_step.append(run)
        else:
            run[0] += 1
    assert model.passes_ == [r[0] for r in per_step]
    assert len(model.passes_) == len(model.history_)
    assert max(model.passes_) > 2  # the line search shortened some step


# ------------------------------------------------------------------------------------------------ learning
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wlt_ranks_planted_test_items_better_than_random_and_poprec(seed):
    split = planted(seed=seed)
    wlt = evaluate(WLT().fit(split.train), split, metrics=["ndcg@10"]).means["ndcg@10"]
    pop = evaluate(PopRec().fit(split.train), split, metrics=["ndcg@10"]).means["ndcg@10"]
    assert wlt > random_ndcg(split) + 0.1
    assert wlt > pop


def test_a_loaded_model_scores_from_the_saved_training_table(tmp_path):
    split = planted(seed=1)
    model = WLT(max_iter=5).fit(split.train)
    back = WLT.load(model.save(tmp_path / "m"))
    np.testing.assert_array_equal(back.pair_features(split.test.users, split.test.items),
                                  model.pair_features(split.test.users, split.test.items))
    assert back.objective(back.w_)[0] == pytest.approx(model.objective(model.w_)[0], rel=1e-15)
