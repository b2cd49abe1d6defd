"""What bounds the two opt-in rows of ``bench_peers.py`` kept beside the pairs: RegSVD's slower forms, the exact ALS
and the float64 SGD with its error pass.

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/bench_peers_bounds.py [--data movielens-1m] [--users U] [--repeats 3] [--json OUT]

On the benchmark's split (90 % of each user's ratings, seed 0) and settings, one thread, each time the quickest of
``--repeats``, it times an iteration of each slower form and then its parts run alone:

- **Exact ALS** (``solver="als", als_solve="cholesky"``, 50 factors, biased, so each row solves a d = 51 system): one sweep (both halves
  and the training error), then the normal equations alone — every row's ``A = Σ y yᵀ`` and ``b = Σ y z`` for both
  halves, by the sweep's own grouped accumulation (``_wals_kernels._add_group``, lower triangle) without the solves —
  and the Cholesky solves alone (one d × d solve per user and per item). The normal equations cost d(d + 1)/2
  multiply-adds per rating and half, which the output states with the rate reached.
- **float64 SGD** (``dtype="float64", sgd_loss="after"``, 100 factors): one epoch as RegSVD runs it (the seeded
  permutation, the epoch's kernel, a pass over
  the training entries for the epoch's error), then each part alone, and the same epoch's kernel with each dot
  product in eight partial sums (``sgd_epoch_lanes`` compiled for float64: the one-chain dependence removed, not
  the width of the numbers), beside the epoch of RegSVD's default (``dtype="float32"``, the error seen during the
  epoch).

A profile, not a bound asserted anywhere: ``tests/test_bench_peers.py`` runs it on a slice for its behaviour only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from numba import njit

from cofiviz import datasets
from cofiviz.models import RegSVD
from cofiviz.models import _mf_kernels as mk
from cofiviz.models import _wals_kernels as wk
from cofiviz.protocols import fixed_ratio

#: the settings of bench_peers' exact-ALS and float64-SGD rows (the SGD's without its slower form: the default's too)
ALS = {"rank": 50, "solver": "als", "als_solve": "cholesky", "reg": 0.1, "reg_bias": 0.1, "tol": 0.0}
SGD = {"rank": 100, "lr": 0.005, "reg": 0.02, "reg_bias": 0.02, "tol": 0.0, "init_scale": 0.01}
SLOWER_SGD = {"dtype": "float64", "sgd_loss": "after"}


@njit(cache=True)
def _normal_equations(row_indptr, row_pos, col_of, target, Y, offset, out):
    """Every row's lower-triangular ``A`` and ``b`` (with a bias column), as ``wals_half`` forms them, no solve;
    ``out[a]`` keeps one entry of each so that nothing is optimised away."""
    r = Y.shape[1]
    d = r + 1
    A = np.empty((d, d))
    b = np.empty(d)
    yy = np.empty((4, d))
    ky = np.empty((4, d))
    zz = np.empty(4)
    for a in range(len(row_indptr) - 1):
        A[:, :] = 0.0
        b[:] = 0.0
        g = 0
        for e in range(row_indptr[a], row_indptr[a + 1]):
            p = row_pos[e]
            c = col_of[p]
            for j in range(r):
                yy[g, j] = Y[c, j]
            yy[g, r] = 1.0
            for j in range(d):
                ky[g, j] = yy[g, j]
            zz[g] = target[p] - offset
            g += 1
            if g == 4:
                wk._add_group(A, b, ky, yy, zz, d)
                g = 0
        for h in range(g):
            for j in range(d):
                b[j] += ky[h, j] * zz[h]
                for l in range(j + 1):
                    A[j, l] += ky[h, j] * yy[h, l]
        out[a] = A[d - 1, 0] + b[0]


@njit(cache=True)
def _solves(n_rows, d, out):
    """``n_rows`` Cholesky solves of a d × d symmetric positive definite system, as each row of a half-sweep does."""
    A = np.empty((d, d))
    b = np.empty(d)
    for a in range(n_rows):
        for j in range(d):
            for l in range(d):
                A[j, l] = 0.01
            A[j, j] = 3.0 + 1e-6 * a
            b[j] = 1.0 + j
        wk._cholesky_solve(A, b, d)
        out[a] = b[0]


def _quickest(f, repeats: int) -> float:
    f()   # compile, load caches: untimed
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def profile_als(train, repeats: int) -> dict:
    """Seconds of one exact-ALS sweep and of its parts alone (see the module docstring)."""
    model = RegSVD(**ALS, max_iter=1, seed=0).fit(train)
    m, n, r = train.n_users, train.n_items, int(ALS["rank"])
    d = r + 1
    iptr, ipos = train.item_index()
    upos = np.arange(len(train), dtype=np.int64)
    P, Q = model.P_, model.Q_
    mu = float(model.mu_[0])
    out_u, out_i = np.empty(m), np.empty(n)
    sweep = _quickest(lambda: model._step(1), repeats)
    normal = _quickest(lambda: (_normal_equations(train.indptr, upos, train.items, train.ratings, Q, mu, out_u),
                                _normal_equations(iptr, ipos, train.users, train.ratings, P, mu, out_i)), repeats)
    solves = _quickest(lambda: (_solves(m, d, out_u), _solves(n, d, out_i)), repeats)
    madds = 2 * len(train) * d * (d + 1) // 2
    return {"sweep_s": sweep, "normal_equations_s": normal, "solves_s": solves, "rows": m + n, "d": d,
            "normal_equations_madds": madds, "normal_equations_gflops": madds / normal / 1e9}


def profile_sgd(train, repeats: int) -> dict:
    """Seconds of one float64 SGD epoch as RegSVD runs it, of its parts alone, of its kernel with eight partial
    sums per dot product, and of the default's float32 epoch (see the module docstring)."""
    f64 = RegSVD(**SGD, **SLOWER_SGD, max_iter=1, seed=0).fit(train)
    f32 = RegSVD(**SGD, max_iter=1, seed=0).fit(train)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(train)).astype(np.int64)
    users, items, ratings = train.users, train.items, train.ratings
    P, Q, bu, bi = (a.copy() for a in (f64.P_, f64.Q_, f64.bu_, f64.bi_))
    mu = float(f64.mu_[0])
    pred = np.empty(len(train))
    args = (users, items, ratings, order, P, Q, bu, bi, mu, 0.005, 0.02, 0.02, True)
    return {
        "epoch_s": _quickest(lambda: f64._step(1), repeats),
        "permutation_s": _quickest(lambda: rng.permutation(len(train)).astype(np.int64, copy=False), repeats),
        "kernel_s": _quickest(lambda: mk.sgd_epoch(*args), repeats),
        "error_pass_s": _quickest(lambda: mk.predict_mf(users, items, P, Q, bu, bi, mu, pred), repeats),
        "kernel_eight_sums_s": _quickest(lambda: mk.sgd_epoch_lanes(*args), repeats),
        "float32_epoch_s": _quickest(lambda: f32._step(1), repeats),
    }


