"""The elementary functions of :mod:`cofiviz.util.elementary`: the C library's values, bit for bit, on every CPU.

Python's :mod:`math` calls the same C library functions one value at a time, so it is the reference: every value
must equal it exactly. NumPy's own versions are compared within an ulp (they are what the functions replace), and
a subprocess with NumPy's AVX-512 loops switched off must give the same bits as one with them on.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cofiviz.util import elementary

FLOATS = st.floats(min_value=-700.0, max_value=700.0, allow_nan=False)
POSITIVE = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False)
UNIT = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
ABOVE_MINUS_ONE = st.floats(min_value=-1.0, max_value=1e300, allow_nan=False, exclude_min=True)

CASES = [  # function, its math reference, values it is defined on, NumPy's version
    (elementary.exp, math.exp, FLOATS, np.exp),
    (elementary.log, math.log, POSITIVE, np.log),
    (elementary.log2, math.log2, POSITIVE, np.log2),
    (elementary.log1p, math.log1p, ABOVE_MINUS_ONE, np.log1p),
    (elementary.arccos, math.acos, UNIT, np.arccos),
]


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between float64 arrays of one sign."""
    ia, ib = a.view(np.int64), b.view(np.int64)
    return np.abs(ia - ib)


@pytest.mark.parametrize("fn, ref, values, numpy_fn", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_each_value_is_the_c_library_s_and_within_an_ulp_of_numpy(fn, ref, values, numpy_fn):
    @settings(max_examples=60, deadline=None)
    @given(arrays(np.float64, st.integers(1, 40), elements=values))
    def check(x):
        got = fn(x)
        assert got.dtype == np.float64 and got.shape == x.shape
        assert [v for v in got.tolist()] == [ref(v) for v in x.tolist()]
        assert _ulps(got, numpy_fn(x)).max() <= 1
    check()


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 40), elements=st.floats(1e-3, 1e3)),
       st.floats(min_value=-4.0, max_value=4.0, allow_nan=False))
def test_power_is_the_c_library_s_pow(x, e):
    got = elementary.power(x, e)
    assert got.tolist() == [math.pow(v, e) for v in x.tolist()]
    assert elementary.power(2.0, x).tolist() == [math.pow(2.0, v) for v in x.tolist()]
    assert _ulps(got, np.power(x, e)).max() <= 1


def test_shapes_scalars_and_the_ends_of_the_domains():
    x = np.arange(12.0).reshape(3, 4) / 12.0
    assert elementary.arccos(x).shape == (3, 4)
    assert elementary.power(x, np.array([1.0, 2.0, 3.0, 0.5])).shape == (3, 4)
    assert isinstance(elementary.exp(0.0), float) and elementary.exp(0.0) == 1.0
    assert elementary.log(np.array([0.0, -1.0, np.inf])).tolist()[0] == -np.inf
    assert np.isnan(elementary.log(-1.0)) and np.isnan(elementary.log2(-2.0)) and np.isnan(elementary.log1p(-2.0))
    assert elementary.log1p(-1.0) == -np.inf and elementary.log2(0.0) == -np.inf
    assert np.isnan(elementary.arccos(1.5)) and elementary.arccos(-1.0) == math.pi
    assert elementary.exp(-np.inf) == 0.0 and elementary.exp(np.inf) == np.inf
    assert np.isnan(elementary.exp(np.nan))


def test_broadcast_read_only_and_strided_arguments_warn_nothing_and_leave_the_input_alone(recwarn):
    x = np.arange(12.0).reshape(3, 4)[:, ::2] / 12.0          # strided
    frozen = np.linspace(0.1, 2.0, 3)
    frozen.setflags(write=False)
    got = elementary.power(x, np.array([2.0, 0.5]))            # broadcast along the rows
    assert got.tolist() == [[math.pow(v, e) for v, e in zip(row, (2.0, 0.5))] for row in x.tolist()]
    assert elementary.exp(frozen).tolist() == [math.exp(v) for v in frozen.tolist()]
    assert not frozen.flags.writeable and [str(w.message) for w in recwarn] == []


_PROGRAM = """
import json, numpy as np
from numpy._core import _multiarray_umath as mu
from cofiviz.util import elementary as E
from numba.core import config
k = np.arange(1, 4001, dtype=np.float64)
x = np.linspace(-1.0, 1.0, 4001)
out = {"avx512": bool(mu.__cpu_features__.get("X86_V4")), "svml_off": bool(config.DISABLE_INTEL_SVML),
       "ours": [E.power(k, -0.25).tolist(), E.log2(k + 1.0).tolist(), E.arccos(x).tolist(), E.exp(-x * 30).tolist()],
       "numpy": [np.power(k, -0.25).tolist(), np.log2(k + 1.0).tolist(), np.arccos(x).tolist(),
                 np.exp(-x * 30).tolist()]}
print(json.dumps(out))
"""


def _run(env_extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NPY_DISABLE_CPU_FEATURES", "NUMBA_DISABLE_INTEL_SVML")}
    out = subprocess.run([sys.executable, "-c", _PROGRAM], env={**env, **env_extra}, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_same_bits_with_and_without_numpy_s_avx512_loops():
    wide = _run({})
    narrow = _run({"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"})
    assert not narrow["avx512"]
    assert wide["svml_off"] and narrow["svml_off"], "importing cofiviz must keep numba from using SVML"
    assert wide["ours"] == narrow["ours"]
    if wide["avx512"]:  # what the module is for: NumPy's own values change with its SIMD set on this CPU
        assert wide["numpy"] != narrow["numpy"]
