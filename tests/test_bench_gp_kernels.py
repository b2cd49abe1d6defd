"""``benchmarks/bench_gp_kernels.py`` runs and reports every kernel beside NumPy's (behaviour only: nothing is timed)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
bench = importlib.import_module("bench_gp_kernels")


def test_the_benchmark_reports_each_kernel_beside_numpy(capsys):
    rows = bench.run([40, 33], repeats=1)
    assert [(r["n"], r["kernel"]) for r in rows] == [(n, k) for n in (40, 33)
                                                     for k in ("cholesky", "cho_solve (n right-hand sides)", "matmul")]
    assert all(r["cofiviz_s"] > 0 and r["numpy_s"] > 0 and r["ratio"] == r["cofiviz_s"] / r["numpy_s"] for r in rows)
    assert capsys.readouterr().out.count("ratio") == 6
