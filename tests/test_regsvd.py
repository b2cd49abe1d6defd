"""RegSVD (biased regularised incomplete SVD, LCR §2.1): the model contract, SGD and ALS both fit the
training ratings, ALS rows are exact ridge solutions, and the factors LCR's distances come from."""

from __future__ import annotations

import numpy as np
import pytest

import numba
from hypothesis import given, settings
from hypothesis import strategies as st

from cofiviz import protocols
from cofiviz.datasets import synthetic
from cofiviz.util.errors import ParameterError
from cofiviz.evaluation import mean_metrics
from cofiviz.models import ItemMean
from cofiviz.util.lanes import dot8
from cofiviz.models import _mf_kernels as mk
from cofiviz.models.regsvd import RegSVD, regsvd_factors

from contract import ModelContract, planted


class TestRegSVDContract(ModelContract):
    bad_params = [{"seed": -1}, {"rank": 0}, {"lr": 0.0}, {"reg": -1.0}, {"solver": "lbfgs"}]
    diverging_params = {"lr": 10.0}

    def make_model(self, **params):
        return RegSVD(**{"rank": 3, "max_iter": 20, **params})


class TestRegSVDFloat64Contract(ModelContract):
    bad_params = [{"dtype": "float16"}, {"sgd_loss": "never"}]
    diverging_params = {"lr": 10.0}

    def make_model(self, **params):
        return RegSVD(**{"rank": 3, "max_iter": 20, "dtype": "float64", "sgd_loss": "after", **params})


class TestRegSVDALSContract(ModelContract):
    bad_params = [{"seed": -1}, {"init_scale": 0.0}]
    diverging_params = {"reg": 0.0}  # singular ridge solves; ALS has no learning rate to name

    def make_model(self, **params):
        return RegSVD(**{"rank": 3, "max_iter": 5, "solver": "als", "als_solve": "cholesky", "reg": 2.0, **params})


class TestRegSVDConjugateGradientContract(ModelContract):
    bad_params = [{"als_solve": "lu"}, {"cg_steps": 0}]

    def make_model(self, **params):
        return RegSVD(**{"rank": 3, "max_iter": 5, "solver": "als", "als_solve": "cg", "reg": 2.0, **params})


class TestRegSVDConjugateGradientFloat32Contract(ModelContract):
    bad_params = [{"dtype": "float16"}]

    def make_model(self, **params):
        return RegSVD(**{"rank": 3, "max_iter": 5, "solver": "als", "als_solve": "cg", "dtype": "float32",
                         "reg": 2.0, **params})


@pytest.fixture(scope="module")
def low_rank():
    r = synthetic("low_rank", n_users=200, n_items=150, density=0.3, rank=3, noise=0.1, item_bias=0.3, seed=2)
    return protocols.fixed_ratio(r, 0.7, seed=0)


@pytest.mark.parametrize("solver, params", [("sgd", {"lr": 0.02, "reg": 0.02}),
                                            ("sgd", {"lr": 0.02, "reg": 0.02, "dtype": "float64"}),
                                            ("als", {"reg": 0.02, "als_solve": "cholesky"}),
                                            ("als", {"reg": 0.02}),
                                            ("als", {"reg": 0.02, "dtype": "float64"})])
def test_fits_low_rank_ratings_and_beats_the_item_mean(low_rank, solver, params):
    s = low_rank
    m = RegSVD(rank=3, solver=solver, max_iter=60, tol=0, **params).fit(s.train)
    losses = [h["loss"] for h in m.history_]
    assert losses[-1] < 0.6 * losses[0]
    rmse = np.sqrt(np.mean((m.score(s.test.users, s.test.items) - s.test.ratings) ** 2))
    base = ItemMean().fit(s.train)
    rmse_base = np.sqrt(np.mean((base.score(s.test.users, s.test.items) - s.test.ratings) ** 2))
    assert rmse < rmse_base
    assert mean_metrics(m, s.test, ["ndcg@10"])["ndcg@10"] > mean_metrics(base, s.test, ["ndcg@10"])["ndcg@10"]


