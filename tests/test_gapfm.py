"""GAPfm (Shi et al., CIKM 2013): the smoothed GAP objective, its gradients (eqs 10-11), Algorithm 1 and 2, the
ymax = 1 equivalence with smoothed AP, appendix D's GP@n / GR@n objectives, and the model contract."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cofiviz import Ratings
from cofiviz.util.errors import DataError, ParameterError
from cofiviz.evaluation import mean_metrics
from cofiviz.losses import smoothed_gap as sg
from cofiviz.models import PopRec
from cofiviz.models import _gapfm_kernels as K
from cofiviz.models.gapfm import GAPfm

from contract import ModelContract, random_ndcg

g = sg.logistic


def gp(x):
    return g(x) * (1 - g(x))


# ---------------------------------------------------------------------------------- helpers
def _table(seed=0, n_users=6, n_items=9, per_user=5, ymax=5, binary=False) -> Ratings:
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), per_user)
    items = np.concatenate([rng.choice(n_items, per_user, replace=False) for _ in range(n_users)])
    ratings = np.ones(len(users)) if binary else rng.integers(1, ymax + 1, len(users))
    return Ratings(users, items, ratings, user_ids=np.arange(n_users), item_ids=np.arange(n_items),
                   scale=(0, 1) if binary else (1, ymax))


def _beta_paper(y, ymax):
    """β of eq 4 written with its two indicators and δ of eq 5, literally."""
    delta = (2.0 ** np.arange(1, ymax + 1) - 1) / 2.0 ** ymax if ymax > 1 else np.ones(1)
    n = len(y)
    B = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            B[i, j] = (y[i] < y[j]) * delta[:y[i]].sum() + (y[j] <= y[i]) * delta[:y[j]].sum()
    return B


def _eq8(f, y, ymax):
    """Eq 8, a double loop."""
    B = _beta_paper(y, ymax)
    return sum(g(f[i]) * sum(B[i, j] * g(f[j] - f[i]) for j in range(len(f))) for i in range(len(f)))


def _numeric(fun, X, eps=1e-6):
    G = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        Xp, Xm = X.copy(), X.copy()
        Xp[idx] += eps
        Xm[idx] -= eps
        G[idx] = (fun(Xp) - fun(Xm)) / (2 * eps)
    return G


# ---------------------------------------------------------------------------------- eqs 4, 5, 8
def test_thresholding_probabilities_match_eq5_and_the_gap_metric():
    from cofiviz.metrics import thresholding_probabilities as metric_delta

    for ymax in (1, 2, 5, 10):
        expect = np.ones(1) if ymax == 1 else (2.0 ** np.arange(1, ymax + 1) - 1) / 2 ** ymax
        np.testing.assert_allclose(sg.thresholding_probabilities(ymax), expect)
        np.testing.assert_allclose(sg.thresholding_probabilities(ymax), metric_delta(ymax))
    assert sg.cumulative_deltas(5)[0] == 0.0


def test_smoothed_gap_is_eq8_with_beta_of_eq4():
    rng = np.random.default_rng(1)
    for ymax in (1, 3, 5):
        for n in (1, 2, 7):
            f = rng.normal(size=n)
            y = rng.integers(1, ymax + 1, n)
            assert sg.smoothed_gap(f, y, ymax) == pytest.approx(_eq8(f, y, ymax), rel=1e-12)
            v, _ = sg.smoothed_gap_grad(f, y, ymax)
            assert v == pytest.approx(_eq8(f, y, ymax), rel=1e-12)
    # beta is symmetric: S(min(y_i, y_j))
    B = _beta_paper(np.array([1, 5, 3, 3]), 5)
    np.testing.assert_allclose(B, B.T)


def test_score_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    for n in (1, 2, 6, 15):
        f = rng.normal(scale=2.0, size=n)
        y = rng.integers(1, 6, n)
        _, h = sg.smoothed_gap_grad(f, y)
        fd = _numeric(lambda x: sg.smoothed_gap(x, y), f)
        np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind, weight", [("gap", "one"), ("gap", "inverse_z"), ("gap", "inverse_length"),
                                          ("gp", "one"), ("gr", "one")])
def test_factor_gradients_match_finite_differences(kind, weight):
    """∂F/∂U (eq 10) and ∂F/∂V (eq 11 summed over users) of the whole eq 9 objective, against finite differences."""
    r = _table(seed=3)
    rng = np.random.default_rng(4)
    U = rng.normal(size=(r.n_users, 3))
    V = rng.normal(size=(r.n_items, 3))
    lam = 0.3
    kw = dict(lam=lam, kind=kind, weight=weight, cutoff=2)
    F, gU, gV = sg.objective_grad(U, V, r, **kw)
    assert F == pytest.approx(sg.objective(U, V, r, **kw), rel=1e-12)
    np.testing.assert_allclose(gU, _numeric(lambda X: sg.objective(X, V, r, **kw), U), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gV, _numeric(lambda X: sg.objective(U, X, r, **kw), V), rtol=1e-6, atol=1e-7)


def test_paper_eq10_and_eq11_as_printed_agree_with_the_derived_gradient():
    """The paper's eqs 10 and 11, typed in as printed (per user), equal our derivation: β's symmetry makes
    eq 11's ``β_ji g(f_j) − β_ij g(f_i)`` equal to ``β_ij (g(f_j) − g(f_i))``."""
    rng = np.random.default_rng(5)
    D, n = 3, 6
    Um = rng.normal(size=D)
    V = rng.normal(size=(n, D))
    y = rng.integers(1, 6, n)
    B = _beta_paper(y, 5)
    f = V @ Um
    lam = 0.0
    eq10 = sum(gp(f[i]) * sum(B[i, j] * g(f[j] - f[i]) for j in range(n)) * V[i]
               + g(f[i]) * sum(B[i, j] * gp(f[j] - f[i]) * (V[j] - V[i]) for j in range(n))
               for i in range(n)) - lam * Um
    eq11 = np.array([(gp(f[i]) * sum(B[i, j] * g(f[j] - f[i]) for j in range(n))
                      + sum((B[j, i] * g(f[j]) - B[i, j] * g(f[i])) * gp(f[j] - f[i]) for j in range(n))) * Um
                     for i in range(n)])
    _, h = sg.smoothed_gap_grad(f, y)
    np.testing.assert_allclose(eq10, h @ V, rtol=1e-10)
    np.testing.assert_allclose(eq11, h[:, None] * Um[None, :], rtol=1e-10)
    fdU = _numeric(lambda u: sg.smoothed_gap(V @ u, y), Um)
    np.testing.assert_allclose(eq10, fdU, rtol=1e-6)
    fdV = _numeric(lambda X: sg.smoothed_gap(X @ Um, y), V)
    np.testing.assert_allclose(eq11, fdV, rtol=1e-6, atol=1e-9)


