"""The rating-prediction baselines NMF (Lee & Seung) and BPMF (Salakhutdinov & Mnih): their updates
against dense NumPy references, the Gibbs conditionals' moments, and the model contract."""

from __future__ import annotations

import numpy as np
import pytest

from cofiviz import Ratings
from cofiviz.util.errors import DataError, ParameterError
from cofiviz.models.bpmf import BPMF, _sample_rows, sample_hyper, sample_wishart
from cofiviz.models.nmf import NMF, _multiplicative

from contract import ModelContract


def _table(seed=0, n_users=8, n_items=10, per_user=5) -> Ratings:
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), per_user)
    items = np.concatenate([rng.choice(n_items, per_user, replace=False) for _ in range(n_users)])
    return Ratings(users, items, rng.integers(1, 6, len(users)).astype(float), user_ids=np.arange(n_users),
                   item_ids=np.arange(n_items), scale=(1, 5))


# ---------------------------------------------------------------------------------- NMF
class TestNMFContract(ModelContract):
    bad_params = [{"seed": -1}, {"rank": 0}, {"reg": -0.1}, {"init_scale": 0.0}]

    def make_model(self, **params):
        return NMF(**{"rank": 3, "max_iter": 30, **params})


def test_nmf_update_is_the_masked_multiplicative_rule():
    r = _table()
    rng = np.random.default_rng(1)
    P = rng.uniform(size=(r.n_users, 3))
    Q = rng.uniform(size=(r.n_items, 3))
    W = np.zeros((r.n_users, r.n_items))
    W[r.users, r.items] = 1.0
    R = np.zeros_like(W)
    R[r.users, r.items] = r.ratings
    lam = 0.2
    expect = P * ((W * R) @ Q) / ((W * (P @ Q.T)) @ Q + lam * P + 1e-12)
    got = P.copy()
    _multiplicative(got, Q, np.asarray(r.indptr, np.int64), r.items.astype(np.int64), r.ratings, lam)
    np.testing.assert_allclose(got, expect, rtol=1e-12)


def test_nmf_objective_never_increases_and_factors_stay_non_negative():
    r = _table(seed=2, n_users=30, n_items=20, per_user=8)
    model = NMF(rank=4, reg=0.5, max_iter=40, tol=0).fit(r)
    losses = [h["loss"] for h in model.history_]
    assert np.all(np.diff(losses) <= 1e-12)
    assert model.P_.min() >= 0 and model.Q_.min() >= 0
    with pytest.raises(DataError, match="non-negative"):
        NMF().fit(r.like(r.users, r.items, r.ratings - 3.0))


def test_nmf_fits_a_non_negative_low_rank_matrix():
    rng = np.random.default_rng(3)
    P = rng.uniform(size=(40, 2))
    Q = rng.uniform(size=(30, 2))
    users, items = np.meshgrid(np.arange(40), np.arange(30), indexing="ij")
    mask = rng.random(users.shape) < 0.6
    r = Ratings(users[mask], items[mask], (P @ Q.T)[mask], user_ids=np.arange(40), item_ids=np.arange(30),
                scale=(0, 2))
    model = NMF(rank=2, reg=0.0, max_iter=2000, tol=1e-10).fit(r)
    rmse = np.sqrt(np.mean((model.score(users[~mask], items[~mask]) - (P @ Q.T)[~mask]) ** 2))
    assert rmse < 0.02


# ---------------------------------------------------------------------------------- BPMF
class TestBPMFContract(ModelContract):
    bad_params = [{"seed": -1}, {"rank": 0}, {"alpha": 0.0}, {"beta0": -1.0}, {"burn_in": -1}, {"nu0": 0}]

    def make_model(self, **params):
        return BPMF(**{"rank": 3, "max_iter": 12, "burn_in": 4, **params})


def test_wishart_draws_have_the_right_mean():
    rng = np.random.default_rng(4)
    scale = np.array([[1.0, 0.3], [0.3, 0.5]])
    draws = np.array([sample_wishart(rng, scale, 7.0) for _ in range(20000)])
    np.testing.assert_allclose(draws.mean(axis=0), 7.0 * scale, rtol=0.03, atol=0.03)
    # variance of an entry: df (s_ij² + s_ii s_jj)
    np.testing.assert_allclose(draws[:, 0, 1].var(), 7.0 * (0.3 ** 2 + 1.0 * 0.5), rtol=0.05)


def test_hyperparameter_posterior_concentrates_on_the_factors_distribution():
    rng = np.random.default_rng(5)
    X = rng.multivariate_normal([1.0, -2.0], [[0.5, 0.1], [0.1, 0.2]], size=5000)
    mus, lams = zip(*(sample_hyper(rng, X, np.zeros(2), 2.0, np.eye(2), 2) for _ in range(200)))
    np.testing.assert_allclose(np.mean(mus, axis=0), [1.0, -2.0], atol=0.03)
    np.testing.assert_allclose(np.linalg.inv(np.mean(lams, axis=0)), [[0.5, 0.1], [0.1, 0.2]], atol=0.03)


