"""The epoch loop of the model contract (cofiviz.models.base) on tiny iterative toy models."""

from __future__ import annotations

import numpy as np
import pytest

from cofiviz.errors import DataError, ModelFitError, ParameterError
from cofiviz.models.base import MODEL_REGISTRY, Model, available_models

from contract import planted


class Swing(Model):
    """Item means blurred by noise that shrinks until iteration ``good``, then reversed."""

    register = False

    def _setup(self, train, rng):
        counts = np.bincount(train.items, minlength=train.n_items)
        sums = np.bincount(train.items, weights=train.ratings, minlength=train.n_items)
        self._means = (sums + 5 * train.global_mean) / (counts + 5)
        self._noise = np.random.default_rng([self.seed, 77]).normal(size=train.n_items)
        self.good = 3
        self.w = np.zeros(2)

    def _step(self, iteration):
        if iteration <= self.good:  # sign, noise level
            self.w = np.array([1.0, 2.0 * (self.good - iteration)])
        else:
            self.w = np.array([-1.0, float(iteration)])
        return 1.0 / iteration

    def _scores(self, users, items):
        return self.w[0] * self._means[items] + self.w[1] * self._noise[items]

    def _state(self):
        return {"w": self.w}

    def _set_state(self, state):
        self.w = np.array(state["w"], dtype=float)


class NoLoss(Swing):
    register = False
    has_loss = False

    def _step(self, iteration):
        super()._step(iteration)
        return float("nan")


class NaNLoss(Swing):
    register = False

    def _step(self, iteration):
        super()._step(iteration)
        return float("nan") if iteration == 2 else 1.0


@pytest.fixture(scope="module")
def split():
    return planted(seed=0)


def test_helpers_marked_register_false_stay_out_of_the_registry():
    assert "swing" not in MODEL_REGISTRY and "nanloss" not in MODEL_REGISTRY
    assert {"poprec", "itemmean"} <= set(available_models())


def test_early_stopping_restores_the_best_iterate(split):
    m = Swing(max_iter=20, patience=2).fit(split.train, valid=split.test)
    assert len(m.history_) == 5  # iterations 4 and 5 do not improve on 3
    assert m.best_iteration_ == 3
    assert m.w.tolist() == [1.0, 0.0]
    assert "early stop" in m.stopped_reason_ and "restored" in m.stopped_reason_


def test_running_out_of_iterations_also_restores_the_best(split):
    m = Swing(max_iter=5, patience=10).fit(split.train, valid=split.test)
    assert len(m.history_) == 5 and m.best_iteration_ == 3 and m.w.tolist() == [1.0, 0.0]
    assert "max_iter" in m.stopped_reason_


def test_without_patience_the_last_iterate_is_kept(split):
    m = Swing(max_iter=5).fit(split.train, valid=split.test)
    assert m.w.tolist() == [-1.0, 5.0] and m.best_iteration_ is None
    assert all("valid_ndcg@10" in row for row in m.history_)


def test_error_metrics_are_minimised(split):
    m = Swing(max_iter=8, patience=2, valid_metric="zero_one").fit(split.train, valid=split.test)
    assert m.best_iteration_ == 3 and m.w.tolist() == [1.0, 0.0]
    assert all(0 <= row["valid_zero_one"] <= 1 for row in m.history_)


def test_unknown_valid_metric_is_refused_before_training(split):
    with pytest.raises(ParameterError, match="valid"):
        Swing(valid_metric="accuracy").fit(split.train, valid=split.test)


def test_nan_loss_raises_unless_the_method_has_no_loss(split):
    with pytest.raises(ModelFitError, match="NaN after iteration 2"):
        NaNLoss(max_iter=5).fit(split.train)
    m = NoLoss(max_iter=3).fit(split.train)
    assert len(m.history_) == 3 and np.isnan(m.history_[0]["loss"])


def test_valid_from_another_index_space_is_refused(split):
    other = planted(seed=0, n_items=90)
    with pytest.raises(DataError, match="index space"):
        Swing().fit(split.train, valid=other.test)


def test_instances_are_named_by_the_registry():
    from cofiviz.models import ItemMean

    assert ItemMean().name == "itemmean" and ItemMean.model_name() == "itemmean"
    with pytest.raises(ParameterError):
        ItemMean(name="other")


def test_set_params_is_all_or_nothing():
    from cofiviz.models import ItemMean

    m = ItemMean(damping=3.0)
    with pytest.raises(ParameterError, match="seed"):
        m.set_params(damping=5.0, seed=-2)
    assert m.damping == 3.0 and m.seed == 0
    assert m.set_params(damping=5.0) is m and m.damping == 5.0
