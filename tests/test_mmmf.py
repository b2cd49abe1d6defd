"""MMMF (fast maximum-margin matrix factorisation, Rennie & Srebro 2005): the model contract, the objective
against a plain NumPy reference, every gradient against finite differences, conjugate gradients lowering the
objective, learning on planted data, and the fold-in of new users."""

from __future__ import annotations

import numpy as np
import pytest

from cofiviz import evaluate
from cofiviz.models import PopRec
from cofiviz.models.mmmf import MMMF, _ConjugateGradient, _Problem

from contract import ModelContract, planted, random_ndcg


class TestMMMFContract(ModelContract):
    bad_params = [{"seed": -1}, {"rank": -1}, {"reg": 0.0}, {"reg": -1.0}, {"init_scale": 0.0}, {"tol": -1.0}]

    def make_model(self, **params):
        return MMMF(**{"rank": 3, "max_iter": 15, "reg": 1.0, **params})


def h(z):
    return 0.5 - z if z <= 0 else (0.5 * (1 - z) ** 2 if z < 1 else 0.0)


def reference_objective(U, V, theta, users, items, levels, reg, fold_in_users=None, offset=None):
    """The all-threshold smooth-hinge objective by plain loops: Σ_(i,j) Σ_r h(T_r (θ_ir − U_i·V_j − o_j)) + λ/2 (‖U‖² +
    ‖V‖²) (for a fold-in: the given users' terms and the penalty of their U rows only)."""
    total = 0.0
    for i, j, y in zip(users, items, levels):
        x = float(U[i] @ V[j]) + (0.0 if offset is None else float(offset[j]))
        for r in range(theta.shape[1]):
            t = 1.0 if r + 1 >= y else -1.0
            total += h(t * (theta[i, r] - x))
    if fold_in_users is None:
        return total + reg / 2 * (np.sum(U ** 2) + np.sum(V ** 2))
    return total + reg / 2 * np.sum(U[fold_in_users] ** 2)


@pytest.fixture(scope="module")
def small():
    split = planted(seed=3, n_users=12, n_items=15, per_user=8, n_test=2)
    train = split.train
    model = MMMF(rank=3, max_iter=1, reg=0.7).fit(train)
    return train, model


def _problem_point(train, model, rng, fold_in=False, offset=None):
    offset = np.zeros(train.n_items) if offset is None else offset
    levels = model._levels(train.ratings)
    k, n_thr = 3, len(model.values_) - 1
    U = rng.normal(0, 0.8, (train.n_users, k))
    V = rng.normal(0, 0.8, (train.n_items, k))
    theta = np.sort(rng.normal(0, 1.0, (train.n_users, n_thr)), axis=1)
    if fold_in:
        active = np.zeros(train.n_users, dtype=bool)
        active[::3] = True
        keep = active[train.users]
        given = train.take(keep)
        prob = _Problem(given, model._levels(given.ratings), train.n_users, train.n_items, k, n_thr, 0.7, offset,
                        active=active, V=V)
        return prob, np.concatenate([U.ravel(), theta.ravel()]), (U, V, theta, given, active)
    prob = _Problem(train, levels, train.n_users, train.n_items, k, n_thr, 0.7, offset)
    return prob, np.concatenate([U.ravel(), V.ravel(), theta.ravel()]), (U, V, theta, train, None)


@pytest.mark.parametrize("with_offset", [False, True])
@pytest.mark.parametrize("fold_in", [False, True])
def test_objective_equals_the_reference_and_every_gradient_the_finite_differences(small, fold_in, with_offset):
    train, model = small
    rng = np.random.default_rng(7)
    offset = rng.normal(0, 0.5, train.n_items) if with_offset else None
    prob, w, (U, V, theta, data, active) = _problem_point(train, model, rng, fold_in, offset)
    f, g = prob(w)
    ref = reference_objective(U, V, theta, data.users, data.items, model._levels(data.ratings), 0.7,
                              fold_in_users=active, offset=offset)
    assert f == pytest.approx(ref, rel=1e-12)
    eps = 1e-6
    fd = np.empty_like(w)
    for p in range(len(w)):
        e = np.zeros_like(w)
        e[p] = eps
        fd[p] = (prob(w + e)[0] - prob(w - e)[0]) / (2 * eps)
    # the smooth hinge is C¹: central differences agree to O(eps) away from its two kinks
    np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-5)
    if fold_in:  # the rows of the other users do not move
        U_g, _, theta_g = prob.split(g)
        assert not U_g[~active].any() and not theta_g[~active].any()


def test_conjugate_gradients_lower_the_objective_every_iteration(small):
    train, model = small
    prob, w, _ = _problem_point(train, model, np.random.default_rng(1))
    cg = _ConjugateGradient(prob, w)
    values = [cg.f] + [cg.step() for _ in range(40)]
    assert all(b <= a for a, b in zip(values, values[1:]))
    assert values[-1] < 0.5 * values[0]
    _, g = prob(cg.w)
    assert np.linalg.norm(g) < np.linalg.norm(prob(w)[1])


def test_mmmf_learns_the_planted_structure():
    split = planted(seed=0)
    model = MMMF(rank=5, reg=1.0, max_iter=150).fit(split.train)
    ndcg = evaluate(model, split, metrics=["ndcg@10"]).means["ndcg@10"]
    pop = evaluate(PopRec().fit(split.train), split, metrics=["ndcg@10"]).means["ndcg@10"]
    assert ndcg > random_ndcg(split) + 0.05 and ndcg > pop
    # its predicted levels fit the training ratings better than the constant level most common there
    pred = model.predict_level(split.train.users, split.train.items)
    common = np.bincount(split.train.ratings.astype(int)).argmax()
    assert np.mean(pred == split.train.ratings) > np.mean(split.train.ratings == common)


def test_fold_in_fits_new_users_with_the_item_factors_frozen():
    split = planted(seed=1)
    model = MMMF(rank=5, reg=1.0, max_iter=80).fit(split.train)
    V, U = model.V_.copy(), model.U_.copy()
    given = split.train.take(split.train.users % 4 == 0)
    model.fold_in(given)
    moved = np.any(model.U_ != U, axis=1)
    assert np.array_equal(moved, given.user_counts() > 0)
    assert np.array_equal(model.V_, V) and model.folded_in_["n_users"] == int(moved.sum())
    with pytest.raises(Exception, match="index space"):
        model.fold_in(planted(seed=2, n_users=10).train)
