"""Detecting a diverging fit: a non-finite or exploding loss, or learned arrays that blow up.

:meth:`cofiviz.models.Model.fit` checks every iteration with :func:`check_divergence` against the
:class:`DivergenceWatch` of the fit, and the :class:`~cofiviz.util.errors.ModelFitError` it raises names
the parameters to change (the model's ``divergence_advice()``).
"""

from __future__ import annotations

import numpy as np

from ..util.errors import ModelFitError
from ..ratings import Ratings

__all__ = ["LOSS_GROWTH_LIMIT", "NORM_GROWTH_LIMIT", "DivergenceWatch", "check_divergence"]

#: A fit diverged when its training loss rises above its best value so far by more than this many
#: times ``max(|best|, 1)``. Legitimate fits of every model (the reproductions' grids, the largest
#: learning rates they use) rise by at most about 2x in that measure, an AdaGrad first step; a
#: diverging gradient step multiplies the loss by orders of magnitude per iteration.
LOSS_GROWTH_LIMIT = 1e3
#: ... or when the root mean square of the entries of a learned float array exceeds this many times
#: ``max(RMS at the start of the fit, 1, width of the rating scale)``. Legitimate fits stay below 1x
#: in that measure (factors whose products are ratings or score differences of a few units); 1e3x
#: means scores of order 1e6 times the rating scale, which no fit reaches without diverging.
NORM_GROWTH_LIMIT = 1e3


class DivergenceWatch:
    """What the divergence checks of one fit compare against.

    ``best_loss`` is the lowest finite loss so far; ``start`` the root mean square of every float
    array of the model's ``_state()`` right after ``_setup`` (an array that appears later, such as a kept
    best iterate, is measured when first seen); ``floor`` the larger of 1 and the width of the
    training table's rating scale, the size that factors and offsets of a sane fit may reach
    whatever their start (biases start at 0, some factors at 0.001).
    """

    def __init__(self, model, train: Ratings):
        self.best_loss: float | None = None
        self.floor = max(1.0, float(train.scale[1] - train.scale[0]))
        self.start: dict[str, float] = {}
        if model.iterative:  # a closed-form model has no state before its one step
            for key, arr in model._state().items():
                arr = np.asarray(arr)
                if arr.dtype.kind == "f" and arr.size:
                    rms = _rms(arr)
                    if np.isfinite(rms):
                        self.start[key] = rms

    def limit(self, key: str, rms: float) -> float:
        """The largest root mean square array ``key`` may reach (``rms``: its value now)."""
        if key not in self.start and np.isfinite(rms):
            self.start[key] = rms
        return NORM_GROWTH_LIMIT * max(self.start.get(key, 0.0), self.floor)


def _rms(arr: np.ndarray) -> float:
    """Root mean square of the entries of a float array, read in place (``inf`` when the squares overflow)."""
    if arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    axes = list(range(arr.ndim))
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.einsum(arr, axes, arr, axes, []))
    return float(np.sqrt(total / arr.size))


def check_divergence(model, iteration: int, loss: float, watch: DivergenceWatch) -> None:
    """Raise :class:`~cofiviz.util.errors.ModelFitError` if ``model``'s iteration ``iteration`` diverged.

    Checked after every iteration, in this order: the loss is NaN (for a method that has a
    loss) or infinite; the loss rose above its best value so far by more than
    ``LOSS_GROWTH_LIMIT · max(|best|, 1)``; a float array of ``model._state()`` holds a non-finite
    entry, or the root mean square of its entries exceeds ``NORM_GROWTH_LIMIT · max(RMS at the
    start of the fit, 1, width of the rating scale)``. The arrays are read in place (one sum of
    squares each, no copy), which costs far less than an iteration.
    """
    if np.isnan(loss) and not model._loss_may_be_nan():
        raise ModelFitError(model._divergence_message(f"the training loss is NaN after iteration {iteration}"))
    if np.isinf(loss):
        raise ModelFitError(model._divergence_message(
            f"the training loss is infinite after iteration {iteration}"))
    if np.isfinite(loss):
        best = watch.best_loss
        if best is not None and loss - best > LOSS_GROWTH_LIMIT * max(abs(best), 1.0):
            raise ModelFitError(model._divergence_message(
                f"the training loss exploded (from its best {best:.3g} to {loss:.3g} after iteration "
                f"{iteration})"))
        watch.best_loss = loss if best is None else min(best, loss)
    for key, arr in model._state().items():
        arr = np.asarray(arr)
        if arr.dtype.kind not in "fc" or arr.size == 0:
            continue
        if arr.dtype.kind == "c":
            arr = np.abs(arr)
        rms = _rms(arr)
        if np.isfinite(rms) and rms <= watch.limit(key, rms):
            continue
        if not np.all(np.isfinite(arr)):
            raise ModelFitError(model._divergence_message(
                f"{key} became non-finite after iteration {iteration}"))
        if not np.isfinite(rms):  # finite entries whose squares overflow
            peak = float(np.max(np.abs(arr)))
            rms = peak * _rms(arr / peak)
        raise ModelFitError(model._divergence_message(
            f"the factors exploded ({key}: RMS {rms:.2g} after iteration {iteration}, "
            f"{watch.start.get(key, 0.0):.2g} at the start)"))
