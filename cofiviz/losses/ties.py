"""Tie-aware pairwise losses: Rao–Kupper and Davidson extensions of Bradley–Terry (blog post "The rank 1 problem").

"Since the number of ordinal levels is usually small (e.g., as in 5-star scale), there will be many
tied ranks. [...] Early methods in the statistical literature include the Rao-Kupper method in 1967
and Davidson method in 1970 for extending the standard pairwise Bradley-Terry model." With these, a pair
of items a user rated equally is evidence (their scores should be close) instead of being dropped, as
the pairwise surrogates of LCR's Table 1 (:mod:`.surrogates`) drop it.

With item strengths ``π = exp(f)`` and ``Δ = f_i − f_j``:

Rao & Kupper (1967), threshold ``θ ≥ 1`` (``η = log θ``)
    ``P(i ≻ j) = π_i / (π_i + θ π_j) = σ(Δ − η)``,
    ``P(i ~ j) = (θ² − 1) π_i π_j / ((π_i + θ π_j)(π_j + θ π_i))``
    ``= (e^{2η} − 1) σ(Δ − η) σ(−Δ − η)`` — a tie is likely when ``|Δ| < η``.
    Losses (negative log-likelihoods): win ``softplus(η − Δ)``, tie
    ``softplus(η − Δ) + softplus(η + Δ) − log(e^{2η} − 1)``; ``θ = 1`` is Bradley–Terry (no ties).
Davidson (1970), tie propensity ``ν ≥ 0``
    ``P(i ≻ j) = π_i / (π_i + π_j + ν √(π_i π_j)) = e^{Δ/2} / D``, ``P(i ~ j) = ν / D`` with
    ``D = e^{Δ/2} + e^{−Δ/2} + ν``. Losses: win ``log D − Δ/2``, tie ``log D − log ν``; ``ν = 0`` is
    Bradley–Terry.

In both, ``P(i ≻ j) + P(j ≻ i) + P(i ~ j) = 1``, every loss is convex in ``Δ``, and the tie loss is
smallest at ``Δ = 0``. Unlike the margin-based surrogates they do not weight a pair by its rating
difference ``ΔM``: a pair is a win, a loss or a tie.

Layers: :func:`tie_value_deriv` (numba, one pair, what the bilinear model's pair loop calls) and the
NumPy-facing :func:`tie_loss`, :func:`tie_probabilities` (win / tie / loss curves for the dashboard)
and :func:`tie_frame` (tidy curves).

References: P. V. Rao and L. L. Kupper, "Ties in paired-comparison experiments: a generalization of the
Bradley-Terry model", JASA 62, 1967; R. R. Davidson, "On extending the Bradley-Terry model to
accommodate ties in paired comparison experiments", JASA 65, 1970.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..util.errors import ParameterError, named
from .surrogates import softplus_sigmoid

__all__ = ["TIE_MODELS", "TIE_CODES", "tie_code", "tie_value_deriv", "tie_loss", "tie_probabilities",
           "tie_frame", "check_tie_param", "warmup"]

#: Tie-aware pairwise models, in the order of their integer codes.
TIE_MODELS = ("rao_kupper", "davidson")
TIE_CODES = {name: k for k, name in enumerate(TIE_MODELS)}
#: The parameter of each model and its label.
TIE_PARAM = {"rao_kupper": "θ", "davidson": "ν"}


def tie_code(model: str) -> int:
    """``"rao_kupper"`` → 0, ``"davidson"`` → 1 (``-`` or spaces are read as ``_``).

    Raises
    ------
    ParameterError
        An unknown name; the message lists the valid ones.
    """
    return TIE_CODES[named(model, TIE_MODELS, "tie model")]


def check_tie_param(model: str, value, name: str | None = None) -> float:
    """Validate Rao–Kupper's ``θ > 1`` or Davidson's ``ν > 0`` (ties must have a positive probability).

    Raises
    ------
    ParameterError
        A value that is not a finite number in range; the message names ``name`` (default ``theta`` /
        ``nu``).
    """
    code = tie_code(model)
    label = name or ("theta" if code == 0 else "nu")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)):
        raise ParameterError(f"{label} must be a finite number, got {value!r}")
    v = float(value)
    if code == 0 and not v > 1.0:
        raise ParameterError(f"{label} (Rao-Kupper's θ) must be > 1 so that ties have a positive probability, got {v}")
    if code == 1 and not v > 0.0:
        raise ParameterError(f"{label} (Davidson's ν) must be > 0 so that ties have a positive probability, got {v}")
    return v


# ---------------------------------------------------------------------------------------------- numba
@njit(cache=True, nogil=True)
def tie_value_deriv(code, tie, delta, param):
    """``(loss, ∂loss/∂Δ)`` of one pair under a tie-aware model.

    Parameters
    ----------
    code : int
        0: Rao–Kupper (``param`` = θ > 1), 1: Davidson (``param`` = ν > 0).
    tie : bool
        True: the two items are tied; False: the first is preferred (``Δ = f_first − f_second``).
    delta : float
        Score difference Δ.
    param : float
        θ or ν.
    """
    if code == 0:
        eta = math.log(param)
        sp1, sg1 = softplus_sigmoid(eta - delta)
        if not tie:
            return sp1, -sg1
        sp2, sg2 = softplus_sigmoid(eta + delta)
        return sp1 + sp2 - math.log(math.expm1(2.0 * eta)), sg2 - sg1
    # Davidson: D = e^{Δ/2} + e^{−Δ/2} + ν = e^{a}(1 + e^{−2a} + ν e^{−a}), a = |Δ|/2
    a = 0.5 * abs(delta)
    ea = math.exp(-a)
    inner = 1.0 + ea * ea + param * ea
    log_d = a + math.log(inner)
    dlog_d = 0.5 * (1.0 - ea * ea) / inner
    if delta < 0.0:
        dlog_d = -dlog_d
    if tie:
        return log_d - math.log(param), dlog_d
    return log_d - 0.5 * delta, dlog_d - 0.5


@njit(cache=True)
def _curve_kernel(code, tie, delta, param, value, slope):
    for k in range(delta.shape[0]):
        v, d = tie_value_deriv(code, tie, delta[k], param)
        value[k] = v
        slope[k] = d


# ---------------------------------------------------------------------------------------------- NumPy
def _delta(delta) -> np.ndarray:
    try:
        d = np.asarray(delta, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"delta must be a number or an array of numbers: {exc}") from None
    if not np.all(np.isfinite(d)):
        raise ParameterError("delta must be finite")
    return d


def tie_loss(model: str, delta, param: float, outcome: str = "win") -> tuple[np.ndarray, np.ndarray]:
    """``(loss, ∂loss/∂Δ)`` on arrays of score differences ``Δ = f_i − f_j``.

    Parameters
    ----------
    model : {"rao_kupper", "davidson"}
    delta : array_like
    param : float
        θ > 1 (Rao–Kupper) or ν > 0 (Davidson).
    outcome : {"win", "tie", "loss"}
        What was observed: ``i`` preferred, a tie, or ``j`` preferred.

    Raises
    ------
    ParameterError
        Unknown model or outcome, a parameter out of range, non-finite ``delta``.
    """
    code = tie_code(model)
    p = check_tie_param(model, param)
    if outcome not in ("win", "tie", "loss"):
        raise ParameterError(f"outcome must be 'win', 'tie' or 'loss', got {outcome!r}")
    d = _delta(delta)
    flat = np.ascontiguousarray(d.ravel())
    sign = -1.0 if outcome == "loss" else 1.0
    value, slope = np.empty_like(flat), np.empty_like(flat)
    _curve_kernel(code, outcome == "tie", sign * flat, p, value, slope)
    return value.reshape(d.shape), (sign * slope).reshape(d.shape)


def tie_probabilities(model: str, delta, param: float) -> dict[str, np.ndarray]:
    """``{"win": P(i ≻ j), "tie": P(i ~ j), "loss": P(j ≻ i)}`` against ``Δ = f_i − f_j`` (they sum to 1)."""
    return {o: np.exp(-tie_loss(model, delta, param, o)[0]) for o in ("win", "tie", "loss")}


def tie_frame(models=TIE_MODELS, params=None, delta=None):
    """Tidy curves for plots: ``model``, ``param``, ``delta``, ``outcome``, ``probability``, ``loss``.

    ``params`` maps a model to its parameter (default θ = 2, ν = 1); ``delta`` defaults to 201 points
    on [−6, 6].
    """
    import pandas as pd

    params = {"rao_kupper": 2.0, "davidson": 1.0, **(params or {})}
    grid = np.linspace(-6.0, 6.0, 201) if delta is None else _delta(delta).ravel()
    frames = []
    for model in models:
        name = TIE_MODELS[tie_code(model)]
        for outcome in ("win", "tie", "loss"):
            value, _ = tie_loss(name, grid, params[name], outcome)
            frames.append(pd.DataFrame({"model": name, "param": float(params[name]), "delta": grid,
                                        "outcome": outcome, "probability": np.exp(-value), "loss": value}))
    return pd.concat(frames, ignore_index=True)


def warmup() -> None:
    """Compile (or load from numba's cache) the tie kernels."""
    for model, p in (("rao_kupper", 1.5), ("davidson", 0.5)):
        for outcome in ("win", "tie"):
            tie_loss(model, [-1.0, 0.5], p, outcome)
