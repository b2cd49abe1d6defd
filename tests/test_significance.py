"""Paired significance tests and Holm's correction against plain references; `cofiviz run --per-user` and
`cofiviz compare` on real files."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from cofiviz.cli import main
from cofiviz.util.errors import DataError
from cofiviz.evaluation.significance import PAIRED_FIELDS, holm, paired_test
from contract import planted

VALUE = st.one_of(st.floats(0, 1), st.just(float("nan")), st.sampled_from([0.0, 0.25, 0.5, 1.0]))


def reference_holm(p):
    """Holm (1979): sort ascending, multiply the i-th (0-based) by m - i, running maximum, cap at 1."""
    idx = [i for i, v in enumerate(p) if not math.isnan(v)]
    m = len(idx)
    ranked = sorted(idx, key=lambda i: (p[i], i))
    out = [float("nan")] * len(p)
    best = 0.0
    for i, j in enumerate(ranked):
        best = max(best, min(1.0, (m - i) * p[j]))
        out[j] = best
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), max_size=12))
def test_holm_equals_the_step_down_rule(p):
    got = holm(p)
    ref = reference_holm(p)
    for g, r in zip(got, ref):
        assert (math.isnan(g) and math.isnan(r)) or g == pytest.approx(r, abs=1e-15)


def test_holm_by_hand():
    # m = 3, ascending: 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> raised to 0.06 (non-decreasing)
    assert holm([0.04, 0.01, 0.03]).tolist() == pytest.approx([0.06, 0.03, 0.06])
    assert holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.integers(0, 30), VALUE, max_size=25), st.dictionaries(st.integers(0, 30), VALUE, max_size=25))
def test_paired_test_pairs_the_shared_users_and_matches_scipy(a, b):
    res = paired_test(a, b, metric="ndcg@10")
    assert tuple(res) == PAIRED_FIELDS and res["metric"] == "ndcg@10"
    shared = sorted(u for u in set(a) & set(b) if not math.isnan(a[u]) and not math.isnan(b[u]))
    assert res["n_users"] == len(shared)
    assert res["n_left_out"] == len(set(a) | set(b)) - len(shared)
    if not shared:
        assert math.isnan(res["diff"]) and math.isnan(res["t_test_p"])
        return
    x = np.array([a[u] for u in shared])
    y = np.array([b[u] for u in shared])
    assert res["mean_a"] == pytest.approx(x.mean()) and res["mean_b"] == pytest.approx(y.mean())
    assert res["diff"] == pytest.approx(x.mean() - y.mean(), abs=1e-12)
    d = x - y
    if len(shared) < 2:
        assert math.isnan(res["t_test_p"]) and math.isnan(res["wilcoxon_p"])
    elif np.all(d == 0):
        assert res["t_test_p"] == 1.0 and res["wilcoxon_p"] == 1.0
    else:
        if not np.all(d == d[0]):
            assert res["t_test_p"] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-9)
        assert res["wilcoxon_p"] == pytest.approx(stats.wilcoxon(x, y).pvalue, rel=1e-9)
        assert 0.0 <= res["t_test_p"] <= 1.0 and 0.0 <= res["wilcoxon_p"] <= 1.0


def test_a_clear_difference_is_significant_and_equal_methods_are_not():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.7, 400)
    a = dict(enumerate(base + 0.05 + rng.normal(0, 0.02, 400)))
    b = dict(enumerate(base))
    res = paired_test(a, b)
    assert res["diff"] == pytest.approx(0.05, abs=0.005) and res["t_test_p"] < 1e-10 and res["wilcoxon_p"] < 1e-10
    same = paired_test(b, b)
    assert same["diff"] == 0 and same["t_test_p"] == 1.0 and same["wilcoxon_p"] == 1.0
    with pytest.raises(DataError, match="map users to values"):
        paired_test([0.1, 0.2], b)


# ------------------------------------------------------------------------------- the command line
@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    s = planted(seed=4)
    s.train.write(d / "train.tsv")
    s.test.write(d / "test.tsv")
    out = {}
    for name, extra in (("itemmean", ["--set", "damping=5"]), ("poprec", [])):
        path = d / f"{name}.json"
        assert main(["run", name, "--train", str(d / "train.tsv"), "--test", str(d / "test.tsv"), *extra,
                     "--metrics", "ndcg@10,ap,err@5", "--per-user", "--json", str(path), "--quiet"]) == 0
        out[name] = path
    out["dir"] = d
    return out


def test_run_per_user_writes_every_test_user_with_original_ids(runs):
    doc = json.loads(runs["itemmean"].read_text())
    pu = doc["per_user"]
    assert list(pu) == ["user", "ndcg@10", "ap", "err@5"]
    assert len(pu["user"]) == doc["n_users"] == len(set(pu["user"]))
    for m in ("ndcg@10", "ap", "err@5"):
        vals = np.array([np.nan if v is None else v for v in pu[m]], dtype=float)
        assert np.nanmean(vals) == pytest.approx(doc["metrics"][m], abs=1e-12)


def test_compare_prints_and_writes_the_paired_tests(runs, tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["compare", str(runs["itemmean"]), str(runs["poprec"]), "--metric", "NDCG@10",
                 "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert list(res) == list(PAIRED_FIELDS)
    a = json.loads(runs["itemmean"].read_text())["per_user"]
    b = json.loads(runs["poprec"].read_text())["per_user"]
    x, y = np.array(a["ndcg@10"], float), np.array(b["ndcg@10"], float)
    assert a["user"] == b["user"] and res["n_users"] == len(x)
    assert res["diff"] == pytest.approx(float(np.mean(x - y)), abs=1e-12)
    assert res["t_test_p"] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-9)
    assert res["wilcoxon_p"] == pytest.approx(stats.wilcoxon(x, y).pvalue, rel=1e-9)
    assert "ndcg@10" in capsys.readouterr().out


def test_compare_leaves_out_and_counts_users_missing_on_one_side(runs, tmp_path):
    doc = json.loads(runs["poprec"].read_text())
    pu = doc["per_user"]
    pu["ap"][0] = None                                    # skipped on one side
    for key in pu:
        pu[key] = pu[key][:-3]                            # three users only in the other run
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(doc))
    out = tmp_path / "cmp.json"
    assert main(["compare", str(runs["itemmean"]), str(cut), "--metric", "ap", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["n_left_out"] == 4 and res["n_users"] == len(pu["user"]) - 1


def test_compare_refuses_runs_without_per_user_values_with_a_message(runs, tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"model": "itemmean", "metrics": {"ap": 0.5}}))
    proc = subprocess.run([sys.executable, "-m", "cofiviz.cli", "compare", str(plain), str(runs["poprec"]),
                           "--metric", "ap"], capture_output=True, text=True)
    assert proc.returncode == 1 and "--per-user" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "cofiviz.cli", "compare", str(runs["itemmean"]),
                           str(runs["poprec"]), "--metric", "gap"], capture_output=True, text=True)
    assert proc.returncode == 1 and "no per-user values of gap" in proc.stderr and "ndcg@10" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "cofiviz.cli", "compare", str(runs["itemmean"]),
                           str(runs["poprec"]), "--metric", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown metric" in proc.stderr


def test_experiment_results_carry_the_tests_of_the_best_against_each_other_method():
    from cofiviz import Experiment

    exp = Experiment(models={"poprec": {}, "itemmean": {"damping": [0, 25]}},
                     data={"name": "synthetic", "kind": "popularity", "n_users": 300, "n_items": 150, "density": 0.3,
                           "seed": 0},
                     protocol={"name": "cofirank-weak", "n_train": [10, 15]}, seeds=[0, 1], metrics=["ndcg@10"],
                     per_user=True)
    res = exp.run()
    tests = res.paired_tests("ndcg@10")
    assert len(tests) == 2 * 3
    summary = res.summary("ndcg@10")
    for params, g in tests.groupby("protocol_params"):
        assert g["is_best"].sum() == 1
        best = g[g["is_best"]].iloc[0]
        means = summary[summary["protocol_params"] == params].set_index(["label", "setting"])["mean"]
        assert means[(best["label"], best["setting"])] == means.max()
        # each other row is paired_test of its per-user values against the best's, by (seed, user)
        pu = res.per_user
        cells = res.results[(res.results["protocol_params"] == params) & (res.results["part"] == "test")]

        def values(label, setting):
            keys = set(cells[(cells["label"] == label) & (cells["setting"] == setting)]["cell"])
            sub = pu[pu["cell"].isin(keys) & (pu["metric"] == "ndcg@10")]
            return dict(zip(sub["seed"].astype(str) + ":" + sub["user"].astype(str), sub["value"]))

        for _, row in g[~g["is_best"]].iterrows():
            ref = paired_test(values(row["label"], row["setting"]), values(best["label"], best["setting"]))
            assert row["n_users"] == ref["n_users"] > 100
            assert row["t_test_p"] == pytest.approx(ref["t_test_p"], nan_ok=True)
    assert tests["p_holm"].dropna().ge(tests["wilcoxon_p"].dropna()).all()
    # without per-user values there is nothing to pair
    no_users = Experiment(models={"poprec": {}}, data={"name": "synthetic", "n_users": 80, "n_items": 60, "density": 0.5, "seed": 0},
                          protocol={"name": "cofirank-weak", "n_train": 10}, metrics=["ndcg@10"]).run()
    assert no_users.paired_tests("ndcg@10").empty
