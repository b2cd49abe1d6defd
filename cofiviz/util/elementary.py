"""Elementary functions of arrays, computed one value at a time by the C library: the same bits on every CPU.

NumPy dispatches ``np.exp``, ``np.log``, ``np.log2``, ``np.log1p``, ``np.power`` and ``np.arccos`` of float64
arrays to SIMD code chosen by the CPU it runs on: with AVX-512 (``X86_V4``) it uses vectorised approximations
that differ in the last bit from the scalar C library it uses on an AVX2 machine, for a few values in a hundred
(``np.power(k, -0.25)`` for the integers ``k`` up to 4000: 187 of them). A fit that feeds such a value back (a
discount, a kernel matrix, a weight) then drifts from one CPU to the other. The functions here evaluate each
value with the C library's scalar function (``exp``, ``log``, ``log2``, ``log1p``, ``pow``, ``acos`` of libm),
called from a numba loop, which is what every numba kernel of the package does already: the results depend on
the C library, not on the CPU (numba's use of Intel's SVML, which would vectorise these loops, is switched off
in :mod:`cofiviz`).

Each function takes an array of any shape (or a scalar) and returns a new float64 array of that shape (a float
for a scalar).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["exp", "log", "log2", "log1p", "power", "arccos", "warmup"]


@njit(cache=True, nogil=True)
def _exp(x, out):
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i])


@njit(cache=True, nogil=True)
def _log(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        if v > 0.0:
            out[i] = math.log(v)
        elif v == 0.0:
            out[i] = -np.inf
        else:
            out[i] = np.nan


@njit(cache=True, nogil=True)
def _log2(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        if v > 0.0:
            out[i] = math.log2(v)
        elif v == 0.0:
            out[i] = -np.inf
        else:
            out[i] = np.nan


@njit(cache=True, nogil=True)
def _log1p(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        if v > -1.0:
            out[i] = math.log1p(v)
        elif v == -1.0:
            out[i] = -np.inf
        else:
            out[i] = np.nan


@njit(cache=True, nogil=True)
def _power(x, e, out):
    for i in range(x.shape[0]):
        out[i] = x[i] ** e[i]


@njit(cache=True, nogil=True)
def _arccos(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        if -1.0 <= v <= 1.0:
            out[i] = math.acos(v)
        else:
            out[i] = np.nan


def _apply(kernel, *args):
    """``kernel`` over the broadcast arguments as flat float64 arrays; a float when every argument is a scalar."""
    scalar = all(np.ndim(a) == 0 for a in args)
    arrays = [np.asarray(a, dtype=np.float64) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    # numba gets writeable contiguous arrays of the full shape (one compiled type): an argument that is not one
    # is copied, broadcast first (a broadcast view is read-only and repeats elements)
    flat = [a.reshape(-1) if a.shape == shape and a.flags.c_contiguous and a.flags.writeable
            else np.array(np.broadcast_to(a, shape), order="C").reshape(-1) for a in arrays]
    out = np.empty(flat[0].shape[0])
    kernel(*flat, out)
    return float(out[0]) if scalar else out.reshape(shape)


def exp(x):
    """``e^x`` elementwise (libm ``exp``)."""
    return _apply(_exp, x)


def log(x):
    """``ln x`` elementwise (libm ``log``); ``-inf`` at 0 and NaN below, as NumPy (without its warnings)."""
    return _apply(_log, x)


def log2(x):
    """``log₂ x`` elementwise (libm ``log2``); ``-inf`` at 0 and NaN below."""
    return _apply(_log2, x)


def log1p(x):
    """``ln(1 + x)`` elementwise, accurate for small ``x`` (libm ``log1p``); ``-inf`` at −1 and NaN below."""
    return _apply(_log1p, x)


def power(x, e):
    """``x^e`` elementwise, ``x`` and ``e`` broadcast against each other (libm ``pow``)."""
    return _apply(_power, x, e)


def arccos(x):
    """``arccos x`` in ``[0, π]`` elementwise (libm ``acos``); NaN outside ``[−1, 1]``."""
    return _apply(_arccos, x)


def warmup() -> None:
    """Compile every kernel (numba caches the machine code on disk)."""
    x = np.array([0.5, 1.0])
    for f in (exp, log, log2, log1p, arccos):
        f(x)
    power(x, 2.0)
