"""The CPU switches under which seeded results must not change, and a way to run code under each.

OpenBLAS picks its kernels by CPU; ``OPENBLAS_CORETYPE`` forces the kernel of another CPU, which this CPU can run
when it has the instructions that kernel uses. Each switch is run in a real subprocess, and the subprocess reports
the kernel OpenBLAS actually took (threadpoolctl), so that a switch OpenBLAS ignored cannot pass unnoticed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: name -> (environment, the CPU flags the kernel needs, the OpenBLAS kernel it must report)
SWITCHES = {
    "Haswell": ({"OPENBLAS_CORETYPE": "Haswell"}, {"avx2", "fma"}, "haswell"),
    "SkylakeX": ({"OPENBLAS_CORETYPE": "SkylakeX"}, {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"},
                 "skylakex"),
}

_REPORT = """
import json as _json
import threadpoolctl as _tpc
print("KERNELS " + _json.dumps(sorted({str(i.get("architecture")).lower() for i in _tpc.threadpool_info()
                                        if i.get("internal_api") == "openblas"})), flush=True)
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
    env = {**os.environ, **SWITCHES[name][0], "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads), "NUMBA_NUM_THREADS": str(threads)}
    program = "import numpy, scipy.linalg\n" + _REPORT + textwrap.dedent(code)
    return subprocess.Popen([sys.executable, "-c", program], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(name: str, proc: subprocess.Popen, timeout: float = 1800) -> str:
    """Wait for ``proc`` (started by :func:`start` under ``name``); return what it printed after its kernel
    report, having checked that OpenBLAS ran the switch's kernel."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{err[-3000:]}"
    head, _, rest = out.partition("\n")
    assert head.startswith("KERNELS "), out[:500]
    kernels = json.loads(head[len("KERNELS "):])
    assert kernels == [SWITCHES[name][2]], f"{name}: OpenBLAS ran {kernels}, not {SWITCHES[name][2]}"
    return rest.strip()


def run_all(code: str, names: list[str], threads: int = 1, timeout: float = 1800) -> dict[str, str]:
    """``code`` under each switch of ``names`` at once (each single-threaded by default): name -> its output."""
    procs = {n: start(n, code, threads) for n in names}
    return {n: finish(n, p, timeout) for n, p in procs.items()}
