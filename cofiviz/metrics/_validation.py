"""Input checks shared by the public metric functions (private).

Everything a user can get wrong is caught here, before any numba kernel runs, and reported as a
:class:`~cofiviz.util.errors.DataError` (bad arrays) or :class:`~cofiviz.util.errors.ParameterError` (bad
parameter) whose message names the argument and says what was expected.
"""

from __future__ import annotations

import numbers
from contextlib import contextmanager

import numpy as np

from ..util.errors import DataError, ParameterError

__all__: list[str] = []

#: Largest grade GAP, GP@n and GR@n accept (their delta tables stay exact in float64).
MAX_GAP_GRADE = 50


# --------------------------------------------------------------------------------------------------
# parameters
# --------------------------------------------------------------------------------------------------

def check_k(k, name: str = "k", *, allow_none: bool = True) -> int:
    """Return a cutoff as an int, 0 meaning "no cutoff" (``None``); raise ParameterError otherwise."""
    if k is None:
        if allow_none:
            return 0
        raise ParameterError(f"{name} must be a positive integer, got None")
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        expected = "a positive integer or None" if allow_none else "a positive integer"
        raise ParameterError(f"{name} must be {expected}, got {k!r}")
    if int(k) < 1:
        raise ParameterError(f"{name} must be a positive integer (>= 1), got {int(k)}")
    return min(int(k), 2 ** 62)  # any k beyond every list length means the whole list


def check_real(x, name: str, *, positive: bool = False, greater_than: float | None = None) -> float:
    """Return a finite real parameter as a float; raise ParameterError otherwise."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ParameterError(f"{name} must be a real number, got {x!r}")
    v = float(x)
    if not np.isfinite(v):
        raise ParameterError(f"{name} must be finite, got {v}")
    if positive and v <= 0:
        raise ParameterError(f"{name} must be > 0 (rating 0 means unrated, never relevant), got {v:g}")
    if greater_than is not None and v <= greater_than:
        raise ParameterError(f"{name} must be > {greater_than:g}, got {v:g}")
    return v


def check_ymax(ymax, name: str = "ymax") -> int:
    """Return the highest grade of GAP / GP / GR as an int >= 1."""
    if isinstance(ymax, (bool, np.bool_)) or not isinstance(ymax, numbers.Real):
        raise ParameterError(f"{name} must be a positive integer (the highest grade), got {ymax!r}")
    if float(ymax) != int(ymax) or int(ymax) < 1:
        raise ParameterError(f"{name} must be a positive integer (the highest grade), got {ymax!r}")
    if int(ymax) > MAX_GAP_GRADE:
        raise ParameterError(f"{name} must be at most {MAX_GAP_GRADE} (delta_l = (2^l - 1) / 2^ymax), "
                             f"got {int(ymax)}")
    return int(ymax)


# --------------------------------------------------------------------------------------------------
# arrays
# --------------------------------------------------------------------------------------------------

def as_float_vector(x, name: str) -> np.ndarray:
    """Convert ``x`` to a contiguous 1-D float64 array or raise DataError naming ``name``."""
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists and the like
        raise DataError(f"{name} must be a 1-D array of numbers: {exc}") from None
    if arr.ndim != 1:
        raise DataError(f"{name} must be a 1-D array, got an array of shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise DataError(f"{name} must hold numbers, got dtype {arr.dtype}") from None
    out = np.ascontiguousarray(arr, dtype=np.float64)
    if not out.flags.writeable:
        # numba compiles a separate specialisation for read-only arrays (pandas' copy-on-write
        # .to_numpy() returns them): one copy is cheaper than a compilation nobody warmed up
        out = out.copy()
    return out


def check_list(ratings, scores, *, ratings_name: str = "ratings", scores_name: str = "scores",
               nonnegative: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Validate one candidate list: equal lengths, finite ratings (>= 0), scores without NaN."""
    y = as_float_vector(ratings, ratings_name)
    s = as_float_vector(scores, scores_name)
    if y.shape[0] != s.shape[0]:
        raise DataError(f"{ratings_name} and {scores_name} must have the same length, "
                        f"got {y.shape[0]} and {s.shape[0]}")
    bad = ~np.isfinite(y)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{ratings_name} must be finite, got {y[i]} at position {i}")
    if nonnegative and (y < 0).any():
        i = int(np.flatnonzero(y < 0)[0])
        raise DataError(f"{ratings_name} must be >= 0 (0 = unrated, irrelevant), got {y[i]:g} at position {i}")
    nan = np.isnan(s)
    if nan.any():
        i = int(np.flatnonzero(nan)[0])
        raise DataError(f"{scores_name} must not contain NaN (found at position {i}); "
                        "+inf and -inf are allowed")
    return y, s


def check_grades(y: np.ndarray, ymax: int, name: str = "ratings") -> None:
    """GAP-family ratings must be integers 0..ymax."""
    frac = y != np.floor(y)
    if frac.any():
        i = int(np.flatnonzero(frac)[0])
        raise DataError(f"{name} must be integer grades 0..ymax for GAP, GP@n and GR@n, got {y[i]:g} at "
                        f"position {i} (rescale half stars, e.g. multiply by 2 and double ymax)")
    over = y > ymax
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise DataError(f"{name} must be integer grades 0..ymax={ymax}, got {y[i]:g} at position {i}; "
                        f"pass a larger ymax")


def check_offsets(offsets, n: int, name: str = "offsets", values_name: str = "ratings") -> np.ndarray:
    """Validate CSR offsets: 1-D integers, starting at 0, non-decreasing, ending at ``n``."""
    try:
        off = np.asarray(offsets)
    except Exception as exc:
        raise DataError(f"{name} must be a 1-D array of integers: {exc}") from None
    if off.ndim != 1 or off.shape[0] < 1:
        raise DataError(f"{name} must be a 1-D array of n_users + 1 integers, got shape {off.shape}")
    if off.dtype.kind not in "iu":
        if off.dtype.kind == "f" and np.all(np.isfinite(off)) and np.all(off == np.floor(off)):
            off = off.astype(np.int64)
        else:
            raise DataError(f"{name} must hold integers, got dtype {off.dtype}")
    off = np.ascontiguousarray(off, dtype=np.int64)
    if not off.flags.writeable:
        off = off.copy()
    if off[0] != 0:
        raise DataError(f"{name}[0] must be 0, got {int(off[0])}")
    if off[-1] != n:
        raise DataError(f"{name}[-1] must equal len({values_name}) = {n}, got {int(off[-1])}")
    dec = np.diff(off) < 0
    if dec.any():
        u = int(np.flatnonzero(dec)[0])
        raise DataError(f"{name} must be non-decreasing, but {name}[{u + 1}] = {int(off[u + 1])} < "
                        f"{name}[{u}] = {int(off[u])}")
    return off


#: Batches with fewer candidates than this run on the calling thread only: starting the parallel
#: region costs tens of microseconds on an idle machine and milliseconds on a busy one, more than
#: the work itself.
PARALLEL_MIN_CANDIDATES = 200_000


@contextmanager
def threads_for(n_candidates: int):
    """Run the enclosed kernel call single-threaded when the batch is small (numba's thread count is
    thread-local, so concurrent callers are not affected)."""
    import numba

    if n_candidates >= PARALLEL_MIN_CANDIDATES or numba.get_num_threads() == 1:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def n_blocks_for(n_users: int) -> int:
    """How many blocks of users the parallel kernels split the work into (each block allocates its
    scratch arrays once)."""
    import numba

    return int(max(1, min(n_users, 4 * numba.get_num_threads())))