# ---------------------------------------------------------------------------------- appendix D
def smoothed_ap(scores):
    """TFMAP's smoothed AP of one list of relevant items (Shi et al., SIGIR 2012) without its ``1/n``,
    written directly from the formula: ``Σ_i g(f_i) Σ_j g(f_j − f_i)`` (dense NumPy)."""
    f = np.asarray(scores, dtype=np.float64)
    pair = sg.logistic(f[None, :] - f[:, None])          # [i, j] = g(f_j − f_i)
    return float(np.sum(sg.logistic(f) * pair.sum(axis=1)))


def test_ymax_one_is_tfmap_smoothed_ap():
    """Appendix D: with ymax = 1 (β = 1) the smoothed GAP is TFMAP's smoothed AP (without its 1/n)."""
    rng = np.random.default_rng(6)
    for n in (1, 4, 9):
        f = rng.normal(size=n)
        assert sg.smoothed_gap(f, np.ones(n, int), ymax=1) == pytest.approx(smoothed_ap(f), rel=1e-12)
    # and the gradient of the model's objective is the gradient of smoothed AP summed over users
    r = _table(seed=7, binary=True)
    U = rng.normal(size=(r.n_users, 2))
    V = rng.normal(size=(r.n_items, 2))

    def total_ap(Ux, Vx):
        return sum(smoothed_ap(Vx[r.items[r.user_slice(m)]] @ Ux[m]) for m in range(r.n_users))

    F, gU, gV = sg.objective_grad(U, V, r, ymax=1)
    assert F == pytest.approx(total_ap(U, V), rel=1e-12)
    np.testing.assert_allclose(gU, _numeric(lambda X: total_ap(X, V), U), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gV, _numeric(lambda X: total_ap(U, X), V), rtol=1e-6, atol=1e-8)
    # the fitted model is the same whether 0/1 data is read with ymax = 1 or with its scale (0, 1)
    a = GAPfm(rank=2, max_iter=3, ymax=1).fit(r)
    b = GAPfm(rank=2, max_iter=3).fit(r)
    np.testing.assert_array_equal(a.V_, b.V_)


