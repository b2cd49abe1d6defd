"""The Gaussian-process models' hyper-parameters learned by evidence (:mod:`cofiviz.models._gp_evidence`): the
probit's derivatives and the evidence's gradient against finite differences, the evidence against the solvers'
own, the ascent, GPOR and GPR recovering planted hyper-parameters, and the same hyper-parameters under each CPU
kernel."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cofiviz import Ratings, Split, evaluate
from cofiviz.util.errors import ModelFitError
from cofiviz.models import GPOR, GPR, CGPOR, Model
from cofiviz.models import _gp
from cofiviz.models import _gp_evidence as ge

import cpu_kernels
from contract import ModelContract, random_ndcg
from test_gp_models import featured

R_LEVELS = 5


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), sigma=st.floats(0.2, 3.0), spread=st.floats(0.3, 3.0))
def test_probit_derivatives_equal_finite_differences(seed, sigma, spread):
    """``∂ log P/∂f``, ``W``, ``∂³ log P/∂f³`` and the derivatives of ``log P``, ``g``, ``W`` in each threshold and in
    ``ln σ``, against central differences, on every level (the two open-ended ones included)."""
    rng = np.random.default_rng(seed)
    thr = np.cumsum(np.concatenate([[-1.5], rng.uniform(0.2, 1.5, R_LEVELS - 2)]))
    levels = np.arange(20) % R_LEVELS
    # each latent value within a few σ of its rating's interval: far out in a tail the analytic derivatives stay
    # accurate while the central differences of W lose digits to cancellation
    b = np.concatenate([[thr[0] - 1.0], thr, [thr[-1] + 1.0]])
    f = 0.5 * (b[levels] + b[levels + 1]) + sigma * rng.normal(scale=spread, size=20)
    lp, g, W, d3, dlp, dg, dW = ge.ordinal_terms(f, levels, thr, sigma)
    ref_lp, ref_g, ref_W = _gp.ordinal_loglik(f, levels, thr, sigma)
    np.testing.assert_allclose(lp, ref_lp, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, ref_g, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(W, ref_W, rtol=1e-8, atol=1e-10)
    h = 1e-5

    def close(fd, ref, what):   # far in a tail the third derivatives cancel terms of order |z|³: scale the slack
        np.testing.assert_allclose(fd, ref, rtol=1e-4, atol=1e-6 * max(1.0, float(np.max(np.abs(ref)))), err_msg=what)

    def at(f_, thr_, s_):
        return ge.ordinal_terms(f_, levels, thr_, s_)

    p, m = at(f + h, thr, sigma), at(f - h, thr, sigma)
    close((p[2] - m[2]) / (2 * h), -d3, "third derivative")
    for j in range(R_LEVELS):
        if j < R_LEVELS - 1:
            e = np.zeros(R_LEVELS - 1)
            e[j] = h
            p, m = at(f, thr + e, sigma), at(f, thr - e, sigma)
        else:
            p, m = at(f, thr, sigma * math.exp(h)), at(f, thr, sigma * math.exp(-h))
        for k, ref in ((0, dlp), (1, dg), (2, dW)):
            close((p[k] - m[k]) / (2 * h), ref[:, j], f"quantity {k}, hyper-parameter {j}")


def _problem(seed=0, n_items=25, d=3, n_users=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_items, d))
    users = []
    for u in range(n_users):
        its = np.sort(rng.choice(n_items, size=6 + 2 * u, replace=False))
        users.append((its, rng.integers(0, R_LEVELS, len(its)).astype(np.int64), 0.0))
    return rng, X, users


@pytest.mark.parametrize("ordinal", [True, False], ids=["ordinal", "regression"])
@pytest.mark.parametrize("one_hot", [False, True], ids=["ard", "one-hot"])
@pytest.mark.parametrize("seed", [0, 1])
def test_evidence_gradient_equals_finite_differences(ordinal, one_hot, seed):
    _, X, users = _problem(seed)
    n_kappa = 1 if one_hot else X.shape[1]
    X = None if one_hot else X
    if ordinal:
        hyper = ge.Hyper(n_kappa, True, R_LEVELS - 1)
        theta = hyper.pack(np.linspace(0.4, 1.6, n_kappa), 1.0, 0.5, np.array([-1.4, -0.5, 0.3, 1.2]))
    else:
        hyper = ge.Hyper(n_kappa, False)
        theta = hyper.pack(np.linspace(0.4, 1.6, n_kappa), 1.3, 0.6)
        users = [(its, t.astype(np.float64) + 1.0, 3.0) for its, t, _ in users]
    value, grad = ge.total_evidence(theta, hyper, X, 25, users, 1e-4)
    h = 1e-5
    fd = [(ge.total_evidence(theta + h * e, hyper, X, 25, users, 1e-4)[0]
           - ge.total_evidence(theta - h * e, hyper, X, 25, users, 1e-4)[0]) / (2 * h) for e in np.eye(len(theta))]
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    assert math.isfinite(value)


def test_evidence_is_the_solvers_own_log_marginal_likelihood():
    """The regression evidence is :func:`_gp.regression_user`'s exact one, the ordinal one its Laplace one."""
    _, X, users = _problem(3)
    kappa = np.array([0.5, 1.0, 2.0])
    K = ge.ard_kernel(X, 25, kappa, 1.2, 1e-4)
    thr = np.array([-1.4, -0.5, 0.3, 1.2])
    for its, levels, _ in users:
        Kii = np.ascontiguousarray(K[np.ix_(its, its)])
        y = levels.astype(np.float64) + 1.0
        lm, _ = ge.regression_evidence(Kii, X[its], kappa, y - 3.0, 0.7)
        assert lm == pytest.approx(_gp.regression_user(K, np.full(25, 3.0), its, y, 0.7)[2], rel=1e-12)
        lm, _ = ge.ordinal_evidence(Kii, X[its], kappa, np.zeros(len(its)), levels, thr, 0.8)
        ref = _gp.ordinal_laplace_user(K, np.zeros(25), its, levels, thr, 0.8, tol=1e-12)[2]
        assert lm == pytest.approx(ref, rel=1e-9)


