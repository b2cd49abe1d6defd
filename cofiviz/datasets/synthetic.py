"""Seeded synthetic ratings with planted structure, from toy sizes to Netflix size.

Every generator works the same way:

1. **Who rates what.** Each user gets a number of ratings (at least ``min_user_ratings``; the rest is
   spread over users by log-normal activity weights, ``user_skew``), and draws that many *distinct*
   items with probability proportional to a log-normal item popularity (``item_skew``): drawing with
   replacement and keeping first occurrences is exactly successive sampling without replacement,
   done in vectorised chunks; the rare user whose draws run short (or who rates more than half of the
   items) is sampled exactly with the Gumbel-top-k trick instead. Nothing of size
   ``n_users × n_items`` is ever built: time and memory grow with the number of ratings.
2. **What the rating is.** A planted, noise-free score (the :class:`Planted` model, standardised to
   variance 1), plus Gaussian noise of standard deviation ``noise`` (relative to the signal), is
   quantised to the integer scale: ``rating = clip(round(centre + spread · z), lo, hi)`` with
   ``centre = lo + 0.625 (hi - lo)`` and ``spread = (hi - lo) / 4`` — on 1..5 that is ``round(3.5 + z)``,
   about 2 / 14 / 34 / 34 / 16 % of ratings 1..5 (MovieLens: 6 / 11 / 27 / 34 / 21 %).

The planted structures (``kind``):

``"local_low_rank"``
    Users fall into ``n_clusters`` groups and items into ``n_clusters`` groups; every block
    (user group g, item group h) has its *own* rank-``rank`` model: user u has one factor vector per
    item group, ``U[u, h]``, item i one per user group, ``V[i, g]``, and the score is
    ``U[u, h(i)] · V[i, g(u)]`` (plus a user bias). Each block is rank ``rank``; the whole matrix has
    rank up to ``rank × G × H``, so local models (LLORMA, LCR) fit it where one global model of rank
    ``rank`` cannot. Cluster labels are in ``user_info["cluster"]`` / ``item_info["cluster"]``.
``"popularity"``
    Item quality dominates: score = ``sqrt(quality_share) · q_i + sqrt(1 - quality_share) · U_u · V_i``
    (plus a user bias), with ``quality_share = 0.8`` by default, and popular items are more often
    good (log-popularity correlates with quality, ``popularity_quality_corr``). A rank-1 model, or
    just the item means, ranks well: the "rank-1 problem". Quality is ``item_info["quality"]``.
``"low_rank"``
    One global rank-``rank`` model ``U_u · V_i`` (plus user and optional item biases).

The returned :class:`~cofiviz.Ratings` has ``user_info`` / ``item_info`` with the planted labels,
``ratings.truth`` (the :class:`Planted` model: ``truth.score(users, items)`` gives noise-free scores)
and ``ratings.report["synthetic"]`` with every parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..util import elementary
from ..util.errors import ParameterError
from ..ratings import Ratings

__all__ = ["synthetic", "netflix_like", "tiny", "Planted", "KINDS", "NETFLIX"]

KINDS = ("local_low_rank", "popularity", "low_rank")
#: The Netflix Prize training set's shape.
NETFLIX = {"n_users": 480_189, "n_items": 17_770, "n_ratings": 100_480_507}
_CHUNK = 1 << 20  # draws (or scored pairs) handled at once


@dataclass
class Planted:
    """The noise-free model behind a synthetic dataset.

    ``score(users, items)`` is standardised (about mean 0, variance 1 over random pairs); the
    ratings are ``quantise(score + noise)``. Factors are float32.
    """

    kind: str
    rank: int
    user_factors: np.ndarray            # (n_users, r), or (n_users, H, r) for local_low_rank
    item_factors: np.ndarray            # (n_items, r), or (n_items, G, r) for local_low_rank
    user_bias: np.ndarray               # (n_users,)
    item_bias: np.ndarray               # (n_items,) (the weighted quality for "popularity")
    factor_weight: float
    scale_sd: float                      # the signal's standard deviation before standardising
    user_cluster: np.ndarray | None = None
    item_cluster: np.ndarray | None = None
    params: dict = field(default_factory=dict)

    @property
    def n_users(self) -> int:
        return len(self.user_bias)

    @property
    def n_items(self) -> int:
        return len(self.item_bias)

    def score(self, users, items) -> np.ndarray:
        """Noise-free standardised scores of the pairs ``(users[k], items[k])`` (float32)."""
        users = np.asarray(users, dtype=np.int64)
        items = np.asarray(items, dtype=np.int64)
        out = np.empty(len(users), dtype=np.float32)
        for s in range(0, len(users), _CHUNK):
            u, i = users[s:s + _CHUNK], items[s:s + _CHUNK]
            if self.kind == "local_low_rank":
                a = self.user_factors[u, self.item_cluster[i]]
                b = self.item_factors[i, self.user_cluster[u]]
            else:
                a, b = self.user_factors[u], self.item_factors[i]
            dot = np.einsum("ij,ij->i", a, b)
            out[s:s + _CHUNK] = (self.factor_weight * dot + self.user_bias[u] + self.item_bias[i]) / self.scale_sd
        return out

    def dense(self, users=None, items=None) -> np.ndarray:
        """The noise-free scores of every pair of ``users`` × ``items`` (small sets only)."""
        users = np.arange(self.n_users) if users is None else np.asarray(users)
        items = np.arange(self.n_items) if items is None else np.asarray(items)
        uu, ii = np.meshgrid(users, items, indexing="ij")
        return self.score(uu.ravel(), ii.ravel()).reshape(len(users), len(items))


# ---------------------------------------------------------------------------------------------- sampling
def _user_counts(rng: np.random.Generator, n_users: int, n_items: int, n_ratings: int, minimum: int,
                 skew: float) -> np.ndarray:
    """Ratings per user: ``minimum`` each, the rest by log-normal activity, capped at ``n_items``."""
    counts = np.full(n_users, minimum, dtype=np.int64)
    remaining = n_ratings - int(counts.sum())
    weights = rng.lognormal(0.0, skew, n_users) if skew > 0 else np.ones(n_users)
    active = counts < n_items
    while remaining > 0:
        p = np.where(active, weights, 0.0)
        p = p / p.sum()
        counts += rng.multinomial(remaining, p)
        over = np.maximum(counts - n_items, 0)
        remaining = int(over.sum())
        counts -= over
        active = counts < n_items
    return counts


def _gumbel_top(rng: np.random.Generator, log_p: np.ndarray, k: int) -> np.ndarray:
    """k distinct items drawn successively with probabilities exp(log_p), sorted (Gumbel-top-k)."""
    n = len(log_p)
    if k >= n:
        return np.arange(n, dtype=np.int32)
    g = log_p + rng.gumbel(size=n)
    return np.sort(np.argpartition(-g, k - 1)[:k]).astype(np.int32)


def _sample_pairs(rng: np.random.Generator, counts: np.ndarray, popularity: np.ndarray,
                  chunk: int = _CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """(users, items) sorted by user then item; user u gets ``counts[u]`` distinct items."""
    n_users, n_items = len(counts), len(popularity)
    p = popularity / popularity.sum()
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    log_p = elementary.log(np.maximum(p, 1e-300))
    offsets = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    users_out = np.repeat(np.arange(n_users, dtype=np.int32), counts)
    items_out = np.empty(total, dtype=np.int32)
    exact = counts > n_items // 2                       # dense users: exact sampling below
    draws = np.where(exact, 0, np.ceil(counts * 1.25).astype(np.int64) + 8)
    redo: list[np.ndarray] = [np.flatnonzero(exact)]
    cum = np.concatenate([[0], np.cumsum(draws)])
    a = 0
    while a < n_users:
        # users a..b-1 whose draws fit in one chunk (at least one user)
        b = max(a + 1, int(np.searchsorted(cum, cum[a] + chunk, side="right")) - 1)
        b = min(b, n_users)
        d = draws[a:b]
        n_draw = int(d.sum())
        if n_draw == 0:
            a = b
            continue
        lu = np.repeat(np.arange(b - a, dtype=np.int64), d)
        it = np.searchsorted(cdf, rng.random(n_draw), side="right").astype(np.int64)
        np.minimum(it, n_items - 1, out=it)
        keys = lu * n_items + it
        del it
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        first = np.ones(n_draw, dtype=bool)
        first[1:] = sk[1:] != sk[:-1]
        keep = np.zeros(n_draw, dtype=bool)
        keep[order[first]] = True                        # first occurrence of each (user, item), draw order
        kc = np.cumsum(keep)
        starts = np.concatenate([[0], np.cumsum(d)[:-1]])
        kept_before = np.where(starts > 0, kc[np.maximum(starts - 1, 0)], 0)
        rank = kc - 1 - kept_before[lu]
        want = counts[a:b]
        sel = keep & (rank < want[lu])
        got = np.bincount(lu[sel], minlength=b - a)
        short = (got < want) & (d > 0)
        if short.any():
            redo.append(a + np.flatnonzero(short))
            sel &= ~short[lu]
        chosen = sk[first & sel[order]]                   # sorted by (user, item)
        cu = chosen // n_items
        ci = (chosen - cu * n_items).astype(np.int32)
        ok_counts = np.where(short | (d == 0), 0, want)
        start_in_chosen = np.concatenate([[0], np.cumsum(ok_counts)[:-1]])
        pos = offsets[a + cu] + (np.arange(len(chosen)) - start_in_chosen[cu])
        items_out[pos] = ci
        a = b
    for u in np.concatenate(redo).astype(np.int64):
        if counts[u]:
            items_out[offsets[u]:offsets[u + 1]] = _gumbel_top(rng, log_p, int(counts[u]))
    return users_out, items_out


def _quantise(z: np.ndarray, scale: tuple[int, int], quantize: bool) -> np.ndarray:
    lo, hi = scale
    x = lo + 0.625 * (hi - lo) + (hi - lo) / 4.0 * z.astype(np.float64)
    if quantize:
        np.floor(x + 0.5, out=x)
    return np.clip(x, lo, hi, out=x)


# ---------------------------------------------------------------------------------------------- planting
def _plant(rng: np.random.Generator, kind: str, n_users: int, n_items: int, rank: int, clusters: tuple[int, int],
           user_bias: float, item_bias: float, quality_share: float) -> tuple[Planted, np.ndarray]:
    """The planted model and the standardised item variable that popularity may correlate with."""
    ub = rng.normal(0.0, user_bias, n_users).astype(np.float32) if user_bias > 0 else np.zeros(n_users, np.float32)
    user_cluster = item_cluster = None
    sd_u = 1.0 / math.sqrt(rank)
    if kind == "local_low_rank":
        g, h = clusters
        user_cluster = rng.integers(0, g, n_users).astype(np.int32)
        item_cluster = rng.integers(0, h, n_items).astype(np.int32)
        uf = rng.normal(0.0, sd_u, (n_users, h, rank)).astype(np.float32)
        vf = rng.normal(0.0, 1.0, (n_items, g, rank)).astype(np.float32)
    else:
        uf = rng.normal(0.0, sd_u, (n_users, rank)).astype(np.float32)
        vf = rng.normal(0.0, 1.0, (n_items, rank)).astype(np.float32)
    if kind == "popularity":
        quality = rng.normal(0.0, 1.0, n_items)
        fw = math.sqrt(1.0 - quality_share)
        ib = (math.sqrt(quality_share) * quality).astype(np.float32)
        var = quality_share + fw ** 2 + user_bias ** 2
        linked = quality
    else:
        fw = 1.0
        if item_bias > 0:
            ib = rng.normal(0.0, item_bias, n_items).astype(np.float32)
            linked = ib / item_bias
        else:
            ib = np.zeros(n_items, np.float32)
            linked = np.zeros(n_items)
        var = 1.0 + user_bias ** 2 + item_bias ** 2
    planted = Planted(kind=kind, rank=rank, user_factors=uf, item_factors=vf, user_bias=ub, item_bias=ib,
                      factor_weight=fw, scale_sd=math.sqrt(var), user_cluster=user_cluster,
                      item_cluster=item_cluster)
    return planted, np.asarray(linked, dtype=np.float64)


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ParameterError(msg)


def synthetic(kind: str = "local_low_rank", n_users: int = 1000, n_items: int = 500, n_ratings: int | None = None,
              density: float | None = None, rank: int | None = None, n_clusters: int | tuple[int, int] = 4,
              seed: int = 0, scale: tuple[int, int] = (1, 5), noise: float = 0.5,
              min_user_ratings: int | None = None, user_skew: float = 1.0, item_skew: float = 1.0,
              user_bias: float = 0.3, item_bias: float = 0.0, quality_share: float = 0.8,
              popularity_quality_corr: float = 0.6, quantize: bool = True, name: str | None = None) -> Ratings:
    """Seeded synthetic ratings with planted structure (see the module documentation).

    Parameters
    ----------
    kind : {"local_low_rank", "popularity", "low_rank"}
        The planted structure.
    n_users, n_items : int
        Size of the index spaces (every user has ratings; an item may have none, which
        ``report["synthetic"]["items_without_ratings"]`` counts).
    n_ratings, density : int or float, optional
        How many ratings, or which fraction of the matrix (default density 0.05). Not both.
    rank : int, optional
        Rank of the global model, or of each block's model for ``local_low_rank``
        (default 3 for local_low_rank, 5 for low_rank, 5 for the personal part of popularity).
    n_clusters : int or (int, int)
        User groups and item groups of ``local_low_rank``.
    seed : int
        Same seed and parameters, same ratings.
    scale : (int, int)
        Integer rating scale.
    noise : float
        Standard deviation of the Gaussian noise relative to the (unit) signal; 0 for none.
    min_user_ratings : int, optional
        Ratings every user gets at least; default ``min(20, n_items, n_ratings // (2 n_users))``, at least 1.
    user_skew, item_skew : float
        Log-normal sigma of user activity and item popularity (0: uniform).
    user_bias, item_bias : float
        Standard deviations of per-user and per-item offsets (relative to the unit factor signal).
    quality_share : float
        For ``popularity``: the share of the signal variance due to item quality.
    popularity_quality_corr : float
        For ``popularity`` (and for the item bias of the others, if any): correlation between an
        item's log-popularity and its quality (bias).
    quantize : bool
        Round to integers (default); ``False`` keeps continuous ratings clipped to the scale.
    name : str, optional
        Label of the table.

    Returns
    -------
    Ratings
        Sorted by user then item, with ``user_info``, ``item_info``, ``truth`` and ``report``.
    """
    _check(kind in KINDS, f"unknown synthetic kind {kind!r}; choose among {list(KINDS)}")
    n_users, n_items = int(n_users), int(n_items)
    _check(n_users >= 1 and n_items >= 1, f"n_users and n_items must be at least 1, got {n_users}, {n_items}")
    cells = n_users * n_items
    _check(n_ratings is None or density is None, "give n_ratings or density, not both")
    if n_ratings is None:
        density = 0.05 if density is None else float(density)
        _check(0 < density <= 1, f"density must be in (0, 1], got {density}")
        n_ratings = max(n_users, int(round(density * cells)))
    n_ratings = int(n_ratings)
    _check(n_users <= n_ratings <= cells, f"n_ratings must be between n_users ({n_users:,}, one each) and "
           f"n_users × n_items ({cells:,}), got {n_ratings:,}")
    if rank is None:
        rank = 3 if kind == "local_low_rank" else 5
    rank = int(rank)
    _check(rank >= 1, f"rank must be at least 1, got {rank}")
    clusters = (int(n_clusters), int(n_clusters)) if np.isscalar(n_clusters) else tuple(int(c) for c in n_clusters)
    _check(len(clusters) == 2 and min(clusters) >= 1, f"n_clusters must be a positive int or a pair, got {n_clusters}")
    lo, hi = scale
    _check(float(lo) == int(lo) and float(hi) == int(hi) and lo < hi, f"scale must be two integers lo < hi, "
           f"got {scale}")
    lo, hi = int(lo), int(hi)
    _check(noise >= 0 and user_skew >= 0 and item_skew >= 0 and user_bias >= 0 and item_bias >= 0,
           "noise, user_skew, item_skew, user_bias and item_bias must be >= 0")
    _check(0 <= quality_share <= 1, f"quality_share must be in [0, 1], got {quality_share}")
    _check(-1 <= popularity_quality_corr <= 1, f"popularity_quality_corr must be in [-1, 1], got "
           f"{popularity_quality_corr}")
    if min_user_ratings is None:
        min_user_ratings = max(1, min(20, n_items, n_ratings // (2 * n_users)))
    min_user_ratings = int(min_user_ratings)
    _check(1 <= min_user_ratings <= n_items and min_user_ratings * n_users <= n_ratings,
           f"min_user_ratings={min_user_ratings} needs 1 <= it <= n_items and n_users × it <= n_ratings "
           f"({n_users:,} × {min_user_ratings} > {n_ratings:,})" if min_user_ratings * n_users > n_ratings else
           f"min_user_ratings must be between 1 and n_items ({n_items}), got {min_user_ratings}")

    rng = np.random.default_rng(seed)
    planted, linked = _plant(rng, kind, n_users, n_items, rank, clusters, user_bias, item_bias, quality_share)
    rho = popularity_quality_corr if (kind == "popularity" or item_bias > 0) else 0.0
    log_pop = item_skew * (rho * linked + math.sqrt(1 - rho ** 2) * rng.standard_normal(n_items))
    popularity = elementary.exp(log_pop - log_pop.max())
    counts = _user_counts(rng, n_users, n_items, n_ratings, min_user_ratings, user_skew)
    users, items = _sample_pairs(rng, counts, popularity)
    ratings = np.empty(len(users), dtype=np.float64)
    c = math.sqrt(1.0 + noise ** 2)
    for s in range(0, len(users), _CHUNK):
        z = planted.score(users[s:s + _CHUNK], items[s:s + _CHUNK])
        if noise > 0:
            z += (noise * rng.standard_normal(len(z))).astype(np.float32)
        z /= c
        ratings[s:s + _CHUNK] = _quantise(z, (lo, hi), quantize)

    params: dict[str, Any] = dict(kind=kind, n_users=n_users, n_items=n_items, n_ratings=n_ratings, rank=rank,
                                  n_clusters=list(clusters), seed=seed, scale=[lo, hi], noise=noise,
                                  min_user_ratings=min_user_ratings, user_skew=user_skew, item_skew=item_skew,
                                  user_bias=user_bias, item_bias=item_bias, quality_share=quality_share,
                                  popularity_quality_corr=rho, quantize=quantize)
    planted.params = params
    user_info = pd.DataFrame({"user": np.arange(n_users), "bias": planted.user_bias})
    item_info = pd.DataFrame({"item": np.arange(n_items), "popularity": popularity / popularity.sum()})
    if kind == "local_low_rank":
        user_info["cluster"] = planted.user_cluster
        item_info["cluster"] = planted.item_cluster
    if kind == "popularity":
        item_info["quality"] = linked
    elif item_bias > 0:
        item_info["bias"] = planted.item_bias
    out = Ratings(users, items, ratings, user_ids=np.arange(n_users), item_ids=np.arange(n_items),
                  scale=(float(lo), float(hi)), user_info=user_info, item_info=item_info,
                  name=name or f"synthetic-{kind.replace('_', '-')}")
    out.truth = planted
    n_empty = int(n_items - np.count_nonzero(np.bincount(items, minlength=n_items)))
    out.report = {"synthetic": {**params, "items_without_ratings": n_empty}}
    return out


def netflix_like(n_ratings: int = NETFLIX["n_ratings"], seed: int = 0, kind: str = "local_low_rank",
                 **kwargs) -> Ratings:
    """Synthetic ratings shaped like the Netflix Prize data (480,189 users × 17,770 items, 100M ratings).

    With fewer ratings, the number of users shrinks in proportion (Netflix's ~209 ratings per user
    are kept, at least 100 users) and the items stay 17,770. Users are more skewed in activity
    (``user_skew=1.2``) and items in popularity (``item_skew=1.5``) than the defaults, like the real
    data. Other keyword arguments go to :func:`synthetic` (and override these choices). Time and
    memory grow linearly with ``n_ratings`` (no ``n_users × n_items`` array is built).
    """
    n_ratings = int(n_ratings)
    frac = n_ratings / NETFLIX["n_ratings"]
    n_users = kwargs.pop("n_users", max(100, int(round(NETFLIX["n_users"] * frac))))
    n_items = kwargs.pop("n_items", NETFLIX["n_items"])
    kwargs.setdefault("user_skew", 1.2)
    kwargs.setdefault("item_skew", 1.5)
    kwargs.setdefault("name", "netflix-like")
    return synthetic(kind=kind, n_users=n_users, n_items=n_items, n_ratings=n_ratings, seed=seed, **kwargs)


def tiny() -> Ratings:
    """Four users, four items, twelve ratings (1..5) and a user attribute: the table on which every model's
    ``warmup()`` compiles its kernels (a real fit, in a few milliseconds)."""
    users = np.repeat(np.arange(4), 3)
    items = np.array([0, 1, 2, 1, 2, 3, 0, 2, 3, 0, 1, 3])
    ratings = np.array([5, 3, 1, 4, 2, 5, 1, 3, 4, 2, 5, 3], dtype=float)
    info = pd.DataFrame({"user": np.arange(4), "group": ["a", "b", "a", "b"]})
    return Ratings(users, items, ratings, user_ids=np.arange(4), item_ids=np.arange(4), scale=(1, 5), user_info=info,
                   name="tiny")