def test_gp_and_gr_objectives_follow_appendix_d():
    y = np.array([5, 3, 4, 1, 3])
    f = np.array([0.2, -0.1, 0.4, 0.0, 1.0])
    r = Ratings(np.zeros(5, int), np.arange(5), y, user_ids=[0], item_ids=np.arange(5), scale=(1, 5))
    U = np.array([[1.0]])
    V = f[:, None]
    S = sg.cumulative_deltas(5)
    n = 3
    c = np.sort(y)[::-1][n - 1]                      # grade of the n-th best rated item: 3
    xi = S[np.minimum(y, c)] / S[c]
    assert sg.objective(U, V, r, kind="gp", cutoff=n) == pytest.approx(np.sum(xi * g(f - c)) / n)
    assert sg.objective(U, V, r, kind="gr", cutoff=n) == pytest.approx(np.sum(S[y] * g(f - c)) / S[y].sum())
    # fewer rated items than n: c is the lowest grade
    assert sg.objective(U, V, r, kind="gp", cutoff=9) == pytest.approx(
        np.sum(S[np.minimum(y, 1)] / S[1] * g(f - 1)) / 9)


# ---------------------------------------------------------------------------------- Algorithm 1
def test_adaptive_selection_picks_the_papers_example():
    """§4.3: ratings 2, 4, 5 with scores 0.3, 0.5, 0.1 — the third item is the most misranked."""
    idx = np.empty(3, np.int64)
    q = K.select_items(K.SELECT_ADAPTIVE, 1, np.array([0.3, 0.5, 0.1]), np.array([2, 4, 5]), np.zeros(3), 5, idx)
    assert q == 1 and idx[0] == 2
    # at most K items: all of them
    q = K.select_items(K.SELECT_ADAPTIVE, 3, np.array([0.3, 0.5, 0.1]), np.array([2, 4, 5]), np.zeros(3), 5, idx)
    assert q == 3 and sorted(idx[:3]) == [0, 1, 2]


def test_adaptive_selection_uses_midranks_and_random_tie_breaks():
    rng = np.random.default_rng(8)
    # equal grades: any order among them is not misranked, so a correctly ordered list has distance 0 everywhere
    grades = np.array([3, 3, 3, 3, 5])
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.0])          # the 5 is ranked last: the only big offender
    idx = np.empty(5, np.int64)
    picks = set()
    for _ in range(20):
        q = K.select_items(K.SELECT_ADAPTIVE, 2, scores, grades, rng.random(5), 5, idx)
        assert q == 2 and 4 in idx[:2]
        picks.add(int(idx[0] if idx[1] == 4 else idx[1]))
    # the 3s have midrank 3.5 and predicted ranks 1..4: distances 2.5, 1.5, 0.5, 0.5 ... item 3 (rank 1) wins
    assert picks == {3}
    # random selection: K distinct items, each item chosen sometimes
    seen = np.zeros(5)
    for _ in range(200):
        q = K.select_items(K.SELECT_RANDOM, 2, scores, grades, rng.random(5), 5, idx)
        assert q == 2 and idx[0] != idx[1]
        seen[idx[:2]] += 1
    assert np.all(seen > 40)


def test_selection_of_everything_equals_full_updates():
    r = _table(seed=9, per_user=6)
    a = GAPfm(rank=3, max_iter=4, selection="adaptive", n_selected=6).fit(r)
    b = GAPfm(rank=3, max_iter=4, selection="all").fit(r)
    np.testing.assert_array_equal(a.U_, b.U_)
    np.testing.assert_array_equal(a.V_, b.V_)
    c = GAPfm(rank=3, max_iter=4, selection="adaptive", n_selected=3).fit(r)
    assert not np.array_equal(c.V_, b.V_)


# ---------------------------------------------------------------------------------- Algorithm 2
def _algorithm2_numpy(model, r, U, V, order, lr, lam, item_reg=0.0, weight="one"):
    """One iteration of Algorithm 2 in NumPy: users in parallel (eq 10), then items user by user (eq 11);
    ``item_reg`` adds eq 9's once-per-item penalty, a share ``item_reg / c_i`` at each of item i's c_i updates;
    ``weight="inverse_length"`` scales user m's gradient by ``1/n_m``."""
    U, V = U.copy(), V.copy()
    counts = np.bincount(r.items, minlength=r.n_items)
    newU = U.copy()
    for m in range(r.n_users):
        its, y = r.items[r.user_slice(m)], r.ratings[r.user_slice(m)].astype(int)
        _, h = sg.smoothed_gap_grad(V[its] @ U[m], y)
        h = h / len(its) if weight == "inverse_length" else h
        newU[m] = U[m] + lr * (h @ V[its] - lam * U[m])
    for m in order:
        its, y = r.items[r.user_slice(m)], r.ratings[r.user_slice(m)].astype(int)
        _, h = sg.smoothed_gap_grad(V[its] @ newU[m], y)
        h = h / len(its) if weight == "inverse_length" else h
        shrink = lam + item_reg / counts[its]
        V[its] = V[its] + lr * (h[:, None] * newU[m][None, :] - shrink[:, None] * V[its])
    return newU, V


