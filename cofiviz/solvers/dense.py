"""Small dense linear algebra in a fixed order of operations: the same bits on every CPU.

A BLAS library picks its kernels by CPU (OpenBLAS: ``OPENBLAS_CORETYPE``), and an AVX-512 kernel sums a dot
product in another order than an AVX2 one, so ``x @ y``, ``np.linalg.solve`` or ``np.linalg.cholesky`` may
differ in the last bit from one machine to the next; a seeded fit that feeds such a value back (a Newton step,
a Gibbs sweep) then drifts, and a near-tie in a ranking can turn. The functions here compute the same
quantities with plain loops whose order is written down: every sum runs over its index from first to last,
one product added at a time (numba compiles without fast-math, so nothing is reordered or fused). Rows of a
product are independent, so they run in parallel without changing a bit. They are meant for the small
systems of the models (tens of rows) and for products with a short inner dimension.

- :func:`dot`, :func:`matvec`, :func:`matmul`: ``Σ_k a_k b_k`` in order of ``k``;
- :func:`cholesky`: the lower factor ``L`` of ``A = L Lᵀ`` (row by row, Cholesky–Banachiewicz);
- :func:`solve_lower`, :func:`solve_lower_t`, :func:`cho_solve`, :func:`spd_inverse`: solves and inverse from
  that factor;
- :func:`solve`: Gaussian elimination with partial pivoting (the first largest pivot), for a general system.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..util.errors import ParameterError

__all__ = ["dot", "matvec", "matmul", "cholesky", "solve_lower", "solve_lower_t", "cho_solve", "spd_inverse",
           "solve", "warmup"]


@njit(cache=True)
def dot(x, y):
    """``Σ_k x_k y_k``, added in order of ``k`` from 0."""
    s = 0.0
    for k in range(x.shape[0]):
        s += x[k] * y[k]
    return s


#: products of fewer multiply-adds than this (a few milliseconds of work) run in one thread: on a busy machine
#: every parallel region waits for a time slice of each of its threads, which costs more than such a product
#: (the Gaussian processes' thousands of per-user products took ten times longer on two threads than on one
#: beside another process)
PARALLEL_FROM = 1 << 22


@njit(cache=True)
def _matvec_row(A, x, out, i):
    s = 0.0
    for k in range(A.shape[1]):
        s += A[i, k] * x[k]
    out[i] = s


@njit(cache=True)
def _matvec_serial(A, x):
    out = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        _matvec_row(A, x, out, i)
    return out


@njit(parallel=True, cache=True)
def _matvec_parallel(A, x):
    out = np.empty(A.shape[0])
    for i in prange(A.shape[0]):
        _matvec_row(A, x, out, i)
    return out


def matvec(A, x):
    """``A x``: each entry a sum over the columns of ``A`` in order (the rows in parallel from
    :data:`PARALLEL_FROM` multiply-adds on, which changes no sum)."""
    if A.shape[0] * A.shape[1] < PARALLEL_FROM:
        return _matvec_serial(A, x)
    return _matvec_parallel(A, x)


@njit(cache=True)
def _matmul_row(A, B, out, i):
    for j in range(B.shape[1]):
        s = 0.0
        for k in range(A.shape[1]):
            s += A[i, k] * B[k, j]
        out[i, j] = s


@njit(cache=True)
def _matmul_serial(A, B):
    out = np.empty((A.shape[0], B.shape[1]))
    for i in range(A.shape[0]):
        _matmul_row(A, B, out, i)
    return out


@njit(parallel=True, cache=True)
def _matmul_parallel(A, B):
    out = np.empty((A.shape[0], B.shape[1]))
    for i in prange(A.shape[0]):
        _matmul_row(A, B, out, i)
    return out


def matmul(A, B):
    """``A B``: entry ``(i, j)`` is ``Σ_k A_ik B_kj`` in order of ``k``; ``A`` or ``B`` may be a transposed view
    (the rows in parallel from :data:`PARALLEL_FROM` multiply-adds on, which changes no sum)."""
    if A.shape[0] * A.shape[1] * B.shape[1] < PARALLEL_FROM:
        return _matmul_serial(A, B)
    return _matmul_parallel(A, B)


@njit(cache=True)
def cholesky(A):
    """``(L, ok)``: the lower factor of ``A = L Lᵀ`` (only the lower triangle of ``A`` is read); ``ok`` is
    False, and ``L`` unfinished, when a pivot is not positive (``A`` is not positive definite)."""
    n = A.shape[0]
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                if not s > 0.0:
                    return L, False
                L[i, i] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    return L, True


@njit(cache=True)
def solve_lower(L, b):
    """``y`` with ``L y = b`` for a lower-triangular ``L`` (forward substitution, each sum in order)."""
    n = L.shape[0]
    y = np.empty(n)
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * y[k]
        y[i] = s / L[i, i]
    return y


@njit(cache=True)
def solve_lower_t(L, y):
    """``x`` with ``Lᵀ x = y`` for a lower-triangular ``L`` (backward substitution, each sum in order)."""
    n = L.shape[0]
    x = np.empty(n)
    for i in range(n - 1, -1, -1):
        s = y[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]
    return x


@njit(cache=True)
def cho_solve(L, b):
    """``x`` with ``L Lᵀ x = b``: :func:`solve_lower`, then :func:`solve_lower_t`."""
    return solve_lower_t(L, solve_lower(L, b))


@njit(cache=True)
def _spd_inverse(A):
    n = A.shape[0]
    L, ok = cholesky(A)
    out = np.empty((n, n))
    if not ok:
        return out, False
    e = np.zeros(n)
    for j in range(n):
        e[:] = 0.0
        e[j] = 1.0
        out[:, j] = cho_solve(L, e)
    for i in range(n):              # the exact inverse is symmetric: keep the lower triangle's values
        for j in range(i + 1, n):
            out[i, j] = out[j, i]
    return out, True


def spd_inverse(A: np.ndarray) -> np.ndarray:
    """``A⁻¹`` of a symmetric positive definite ``A`` (column ``j`` solves ``A x = e_j`` by :func:`cho_solve`),
    made exactly symmetric from its lower triangle.

    Raises
    ------
    ParameterError
        ``A`` is not positive definite.
    """
    out, ok = _spd_inverse(np.ascontiguousarray(A, dtype=np.float64))
    if not ok:
        raise ParameterError("spd_inverse: the matrix is not positive definite")
    return out


@njit(cache=True)
def _solve(A, b):
    n = A.shape[0]
    M = A.copy()
    x = b.copy()
    for c in range(n):
        p = c
        for r in range(c + 1, n):
            if abs(M[r, c]) > abs(M[p, c]):
                p = r
        if M[p, c] == 0.0:
            return x, False
        if p != c:
            for k in range(n):
                M[c, k], M[p, k] = M[p, k], M[c, k]
            x[c], x[p] = x[p], x[c]
        for r in range(c + 1, n):
            f = M[r, c] / M[c, c]
            for k in range(c, n):
                M[r, k] -= f * M[c, k]
            x[r] -= f * x[c]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= M[i, k] * x[k]
        x[i] = s / M[i, i]
    return x, True


def solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``x`` with ``A x = b`` by Gaussian elimination with partial pivoting, in a fixed order.

    Raises
    ------
    ParameterError
        ``A`` is singular (a zero pivot).
    """
    x, ok = _solve(np.ascontiguousarray(A, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64))
    if not ok:
        raise ParameterError("solve: the matrix is singular")
    return x


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel here on a 2 × 2 system."""
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    x = np.array([1.0, 2.0])
    dot(x, x)
    for product in (_matvec_serial, _matvec_parallel):
        product(A, x)
        product(A.T, x)
    for product in (_matmul_serial, _matmul_parallel):
        product(A, A)
        product(A.T, A)
        product(A, A.T)
    L, _ = cholesky(A)
    cho_solve(L, x)
    spd_inverse(A)
    solve(A, x)
