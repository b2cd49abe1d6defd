"""Synthetic generators: reproducibility, the planted structures, and memory proportional to the ratings."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from cofiviz import ParameterError, Ratings
from cofiviz.datasets import KINDS, netflix_like, synthetic
from cofiviz.datasets.synthetic import _gumbel_top, _sample_pairs


def _energy_share(m: np.ndarray, k: int) -> float:
    """Share of the (row-centred) matrix's squared Frobenius norm in its top-k singular values."""
    m = m - m.mean(axis=1, keepdims=True)
    s = np.linalg.svd(m, compute_uv=False)
    return float((s[:k] ** 2).sum() / (s ** 2).sum())


def _dense(r: Ratings) -> np.ndarray:
    m = np.full((r.n_users, r.n_items), np.nan)
    m[r.users, r.items] = r.ratings
    return m


@pytest.mark.parametrize("kind", KINDS)
def test_shape_counts_and_validity(kind):
    r = synthetic(kind, n_users=300, n_items=200, n_ratings=9000, seed=1)
    assert (len(r), r.n_users, r.n_items) == (9000, 300, 200)
    assert r.scale == (1.0, 5.0)
    assert set(np.unique(r.ratings)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert len(np.unique(r.ratings)) == 5
    assert 2.8 < r.ratings.mean() < 4.2
    counts = r.user_counts()
    assert counts.min() >= r.report["synthetic"]["min_user_ratings"] == 15 and counts.sum() == 9000
    pairs = pd.DataFrame({"u": r.users, "i": r.items})
    assert not pairs.duplicated().any()
    order = np.lexsort((r.items, r.users))
    assert (order == np.arange(len(r))).all()                   # sorted by user, then item
    assert r.report["synthetic"]["kind"] == kind and r.report["synthetic"]["seed"] == 1
    assert len(r.user_info) == 300 and len(r.item_info) == 200
    assert r.item_info["popularity"].sum() == pytest.approx(1.0)


@pytest.mark.parametrize("kind", KINDS)
def test_seeded_reproducibility(kind):
    a = synthetic(kind, n_users=200, n_items=150, density=0.08, seed=7)
    b = synthetic(kind, n_users=200, n_items=150, density=0.08, seed=7)
    c = synthetic(kind, n_users=200, n_items=150, density=0.08, seed=8)
    assert np.array_equal(a.users, b.users) and np.array_equal(a.items, b.items)
    assert np.array_equal(a.ratings, b.ratings)
    pd.testing.assert_frame_equal(a.item_info, b.item_info)
    assert not (np.array_equal(a.items, c.items) and np.array_equal(a.ratings, c.ratings))


def test_local_low_rank_blocks_are_low_rank_and_the_whole_is_not():
    rank, g = 2, 3
    r = synthetic("local_low_rank", n_users=150, n_items=120, density=1.0, rank=rank, n_clusters=g, noise=0.0,
                  user_bias=0.0, seed=3)
    truth = r.truth.dense()
    uc, ic = r.user_info["cluster"].to_numpy(), r.item_info["cluster"].to_numpy()
    assert set(uc) == set(ic) == set(range(g))
    for a, b in itertools.product(range(g), range(g)):
        block = truth[np.ix_(uc == a, ic == b)]
        s = np.linalg.svd(block, compute_uv=False)
        assert s[rank] / s[0] < 1e-4, f"block ({a}, {b}) is not rank {rank}: {s[:rank + 2]}"
    s = np.linalg.svd(truth, compute_uv=False)
    assert s[rank * g * g - 1] / s[0] > 1e-2                   # the whole matrix needs rank × G × H
    assert s[rank * g * g] / s[0] < 1e-4

    # the observed (noisy, quantised) ratings keep the structure: a local rank-2 model explains each
    # block far better than one global rank-2 model explains the matrix
    noisy = synthetic("local_low_rank", n_users=150, n_items=120, density=1.0, rank=rank, n_clusters=g,
                      noise=0.2, seed=3)
    m = _dense(noisy)
    assert not np.isnan(m).any()
    uc, ic = noisy.user_info["cluster"].to_numpy(), noisy.item_info["cluster"].to_numpy()
    local = min(_energy_share(m[np.ix_(uc == a, ic == b)], rank) for a, b in itertools.product(range(g), range(g)))
    assert local > 0.6 > 0.35 > _energy_share(m, rank)


def test_low_rank_truth_has_the_planted_rank():
    r = synthetic("low_rank", n_users=80, n_items=60, density=0.5, rank=4, user_bias=0.0, seed=2)
    s = np.linalg.svd(r.truth.dense(), compute_uv=False)
    assert s[3] / s[0] > 1e-2 and s[4] / s[0] < 1e-4
    with_bias = synthetic("low_rank", n_users=80, n_items=60, density=0.5, rank=4, user_bias=0.3, item_bias=0.3,
                          seed=2)
    s = np.linalg.svd(with_bias.truth.dense(), compute_uv=False)
    assert s[6] / s[0] < 1e-4                                  # + a user and an item offset
    assert "bias" in with_bias.item_info


def test_popularity_is_the_rank1_problem():
    r = synthetic("popularity", n_users=1500, n_items=300, density=0.1, seed=2)
    counts = r.item_counts()
    means = np.bincount(r.items, r.ratings, minlength=r.n_items) / np.maximum(counts, 1)
    quality = r.item_info["quality"].to_numpy()
    enough = counts >= 10
    assert enough.sum() > 200
    assert spearmanr(means[enough], quality[enough])[0] > 0.9      # item means recover quality
    assert spearmanr(counts, r.item_info["popularity"])[0] > 0.9   # sampling follows popularity
    assert spearmanr(counts, quality)[0] > 0.4                     # popular items tend to be good
    # one component (item quality) carries most of the noise-free signal within users' rows
    assert _energy_share(r.truth.dense(np.arange(200)), 1) > 0.7
    low = synthetic("low_rank", n_users=200, n_items=300, density=0.1, seed=2)
    assert _energy_share(low.truth.dense(), 1) < 0.4


def test_min_user_ratings_and_dense_users():
    r = synthetic("low_rank", n_users=100, n_items=40, n_ratings=2500, min_user_ratings=20, seed=4)
    assert r.user_counts().min() >= 20 and r.user_counts().max() <= 40
    full = synthetic("popularity", n_users=30, n_items=25, density=1.0, seed=4)
    assert len(full) == 750 and (full.user_counts() == 25).all()


def test_sampling_is_successive_sampling_without_replacement():
    """Keeping first occurrences of draws with replacement = drawing without replacement ∝ popularity."""
    pop = np.array([1, 2, 3, 5, 8, 13, 0.5, 4.0])
    p = pop / pop.sum()
    k = 3
    exact = np.zeros(len(pop))
    for perm in itertools.permutations(range(len(pop)), k):
        prob, left = 1.0, 1.0
        for i in perm:
            prob *= p[i] / left
            left -= p[i]
        exact[list(perm)] += prob
    rng = np.random.default_rng(0)
    n = 30000
    _, items = _sample_pairs(rng, np.full(n, k), pop)
    assert np.abs(np.bincount(items, minlength=len(pop)) / n - exact).max() < 0.015
    g = np.zeros(len(pop))
    for _ in range(5000):
        g[_gumbel_top(rng, np.log(p), k)] += 1
    assert np.abs(g / 5000 - exact).max() < 0.03
    # chunking does not change the result
    counts = rng.integers(1, 7, size=3000)
    a = _sample_pairs(np.random.default_rng(5), counts, pop, chunk=50)
    b = _sample_pairs(np.random.default_rng(5), counts, pop)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_memory_is_proportional_to_the_ratings():
    """20,000 × 20,000 users × items (a dense float32 matrix would be 1.6 GB): peak memory follows the ratings."""
    peaks = {}
    for n in (100_000, 400_000):
        tracemalloc.start()
        r = synthetic("local_low_rank", n_users=20_000, n_items=20_000, n_ratings=n, seed=0)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(r) == n
        del r
    assert peaks[400_000] < 200 * 400_000, f"{peaks[400_000] / 400_000:.0f} bytes per rating"  # dense: 4,000
    assert 1.5 < peaks[400_000] / peaks[100_000] < 6


def test_netflix_like_scales_down():
    r = netflix_like(n_ratings=200_000, seed=1)
    assert len(r) == 200_000 and r.n_items == 17_770
    assert r.n_users == round(480_189 * 200_000 / 100_480_507)
    assert r.name == "netflix-like"
    assert r.user_counts().max() > 10 * np.median(r.user_counts())        # heavy-tailed activity


def test_continuous_ratings_and_other_scales():
    r = synthetic("low_rank", n_users=50, n_items=40, density=0.3, quantize=False, seed=1)
    assert len(np.unique(r.ratings)) > 50 and r.ratings.min() >= 1 and r.ratings.max() <= 5
    ten = synthetic("popularity", n_users=50, n_items=40, density=0.3, scale=(1, 10), seed=1)
    assert ten.scale == (1.0, 10.0) and ten.ratings.max() <= 10 and len(np.unique(ten.ratings)) > 5


@pytest.mark.parametrize("kwargs,message", [
    ({"kind": "rank1"}, "unknown synthetic kind"),
    ({"n_ratings": 10**9}, "n_ratings must be between"),
    ({"n_ratings": 10, "density": 0.1}, "not both"),
    ({"density": 1.5}, "density must be in"),
    ({"rank": 0}, "rank must be at least 1"),
    ({"scale": (1, 4.5)}, "scale must be two integers"),
    ({"noise": -1}, "must be >= 0"),
    ({"min_user_ratings": 100}, "min_user_ratings=100"),
])
def test_parameter_errors(kwargs, message):
    base = {"n_users": 100, "n_items": 50}
    with pytest.raises(ParameterError, match=message):
        synthetic(**{**base, **kwargs})
