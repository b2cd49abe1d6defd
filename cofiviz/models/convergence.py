"""The stopping rule of the models fitted by least squares: stop when the training RMSE stops improving."""

from __future__ import annotations

import math

import param

__all__ = ["StopsOnRMSE"]


class StopsOnRMSE(param.Parameterized):
    """Mixed into the least-squares models (RegSVD, SVD++, LLORMA), before :class:`~cofiviz.models.base.Model`.

    Each of their iterations records its training mean squared error with :meth:`_record_mse`; the fit stops
    after the iteration where the root of it improved by less than ``tol`` (``tol`` = 0: never). LLORMA's
    error is the kernel-weighted one of its eq (2).
    """

    tol = param.Number(default=1e-4, bounds=(0.0, None), doc="Stop when the training RMSE improves by less.")

    def _reset_rmse(self) -> None:
        self._rmse: list[float] = []

    def _record_mse(self, mse: float) -> float:
        """Record one iteration's training MSE; returns it (the iteration's loss)."""
        self._rmse.append(math.sqrt(mse))
        return mse

    def _converged(self, iteration: int) -> bool:
        if self.tol <= 0 or len(self._rmse) < 2:
            return False
        return self._rmse[-2] - self._rmse[-1] < self.tol
