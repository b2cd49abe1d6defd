"""``benchmarks/bench_class.py``: a class on one server. The shipped run (``benchmarks/bench_class.json``) is of the
benchmark's own settings, its goals are computed from its numbers, and the README shows its account. Nothing here
is timed: the load itself is measured by the benchmark, on a machine left alone."""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_class  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "benchmarks" / "bench_class.json"


def test_percentile_is_linear_between_the_closest_ranks():
    assert bench_class.percentile([3.0], 95) == 3.0
    assert bench_class.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    assert math.isclose(bench_class.percentile([0.0, 10.0], 95), 9.5)
    assert bench_class.percentile(list(range(101)), 95) == 95


def test_the_shipped_run_is_of_a_class_and_its_goals_follow_from_its_numbers():
    result = json.loads(SHIPPED.read_text())
    slots, alone = result["machine"]["slots"], result["alone_s"]
    assert [sc["arrival_s"] for sc in result["scenarios"]] == result["settings"]["arrivals_s"]
    # the time alone is the median of the benchmark's default number of runs alone
    assert len(result["alone_runs_s"]) == bench_class.ALONE_RUNS and alone == statistics.median(result["alone_runs_s"])
    for sc in result["scenarios"]:
        # each class started on a settled server: the sessions closed before it discarded
        assert sc["settled_after_s"] >= bench_class.DISCARDED_AFTER
        assert (sc["sessions"], sc["runs_pressed"]) == (30, 10) and sc["page_ready"]["opened"] <= 30
        runs = sc["runs"]
        assert sorted(r["k"] for r in runs) == list(range(1, 11))
        for r in runs:
            assert math.isclose(r["bound_s"], 1.2 * math.ceil(r["k"] / slots) * alone)
            assert r["within"] == (r["run_s"] <= r["bound_s"]) and 0 <= r["wait_s"] <= r["run_s"]
        # the first runs' window spans the first ``slots`` runs; the server's CPU in it is part of its whole
        first = [r for r in runs if r["k"] <= slots]
        assert sc["first_runs"]["seconds"] >= max(r["run_s"] for r in first) - 0.5
        assert 0 <= sc["first_runs"]["server_cpu_s"] <= sc["server_cpu_s"]
        goals = sc["goals"]
        assert goals["page_ready_p95_le_5s"] == (sc["page_ready"]["opened"] == 30 and sc["page_ready"]["p95_s"] <= 5)
        assert goals["kth_run_within_bound"] == all(r["within"] for r in runs)
        assert goals["every_run_finished"] == all("run_s" in r for r in runs)
        assert goals["no_errors"] == (sc["errors"] == [])


def test_the_readme_shows_the_shipped_run():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- bench_class account: benchmarks/bench_class.json -->\n", 1)[1]
    assert block.split("<!-- /bench_class account -->", 1)[0] == bench_class.markdown(json.loads(SHIPPED.read_text()))