def test_ard_kernel_is_the_gaussian_kernel_with_one_width_per_feature():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(6, 2))
    kappa = np.array([0.3, 2.0])
    K = ge.ard_kernel(X, 6, kappa, 1.5, 1e-4).dense()
    for i in range(6):
        for j in range(6):
            want = 1.5 * math.exp(-0.5 * float(np.sum(kappa * (X[i] - X[j]) ** 2))) + (1.5e-4 if i == j else 0.0)
            assert K[i, j] == pytest.approx(want, rel=1e-13)
    # one-hot ids: the isotropic kernel of the identity's rows
    np.testing.assert_allclose(ge.ard_kernel(None, 4, np.array([0.7]), 1.0, 1e-4).dense(),
                               ge.ard_kernel(np.eye(4), 4, np.full(4, 0.7), 1.0, 1e-4).dense(), rtol=1e-14)


def test_hyper_packs_and_unpacks_chu_and_ghahramanis_parametrisation():
    hyper = ge.Hyper(2, True, 4)
    thr = np.array([-1.0, -0.2, 0.5, 2.0])
    theta = hyper.pack([0.5, 3.0], 1.0, 0.64, thr)
    np.testing.assert_allclose(theta, [math.log(0.5), math.log(3.0), -1.0, math.log(0.8), math.log(0.7),
                                       math.log(1.5), math.log(0.8)], rtol=1e-14)
    kappa, signal, noise, back = hyper.unpack(theta)
    np.testing.assert_allclose(kappa, [0.5, 3.0], rtol=1e-14)
    np.testing.assert_allclose(back, thr, rtol=1e-14, atol=1e-15)
    assert signal == 1.0 and noise == pytest.approx(0.64, rel=1e-14)


