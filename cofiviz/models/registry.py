"""The model registry: every concrete model class under its registry name (``poprec``, ``cofirank``, ...).

A concrete subclass of :class:`~cofiviz.models.Model` adds itself to :data:`MODEL_REGISTRY` when its
class is created. Importing any module of :mod:`cofiviz.models` first runs the package's
``__init__``, which imports every model, so the registry is complete whenever these functions run.
"""

from __future__ import annotations

from typing import Any

from ..util.errors import named

__all__ = ["MODEL_REGISTRY", "available_models", "ranking_models", "baseline_models", "get_model_class", "make_model"]

#: Model classes by registry name (the lower-case class name).
MODEL_REGISTRY: dict[str, type] = {}


def available_models() -> list[str]:
    """Names of the registered models (what ``cofiviz run MODEL`` accepts)."""
    return sorted(MODEL_REGISTRY)


def ranking_models() -> list[str]:
    """Names of the ranking models: those a setting reduces to the damped item mean (``Model.item_mean_setting``),
    the baseline their searches and benchmarks hold them against."""
    return [m for m in available_models() if MODEL_REGISTRY[m].item_mean_setting is not None]


def baseline_models() -> list[str]:
    """Names of the baselines (``Model.baseline``: PopRec, ItemMean), which tables and leaderboards show last."""
    return [m for m in available_models() if MODEL_REGISTRY[m].baseline]


def get_model_class(name: str) -> type:
    """The model class registered as ``name`` (case-insensitive, surrounding spaces ignored).

    Raises
    ------
    ParameterError
        No such model; the message lists the available ones.
    """
    return MODEL_REGISTRY[named(name, MODEL_REGISTRY, "model",
                                valid=f"available models: {', '.join(sorted(MODEL_REGISTRY))}")]


def make_model(name: str, **params: Any):
    """Build a registered model by name with keyword parameters."""
    return get_model_class(name)(**params)