@pytest.mark.parametrize("weighting", ["ratings", "none"])
def test_als_rows_are_ridge_solutions(weighting):
    s = planted(seed=1)
    m = RegSVD(rank=2, solver="als", als_solve="cholesky", reg=0.5, reg_bias=0.7, max_iter=3, tol=0,
               reg_weighting=weighting).fit(s.train)
    t = s.train
    # the last half-sweep solved item rows: [Q_i, b_i] given [P_u, 1] and targets r - mu - b_u, the penalty
    # multiplied by the item's number of ratings under the weighted-λ rule
    for i in np.unique(t.items)[:5]:
        rows = np.flatnonzero(t.items == i)
        X = np.column_stack([m.P_[t.users[rows]], np.ones(len(rows))])
        y = t.ratings[rows] - m.mu_[0] - m.bu_[t.users[rows]]
        n = len(rows) if weighting == "ratings" else 1
        A = X.T @ X + n * np.diag([0.5, 0.5, 0.7])
        np.testing.assert_allclose(np.append(m.Q_[i], m.bi_[i]), np.linalg.solve(A, X.T @ y), rtol=1e-8,
                                   atol=1e-10)


def weighted_objective(m, t) -> float:
    """What SGD's per-rating penalty and the weighted ALS minimise: the squared error plus λ and λ_b times
    each row's number of ratings."""
    e = t.ratings - m.score(t.users, t.items)
    nu, ni = np.bincount(t.users, minlength=t.n_users), np.bincount(t.items, minlength=t.n_items)
    return float(e @ e + m.reg * (nu @ np.sum(m.P_ ** 2, axis=1) + ni @ np.sum(m.Q_ ** 2, axis=1))
                 + m.reg_bias * (nu @ m.bu_ ** 2 + ni @ m.bi_ ** 2))


def test_weighted_als_lowers_sgds_objective_at_every_sweep():
    """Each half-sweep solves its rows exactly, so the weighted objective never rises; and SGD, run on it with a
    small step, ends near the value ALS reaches."""
    t = planted(seed=4).train
    values = [weighted_objective(RegSVD(rank=3, solver="als", als_solve="cholesky", reg=0.3, max_iter=k, tol=0,
                                        seed=1).fit(t), t) for k in range(1, 8)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(values, values[1:]))
    sgd = RegSVD(rank=3, solver="sgd", reg=0.3, lr=0.005, max_iter=300, tol=0, seed=1, dtype="float64").fit(t)
    assert weighted_objective(sgd, t) == pytest.approx(values[-1], rel=0.05)


def test_als_at_the_defaults_does_not_overfit_movielens():
    """On MovieLens 100K (90 % of the ratings trained), ALS with the default λ predicts the test ratings about as
    well as SGD and better than the item mean; with the plain penalty the same λ overfits, below the item mean."""
    from cofiviz import datasets

    s = protocols.fixed_ratio(datasets.load("movielens-100k"), 0.9, seed=0)

    def rmse(model):
        return float(np.sqrt(np.mean((model.score(s.test.users, s.test.items) - s.test.ratings) ** 2)))

    sgd, als = RegSVD().fit(s.train), RegSVD(solver="als").fit(s.train)
    plain = RegSVD(solver="als", reg_weighting="none").fit(s.train)
    base = rmse(ItemMean().fit(s.train))
    assert rmse(als) < base and rmse(als) < rmse(sgd) + 0.05
    assert rmse(plain) > base


def test_unbiased_uncentred_svd_for_distances():
    s = planted(seed=0)
    P, Q = regsvd_factors(s.train, rank=4, seed=1, biased=False, center=False)
    assert P.shape == (s.train.n_users, 4) and Q.shape == (s.train.n_items, 4)
    m = RegSVD(rank=4, biased=False, center=False).fit(s.train)
    assert m.mu_[0] == 0.0 and not m.bu_.any() and not m.bi_.any()
    # the rows share the direction that carries the mean rating: most user pairs are within 72 degrees
    Pn = P / np.linalg.norm(P, axis=1, keepdims=True)
    assert np.mean(Pn @ Pn.T > np.cos(0.4 * np.pi)) > 0.8


def test_sgd_is_seeded():
    s = planted(seed=2)
    a = RegSVD(rank=3, seed=5, max_iter=5).fit(s.train)
    b = RegSVD(rank=3, seed=5, max_iter=5).fit(s.train)
    c = RegSVD(rank=3, seed=6, max_iter=5).fit(s.train)
    np.testing.assert_array_equal(a.P_, b.P_)
    assert not np.array_equal(a.P_, c.P_)


