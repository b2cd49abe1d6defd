"""Plain JSON types from the NumPy values cofiviz's reports, saves and store keys hold."""

from __future__ import annotations

import json
import math

import numpy as np

from .errors import ParameterError

__all__ = ["jsonable", "canonical_json", "NONFINITE"]

#: What :func:`jsonable` does with NaN and infinite floats: keep them (``json.dumps`` writes ``NaN``,
#: ``Infinity``, an extension of JSON that Python reads back) or turn them into ``None`` (``null``).
NONFINITE = ("keep", "none")


def jsonable(obj, *, nonfinite: str = "keep"):
    """``obj`` with NumPy scalars and arrays, tuples and dict keys turned into plain JSON types.

    Dicts become dicts with ``str`` keys, lists, tuples and arrays become lists (nested arrays nested
    lists), NumPy scalars their Python value; these are converted recursively. Any other object is
    returned as it is (``json.dumps(..., default=str)`` then writes its ``str``).

    Parameters
    ----------
    obj : object
    nonfinite : {"keep", "none"}
        ``"keep"``: NaN and infinite floats stay as they are; ``"none"``: they become ``None``, for
        JSON that tools other than Python read.

    Raises
    ------
    ParameterError
        ``nonfinite`` is not one of :data:`NONFINITE`.
    """
    if nonfinite not in NONFINITE:
        raise ParameterError(f"nonfinite must be one of {NONFINITE}, got {nonfinite!r}")
    return _convert(obj, nonfinite == "none")


def _convert(obj, finite_only: bool):
    if isinstance(obj, dict):
        return {str(k): _convert(v, finite_only) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_convert(v, finite_only) for v in obj]
    if isinstance(obj, np.ndarray):
        return _convert(obj.tolist(), finite_only)
    if isinstance(obj, np.generic):
        obj = obj.item()
    if finite_only and isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def canonical_json(obj) -> str:
    """``obj`` as compact JSON with sorted keys (:func:`jsonable` first, ``str`` for anything else): the text
    cofiviz hashes for store keys and cache keys."""
    return json.dumps(jsonable(obj), sort_keys=True, separators=(",", ":"), default=str)
