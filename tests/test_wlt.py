"""WLT (Volkovs & Zemel 2012, :mod:`cofiviz.models.wlt`): the model contract, the neighbours' own preferences
against a plain-Python reference on a hand-made table with ties, a training pair blind to its own rating, the item
nobody else rated, LambdaRank's objective against a plain reference and its gradient and Hessian against finite
differences, and learning on planted data (better than random and than PopRec)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cofiviz import Ratings, evaluate
from cofiviz.models import PopRec
from cofiviz.models.wlt import FEATURE_NAMES, WLT

from contract import ModelContract, planted, random_ndcg


class TestWLTContract(ModelContract):
    bad_params = [{"seed": -1}, {"n_neighbors": -1}, {"lr": 0.0}, {"reg": -1.0}, {"sigma": 0.0}, {"ndcg_k": -1},
                  {"tol": -1.0}, {"item_prior": -1.0}]

    def make_model(self, **params):
        return WLT(**{"max_iter": 10, **params})


def hand_made() -> Ratings:
    """Six users, seven items, ratings 1..5 with ties inside users' lists and across them; item 6 is user 5's
    alone, and user 5 rated nothing else."""
    rows = [(0, 0, 5), (0, 1, 3), (0, 2, 3), (0, 3, 1),
            (1, 0, 4), (1, 1, 4), (1, 2, 2), (1, 4, 5),
            (2, 1, 5), (2, 2, 1), (2, 3, 3), (2, 4, 3), (2, 5, 2),
            (3, 0, 2), (3, 2, 2), (3, 3, 4), (3, 5, 5),
            (4, 0, 3), (4, 4, 1), (4, 5, 3), (5, 6, 4)]
    u, i, r = (np.array(c) for c in zip(*rows))
    return Ratings(u, i, r.astype(float), user_ids=np.arange(6), item_ids=np.arange(7), scale=(1, 5), name="hand")


def reference_features(table: Ratings, u: int, n: int, K: int) -> np.ndarray:
    """The module's definitions by plain loops."""
    R = {(int(a), int(b)): float(c) for a, b, c in zip(table.users, table.items, table.ratings)}
    lo, hi = min(R.values()), max(R.values())
    span = hi - lo
    items_of = {v: sorted(b for (a, b) in R if a == v) for v in range(table.n_users)}

    def agreement(v):
        return sum(1 - abs(R[u, m] - R[v, m]) / span for m in items_of.get(u, []) if (v, m) in R and m != n)

    out = np.zeros(18)
    raters = [v for v in range(table.n_users) if (v, n) in R and v != u]
    if not raters:
        out[17] = 1.0
        return out
    chosen = sorted(raters, key=lambda v: (-agreement(v), v))
    chosen = chosen if K == 0 else chosen[:K]
    a = lambda x: math.log(x - lo + 1)  # noqa: E731
    prefs = []
    for k in chosen:
        others, r = [m for m in items_of[k] if m != n], R[k, n]
        if not others:
            prefs.append([0.0] * 7)
            continue
        below = [R[k, m] for m in others if R[k, m] < r]
        above = [R[k, m] for m in others if R[k, m] > r]
        prefs.append([len(below), sum(r - x for x in below) / span, sum(a(r) - a(x) for x in below),
                      len(above), sum(x - r for x in above) / span, sum(a(x) - a(r) for x in above),
                      sum(1 for m in others if R[k, m] == r)])
        prefs[-1] = [p / len(others) for p in prefs[-1]]
    P = np.array(prefs)
    out[:7], out[7:14] = P.mean(axis=0), P.std(axis=0)
    net, slots = P[:, 0] - P[:, 3], (K if K > 0 else len(chosen))
    out[14:17] = [(net > 0).sum() / slots, (net < 0).sum() / slots, (net == 0).sum() / slots]
    return out