def test_ascent_finds_the_maximum_of_a_concave_function_and_never_goes_down():
    A = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])
    top = np.array([1.0, -2.0, 0.5])
    seen = []

    def fun(x):
        d = x - top
        value = -0.5 * float(d @ A @ d)
        seen.append(value)
        return value, -(A @ d)

    theta, value, iterations = ge.maximise(fun, np.zeros(3), max_iter=100, tol=1e-14)
    np.testing.assert_allclose(theta, top, atol=1e-6)
    assert value == pytest.approx(0.0, abs=1e-10) and iterations < 100
    with pytest.raises(ModelFitError, match="starting hyper-parameters"):
        ge.maximise(lambda x: (-math.inf, None), np.zeros(2))


def _planted_ordinal(seed=0, n_items=60, n_users=120, per_user=25, sigma=0.3):
    """GPOR's own generative model: ``f_u ~ GP(0, K)`` with the first feature relevant (``κ = 2``) and the second
    not (``κ = 0.01``), ratings by the probit with thresholds ``(−1, −0.3, 0.3, 1)`` and noise ``σ``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_items, 2))
    year = X[:, 1] * 10.0 + 1980.0
    genre = X[:, 0]
    K = ge.ard_kernel(X, n_items, np.array([2.0, 0.01]), 1.0, 1e-6).dense()
    L = np.linalg.cholesky(K)
    thr = np.array([-1.0, -0.3, 0.3, 1.0])
    users, items, ratings = [], [], []
    for u in range(n_users):
        f = L @ rng.normal(size=n_items)
        its = np.sort(rng.choice(n_items, size=per_user, replace=False))
        r = 1 + np.searchsorted(thr, f[its] + sigma * rng.normal(size=per_user))
        users.append(np.full(per_user, u))
        items.append(its)
        ratings.append(r.astype(float))
    users, items, ratings = map(np.concatenate, (users, items, ratings))
    info = pd.DataFrame({"item": np.arange(n_items), "release_year": year, "Drama": genre > 0})
    # the features the model sees: one indicator (the relevant feature's sign) and the standardised year
    return Ratings(users, items, ratings, user_ids=np.arange(n_users), item_ids=np.arange(n_items), scale=(1, 5),
                   item_info=info), X


def test_gpor_learns_planted_relevance_and_ordered_thresholds():
    train, _ = _planted_ordinal()
    model = GPOR(hyperparameters="evidence", evidence_users=40, evidence_iter=25, seed=0).fit(train)
    kappa_drama, kappa_year = model.kappa_
    assert kappa_drama > 10 * kappa_year, model.kappa_          # the year carries nothing of the ratings
    assert np.all(np.diff(model.thresholds_) > 0) and model.signal_ == 1.0
    start = GPOR(hyperparameters="evidence", evidence_users=40, evidence_iter=1, seed=0).fit(train)
    assert model.evidence_["log_evidence"] > start.evidence_["log_evidence"]
    assert model.evidence_["users"] == 40


def test_gpr_learns_the_noise_of_planted_ratings():
    rng = np.random.default_rng(1)
    n_items, n_users = 50, 80
    X = rng.normal(size=(n_items, 1))
    K = ge.ard_kernel(X, n_items, np.array([1.0]), 1.0, 1e-6).dense()
    L = np.linalg.cholesky(K)
    users, items, ratings = [], [], []
    for u in range(n_users):
        f = L @ rng.normal(size=n_items)
        its = np.sort(rng.choice(n_items, size=20, replace=False))
        users.append(np.full(20, u))
        items.append(its)
        ratings.append(3.0 + f[its] + 0.5 * rng.normal(size=20))
    users, items, ratings = map(np.concatenate, (users, items, ratings))
    info = pd.DataFrame({"item": np.arange(n_items), "release_year": X[:, 0]})
    train = Ratings(users, items, ratings, user_ids=np.arange(n_users), item_ids=np.arange(n_items), item_info=info)
    model = GPR(hyperparameters="evidence", evidence_users=80, evidence_iter=100, seed=0).fit(train)
    # σ² = 0.25; the user offsets take one degree of freedom each, so the estimate sits a little below
    assert 0.15 < model.noise_ < 0.35, model.noise_
    # the offsets also absorb the part of each user's function common to its items: the signal sits below 1
    assert 0.5 < model.kappa_[0] < 2.0 and 0.3 < model.signal_ < 1.2, (model.kappa_, model.signal_)


def test_a_subset_of_users_is_drawn_with_the_seed():
    train, _ = _planted_ordinal(n_users=40)
    a = GPOR(hyperparameters="evidence", evidence_users=10, evidence_iter=3, seed=1).fit(train)
    b = GPOR(hyperparameters="evidence", evidence_users=10, evidence_iter=3, seed=1).fit(train)
    c = GPOR(hyperparameters="evidence", evidence_users=10, evidence_iter=3, seed=2).fit(train)
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)
    np.testing.assert_array_equal(a.means(), b.means())
    assert not np.array_equal(a.thresholds_, c.thresholds_)


@pytest.mark.parametrize("klass", [GPOR, GPR, CGPOR], ids=lambda k: k.__name__)
def test_learned_hyperparameters_rank_and_fold_in_like_the_fixed_ones(klass, tmp_path):
    split = featured(seed=7, n_users=50, given=True)
    model = klass(hyperparameters="evidence", evidence_iter=20, max_iter=3).fit(split.train)
    ndcg = evaluate(model, split, metrics=["ndcg@10"]).means["ndcg@10"]
    assert ndcg > random_ndcg(split) + 0.03
    back = Model.load(model.save(tmp_path / "m"))
    assert back.noise_ == model.noise_
    np.testing.assert_array_equal(back.thresholds_, model.thresholds_)
    np.testing.assert_array_equal(back.fold_in(split.given).means(), model.means())


class TestGPREvidenceContract(ModelContract):
    """GPR with learned hyper-parameters (GPOR's default form has its own contract test in test_gp_models)."""

    bad_params = [{"hyperparameters": "learned"}, {"evidence_users": 0}, {"evidence_iter": 0}]

    @pytest.fixture(scope="class")
    @classmethod
    def split(cls) -> Split:
        return featured(seed=0)

    def make_model(self, **params):
        return GPR(**{"hyperparameters": "evidence", "evidence_iter": 10, **params})


LEARN_UNDER_A_KERNEL = """
import hashlib, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_gp_models import featured
from cofiviz.models import GPOR, GPR
split = featured(seed=3)
for klass in (GPOR, GPR):
    model = klass(hyperparameters="evidence", evidence_users=30, evidence_iter=8).fit(split.train)
    learned = np.concatenate([model.kappa_, model.thresholds_, [model.noise_, model.signal_]])
    print(klass.__name__, hashlib.sha1(learned.tobytes()).hexdigest(), hashlib.sha1(model.means().tobytes()).hexdigest())
"""


def test_learned_hyperparameters_are_the_same_under_each_cpu_kernel():
    """The ascent on item features (one length-scale per feature) as on an AVX2 and as on an AVX-512 machine
    (``tests/cpu_kernels.py``): the learned hyper-parameters and the scores agree to the last bit."""
    runnable = [n for n in cpu_kernels.SWITCHES if not cpu_kernels.missing_flags(n)]
    if len(runnable) < 2:
        pytest.skip(f"this CPU runs only the {runnable} switches of {list(cpu_kernels.SWITCHES)}")
    code = LEARN_UNDER_A_KERNEL.format(tests=str(Path(__file__).resolve().parent))
    outputs = cpu_kernels.run_all(code, runnable)
    lines = {k: out.splitlines() for k, out in outputs.items()}
    first = lines[runnable[0]]
    assert len(first) == 2 and all(len(line.split()) == 3 for line in first), first
    assert all(v == first for v in lines.values()), lines
