"""``benchmarks/bench_gapfm_netflix.py``: GAPfm's Figures 3 and 4 read from a folder in the Netflix Prize's layout
(behaviour only: what it measures and writes, not how fast)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from cofiviz import datasets

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
bench = importlib.import_module("bench_gapfm_netflix")


@pytest.fixture(scope="module")
def netflix(tmp_path_factory) -> Path:
    return datasets.write_netflix_prize(datasets.netflix_like(n_ratings=40_000, n_users=250, n_items=400, seed=0),
                                        tmp_path_factory.mktemp("netflix") / "nf", probe_fraction=0.06)


def test_figures_3_and_4_on_a_netflix_folder(netflix, tmp_path, capsys):
    out = tmp_path / "fig.json"
    assert bench.main(["--data", str(netflix), "--given", "10", "20", "--k", "5", "20", "--figure4-given", "20",
                       "--iterations", "1", "--quality-iterations", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "### Figure 3" in printed and "### Figure 4" in printed
    got = json.loads(out.read_text())
    assert got["data"] == {"name": "netflix-prize", "path": str(netflix.resolve())}
    rows = got["figure3"]["rows"]
    assert [r["given"] for r in rows] == [10, 20]
    # every kept user has exactly Given N training ratings
    assert all(r["ratings"] == r["given"] * r["users"] for r in rows) and rows[1]["ratings"] > rows[0]["ratings"]
    assert all(r["total"] > 0 for r in rows) and set(got["figure3"]["slope"]) == {"total", "user_step", "item_step"}
    fig4 = got["figure4"]["rows"]
    assert [r["updates"] for r in fig4] == ["K = 5", "K = 20", "every item"]
    assert [r.get("n_selected") for r in fig4] == [5, 20, None]
    assert all(0 <= r["valid_gap@5"] <= 1 and 1 <= r["best_iteration"] <= 2 for r in fig4)


def test_an_unknown_part_is_refused(netflix):
    with pytest.raises(SystemExit):
        bench.main(["figure5", "--data", str(netflix)])
