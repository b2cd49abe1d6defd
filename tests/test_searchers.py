"""The searchers behind ``--tune``: Optuna's TPE proposes the drawn settings, its median pruner stops drawn trials
that fall behind, and a study kept in SQLite resumes; the selection rule is the same as with random draws."""

from __future__ import annotations

import numpy as np
import pytest

from cofiviz.util.errors import ParameterError
from cofiviz.models import get_model_class
from cofiviz.search.searchers import PRUNE_MIN_TRIALS, PRUNE_WARMUP_ITERATIONS
from cofiviz.search.tuning import tune

from contract import planted

pytest.importorskip("optuna")


@pytest.fixture(scope="module")
def split():
    return planted(seed=0, n_users=80, n_items=60, per_user=30, n_test=12, rank=2)


def _gcr(**params):
    return get_model_class("gcr")(max_iter=PRUNE_WARMUP_ITERATIONS + 8, **params)


def _same(a, b) -> bool:
    """Two trials alike: same settings, scores (NaN alike), iterations and pruning."""
    return (a["params"] == b["params"] and a["iterations"] == b["iterations"]
            and a.get("pruned", 0) == b.get("pruned", 0)
            and (a["score"] == b["score"] or (np.isnan(a["score"]) and np.isnan(b["score"]))))


def test_an_optuna_search_is_seeded_prunes_laggards_and_never_chooses_a_pruned_trial(split):
    runs = [tune(_gcr(), split.train, split.test, budget=300, trials=24, seed=3, searcher="optuna", refit=False)
            for _ in range(2)]
    assert all(_same(a, b) for a, b in zip(runs[0].trials, runs[1].trials))
    out = runs[0]
    drawn = out.trials[1 + 5 + 1:]  # after the configured model, the five item-mean anchors and GCR's own anchor
    pruned = [t for t in out.trials if t.get("pruned")]
    assert pruned, "no drawn trial was pruned"
    assert all(t in drawn for t in pruned)
    assert all(np.isnan(t["score"]) and t["pruned"] >= PRUNE_WARMUP_ITERATIONS for t in pruned)
    # the first drawn trials run to their end: the pruner has no median before them
    assert not any(t.get("pruned") for t in drawn[:PRUNE_MIN_TRIALS])
    assert not out.trials[out.chosen].get("pruned")
    frame = out.frame()
    assert (frame["pruned"] > 0).sum() == len(pruned)


def test_a_study_stored_in_sqlite_resumes_with_its_trials_and_adds_new_ones(split, tmp_path):
    db = tmp_path / "search.db"
    first = tune(_gcr(), split.train, split.test, budget=300, trials=12, seed=1, searcher="optuna", storage=db,
                 refit=False)
    again = tune(_gcr(), split.train, split.test, budget=300, trials=16, seed=1, searcher="optuna", storage=db,
                 refit=False)
    assert len(again.trials) == 16 and again.resumed == 12 and first.resumed == 0
    assert all(_same(a, b) for a, b in zip(first.trials, again.trials[:12]))
    new = {repr(t["params"]) for t in again.trials[12:]}
    assert not new & {repr(t["params"]) for t in first.trials}, "a resumed search tried a setting again"
    # the rule sees the stored trials' per-user values: the item-mean check is the same where nothing new won
    assert again.check["item_mean_trial"] == first.check["item_mean_trial"]
    if again.chosen < 12:
        assert again.chosen == first.chosen


def test_a_stored_study_of_another_setting_or_split_is_refused_by_name(split, tmp_path):
    db = tmp_path / "search.db"
    tune(_gcr(), split.train, split.test, budget=300, trials=8, seed=1, searcher="optuna", storage=db, refit=False)
    with pytest.raises(ParameterError, match="differs in settings"):
        tune(_gcr(reg=0.5), split.train, split.test, budget=300, trials=9, seed=1, searcher="optuna", storage=db)
    other = planted(seed=1, n_users=80, n_items=60, per_user=30, n_test=12, rank=2)
    with pytest.raises(ParameterError, match="differs in ratings"):
        tune(_gcr(), other.train, other.test, budget=300, trials=9, seed=1, searcher="optuna", storage=db)


@pytest.mark.parametrize("kwargs, named", [
    ({"searcher": "grid"}, "searcher must be one of random, optuna, got 'grid'"),
    ({"storage": "s.db"}, 'give it with searcher="optuna"'),
    ({"searcher": "optuna", "storage": "s.json"}, "storage must be an SQLite file"),
])
def test_a_bad_searcher_or_storage_is_refused_by_name(split, kwargs, named):
    with pytest.raises(ParameterError, match=named.replace("(", r"\(").replace('"', '.')):
        tune(_gcr(), split.train, split.test, budget=10, trials=2, **kwargs)
