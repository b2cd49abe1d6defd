"""LCR's pairwise surrogate losses (Table 1): values against the printed formulas, derivatives by finite
differences, shapes for plots, and the errors at the public boundary."""

from __future__ import annotations

import numpy as np
import pytest

from cofiviz.util.errors import ParameterError
from cofiviz.losses.surrogates import (SURROGATE_CODES, SURROGATE_LABELS, SURROGATES, _evaluate, figure4_frame,
                                       surrogate_code, surrogate_derivative, surrogate_shape, surrogate_value,
                                       surrogate_value_deriv, zero_one_shape)


def surrogate_slope(loss, delta_f, delta_m=1.0, margin=0.0):
    """``∂L(ΔM, Δf)/∂Δf`` on arrays, from the same kernel pass that gives :func:`surrogate_shape` its values."""
    return _evaluate(loss, delta_m, delta_f, margin)[1]

# Table 1 of the paper, written out with NumPy (independent of the numba kernels)
TABLE1 = {
    "log_m": lambda dm, df, g: dm * np.log1p(np.exp(g - df)),
    "log_a": lambda dm, df, g: np.log1p(np.exp(g + dm - df)),
    "exp_m": lambda dm, df, g: dm * np.exp(g - df),
    "exp_a": lambda dm, df, g: np.exp(g + dm - df),
    "hinge_m": lambda dm, df, g: dm * np.maximum(g - df, 0.0),
    "hinge_a": lambda dm, df, g: np.maximum(g + dm - df, 0.0),
}

rng = np.random.default_rng(0)
POINTS = [(float(dm), float(df), float(g)) for dm, df, g in
          zip(rng.integers(1, 5, 40), rng.uniform(-3, 3, 40), rng.choice([0.0, 0.5, 1.0], 40))]


@pytest.mark.parametrize("loss", SURROGATES)
def test_values_match_table_1(loss):
    code = SURROGATE_CODES[loss]
    for dm, df, g in POINTS:
        assert surrogate_value(code, dm, df, g) == pytest.approx(TABLE1[loss](dm, df, g), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("loss", SURROGATES)
def test_derivatives_by_central_differences(loss):
    code = SURROGATE_CODES[loss]
    h = 1e-6
    for dm, df, g in POINTS:
        if loss.startswith("hinge"):
            kink = g - df if loss == "hinge_m" else g + dm - df
            if abs(kink) < 1e-3:  # the subgradient at the kink is a convention, not a derivative
                continue
        fd = (TABLE1[loss](dm, df + h, g) - TABLE1[loss](dm, df - h, g)) / (2 * h)
        d = surrogate_derivative(code, dm, df, g)
        assert d == pytest.approx(fd, rel=1e-6, abs=1e-7), (loss, dm, df, g)
        v, d2 = surrogate_value_deriv(code, dm, df, g)
        assert d2 == d and v == surrogate_value(code, dm, df, g)


@pytest.mark.parametrize("loss", SURROGATES)
def test_convex_and_non_increasing_in_delta_f(loss):
    x = np.linspace(-4, 4, 401)
    for dm in (1.0, 2.0, 4.0):
        v = surrogate_shape(loss, x, dm)
        s = surrogate_slope(loss, x, dm)
        assert np.all(s <= 0)
        assert np.all(np.diff(v) <= 1e-12)
        assert np.all(np.diff(v, 2) >= -1e-9)  # convex
        # a larger observed gap is penalised at least as much (Figure 4)
        assert np.all(surrogate_shape(loss, x, dm + 1) >= v - 1e-12)


def test_hinge_subgradient_is_zero_at_the_kink_and_margin_shifts_it():
    assert surrogate_derivative(SURROGATE_CODES["hinge_a"], 1.0, 1.0, 0.0) == 0.0
    assert surrogate_derivative(SURROGATE_CODES["hinge_a"], 1.0, 0.999, 0.0) == -1.0
    assert surrogate_derivative(SURROGATE_CODES["hinge_m"], 3.0, 0.4, 0.5) == -3.0
    assert surrogate_value(SURROGATE_CODES["hinge_m"], 3.0, 0.6, 0.5) == 0.0


def test_log_losses_are_stable_far_from_zero():
    for loss in ("log_m", "log_a"):
        v = surrogate_shape(loss, [-800.0, 800.0], 2.0)
        assert np.all(np.isfinite(v)) and v[1] == pytest.approx(0.0, abs=1e-300)
        s = surrogate_slope(loss, [-800.0, 800.0], 2.0)
        assert np.all(np.isfinite(s))


def test_shape_broadcasts_delta_m_against_delta_f():
    x = np.linspace(-1, 1, 5)
    dm = np.array([1.0, 2.0, 3.0])[:, None]
    v = surrogate_shape("Log[M]", x, dm, margin=0.5)
    assert v.shape == (3, 5)
    np.testing.assert_allclose(v, TABLE1["log_m"](dm, x[None, :], 0.5))
    assert surrogate_shape("exp_a", 0.0).shape == ()
    np.testing.assert_array_equal(zero_one_shape([-1.0, 0.0, 1.0]), [1.0, 0.0, 0.0])


def test_figure4_frame_is_tidy():
    frame = figure4_frame()
    assert set(frame["loss"]) == {"log_m", "log_a", "exp_m", "hinge_a"}
    assert set(frame["delta_m"]) == {1.0, 2.0, 3.0, 4.0}
    assert list(frame.columns) == ["loss", "label", "delta_m", "delta_f", "value", "slope", "zero_one"]
    one = frame[(frame["loss"] == "hinge_a") & (frame["delta_m"] == 2.0)]
    np.testing.assert_allclose(one["value"], np.maximum(2.0 - one["delta_f"], 0.0))
    assert set(frame["label"]) == {SURROGATE_LABELS[k] for k in ("log_m", "log_a", "exp_m", "hinge_a")}


@pytest.mark.parametrize("bad", ["log", "Log[X]", "", 3, None])
def test_unknown_loss_is_refused_with_the_valid_names(bad):
    with pytest.raises(ParameterError, match="log_m"):
        surrogate_code(bad)


def test_bad_arrays_and_margin_are_refused():
    with pytest.raises(ParameterError):
        surrogate_shape("log_m", [0.0, np.nan])
    with pytest.raises(ParameterError):
        surrogate_shape("log_m", np.zeros(3), np.ones(2))
    with pytest.raises(ParameterError, match="margin"):
        surrogate_shape("log_m", 0.0, 1.0, margin=float("inf"))
    with pytest.raises(ParameterError, match="margin"):
        surrogate_shape("log_m", 0.0, 1.0, margin="0")
