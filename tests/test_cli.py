"""The `cofiviz` command line: run (with searches), split, datasets, models, warmup; errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import param
import pytest

from cofiviz import Split
from cofiviz.cli import convert_value, main, parse_sets
from cofiviz.util.errors import ParameterError

from contract import planted

BIN = Path(sys.executable).parent / "cofiviz"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """train / valid / test files of a planted split (valid: 4 of each user's 20 training ratings)."""
    d = tmp_path_factory.mktemp("split")
    s = planted(seed=4)
    rng = np.random.default_rng(0)
    hold = np.zeros(len(s.train), dtype=bool)
    for u in range(s.train.n_users):
        sl = s.train.user_slice(u)
        hold[sl.start + rng.choice(sl.stop - sl.start, 4, replace=False)] = True
    s.train.take(~hold).write(d / "train.tsv")
    s.train.take(hold).write(d / "valid.tsv")
    s.test.write(d / "test.csv", sep=",")
    return {"train": str(d / "train.tsv"), "valid": str(d / "valid.tsv"), "test": str(d / "test.csv"), "dir": d}


def run_json(files, tmp_path, *args, valid=False):
    out = tmp_path / "out.json"
    argv = ["run", *args, "--train", files["train"], "--test", files["test"], "--json", str(out), "--quiet"]
    if valid:
        argv += ["--valid", files["valid"]]
    assert main(argv) == 0
    return json.loads(out.read_text())


def test_run_writes_the_documented_json(files, tmp_path, capsys):
    res = run_json(files, tmp_path, "itemmean", "--metrics", "ndcg@10,ap,gap,zero_one", "--seed", "3")
    for key in ("model", "params", "metrics", "n_users", "fit_seconds", "iterations"):
        assert key in res
    assert res["model"] == "itemmean"
    assert res["params"]["damping"] == 10.0 and res["params"]["seed"] == 3
    assert list(res["metrics"]) == ["ndcg@10", "ap", "gap", "zero_one"]
    assert all(isinstance(v, float) and 0 <= v <= 1 for v in res["metrics"].values())
    assert res["n_users"] == 60 and res["fit_seconds"] >= 0
    assert res["iterations"] == [{"iteration": 1, "seconds": res["iterations"][0]["seconds"], "loss": None}]
    assert "search" not in res
    assert capsys.readouterr().out == ""  # --quiet


def test_run_prints_a_table(files, capsys):
    assert main(["run", "poprec", "--train", files["train"], "--test", files["test"], "--metrics", "ndcg@5,p@5"]) == 0
    out = capsys.readouterr().out
    assert "poprec" in out and "ndcg@5" in out and "p@5" in out and "n_users" in out


def test_iterations_carry_validation_metrics(files, tmp_path):
    res = run_json(files, tmp_path, "itemmean", "--metrics", "ndcg@10,ap", valid=True)
    (it,) = res["iterations"]
    assert it["iteration"] == 1 and it["seconds"] >= 0
    assert 0 < it["ndcg@10"] <= 1 and 0 < it["ap"] <= 1
    assert res["files"]["valid"] == files["valid"]


def test_set_values_are_converted_with_the_parameter_type(files, tmp_path):
    res = run_json(files, tmp_path, "poprec", "--set", "tie_break=none", "--set", "seed=7")
    assert res["params"]["tie_break"] == "none" and res["params"]["seed"] == 7
    res = run_json(files, tmp_path, "itemmean", "--set", "damping=2.5")
    assert res["params"]["damping"] == 2.5

    class P(param.Parameterized):
        i = param.Integer(1)
        x = param.Number(1.0)
        b = param.Boolean(False)
        c = param.Selector(default="a", objects=["a", "b", 3])
        s = param.String("")

    assert convert_value("m", "i", P.param.i, "1e3") == 1000
    assert convert_value("m", "x", P.param.x, "0.25") == 0.25
    assert convert_value("m", "b", P.param.b, "True") is True and convert_value("m", "b", P.param.b, "no") is False
    assert convert_value("m", "c", P.param.c, "3") == 3 and convert_value("m", "c", P.param.c, "B") == "b"
    assert convert_value("m", "s", P.param.s, "ndcg@5") == "ndcg@5"
    for p, raw in (("i", "2.5"), ("x", "abc"), ("b", "maybe"), ("c", "z")):
        with pytest.raises(ParameterError, match=p):
            convert_value("m", p, P.param[p], raw)
    assert parse_sets(["a=1,2", "b-c=x"]) == {"a": ["1", "2"], "b_c": ["x"]}
    for bad in (["a"], ["=1"], ["a=1,"], ["a=1", "a=2"]):
        with pytest.raises(ParameterError):
            parse_sets(bad)


def test_grid_search_on_the_valid_file(files, tmp_path):
    res = run_json(files, tmp_path, "itemmean", "--set", "damping=0,3,30", "--metrics", "ap,ndcg@10", valid=True)
    s = res["search"]
    assert s["on"] == "valid file" and s["metric"] == "ap"
    assert [c["params"]["damping"] for c in s["candidates"]] == [0.0, 3.0, 30.0]
    scores = [c["score"] for c in s["candidates"]]
    assert all(isinstance(x, float) for x in scores)
    best = s["candidates"][int(np.argmax(scores))]["params"]["damping"]
    assert s["chosen"] == {"damping": best} and res["params"]["damping"] == best
    # the candidates' scores are the validation scores of those settings
    res0 = run_json(files, tmp_path, "itemmean", "--set", "damping=0", "--metrics", "ap", valid=True)
    assert res0["iterations"][0]["ap"] == pytest.approx(scores[0])


def test_grid_search_on_a_tenth_of_train(files, tmp_path):
    args = ("itemmean", "--set", "damping=0,10", "--set", "seed=0,1", "--seed", "5")
    res = run_json(files, tmp_path, *args)
    s = res["search"]
    assert s["on"] == "10% of train" and s["metric"] == "ndcg@10"
    assert len(s["candidates"]) == 4  # the grid of both keys
    assert {(c["params"]["damping"], c["params"]["seed"]) for c in s["candidates"]} == {(0, 0), (0, 1), (10, 0), (10, 1)}
    assert set(s["chosen"]) == {"damping", "seed"}
    assert res["params"]["damping"] == s["chosen"]["damping"]
    assert run_json(files, tmp_path, *args)["search"] == s  # seeded carve-out: same search
    assert res["n_users"] == 60  # refit on the full train file, scored on test


def test_error_zero_one_minimised_in_search(files, tmp_path):
    res = run_json(files, tmp_path, "itemmean", "--set", "damping=0,10,1000", "--metrics", "zero_one", valid=True)
    scores = [c["score"] for c in res["search"]["candidates"]]
    assert res["search"]["chosen"]["damping"] == [0, 10, 1000][int(np.argmin(scores))]


@pytest.mark.parametrize("args, expect", [
    (["run", "nosuchmodel"], ["unknown model 'nosuchmodel'", "itemmean", "poprec"]),
    (["run", "itemmean", "--set", "dampening=3"], ["dampening", "damping", "seed"]),
    (["run", "itemmean", "--metrics", "ndcg@10,accuracy"], ["accuracy", "ndcg@K", "zero_one"]),
    (["run", "itemmean", "--set", "damping=-1"], ["damping", "at least 0"]),
    (["run", "itemmean", "--set", "damping=lots"], ["damping", "not a number"]),
    (["run", "poprec", "--set", "tie_break=coin"], ["tie_break", "mean, none"]),
    (["run", "itemmean", "--set", "damping"], ["KEY=VALUE"]),
    (["run", "gcr", "--tune", "--study", "s.db"], ["--study", "--searcher optuna"]),
])
def test_usage_errors_are_one_line_with_exit_code_2(files, capsys, args, expect):
    argv = [*args, "--train", files["train"], "--test", files["test"]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("cofiviz: error:") and err.count("\n") == 1 and "Traceback" not in err
    for text in expect:
        assert text in err


def test_bad_split_file_reports_the_line(files, tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("user\titem\trating\n1\t101\t4\n1\t102\tfive\n")
    assert main(["run", "itemmean", "--train", str(bad), "--test", files["test"]]) == 1
    err = capsys.readouterr().err
    assert "line 3" in err and "rating" in err and "bad.tsv" in err and "Traceback" not in err
    assert main(["run", "itemmean", "--train", str(tmp_path / "missing.tsv"), "--test", files["test"]]) == 1
    assert "missing.tsv" in capsys.readouterr().err


def test_argparse_errors_exit_2_in_one_line(capsys):
    assert main(["run", "itemmean"]) == 2
    err = capsys.readouterr().err
    assert "--train" in err and err.count("\n") == 1
    assert main(["frobnicate"]) == 2
    assert main([]) == 2


def test_split_writes_a_protocol_split(files, tmp_path, capsys):
    out = tmp_path / "weak"
    assert main(["split", "cofirank-weak", "--data", files["train"], "--out", str(out), "--set", "n_train=5",
                 "--seed", "2"]) == 0
    split = Split.read(out)
    assert split.protocol["name"] == "cofirank-weak" and split.protocol["seed"] == 2
    assert set(split.train.user_counts()[split.train.user_counts() > 0]) == {5}
    assert "wrote" in capsys.readouterr().out
    # run finds the protocol beside the train file and records it
    res = run_json({**files, "train": str(out / "train.tsv"), "test": str(out / "test.tsv")}, tmp_path, "poprec")
    assert res["protocol"] == "cofirank-weak"
    assert main(["split", "no-such", "--data", files["train"], "--out", str(out)]) == 2
    assert "cofirank-weak" in capsys.readouterr().err
    assert main(["split", "cofirank-weak", "--data", files["train"], "--out", str(out), "--set", "n=5"]) == 2
    assert "n_train" in capsys.readouterr().err
    assert main(["split", "cofirank-weak", "--data", "no-such-file.tsv", "--out", str(out)]) == 2
    assert "no-such-file.tsv" in capsys.readouterr().err


def test_top_n_split_runs_with_its_negatives_and_threshold(files, tmp_path, capsys):
    out = tmp_path / "topn"
    assert main(["split", "top-n", "--data", files["train"], "--out", str(out), "--set", "n_train=5",
                 "--set", "n_negatives=10", "--set", "min_user_ratings=10", "--set", "min_test=3"]) == 0
    res = run_json({**files, "train": str(out / "train.tsv"), "test": str(out / "test.tsv")}, tmp_path,
                   "poprec", "--metrics", "ndcg@5,p@5")
    assert res["files"]["negatives"].endswith("negatives.tsv")
    assert res["threshold"] == 5.0 and res["protocol"] == "top-n"


def test_models_datasets_warmup(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    sections, current = {}, None
    for line in out.splitlines():
        if not line.startswith(" "):
            current = line.split(":")[0]
            sections[current] = []
        else:
            sections[current].append(line.strip())
    assert {"itemmean", "poprec"} <= set(sections)
    params = {name: [line for line in lines if " = " in line.split(":")[0]] for name, lines in sections.items()}
    (damping,) = params["itemmean"]  # the loop parameters are hidden: the baselines do not iterate
    assert damping.startswith("damping = 10.0") and "[0, inf)" in damping
    # the search space --tune draws from and the named presets follow the parameters
    space = [line for line in sections["cofirank"] if line.startswith("search space (--tune): ")]
    assert len(space) == 1 and "rank integer, log scale [10, 100]" in space[0] and "init one of" in space[0]
    paper = [line for line in sections["cofirank"] if line.startswith("preset paper (--preset paper): ")]
    assert len(paper) == 1 and "rank=100" in paper[0] and "item_prior='none'" in paper[0]
    (tie,) = params["poprec"]
    assert tie.startswith("tie_break = 'mean'") and "mean|none" in tie
    assert main(["datasets"]) == 0 and "movielens-100k" in capsys.readouterr().out
    assert main(["datasets", "fetch"]) == 2
    assert main(["datasets", "fetch", "no-such"]) == 2 and "movielens-100k" in capsys.readouterr().err
    assert main(["warmup", "--quiet"]) == 0 and " s" in capsys.readouterr().out


def test_real_subprocess(files, tmp_path):
    assert BIN.exists(), f"{BIN} is missing: install cofiviz into the venv (make install)"
    out = tmp_path / "sub.json"
    proc = subprocess.run([str(BIN), "run", "itemmean", "--train", files["train"], "--test", files["test"],
                           "--valid", files["valid"], "--set", "damping=1,10", "--metrics", "ndcg@10,gap",
                           "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ndcg@10" in proc.stdout
    res = json.loads(out.read_text())
    assert res["model"] == "itemmean" and set(res["metrics"]) == {"ndcg@10", "gap"}
    assert res["search"]["on"] == "valid file" and len(res["search"]["candidates"]) == 2
    proc = subprocess.run([str(BIN), "run", "nope", "--train", files["train"], "--test", files["test"]],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "available models" in proc.stderr


@pytest.mark.parametrize("model, setting, named", [
    ("gcr", "lr=1000", "lower lr (now 1000.0) or raise reg (now 3.0)"),
    ("bilinear", "lr=1e6", "lower lr (now 1000000.0) or raise reg (now 1.0)"),
])
def test_a_diverging_fit_exits_1_naming_the_parameter(files, tmp_path, model, setting, named):
    out = tmp_path / "div.json"
    proc = subprocess.run([str(BIN), "run", model, "--train", files["train"], "--test", files["test"],
                           "--set", setting, "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""  # no table of a diverged model
    assert "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("cofiviz: error:")]
    assert "exploded" in line and line.endswith(named)
    assert not out.exists()


def test_data_sets_read_from_the_users_own_files(tmp_path, capsys):
    """`--data NAME=PATH` reads the Netflix Prize, EachMovie and Yelp files; `datasets` says they need them."""
    from cofiviz.datasets import netflix_like, synthetic, write_eachmovie, write_netflix_prize, write_yelp

    assert main(["datasets"]) == 0
    listed = capsys.readouterr().out
    for name in ("netflix-prize=PATH", "eachmovie=PATH", "yelp=PATH"):
        assert name in listed
    assert "needs your own copy of its files: PATH is a folder with training_set/" in listed
    assert main(["datasets", "fetch", "netflix-prize"]) == 2
    assert "cannot be fetched" in capsys.readouterr().err
    folder = write_netflix_prize(netflix_like(n_ratings=20_000, n_users=150, n_items=300, seed=1), tmp_path / "nf",
                                 layout="combined", probe_fraction=0.06, seed=0)
    out = tmp_path / "split"
    assert main(["split", "gapfm-netflix", "--data", f"netflix-prize={folder}", "--set", "n_train=10", "--set",
                 "n_negatives=40", "--seed", "2", "--out", str(out)]) == 0
    assert "wrote the gapfm-netflix split of netflix-prize (seed 2)" in capsys.readouterr().out
    res = run_json({"train": str(out / "train.tsv"), "test": str(out / "test.tsv")}, tmp_path, "poprec",
                   "--metrics", "gap@5,ndcg@5,p@5")
    assert res["protocol"] == "gapfm-netflix" and res["threshold"] == 5.0 and res["files"]["negatives"]
    vote = write_eachmovie(synthetic(n_users=40, n_items=30, density=0.5, seed=0, scale=(1, 6)), tmp_path / "Vote.txt")
    assert main(["split", "cofirank-weak", "--data", f"eachmovie={vote}", "--out", str(tmp_path / "em")]) == 0
    reviews = synthetic(n_users=40, n_items=30, density=0.5, seed=0)
    path = write_yelp(reviews.like(np.concatenate([reviews.users, reviews.users[:1]]),
                                   np.concatenate([reviews.items, reviews.items[:1]]),
                                   np.concatenate([reviews.ratings, [5.0]])), tmp_path / "reviews.json")
    assert main(["split", "cofirank-weak", "--data", f"yelp={path}", "--out", str(tmp_path / "y")]) == 1
    assert "to merge them pass duplicates='last'" in capsys.readouterr().err
    assert main(["split", "cofirank-weak", "--data", f"yelp={path}", "--duplicates", "last",
                 "--out", str(tmp_path / "y")]) == 0
    capsys.readouterr()
    for argv, code, said in [
        (["--data", "netflix-prize"], 2, "give --data netflix-prize=PATH, PATH being a folder with training_set/"),
        (["--data", f"netflix-prize={folder}", "--sep", ","], 2, "--sep applies only to a ratings file"),
        (["--data", f"movielens-100k={folder}"], 2, "NAME=PATH is for the data sets read from your own files"),
        (["--data", f"netflix-prize={tmp_path / 'nowhere'}"], 1, "nowhere: no such folder"),
        (["--data", f"eachmovie={tmp_path / 'nf'}"], 1, "holds no Vote.txt"),
    ]:
        assert main(["split", "weak", *argv, "--out", str(tmp_path / "x")]) == code, argv
        assert said in capsys.readouterr().err, argv
