"""The pair-based surrogate losses of Local Collaborative Ranking (Lee et al., WWW 2014, Table 1).

For a pair of items rated by one user with ``M_ui > M_uj`` write ``ΔM = M_ui − M_uj > 0`` (the
observed preference) and ``Δf = f(u, i) − f(u, j)`` (the predicted one; ``g(u, i, j)`` of eq 8). The
zero-one loss ``1[ΔM · Δf < 0]`` of eq (6) is replaced by a convex upper bound ``L(ΔM, Δf)``
(eq 7) with a target margin γ:

===========  ===================================  =====================================
loss         multiplicative [M]                   additive [A]
===========  ===================================  =====================================
Log          ΔM · log(1 + exp(γ − Δf))            log(1 + exp(γ + ΔM − Δf))
Exp          ΔM · exp(γ − Δf)                     exp(γ + ΔM − Δf)
Hinge        ΔM · [γ − Δf]₊                       [γ + ΔM − Δf]₊
===========  ===================================  =====================================

and their derivatives in Δf (what the gradient of eq 9 / eq 14 needs through the chain rule, §4.2):

- Log[M]: ``−ΔM · σ(γ − Δf)``, Log[A]: ``−σ(γ + ΔM − Δf)`` with ``σ(x) = 1 / (1 + e^{−x})``
  (the paper's ``−ΔM e^{γ−g} / (1 + e^{γ−g})``);
- Exp[M]: ``−ΔM · exp(γ − Δf)``, Exp[A]: ``−exp(γ + ΔM − Δf)``;
- Hinge[M]: ``−ΔM · 1[γ − Δf > 0]``, Hinge[A]: ``−1[γ + ΔM − Δf > 0]`` (the subgradient 0 is taken
  at the kink).

Pitfalls of the authors' Java toolkit that cofiviz does *not* copy (``reference/README.md``): its
Hinge[A] is ``[ΔM − Δf]₊`` whatever γ (identical at the paper's γ = 0), and its Exp[A] derivative does
not match its value; here every derivative is the exact derivative of its value (checked by finite
differences in ``tests/test_losses_pairwise.py``).

Layers
    * numba: :func:`surrogate_value`, :func:`surrogate_derivative` and :func:`surrogate_value_deriv`
      take an integer loss code (:data:`SURROGATE_CODES`) and scalars; the LCR / GCR pair kernels call
      them in their inner loops.
    * NumPy: :func:`surrogate_shape` evaluates a loss by name on arrays
      (broadcasting ``ΔM`` against ``Δf``) for plots; :func:`figure4_frame` gives the tidy table of
      the paper's Figure 4 (each loss against Δf for ΔM = 1…4).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..util.errors import ParameterError, named

__all__ = ["SURROGATES", "SURROGATE_CODES", "SURROGATE_LABELS", "surrogate_code", "surrogate_value",
           "surrogate_derivative", "surrogate_value_deriv", "surrogate_shape",
           "zero_one_shape", "figure4_frame", "warmup"]

#: Loss names in cofiviz's spelling (``<family>_<m|a>``), in the order of their integer codes.
SURROGATES = ("log_m", "log_a", "exp_m", "exp_a", "hinge_m", "hinge_a")
#: Integer code of each loss, what the numba kernels dispatch on.
SURROGATE_CODES = {name: k for k, name in enumerate(SURROGATES)}
#: The paper's spelling, for plot legends.
SURROGATE_LABELS = {"log_m": "Log[M]", "log_a": "Log[A]", "exp_m": "Exp[M]", "exp_a": "Exp[A]",
                    "hinge_m": "Hinge[M]", "hinge_a": "Hinge[A]"}

_ALIASES = {lab.lower(): name for name, lab in SURROGATE_LABELS.items()}


def surrogate_code(loss: str) -> int:
    """The integer code of a loss given as ``"log_m"`` (or the paper's ``"Log[M]"``).

    Raises
    ------
    ParameterError
        An unknown name; the message lists the valid ones.
    """
    return SURROGATE_CODES[named(loss, SURROGATES, "pairwise loss", aliases=_ALIASES,
                                 valid=f"valid losses: {', '.join(SURROGATES)} "
                                       f"(the paper's {', '.join(SURROGATE_LABELS.values())})")]


# ---------------------------------------------------------------------------------------------- numba
@njit(cache=True, nogil=True, inline="always")
def softplus_sigmoid(x):
    """``(log(1 + e^x), 1 / (1 + e^{−x}))`` from one exponential, without overflow."""
    e = math.exp(-abs(x))
    if x > 0.0:
        return x + math.log1p(e), 1.0 / (1.0 + e)
    return math.log1p(e), e / (1.0 + e)


@njit(cache=True, nogil=True)
def surrogate_value_deriv(code, dm, df, gamma):
    """``(L(ΔM, Δf), ∂L/∂Δf)`` of the loss with integer ``code`` (Table 1), for one pair.

    ``dm`` is ΔM = M_ui − M_uj (> 0 for the pairs LCR uses), ``df`` is Δf = f_ui − f_uj and
    ``gamma`` the margin γ.
    """
    if code == 0:      # Log[M]
        sp, sg = softplus_sigmoid(gamma - df)
        return dm * sp, -dm * sg
    elif code == 1:    # Log[A]
        sp, sg = softplus_sigmoid(gamma + dm - df)
        return sp, -sg
    elif code == 2:    # Exp[M]
        e = math.exp(gamma - df)
        return dm * e, -dm * e
    elif code == 3:    # Exp[A]
        e = math.exp(gamma + dm - df)
        return e, -e
    elif code == 4:    # Hinge[M]
        x = gamma - df
        if x > 0.0:
            return dm * x, -dm
        return 0.0, 0.0
    else:              # Hinge[A]
        x = gamma + dm - df
        if x > 0.0:
            return x, -1.0
        return 0.0, 0.0


@njit(cache=True, nogil=True)
def surrogate_value(code, dm, df, gamma):
    """``L(ΔM, Δf)`` of Table 1 for one pair (see :func:`surrogate_value_deriv`)."""
    return surrogate_value_deriv(code, dm, df, gamma)[0]


@njit(cache=True, nogil=True)
def surrogate_derivative(code, dm, df, gamma):
    """``∂L(ΔM, Δf)/∂Δf`` for one pair (the paper's ``∂L/∂g``, §4.2)."""
    return surrogate_value_deriv(code, dm, df, gamma)[1]


@njit(cache=True)
def _shape_kernel(code, dm, df, gamma, value, slope):
    for k in range(df.shape[0]):
        v, d = surrogate_value_deriv(code, dm[k], df[k], gamma)
        value[k] = v
        slope[k] = d


# ---------------------------------------------------------------------------------------------- NumPy
def _arrays(delta_m, delta_f):
    try:
        dm = np.asarray(delta_m, dtype=np.float64)
        df = np.asarray(delta_f, dtype=np.float64)
        dm, df = np.broadcast_arrays(dm, df)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"delta_m and delta_f must be numbers or arrays that broadcast: {exc}") from None
    if not (np.all(np.isfinite(dm)) and np.all(np.isfinite(df))):
        raise ParameterError("delta_m and delta_f must be finite")
    return dm, df


def _margin(margin) -> float:
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(margin)):
        raise ParameterError(f"margin must be a finite number, got {margin!r}")
    return float(margin)