@pytest.mark.parametrize("K", [0, 1, 2, 5])
def test_features_equal_the_reference_for_rated_and_unrated_items(K):
    table = hand_made()
    model = WLT(n_neighbors=K, max_iter=1).fit(table)
    users, items = np.meshgrid(np.arange(6), np.arange(7), indexing="ij")
    X = model.pair_features(users.ravel(), items.ravel())
    assert X.shape == (42, 18) and model.feature_names() == FEATURE_NAMES
    for row, (u, n) in enumerate(zip(users.ravel(), items.ravel())):
        np.testing.assert_allclose(X[row], reference_features(table, u, n, K), rtol=0, atol=1e-14,
                                   err_msg=f"pair ({u}, {n}), K = {K}")
    # by hand: item 6 has no rater but user 5, so for user 5 it is the item of b0 alone; for the others user 5,
    # who rated nothing else, is a neighbour without preferences (a tie on balance)
    assert X[5 * 7 + 6].tolist() == [0.0] * 17 + [1.0]
    assert X[6, :14].tolist() == [0.0] * 14 and X[6, 16] == (1.0 if K in (0, 1) else 1.0 / K) and X[6, 17] == 0.0
    # user 0's neighbour for item 0 with K = 1: users 1, 3 and 4 rated it; user 1 agrees most on items 1 and 2
    # (|3 − 4| and |3 − 2|: 0.75 each), and in user 1's own list item 0 (4) beats item 2 (2), ties item 1 and
    # loses to item 4 (5): W = L = T = 1/3
    if K == 1:
        np.testing.assert_allclose(X[0, [0, 3, 6]], [1 / 3, 1 / 3, 1 / 3])
        assert X[0, 16] == 1.0  # a tie on balance, out of K = 1 slot


def _dense_table(seed: int, n_users: int, n_items: int, density: float) -> Ratings:
    """A table of ``n_users`` × ``n_items`` about ``density`` rated on a 1-5 scale: items of many raters, agreements
    that tie often."""
    rng = np.random.default_rng(seed)
    u, i = np.nonzero(rng.random((n_users, n_items)) < density)
    return Ratings(u, i, rng.integers(1, 6, len(u)).astype(float), user_ids=np.arange(n_users),
                   item_ids=np.arange(n_items), scale=(1, 5))


@pytest.mark.parametrize("seed, n_users, n_items, density", [(0, 30, 8, 0.7), (1, 30, 8, 0.7), (2, 80, 3, 0.9)])
def test_features_equal_the_reference_on_items_of_many_raters_and_do_not_depend_on_the_cut(seed, n_users, n_items,
                                                                                          density):
    """The K most agreeing of an item's many raters (equal agreement: the lower index), chosen by insertion (up to
    64) or by sorting them all (K = 0 and K = 70 of about 72 raters): the reference's rows for every pair, two
    users without ratings included; and the same bits whatever the number of runs the users' groups are cut into."""
    from cofiviz.models import _neighbour_preferences as NP
    from cofiviz.models.wlt import _Table

    table = _dense_table(seed, n_users, n_items, density)
    users, items = (a.ravel() for a in np.meshgrid(np.arange(n_users + 2), np.arange(n_items), indexing="ij"))
    trained = users < n_users
    untrained = np.flatnonzero(~trained)
    for K in (0, 1, 3, 30, 70):
        X = WLT(n_neighbors=K, max_iter=1).fit(table).pair_features(users[trained], items[trained])
        for row, (u, n) in enumerate(zip(users[trained], items[trained])):
            np.testing.assert_allclose(X[row], reference_features(table, u, n, K), rtol=0, atol=1e-14,
                                       err_msg=f"pair ({u}, {n}), K = {K}")
        t = _Table(table)
        group_ptr = np.arange(0, len(users) + 1, n_items, dtype=np.int64)
        cuts = []
        for runs in (1, 3, 1000):
            out = np.empty((len(users), NP.N_FEATURES))
            NP.features(users.astype(np.int64), items.astype(np.int64), group_ptr, K, t.indptr, t.items, t.ratings,
                        t.item_indptr, t.positions, t.item_users, t.item_ratings, t.prefs, t.r_range, n_users,
                        n_items, runs, out)
            cuts.append(out.tobytes())
        assert cuts[0] == cuts[1] == cuts[2], K
        raw = np.frombuffer(cuts[0]).reshape(-1, NP.N_FEATURES)
        np.testing.assert_array_equal(raw[trained], X)
        for row in untrained:                       # no agreement with anyone: the first K raters
            np.testing.assert_allclose(raw[row], reference_features(table, users[row], items[row], K), rtol=0,
                                       atol=1e-14, err_msg=f"untrained user {users[row]}, item {items[row]}, K = {K}")


def test_a_training_pair_does_not_see_its_own_rating():
    table = hand_made()
    changed = table.ratings.copy()
    changed[0] = 1.0  # user 0's rating of item 0: 5 -> 1
    other = Ratings(table.users, table.items, changed, user_ids=table.user_ids, item_ids=table.item_ids, scale=(1, 5))
    for K in (1, 2):
        a = WLT(n_neighbors=K, max_iter=1).fit(table).pair_features(0, 0)
        b = WLT(n_neighbors=K, max_iter=1).fit(other).pair_features(0, 0)
        np.testing.assert_array_equal(a, b)