def test_uniform_init_starts_in_the_toolkit_range_and_still_fits(low_rank):
    s = low_rank
    start = RegSVD(rank=4, init="uniform", lr=1e-12, max_iter=1, tol=0, seed=3).fit(s.train)
    for F in (start.P_, start.Q_):
        assert F.min() >= 0.0 and F.max() < 0.25        # uniform on [0, 1/rank)
        assert F.max() > 0.2 and abs(F.mean() - 0.125) < 0.01
    # the toolkit's setup: no offsets, no centring, uniform start; it still learns the ratings
    m = RegSVD(rank=4, init="uniform", biased=False, center=False, lr=0.02, reg=0.02, max_iter=80, tol=0,
               seed=3).fit(s.train)
    losses = [h["loss"] for h in m.history_]
    assert losses[-1] < 0.2 * losses[0]
    assert mean_metrics(m, s.test, "ndcg@10")["ndcg@10"] > mean_metrics(ItemMean().fit(s.train), s.test,
                                                                       "ndcg@10")["ndcg@10"]


def plain_sgd_epoch(users, items, ratings, order, P, Q, bu, bi, mu, lr, reg, reg_bias):
    """The Funk update, entry by entry in ``order``, in plain Python (the same operations in the same order)."""
    sse = 0.0
    for p in order:
        u, i = users[p], items[p]
        f = mu + (bu[u] + bi[i])
        for c in range(P.shape[1]):
            f += P[u, c] * Q[i, c]
        e = ratings[p] - f
        sse += e * e
        bu[u] += lr * (e - reg_bias * bu[u])
        bi[i] += lr * (e - reg_bias * bi[i])
        for c in range(P.shape[1]):
            pu, qi = P[u, c], Q[i, c]
            P[u, c] += lr * (e * qi - reg * pu)
            Q[i, c] += lr * (e * pu - reg * qi)
    return sse


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 203])
def test_predictions_four_at_a_time_are_each_pairs_plain_sum(n):
    """``predict_mf`` computes four pairs side by side: each is ``μ + (b_u + b_i)`` and then the factors' products
    added in order, to the last bit (the whole blocks of four and the pairs left over)."""
    rng = np.random.default_rng(n)
    users, items = rng.integers(0, 9, n).astype(np.int32), rng.integers(0, 7, n).astype(np.int32)
    P, Q, bu, bi = rng.normal(size=(9, 13)), rng.normal(size=(7, 13)), rng.normal(size=9), rng.normal(size=7)
    out = np.empty(n)
    mk.predict_mf(users, items, P, Q, bu, bi, 3.25, out)
    want = []
    for u, i in zip(users, items):
        f = 3.25 + bu[u] + bi[i]
        for c in range(13):
            f += P[u, c] * Q[i, c]
        want.append(f)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("rank", [1, 3])
@pytest.mark.parametrize("n", [3, 5, mk.SGD_GATHER_AHEAD + 1, mk.SGD_CHUNK, 2 * mk.SGD_CHUNK + 37])
def test_sgd_epoch_reads_ahead_in_chunks_without_changing_an_update(n, rank):
    # buffers and prefetches change no update: shorter than the prefetch distances, one chunk, several
    rng = np.random.default_rng(n)
    users = rng.integers(0, 40, n).astype(np.int32)
    items = rng.integers(0, 30, n).astype(np.int32)
    ratings = rng.integers(1, 6, n).astype(np.float64)
    order = rng.permutation(n).astype(np.int64)
    start = [rng.normal(0, 0.1, (40, rank)), rng.normal(0, 0.1, (30, rank)), rng.normal(0, 0.1, 40),
             rng.normal(0, 0.1, 30)]
    got, want = [a.copy() for a in start], [a.copy() for a in start]
    sse = mk.sgd_epoch(users, items, ratings, order, *got, 3.5, 0.01, 0.05, 0.02, True)
    assert sse == plain_sgd_epoch(users, items, ratings, order, *want, 3.5, 0.01, 0.05, 0.02)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------------------- SGD in 32-bit floats
