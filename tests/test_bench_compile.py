"""``benchmarks/bench_compile.py`` runs end to end in its quick mode (behaviour only: nothing is timed)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
bench = importlib.import_module("bench_compile")


def test_quick_run_reports_three_measurements_against_the_sequential_one(tmp_path, capsys):
    out_file = tmp_path / "compile.json"
    assert bench.main(["--quick", "--jobs", "2", "--json", str(out_file)]) == 0
    out = json.loads(out_file.read_text())
    assert out["modules"] == bench.QUICK_MODULES and out["jobs"] == 2
    for key in ("sequential", "parallel", "warm"):
        m = out[key]
        assert m["seconds"] > 0 and m["cpu_seconds"] > 0 and m["load_1min"] >= 0
        assert m["ratio"] == m["seconds"] / out["sequential"]["seconds"]
    assert out["sequential"]["ratio"] == 1.0
    printed = capsys.readouterr().out
    assert "cold, jobs=1" in printed and "cold, jobs=2" in printed and "warm cache" in printed
    assert printed.count("load average") == 4


def test_the_command_runs_the_warmup_asked_for():
    cmd = bench.warmup_command(3, ["cofiviz.models.nmf"])
    assert cmd[0] == sys.executable and "jobs=3" in cmd[-1] and "['cofiviz.models.nmf']" in cmd[-1]
