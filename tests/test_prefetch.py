"""The software prefetch: usable in numba kernels on 1-D arrays of any dtype, changing no result."""

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from cofiviz.util.prefetch import prefetch


@njit
def _gather_with_prefetch(values, index, ahead):
    out = np.empty(len(index), dtype=values.dtype)
    for k in range(len(index)):
        if k + ahead < len(index):
            prefetch(values, index[k + ahead])
        out[k] = values[index[k]]
    return out


@njit
def _row_sums_with_prefetch(X, rows):
    out = np.empty(len(rows))
    for k in range(len(rows)):
        if k + 1 < len(rows):
            prefetch(X[rows[k + 1]], 0)
            prefetch(X[rows[k + 1]], X.shape[1] - 1)
        s = 0.0
        for c in range(X.shape[1]):
            s += X[rows[k], c]
        out[k] = s
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_a_gather_with_prefetches_reads_what_a_plain_gather_reads(dtype, index_dtype):
    rng = np.random.default_rng(0)
    values = rng.integers(0, 100, 5000).astype(dtype)
    index = rng.integers(0, len(values), 3000).astype(index_dtype)
    for ahead in (0, 1, 16, 5000):
        np.testing.assert_array_equal(_gather_with_prefetch(values, index, ahead), values[index])


def test_rows_of_a_matrix_and_of_a_strided_view_can_be_prefetched():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 7))
    rows = rng.integers(0, 50, 200)
    for matrix in (X, X[:, ::2], np.asfortranarray(X)):
        want = np.array([sum(matrix[r, c] for c in range(matrix.shape[1])) for r in rows])
        np.testing.assert_array_equal(_row_sums_with_prefetch(matrix, rows), want)


def test_only_a_1d_array_and_an_integer_index_are_accepted():
    @njit
    def matrix_index(X):
        prefetch(X, 0)

    @njit
    def float_index(x):
        prefetch(x, 1.5)

    with pytest.raises(TypingError):
        matrix_index(np.zeros((2, 2)))
    with pytest.raises(TypingError):
        float_index(np.zeros(3))
