"""Search spaces: the ranges a model's parameters are tuned over.

Every model declares ``search_space``, a dict from parameter name to one of the distributions below, drawn
from the settings the reproductions found to matter (their grids), and ``presets``, named parameter sets
(``"paper"``: the paper's own settings). :func:`sample` draws one setting with a NumPy generator, so a seeded
search draws the same settings everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["Uniform", "LogUniform", "IntUniform", "IntLogUniform", "Choice", "sample", "describe", "size", "contains"]


@dataclass(frozen=True)
class Uniform:
    """A real number uniform on ``[low, high]``."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.low, self.high))

    def __str__(self) -> str:
        return f"uniform [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class LogUniform:
    """A positive real number whose logarithm is uniform on ``[log low, log high]``."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator) -> float:
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))

    def __str__(self) -> str:
        return f"log-uniform [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class IntUniform:
    """An integer uniform on ``low, ..., high``."""

    low: int
    high: int

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.low, self.high + 1))

    def __str__(self) -> str:
        return f"integer [{self.low}, {self.high}]"


@dataclass(frozen=True)
class IntLogUniform:
    """An integer whose logarithm is about uniform on ``[log low, log high]`` (ranks, numbers of models)."""

    low: int
    high: int

    def sample(self, rng: np.random.Generator) -> int:
        value = math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1)))
        return int(min(self.high, max(self.low, math.floor(value))))

    def __str__(self) -> str:
        return f"integer, log scale [{self.low}, {self.high}]"


@dataclass(frozen=True)
class Choice:
    """One of ``values``, each as likely."""

    values: Sequence[Any]

    def sample(self, rng: np.random.Generator) -> Any:
        return self.values[int(rng.integers(len(self.values)))]

    def __str__(self) -> str:
        return "one of " + ", ".join(map(str, self.values))


def sample(space: dict, rng: np.random.Generator) -> dict:
    """One setting drawn from ``space`` (parameters in the space's order, so a seed fixes the draw)."""
    return {name: dist.sample(rng) for name, dist in space.items()}


def size(space: dict) -> int | None:
    """The number of distinct settings of ``space``, or None when a parameter is real-valued (endless)."""
    n = 1
    for dist in space.values():
        if isinstance(dist, Choice):
            n *= len(set(map(repr, dist.values)))
        elif isinstance(dist, (IntUniform, IntLogUniform)):
            n *= dist.high - dist.low + 1
        else:
            return None
    return n


def contains(space: dict, params: dict) -> bool:
    """True when every parameter of ``space`` has in ``params`` a value the space can draw."""
    for name, dist in space.items():
        value = params[name]
        if isinstance(dist, Choice):
            if not any(repr(value) == repr(v) for v in dist.values):
                return False
        elif isinstance(dist, (IntUniform, IntLogUniform)):
            if not (isinstance(value, (int, np.integer)) and dist.low <= value <= dist.high):
                return False
        elif not dist.low <= value <= dist.high:
            return False
    return True


def describe(space: dict) -> str:
    """The space as text, one parameter a line."""
    return "\n".join(f"{name}: {dist}" for name, dist in space.items())
