"""GPR, GPOR, CGPR, CGPOR (per-user Gaussian processes on item features and their collaborative forms): the model
contract, the posterior against plain NumPy, the ordinal likelihood's derivatives against finite differences,
Laplace's mode, the EM update against a slow reference and its monotone log posterior, the item features, learning
on planted data and the fold-in of new users."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal, norm

from cofiviz import Ratings, Split, evaluate
from cofiviz.datasets import tiny
from cofiviz.util.errors import DataError
from cofiviz.evaluation import mean_metrics
from cofiviz.models import CGPOR, CGPR, GPOR, GPR, Model
from cofiviz.models import _gp
from cofiviz.models.gp import item_features

from contract import ModelContract, random_ndcg

GENRE_NAMES = ["Action", "Comedy", "Drama", "Horror", "Romance", "Thriller"]


def featured(seed: int = 0, n_users: int = 60, n_items: int = 80, per_user: int = 30, n_test: int = 10,
             driver: str = "features", given: bool = False) -> Split:
    """Ratings of items with genre indicators and a release year in ``item_info``.

    ``driver="features"``: a user's rating of an item is ``3 + x_jᵀ (w0 + w_u)`` plus noise, ``x_j`` the item's genres
    (a taste shared by everyone plus the user's own); ``driver="collaborative"``: ratings follow an item quality and a
    rank-2 taste that the features know nothing of. With ``given``, the last fifth of the users are new users: ten of
    their ratings are ``given``, the rest ``test`` (strong generalization).
    """
    rng = np.random.default_rng(seed)
    X = np.zeros((n_items, len(GENRE_NAMES)))
    for j in range(n_items):
        X[j, rng.choice(len(GENRE_NAMES), size=rng.integers(1, 3), replace=False)] = 1.0
    year = rng.integers(1950, 1999, size=n_items).astype(float)
    w0 = rng.normal(scale=1.0, size=len(GENRE_NAMES))
    quality = rng.normal(size=n_items)
    V = rng.normal(scale=0.8, size=(n_items, 2))
    users, items, ratings, is_test = [], [], [], []
    for u in range(n_users):
        its = np.sort(rng.choice(n_items, size=per_user, replace=False))
        if driver == "features":
            mean = X[its] @ (w0 + rng.normal(scale=0.6, size=len(GENRE_NAMES)))
        else:
            mean = quality[its] + V[its] @ rng.normal(scale=0.8, size=2)
        r = np.clip(np.round(3.0 + mean + rng.normal(scale=0.4, size=per_user)), 1, 5)
        test = np.zeros(per_user, dtype=bool)
        test[rng.choice(per_user, size=n_test, replace=False)] = True
        users.append(np.full(per_user, u))
        items.append(its)
        ratings.append(r)
        is_test.append(test)
    users, items, ratings, is_test = map(np.concatenate, (users, items, ratings, is_test))
    info = pd.DataFrame({"item": np.arange(101, 101 + n_items), "release_year": year})
    for g, name in enumerate(GENRE_NAMES):
        info[name] = X[:, g].astype(bool)
    full = Ratings(users, items, ratings, user_ids=np.arange(1, n_users + 1), item_ids=np.arange(101, 101 + n_items),
                   scale=(1, 5), item_info=info, name=f"featured-{driver}")
    if not given:
        return Split(train=full.take(~is_test, name="train"), test=full.take(is_test, name="test"),
                     protocol={"name": "featured", "seed": seed})
    new = full.users >= n_users - n_users // 5
    return Split(train=full.take(~new, name="train"), test=full.take(new & is_test, name="test"),
                 given=full.take(new & ~is_test, name="given"), protocol={"name": "featured-strong", "seed": seed})


class _Contract(ModelContract):
    bad_params = [{"seed": -1}, {"noise": 0.0}, {"lengthscale": 0.0}, {"signal": -1.0}, {"features": "genres"}]

    @pytest.fixture(scope="class")
    @classmethod
    def split(cls) -> Split:
        return featured(seed=0)


class TestGPRContract(_Contract):
    def make_model(self, **params):
        return GPR(**params)


class TestGPORContract(_Contract):
    bad_params = _Contract.bad_params + [{"max_newton": 0}]

    def make_model(self, **params):
        # five steps of the evidence's ascent (its default is 50): the contract's fits take seconds, not a minute
        return GPOR(**{"evidence_iter": 5, **params})


class TestCGPRContract(_Contract):
    bad_params = _Contract.bad_params + [{"prior_weight": -1.0}, {"mean_weight": 0.0}, {"tol": -1.0}]

    def make_model(self, **params):
        return CGPR(**{"max_iter": 4, **params})


class TestCGPORContract(_Contract):
    bad_params = _Contract.bad_params + [{"max_newton": 0}, {"prior_weight": -1.0}]

    def make_model(self, **params):
        return CGPOR(**{"max_iter": 3, **params})


# ---------------------------------------------------------------------------------------------- GP regression
def _tiny_problem(seed=0, n_items=7, n_rated=4):
    rng = np.random.default_rng(seed)
    K = _gp.rbf_kernel(rng.normal(size=(n_items, 3)), 1.3, 0.8, 1e-4)
    items = np.sort(rng.choice(n_items, size=n_rated, replace=False))
    return rng, K, items


def test_gp_regression_posterior_matches_plain_numpy():
    rng, K, items = _tiny_problem()
    mean, y, noise = rng.normal(size=7), rng.normal(size=4), 0.35
    alpha, A, logml = _gp.regression_user(K, mean, items, y, noise)
    C = K[np.ix_(items, items)] + noise * np.eye(4)
    Kx = K[:, items]
    ref_mean = mean + Kx @ np.linalg.solve(C, y - mean[items])
    ref_cov = K - Kx @ np.linalg.inv(C) @ Kx.T
    np.testing.assert_allclose(mean + Kx @ alpha, ref_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(K - Kx @ A @ Kx.T, ref_cov, rtol=1e-9, atol=1e-12)
    assert logml == pytest.approx(multivariate_normal(mean[items], C).logpdf(y), rel=1e-10)


def test_gpr_scores_are_each_users_posterior_mean():
    split = featured(seed=2, n_users=8, n_items=20, per_user=6, n_test=2)
    model = GPR(lengthscale=1.5, noise=0.5).fit(split.train)
    X, _ = item_features(split.train)
    K = _gp.rbf_kernel(X, 1.5, 1.0, 1e-4)
    t = split.train
    for u in range(t.n_users):
        sl = t.user_slice(u)
        its, y = t.items[sl], t.ratings[sl]
        c = y.mean()
        ref = c + K[:, its] @ np.linalg.solve(K[np.ix_(its, its)] + 0.5 * np.eye(len(its)), y - c)
        np.testing.assert_allclose(model.score(u, np.arange(t.n_items)), ref, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------------- ordinal likelihood
def test_ordinal_gradient_and_hessian_equal_finite_differences():
    thresholds = np.array([1.5, 2.5, 3.5, 4.5])
    levels = np.array([0, 1, 2, 3, 4, 0, 4, 2, 1, 3])
    f = np.array([1.0, 2.2, 3.1, 3.9, 5.2, -2.0, 9.0, 0.5, 6.0, 3.5])  # in and far outside each interval
    eps = 1e-5
    for sigma in (0.3, 1.0):
        lp, g, W = _gp.ordinal_loglik(f, levels, thresholds, sigma)
        # log P against a direct evaluation where its difference of two Φ's does not cancel
        b = np.concatenate([[-np.inf], thresholds, [np.inf]])
        direct = np.log(norm.cdf((b[levels + 1] - f) / sigma) - norm.cdf((b[levels] - f) / sigma))
        ok = direct > -10
        np.testing.assert_allclose(lp[ok], direct[ok], rtol=1e-9, atol=1e-14)
        lp_p, g_p, _ = _gp.ordinal_loglik(f + eps, levels, thresholds, sigma)
        lp_m, g_m, _ = _gp.ordinal_loglik(f - eps, levels, thresholds, sigma)
        np.testing.assert_allclose(g, (lp_p - lp_m) / (2 * eps), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(W, -(g_p - g_m) / (2 * eps), rtol=1e-5, atol=1e-6)
        assert np.all(W > 0) and np.all(np.isfinite(lp))  # log-concave, and no underflow in the tails


def test_laplace_finds_the_mode_and_its_gradient():
    rng, K, items = _tiny_problem(seed=3, n_items=9, n_rated=6)
    thresholds = np.array([1.5, 2.5, 3.5, 4.5])
    levels = rng.integers(0, 5, size=6)
    mean = 3.0 + rng.normal(scale=0.3, size=9)
    a, A, logml, f = _gp.ordinal_laplace_user(K, mean, items, levels, thresholds, 0.7, max_newton=50, tol=1e-14)
    Kii = K[np.ix_(items, items)]
    _, g, W = _gp.ordinal_loglik(f, levels, thresholds, 0.7)
    # the mode: ∇ψ = −∇log P + K⁻¹(f − m) = 0, and a = K⁻¹(f − m)
    np.testing.assert_allclose(a, g, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.linalg.solve(Kii, f - mean[items]), a, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(A, np.linalg.inv(Kii + np.diag(1.0 / W)), rtol=1e-8, atol=1e-10)
    # the Laplace evidence: log P(y|f̂) − ½ (f̂ − m)ᵀK⁻¹(f̂ − m) − ½ log|I + K W|
    lp, _, _ = _gp.ordinal_loglik(f, levels, thresholds, 0.7)
    ref = lp.sum() - 0.5 * a @ (f - mean[items]) - 0.5 * np.linalg.slogdet(np.eye(6) + Kii @ np.diag(W))[1]
    assert logml == pytest.approx(ref, rel=1e-9)


# ---------------------------------------------------------------------------------------------- EM
def _em_problem(seed=0, n_users=5, n_items=8):
    rng = np.random.default_rng(seed)
    K0 = _gp.rbf_kernel(rng.normal(size=(n_items, 2)), 1.0, 1.0, 1e-4)
    per_user = [np.sort(rng.choice(n_items, size=rng.integers(2, 6), replace=False)) for _ in range(n_users)]
    indptr = np.concatenate([[0], np.cumsum([len(p) for p in per_user])]).astype(np.int64)
    items = np.concatenate(per_user).astype(np.int64)
    y = rng.normal(size=len(items))
    offsets = rng.normal(scale=0.2, size=n_users)
    return K0, indptr, items, y, offsets


def test_m_step_equals_a_slow_reference():
    K0, indptr, items, y, offsets = _em_problem()
    rng = np.random.default_rng(5)
    K = K0 + 0.3 * np.eye(8) + 0.1 * np.outer(*rng.normal(size=(2, 8))).clip(0)  # any covariance
    K = 0.5 * (K + K.T)
    mu, noise, tau, pi = rng.normal(scale=0.3, size=8), 0.4, 3.0, 2.0
    solve = lambda K_, m_, its, t: _gp.regression_user(K_, m_, its, t, noise)
    coef, st = _gp.e_step(K, mu, offsets, indptr, items, y, solve)
    F = _gp.posterior_means(K, mu, offsets, indptr, items, coef)
    K_new, mu_new = _gp.m_step(K, mu, K0, st, tau, pi)
    # reference: each user's posterior mean and covariance on every item, by dense formulas
    ms, Cs = [], []
    for u in range(len(indptr) - 1):
        its, t = items[indptr[u]:indptr[u + 1]], y[indptr[u]:indptr[u + 1]]
        C = K[np.ix_(its, its)] + noise * np.eye(len(its))
        m = mu + K[:, its] @ np.linalg.solve(C, t - offsets[u] - mu[its])
        np.testing.assert_allclose(F[u], offsets[u] + m, rtol=1e-10)
        ms.append(m)
        Cs.append(K - K[:, its] @ np.linalg.inv(C) @ K[its, :])
    n = len(ms)
    ref_mu = sum(ms) / (n + pi)
    ref_K = (tau * K0 + pi * np.outer(ref_mu, ref_mu) + sum(np.outer(m - ref_mu, m - ref_mu) + C
                                                             for m, C in zip(ms, Cs))) / (n + tau + 1)
    np.testing.assert_allclose(mu_new, ref_mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(K_new, ref_K, rtol=1e-9, atol=1e-12)


def test_an_e_step_without_moments_gives_the_same_means_and_likelihood():
    """GPR and GPOR, which have no M-step, ask for the log likelihood only: no items × items sums."""
    K0, indptr, items, y, offsets = _em_problem()
    mu = np.random.default_rng(3).normal(scale=0.3, size=8)
    solve = lambda K_, m_, its, t: _gp.regression_user(K_, m_, its, t, 0.4)
    F, st = _gp.e_step(K0, mu, offsets, indptr, items, y, solve)          # the coefficients of the means
    F2, st2 = _gp.e_step(K0, mu, offsets, indptr, items, y, solve, moments=False)
    assert np.array_equal(F, F2) and st2.logml == st.logml and st2.n == st.n
    assert st2.P is None and st2.Q is None and st2.s is None and st.P.shape == (8, 8)
    # each user's solve skips A_u when asked to, and gives the same coefficients and likelihood
    its, t = items[indptr[0]:indptr[1]], y[indptr[0]:indptr[1]]
    full, bare = (_gp.regression_user(K0, mu, its, t, 0.4, inverse=inv) for inv in (True, False))
    assert bare[1] is None and full[1].shape == (len(its), len(its))
    assert np.array_equal(full[0], bare[0]) and full[2] == bare[2]
    levels = np.arange(len(its)) % 3
    th = _gp.thresholds_for(np.array([1.0, 2.0, 3.0]))
    full, bare = (_gp.ordinal_laplace_user(K0, mu, its, levels, th, 0.5, inverse=inv) for inv in (True, False))
    assert bare[1] is None and full[1].shape == (len(its), len(its))
    assert np.array_equal(full[0], bare[0]) and full[2] == bare[2] and np.array_equal(full[3], bare[3])


def test_log_posterior_never_decreases_over_em_iterations():
    K0, indptr, items, y, offsets = _em_problem(seed=1, n_users=12, n_items=10)
    tau, pi = 2.0, 1.0
    solve = lambda K_, m_, its, t: _gp.regression_user(K_, m_, its, t, 0.3)
    K, mu = K0.copy(), np.zeros(10)
    values = []
    for _ in range(15):
        _, st = _gp.e_step(K, mu, offsets, indptr, items, y, solve)
        # the summed log marginal likelihood is the sum of each user's Gaussian log density
        ref = sum(multivariate_normal(offsets[u] + mu[items[indptr[u]:indptr[u + 1]]],
                                      K[np.ix_(items[indptr[u]:indptr[u + 1]], items[indptr[u]:indptr[u + 1]])]
                                      + 0.3 * np.eye(indptr[u + 1] - indptr[u])).logpdf(y[indptr[u]:indptr[u + 1]])
                  for u in range(12))
        assert st.logml == pytest.approx(ref, rel=1e-10)
        values.append(st.logml + _gp.log_hyperprior(K, mu, K0, tau, pi))
        K, mu = _gp.m_step(K, mu, K0, st, tau, pi)
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:])), values
    assert values[-1] > values[0]


def test_cgpr_fit_raises_the_log_posterior_every_iteration():
    split = featured(seed=4, driver="collaborative")
    model = CGPR(max_iter=10, tol=0.0).fit(split.train)
    obj = model._objective
    assert len(obj) == 11 and all(b >= a - 1e-9 * abs(a) for a, b in zip(obj, obj[1:]))
    assert [-h["loss"] for h in model.history_] == pytest.approx([o / len(split.train) for o in obj[1:]])


# ---------------------------------------------------------------------------------------------- features
def test_item_features_are_the_genres_and_the_standardised_year():
    split = featured(seed=0)
    X, what = item_features(split.train, "item_info")
    info = split.train.item_info
    np.testing.assert_array_equal(X[:, :len(GENRE_NAMES)], info[GENRE_NAMES].to_numpy(dtype=float))
    year = info["release_year"].to_numpy()
    np.testing.assert_allclose(X[:, -1], (year - year.mean()) / year.std())
    assert what == "6 indicator columns + standardised release year"


def test_missing_item_features_are_a_clear_error_or_one_hot_ids():
    train = tiny()
    assert train.item_info is None
    for klass in (GPR, GPOR, CGPR, CGPOR):
        with pytest.raises(DataError, match="features=.item_info. needs item features: Ratings.item_info with boolean indicator"):
            klass(features="item_info").fit(train)
        model = klass(max_iter=2).fit(train)  # auto: one-hot item ids
        assert model.features_used_ == "one-hot item ids (4)"
        assert np.all(np.isfinite(model.score(np.arange(4)[:, None], np.arange(4)[None, :])))
    X, _ = item_features(train, "one_hot")
    np.testing.assert_array_equal(X, np.eye(4))


# ---------------------------------------------------------------------------------------------- learning
@pytest.mark.parametrize("klass", [GPR, GPOR, CGPR, CGPOR], ids=lambda k: k.__name__)
def test_each_model_ranks_feature_driven_ratings_better_than_random(klass):
    split = featured(seed=5)
    got = mean_metrics(klass(max_iter=5).fit(split.train), split.test, ["ndcg@10"])["ndcg@10"]
    assert got > random_ndcg(split) + 0.05


def test_collaborative_beats_per_user_when_the_structure_is_not_in_the_features():
    split = featured(seed=6, n_users=120, per_user=30, driver="collaborative")
    gpr = mean_metrics(GPR().fit(split.train), split.test, ["ndcg@10"])["ndcg@10"]
    cgpr = mean_metrics(CGPR(max_iter=10).fit(split.train), split.test, ["ndcg@10"])["ndcg@10"]
    gpor = mean_metrics(GPOR().fit(split.train), split.test, ["ndcg@10"])["ndcg@10"]
    cgpor = mean_metrics(CGPOR(max_iter=10).fit(split.train), split.test, ["ndcg@10"])["ndcg@10"]
    assert cgpr > gpr + 0.03 and cgpor > gpor + 0.03, (gpr, cgpr, gpor, cgpor)


# ---------------------------------------------------------------------------------------------- fold-in
@pytest.mark.parametrize("klass", [GPR, GPOR, CGPR, CGPOR], ids=lambda k: k.__name__)
def test_fold_in_scores_new_users_from_their_given_ratings_only(klass, tmp_path):
    split = featured(seed=7, n_users=50, given=True)
    model = klass(max_iter=4).fit(split.train)
    K, F = {k: v.copy() for k, v in model._kernel_state().items()}, model.means()
    model.fold_in(split.given)
    moved = np.any(model.means() != F, axis=1)
    assert np.array_equal(moved, split.given.user_counts() > 0)
    assert model.folded_in_["n_users"] == int(moved.sum())
    for name, value in model._kernel_state().items():
        np.testing.assert_array_equal(value, K[name])
    # a loaded model (its learned K included) folds the same users in to the same scores
    back = Model.load(model.save(tmp_path / "m"))
    for name, value in back._kernel_state().items():
        np.testing.assert_array_equal(value, model._kernel_state()[name])
    np.testing.assert_array_equal(back.fold_in(split.given).means(), model.means())
    ndcg = evaluate(klass(max_iter=4).fit(split.train), split, metrics=["ndcg@10"]).means["ndcg@10"]
    assert 0.0 < ndcg <= 1.0
    with pytest.raises(DataError, match="index space"):
        model.fold_in(featured(seed=8, n_users=10).train)


def _cholesky_column_by_column(A):
    """The plain Cholesky–Crout loop, one column at a time, each sum in ascending k (a slow reference)."""
    n = A.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return L, False
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    return L, True


@pytest.mark.parametrize("n", [1, 2, 3, 5, 31, 32, 33, 36, 64, 67, 97])
def test_blocked_cholesky_is_the_column_by_column_factor_to_the_last_bit(n):
    from cofiviz.models import _gp_kernels as gk

    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 4))
    A = np.exp(-gk.sq_dists(X) / 4.0) + 1e-3 * np.eye(n)
    L, ok = gk.cholesky(A)
    ref, ok_ref = _cholesky_column_by_column(A)
    assert ok and ok_ref and np.array_equal(L, ref)
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-9, atol=1e-12)
    bad = A.copy()
    bad[n // 2, n // 2] = -1.0                      # not positive definite: said, whatever the block
    assert not gk.cholesky(bad)[1] and not _cholesky_column_by_column(bad)[1]


# ---------------------------------------------------------------------------------------------- bounded memory
def test_the_item_kernel_operator_has_the_dense_kernels_entries_to_the_bit():
    """The feature kernel read block by block equals the dense matrices it replaces: RBF on features, one-hot ids,
    and the learned (ARD) kernel with its scaled features, every entry and any block."""
    from cofiviz.models import _gp_evidence as ge

    rng = np.random.default_rng(11)
    X = rng.normal(size=(23, 4))
    kappa = rng.uniform(0.2, 3.0, size=4)
    cases = [(_gp.ItemKernel.rbf(X, 1.7, 0.8, 1e-4), _gp.rbf_kernel(X, 1.7, 0.8, 1e-4)),
             (_gp.ItemKernel.one_hot_ids(23, 2.0, 1.3, 1e-4), _gp.one_hot_kernel(23, 2.0, 1.3, 1e-4)),
             (ge.ard_kernel(X, 23, kappa, 0.9, 1e-4), None),
             (ge.ard_kernel(None, 23, kappa[:1], 0.9, 1e-4), _gp.one_hot_kernel(23, 1 / np.sqrt(kappa[0]), 0.9, 1e-4))]
    Xs = X * np.sqrt(kappa)[None, :]
    d2 = ((Xs[:, None, :] - Xs[None, :, :]) ** 2).sum(-1)
    ard = 0.9 * np.exp(-0.5 * d2)
    ard[np.diag_indices(23)] = 0.9 * (1 + 1e-4)
    for op, dense in cases:
        if dense is None:       # the learned kernel against its formula (NumPy's own sums: close, not bitwise)
            np.testing.assert_allclose(op.dense(), ard, rtol=1e-13)
            continue
        assert np.array_equal(op.dense(), dense)
        rows, cols = rng.choice(23, size=7), rng.choice(23, size=5)
        assert np.array_equal(op[np.ix_(rows, cols)], dense[np.ix_(rows, cols)])


@pytest.mark.parametrize("dense", [False, True], ids=["features", "matrix"])
def test_pair_scores_are_the_posterior_means_entries_to_the_bit(dense):
    K0, indptr, items, y, offsets = _em_problem(seed=4, n_users=9, n_items=8)
    X = np.random.default_rng(4).normal(size=(8, 2))
    K = _gp.rbf_kernel(X, 1.0, 1.0, 1e-4) if dense else _gp.ItemKernel.rbf(X, 1.0, 1.0, 1e-4)
    mu = np.random.default_rng(5).normal(scale=0.3, size=8)
    solve = lambda K_, m_, its, t: _gp.regression_user(K_, m_, its, t, 0.4)
    coef, _ = _gp.e_step(K, mu, offsets, indptr, items, y, solve, stats=False)
    F = _gp.posterior_means(K, mu, offsets, indptr, items, coef)
    users, cols = np.divmod(np.arange(9 * 8), 8)
    assert np.array_equal(_gp.pair_scores(K, mu, offsets, indptr, items, coef, users, cols), F.ravel())
    # and the means by the dense formula
    Kd = _gp.rbf_kernel(X, 1.0, 1.0, 1e-4)
    for u in range(9):
        its = items[indptr[u]:indptr[u + 1]]
        np.testing.assert_allclose(F[u], offsets[u] + mu + Kd[:, its] @ coef[indptr[u]:indptr[u + 1]], rtol=1e-12)


def test_rows_of_a_fold_in_replace_only_the_given_users():
    from cofiviz.models.gp import _merge_rows

    old = (np.array([0, 2, 3, 3, 5]), np.array([1, 4, 0, 2, 3]), np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    new = (np.array([0, 1, 1, 3, 3]), np.array([7, 5, 6]), np.array([-1.0, -2.0, -3.0]))
    indptr, items, values = _merge_rows(old, new, np.array([True, False, True, False]))
    assert indptr.tolist() == [0, 1, 2, 4, 6]
    assert items.tolist() == [7, 0, 5, 6, 2, 3] and values.tolist() == [-1.0, 3.0, -2.0, -3.0, 4.0, 5.0]


@pytest.mark.parametrize("klass", [GPR, GPOR], ids=lambda k: k.__name__)
def test_the_per_user_models_keep_no_users_by_items_nor_items_by_items_state(klass):
    """At Netflix's size (477,893 users × 17,770 items) the fitted state is its coefficients (one per training
    rating), the users' offsets and the items' features: nothing of users × items or items × items."""
    n_users, n_items = 477_893, 17_770
    sizes = klass().state_size(n_users, n_items)
    assert max(sizes.values()) <= n_users + 1, sizes
    split = featured(seed=2, n_users=30)
    model = klass().fit(split.train)
    assert all(v.size <= max(len(split.train), split.train.n_users + 1, split.train.n_items * 10)
               for v in model._state().values())