def _evaluate(loss, delta_m, delta_f, margin):
    code = surrogate_code(loss)
    gamma = _margin(margin)
    dm, df = _arrays(delta_m, delta_f)
    shape = df.shape
    dmf, dff = np.ascontiguousarray(dm.ravel()), np.ascontiguousarray(df.ravel())
    value, slope = np.empty(dff.shape), np.empty(dff.shape)
    with np.errstate(over="ignore"):
        _shape_kernel(code, dmf, dff, gamma, value, slope)
    return value.reshape(shape), slope.reshape(shape)


def surrogate_shape(loss: str, delta_f, delta_m=1.0, margin: float = 0.0) -> np.ndarray:
    """``L(ΔM, Δf)`` on arrays: the curve of one surrogate (LCR Table 1, Figure 4).

    Parameters
    ----------
    loss : str
        One of :data:`SURROGATES` (``"log_m"``, ...) or the paper's label (``"Log[M]"``).
    delta_f : array_like
        Predicted differences Δf = f_ui − f_uj (positive: the pair is ordered correctly).
    delta_m : array_like
        Observed differences ΔM = M_ui − M_uj (> 0), broadcast against ``delta_f``.
    margin : float
        γ.

    Returns
    -------
    numpy.ndarray
        The loss, shaped like the broadcast of ``delta_m`` and ``delta_f`` (``inf`` where an Exp
        loss overflows).

    Raises
    ------
    ParameterError
        Unknown loss, non-finite inputs or margin, or shapes that do not broadcast.
    """
    return _evaluate(loss, delta_m, delta_f, margin)[0]


def zero_one_shape(delta_f, delta_m=1.0) -> np.ndarray:
    """The zero-one pair loss ``1[ΔM · Δf < 0]`` of eq (6) on arrays, the curve every surrogate bounds."""
    dm, df = _arrays(delta_m, delta_f)
    return (dm * df < 0).astype(np.float64)


def figure4_frame(losses=("log_m", "log_a", "exp_m", "hinge_a"), delta_m=(1, 2, 3, 4), margin: float = 0.0,
                  delta_f=None):
    """LCR Figure 4 as tidy data: each loss against Δf for each ΔM.

    Parameters
    ----------
    losses : sequence of str
        Default: the four losses the paper plots.
    delta_m : sequence of float
        Observed differences (the paper: 1, 2, 3, 4).
    margin : float
        γ (the paper: 0).
    delta_f : array_like, optional
        Grid of Δf; default 201 points on [−4, 4].

    Returns
    -------
    pandas.DataFrame
        Columns ``loss`` (cofiviz name), ``label`` (the paper's), ``delta_m``, ``delta_f``,
        ``value``, ``slope`` and ``zero_one``.
    """
    import pandas as pd

    grid = np.linspace(-4.0, 4.0, 201) if delta_f is None else np.asarray(delta_f, dtype=np.float64).ravel()
    frames = []
    for loss in losses:
        name = SURROGATES[surrogate_code(loss)]
        for dm in delta_m:
            value, slope = _evaluate(name, float(dm), grid, margin)
            frames.append(pd.DataFrame({"loss": name, "label": SURROGATE_LABELS[name], "delta_m": float(dm),
                                        "delta_f": grid, "value": value, "slope": slope,
                                        "zero_one": zero_one_shape(grid, float(dm))}))
    return pd.concat(frames, ignore_index=True)


def warmup() -> None:
    """Compile (or load from numba's cache) the surrogate kernels."""
    for name in SURROGATES:
        surrogate_shape(name, [-1.0, 0.5], 2.0, 0.1)
    surrogate_value(0, 1.0, 0.0, 0.0)
    surrogate_derivative(0, 1.0, 0.0, 0.0)
