"""The monitor's sentences about a run (cofiviz.background.run_story): how a fit ended, checked against the
epoch loop's own account (``stopped_reason_``), and what the curves show, on frames built by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cofiviz import protocols
from cofiviz.background.run_story import OVERFIT_AFTER, curve_notes, ending, list_sizes, summarize
from cofiviz.background.training_process import COLUMNS
from cofiviz.models import make_model

from contract import planted
from test_models_base import Swing


class Settles(Swing):
    """Swing whose convergence test ends the fit after iteration 4."""

    register = False

    def _converged(self, iteration):
        return iteration >= 4


@pytest.fixture(scope="module")
def split():
    return planted(seed=0)


def _fit(model, split, stop_at=None):
    asked = []

    def stop(info):
        if stop_at is not None and info.iteration >= stop_at:
            asked.append(info.iteration)
            return True
        return False

    model.fit(split.train, valid=split.test, callbacks=[stop])
    return summarize(model, stopped=bool(asked))


@pytest.mark.parametrize("make, stop_at, how, n, best, restored, words", [
    (lambda: Swing(max_iter=20, patience=2), None, "early", 5, 3, True,
     ["Stopped early after iteration 5", "for 2 iterations (the patience)", "put back to iteration 3 (the dashed line)"]),
    (lambda: Swing(max_iter=5, patience=10), None, "max_iter", 5, 3, True,
     ["Ran the 5 iterations Max iter allows", "put back to iteration 3 (the dashed line)"]),
    (lambda: Swing(max_iter=5), None, "max_iter", 5, None, False, ["Ran the 5 iterations Max iter allows"]),
    (lambda: Swing(max_iter=20, patience=10), 4, "stopped", 4, 3, False,
     ["Stopped after iteration 4, as asked", "keeps that iteration"]),
    (lambda: Settles(max_iter=20, patience=10), None, "converged", 4, 3, True,
     ["Converged after iteration 4", "put back to iteration 3 (the dashed line)"]),
])
def test_how_a_fit_ended_agrees_with_the_epoch_loop(split, make, stop_at, how, n, best, restored, words):
    model = make()
    s = _fit(model, split, stop_at)
    assert (s["how"], s["iterations"], s["best_iteration"], s["restored"]) == (how, n, best, restored)
    # the epoch loop's own account says the same
    reason = model.stopped_reason_
    assert ("restored the best iterate" in reason) == restored
    assert {"early": "early stop", "max_iter": "reached max_iter", "stopped": "stopped by a callback",
            "converged": "converged after"}[how] in reason
    text = ending(s)
    for w in words:
        assert w in text, text
    if not restored:
        assert "put back" not in text


def test_a_model_that_does_not_iterate_is_fitted_in_one_pass(split):
    s = _fit(make_model("poprec"), split)
    assert s["how"] == "one_pass" and not s["restored"]
    assert ending(s) == "Fitted in one pass: this model does not iterate."


def test_a_run_ended_outside_the_fit_is_told_in_the_worker_s_words():
    assert ending({"how": "killed", "text": "The session closed."}) == "The session closed."


def test_list_sizes_are_the_mean_lengths_of_the_users_lists():
    ratings = planted(seed=1).train
    split = protocols.make("weak", ratings, n_train=10, n_valid=5, min_test=3)
    sizes = list_sizes(split)
    for part, got in (("valid", sizes["valid"]), ("test", sizes["test"])):
        r = getattr(split, part)
        assert got == pd.Series(r.users).value_counts().mean()
    assert sizes["valid"] == 5


def _frame(train, valid, test, unscored=()):
    n = len(train)
    f = pd.DataFrame({c: np.full(n, np.nan) for c in COLUMNS})
    f["iteration"] = np.arange(1, n + 1)
    f["train_ndcg@10"], f["valid_ndcg@10"], f["test_ndcg@10"] = train, valid, test
    for it in unscored:                      # throttled iterations carry no metrics
        f.loc[f["iteration"] == it, ["train_ndcg@10", "valid_ndcg@10", "test_ndcg@10"]] = np.nan
    return f


def test_overfitting_is_named_with_its_numbers_once_validation_falls_while_training_rises():
    k = np.arange(20)
    train = 0.70 + 0.01 * k                                       # always rising
    valid = 0.90 + 0.001 * np.minimum(k, 9) - 0.002 * np.maximum(k - 9, 0)   # best at iteration 10
    test = 0.72 + 0.001 * np.minimum(k, 9) - 0.001 * np.maximum(k - 9, 0)
    notes = curve_notes(_frame(train, valid, test, unscored=[13]), None)
    assert len(notes) == 1 and notes[0].startswith("Overfitting: since iteration 10")
    assert f"from {train[9]:.4f} to {train[19]:.4f}" in notes[0]
    assert f"from {valid[9]:.4f} to {valid[19]:.4f}" in notes[0]
    assert f"(test: {test[9]:.4f} to {test[19]:.4f})" in notes[0]
    # the fit's own best iteration is the turning point; unscored, the nearest scored iteration gives the numbers
    at_best = curve_notes(_frame(train, valid, test, unscored=[13]), None, best=12)
    assert at_best[0].startswith("Overfitting: since iteration 12") and f"from {valid[11]:.4f}" in at_best[0]
    near = curve_notes(_frame(train, valid, test, unscored=[10]), None, best=10)
    assert near[0].startswith("Overfitting: since about iteration 10") and f"from {valid[8]:.4f}" in near[0]


@pytest.mark.parametrize("case", ["valid still rising", "best too recent", "training falls too"])
def test_no_overfitting_is_claimed_without_its_signs(case):
    k = np.arange(20)
    train = 0.70 + 0.01 * k
    valid = 0.90 + 0.001 * k
    if case == "best too recent":
        valid = 0.90 + 0.001 * np.minimum(k, 20 - OVERFIT_AFTER) - 0.001 * np.maximum(k - (20 - OVERFIT_AFTER), 0)
    if case == "training falls too":
        valid = 0.90 + 0.001 * np.minimum(k, 9) - 0.002 * np.maximum(k - 9, 0)
        train = 0.90 - 0.01 * k
    assert not any(n.startswith("Overfitting") for n in curve_notes(_frame(train, valid, valid), None))


def test_validation_and_test_heights_are_explained_by_the_lengths_of_their_lists():
    f = _frame([0.7], [0.9], [0.7])
    notes = curve_notes(f, {"valid": 5.0, "test": 115.2})
    assert len(notes) == 1
    assert "each user's 5 validation ratings, test the user's 115 test ratings" in notes[0]
    assert "shorter list is higher" in notes[0]
    assert curve_notes(f, None) == [] and curve_notes(f.iloc[:0], {"valid": 5.0, "test": 115.2}) == []
