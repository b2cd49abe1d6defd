"""BMRM (CofiRank Algorithm 1) against direct solvers, its dual QP, and the alternating kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import minimize

from cofiviz import losses as L
from cofiviz.util.errors import ModelFitError, ParameterError
from cofiviz import Ratings
from cofiviz.models._cofirank_kernels import item_oracle, user_phase
from cofiviz.solvers.bmrm import bmrm, qp_simplex


def _svm(seed, n=60, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sign(X @ rng.normal(size=d) + 0.7 * rng.normal(size=n))

    def hinge(w):
        m = 1.0 - y * (X @ w)
        act = m > 0
        return float(m[act].sum()), -(X[act] * y[act, None]).sum(0)

    return X, y, hinge


def _svm_direct(X, y, lam):
    """The same SVM as a smooth constrained problem (slacks), solved by scipy's SLSQP."""
    n, d = X.shape
    cons = {"type": "ineq", "fun": lambda z: np.concatenate([y * (X @ z[:d]) - 1 + z[d:], z[d:]])}
    res = minimize(lambda z: z[d:].sum() + 0.5 * lam * z[:d] @ z[:d], np.zeros(d + n), constraints=[cons],
                   method="SLSQP", options={"ftol": 1e-13, "maxiter": 2000})
    return res.x[:d], res.fun


@pytest.mark.parametrize("seed, lam", [(0, 0.5), (1, 5.0), (2, 0.05)])
def test_l2_hinge_matches_a_direct_solver(seed, lam):
    X, y, hinge = _svm(seed)
    res = bmrm(hinge, np.zeros(X.shape[1]), lam, tol=1e-9, rel_tol=0.0, max_iter=500)
    w_star, j_star = _svm_direct(X, y, lam)
    assert res.converged and res.gap <= 1e-9
    assert res.lower_bound <= j_star + 1e-7
    assert res.objective == pytest.approx(j_star, abs=1e-6)
    np.testing.assert_allclose(res.w, w_star, atol=1e-4)


@pytest.mark.parametrize("max_planes", [100, 8, 2])
def test_least_squares_matches_the_closed_form_even_with_a_small_bundle(max_planes):
    rng = np.random.default_rng(4)
    X, t, lam = rng.normal(size=(40, 6)), rng.normal(size=40), 2.0

    def oracle(w):
        r = X @ w - t
        return 0.5 * float(r @ r), X.T @ r

    res = bmrm(oracle, np.ones(6), lam, tol=1e-8, rel_tol=0.0, max_iter=5000, max_planes=max_planes)
    w_star = np.linalg.solve(X.T @ X + lam * np.eye(6), X.T @ t)
    j_star = oracle(w_star)[0] + 0.5 * lam * w_star @ w_star
    assert res.converged
    assert res.lower_bound <= j_star + 1e-9
    assert res.objective == pytest.approx(j_star, abs=1e-7)
    np.testing.assert_allclose(res.w, w_star, atol=1e-3)


def test_history_gap_and_original_stopping_rule():
    X, y, hinge = _svm(3)
    rows = []
    res = bmrm(hinge, np.zeros(5), 1.0, callback=rows.append)  # the original code's tolerances
    assert rows == res.history and len(rows) == res.n_iter >= 2
    assert res.converged and (res.gap < 0.01 or res.gap < 0.02 * min(r["objective"] for r in rows))
    lbs = [r["lower_bound"] for r in rows]
    assert lbs[0] == -np.inf and np.all(np.diff(lbs[1:]) >= -1e-12)  # the model only tightens
    # the returned point is the best iterate after the start
    assert res.objective == min(r["objective"] for r in rows[1:])
    capped = bmrm(hinge, np.zeros(5), 1.0, tol=0.0, rel_tol=0.0, max_iter=3)
    assert capped.n_iter == 3 and not capped.converged


def test_shape_of_w_is_kept_and_bad_settings_are_refused():
    def oracle(w):
        return float((w ** 2).sum()), 2 * w

    res = bmrm(oracle, np.ones((3, 2)), 1.0)
    assert res.w.shape == (3, 2)
    for kw in ({"lam": 0.0}, {"lam": -1.0}, {"max_iter": 1}, {"max_planes": 1}, {"tol": -1.0}):
        args = {"lam": 1.0, **kw}
        with pytest.raises(ParameterError):
            bmrm(oracle, np.ones(2), args.pop("lam"), **args)
    with pytest.raises(ModelFitError):
        bmrm(lambda w: (np.nan, w), np.ones(2), 1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_dual_qp_over_the_simplex_matches_scipy(n, d, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d))  # n planes in d dimensions: Q has rank ≤ d (often singular)
    if n > 2:
        A[-1] = A[0]  # a duplicate plane
    bvec = rng.normal(size=n)
    lam = float(rng.uniform(0.1, 3.0))
    Q = A @ A.T / lam
    alpha = np.zeros(n)
    alpha[0] = 1.0
    val = qp_simplex(Q, bvec, alpha, np.zeros(n), n, 1e-12, 100000)
    assert np.all(alpha >= 0) and alpha.sum() == pytest.approx(1.0)
    assert val == pytest.approx(bvec @ alpha - 0.5 * alpha @ Q @ alpha)
    res = minimize(lambda x: 0.5 * x @ Q @ x - bvec @ x, np.full(n, 1.0 / n), jac=lambda x: Q @ x - bvec,
                   bounds=[(0, None)] * n, constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
    assert val >= -res.fun - 1e-8  # at least as good as scipy's optimum
    assert val == pytest.approx(-res.fun, abs=1e-7)


# ------------------------------------------------------------------------------ alternating kernels
def _table(seed, n_users=12, n_items=15, d=4):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 9, n_users)
    counts[0] = 0  # a user without ratings
    users = np.repeat(np.arange(n_users), counts)
    items = np.concatenate([np.sort(rng.choice(n_items, c, replace=False)) for c in counts])
    y = rng.integers(1, 6, len(items)).astype(float)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    U = rng.uniform(size=(n_users, d))
    M = rng.uniform(size=(n_items, d))
    return indptr, users.astype(np.int32), items.astype(np.int32), y, U, M


