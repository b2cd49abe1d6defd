"""The epoch loop of the model contract (cofiviz.models.base) on tiny iterative toy models: early stopping,
divergence detection, and the integrity checks of save / load."""

from __future__ import annotations

import hashlib

import numpy as np
import param
import pytest

from cofiviz.util.errors import DataError, ModelFitError, ParameterError
from cofiviz.models.base import Model
from cofiviz.models.registry import MODEL_REGISTRY, available_models

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


@pytest.mark.parametrize("spelling,canonical", [("NDCG@10", "ndcg@10"), ("Zero-One", "zero_one")])
def test_valid_metric_in_any_spelling_is_watched_under_its_canonical_name(split, spelling, canonical):
    m = Swing(max_iter=8, patience=2, valid_metric=spelling).fit(split.train, valid=split.test)
    assert m.best_iteration_ == 3 and m.w.tolist() == [1.0, 0.0]
    assert all(f"valid_{canonical}" in row for row in m.history_)


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


# ---------------------------------------------------------------------------------------------- divergence
class Grow(Model):
    """A toy fit whose one learned array is multiplied by ``factor`` per iteration, with a scripted loss."""

    register = False
    divergence_hint = (("step", "lower"),)
    step = param.Number(default=1.0, doc="The toy's step size.")
    factor = param.Number(default=10.0)
    start = param.Number(default=1.0)
    losses = param.List(default=[])

    def _setup(self, train, rng):
        self.w = np.full(7, self.start)
        self.b = np.zeros(3)  # an offset that starts at zero

    def _step(self, iteration):
        self.w = self.w * self.factor
        return self.losses[iteration - 1] if iteration <= len(self.losses) else 1.0

    def _scores(self, users, items):
        return np.zeros(len(users))

    def _state(self):
        return {"w": self.w, "b": self.b, "ids": np.arange(3)}

    def _set_state(self, state):
        self.w, self.b = state["w"], state["b"]


def test_factors_exploding_past_the_bound_raise(split):
    # planted ratings are on 1..5: the bound is 1e3 x max(start RMS 1, 1, scale width 4) = 4000
    with pytest.raises(ModelFitError) as err:
        Grow(factor=10.0, max_iter=10).fit(split.train)
    assert str(err.value) == ("Grow: the factors exploded (w: RMS 1e+04 after iteration 4, 1 at the start); "
                              "lower step (now 1.0)")
    m = Grow(factor=3999.0 ** 0.25, max_iter=4).fit(split.train)  # reaches 3999: within the bound
    assert m.is_fitted and m.w[0] == pytest.approx(3999.0)


def test_the_bound_scales_with_the_start_and_the_rating_scale(split):
    # the same RMS, 1e4, is an explosion from a start of 1 and within the bound from a start of 100
    with pytest.raises(ModelFitError, match=r"RMS 1e\+04 after iteration 2, 1 at the start"):
        Grow(start=1.0, factor=100.0, max_iter=2).fit(split.train)
    assert Grow(start=100.0, factor=10.0, max_iter=2).fit(split.train).is_fitted
    with pytest.raises(ModelFitError, match=r"RMS 1e\+06 after iteration 4, 1e\+02 at the start"):
        Grow(start=100.0, factor=10.0, max_iter=6).fit(split.train)
    # a tiny start is measured against the scale's width: 1e-3 growing to 1 is an ordinary fit
    assert Grow(start=1e-3, factor=10.0, max_iter=3).fit(split.train).is_fitted


def test_finite_factors_whose_squares_overflow_still_explode(split):
    with pytest.raises(ModelFitError, match=r"w: RMS 1e\+200 after iteration 1"):
        Grow(start=1e100, factor=1e100, max_iter=3).fit(split.train)


