"""``benchmarks/bench_defaults.py``: the ranking models' defaults at Netflix size beside the item mean and the
planted truth. A small run behaves as documented; the shipped run (``benchmarks/bench_defaults.json``) holds every
ranking model and the item mean at each size, its differences follow from its values, and the README shows its
table. Nothing here is timed."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_defaults  # noqa: E402

from cofiviz.models import get_model_class, ranking_models  # noqa: E402

SHIPPED = ROOT / "benchmarks" / "bench_defaults.json"


def test_a_small_run_scores_the_item_mean_and_a_model_on_one_split():
    rows = bench_defaults.netflix(["1M"], ["gcr"], budget=0.0)
    assert [r["model"] for r in rows] == ["itemmean", "gcr"]
    base, gcr = rows
    assert base["diff"] == 0.0 and math.isclose(gcr["diff"], gcr["value"] - base["value"], abs_tol=1e-12)
    # a zero budget stops the fit after its first iteration, and the row says so
    assert gcr["iterations"] == 1 and gcr["stopped_by_budget"] and 0 < gcr["value"] < gcr["truth"] <= 1


def test_the_table_marks_a_fit_the_budget_stopped():
    nf = [{"size": "1M", "model": m, "value": v, "truth": 0.9, "diff": v - 0.4, "stopped_by_budget": m == "a"}
          for m, v in (("itemmean", 0.4), ("a", 0.41))] + [{"size": "1M", "model": "b", "skipped": "too slow"},
                                                           {"size": "1M", "model": "c", "diverged": "exploded"}]
    text = bench_defaults.markdown({"fit_budget": 60.0, "netflix": nf})
    assert "| a | 0.4100 (+0.0100) † |" in text and "| planted truth | 0.9000 |" in text and "60-s budget" in text
    assert "| b | not run |" in text and "Not run: b at 1M: too slow" in text
    assert "| c | diverged |" in text and "Diverged: c at 1M: exploded" in text


def test_the_shipped_run_holds_every_ranking_model_and_its_differences_follow_from_its_values():
    result = json.loads(SHIPPED.read_text())
    rows = result["netflix"]
    for size in {r["size"] for r in rows}:
        at = [r for r in rows if r["size"] == size]
        assert sorted(r["model"] for r in at) == sorted(["itemmean", *ranking_models()])
        base = next(r["value"] for r in at if r["model"] == "itemmean")
        for r in at:
            if "skipped" in r or "diverged" in r:       # a model not run, or diverging, at that size says why
                assert (r.get("skipped") or r.get("diverged")) and r["model"] != "itemmean"
                continue
            assert math.isclose(r["diff"], r["value"] - base, abs_tol=1e-12) and r["value"] <= r["truth"]


def test_the_shipped_rows_ran_at_todays_defaults():
    """Every measured row of the shipped run records the parameters it ran with: today's defaults of its model, so
    that a changed default leaves the table behind until it is measured again (``--into``)."""
    for r in json.loads(SHIPPED.read_text())["netflix"]:
        if "skipped" in r:
            continue
        assert r["params"] == get_model_class(r["model"])().get_params(), (r["size"], r["model"])


def test_a_later_run_replaces_the_rows_of_its_sizes_and_models():
    def row(size, model, value):
        return {"size": size, "model": model, "value": value, "truth": 0.9, "diff": 0.0, "stopped_by_budget": False}

    earlier = {"fit_budget": 300.0, "models": ["a", "b"],
               "netflix": [row("1M", "itemmean", 0.40), row("1M", "a", 0.41), row("1M", "b", 0.42),
                           row("10M", "itemmean", 0.45), row("10M", "a", 0.46),
                           {"size": "10M", "model": "b", "truth": 0.9, "diverged": "exploded"}]}
    later = {"fit_budget": 300.0, "models": ["b"], "netflix": [row("10M", "itemmean", 0.45), row("10M", "b", 0.47)]}
    out = bench_defaults.merged(earlier, later)
    assert [(r["size"], r["model"]) for r in out["netflix"]] == [
        ("1M", "itemmean"), ("1M", "a"), ("1M", "b"), ("10M", "itemmean"), ("10M", "a"), ("10M", "b")]
    b10 = out["netflix"][-1]
    assert "diverged" not in b10 and b10["value"] == 0.47 and math.isclose(b10["diff"], 0.02)
    assert out["netflix"][2]["value"] == 0.42 and math.isclose(out["netflix"][2]["diff"], 0.02)
    assert out["models"] == ["a", "b"]


def test_the_readme_shows_the_shipped_run():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- bench_defaults table: benchmarks/bench_defaults.json -->\n", 1)[1]
    assert block.split("<!-- /bench_defaults table -->", 1)[0] == bench_defaults.markdown(
        json.loads(SHIPPED.read_text()))