@pytest.mark.parametrize("item_reg, weight", [(0.0, "one"), (0.4, "one"), (0.0, "inverse_length"),
                                              (0.4, "inverse_length")])
def test_one_iteration_is_algorithm2(item_reg, weight):
    r = _table(seed=10)
    model = GAPfm(item_prior=0.0, rank=3, max_iter=1, learning_rate=0.3, reg=0.05, seed=4, item_reg=item_reg,
                  user_weight=weight)
    rng = np.random.default_rng(4)                    # the model's own generator, replayed
    U0 = rng.normal(0, model.init_scale, size=(r.n_users, 3))
    V0 = rng.normal(0, model.init_scale, size=(r.n_items, 3))
    order = rng.spawn(2)[0].permutation(r.n_users)
    model.fit(r)
    U1, V1 = _algorithm2_numpy(model, r, U0, V0, order, 0.3, 0.05, item_reg, weight)
    np.testing.assert_allclose(model.U_, U1, rtol=1e-12)
    np.testing.assert_allclose(model.V_, V1, rtol=1e-12)


@pytest.mark.parametrize("item_reg", [0.0, 0.5])
def test_batch_gradient_ascent_increases_the_objective(item_reg):
    r = _table(seed=11, n_users=20, n_items=15, per_user=8)
    model = GAPfm(rank=3, max_iter=1, learning_rate=0.01, reg=0.01, item_update="batch", init_scale=0.5,
                  item_reg=item_reg)
    values = []
    for it in range(1, 6):
        model.set_params(max_iter=it)
        model.fit(r)
        values.append(model.smoothed_objective())
    assert np.all(np.diff(values) > 0)
    # the reported loss is -F/M after the iteration
    assert model.history_[-1]["loss"] == pytest.approx(-values[-1] / r.n_users, rel=1e-10)


def test_item_reg_shrinks_rarely_rated_items_most():
    """With eq 11's per-update penalty alone a once-rated item grows as large as a popular one; λ_V keeps
    it small relative to items rated by many users (the damping of a damped item mean)."""
    rng = np.random.default_rng(21)
    n_users, popular, rare = 60, 6, 20
    users, items, ratings = [], [], []
    for u in range(n_users):
        for i in rng.choice(popular, 4, replace=False):          # every user rates 4 of 6 popular items
            users.append(u); items.append(i); ratings.append(rng.integers(1, 6))
        if u < rare:                                              # 20 items rated once each, grade 5
            users.append(u); items.append(popular + u); ratings.append(5)
    r = Ratings(np.array(users), np.array(items), np.array(ratings, float), user_ids=np.arange(n_users),
                item_ids=np.arange(popular + rare), scale=(1, 5))

    def ratio(item_reg):
        V = GAPfm(item_prior=0.0, rank=4, max_iter=200, learning_rate=0.1, reg=0.1, init_scale=0.1, item_reg=item_reg,
                  user_weight="one", seed=3).fit(r).V_
        norms = np.linalg.norm(V, axis=1)
        return norms[popular:].mean() / norms[:popular].mean()

    ratios = [ratio(item_reg) for item_reg in (0.0, 1.0, 3.0)]
    assert ratios[0] > 1.0                  # per-update penalty only: once-rated items as large as popular ones
    assert np.all(np.diff(ratios) < 0)
    assert ratios[2] < 0.5 * ratios[0]


def test_monitor_loss_does_not_change_the_fit():
    r = _table(seed=12)
    a = GAPfm(rank=2, max_iter=3, monitor_loss=True).fit(r)
    b = GAPfm(rank=2, max_iter=3, monitor_loss=False).fit(r)
    np.testing.assert_array_equal(a.V_, b.V_)
    # without monitoring, iteration t reports the objective at the start of iteration t
    assert b.history_[1]["loss"] != a.history_[1]["loss"]


def test_thread_count_does_not_change_the_fit():
    import numba

    r = _table(seed=13, n_users=30, n_items=20, per_user=7)
    before = numba.get_num_threads()
    fits = []
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(threads)
        try:
            fits.append(GAPfm(rank=3, max_iter=3).fit(r).U_.copy())
        finally:
            numba.set_num_threads(before)
    for other in fits[1:]:
        np.testing.assert_array_equal(fits[0], other)