def test_an_exploding_loss_raises(split):
    # the loss may rise by up to 1e3 x max(|best|, 1) above its best
    m = Grow(factor=1.0, losses=[5.0, 2.0, 2001.0, 0.5], max_iter=4).fit(split.train)
    assert [row["loss"] for row in m.history_] == [5.0, 2.0, 2001.0, 0.5]
    with pytest.raises(ModelFitError) as err:
        Grow(factor=1.0, losses=[5.0, 2.0, 2003.0], max_iter=4).fit(split.train)
    assert str(err.value) == ("Grow: the training loss exploded (from its best 2 to 2e+03 after iteration 3); "
                              "lower step (now 1.0)")
    # below 1 the floor of 1 applies; negative losses (GAPfm's) are measured by their size
    assert Grow(factor=1.0, losses=[1e-6, 999.0], max_iter=2).fit(split.train).is_fitted
    with pytest.raises(ModelFitError, match="exploded"):
        Grow(factor=1.0, losses=[-50.0, 5e4 + 1], max_iter=2).fit(split.train)


class GivesUp(Grow):
    register = False

    def _step(self, iteration):
        if iteration == 2:
            raise ModelFitError("the solver met a non-finite subgradient")
        return super()._step(iteration)


def test_a_model_fit_error_from_inside_a_step_names_the_parameters(split):
    m = GivesUp(factor=1.0, step=0.5, max_iter=3)
    with pytest.raises(ModelFitError) as err:
        m.fit(split.train)
    assert str(err.value) == ("GivesUp: the solver met a non-finite subgradient (in iteration 2); "
                              "lower step (now 0.5)")
    assert not m.is_fitted


def test_every_registered_model_names_parameters_to_change():
    for name in available_models():
        klass = MODEL_REGISTRY[name]
        hint = klass.divergence_hint
        assert all(p in klass.param_names() and d in ("lower", "raise") for p, d in hint), (name, hint)
        assert bool(hint) == klass.iterative, name
    from cofiviz.models import ItemMean, RegSVD

    assert RegSVD(solver="als").divergence_advice() == "raise reg (now 0.05)"
    assert RegSVD().divergence_advice() == "lower lr (now 0.01) or raise reg (now 0.05)"
    assert "closed-form" in ItemMean().divergence_advice()


# ---------------------------------------------------------------------------------------------- save / load
@pytest.fixture(scope="module")
def saved_itemmean(split):
    from cofiviz.models import ItemMean

    return ItemMean(damping=4.0).fit(split.train)


def _save(model, tmp_path):
    npz = model.save(tmp_path / "m")
    return npz, npz.with_suffix(".json")


def test_a_truncated_npz_is_named(saved_itemmean, tmp_path):
    npz, _ = _save(saved_itemmean, tmp_path)
    data = npz.read_bytes()
    npz.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"m\.npz is damaged or truncated \(checksum mismatch with .*m\.json; "
                                        rf"{len(data) // 2:,} bytes, the save wrote {len(data):,}\)"):
        Model.load(npz)


