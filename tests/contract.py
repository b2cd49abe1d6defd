"""The contract every cofiviz model passes: fit, score, recommend, save and load, errors, determinism.

Use it as a mixin::

    class TestPopRec(ModelContract):
        def make_model(self, **params):
            return PopRec(**params)

and, where the model has them, override ``bad_params`` (values that must be refused, naming the
parameter) and ``diverging_params`` (settings under which its fit diverges on the planted data).
``make_model`` receives the keywords a test needs (``seed=...``) and should merge them
over settings that keep a fit small, e.g. ``CofiRank(**{"rank": 5, "max_iter": 3, **params})``. Every test builds its data with
:func:`planted`, a small seeded ratings table whose popular items are also the good ones and whose
users share a low-rank taste, so that both popularity and collaborative models can learn it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from cofiviz import Ratings, Split
from cofiviz.util.errors import DataError, ModelFitError, ParameterError
from cofiviz.evaluation import mean_metrics
from cofiviz.models.base import IterationInfo, Model


def planted(seed: int = 0, n_users: int = 60, n_items: int = 80, per_user: int = 30, n_test: int = 10,
            rank: int = 2) -> Split:
    """Ratings with planted structure: item quality (which also drives popularity) plus rank-2 taste."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n_items)
    U = rng.normal(scale=0.7, size=(n_users, rank))
    V = rng.normal(scale=0.7, size=(n_items, rank))
    prob = np.exp(0.8 * quality)
    prob /= prob.sum()
    users, items, ratings, is_test = [], [], [], []
    for u in range(n_users):
        its = np.sort(rng.choice(n_items, size=per_user, replace=False, p=prob))
        raw = 3.0 + quality[its] + U[u] @ V[its].T + rng.normal(scale=0.4, size=per_user)
        r = np.clip(np.round(raw), 1, 5)
        test = np.zeros(per_user, dtype=bool)
        test[rng.choice(per_user, size=n_test, replace=False)] = True
        users.append(np.full(per_user, u))
        items.append(its)
        ratings.append(r)
        is_test.append(test)
    users, items, ratings, is_test = map(np.concatenate, (users, items, ratings, is_test))
    full = Ratings(users, items, ratings, user_ids=np.arange(1, n_users + 1), item_ids=np.arange(101, 101 + n_items),
                   scale=(1, 5), name="planted")
    # Ratings sorts by (user, item); the mask above was built in that same order
    return Split(train=full.take(~is_test, name="train"), test=full.take(is_test, name="test"),
                 protocol={"name": "planted", "seed": seed})


def random_ndcg(split: Split, n_draws: int = 30, seed: int = 123) -> float:
    """Mean NDCG@10 of uniformly random rankings of each user's test items."""
    from cofiviz.metrics import score_lists

    rng = np.random.default_rng(seed)
    t = split.test
    vals = [np.nanmean(score_lists(t.indptr, t.ratings, rng.random(len(t)), metrics=["ndcg@10"])["ndcg@10"])
            for _ in range(n_draws)]
    return float(np.mean(vals))


def rewrite_npz(npz: Path, drop: str | None = None, replace: dict | None = None, relist: bool = True) -> None:
    """Rewrite a saved ``.npz`` without array ``drop`` and with the arrays in ``replace``, and record the new
    file's checksum in its JSON (and, with ``relist``, its list of arrays), so that ``Model.load`` gets past
    the checksum to the check under test."""
    with np.load(npz, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k != drop}
    arrays.update(replace or {})
    with open(npz, "wb") as fh:
        np.savez(fh, **arrays)
    js = npz.with_suffix(".json")
    meta = json.loads(js.read_text())
    meta["checksum"] = {"sha256": hashlib.sha256(npz.read_bytes()).hexdigest(), "bytes": npz.stat().st_size}
    if relist:
        meta["arrays"] = {k: {"shape": list(v.shape), "dtype": v.dtype.str} for k, v in arrays.items()}
    js.write_text(json.dumps(meta))


def edit_json(npz: Path, **changes) -> None:
    """Change keys of a save's JSON (``None`` deletes the key)."""
    js = npz.with_suffix(".json")
    meta = json.loads(js.read_text())
    for key, value in changes.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    js.write_text(json.dumps(meta))


