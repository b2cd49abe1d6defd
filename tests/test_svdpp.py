"""SVD++ (Koren, KDD 2008, §2.3): the model contract, the SGD updates against finite differences of a plain
NumPy objective, learning planted structure better than PopRec and random, and the implicit term (which
items a user rated) carrying what RegSVD cannot see."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cofiviz import Ratings, Split, evaluate, protocols
from cofiviz.datasets import synthetic
from cofiviz.models import PopRec, RegSVD
from cofiviz.models import _svdpp_kernels as K
from cofiviz.models.svdpp import SVDpp

from contract import ModelContract, planted, random_ndcg


class TestSVDppContract(ModelContract):
    bad_params = [{"seed": -1}, {"rank": 0}, {"lr": 0.0}, {"reg": -1.0}, {"reg_bias": -0.5}, {"init_scale": 0.0}]
    diverging_params = {"lr": 10.0}

    def make_model(self, **params):
        return SVDpp(**{"rank": 3, "max_iter": 20, **params})


# ---------------------------------------------------------------------------------------------- the updates
def _block_objective(u, indptr, items, ratings, P, Q, Y, bu, bi, mu, reg, reg_bias):
    """User ``u``'s terms of the objective, with plain loops: Σ_i [(r − r̂)² + λ_b(b_u² + b_i²) + λ(‖p_u‖² +
    ‖q_i‖² + Σ_{j∈N(u)} ‖y_j‖²)] over u's ratings, r̂ from eq 3."""
    rated = [int(items[a]) for a in range(indptr[u], indptr[u + 1])]
    z = np.zeros(P.shape[1])
    for j in rated:
        z = z + Y[j]
    z = z / np.sqrt(len(rated))
    total = 0.0
    for a in range(indptr[u], indptr[u + 1]):
        i = int(items[a])
        pred = mu + bu[u] + bi[i] + float(np.dot(Q[i], P[u] + z))
        total += (ratings[a] - pred) ** 2
        total += reg_bias * (bu[u] ** 2 + bi[i] ** 2)
        total += reg * (np.dot(P[u], P[u]) + np.dot(Q[i], Q[i]) + sum(np.dot(Y[j], Y[j]) for j in rated))
    return total


def test_one_user_block_steps_down_the_gradient_of_its_objective():
    """With a tiny step, one pass over one user's block moves every parameter by −γ/2 times the gradient of
    that user's block objective (finite differences of the NumPy reference above)."""
    train = planted(seed=3).train
    indptr, items, ratings = train.indptr.astype(np.int64), train.items.astype(np.int32), train.ratings
    rng = np.random.default_rng(0)
    m, n, r = train.n_users, train.n_items, 3
    state = {"P": rng.normal(scale=0.5, size=(m, r)), "Q": rng.normal(scale=0.5, size=(n, r)),
             "Y": rng.normal(scale=0.5, size=(n, r)), "bu": rng.normal(scale=0.3, size=m),
             "bi": rng.normal(scale=0.3, size=n)}
    mu, reg, reg_bias, lr = float(train.global_mean), 0.07, 0.03, 1e-7
    u = 5
    rated = items[indptr[u]:indptr[u + 1]]
    assert len(rated) >= 10

    def objective(s):
        return _block_objective(u, indptr, items, ratings, s["P"], s["Q"], s["Y"], s["bu"], s["bi"], mu, reg, reg_bias)

    after = {k: v.copy() for k, v in state.items()}
    within = np.arange(len(ratings), dtype=np.int64)[::-1].copy()   # any order of the block's positions
    within[indptr[u]:indptr[u + 1]] = rng.permutation(np.arange(indptr[u], indptr[u + 1]))
    K.sgd_epoch(indptr, items, ratings, np.array([u], dtype=np.int64), within, after["P"], after["Q"], after["Y"],
                after["bu"], after["bi"], mu, lr, reg, reg_bias)

    touched = {"P": [(u, c) for c in range(r)], "bu": [(u,)],
               "Q": [(i, c) for i in rated for c in range(r)], "Y": [(j, c) for j in rated for c in range(r)],
               "bi": [(i,) for i in rated]}
    h = 1e-6
    for key, entries in touched.items():
        step = np.array([(after[key][e] - state[key][e]) / lr for e in entries])
        grad = []
        for e in entries:
            plus = {k: v.copy() for k, v in state.items()}
            minus = {k: v.copy() for k, v in state.items()}
            plus[key][e] += h
            minus[key][e] -= h
            grad.append((objective(plus) - objective(minus)) / (2 * h))
        np.testing.assert_allclose(step, -0.5 * np.array(grad), rtol=1e-5, atol=1e-6, err_msg=key)
        # nothing outside the user's block moves
        rest = np.ones(state[key].shape, dtype=bool)
        for e in entries:
            rest[e] = False
        np.testing.assert_array_equal(after[key][rest], state[key][rest], err_msg=key)


def test_scores_are_eq_3_with_the_training_items_as_implicit_feedback():
    s = planted(seed=1)
    m = SVDpp(rank=4, max_iter=3, seed=2).fit(s.train)
    t = s.train
    for u in (0, 11, 40):
        rated = t.items[t.user_slice(u)]
        z = m.Y_[rated].sum(axis=0) / np.sqrt(len(rated))
        items = np.arange(t.n_items)
        want = m.mu_[0] + m.bu_[u] + m.bi_ + m.Q_ @ (m.P_[u] + z)
        np.testing.assert_allclose(m.score(u, items), want, rtol=1e-12, atol=1e-12)
    assert m.mu_[0] == pytest.approx(t.global_mean)


