"""The CPU switches under which seeded results must not change, and a way to run code under each.

Two libraries pick code by CPU. OpenBLAS picks its kernels (``OPENBLAS_CORETYPE`` forces the kernel of another
CPU), and NumPy dispatches its loops to the widest SIMD set the CPU has (``NPY_DISABLE_CPU_FEATURES`` takes sets
away). A switch makes this CPU behave like another one for both: ``Haswell`` is an AVX2 machine (OpenBLAS's
Haswell kernel, NumPy without its AVX-512 paths), ``SkylakeX`` an AVX-512 one. This CPU can run a switch when it
has the instructions the switch uses. Each switch is run in a real subprocess, and the subprocess reports the
OpenBLAS kernel (threadpoolctl) and whether NumPy dispatches to AVX-512 (``X86_V4``), so that a switch a library
ignored cannot pass unnoticed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

_AVX512 = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}

#: name -> (environment, the CPU flags it needs, the OpenBLAS kernel it must report, whether NumPy must dispatch
#: to its AVX-512 loops)
SWITCHES = {
    "Haswell": ({"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"},
                {"avx2", "fma"}, "haswell", False),
    "SkylakeX": ({"OPENBLAS_CORETYPE": "SkylakeX"}, _AVX512, "skylakex", True),
}

_REPORT = """
import json as _json
import threadpoolctl as _tpc
from numpy._core import _multiarray_umath as _mu
print("KERNELS " + _json.dumps([sorted({str(i.get("architecture")).lower() for i in _tpc.threadpool_info()
                                         if i.get("internal_api") == "openblas"}),
                                bool(_mu.__cpu_features__.get("X86_V4"))]), flush=True)
"""


def cpu_flags() -> set[str]:
    """The instruction-set flags of this CPU (Linux's ``/proc/cpuinfo``; empty elsewhere)."""
    path = Path("/proc/cpuinfo")
    if not path.is_file():
        return set()
    for line in path.read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def missing_flags(name: str) -> set[str]:
    """The flags this CPU lacks to run switch ``name`` (empty: it can run it)."""
    return SWITCHES[name][1] - cpu_flags()


def start(name: str, code: str, threads: int = 1) -> subprocess.Popen:
    """Start ``code`` in a Python subprocess under switch ``name`` with ``threads`` BLAS and numba threads."""
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    env = {**env, **SWITCHES[name][0], "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads), "NUMBA_NUM_THREADS": str(threads)}
    program = "import numpy, scipy.linalg\n" + _REPORT + textwrap.dedent(code)
    return subprocess.Popen([sys.executable, "-c", program], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(name: str, proc: subprocess.Popen, timeout: float = 1800) -> str:
    """Wait for ``proc`` (started by :func:`start` under ``name``); return what it printed after its kernel
    report, having checked that OpenBLAS and NumPy ran the switch's code."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{err[-3000:]}"
    head, _, rest = out.partition("\n")
    assert head.startswith("KERNELS "), out[:500]
    kernels, avx512 = json.loads(head[len("KERNELS "):])
    assert kernels == [SWITCHES[name][2]], f"{name}: OpenBLAS ran {kernels}, not {SWITCHES[name][2]}"
    assert avx512 == SWITCHES[name][3], f"{name}: NumPy {'ran' if avx512 else 'did not run'} its AVX-512 loops"
    return rest.strip()


def run_all(code: str, names: list[str], threads: int = 1, timeout: float = 1800) -> dict[str, str]:
    """``code`` under each switch of ``names`` at once (each single-threaded by default): name -> its output."""
    procs = {n: start(n, code, threads) for n in names}
    return {n: finish(n, p, timeout) for n, p in procs.items()}
