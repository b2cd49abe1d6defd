"""Exceptions raised at cofiviz's public boundary.

Every error that bad input can cause is one of these, with a message that names the row, column or
parameter at fault and what was expected, so that a user never sees a numba traceback instead.
"""

from __future__ import annotations

__all__ = ["CofivizError", "DataError", "DataSourceError", "ModelFitError", "ParameterError", "named"]


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


def _spelling(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def named(value, names, what: str, *, aliases: dict | None = None, valid: str | None = None) -> str:
    """The entry of ``names`` that ``value`` spells: how every name a user types (a model, a loss, a tie rule, a
    reproduction) is read.

    Case, surrounding spaces, and ``-`` or a space for ``_`` do not matter; ``aliases`` maps other spellings
    (read the same way) to entries.

    Raises
    ------
    ParameterError
        ``value`` is not a string or spells no entry: ``unknown WHAT 'VALUE'; VALID`` (``VALID`` by default
        ``valid: `` and the names).
    """
    if isinstance(value, str):
        key = _spelling(value)
        key = {_spelling(a): n for a, n in (aliases or {}).items()}.get(key, key)
        for name in names:
            if _spelling(name) == key:
                return name
    raise ParameterError(f"unknown {what} {value!r}; {valid or 'valid: ' + ', '.join(names)}")
