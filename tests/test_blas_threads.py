"""Seeded fits must not depend on how many threads the BLAS library runs, nor on the CPU kernels it picks.

OpenBLAS splits a long dot product (more than 10,000 elements) between its threads, so the
rounding of ``w @ w`` on CofiRank's item factors (items × rank numbers) depends on
``OPENBLAS_NUM_THREADS``; BMRM's stopping test and best-iterate choice then turn on that last bit.
Its matrix products round differently with the thread count too, which moved LCR's and LLORMA's
kernel weights (the anchors' cosines). Each case runs in two real processes, one with one BLAS and
one numba thread and one with two of each, and the results must agree to the last bit.

OpenBLAS also picks its kernels by CPU, and its AVX-512 kernels (``OPENBLAS_CORETYPE=SkylakeX``) sum a dot
product in another order than its AVX2 ones (``Haswell``): a model that multiplies matrices with BLAS inside
its fit (WLT's Newton step, the bilinear model's projections, BPMF's Gibbs sweep) drifted with them. Their
fits use ``cofiviz.solvers.dense`` instead. NumPy's ``exp``, ``log``, ``power``, ``arccos`` … of arrays change
with the SIMD set NumPy dispatches to (AVX-512 or AVX2); fits call ``cofiviz.util.elementary`` instead. Every model
is fitted as on an AVX2 and as on an AVX-512 machine (``tests/cpu_kernels.py``) and must score the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import cpu_kernels

BMRM = """
import hashlib
import numpy as np
from cofiviz.solvers.bmrm import bmrm
rng = np.random.default_rng(0)
c = rng.standard_normal(60_000)
def oracle(w):
    r = w - c
    return float(np.abs(r).sum()), np.sign(r)
res = bmrm(oracle, rng.uniform(0, 1, c.size), 0.7, max_iter=25, tol=0.0, rel_tol=0.0)
print(hashlib.sha1(res.w.tobytes()).hexdigest(), repr(res.objective))
"""

COFIRANK = """
import hashlib
import numpy as np
from cofiviz.datasets.synthetic import synthetic
from cofiviz.models.cofirank import CofiRank
train = synthetic("low_rank", n_users=150, n_items=1500, n_ratings=6000, seed=3)
model = CofiRank(rank=10, reg=1.0, max_iter=3, offsets=True, seed=0).fit(train)
print(hashlib.sha1(model.U_.tobytes() + model.M_.tobytes()).hexdigest(), model.phase_log_[-1]["item_bmrm_iter"])
"""

EVERY_MODEL = """
import hashlib
import numpy as np
from cofiviz.datasets.synthetic import synthetic
from cofiviz.models import available_models, get_model_class, make_model
train = synthetic("low_rank", n_users=400, n_items=1500, n_ratings=20000, seed=3)
users, items = np.repeat(np.arange(50), 1500), np.tile(np.arange(1500), 50)
for name in available_models():
    klass = get_model_class(name)
    extra = {"rank": 20, "offsets": True} if name == "cofirank" else {}
    # a heavy model's iterations cost seconds each on 1,500 items: one shows the same as five
    loop = {"max_iter": 1 if klass.scale.heavy else 5, "seed": 0} if klass.iterative else {}
    model = make_model(name, **loop, **extra)
    scores = np.ascontiguousarray(model.fit(train).score(users, items))
    losses = np.array([h["loss"] for h in model.history_], dtype=np.float64)
    print(name, hashlib.sha1(scores.tobytes()).hexdigest(), hashlib.sha1(losses.tobytes()).hexdigest())
"""


def run_with_threads(code: str, threads: int) -> str:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads), "NUMBA_NUM_THREADS": str(threads)}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


@pytest.mark.parametrize("case", ["bmrm", "cofirank"])
def test_seeded_results_are_the_same_with_one_or_two_threads(case):
    code = {"bmrm": BMRM, "cofirank": COFIRANK}[case]
    one, two = run_with_threads(code, 1), run_with_threads(code, 2)
    assert one and len(one.split()[0]) == 40, one
    assert one == two


def test_every_model_scores_the_same_with_one_or_two_threads_and_under_each_cpu_kernel():
    """Under the Haswell and SkylakeX switches with one thread each (side by side), and under this CPU's own
    kernels with two threads: every model's scores agree to the last bit, and under the two kernels its training
    losses too."""
    runnable = [n for n in cpu_kernels.SWITCHES if not cpu_kernels.missing_flags(n)]
    if len(runnable) < 2:
        pytest.skip(f"this CPU runs only the {runnable} switches of {list(cpu_kernels.SWITCHES)}")
    by_kernel = {k: {line.split()[0]: line.split()[1:] for line in out.splitlines()}
                 for k, out in cpu_kernels.run_all(EVERY_MODEL, runnable).items()}
    two = {line.split()[0]: line.split()[1:] for line in run_with_threads(EVERY_MODEL, 2).splitlines()}
    one = by_kernel[runnable[0]]
    assert {"cofirank", "lcr", "llorma", "gapfm", "bpmf", "wlt", "bilinear"} <= set(one), sorted(one)
    # scores with two threads; MMMF's and NMF's losses are sums that numba splits between its threads
    assert [m for m in one if one[m][0] != two.get(m, [None])[0]] == []
    for kernel, scores in by_kernel.items():
        assert [m for m in one if one[m] != scores.get(m)] == [], kernel
