"""The protocol registry: names, the papers' words each protocol follows, and running a protocol by name.

A protocol function registers itself with :func:`register` where it is defined; :data:`PROTOCOLS` lists
them in the order their modules are imported by :mod:`cofiviz.protocols`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

from ..util.errors import ParameterError
from ..ratings import Ratings
from ..split import Split

__all__ = ["PROTOCOLS", "REFERENCES", "OFFERED", "register", "normalise", "get", "parameters", "make", "Offered"]

#: What each protocol follows, word for word where the paper is exact.
REFERENCES = {
    "weak": "CofiRank §6 (Weimer et al., NIPS 2007) weak generalization, LCR §5.3 variant with validation",
    "cofirank-weak": ("CofiRank §6: 'we randomly select N = 10, 20, 50 ratings for each user for training and "
                      "evaluate on the remaining ratings. Users with less then 20, 30, 60 rated movies where "
                      "removed to ensure that we could evaluate on at least 10 movies per user'"),
    "lcr-weak": ("LCR §5.3 (Lee et al., WWW 2014): 'For each user, N randomly chosen items, with N = 10, 20, 50, "
                 "are used for training. Another 10 items are set aside for validation set, and all other items "
                 "are used for testing. Users with less than N + 20 ratings are dropped'"),
    "fixed-ratio": ("LCR §5.2: 'keeps a fixed proportion of ratings for each user in the training set and moves the "
                    "rest of the observations to the test set ... if the ratio is 0.5, a user with 100 ratings will "
                    "have 50 of its ratings kept for training ... A user with 8 ratings is not dropped, but trained "
                    "with 4 ratings and tested with the remaining 4'"),
    "strong": ("CofiRank §6 following Yu et al. (ICML 2006): 'Movies with less than 50 ratings are discarded. The "
               "100 users with the most rated movies are selected as the test set and the methods are trained on "
               "the remaining users. In evaluation, 10, 20 or 50 ratings from those of the 100 test users are "
               "selected. For those ratings, the user training procedure is applied to optimize U. M is kept fixed "
               "... The remaining ratings are tested using the same procedure as for the weak generalization'"),
    "top-n": ("GAPfm §5.1 (Shi et al.): 'Given 10/20/30/50' random rated movies per user for training; users with "
              "less than 50 ratings excluded; only users with at least 5 test ratings evaluated; 'randomly select "
              "1000 unrated items (which are assumed to be irrelevant to the user) in addition to the ground truth'; "
              "P@5 relevance threshold 5"),
    "gapfm-top-n": ("GAPfm §5.1 top-N as 'top-n', with 'randomly select 1.5% ... of the data ... to generate a "
                    "validation set, which is used to determine parameters': a validation part carved from each "
                    "user's held-out items"),
    "gapfm-netflix": ("GAPfm §5.1 on the Netflix Prize: 'Two parts of the dataset are used, i.e., the training set "
                      "and the probe set'; 'we exclude the users with less than 50 ratings from the training set'; "
                      "'Given 10 ... we randomly select 10 rated movies for each user in order to generate a training "
                      "data fold'; 'only based on the ground truth of the users who have at least 5 rated movies in "
                      "the probe set'; 'randomly select 1000 unrated items ... in addition to the ground truth'; P@5 "
                      "relevance threshold 5"),
    "controversial": ("The blog post 'The rank 1 problem': 'prepare test data that contains only items which are "
                      "not popular and are controversial (i.e., the rating variance/entropy is high among users)'"),
}

#: Protocol functions by registry name (the names of ``cofiviz split PROTOCOL``).
PROTOCOLS: dict[str, Callable[..., Split]] = {}


class Offered(NamedTuple):
    """How a page that trains on any data offers a protocol: the parameter its "N" (training ratings per user)
    sets, None where the protocol has none, and the parameters it fixes beside."""

    size: str | None
    fixed: dict


#: The protocols pages and leaderboards offer on any data set, by name (:func:`register`'s ``offered``).
OFFERED: dict[str, Offered] = {}


def register(name: str, offered: Offered | None = None,
             reference: str | None = None) -> Callable[[Callable[..., Split]], Callable[..., Split]]:
    """Decorator: register a protocol function as ``name``, which says what it follows: in ``reference`` or in an
    entry of :data:`REFERENCES`. With ``offered``, the protocol is also one of :data:`OFFERED`, with the settings
    pages give it."""
    if reference is not None:
        REFERENCES[name] = reference
    if name not in REFERENCES:
        raise ParameterError(f"protocol {name!r} says nothing of what it follows: pass reference= or add it to "
                             "REFERENCES")

    def add(fn: Callable[..., Split]) -> Callable[..., Split]:
        PROTOCOLS[name] = fn
        if offered is not None:
            OFFERED[name] = offered
        return fn
    return add


def normalise(name: str) -> str:
    """A protocol name as registered: lower case, ``-`` for ``_``, no surrounding spaces."""
    return name.strip().lower().replace("_", "-")


def get(name: str) -> Callable[..., Split]:
    """The protocol function registered as ``name`` (case-insensitive; ``_`` and ``-`` are the same).

    Raises
    ------
    ParameterError
        An unknown name; the message lists the valid ones.
    """
    key = normalise(name) if isinstance(name, str) else name
    if key not in PROTOCOLS:
        raise ParameterError(f"unknown protocol {name!r}; valid protocols: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[key]


def parameters(name: str) -> dict[str, Any]:
    """A protocol's parameters and their defaults (the ratings argument left out)."""
    fn = get(name)
    out = {}
    for p in list(inspect.signature(fn).parameters.values())[1:]:
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name.startswith("_"):
            continue
        out[p.name] = p.default
    return out


def make(name: str, ratings: Ratings, **params) -> Split:
    """Run protocol ``name`` on ``ratings`` with keyword ``params`` (checked by name).

    Raises
    ------
    ParameterError
        An unknown protocol, or a parameter the protocol does not take (the message lists the valid
        ones; a protocol that wraps a ``base`` protocol, ``controversial``, also accepts the base's).
    """
    fn = get(name)
    allowed = allowed_parameters(name, params.get("base"))
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ParameterError(f"protocol {normalise(name)!r} has no parameter(s) {', '.join(map(repr, unknown))}; "
                             f"valid parameters: {', '.join(sorted(allowed))}")
    return fn(ratings, **params)


def allowed_parameters(name: str, base=None) -> set[str]:
    """The keyword parameters protocol ``name`` takes; for a protocol that wraps a ``base`` protocol
    (``controversial``), also those of ``base`` (its default when ``None``; a list: each of them)."""
    valid = parameters(name)
    allowed = set(valid)
    if _wraps_a_base(get(name)):
        bases = valid["base"] if base is None else base
        for b in (bases if isinstance(bases, (list, tuple)) else [bases]):
            if isinstance(b, str) and normalise(b) in PROTOCOLS:
                allowed |= set(parameters(b))
    return allowed


def _wraps_a_base(fn: Callable[..., Split]) -> bool:
    """Whether ``fn`` runs a ``base`` protocol and passes it its ``**base_params`` (``controversial``)."""
    params = inspect.signature(fn).parameters
    return "base" in params and any(p.kind == p.VAR_KEYWORD for p in params.values())
