"""The parts of a split read from files, checked against each other: shared ids, no (user, item) pair twice.

Real files written by the tests, :meth:`Split.from_files` / :meth:`Split.from_frames`, and real
``cofiviz`` processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cofiviz import DataError, Split, protocols
from cofiviz.datasets import synthetic


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cofiviz.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def _write(path: Path, rows, header: str = "user\titem\trating") -> Path:
    path.write_text(header + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows))
    return path


@pytest.fixture
def grid(tmp_path):
    """Train: users 1..10 rate items 1..12 except the test pairs (u, u) and (u, u + 1); even users not item 12."""
    test = [(u, i, 1 + (u * i) % 5) for u in range(1, 11) for i in (u, u + 1)]
    held = {(u, i) for u, i, _ in test} | {(u, 12) for u in range(2, 11, 2)}
    train = [(u, i, 1 + (u + i) % 5) for u in range(1, 11) for i in range(1, 13) if (u, i) not in held]
    return {"train": train, "test": test, "dir": tmp_path,
            "train_file": _write(tmp_path / "train.tsv", train), "test_file": _write(tmp_path / "test.tsv", test)}


# ------------------------------------------------------------------------------------------ shared ids
def test_ids_written_differently_share_nothing_and_say_so(grid):
    d = grid["dir"]
    test = _write(d / "test-float.tsv", [(f"{u}.0", i, r) for u, i, r in grid["test"]])
    with pytest.raises(DataError) as err:
        Split.from_files(grid["train_file"], test)
    msg = str(err.value)
    assert msg.startswith(f"{test} (test): none of its 10 users is in {grid['train_file']} (train), which has 10 users: "
                          "e.g. user '1.0' in test and '1' in train; the parts of a split must share users.")
    assert "The ids look like the same numbers written differently ('1.0' and '1', 10 such number(s)): write every " \
           "id the same way in all files." in msg


def test_no_shared_item_is_an_error_with_both_counts_and_examples(grid):
    d = grid["dir"]
    test = _write(d / "test-x.tsv", [(u, f"x{i}", r) for u, i, r in grid["test"]])
    with pytest.raises(DataError) as err:
        Split.from_files(grid["train_file"], test)
    msg = str(err.value)
    assert msg == (f"{test} (test): none of its 11 items is in {grid['train_file']} (train), which has 12 items: "
                   "e.g. item 'x1' in test and '1' in train; the parts of a split must share items.")
    valid = _write(d / "valid.tsv", [(u + 100, i, r) for u, i, r in grid["test"][:4]])
    with pytest.raises(DataError, match=r"valid\.tsv \(valid\): none of its 2 users is in .*train\.tsv \(train\), "
                                        r"which has 10 users: e\.g\. user 101 in valid and 1 in train"):
        Split.from_files(grid["train_file"], grid["test_file"], valid)


def test_partial_overlap_is_counted(grid):
    d = grid["dir"]
    test = _write(d / "test-new.tsv", grid["test"] + [(11, 1, 3), (11, 13, 4), (12, 14, 2)])
    split = Split.from_files(grid["train_file"], test)
    assert split.report["unseen"] == {"test": {"users_unseen": 2, "users": 12, "items_unseen": 2, "items": 13}}
    same = Split.from_files(grid["train_file"], grid["test_file"])
    assert same.report["unseen"] == {"test": {"users_unseen": 0, "users": 10, "items_unseen": 0, "items": 11}}


def test_from_frames_checks_dataframes_too(grid):
    frames = {"train": pd.DataFrame(grid["train"], columns=["user", "item", "rating"]),
              "test": pd.DataFrame([(u + 50, i, r) for u, i, r in grid["test"]], columns=["user", "item", "rating"])}
    with pytest.raises(DataError, match=r"^test \(test\): none of its 10 users is in train \(train\)"):
        Split.from_frames(frames)


# ------------------------------------------------------------------------------------------ repeated pairs
def test_a_test_rating_repeating_a_training_pair_names_the_first_line(grid):
    d = grid["dir"]
    # file order differs from sorted order: the first repeat in the file is user 7's, on line 4
    rows = grid["test"][:2] + [(7, 1, 5)] + grid["test"][2:] + [(2, 5, 1)]
    test = _write(d / "test-rep.tsv", rows)
    with pytest.raises(DataError) as err:
        Split.from_files(grid["train_file"], test)
    train_line = 2 + grid["train"].index((7, 1, 1 + 8 % 5))
    assert str(err.value) == (
        f"{test}: line 4: user 7 on item 1 is also in {grid['train_file']} (line {train_line}); 2 (user, item) "
        "pair(s) of test repeat train: every (user, item) pair belongs to one part of a split only (a test rating "
        "that is also in train would be scored on what the model was given); remove the repeated lines from one of "
        "the files")


def test_validation_given_and_negatives_repeats(grid):
    d, train, test = grid["dir"], grid["train_file"], grid["test_file"]
    valid = _write(d / "valid.tsv", [(1, 13, 2), (1, 2, 4)])                   # (1, 2) is a test pair
    with pytest.raises(DataError, match=r"test\.tsv: line 3: user 1 on item 2 is also in .*valid\.tsv \(line 3\); 1 "
                                        r"\(user, item\) pair\(s\) of test repeat valid"):
        Split.from_files(train, test, valid)
    valid = _write(d / "valid2.tsv", [(1, 3, 2)])                               # (1, 3) is a training pair
    with pytest.raises(DataError, match=r"valid2\.tsv: line 2: user 1 on item 3 is also in .*train\.tsv"):
        Split.from_files(train, test, valid)
    negatives = _write(d / "negatives.tsv", [(2, 12, 0), (2, 1, 0)])         # (2, 1) is rated in train
    with pytest.raises(DataError) as err:
        Split.from_files(train, test, negatives=negatives)
    assert "negatives.tsv: line 3: user 2 on item 1 is also in" in str(err.value)
    assert "a negative is an item the user has not rated, so it cannot also be a rating in train" in str(err.value)
    negatives = _write(d / "negatives2.tsv", [(1, 1, 0)])                       # (1, 1) is a test pair
    with pytest.raises(DataError, match=r"negatives2\.tsv: line 2: user 1 on item 1 is also in .*test\.tsv"):
        Split.from_files(train, test, negatives=negatives)
    ok = _write(d / "negatives3.tsv", [(2, 12, 0), (4, 12, 0)])
    assert len(Split.from_files(train, test, negatives=ok).negatives) == 2


def test_strong_generalization_files_given_users_are_known_given_must_not_repeat_test(tmp_path):
    train = _write(tmp_path / "train.tsv", [(u, i, 1 + (u + i) % 5) for u in range(1, 9) for i in range(1, 9)])
    given = _write(tmp_path / "given.tsv", [(u, i, 3) for u in (20, 21) for i in (1, 2, 3)])
    test = _write(tmp_path / "test.tsv", [(u, i, 4) for u in (20, 21) for i in (4, 5, 6)])
    split = Split.from_files(train, test, given=given)
    assert split.report["unseen"]["test"]["users_unseen"] == 0               # known from given
    with pytest.raises(DataError, match=r"test\.tsv \(test\): none of its 2 users is in .*train\.tsv \(train\)"):
        Split.from_files(train, test)                                         # without given: new users only
    rep = _write(tmp_path / "test2.tsv", [(20, 4, 4), (21, 2, 1)])
    with pytest.raises(DataError, match=r"test2\.tsv: line 3: user 21 on item 2 is also in .*given\.tsv \(line 6\)"):
        Split.from_files(train, rep, given=given)


@pytest.mark.parametrize("name,params", [
    ("cofirank-weak", {"n_train": 5}), ("lcr-weak", {"n_train": 5}), ("fixed-ratio", {"valid_ratio": 0.1}),
    ("strong", {"n_given": 5, "n_test_users": 10, "min_item_ratings": 5}),
    ("top-n", {"n_train": 5, "n_negatives": 20, "min_user_ratings": 20, "too_few_unrated": "drop"}),
    ("controversial", {"n_train": 5, "min_item_count": 3}),
])
def test_every_protocol_survives_the_checks_when_read_back(tmp_path, name, params):
    r = synthetic("low_rank", n_users=80, n_items=150, density=0.3, seed=3)
    s = protocols.make(name, r, seed=0, **params)
    assert s.report == {}                                     # made in process: nothing to check
    back = Split.read(s.write(tmp_path / name))
    for part, got in s.parts():
        assert got.equals(getattr(back, part)), part
    assert back.report["unseen"]["test"]["users_unseen"] == 0


# ------------------------------------------------------------------------------------------ CLI
def test_cli_warns_with_the_counts_and_writes_them_to_json(grid):
    d = grid["dir"]
    _write(d / "test-new.tsv", grid["test"] + [(11, 1, 3), (11, 13, 4), (12, 14, 2)])
    proc = cli("run", "poprec", "--train", "train.tsv", "--test", "test-new.tsv", "--json", "out.json", cwd=d)
    assert proc.returncode == 0, proc.stderr
    assert "warning: 2 of the 12 test users and 2 of the 13 test items have no rating in train.tsv" in proc.stderr
    res = json.loads((d / "out.json").read_text())
    assert res["n_test_users_unseen"] == 2 and res["n_test_items_unseen"] == 2
    proc = cli("run", "poprec", "--train", "train.tsv", "--test", "test.tsv", "--json", "out.json", cwd=d)
    assert proc.returncode == 0 and "warning" not in proc.stderr
    res = json.loads((d / "out.json").read_text())
    assert res["n_test_users_unseen"] == 0 and res["n_test_items_unseen"] == 0


def test_cli_refuses_disjoint_and_repeating_parts(grid):
    d = grid["dir"]
    _write(d / "test-float.tsv", [(f"{u}.0", i, r) for u, i, r in grid["test"]])
    proc = cli("run", "poprec", "--train", "train.tsv", "--test", "test-float.tsv", cwd=d)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "none of its 10 users is in train.tsv (train), which has 10 users" in proc.stderr
    assert "'1.0' and '1'" in proc.stderr
    _write(d / "test-rep.tsv", grid["test"] + [(3, 9, 1)])
    proc = cli("run", "poprec", "--train", "train.tsv", "--test", "test-rep.tsv", cwd=d)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cofiviz: error: test-rep.tsv: line 22: user 3 on item 9 is also in train.tsv (line ")
    assert "1 (user, item) pair(s) of test repeat train" in proc.stderr


def test_cli_split_then_run_for_strong_and_top_n(tmp_path):
    rng = np.random.default_rng(5)
    rows = [(u, i, int(rng.integers(1, 6))) for u in range(1, 61) for i in range(1, 41) if rng.random() < 0.7]
    _write(tmp_path / "all.tsv", rows)
    runs = {"strong": ["--set", "n_given=5", "--set", "n_test_users=10", "--set", "min_item_ratings=5"],
            "top-n": ["--set", "n_train=5", "--set", "n_negatives=5", "--set", "min_user_ratings=20"]}
    for name, sets in runs.items():
        proc = cli("split", name, "--data", "all.tsv", "--out", name, *sets, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        proc = cli("run", "poprec", "--train", f"{name}/train.tsv", "--test", f"{name}/test.tsv", "--json",
                   f"{name}.json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        res = json.loads((tmp_path / f"{name}.json").read_text())
        assert res["protocol"] == name and res["n_test_users_unseen"] == 0
        assert res["files"]["given" if name == "strong" else "negatives"] is not None