def run(data: str = "movielens-1m", users: int | None = None, repeats: int = 3) -> dict:
    """Both profiles on ``data``'s 90 % split (``users``: the first users only, a slice)."""
    ratings = datasets.load(data)
    if users is not None:
        ratings = ratings.take(ratings.users < users)
    train = fixed_ratio(ratings, 0.9, seed=0).train
    return {"data": data, "ratings": len(train), "als": profile_als(train, repeats),
            "sgd": profile_sgd(train, repeats)}


def report(result: dict) -> str:
    a, s = result["als"], result["sgd"]
    return "\n".join([
        f"{result['data']}, {result['ratings']} training ratings, one thread, quickest of the runs",
        f"exact ALS, d = {a['d']}: one sweep {a['sweep_s']:.4f} s",
        f"  normal equations alone {a['normal_equations_s']:.4f} s ({a['normal_equations_madds'] / 1e9:.2f} G "
        f"multiply-adds, {a['normal_equations_gflops']:.2f} G/s)",
        f"  Cholesky solves alone ({a['rows']} rows) {a['solves_s']:.4f} s",
        f"float64 SGD, 100 factors: one epoch {s['epoch_s']:.4f} s",
        f"  permutation {s['permutation_s']:.4f} s, kernel {s['kernel_s']:.4f} s, "
        f"error pass {s['error_pass_s']:.4f} s",
        f"  kernel with eight sums per dot product (float64) {s['kernel_eight_sums_s']:.4f} s; "
        f"the default's float32 epoch {s['float32_epoch_s']:.4f} s",
    ])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="movielens-1m")
    p.add_argument("--users", type=int, default=None, help="keep the first U users only (a small slice)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    result = run(args.data, args.users, args.repeats)
    print(report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