# ---------------------------------------------------------------------------------- validation
def test_grades_must_be_integers_in_range():
    r = _table(seed=14)
    half = r.like(r.users, r.items, r.ratings - 0.5)
    with pytest.raises(DataError, match="integer grades"):
        GAPfm(max_iter=1).fit(half)
    with pytest.raises(DataError, match="above ymax"):
        GAPfm(max_iter=1, ymax=3).fit(r.like(r.users, r.items, np.full(len(r), 5.0)))
    zero = r.like(r.users, r.items, np.where(np.arange(len(r)) == 0, 0.0, r.ratings), allow_zero=True)
    with pytest.raises(DataError, match="grades 1..ymax"):
        GAPfm(max_iter=1).fit(zero)
    with pytest.raises(DataError):
        sg.smoothed_gap([0.1, 0.2], [1, 6], ymax=5)
    with pytest.raises(ParameterError):
        sg.smoothed_gap([0.1], [1], ymax=0)
    with pytest.raises(ParameterError, match="objective"):
        sg.prepare(r, objective="ndcg")


# ---------------------------------------------------------------------------------- shapes for plots
def test_shape_functions():
    exact, smooth = sg.rank_indicator_shape(np.array([-3.0, 0.0, 3.0]))
    np.testing.assert_array_equal(exact, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(smooth, g(np.array([-3.0, 0.0, 3.0])))
    grid = np.linspace(-2, 4, 7)
    exact, smooth = sg.reciprocal_rank_curve(grid, [0.5, 1.5])
    np.testing.assert_allclose(exact, 1 / (1 + (grid < 0.5) + (grid < 1.5)))
    _, ranked = sg.reciprocal_rank_curve(grid, [0.5, 1.5], smooth_rank=True)
    assert np.all(np.diff(ranked) > 0) and ranked[-1] < 1
    f, y = np.array([0.4, -0.3, 1.2]), np.array([4, 2, 5])
    exact, smooth = sg.gap_terms(f, y)
    assert smooth.sum() == pytest.approx(sg.smoothed_gap(f, y))
    from cofiviz.metrics import gap
    S = sg.cumulative_deltas(5)
    assert exact.sum() / S[y].sum() == pytest.approx(gap(y, f, ymax=5))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(-2, 2)), min_size=1, max_size=8))
def test_gap_terms_follow_the_metrics_tie_rule(pairs):
    """Equal scores (drawn from five values, so ties are common): the exact terms over Z are the library's GAP."""
    from cofiviz.metrics import gap
    y = np.array([p[0] for p in pairs])
    f = np.array([float(p[1]) for p in pairs])
    exact, _ = sg.gap_terms(f, y)
    assert exact.sum() / sg.cumulative_deltas(5)[y].sum() == pytest.approx(gap(y, f, ymax=5), rel=1e-12)


# ---------------------------------------------------------------------------------- the contract and learning
class TestGAPfmContract(ModelContract):
    bad_params = [{"seed": -1}, {"rank": -1}, {"learning_rate": 0.0}, {"reg": -1.0}, {"objective": "ndcg"},
                  {"selection": "best"}, {"n_selected": 0}, {"ymax": 0}, {"item_update": "hogwild"}]
    diverging_params = {"learning_rate": 100.0}

    def make_model(self, **params):
        return GAPfm(**{"rank": 3, "max_iter": 20, **params})


def _taste_split(seed=0, n_users=300, n_items=200, per_user=40, rank=2):
    """Top-N data where taste decides both *which* items a user rates and the grade (GAPfm §5.4's setting):
    user u rates ``per_user`` items drawn with weights exp(1.5 t_ui + popularity_i) (Gumbel top-k), grade
    round(3 + t_ui + noise); held-out rated items plus 100 sampled unrated ones are ranked (§5.1)."""
    from cofiviz.protocols import top_n

    rng = np.random.default_rng(seed)
    T = rng.normal(size=(n_users, rank)) @ rng.normal(size=(n_items, rank)).T
    pop = rng.normal(scale=0.5, size=n_items)
    users, items, ratings = [], [], []
    for u in range(n_users):
        its = np.sort(np.argsort(-(1.5 * T[u] + pop + rng.gumbel(size=n_items)))[:per_user])
        users.append(np.full(per_user, u))
        items.append(its)
        ratings.append(np.clip(np.round(3 + T[u, its] + rng.normal(scale=0.5, size=per_user)), 1, 5))
    r = Ratings(np.concatenate(users), np.concatenate(items), np.concatenate(ratings), user_ids=np.arange(n_users),
                item_ids=np.arange(n_items), scale=(1, 5))
    return top_n(r, n_train=20, n_negatives=100, min_user_ratings=30, min_test=5, relevance_threshold=5, seed=seed)


class _Random(PopRec):
    register = False

    def _item_scores(self, counts, sums, train):
        return np.random.default_rng(0).random(len(counts))