def plain_dot_lanes(x, y):
    """Eight partial sums as ``_dot_lanes`` documents them, in plain Python on NumPy scalars of ``x``'s type."""
    z = x.dtype.type(0)
    s = [z] * 8
    r = len(x)
    c8 = r - r % 8
    for c in range(c8):
        s[c % 8] = s[c % 8] + x[c] * y[c]
    for c in range(c8, r):
        s[0] = s[0] + x[c] * y[c]
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


@numba.njit(cache=True)
def _dot(x, y):
    return mk._dot_lanes(x, y)


@settings(max_examples=60, deadline=None)
@given(r=st.integers(1, 40), seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from([np.float32, np.float64]))
def test_dot_lanes_adds_in_its_documented_order_in_the_arrays_precision(r, seed, dtype):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=r).astype(dtype), rng.normal(size=r).astype(dtype)
    assert _dot(x, y) == plain_dot_lanes(x, y)
    assert abs(_dot(x, y) - np.dot(x.astype(np.float64), y.astype(np.float64))) <= 1e-5 * r
    ftype = numba.from_dtype(np.dtype(dtype))   # sums in the arrays' precision: float32 stays float32
    (sig,) = [sig for sig in _dot.signatures if sig[0].dtype == ftype]
    assert _dot.overloads[sig].signature.return_type == ftype


def plain_sgd_epoch32(users, items, ratings, order, P, Q, bu, bi, mu, lr, reg, reg_bias):
    """``sgd_epoch_lanes`` entry by entry in plain Python on float32 scalars (its documented operations)."""
    sse = 0.0
    for p in order:
        u, i = users[p], items[p]
        f = mu + (bu[u] + bi[i])
        f = f + plain_dot_lanes(P[u], Q[i])
        e = ratings[p] - f
        sse += float(e) * float(e)
        bu[u] = bu[u] + lr * (e - reg_bias * bu[u])
        bi[i] = bi[i] + lr * (e - reg_bias * bi[i])
        for c in range(P.shape[1]):
            pu, qi = P[u, c], Q[i, c]
            P[u, c] = pu + lr * (e * qi - reg * pu)
            Q[i, c] = qi + lr * (e * pu - reg * qi)
    return sse


@pytest.mark.parametrize("rank", [1, 8, 13])
@pytest.mark.parametrize("n", [5, mk.SGD_CHUNK + 37])
def test_float32_epoch_is_its_documented_arithmetic_to_the_last_bit(n, rank):
    rng = np.random.default_rng(n + rank)
    f32 = np.float32
    users = rng.integers(0, 40, n).astype(np.int32)
    items = rng.integers(0, 30, n).astype(np.int32)
    ratings = rng.integers(1, 6, n).astype(f32)
    order = rng.permutation(n).astype(np.int32)
    start = [rng.normal(0, 0.1, (40, rank)).astype(f32), rng.normal(0, 0.1, (30, rank)).astype(f32),
             rng.normal(0, 0.1, 40).astype(f32), rng.normal(0, 0.1, 30).astype(f32)]
    got, want = [a.copy() for a in start], [a.copy() for a in start]
    scal = (f32(3.5), f32(0.01), f32(0.05), f32(0.02))
    sse = mk.sgd_epoch_lanes(users, items, ratings, order, *got, *scal, True)
    assert sse == plain_sgd_epoch32(users, items, ratings, order, *want, *scal)
    for a, b in zip(got, want):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)


def test_float32_sgd_follows_float64_and_keeps_its_type(low_rank, tmp_path):
    s = low_rank
    fits = {dt: RegSVD(rank=3, lr=0.02, reg=0.02, max_iter=30, tol=0, seed=4, dtype=dt).fit(s.train)
            for dt in ("float64", "float32")}
    m32 = fits["float32"]
    assert all(a.dtype == np.float32 for a in (m32.P_, m32.Q_, m32.bu_, m32.bi_))
    # the same draws and the same order of entries: the two precisions part only by rounding
    s64, s32 = (m.score(s.test.users, s.test.items) for m in (fits["float64"], m32))
    assert np.max(np.abs(s64 - s32)) < 1e-3
    l64, l32 = fits["float64"].history_[-1]["loss"], m32.history_[-1]["loss"]
    assert l32 == pytest.approx(l64, rel=1e-3) and l32 < 0.6 * m32.history_[0]["loss"]
    m32.save(tmp_path / "m")
    back = RegSVD.load(tmp_path / "m")
    assert back.P_.dtype == np.float32
    np.testing.assert_array_equal(back.score(s.test.users, s.test.items), s32)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sgd_loss_during_the_epoch_is_its_errors_before_each_update(low_rank, dtype):
    """The default loss is the mean squared error the epoch saw, each entry's error before its update: a little above
    the error of a pass after the epoch (``sgd_loss="after"``), and falling with it; the factors are the same."""
    s = low_rank
    common = dict(rank=3, lr=0.02, reg=0.02, max_iter=30, tol=0, seed=4, dtype=dtype)
    during, after = (RegSVD(**common, sgd_loss=form).fit(s.train) for form in ("during", "after"))
    np.testing.assert_array_equal(during.P_, after.P_)
    ld, la = ([h["loss"] for h in m.history_] for m in (during, after))
    assert all(a < d for d, a in zip(ld, la))
    assert ld[-1] < 1.2 * la[-1] and ld[-1] < 0.6 * ld[0]


