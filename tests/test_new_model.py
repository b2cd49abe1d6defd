"""A model is added in one place: a class defined here alone (with its module's ``warmup()``) is found by the
command line, the monitor, the warm-up plan, the leaderboards, the recommendations pool and the contract tests,
and what it declares of its cost reaches each of them."""

from __future__ import annotations

import numpy as np
import param
import pytest
from contract import ModelContract, planted

from cofiviz.models import MODEL_REGISTRY, available_models
from cofiviz.models.base import Model
from cofiviz.models.scale import Scale
from cofiviz.search.space import LogUniform


def _item_bias_class(heavy: bool = False) -> type[Model]:
    """An iterative model of item biases learnt by gradient descent on the squared error, defined (and so
    registered) when called."""

    class ToyItemBias(Model):
        """Item biases ``b_i`` around the global mean, by gradient descent on ``Σ (r − μ − b_i)² + reg·Σ b_i²``."""

        divergence_hint = (("lr", "lower"),)
        search_space = {"reg": LogUniform(0.1, 10.0)}
        scale = Scale("ratings", heavy=heavy, why="a toy declared heavy" if heavy else "")

        lr = param.Number(default=0.05, bounds=(0.0, None), inclusive_bounds=(False, True), doc="Step size.")
        reg = param.Number(default=1.0, bounds=(0.0, None), doc="Ridge weight on the biases.")
        max_iter = param.Integer(default=20, bounds=(1, 100_000), doc="Iterations at most.")

        def _setup(self, train, rng):
            self._train = train
            self.mu_ = float(train.global_mean)
            self.bias_ = rng.normal(scale=1e-3, size=train.n_items)

        def _step(self, iteration):
            t = self._train
            resid = t.ratings - self.mu_ - self.bias_[t.items]
            grad = -2 * np.bincount(t.items, weights=resid, minlength=t.n_items) + 2 * self.reg * self.bias_
            self.bias_ = self.bias_ - self.lr * grad / max(1.0, len(t) / t.n_items)
            return float((resid ** 2).sum() + self.reg * (self.bias_ ** 2).sum())

        def _scores(self, users, items):
            return self.mu_ + self.bias_[items]

        def _state(self):
            return {"bias": self.bias_, "mu": np.array([self.mu_])}

        def _set_state(self, state):
            self.bias_ = np.asarray(state["bias"], dtype=np.float64)
            self.mu_ = float(np.asarray(state["mu"])[0])

        def _state_spec(self, n_users, n_items):
            return {"bias": (n_items,), "mu": (1,)}

    return ToyItemBias


def warmup() -> None:
    """The warm-up this module offers: a 2-iteration fit of its model on a tiny table."""
    MODEL_REGISTRY["toyitembias"](max_iter=2).fit(planted(n_users=5, n_items=8, per_user=4, n_test=1).train)


@pytest.fixture(scope="module")
def toy():
    """The toy model, registered while this module's tests run, then taken out of the registry again."""
    klass = _item_bias_class()
    yield klass
    assert MODEL_REGISTRY.pop("toyitembias") is klass


def test_defining_the_class_registers_it_under_its_name(toy):
    assert "toyitembias" in available_models() and MODEL_REGISTRY["toyitembias"] is toy


def test_the_command_line_lists_it_with_its_parameters(toy, capsys):
    from cofiviz.cli import main

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "toyitembias: Item biases" in out and "reg" in out.split("toyitembias:")[1]


def test_the_monitor_offers_it(toy):
    from cofiviz.dashboards.monitor import TrainingMonitor

    assert "toyitembias" in TrainingMonitor().param.model.objects


def test_the_warm_up_plan_runs_its_modules_warmup(toy):
    from cofiviz.engine import warmup as W
    targets = dict(W._targets())
    assert targets[__name__] is warmup
    jobs = W._plan(list(targets))
    assert [j for j in jobs if __name__ in j.modules]


def test_the_leaderboards_fit_it_at_its_settings_and_a_heavy_one_at_its_defaults_only(toy):
    from cofiviz.reproductions.leaderboard import HEAVY_MAX_ITER, MAX_ITER, N_SETTINGS, leaderboard_methods

    found = {m.model: m for m in leaderboard_methods()}
    assert found["toyitembias"].label == "ToyItemBias" and len(found["toyitembias"].grid) == N_SETTINGS
    assert found["toyitembias"].fixed["max_iter"] == min(MAX_ITER, 20)
    MODEL_REGISTRY.pop("toyitembias")
    heavy = _item_bias_class(heavy=True)
    try:
        found = {m.model: m for m in leaderboard_methods()}
        assert len(found["toyitembias"].grid) == 1 and found["toyitembias"].fixed["max_iter"] == HEAVY_MAX_ITER
    finally:
        MODEL_REGISTRY["toyitembias"] = toy
    assert heavy.scale.heavy and not toy.scale.heavy


def test_the_recommendations_pool_trains_it_and_its_heavy_form_is_folded_in_on_movielens_1m(toy, tmp_path):
    from cofiviz.background.recommenders import ML1M, RecommenderPool, recipe

    pool = RecommenderPool(tmp_path, quick=True)
    assert "toyitembias" in pool.names
    assert recipe("toyitembias", ML1M).search
    MODEL_REGISTRY.pop("toyitembias")
    _item_bias_class(heavy=True)
    try:
        how = recipe("toyitembias", ML1M)
        assert not how.search and how.fit_users and "a toy declared heavy" in how.note
    finally:
        MODEL_REGISTRY["toyitembias"] = toy


def test_a_scale_is_checked_when_the_class_is_written():
    with pytest.raises(ValueError, match="Scale.unit must be one of"):
        Scale("users")
    with pytest.raises(ValueError, match="says why"):
        Scale(heavy=True)
    with pytest.raises(ValueError, match="per_user must be a positive integer"):
        Scale(per_user=0, why="x")


class TestToyItemBiasContract(ModelContract):
    """The shared contract, run on the toy model."""

    @pytest.fixture(scope="class", autouse=True)
    def _klass(self, request, toy):
        request.cls.klass = toy

    def make_model(self, **params):
        return self.klass(**params)