def test_beats_random_and_poprec_on_top_n_where_taste_drives_choice():
    from cofiviz.evaluation import evaluate

    split = _taste_split()
    metrics = ["gap@5", "ndcg@5", "p@5"]
    got = evaluate(GAPfm(item_prior=0.0, rank=5, max_iter=100).fit(split.train), split, metrics=metrics).means
    pop = evaluate(PopRec().fit(split.train), split, metrics=metrics).means
    rnd = evaluate(_Random().fit(split.train), split, metrics=metrics).means
    for m in metrics:
        assert got[m] > pop[m] + 0.1 and got[m] > rnd[m] + 0.1, (m, got, pop, rnd)
    # adaptive selection (K = 10 of 20) keeps most of it; random selection of 10 keeps less
    ada = evaluate(GAPfm(item_prior=0.0, rank=5, max_iter=100, selection="adaptive", n_selected=10).fit(split.train),
                   split, metrics=["gap@5"]).means["gap@5"]
    assert ada > pop["gap@5"] + 0.1


def test_gp_and_gr_objectives_learn_the_planted_popularity():
    from contract import planted

    split = planted(seed=2)
    for kind in ("gp", "gr"):
        model = GAPfm(rank=3, reg=0.001, learning_rate=1.0, init_scale=1.0, max_iter=100, objective=kind)
        model.fit(split.train)
        assert mean_metrics(model, split.test, ["ndcg@10"])["ndcg@10"] > random_ndcg(split) + 0.03


def test_extreme_scores_stay_finite_and_exact():
    """Scores far apart (shifted exponentials underflow) and huge scores: value and gradient stay the logistic's."""
    f = np.array([900.0, -900.0, -899.0, 0.0])
    y = np.array([5, 1, 2, 3])
    v, h = sg.smoothed_gap_grad(f, y)
    assert np.isfinite(v) and np.all(np.isfinite(h))
    assert v == pytest.approx(_eq8(f, y, 5), rel=1e-12)


def test_warmup_compiles_every_kernel():
    from cofiviz.models.gapfm import warmup as model_warmup

    sg.warmup()
    model_warmup()


def test_cutoff_grade_per_user():
    """c_mn of appendix D: the grade of user m's n-th best rated item (the lowest when fewer are rated)."""
    r = _table(seed=15, n_users=7, per_user=5)
    for n in (1, 3, 5, 8):
        p = sg.prepare(r, objective="gp", cutoff=n)
        for m in range(r.n_users):
            g_sorted = np.sort(r.ratings[r.user_slice(m)])[::-1]
            assert p.shift[m] == g_sorted[min(n, len(g_sorted)) - 1]


def test_adaptive_selection_matches_a_direct_implementation_of_algorithm1():
    rng = np.random.default_rng(16)
    for _ in range(300):
        n = int(rng.integers(2, 40))
        k_sel = int(rng.integers(1, n + 3))
        f = rng.normal(size=n)
        y = rng.integers(1, 6, n)
        keys = rng.random(n)
        # r: midranks of -y; r_hat: ranks of -f; K largest |r - r_hat|, ties by the smallest key
        r = np.array([np.sum(y > y[k]) + (np.sum(y == y[k]) + 1) / 2 for k in range(n)])
        r_hat = np.empty(n)
        r_hat[np.argsort(-f)] = np.arange(1, n + 1)
        dist = np.abs(r - r_hat)
        expect = set(range(n)) if n <= k_sel else set(np.lexsort((keys, -dist))[:k_sel].tolist())
        idx = np.empty(n, np.int64)
        q = K.select_items(K.SELECT_ADAPTIVE, k_sel, f, y, keys, 5, idx)
        assert set(idx[:q].tolist()) == expect