def test_the_exact_als_computes_in_float64_whatever_dtype_says(low_rank):
    """``dtype`` is read by SGD and the conjugate-gradient ALS; the Cholesky solves are float64 under either."""
    common = dict(rank=3, solver="als", als_solve="cholesky", reg=0.05, max_iter=3, tol=0, seed=2)
    a, b = (RegSVD(**common, dtype=dt).fit(low_rank.train) for dt in ("float32", "float64"))
    assert a.P_.dtype == np.float64
    np.testing.assert_array_equal(a.P_, b.P_)
    np.testing.assert_array_equal(a.Q_, b.Q_)


_FLOAT32_FIT = """
import sys
import numpy as np
from cofiviz.datasets import synthetic
from cofiviz.models import RegSVD
r = synthetic("low_rank", n_users=120, n_items=90, density=0.3, rank=3, noise=0.1, seed=5)
fits = [RegSVD(rank=13, lr=0.02, reg=0.02, max_iter=5, tol=0, dtype="float32", seed=1).fit(r)]
fits += [RegSVD(rank=13, solver="als", als_solve="cg", reg=0.05, max_iter=5, tol=0, dtype=dt, seed=1).fit(r)
         for dt in ("float32", "float64")]
sys.stdout.write("".join(np.concatenate([m.P_.ravel(), m.Q_.ravel(), m.bu_, m.bi_]).tobytes().hex() for m in fits))
from cofiviz.models import _als_cg_kernels as cgk, _mf_kernels as mk
for kernel in (mk.sgd_epoch_lanes, cgk.cg_half):
    asm = "".join(kernel.inspect_asm().values())
    sys.stdout.write(" zmm" if "%zmm" in asm else " ymm" if "%ymm" in asm else " xmm")
"""

#: numba's target CPUs -> the instructions this CPU needs to run code compiled for it
_NUMBA_TARGETS = {"x86-64": set(), "haswell": {"avx2", "fma"},
                  "skylake-avx512": {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}}