@pytest.mark.parametrize("scale", [None, [1.0, 1.0, 1.0, 3.0]])
def test_user_phase_regression_equals_per_user_ridge(scale):
    """Per-user BMRM in the kernel = closed-form ridge (with a diagonal λ / scale² when scaled)."""
    indptr, users, items, y, U, M = _table(0)
    data = L.build_loss_data(indptr, y, "regression")
    free = np.arange(U.shape[1], dtype=np.int64)
    scale = np.ones(len(free)) if scale is None else np.array(scale)
    lam = 1.5
    losses, iters = np.zeros(len(U)), np.zeros(len(U), dtype=np.int64)
    user_phase(data, items, U, M, free, scale, np.ones(len(U), dtype=np.bool_), lam, 1e-10, 0.0, 3000, 100,
               losses, iters)
    for u in range(len(U)):
        s = slice(indptr[u], indptr[u + 1])
        X = M[items[s]]
        w = np.linalg.solve(X.T @ X + np.diag(lam / scale ** 2), X.T @ y[s])
        np.testing.assert_allclose(U[u], w, atol=1e-4)
    assert iters[0] == 0 and np.all(U[0] == 0.0)


def test_user_phase_ndcg_equals_the_python_driver_per_user():
    indptr, users, items, y, U, M = _table(1, d=3)
    data = L.build_loss_data(indptr, y, "ndcg", k=3)
    free = np.arange(3, dtype=np.int64)
    lam = 0.3
    U0 = U.copy()
    losses, iters = np.zeros(len(U)), np.zeros(len(U), dtype=np.int64)
    user_phase(data, items, U, M, free, np.ones(len(free)), np.ones(len(U), dtype=np.bool_), lam, 1e-9, 0.0, 400, 400,
               losses, iters)
    for u in range(1, len(U)):
        s = slice(indptr[u], indptr[u + 1])
        if s.stop == s.start:
            continue
        X = M[items[s]]

        def oracle(w):
            loss, g = L.ndcg_loss(X @ w, y[s], k=3)
            return loss, X.T @ g

        res = bmrm(oracle, U0[u], lam, tol=1e-9, rel_tol=0.0, max_iter=400, max_planes=400)
        j_kernel = oracle(U[u])[0] + 0.5 * lam * U[u] @ U[u]
        assert j_kernel == pytest.approx(res.objective, abs=1e-7)
        assert losses[u] == pytest.approx(oracle(U[u])[0], abs=1e-12)


def test_item_oracle_gradient_matches_dense_and_finite_differences():
    indptr, users, items, y, U, M = _table(2)
    n_items, D = M.shape
    ptr, pos = Ratings(users, items, y, user_ids=np.arange(len(U)), item_ids=np.arange(n_items)).item_index()
    free = np.arange(D, dtype=np.int64)
    for loss in ("regression", "ordinal", "ndcg"):
        data = L.build_loss_data(indptr, y, loss, k=3)
        G = np.empty((n_items, D))
        gf, lu = np.empty(len(y)), np.empty(len(U))
        total = item_oracle(data, users, items, U, M, ptr, pos, free, gf, lu, G)
        F = np.einsum("ij,ij->i", U[users], M[items])
        ref_losses, ref_g = L.total_loss_grad(data, F)
        assert total == pytest.approx(ref_losses.sum())
        dense = np.zeros_like(M)
        np.add.at(dense, items, ref_g[:, None] * U[users])
        np.testing.assert_allclose(G, dense, atol=1e-12)
        if loss == "regression":
            rng = np.random.default_rng(0)
            Dm = rng.normal(size=M.shape)
            eps = 1e-6
            tp = item_oracle(data, users, items, U, M + eps * Dm, ptr, pos, free, gf, lu, np.empty_like(G))
            tm = item_oracle(data, users, items, U, M - eps * Dm, ptr, pos, free, gf, lu, np.empty_like(G))
            assert (tp - tm) / (2 * eps) == pytest.approx(np.sum(G * Dm), rel=1e-6)
