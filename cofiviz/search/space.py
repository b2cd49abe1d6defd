"""Search spaces: the ranges a model's parameters are tuned over.

Every model declares ``search_space``, a dict from parameter name to a :class:`Dimension` (one of the kinds
below, or a kind of its own), drawn from the settings the reproductions found to matter (their grids), and
``presets``, named parameter sets (``"paper"``: the paper's own settings). :func:`sample` draws one setting with a
NumPy generator, so a seeded search draws the same settings everywhere.

A dimension says everything a search needs of it: how to draw a value (:meth:`Dimension.sample`), how many values
it has (:meth:`Dimension.count`, None when endless), whether it holds a value (:meth:`Dimension.holds`), and the
Optuna distribution of the same values (:meth:`Dimension.optuna`). The random and Optuna searchers, the tuner's
stopping rule and the leaderboards read only these, so a new kind of range is one subclass, wherever it is defined.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["Dimension", "Uniform", "LogUniform", "IntUniform", "IntLogUniform", "Choice", "sample", "describe",
           "size", "contains", "draw_settings"]


class Dimension(ABC):
    """The range of one tuned parameter. A subclass defines :meth:`sample`, :meth:`holds`, :meth:`optuna` and
    ``__str__``, and :meth:`count` when its values are finitely many."""

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> Any:
        """One value drawn with ``rng``."""

    def count(self) -> int | None:
        """The number of distinct values, None when endless (real-valued)."""
        return None

    @abstractmethod
    def holds(self, value: Any) -> bool:
        """True when :meth:`sample` can draw ``value``."""

    @abstractmethod
    def optuna(self):
        """The ``optuna.distributions`` object of the same values (Optuna is imported here, only when used)."""


@dataclass(frozen=True)
class Uniform(Dimension):
    """A real number uniform on ``[low, high]``."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.low, self.high))

    def holds(self, value: Any) -> bool:
        return self.low <= value <= self.high

    def optuna(self):
        import optuna.distributions as od
        return od.FloatDistribution(self.low, self.high)

    def __str__(self) -> str:
        return f"uniform [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class LogUniform(Dimension):
    """A positive real number whose logarithm is uniform on ``[log low, log high]``."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator) -> float:
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))

    def holds(self, value: Any) -> bool:
        return self.low <= value <= self.high

    def optuna(self):
        import optuna.distributions as od
        return od.FloatDistribution(self.low, self.high, log=True)

    def __str__(self) -> str:
        return f"log-uniform [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class IntUniform(Dimension):
    """An integer uniform on ``low, ..., high``."""

    low: int
    high: int

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.low, self.high + 1))

    def count(self) -> int:
        return self.high - self.low + 1

    def holds(self, value: Any) -> bool:
        return isinstance(value, (int, np.integer)) and self.low <= value <= self.high

    def optuna(self):
        import optuna.distributions as od
        return od.IntDistribution(self.low, self.high)

    def __str__(self) -> str:
        return f"integer [{self.low}, {self.high}]"


@dataclass(frozen=True)
class IntLogUniform(IntUniform):
    """An integer whose logarithm is about uniform on ``[log low, log high]`` (ranks, numbers of models)."""

    def sample(self, rng: np.random.Generator) -> int:
        value = math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1)))
        return int(min(self.high, max(self.low, math.floor(value))))

    def optuna(self):
        import optuna.distributions as od
        return od.IntDistribution(self.low, self.high, log=True)

    def __str__(self) -> str:
        return f"integer, log scale [{self.low}, {self.high}]"


@dataclass(frozen=True)
class Choice(Dimension):
    """One of ``values``, each as likely."""

    values: Sequence[Any]

    def sample(self, rng: np.random.Generator) -> Any:
        return self.values[int(rng.integers(len(self.values)))]

    def count(self) -> int:
        return len(set(map(repr, self.values)))

    def holds(self, value: Any) -> bool:
        return any(repr(value) == repr(v) for v in self.values)

    def optuna(self):
        import optuna.distributions as od
        return od.CategoricalDistribution(tuple(self.values))

    def __str__(self) -> str:
        return "one of " + ", ".join(map(str, self.values))


def sample(space: dict, rng: np.random.Generator) -> dict:
    """One setting drawn from ``space`` (parameters in the space's order, so a seed fixes the draw)."""
    return {name: dist.sample(rng) for name, dist in space.items()}


def size(space: dict) -> int | None:
    """The number of distinct settings of ``space``, or None when a parameter has endless values."""
    n = 1
    for dist in space.values():
        count = dist.count()
        if count is None:
            return None
        n *= count
    return n


def contains(space: dict, params: dict) -> bool:
    """True when every parameter of ``space`` has in ``params`` a value the space can draw."""
    return all(dist.holds(params[name]) for name, dist in space.items())


def describe(space: dict) -> str:
    """The space as text, one parameter a line."""
    return "\n".join(f"{name}: {dist}" for name, dist in space.items())


def _rounded(value):
    """A drawn value as a setting shows it: floats to three significant digits, integers and choices as drawn."""
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if v == 0 or not math.isfinite(v) else float(f"{v:.3g}")
    if isinstance(value, np.integer):
        return int(value)
    return value


def draw_settings(space: dict, defaults: dict, n: int, seed: int) -> list[dict]:
    """``{}`` (the defaults), then up to ``n - 1`` settings drawn from ``space``: a fixed grid of it.

    The draws come from ``numpy.random.default_rng(seed)``, rounded to three significant digits; a draw equal to
    the defaults (``defaults``: the space's parameters at their defaults) or to an earlier draw is skipped (at most
    100 draws are made), and a space with fewer than ``n`` settings gives all it has. The leaderboards fit each
    model at these settings.

    Returns
    -------
    list of dict
        Parameter dicts, the first one empty.
    """
    out: list[dict] = [{}]
    if not space:
        return out
    seen = {repr(sorted(defaults.items()))}
    finite = size(space)
    rng = np.random.default_rng(seed)
    attempts = 0
    while len(out) < n and attempts < 100 and (finite is None or len(seen) < finite):
        attempts += 1
        draw = {k: _rounded(v) for k, v in sample(space, rng).items()}
        key = repr(sorted(draw.items()))
        if key in seen:
            continue
        seen.add(key)
        out.append(draw)
    return out