@pytest.fixture(scope="module")
def target_fits(tmp_path_factory):
    """The fit of :data:`_FLOAT32_FIT` compiled for each target this CPU can run, in subprocesses started together
    (each compiles from an empty cache of its own): target -> its running process, or the reason it is skipped."""
    import os
    import subprocess
    import sys

    from cpu_kernels import cpu_flags

    runs = {}
    for cpu, needs in _NUMBA_TARGETS.items():
        if needs - cpu_flags():
            runs[cpu] = f"this CPU cannot run code compiled for {cpu}"
            continue
        # an empty feature list: the target's own instructions, not this CPU's
        env = {**os.environ, "NUMBA_CPU_NAME": cpu, "NUMBA_CPU_FEATURES": "",
               "NUMBA_CACHE_DIR": str(tmp_path_factory.mktemp(f"numba-{cpu}"))}
        runs[cpu] = subprocess.Popen([sys.executable, "-c", _FLOAT32_FIT], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
    yield runs
    for run in runs.values():
        if not isinstance(run, str) and run.poll() is None:
            run.kill()
            run.wait()


@pytest.mark.parametrize("cpu", list(_NUMBA_TARGETS))
def test_float32_sgd_and_cg_als_give_the_same_bits_compiled_for_another_cpu(cpu, target_fits):
    """numba compiles for the CPU it runs on: SSE2 only (x86-64), AVX2 with FMA (haswell) or AVX-512. The float32
    epoch's and the conjugate-gradient sweep's operations are in a fixed order and never fused (the lanes of their
    dot products one vector, whatever the registers), so every target gives the same factors to the bit."""
    run = target_fits[cpu]
    if isinstance(run, str):
        pytest.skip(run)
    here = {}
    fit = _FLOAT32_FIT.split("from cofiviz.models import _als_cg_kernels")[0]
    exec(compile(fit.replace("sys.stdout.write(", "here['out'] = ("), "<fit>", "exec"), {"here": here})
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr[-2000:]
    bits, *registers = stdout.split(" ")
    # the target was taken: 128-bit registers only for plain x86-64, wider ones where the target has them
    assert all((reg == "xmm") == (cpu == "x86-64") for reg in registers), registers
    assert bits == here["out"]


# ------------------------------------------------------------------------------- ALS by conjugate gradient
def plain_cg_row(Yr, e, x, xb, lam, lam_b, s, steps, row_bias=True):
    """Preconditioned conjugate gradient on one row's normal equations, formed with NumPy in float64: the change
    of ``(x, x_b)`` after ``steps`` steps from zero (the module docstring of ``_als_cg_kernels``, eq 1)."""
    n, r = Yr.shape
    Yt = np.column_stack([Yr, np.ones(n)]) if row_bias else Yr
    reg = s * np.array([lam] * r + ([lam_b] if row_bias else []))
    A = Yt.T @ Yt + np.diag(reg)
    g = Yt.T @ e - reg * np.append(x, xb)[: Yt.shape[1]]
    minv = 1.0 / np.diag(A)
    delta = np.zeros(len(g))
    z = minv * g
    p = z.copy()
    rz = g @ z
    for _ in range(steps):
        Ap = A @ p
        if not p @ Ap > 0:
            break
        alpha = rz / (p @ Ap)
        delta += alpha * p
        g = g - alpha * Ap
        z = minv * g
        rz, rz_old = g @ z, rz
        if not rz_old > 0:
            break
        p = z + (rz / rz_old) * p
    return delta, A, Yt.T @ e - reg * np.append(x, xb)[: Yt.shape[1]]


def _cg_problem(rank, seed):
    """12 users with 0 … 8 ratings each of 15 items (sorted by user, as a ``Ratings``), factors and offsets."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 9, 12)
    counts[0] = 0   # a user without ratings
    users = np.repeat(np.arange(12), counts).astype(np.int32)
    items = np.concatenate([np.sort(rng.choice(15, c, replace=False)) for c in counts]).astype(np.int32)
    t = SimpleNamespace(users=users, items=items, ratings=rng.integers(1, 6, len(users)).astype(float),
                        indptr=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), n_users=12)
    P, Q = rng.normal(0, 0.5, (12, rank)), rng.normal(0, 0.5, (15, rank))
    bu, bi = rng.normal(0, 0.3, 12), rng.normal(0, 0.3, 15)
    return t, P, Q, bu, bi


@settings(max_examples=40, deadline=None)
@given(rank=st.integers(1, 12), steps=st.integers(1, 4), seed=st.integers(0, 2**32 - 1),
       per_rating=st.booleans(), row_bias=st.booleans())
def test_cg_half_is_preconditioned_conjugate_gradient_on_each_rows_normal_equations(rank, steps, seed, per_rating,
                                                                                   row_bias):
    from cofiviz.models import _als_cg_kernels as cgk

    t, P, Q, bu, bi = _cg_problem(rank, seed)
    mu, lam, lam_b = 3.2, 0.3, 0.2
    res = np.empty(len(t.users))
    cgk.residuals(t.users, t.items, t.ratings, P, Q, bu, bi, mu, res)
    P0, bu0, res0 = P.copy(), bu.copy(), res.copy()
    cgk.cg_half(t.indptr, t.items, Q, P, bu, res, lam, lam_b, row_bias, per_rating, steps)
    for u in range(t.n_users):
        rows = np.flatnonzero(t.users == u)
        if len(rows) == 0:   # the ridge solution of a row without ratings
            assert not P[u].any() and (bu[u] == 0.0 or not row_bias)
            continue
        s = len(rows) if per_rating else 1
        delta, _, _ = plain_cg_row(Q[t.items[rows]], res0[rows], P0[u], bu0[u], lam, lam_b, s, steps, row_bias)
        np.testing.assert_allclose(P[u], P0[u] + delta[:rank], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(bu[u], bu0[u] + (delta[rank] if row_bias else 0.0), rtol=1e-9, atol=1e-11)
    # the residuals it leaves are those of its result
    fresh = np.empty(len(t.users))
    cgk.residuals(t.users, t.items, t.ratings, P, Q, bu, bi, mu, fresh)
    np.testing.assert_allclose(res, fresh, rtol=0, atol=1e-12)


def test_cg_steps_enough_for_the_rows_size_reach_the_exact_ridge_solution():
    """In exact arithmetic d conjugate-gradient steps solve a d × d system: with as many steps as a row has unknowns
    the item rows are those of the Cholesky solve, and the fits agree."""
    s = planted(seed=3)
    common = dict(rank=3, solver="als", reg=0.4, reg_bias=0.6, max_iter=4, tol=0, seed=2, dtype="float64")
    exact = RegSVD(**common, als_solve="cholesky").fit(s.train)
    cg = RegSVD(**common, als_solve="cg", cg_steps=8).fit(s.train)
    for a, b in ((exact.P_, cg.P_), (exact.Q_, cg.Q_), (exact.bu_, cg.bu_), (exact.bi_, cg.bi_)):
        np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose([h["loss"] for h in cg.history_], [h["loss"] for h in exact.history_], rtol=1e-9)


def test_cg_als_lowers_the_weighted_objective_at_every_sweep_and_ranks_as_the_exact_one(low_rank):
    """Each conjugate-gradient step minimises the row's objective along its direction from the row's current value,
    so the objective never rises; two steps a sweep end where the exact ALS does."""
    s = low_rank
    t = s.train
    values = [weighted_objective(RegSVD(rank=3, solver="als", als_solve="cg", cg_steps=1, reg=0.05, max_iter=k,
                                        tol=0, seed=1, dtype="float64").fit(t), t) for k in range(1, 10)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(values, values[1:]))
    common = dict(rank=3, solver="als", reg=0.05, max_iter=30, tol=0, seed=1)
    exact = RegSVD(**common, als_solve="cholesky").fit(t)
    for dtype in ("float64", "float32"):
        cg = RegSVD(**common, als_solve="cg", dtype=dtype).fit(t)
        assert weighted_objective(cg, t) == pytest.approx(weighted_objective(exact, t), rel=1e-3)
        got, want = (mean_metrics(m, s.test, ["ndcg@10"])["ndcg@10"] for m in (cg, exact))
        assert got == pytest.approx(want, abs=2e-3)


def test_float32_cg_als_follows_float64_and_keeps_its_type(low_rank, tmp_path):
    s = low_rank
    fits = {dt: RegSVD(rank=3, solver="als", als_solve="cg", reg=0.05, max_iter=15, tol=0, seed=4, dtype=dt)
            .fit(s.train) for dt in ("float64", "float32")}
    m32 = fits["float32"]
    assert all(a.dtype == np.float32 for a in (m32.P_, m32.Q_, m32.bu_, m32.bi_, m32._residual))
    s64, s32 = (m.score(s.test.users, s.test.items) for m in (fits["float64"], m32))
    assert np.max(np.abs(s64 - s32)) < 1e-3
    assert m32.history_[-1]["loss"] == pytest.approx(fits["float64"].history_[-1]["loss"], rel=1e-4)
    m32.save(tmp_path / "m")
    np.testing.assert_array_equal(RegSVD.load(tmp_path / "m").score(s.test.users, s.test.items), s32)


@numba.njit(cache=True)
def _dot8_prefix(x, y, n):
    return dot8(x, y, n)


@settings(max_examples=60, deadline=None)
@given(length=st.integers(0, 40), cut=st.integers(0, 40), seed=st.integers(0, 2**32 - 1),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_dot8_of_a_prefix_adds_in_the_documented_order(length, cut, seed, dtype):
    n = min(cut, length)
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=length).astype(dtype), rng.normal(size=length).astype(dtype)
    assert _dot8_prefix(x, y, n) == plain_dot_lanes(x[:n], y[:n])