def test_random_bytes_in_the_npz_are_named(saved_itemmean, tmp_path):
    npz, _ = _save(saved_itemmean, tmp_path)
    size = npz.stat().st_size
    npz.write_bytes(np.random.default_rng(0).bytes(size))
    with pytest.raises(DataError, match=r"m\.npz is damaged or truncated .*its bytes changed"):
        Model.load(npz)
    data = bytearray(_save(saved_itemmean, tmp_path)[0].read_bytes())
    data[len(data) // 3] ^= 0xFF  # one flipped byte inside an array
    npz.write_bytes(bytes(data))
    with pytest.raises(DataError, match="damaged or truncated"):
        Model.load(npz)


@pytest.mark.parametrize("content", [b"not a zip at all", b"", "npy"])
def test_an_unreadable_npz_with_a_matching_checksum_is_named(saved_itemmean, tmp_path, content):
    import io

    from contract import edit_json

    npz, _ = _save(saved_itemmean, tmp_path)
    if content == "npy":  # one array saved with np.save under the .npz name
        buf = io.BytesIO()
        np.save(buf, np.arange(3))
        content = buf.getvalue()
    npz.write_bytes(content)
    edit_json(npz, checksum={"sha256": hashlib.sha256(content).hexdigest(), "bytes": len(content)})
    with pytest.raises(DataError, match=r"m\.npz is not a readable \.npz archive"):
        Model.load(npz)


@pytest.mark.parametrize("text, what", [("{not json", "not JSON"), ("[1, 2]", "a JSON list, expected an object"),
                                        ("\udcff", "not JSON")])
def test_a_json_that_is_not_a_model_description_is_named(saved_itemmean, tmp_path, text, what):
    npz, js = _save(saved_itemmean, tmp_path)
    js.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(DataError, match=rf"m\.json: not a model description written by Model.save \({what}"):
        Model.load(npz)


@pytest.mark.parametrize("key", ["format", "model", "class", "params", "scale", "checksum", "arrays"])
def test_a_json_missing_a_key_is_named(saved_itemmean, tmp_path, key):
    from contract import edit_json

    npz, _ = _save(saved_itemmean, tmp_path)
    edit_json(npz, **{key: None})
    with pytest.raises(DataError, match=rf"m\.json: the model description lacks the key.*'{key}'"):
        Model.load(npz)


@pytest.mark.parametrize("change, message", [
    ({"model": "nosuch"}, "unknown model 'nosuch'"),
    ({"params": [1]}, "'params' must be a JSON dict"),
    ({"scale": [1]}, r"'scale' must be \[lowest, highest\]"),
    ({"checksum": "abc"}, "'checksum' must be an object"),
    ({"params": {"damping": -1.0}}, "its parameters do not fit a ItemMean: .*damping"),
    ({"params": {"rank": 3}}, "its parameters do not fit a ItemMean: .*rank"),
])
def test_a_json_with_bad_values_is_named(saved_itemmean, tmp_path, change, message):
    from contract import edit_json

    npz, _ = _save(saved_itemmean, tmp_path)
    edit_json(npz, **change)
    with pytest.raises(DataError, match=message):
        Model.load(npz)


def test_other_formats_are_refused(saved_itemmean, tmp_path):
    from contract import edit_json

    npz, _ = _save(saved_itemmean, tmp_path)
    edit_json(npz, format=1)
    with pytest.raises(DataError, match="format-1 save, written before saves carried a checksum.*save it"):
        Model.load(npz)
    edit_json(npz, format=3)
    with pytest.raises(DataError, match="format 3 is not one this cofiviz reads"):
        Model.load(npz)


def test_an_array_that_differs_from_its_listing_is_named(saved_itemmean, tmp_path):
    from contract import rewrite_npz

    npz, _ = _save(saved_itemmean, tmp_path)
    rewrite_npz(npz, replace={"state__item_scores": saved_itemmean.item_scores_.astype(np.float32)}, relist=False)
    with pytest.raises(DataError, match=r"array 'state__item_scores' is <f4 .* records <f8"):
        Model.load(npz)


def test_a_training_table_that_is_not_valid_is_named(saved_itemmean, tmp_path):
    from contract import rewrite_npz

    npz, _ = _save(saved_itemmean, tmp_path)
    items = saved_itemmean.train_.items.copy()
    items[0] = 10_000
    rewrite_npz(npz, replace={"train__items": items})
    with pytest.raises(DataError, match=r"m\.npz: the training table is not valid: item index out of range"):
        Model.load(npz)


def test_an_interrupted_save_leaves_a_pair_that_load_refuses(saved_itemmean, split, tmp_path):
    from cofiviz.models import ItemMean

    npz, js = _save(saved_itemmean, tmp_path)
    old_json = js.read_text()
    ItemMean(damping=1.0).fit(split.test).save(tmp_path / "m")  # the new .npz, then its .json
    js.write_text(old_json)  # as if the save had stopped between the two renames
    with pytest.raises(DataError, match="are not from the same save"):
        Model.load(npz)
