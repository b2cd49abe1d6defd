"""The files ``benchmarks/authors_cofirank.py`` writes for, and reads from, the authors' CofiRank program.

The program itself is not part of cofiviz (it is built from its own repository), so these tests check
the formats on their own: what is written reads back to the same ratings, nothing is lost, and bad
files are errors that name the line.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from cofiviz.util.errors import DataError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
authors = importlib.import_module("authors_cofirank")


def test_ratings_written_one_line_per_user_read_back_unchanged(tmp_path):
    rng = np.random.default_rng(3)
    n_users, n_items = 7, 40
    pairs = rng.choice(n_users * n_items, size=60, replace=False)
    users, items = pairs // n_items, pairs % n_items
    ratings = rng.integers(1, 6, size=60).astype(float)
    ratings[:5] += 0.5                                   # half stars survive the text form
    rows = np.array([6, 0, 3, 1, 2, 5, 4])               # any line order the caller chooses
    path = tmp_path / "train.lsvm"
    authors.write_cofirank_lines(path, users, items, ratings, rows)

    lines = path.read_text().splitlines()
    assert len(lines) == n_users
    assert all(tok.split(":")[0] != "0" for line in lines for tok in line.split())    # 1-based item ids
    back = authors.read_cofirank_scores(path)
    for line, user in enumerate(rows):
        mine = users == user
        assert back[line] == {int(i): float(r) for i, r in zip(items[mine], ratings[mine])}
    # items within a line are in increasing id order, as the program stores them
    for line in lines:
        ids = [int(tok.split(":")[0]) for tok in line.split()]
        assert ids == sorted(ids)


def test_a_rated_user_without_a_line_is_an_error_not_a_dropped_rating(tmp_path):
    with pytest.raises(DataError, match="user index 2"):
        authors.write_cofirank_lines(tmp_path / "x.lsvm", np.array([0, 2]), np.array([1, 1]),
                                     np.array([3.0, 4.0]), rows=np.array([0, 1]))
    assert not (tmp_path / "x.lsvm").exists()


def test_scores_file_missing_entries_score_zero_and_bad_entries_name_the_line(tmp_path):
    good = tmp_path / "F.lsvm"
    good.write_text("1:0.5 3:-1.25e-33 \n\n2:7 \n")
    F = authors.read_cofirank_scores(good)
    assert F == [{0: 0.5, 2: -1.25e-33}, {}, {1: 7.0}]
    bad = tmp_path / "bad.lsvm"
    bad.write_text("1:0.5\n2:0.1 3=0.2\n")
    with pytest.raises(DataError, match=r"line 2: entry '3=0.2'"):
        authors.read_cofirank_scores(bad)
    bad.write_text("0:1.0\n")
    with pytest.raises(DataError, match="line 1: column 0"):
        authors.read_cofirank_scores(bad)


@pytest.mark.parametrize("loss,name", [("ndcg", "NDCG"), ("ordinal", "ORDINAL"), ("regression", "REGRESSION")])
def test_configuration_holds_the_papers_settings(loss, name):
    weak = dict(line.split(" ", 1)[1].rsplit(" ", 1) for line in authors.config_text(loss, "weak").splitlines())
    assert weak["cofi.loss"] == name and weak["cofibmrm.evaluation"] == "WEAK"
    assert (weak["cofi.dimW"], weak["cofi.userphase.lambda"], weak["cofi.moviephase.lambda"]) == ("100", "10", "10")
    assert (weak["loss.ndcg.trainK"], weak["loss.ndcg.c_exponent"]) == ("10", "-0.25")
    # 31 outer iterations with no early stop: the program stops once iteration > maxIterations,
    # and never before minIterations
    assert weak["cofi.minIterations"] == weak["cofi.maxIterations"] == "30"
    strong = dict(line.split(" ", 1)[1].rsplit(" ", 1) for line in authors.config_text(loss, "strong").splitlines())
    assert strong["cofibmrm.evaluation"] == "STRONG" and strong["cofi.eval.evaluateOnTestSet"] == "0"
