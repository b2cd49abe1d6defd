"""``benchmarks/gp_evidence_validation.py``: the comparison that chose each Gaussian-process model's default form runs
on the validation users (never ``cofirank-table3``'s test users) and summarises learned against fixed."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np

from cofiviz.datasets import movielens_100k
from cofiviz.protocols import make

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
bench = importlib.import_module("gp_evidence_validation")


def test_validation_users_are_not_the_reproductions_test_users():
    r = movielens_100k()
    outer = make("strong", r, n_given=10, seed=0)
    inner = bench.validation_split(r, 10, 1)
    def ids(part):     # the original user ids (each split has its own index space)
        return np.unique(part.user_ids[part.users])

    tested = ids(outer.test)
    assert not np.isin(ids(inner.test), tested).any() and not np.isin(ids(inner.train), tested).any()
    assert len(ids(inner.test)) == 100 and np.isin(ids(inner.test), ids(outer.train)).all()


def test_both_forms_of_each_model_are_fitted_and_summarised():
    lines = []
    rows = bench.run(models=["gpr", "gpor"], ns=[10], seeds=[0], evidence_iter=2, log=lines.append)
    assert [(r["model"], r["form"]) for r in rows] == [("gpr", "fixed"), ("gpr", "evidence"), ("gpor", "fixed"),
                                                       ("gpor", "evidence")]
    assert all(0.0 < r["ndcg"] <= 1.0 for r in rows) and len(lines) == 4
    s = bench.summary(rows)
    for name in ("gpr", "gpor"):
        fixed, learned = (r["ndcg"] for r in rows if r["model"] == name)
        assert s[name] == {"mean_diff": learned - fixed, "ahead": int(learned > fixed), "splits": 1}