def test_row_conditional_has_the_papers_mean_and_covariance():
    """§3.3: U_i | rest ~ N(Λ*⁻¹ (α Σ r V_j + Λ_U μ_U), Λ*⁻¹) with Λ* = Λ_U + α Σ V_j V_jᵀ."""
    rng = np.random.default_rng(6)
    D, n_draws = 3, 40000
    B = rng.normal(size=(4, D))
    r = np.array([1.0, -0.5, 2.0, 0.3])
    alpha, mu, Lam = 2.0, np.array([0.1, 0.2, -0.3]), np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 1.5]])
    P = Lam + alpha * B.T @ B
    cov = np.linalg.inv(P)
    mean = cov @ (alpha * B.T @ r + Lam @ mu)
    A = np.zeros((n_draws, D))
    indptr = np.arange(n_draws + 1, dtype=np.int64) * 4
    other = np.tile(np.arange(4, dtype=np.int64), n_draws)
    values = np.tile(r, n_draws)
    _sample_rows(A, B, indptr, other, values, alpha, mu, Lam, rng.standard_normal((n_draws, D)))
    np.testing.assert_allclose(A.mean(axis=0), mean, atol=4 * np.sqrt(np.diag(cov).max() / n_draws))
    np.testing.assert_allclose(np.cov(A.T), cov, atol=0.02)


def test_bpmf_averages_the_samples_after_burn_in():
    r = _table(seed=7, n_users=20, n_items=12, per_user=6)
    model = BPMF(rank=2, max_iter=9, burn_in=4).fit(r)
    assert model.n_samples_ == 5 and model.Us_.shape == (20, 10)
    blocks = [(model.Us_[:, 2 * t:2 * t + 2], model.Vs_[:, 2 * t:2 * t + 2]) for t in range(5)]
    expect = model.mean_ + np.mean([U[3] @ V[5] for U, V in blocks])
    assert model.score(3, 5) == pytest.approx(expect)
    with pytest.raises(ParameterError, match="nu0"):
        BPMF(rank=3, nu0=2, max_iter=2).fit(r)


def test_bpmf_with_burn_in_at_max_iter_predicts_from_the_last_sample():
    """The PREA toolkit's BPMF (LCR Table 2's row) predicts from the last Gibbs sample, with no average."""
    r = _table(seed=7, n_users=20, n_items=12, per_user=6)
    model = BPMF(rank=2, max_iter=6, burn_in=6, init_scale=1.0).fit(r)
    assert model.n_samples_ == 0 and model.Us_ is model.U_
    assert model.score(3, 5) == pytest.approx(model.mean_ + model.U_[3] @ model.V_[5])
    longer = BPMF(rank=2, max_iter=7, burn_in=7, init_scale=1.0).fit(r)
    assert longer.score(3, 5) != pytest.approx(model.score(3, 5))      # one more sweep, another sample


def test_bpmf_recovers_a_low_rank_matrix():
    rng = np.random.default_rng(8)
    U = rng.normal(size=(60, 2))
    V = rng.normal(size=(50, 2))
    users, items = np.meshgrid(np.arange(60), np.arange(50), indexing="ij")
    mask = rng.random(users.shape) < 0.5
    truth = 3 + U @ V.T
    r = Ratings(users[mask], items[mask], truth[mask] + rng.normal(scale=0.3, size=mask.sum()),
                user_ids=np.arange(60), item_ids=np.arange(50), scale=(-10, 20))
    model = BPMF(rank=2, max_iter=60, burn_in=20, alpha=1 / 0.09).fit(r)
    rmse = np.sqrt(np.mean((model.score(users[~mask], items[~mask]) - truth[~mask]) ** 2))
    assert rmse < 0.25


def test_warmups_run():
    from cofiviz.models.bpmf import warmup as bpmf_warmup
    from cofiviz.models.nmf import warmup as nmf_warmup

    nmf_warmup()
    bpmf_warmup()


def test_nmf_with_missing_as_zero_is_lee_and_seung_on_the_full_matrix():
    r = _table(seed=9)
    rng = np.random.default_rng(10)
    P = rng.uniform(size=(r.n_users, 3))
    Q = rng.uniform(size=(r.n_items, 3))
    R = np.zeros((r.n_users, r.n_items))
    R[r.users, r.items] = r.ratings
    lam = 0.3
    from cofiviz.models.nmf import _multiplicative_zero

    got = P.copy()
    _multiplicative_zero(got, Q, np.asarray(r.indptr, np.int64), r.items.astype(np.int64), r.ratings, lam, Q.T @ Q)
    np.testing.assert_allclose(got, P * (R @ Q) / (P @ Q.T @ Q + lam * P + 1e-12), rtol=1e-12)
    model = NMF(rank=3, reg=lam, max_iter=25, tol=0, missing="zero").fit(r)
    losses = [h["loss"] for h in model.history_]
    assert np.all(np.diff(losses) <= 1e-12)
    dense = 0.5 * np.sum((R - model.P_ @ model.Q_.T) ** 2) + 0.5 * lam * (np.sum(model.P_ ** 2) + np.sum(model.Q_ ** 2))
    assert losses[-1] * len(r) == pytest.approx(dense, rel=1e-9)
