"""A protocol and a kind of search range are each added in one place: a protocol function registered here alone is
found by ``make``, the command line's ``split`` and the training monitor (with the settings it is offered at); a
kind of range defined here alone is drawn, counted and checked by the tuner, the leaderboards' settings and the
Optuna searcher."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import cofiviz.protocols as P
from cofiviz.cli import main
from cofiviz.dashboards.monitor import TrainingMonitor
from cofiviz.models import get_model_class
from cofiviz.search import space as S
from cofiviz.search.searchers import _distributions
from cofiviz.search.tuning import tune
from cofiviz.protocols.weak import weak_generalization
from cofiviz.reproductions.leaderboard import settings

from contract import planted

NAME = "toy-first-n"


@pytest.fixture
def toy_protocol():
    """Per user, the first ``n_first`` ratings in the table's order for training, a validation part, the rest for
    testing (the weak protocol's split, here only a name and a reference of its own)."""
    @P.registry.register(NAME, offered=P.Offered("n_first", {"n_valid": 2, "min_test": 2}),
                         reference="a protocol written by a test")
    def toy(ratings, n_first: int = 3, n_valid: int = 0, min_test: int = 1, seed: int = 0):
        return weak_generalization(ratings, n_train=n_first, n_valid=n_valid, min_test=min_test, seed=seed,
                                   _name=NAME)

    yield toy
    P.PROTOCOLS.pop(NAME)
    P.OFFERED.pop(NAME)
    P.REFERENCES.pop(NAME)


def test_a_registered_protocol_is_made_by_name_and_checks_its_parameters(toy_protocol):
    r = planted(seed=1).train
    split = P.make(NAME, r, n_first=3, n_valid=1, seed=2)
    assert split.train.n_users > 0 and np.all(np.diff(split.train.indptr)[np.diff(split.train.indptr) > 0] == 3)
    with pytest.raises(Exception, match="n_first"):
        P.make(NAME, r, n_train=3)


def test_the_command_line_splits_with_it(toy_protocol, tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = [(u, i, int(rng.integers(1, 6))) for u in range(6) for i in rng.choice(30, 10, replace=False)]
    path = tmp_path / "ratings.csv"
    pd.DataFrame(rows, columns=["user", "item", "rating"]).to_csv(path, index=False)
    assert main(["split", NAME, "--data", str(path), "--set", "n_first=4", "--set", "n_valid=1",
                 "--out", str(tmp_path / "parts")]) == 0
    assert f"wrote the {NAME} split" in capsys.readouterr().out
    train = pd.read_csv(tmp_path / "parts" / "train.tsv", sep="\t")
    assert len(train) == 6 * 4 and (train.groupby(train.columns[0]).size() == 4).all()


def test_the_monitor_offers_it_with_its_settings(toy_protocol):
    m = TrainingMonitor(protocol=NAME, n=4)
    assert NAME in m.param.protocol.objects
    job = m._job()
    assert job.protocol == NAME and job.protocol_params == {"n_first": 4, "n_valid": 2, "min_test": 2}


class PowerOfTwo(S.Dimension):
    """An integer ``2^k`` for ``k`` in ``low, ..., high``: a kind of range the library does not have."""

    def __init__(self, low: int, high: int):
        self.low, self.high = low, high

    def sample(self, rng):
        return 2 ** int(rng.integers(self.low, self.high + 1))

    def count(self):
        return self.high - self.low + 1

    def holds(self, value):
        return isinstance(value, (int, np.integer)) and value > 0 and math.log2(value) in range(self.low,
                                                                                              self.high + 1)

    def optuna(self):
        import optuna.distributions as od
        return od.CategoricalDistribution(tuple(2 ** k for k in range(self.low, self.high + 1)))

    def __str__(self):
        return f"a power of two, 2^{self.low} to 2^{self.high}"


def test_a_new_kind_of_range_is_searched_by_every_searcher(monkeypatch):
    klass = get_model_class("gcr")
    space = {"rank": PowerOfTwo(1, 2)}
    assert S.size(space) == 2 and S.contains(space, {"rank": 4}) and not S.contains(space, {"rank": 3})
    assert "power of two" in S.describe(space)
    assert set(_distributions(space)["rank"].choices) == {2, 4}
    monkeypatch.setattr(klass, "search_space", space)
    # the leaderboards' settings: the defaults, then distinct draws of the space
    drawn = settings("gcr", 3)
    assert all(d["rank"] in (2, 4) for d in drawn[1:])
    # the tuner ends once both values are tried (a finite space), each once, after the configured rank 8 (outside
    # the space) and the anchors
    split = planted(seed=2)
    t = tune(klass(max_iter=2, rank=8), split.train, split.valid, budget=600, seed=0, refit=False)
    drawn = [tr["params"]["rank"] for tr in t.trials if tr["params"]["rank"] not in (0, 8)]
    assert sorted(drawn) == [2, 4]
