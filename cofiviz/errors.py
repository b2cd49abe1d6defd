"""Exceptions raised at cofiviz's public boundary.

Every error that bad input can cause is one of these, with a message that names the row, column or
parameter at fault and what was expected, so that a user never sees a numba traceback instead.
"""

from __future__ import annotations

__all__ = ["CofivizError", "DataError", "DataSourceError", "ModelFitError", "ParameterError"]


class CofivizError(Exception):
    """Base class of every error cofiviz raises on purpose."""


class DataError(CofivizError, ValueError):
    """Ratings or a ratings file that cannot be used as given (bad row, column, value or shape)."""


class DataSourceError(CofivizError, OSError):
    """A dataset could not be obtained from any of its sources; the message lists what was tried."""


class ParameterError(CofivizError, ValueError):
    """A parameter of a model, protocol, metric or command that is unknown or out of its range."""


class ModelFitError(CofivizError, ArithmeticError):
    """Training produced non-finite factors or a non-finite loss."""