def test_the_neighbours_are_those_who_agree_not_those_who_share_most():
    """User 0 rated items 0-3; user 1 rated items 1-3 as user 0 did, user 2 rated items 1-3 and 5 opposite. Both
    rated item 4; with K = 1 user 1 describes it (agreement 3 against 0), although user 2 shares as many items."""
    rows = [(0, 0, 5), (0, 1, 5), (0, 2, 3), (0, 3, 1),
            (1, 1, 5), (1, 2, 3), (1, 3, 1), (1, 4, 5),
            (2, 1, 1), (2, 2, 3), (2, 3, 5), (2, 4, 1), (2, 5, 3)]
    u, i, r = (np.array(c) for c in zip(*rows))
    table = Ratings(u, i, r.astype(float), user_ids=np.arange(3), item_ids=np.arange(6), scale=(1, 5))
    x = WLT(n_neighbors=1, max_iter=1).fit(table).pair_features(0, 4)[0]
    assert x[0] == pytest.approx(2 / 3) and x[14] == 1.0  # user 1: item 4 (5) beats items 2 and 3, ties item 1


# ------------------------------------------------------------------------------------------------ LambdaRank
def _softplus(z):
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def reference_objective(list_ptr, labels, X, w, sigma, reg, k=0, offset=None):
    """By plain loops: LambdaRank's |ΔNDCG|-weighted logistic pair loss, mean over lists with a pair (the
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
    list_ptr, labels, X, items = small._training_table().lists(4)
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


@pytest.mark.parametrize("block", [1, 5, 12, 4096])
def test_the_objective_run_a_block_of_lists_at_a_time_is_the_sum_of_every_lists_rows(small, block, monkeypatch):
    """The gradients and Hessians are held a block of lists at a time; whatever the block, the result is, to the
    last bit, the sum NumPy computes of every list's rows held at once."""
    from cofiviz.models import _lambdarank as LR
    from cofiviz.models import _lambdarank_kernels as LK

    list_ptr, labels, X, items = small._training_table().lists(4)
    w = np.random.default_rng(5).normal(0, 1.0, X.shape[1])
    n, F = len(list_ptr) - 1, X.shape[1]
    s = np.empty(len(X))
    LK.linear_scores(X, w, s)
    s += small.prior_[items]
    loss_u, grad_u, hess_u = np.empty(n), np.empty((n, F)), np.empty((n, F, F))
    active = LK.lambdarank(list_ptr, labels, X, s, float(small.sigma), 0, True, 0, loss_u, grad_u, hess_u)
    assert 0 < active.sum() < n or active.all()
    monkeypatch.setattr(LR, "_LISTS_PER_BLOCK", block)
    f, g, H = small.objective(w, hessian=True)
    n_active, reg = active.sum(), float(small.reg)
    assert f == loss_u[active].sum() / n_active + 0.5 * reg * float(np.sum(w * w))
    assert np.array_equal(g, grad_u[active].sum(axis=0) / n_active + reg * w)
    assert np.array_equal(H, hess_u[active].sum(axis=0) / n_active + reg * np.eye(F))


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
    """60 users: K = 10 neighbours, a sixth of them, pick out the users of like taste."""
    split = planted(seed=seed)
    wlt = evaluate(WLT(n_neighbors=10, max_iter=30).fit(split.train), split, metrics=["ndcg@10"]).means["ndcg@10"]
    pop = evaluate(PopRec().fit(split.train), split, metrics=["ndcg@10"]).means["ndcg@10"]
    assert wlt > random_ndcg(split) + 0.1
    assert wlt > pop


def test_bad_values_are_refused_by_name():
    with pytest.raises(Exception, match="n_neighbors"):
        WLT(n_neighbors=-1)
    model = WLT(max_iter=1).fit(hand_made())
    with pytest.raises(Exception, match="items must be indices"):
        model.pair_features(0, 7)


def test_a_loaded_model_scores_from_the_saved_training_table(tmp_path):
    split = planted(seed=1)
    model = WLT(max_iter=5).fit(split.train)
    back = WLT.load(model.save(tmp_path / "m"))
    np.testing.assert_array_equal(back.pair_features(split.test.users, split.test.items),
                                  model.pair_features(split.test.users, split.test.items))
    assert back.objective(back.w_)[0] == pytest.approx(model.objective(model.w_)[0], rel=1e-15)
