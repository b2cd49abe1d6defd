"""Benchmark: the Gaussian-process models' numba kernels against NumPy's LAPACK and BLAS, at the item counts of
MovieLens 100K (1,682) and 1M (3,706).

The collaborative GPs (CGPR, CGPOR) factor and multiply item-by-item matrices every EM iteration. cofiviz's
kernels (``cofiviz.models._gp_kernels``) sum every entry in one fixed order, so that a seeded fit does not depend
on the BLAS thread count; this script prints what that costs against ``numpy.linalg.cholesky``,
``scipy.linalg.cho_solve`` and ``@`` on the same matrices, measured in the same run, and the ratio.

Usage (the numbers depend on the machine's load, which is printed)::

    .venv/bin/python benchmarks/bench_gp_kernels.py [--sizes 1682 3706] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import scipy.linalg

from cofiviz.models import _gp_kernels as gk


def _best(f, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def _matrices(n: int, seed: int = 0):
    """An RBF kernel on 20 random features (positive definite) and a 3 %-dense symmetric matrix, as EM's ``Q − P``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    K = np.exp(-gk.sq_dists(X) / 40.0) + 1e-4 * np.eye(n)
    M = rng.normal(size=(n, n)) * (rng.random((n, n)) < 0.03)
    return K, (M + M.T) / 2


def run(sizes: list[int], repeats: int) -> list[dict]:
    small = np.eye(8) * 2.0
    gk.cholesky(small), gk.cho_solve(gk.cholesky(small)[0], small), gk.matmul(small, small)   # compiled first
    rows = []
    for n in sizes:
        K, M = _matrices(n)
        L = gk.cholesky(K)[0]
        cases = {
            "cholesky": (lambda: gk.cholesky(K), lambda: np.linalg.cholesky(K)),
            "cho_solve (n right-hand sides)": (lambda: gk.cho_solve(L, K), lambda: scipy.linalg.cho_solve((L, True), K)),
            "matmul": (lambda: gk.matmul(K, M), lambda: K @ M),
        }
        for name, (ours, lapack) in cases.items():
            t_ours, t_ref = _best(ours, repeats), _best(lapack, repeats)
            rows.append({"n": n, "kernel": name, "cofiviz_s": t_ours, "numpy_s": t_ref, "ratio": t_ours / t_ref})
            print(f"n = {n:5d}  {name:32s} cofiviz {t_ours:7.2f} s   NumPy/LAPACK {t_ref:6.2f} s   "
                  f"ratio {t_ours / t_ref:5.1f}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1682, 3706])
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}; NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'all')}")
    run(args.sizes, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