def test_seeded_epochs_repeat_to_the_bit_and_the_seed_matters():
    s = planted(seed=2)
    a = SVDpp(rank=3, seed=5, max_iter=4).fit(s.train)
    b = SVDpp(rank=3, seed=5, max_iter=4).fit(s.train)
    c = SVDpp(rank=3, seed=6, max_iter=4).fit(s.train)
    for key in ("P", "Q", "Y", "bu", "bi"):
        np.testing.assert_array_equal(a._state()[key], b._state()[key])
    assert not np.array_equal(a.Y_, c.Y_)
    assert [h["loss"] for h in a.history_] == [h["loss"] for h in b.history_]


# ---------------------------------------------------------------------------------------------- learning
@pytest.fixture(scope="module")
def local_split():
    r = synthetic("local_low_rank", n_users=300, n_items=200, density=0.2, rank=2, n_clusters=3, noise=0.2,
                  user_bias=0.0, seed=0)
    return protocols.fixed_ratio(r, 0.5, seed=0)


def test_learns_planted_taste_better_than_poprec_and_random(local_split):
    s = local_split
    model = SVDpp(rank=10, max_iter=60, tol=0.0, seed=0).fit(s.train)
    losses = [h["loss"] for h in model.history_]
    assert losses[-1] < 0.5 * losses[0]
    got = evaluate(model, s, metrics=["ndcg@10"]).means["ndcg@10"]
    pop = evaluate(PopRec().fit(s.train), s, metrics=["ndcg@10"]).means["ndcg@10"]
    assert got > pop + 0.05, (got, pop)
    assert got > random_ndcg(s) + 0.05, (got, random_ndcg(s))


def _which_rated(seed: int = 0, n_donors: int = 40, n_cold: int = 40, n_marks: int = 20, n_targets: int = 20,
                 per_user: int = 8) -> Split:
    """Two groups of users whose taste shows only in which items they rate.

    Each group has its own ``n_marks`` "mark" items, which its users rate 2, 3 or 4 at random (the value says
    nothing), ``per_user`` of them each; half of the ``n_targets`` target items are liked (4-5) by one group
    and disliked (1-2) by the other. Donor users rate every target in training; cold users' target ratings
    are the test. A cold user's training ratings carry their group only through which marks they rated.
    """
    rng = np.random.default_rng(seed)
    marks = {0: np.arange(n_marks), 1: np.arange(n_marks, 2 * n_marks)}
    targets = np.arange(2 * n_marks, 2 * n_marks + n_targets)
    users, items, ratings, is_test = [], [], [], []
    u = 0
    for group in (0, 1):
        for cold in [False] * n_donors + [True] * n_cold:
            its = np.sort(rng.choice(marks[group], size=per_user, replace=False))
            liked = (targets < targets[0] + n_targets // 2) == (group == 0)
            users.append(np.full(per_user + n_targets, u))
            items.append(np.concatenate([its, targets]))
            ratings.append(np.concatenate([rng.integers(2, 5, size=per_user),
                                           np.where(liked, rng.integers(4, 6, size=n_targets),
                                                    rng.integers(1, 3, size=n_targets))]).astype(float))
            is_test.append(np.concatenate([np.zeros(per_user, dtype=bool), np.full(n_targets, cold)]))
            u += 1
    full = Ratings(np.concatenate(users), np.concatenate(items), np.concatenate(ratings), user_ids=np.arange(u),
                   item_ids=np.arange(2 * n_marks + n_targets), scale=(1, 5), name="which-rated")
    # Ratings sorts by (user, item): the marks come before the targets in each user's rows, as built above
    return Split(train=full.take(~np.concatenate(is_test), name="train"),
                 test=full.take(np.concatenate(is_test), name="test"), protocol={"name": "which-rated", "seed": seed})


def test_the_implicit_term_finds_what_regsvd_cannot_see():
    s = _which_rated(seed=0)
    params = {"rank": 5, "max_iter": 60, "tol": 0.0, "seed": 0}
    svdpp = evaluate(SVDpp(**params).fit(s.train), s, metrics=["ndcg@10"]).means["ndcg@10"]
    regsvd = evaluate(RegSVD(**params).fit(s.train), s, metrics=["ndcg@10"]).means["ndcg@10"]
    rnd = random_ndcg(s)
    # the best a model can do is rank the group's liked targets first, their 4s and 5s in any order: about 0.91
    assert svdpp > 0.85, svdpp
    assert regsvd < rnd + 0.1, (regsvd, rnd)        # RegSVD has only the marks' uninformative values
    assert svdpp > regsvd + 0.3, (svdpp, regsvd)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=0, max_size=12), st.data())
def test_block_order_is_the_order_of_user_then_key(counts, data):
    """Each user's block sorted by its keys, stably (equal keys keep the table's order): ``np.lexsort``."""
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    users = np.repeat(np.arange(len(counts)), counts)
    keys = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75]), min_size=len(users),
                                       max_size=len(users))), dtype=np.float64)
    within = np.full(len(users), -1, dtype=np.int64)
    K.block_order(indptr, keys, within)
    np.testing.assert_array_equal(within, np.lexsort((keys, users)))


def test_tables_and_pages_call_it_svd_plus_plus():
    from cofiviz.models import PopRec
    from cofiviz.reproductions.leaderboard import leaderboard_methods

    assert SVDpp.display_name() == "SVD++" and PopRec.display_name() == "PopRec"
    labels = {m.model: m.label for m in leaderboard_methods()}
    assert labels["svdpp"] == "SVD++" and labels["poprec"] == "PopRec"