def _varied_table(seed=0, n_users=7, n_items=40) -> Ratings:
    """Users with 2 to 30 rated items: the user weights differ from user to user."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 31, n_users)
    users = np.repeat(np.arange(n_users), lengths)
    items = np.concatenate([rng.choice(n_items, k, replace=False) for k in lengths])
    return Ratings(users, items, rng.integers(1, 6, len(users)).astype(float), user_ids=np.arange(n_users),
                   item_ids=np.arange(n_items), scale=(1, 5))


@pytest.mark.parametrize("weight", ["one", "inverse_z", "inverse_length"])
def test_user_weights_against_per_user_reference(weight):
    """Eq 9 with each user weight, against eq 8 per user (the one-list function) weighted by hand:
    1, 1/Z_m with Z_m = Σ_i S(y_mi) (eq 3), or 1/n_m."""
    r = _varied_table(seed=5)
    rng = np.random.default_rng(6)
    U, V = rng.normal(size=(r.n_users, 3)), rng.normal(size=(r.n_items, 3))
    S = sg.cumulative_deltas(5)
    want = 0.0
    for m in range(r.n_users):
        its, y = r.items[r.user_slice(m)], r.ratings[r.user_slice(m)].astype(int)
        w = {"one": 1.0, "inverse_z": 1.0 / S[y].sum(), "inverse_length": 1.0 / len(its)}[weight]
        want += w * _eq8(V[its] @ U[m], y, 5)
    lam = 0.2
    want -= 0.5 * lam * (np.sum(U * U) + np.sum(V * V))
    assert sg.objective(U, V, r, lam=lam, weight=weight) == pytest.approx(want, rel=1e-12)
    F, gU, gV = sg.objective_grad(U, V, r, lam=lam, weight=weight)
    np.testing.assert_allclose(gU, _numeric(lambda X: sg.objective(X, V, r, lam=lam, weight=weight), U),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gV, _numeric(lambda X: sg.objective(U, X, r, lam=lam, weight=weight), V),
                               rtol=1e-6, atol=1e-7)


def test_unknown_user_weight_is_refused():
    with pytest.raises(ParameterError, match="weight must be one of"):
        sg.prepare(_table(), weight="z")
    with pytest.raises(ParameterError):
        GAPfm(user_weight="z")


@pytest.mark.parametrize("update", ["sequential", "batch"])
def test_inverse_length_weight_steps_as_one_with_step_over_n(update):
    """Every user with n ratings: ``user_weight="inverse_length"`` with (γ, λ, λ_V) takes the steps of
    ``"one"`` with (γ/n, nλ, nλ_V), iteration after iteration."""
    r = _table(seed=12, n_users=8, n_items=14, per_user=7)
    n = 7
    kw = dict(rank=3, max_iter=5, seed=2, init_scale=0.3, item_update=update)
    a = GAPfm(user_weight="inverse_length", learning_rate=0.4, reg=0.02, item_reg=0.05, **kw).fit(r)
    b = GAPfm(user_weight="one", learning_rate=0.4 / n, reg=0.02 * n, item_reg=0.05 * n, **kw).fit(r)
    np.testing.assert_allclose(a.U_, b.U_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.V_, b.V_, rtol=1e-9, atol=1e-12)


def test_defaults_learn_on_long_lists_where_the_unweighted_step_diverges():
    """MovieLens 100K's fixed-ratio split (half of each user's ratings, up to 368 per user): the step that
    learns on lists of 10 with w_m = 1 (γ = 0.02, λ = 0.1) sends the scores hundreds apart and ranks the
    held-out ratings below item popularity; the defaults (w_m = 1/n_m) keep them within a few units and
    rank above popularity and a random ranking."""
    from cofiviz import datasets, protocols

    split = protocols.make("fixed-ratio", datasets.movielens_100k(), seed=0, train_ratio=0.5)
    unweighted = GAPfm(item_prior=0.0, user_weight="one", learning_rate=0.02, reg=0.1, max_iter=10,
                       seed=0).fit(split.train)
    weighted = GAPfm(item_prior=0.0, max_iter=10, seed=0).fit(split.train)

    def spread(model):
        f = model.U_ @ model.V_.T
        return float(np.max(f.max(axis=1) - f.min(axis=1)))

    assert spread(unweighted) > 300 and spread(weighted) < 30, (spread(unweighted), spread(weighted))
    ndcg = {name: mean_metrics(m, split.test, ["ndcg@10"])["ndcg@10"]
            for name, m in [("one", unweighted), ("inverse_length", weighted), ("pop", PopRec().fit(split.train))]}
    assert ndcg["inverse_length"] > ndcg["pop"] + 0.02 > ndcg["one"] + 0.02, ndcg
    assert ndcg["inverse_length"] > random_ndcg(split) + 0.05, ndcg


# ---------------------------------------------------------------------------------------------- item-mean offset
def _offset_columns(U, V, prior):
    """The offsets as one more factor column: ones for the users, the offsets for the items."""
    return np.column_stack([U, np.ones(len(U))]), np.column_stack([V, prior])


def test_steps_with_item_offsets_follow_the_gradient_at_the_offset_scores():
    """With offsets p the scores are U_m·V_i + p_i. The user step and the batch item step move U and V by lr
    times the gradient of eq 9 at those scores (computed by ``objective_grad`` with the offsets as a factor
    column, itself checked against central differences above); on a one-user table the sequential item step
    (Algorithm 2) is the batch step."""
    r = _varied_table(seed=8)
    p = sg.prepare(r, weight="inverse_length")
    rng = np.random.default_rng(9)
    U, V, prior = rng.normal(size=(r.n_users, 3)), rng.normal(size=(r.n_items, 3)), rng.normal(size=r.n_items)
    lr, lam = 0.3, 0.05
    _, gU, gV = sg.objective_grad(*_offset_columns(U, V, prior), r, lam=lam, weight="inverse_length")
    U1 = U.copy()
    K.user_step(U1, V, prior, p.indptr, p.items, p.s, p.shift, p.scale, p.code, lr, lam, np.empty(r.n_users))
    np.testing.assert_allclose(U1, U + lr * gU[:, :3], rtol=1e-12, atol=1e-13)
    assert not np.allclose(U1, U + lr * sg.objective_grad(U, V, r, lam=lam, weight="inverse_length")[1])
    V1, counts = V.copy(), np.bincount(p.items, minlength=r.n_items)
    K.item_step_batch(U, V1, prior, p.indptr, p.users, p.items, p.grades, p.s, p.shift, p.scale, p.code,
                      K.SELECT_ALL, 20, np.zeros(len(p.items)), p.ymax, lr, lam, counts)
    rated = counts > 0
    np.testing.assert_allclose(V1[rated], (V + lr * gV[:, :3])[rated], rtol=1e-12, atol=1e-13)
    one = r.take(r.users == 0)
    q = sg.prepare(one, weight="inverse_length")
    Vb, Vs = V.copy(), V.copy()
    K.item_step_batch(U, Vb, prior, q.indptr, q.users, q.items, q.grades, q.s, q.shift, q.scale, q.code,
                      K.SELECT_ALL, 20, np.zeros(len(q.items)), q.ymax, lr, lam, np.bincount(q.items, minlength=r.n_items))
    K.item_step_sequential(U, Vs, prior, q.indptr, q.items, q.grades, q.s, q.shift, q.scale, q.code,
                           np.arange(r.n_users, dtype=np.int64), K.SELECT_ALL, 20, np.zeros(len(q.items)), q.ymax,
                           lr, lam, np.zeros(r.n_items))
    np.testing.assert_allclose(Vs, Vb, rtol=1e-12, atol=1e-13)
    assert not np.allclose(Vb, V)


def test_item_offsets_are_the_damped_item_mean_and_shrunk_factors_leave_its_ranking():
    """``item_prior=β`` adds β·(m̃_i − μ) to every score (m̃: the item mean damped by ``prior_damping``); under a
    heavy penalty the factors vanish and GAPfm scores every item by the damped item mean, as ItemMean does."""
    from cofiviz.models import ItemMean

    r = _varied_table(seed=3)
    m = GAPfm(item_prior=2.0, prior_damping=5.0, reg=4.0, learning_rate=0.2, max_iter=30, rank=3).fit(r)
    want = 2.0 * (ItemMean(damping=5.0).fit(r).score(np.zeros(r.n_items, int), np.arange(r.n_items)) - r.global_mean)
    np.testing.assert_allclose(m.prior_, want, rtol=1e-12, atol=1e-12)
    for u in range(r.n_users):
        np.testing.assert_allclose(m.score(np.full(r.n_items, u), np.arange(r.n_items)), want, atol=1e-6)
    off = GAPfm(item_prior=0.0, reg=4.0, learning_rate=0.2, max_iter=30, rank=3).fit(r)
    assert np.all(off.prior_ == 0.0) and np.max(np.abs(off.score(np.zeros(r.n_items, int), np.arange(r.n_items)))) < 1e-6


def test_the_objective_with_item_offsets_against_per_user_reference():
    r = _varied_table(seed=4)
    m = GAPfm(item_prior=1.5, rank=3, max_iter=3, init_scale=0.3, reg=0.2, item_reg=0.1).fit(r)
    want = 0.0
    for u in range(r.n_users):
        its, y = r.items[r.user_slice(u)], r.ratings[r.user_slice(u)].astype(int)
        want += _eq8(m.V_[its] @ m.U_[u] + m.prior_[its], y, 5) / len(its)
    want -= 0.5 * 0.2 * (np.sum(m.U_ ** 2) + np.sum(m.V_ ** 2)) + 0.5 * 0.1 * np.sum(m.V_ ** 2)
    assert m.smoothed_objective() == pytest.approx(want, rel=1e-10)
    assert np.any(m.prior_ != 0.0)


def test_item_offsets_are_saved_and_loaded(tmp_path):
    r = _varied_table(seed=2)
    m = GAPfm(item_prior=1.0, rank=3, max_iter=3).fit(r)
    back = GAPfm.load(m.save(tmp_path / "gapfm"))
    users, items = np.repeat(np.arange(r.n_users), r.n_items), np.tile(np.arange(r.n_items), r.n_users)
    np.testing.assert_array_equal(back.score(users, items), m.score(users, items))
    np.testing.assert_array_equal(back.prior_, m.prior_)