class ModelContract:
    """Shared tests; subclasses provide :meth:`make_model`."""

    #: parameter settings each of which must raise ParameterError naming the parameter
    bad_params: list[dict] = [{"seed": -1}]
    #: settings (merged by make_model) under which the fit diverges on the planted data, e.g. a huge
    #: learning rate; None for a model that has none (closed-form, or updates that cannot diverge)
    diverging_params: dict | None = None
    #: how much better than random the model must rank the planted test items (NDCG@10)
    learn_margin: float = 0.03

    # ------------------------------------------------------------------ hooks
    def make_model(self, **params) -> Model:  # pragma: no cover - overridden
        raise NotImplementedError

    @pytest.fixture(scope="class")
    @classmethod
    def split(cls) -> Split:
        return planted(seed=0)

    @pytest.fixture(scope="class")
    @classmethod
    def fitted(cls, split) -> Model:
        return cls().make_model().fit(split.train)

    # ------------------------------------------------------------------ fit and callbacks
    def test_fit_returns_self_and_reports_every_iteration(self, split):
        model = self.make_model()
        seen: list[IterationInfo] = []
        out = model.fit(split.train, valid=split.test, callbacks=seen.append)
        assert out is model
        assert model.is_fitted
        n = len(seen)
        assert n >= 1
        if not model.iterative:
            assert n == 1
        assert len(model.history_) == n
        assert [i.iteration for i in seen] == list(range(1, n + 1))
        for info, row in zip(seen, model.history_):
            assert isinstance(info, IterationInfo)
            assert isinstance(info.seconds, float) and info.seconds >= 0
            assert isinstance(info.elapsed, float) and info.elapsed >= info.seconds
            assert isinstance(info.loss, float)
            assert info.model is model
            key = f"valid_{model.valid_metric}"
            assert key in info.metrics and 0.0 <= info.metrics[key] <= 1.0
            assert row["iteration"] == info.iteration and row[key] == info.metrics[key]
        assert [i.elapsed for i in seen] == sorted(i.elapsed for i in seen)
        assert model.stopped_reason_
        assert np.isfinite(model.fit_seconds_)

    def test_callbacks_may_be_a_list_and_all_are_called(self, split):
        a, b = [], []
        self.make_model().fit(split.train, callbacks=[a.append, b.append])
        assert len(a) == len(b) >= 1

    def test_callback_returning_true_stops(self, split):
        model = self.make_model()
        calls = []

        def stop(info):
            calls.append(info.iteration)
            return True

        model.fit(split.train, callbacks=stop)
        assert calls == [1]
        assert len(model.history_) == 1
        assert "callback" in model.stopped_reason_
        assert model.is_fitted  # the current iterate can be scored
        assert np.all(np.isfinite(model.score(np.arange(3), np.arange(3))))

    def test_bad_callbacks_and_tables_are_refused(self, split):
        with pytest.raises(ParameterError):
            self.make_model().fit(split.train, callbacks=[42])
        with pytest.raises(DataError):
            self.make_model().fit(split.train.to_dataframe())
        with pytest.raises(DataError):
            self.make_model().fit(split.train.take(np.zeros(len(split.train), dtype=bool)))

    def test_seeded_fit_is_reproducible(self, split):
        a = self.make_model(seed=3).fit(split.train)
        b = self.make_model(seed=3).fit(split.train)
        users, items = split.test.users, split.test.items
        np.testing.assert_array_equal(a.score(users, items), b.score(users, items))

    # ------------------------------------------------------------------ score
    def test_score_shapes_and_broadcasting(self, fitted, split):
        nu, ni = split.train.n_users, split.train.n_items
        users, items = np.arange(nu), np.arange(ni)
        grid = fitted.score(users[:, None], items[None, :])
        assert grid.shape == (nu, ni) and grid.dtype == np.float64
        assert np.all(np.isfinite(grid))
        pairs = fitted.score(split.test.users, split.test.items)
        assert pairs.shape == (len(split.test),)
        np.testing.assert_array_equal(pairs, grid[split.test.users, split.test.items])
        np.testing.assert_array_equal(fitted.score(4, items), grid[4])
        assert fitted.score(2, 5).shape == ()
        assert fitted.score([], []).shape == (0,)
        assert fitted.score(np.array([1.0, 2.0]), 3).shape == (2,)  # integral floats are indices

    @pytest.mark.parametrize("users, items", [(-1, 0), (0, -1), ("n_users", 0), (0, "n_items"),
                                              (0.5, 0), ([0, 1, 2], [0, 1]), ("a", 0), (True, 0)])
    def test_score_refuses_bad_indices(self, fitted, split, users, items):
        users = split.train.n_users if users == "n_users" else users
        items = split.train.n_items if items == "n_items" else items
        with pytest.raises(ParameterError):
            fitted.score(users, items)

    # ------------------------------------------------------------------ recommend
    def test_recommend_excludes_seen_and_is_sorted(self, fitted, split):
        train = split.train
        for u in (0, 7, train.n_users - 1):
            items, scores = fitted.recommend(u, k=10)
            assert len(items) == len(scores) == 10
            assert len(set(items.tolist())) == 10
            assert not set(items.tolist()) & set(train.items[train.user_slice(u)].tolist())
            assert np.all(np.diff(scores) <= 0)
            np.testing.assert_array_equal(scores, fitted.score(u, items))
            # the best unseen item overall comes first
            unseen = np.setdiff1d(np.arange(train.n_items), train.items[train.user_slice(u)])
            assert scores[0] == fitted.score(u, unseen).max()
        items, _ = fitted.recommend(0, k=train.n_items, exclude_seen=False)
        assert len(items) == train.n_items
        items, _ = fitted.recommend(np.int64(0), k=np.int32(train.n_items))  # fewer are left: all unseen
        assert len(items) == train.n_items - train.user_counts()[0]

    @pytest.mark.parametrize("user, k", [(0, 0), (0, -3), (0, 2.5), (0, True), (-1, 5), ("n_users", 5), (1.0, 5)])
    def test_recommend_refuses_bad_arguments(self, fitted, split, user, k):
        user = split.train.n_users if user == "n_users" else user
        with pytest.raises(ParameterError):
            fitted.recommend(user, k)

    def test_recommend_leaves_out_the_items_it_is_told_to(self, fitted, split):
        train = split.train
        best, _ = fitted.recommend(3, k=5)
        items, scores = fitted.recommend(3, k=5, exclude=best[:2])
        assert not set(items.tolist()) & set(best[:2].tolist()) and items[0] == best[2]
        np.testing.assert_array_equal(scores, fitted.score(3, items))
        for bad in ([train.n_items], [-1], [0.5], ["a"]):
            with pytest.raises(ParameterError, match="exclude"):
                fitted.recommend(3, k=5, exclude=bad)

    # ------------------------------------------------------------------ save / load
    def test_save_load_round_trip_without_pickle(self, fitted, split, tmp_path):
        npz = fitted.save(tmp_path / "model")
        assert npz.suffix == ".npz" and npz.with_suffix(".json").exists()
        with np.load(npz, allow_pickle=False) as data:  # raises if anything needed pickle
            arrays = {k: data[k] for k in data.files}
        assert all(a.dtype.kind != "O" for a in arrays.values())
        meta = json.loads(npz.with_suffix(".json").read_text())
        assert meta["model"] == fitted.model_name()
        assert meta["format"] == 2 and meta["checksum"]["sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()
        assert meta["arrays"] == {k: {"shape": list(v.shape), "dtype": v.dtype.str} for k, v in arrays.items()}
        assert not list(tmp_path.glob("*.tmp"))
        assert meta["params"] == json.loads(json.dumps(fitted.get_params()))
        for loader in (Model.load, type(fitted).load):
            back = loader(tmp_path / "model")
            assert type(back) is type(fitted)
            assert back.get_params() == fitted.get_params()
            users, items = np.meshgrid(np.arange(split.train.n_users), np.arange(split.train.n_items))
            np.testing.assert_array_equal(back.score(users, items), fitted.score(users, items))
            for u in (0, 5):
                np.testing.assert_array_equal(back.recommend(u, 5)[0], fitted.recommend(u, 5)[0])
            np.testing.assert_array_equal(back.train_.user_ids, fitted.train_.user_ids)

    def test_load_refuses_missing_files(self, fitted, tmp_path):
        with pytest.raises(DataError, match="nothing-here.npz"):
            Model.load(tmp_path / "nothing-here")
        npz = fitted.save(tmp_path / "model")
        npz.with_suffix(".json").unlink()
        with pytest.raises(DataError, match=r"missing: .*model\.json"):
            Model.load(npz)

    def test_state_spec_declares_the_saved_arrays(self, fitted, split):
        spec = fitted._state_spec(split.train.n_users, split.train.n_items)
        state = fitted._state()
        assert spec is not None and set(spec) == set(state)
        for key, shape in spec.items():
            got = np.asarray(state[key]).shape
            assert len(got) == len(shape) and all(w is None or g == w for g, w in zip(got, shape)), (key, got, shape)

    def test_state_size_counts_the_fitted_arrays_of_a_declared_shape(self, fitted, split):
        sizes = fitted.state_size(split.train.n_users, split.train.n_items)
        spec = fitted._state_spec(split.train.n_users, split.train.n_items)
        state = fitted._state()
        assert set(sizes) == {k for k, shape in spec.items() if None not in shape}
        for key, n in sizes.items():
            assert np.asarray(state[key]).size == n, key

    def test_load_refuses_an_npz_from_another_save(self, fitted, split, tmp_path):
        from cofiviz.models import ItemMean

        npz = fitted.save(tmp_path / "model")
        other = ItemMean(damping=3.0).fit(split.test).save(tmp_path / "other")
        shutil.copyfile(other, npz)
        with pytest.raises(DataError, match=r"model\.json and .*model\.npz are not from the same save"):
            Model.load(npz)

    @pytest.mark.parametrize("relist", [False, True], ids=["listed-in-json", "needed-by-model"])
    def test_load_names_a_missing_array(self, fitted, tmp_path, relist):
        npz = fitted.save(tmp_path / "model")
        key = "state__" + next(iter(fitted._state()))
        rewrite_npz(npz, drop=key, relist=relist)
        with pytest.raises(DataError, match=f"model.npz has no array '{key}'"):
            type(fitted).load(npz)
        rewrite_npz(npz, drop="train__ratings")
        with pytest.raises(DataError, match="train__ratings"):
            Model.load(npz)

    def test_load_refuses_another_class(self, fitted, split, tmp_path):
        from cofiviz.models import ItemMean, PopRec

        other_class = PopRec if isinstance(fitted, ItemMean) else ItemMean
        other = other_class().fit(split.train).save(tmp_path / "other")
        with pytest.raises(DataError, match=f"holds a {other_class.__name__}, not a {type(fitted).__name__}"):
            type(fitted).load(other)
        npz = fitted.save(tmp_path / "model")
        edit_json(npz, model=other_class.model_name(), **{"class": other_class.__name__})
        with pytest.raises(DataError, match="model"):  # the parameters or arrays are not the other class's
            Model.load(npz)
        edit_json(npz, model=fitted.model_name(), **{"class": other_class.__name__})
        with pytest.raises(DataError, match=f"is a {type(fitted).__name__}, but the file names the class"):
            Model.load(npz)

    def test_load_refuses_arrays_that_do_not_fit_the_parameters(self, fitted, tmp_path):
        if "rank" not in fitted.param_names():
            pytest.skip("no parameter of this model sets the shape of its arrays")
        npz = fitted.save(tmp_path / "model")
        params = json.loads(npz.with_suffix(".json").read_text())["params"]
        edit_json(npz, params={**params, "rank": fitted.rank + 1})
        with pytest.raises(DataError, match=r"model\.npz: array 'state__\w+' has shape .* needs"):
            Model.load(npz)

    def test_load_refuses_arrays_that_do_not_fit_the_training_table(self, fitted, tmp_path):
        npz = fitted.save(tmp_path / "model")
        ids = fitted.train_.item_ids
        rewrite_npz(npz, replace={"train__item_ids": np.concatenate([ids, ids[-1:] + 1000])})
        with pytest.raises(DataError, match=rf"items needs"):
            Model.load(npz)

    # ------------------------------------------------------------------ unfitted use and parameters
    def test_unfitted_use_is_a_clear_error(self, tmp_path):
        model = self.make_model()
        assert not model.is_fitted
        for call in (lambda: model.score(0, 0), lambda: model.recommend(0, 5), lambda: model.save(tmp_path / "m")):
            with pytest.raises(DataError, match="not fitted"):
                call()

    def test_unknown_parameter_lists_valid_ones(self):
        model = self.make_model()
        with pytest.raises(ParameterError) as err:
            self.make_model(no_such_param=1)
        msg = str(err.value)
        assert "no_such_param" in msg
        for p in model.param_names():
            assert p in msg
        with pytest.raises(ParameterError, match="no_such_param"):
            model.set_params(no_such_param=1)

    def test_out_of_range_parameter_names_it(self):
        for bad in self.bad_params:
            (key,) = bad
            with pytest.raises(ParameterError, match=key):
                self.make_model(**bad)
            with pytest.raises(ParameterError, match=key):
                self.make_model().set_params(**bad)

    def test_registered_under_lower_case_class_name(self):
        from cofiviz.models import available_models, make_model

        model = self.make_model()
        name = type(model).__name__.lower()
        assert model.model_name() == name == model.name
        assert name in available_models()
        assert type(make_model(name)) is type(model)

    # ------------------------------------------------------------------ divergence
    def test_divergence_hint_names_real_parameters(self):
        model = self.make_model()
        klass = type(model)
        for hint in (klass.divergence_hint, model._divergence_hint()):
            assert isinstance(hint, tuple)
            for name, direction in hint:
                assert name in klass.param_names() and direction in ("lower", "raise"), (name, direction)
        if model.iterative:
            assert model._divergence_hint(), f"{klass.__name__} names no parameter to change when its fit diverges"
        advice = model.divergence_advice()
        for name, direction in model._divergence_hint():
            assert f"{direction} {name} (now {getattr(model, name)!r})" in advice

    def test_a_diverging_fit_raises_naming_the_parameters(self, split):
        if self.diverging_params is None:
            pytest.skip("the model has no setting under which its fit diverges")
        model = self.make_model(max_iter=1).fit(split.train)  # a fit that the diverging one must not leave behind
        model.set_params(max_iter=self.make_model().max_iter, **self.diverging_params)
        with pytest.raises(ModelFitError) as err:
            model.fit(split.train)
        msg = str(err.value)
        assert msg.startswith(f"{type(model).__name__}: ") and "after iteration" in msg
        hint = model._divergence_hint()
        assert any(name in self.diverging_params for name, _ in hint)
        for name, direction in hint:
            assert f"{direction} {name} (now {getattr(model, name)!r})" in msg
        assert not model.is_fitted  # the earlier fit is gone too: nothing half-trained is left to score
        with pytest.raises(DataError, match="not fitted"):
            model.score(0, 0)

    def test_non_finite_state_raises_model_fit_error(self, split):
        base = type(self.make_model())

        class Poisoned(base):
            register = False

            def _step(self, iteration):
                loss = super()._step(iteration)
                state = {k: np.array(v, copy=True) for k, v in self._state().items()}
                key = next(k for k, v in state.items() if v.dtype.kind == "f")
                state[key].flat[0] = np.nan
                self._set_state(state)
                return loss

        model = Poisoned(**self.make_model().get_params())
        with pytest.raises(ModelFitError, match="non-finite after iteration 1") as err:
            model.fit(split.train)
        assert str(err.value).endswith(model.divergence_advice())
        assert not model.is_fitted  # nothing half-trained is left to score
        with pytest.raises(DataError, match="not fitted"):
            model.score(0, 0)

    def test_infinite_loss_raises_model_fit_error(self, split):
        base = type(self.make_model())

        class Exploding(base):
            register = False

            def _step(self, iteration):
                super()._step(iteration)
                return float("inf")

        with pytest.raises(ModelFitError, match="infinite"):
            Exploding(**self.make_model().get_params()).fit(split.train)

    # ------------------------------------------------------------------ learning
    def test_fold_in_fits_the_given_users_alone_or_refuses_naming_the_model(self, split):
        """Strong generalization: a model that folds in (``folds_in``) fits the users of a given table from their
        ratings, returns itself, leaves every other user's scores as they were and does the same twice; one that
        cannot refuses with a ParameterError that names it."""
        fitted_users = split.train.users < split.train.n_users // 2
        train, given = split.train.take(fitted_users), split.train.take(~fitted_users)
        model = self.make_model(seed=1).fit(train)
        if not model.folds_in():
            with pytest.raises(ParameterError, match=f"{type(model).__name__} cannot fold in"):
                model.fold_in(given)
            return
        users, items = np.arange(train.n_users), np.arange(train.n_items)
        before = model.score(users[:, None], items[None, :])
        assert model.fold_in(given) is model
        after = model.score(users[:, None], items[None, :])
        kept = users < train.n_users // 2
        assert np.array_equal(after[kept], before[kept])
        assert np.isfinite(after[~kept]).all() and not np.array_equal(after[~kept], before[~kept])
        again = self.make_model(seed=1).fit(train).fold_in(given)
        assert np.array_equal(again.score(users[:, None], items[None, :]), after)

    def test_learns_planted_structure(self, split):
        model = self.make_model().fit(split.train)
        got = mean_metrics(model, split.test, ["ndcg@10"])["ndcg@10"]
        assert got > random_ndcg(split) + self.learn_margin
