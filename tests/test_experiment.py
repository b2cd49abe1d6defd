"""Experiment: expansion into cells, running, tidy tables, YAML / TOML configurations, errors."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from cofiviz.util.errors import DataError, ParameterError
from cofiviz.engine.experiment import Cell, Experiment, cell_key, resolve_model, run_cell

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 120, "n_items": 80, "density": 0.3}
PROTOCOL = {"name": "weak", "n_train": 5, "n_valid": 3, "min_test": 5}


def small(**kw):
    cfg = dict(models=[{"model": "itemmean", "params": {"damping": [1.0, 5.0]}}, "poprec",
                       {"model": "regsvd", "label": "SVD", "params": {"rank": 3, "max_iter": 3}}],
               data=DATA, protocol=PROTOCOL, seeds=[0, 1], metrics=["ndcg@10", "ap"])
    cfg.update(kw)
    return Experiment(**cfg)


def test_cells_expand_grid_protocol_and_seeds():
    exp = small(protocol={**PROTOCOL, "n_train": [4, 5]})
    cells = exp.cells()
    assert len(cells) == (2 + 1 + 1) * 2 * 2 == len(exp)
    assert {c.protocol_params["n_train"] for c in cells} == {4, 5}
    # the model seed follows the cell seed
    assert all(c.params["seed"] == c.seed for c in cells)
    # keys are stable and distinct
    keys = [k for _, k in exp.keys()]
    assert len(set(keys)) == len(keys)
    assert keys == [k for _, k in small(protocol={**PROTOCOL, "n_train": [4, 5]}).keys()]


def test_key_depends_on_config_data_and_version():
    c = small().cells()[0]
    k = c.key("v1")
    assert k == c.key("v1") and k != c.key("v2")
    assert cell_key(c.config(), "v1", version="0.0.0") != k
    other = Cell.from_config({**c.config(), "seed": 7})
    assert other.key("v1") != k
    assert Cell.from_config(c.config()).key("v1") == k


def test_key_depends_on_the_model_defaults_the_cell_relies_on(monkeypatch):
    c = small().cells()[0]
    klass = resolve_model(c.model)
    unset = next(p for p in klass.param_names() if p not in c.params)
    k = c.key("v1")
    assert unset in c.model_defaults()
    default = klass.param[unset].default
    changed = (not default) if isinstance(default, bool) else (default + 1 if isinstance(default, (int, float))
                                                                 else f"{default}-changed")
    monkeypatch.setattr(klass.param[unset], "default", changed)
    assert c.key("v1") != k
    # a cell that sets the parameter itself does not depend on its default
    pinned = Cell.from_config({**c.config(), "params": {**c.params, unset: default}})
    monkeypatch.setattr(klass.param[unset], "default", default)
    before = pinned.key("v1")
    monkeypatch.setattr(klass.param[unset], "default", changed)
    assert pinned.key("v1") == before


def test_run_gives_tidy_results_traces_and_per_user():
    exp = small(trace={"parts": ["valid", "test"], "metrics": ["ndcg@10"]}, per_user=True, seeds=[0])
    res = exp.run()
    r = res.results
    assert set(r["part"]) == {"test", "valid"}
    assert len(r) == len(exp) * 2 * 2          # cells x parts x metrics
    assert r.groupby(["cell", "part", "metric"]).size().max() == 1
    assert r["value"].between(0, 1).all()
    assert {"model.damping", "protocol.n_train", "label", "seed", "fit_seconds"} <= set(r.columns)
    assert set(r["label"]) == {"itemmean", "poprec", "SVD"}
    t = res.traces
    svd = t[t["label"] == "SVD"]
    assert sorted(svd[(svd["metric"] == "loss")]["iteration"]) == [1, 2, 3]
    assert set(svd["part"]) == {"train", "valid", "test"}
    assert len(svd[(svd["part"] == "test") & (svd["metric"] == "ndcg@10")]) == 3
    assert {"iteration", "seconds", "elapsed", "loss", "value"} <= set(t.columns)
    pu = res.per_user
    assert set(pu["metric"]) == {"ndcg@10", "ap"} and pu["cell"].nunique() == len(exp)
    # the per-user mean is the summary's mean
    c0 = r[(r["part"] == "test") & (r["metric"] == "ap")].iloc[0]
    assert np.isclose(pu[(pu["cell"] == c0["cell"]) & (pu["metric"] == "ap")]["value"].mean(), c0["value"])
    s = res.summary("ap")
    assert len(s) == 4 and (s["count"] == 1).all()


def test_test_traces_only_when_asked():
    exp = small(models=[{"model": "regsvd", "params": {"rank": 3, "max_iter": 2}}], seeds=[0])
    t = exp.run().traces
    assert set(t["part"]) == {"train", "valid"}


def test_run_cell_is_deterministic():
    cell = small(models=["itemmean"], seeds=[3]).cells()[0]
    a, b = run_cell(cell), run_cell(cell)
    cols = ["cell", "part", "metric", "value"]
    pd.testing.assert_frame_equal(a.results[cols], b.results[cols])


def test_from_yaml_and_toml(tmp_path):
    y = tmp_path / "e.yaml"
    y.write_text("""
name: demo
data: {name: synthetic, kind: popularity, n_users: 120, n_items: 80, density: 0.3}
protocol: {name: weak, n_train: [4, 5], n_valid: 3, min_test: 5}
seeds: [0, 1]
metrics: [ndcg@10, ap]
models:
  - poprec
  - {model: itemmean, params: {damping: [1.0, 5.0]}}
""")
    t = tmp_path / "e.toml"
    t.write_text("""
name = "demo"
seeds = [0, 1]
metrics = ["ndcg@10", "ap"]
[data]
name = "synthetic"
kind = "popularity"
n_users = 120
n_items = 80
density = 0.3
[protocol]
name = "weak"
n_train = [4, 5]
n_valid = 3
min_test = 5
[[models]]
model = "poprec"
[[models]]
model = "itemmean"
params = {damping = [1.0, 5.0]}
""")
    a, b = Experiment.from_file(y), Experiment.from_file(t)
    assert len(a) == len(b) == 3 * 2 * 2
    assert [k for _, k in a.keys()] == [k for _, k in b.keys()]
    assert a.name == "demo"


def test_example_configs_parse():
    from pathlib import Path
    for path in sorted((Path(__file__).resolve().parents[1] / "experiments").glob("*.*")):
        if path.suffix in (".yaml", ".yml", ".toml"):
            assert len(Experiment.from_file(path)) > 0, path


@pytest.mark.parametrize("kw, words", [
    (dict(models=["nosuchmodel"]), ["unknown model", "poprec"]),
    (dict(models=[{"model": "itemmean", "params": {"bogus": 1}}]), ["bogus", "damping"]),
    (dict(protocol={"name": "nosuch"}), ["unknown protocol", "lcr-weak"]),
    (dict(protocol={"name": "weak", "n_trian": 3}), ["n_trian", "n_train"]),
    (dict(metrics=["ndgc@10"]), ["ndgc"]),
    (dict(seeds=[-1]), ["seeds"]),
    (dict(trace={"parts": ["nope"]}), ["trace parts"]),
])
def test_errors_name_what_is_valid(kw, words):
    with pytest.raises(ParameterError) as err:
        small(**kw)
    for w in words:
        assert w in str(err.value)


def test_file_errors(tmp_path):
    with pytest.raises(DataError, match="no such"):
        Experiment.from_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.toml"
    bad.write_text("models = [")
    with pytest.raises(DataError, match="cannot parse"):
        Experiment.from_file(bad)
    unk = tmp_path / "unk.yaml"
    unk.write_text("models: [poprec]\nmodles: 3\n")
    with pytest.raises(ParameterError, match="modles"):
        Experiment.from_file(unk)


def test_a_diverging_cell_is_a_stored_result_that_is_never_chosen(monkeypatch, tmp_path):
    from cofiviz.util.errors import ModelFitError
    from cofiviz.models.base import Model
    from cofiviz.models.registry import MODEL_REGISTRY

    class Diverge(Model):
        register = False

        def _setup(self, train, rng):
            self.n_items_ = train.n_items

        def _step(self, iteration):
            return float("inf")

        def _scores(self, users, items):
            return np.zeros(len(users))

        def _state(self):
            return {}

        def _set_state(self, state):
            pass

    monkeypatch.setitem(MODEL_REGISTRY, "diverge", Diverge)
    from cofiviz import datasets

    with pytest.raises(ModelFitError):                       # the model itself still raises
        Diverge(max_iter=2).fit(datasets.tiny())
    exp = small(models=["itemmean", {"model": "diverge", "params": {"max_iter": 2}}], seeds=[0])
    res = exp.run(store=tmp_path)
    assert not res.failed and set(res.results["label"]) == {"itemmean", "diverge"}
    div = res.results[res.results["label"] == "diverge"]
    assert div["value"].isna().all() and (div["n_users"] == 0).all() and set(div["part"]) >= {"test"}
    assert div["stopped_reason"].str.startswith("diverged: ").all() and div["stopped_reason"].str.contains("infinite").all()
    assert set(div["metric"]) == set(res.results.loc[res.results["label"] == "itemmean", "metric"])
    # stored: a second run reads it back instead of fitting again
    again = exp.run(store=tmp_path)
    assert again.results[again.results["label"] == "diverge"]["stopped_reason"].tolist() == div["stopped_reason"].tolist()
    with pytest.raises(ParameterError, match="errors"):
        exp.run(errors="ignore")


def test_a_setting_with_a_diverged_seed_is_never_chosen():
    from cofiviz.search.selection import choose_setting

    rows = []
    for setting, valid in (("a", [0.5, 0.6]), ("b", [0.9, float("nan")]), ("c", [0.55, 0.56])):
        for seed, v in enumerate(valid):
            rows += [{"setting": setting, "part": "valid", "metric": "ndcg@10", "value": v, "seed": seed},
                     {"setting": setting, "part": "test", "metric": "ndcg@10", "value": v, "seed": seed}]
    chosen, best = choose_setting(pd.DataFrame(rows), "ndcg@10", ["ndcg@10"])
    assert best == "c" and chosen["value"].tolist() == [0.55, 0.56]


def test_a_late_feature_stays_out_of_keys_while_it_is_off(monkeypatch):
    """GAPfm's item-mean offset came after results of GAPfm shipped: while ``item_prior`` is 0 neither it nor
    ``prior_damping`` enters a key, so those results keep theirs; switched on (GAPfm's default now), the damping
    counts, and a cell that sets it to 0 hashes as the cell that relied on the default of 0 did. GCR and LCR had the
    offset from the start, and its parameters are in every key of theirs."""
    from cofiviz.models import LCR, GAPfm
    from cofiviz.engine.result_keys import key_defaults

    off = key_defaults(GAPfm, {"item_prior": 0.0})
    assert "item_prior" not in off and "prior_damping" not in off and "rank" in off
    on = key_defaults(GAPfm, {})
    assert on["item_prior"] == GAPfm.param["item_prior"].default > 0 and on["prior_damping"] == 10.0
    assert key_defaults(GAPfm, {"item_prior": 1.0})["prior_damping"] == 10.0
    assert {"item_prior", "prior_damping"} <= set(key_defaults(LCR, {}))
    base = dict(protocol="lcr-weak", protocol_params={"n_train": 10}, seed=0, data={"name": "tiny"}, metrics=("ndcg@10",))
    plain = Cell(model="gapfm", params={"max_iter": 2, "item_prior": 0.0}, **base)
    k = plain.key("v1")
    monkeypatch.setattr(GAPfm.param["prior_damping"], "default", 20.0)
    assert plain.key("v1") == k                       # off: the damping does not matter
    switched_on = Cell(model="gapfm", params={"max_iter": 2, "item_prior": 1.0}, **base)
    k_on = switched_on.key("v1")
    monkeypatch.setattr(GAPfm.param["prior_damping"], "default", 10.0)
    assert switched_on.key("v1") != k_on              # on: it does
    relied = Cell(model="gapfm", params={"max_iter": 2}, **base)
    assert relied.key("v1") != k                      # the default is on: another model, another key
    monkeypatch.setattr(GAPfm.param["item_prior"], "default", 0.0)
    assert relied.key("v1") == k                      # as it was keyed while the default was 0


def test_a_parameter_at_its_key_neutral_value_keeps_the_key_it_had_before_it_existed():
    """CofiRank's ``reg_users`` came after results of CofiRank shipped, with a default that is not the old
    behaviour: a cell that sets it to None (λ as given, what CofiRank computed before) hashes as the cell
    without it did then; one relying on the new default gets a new key."""
    from cofiviz.models import CofiRank
    from cofiviz.engine.result_keys import key_params

    assert key_params(CofiRank, {"reg": 10.0, "reg_users": None}) == {"reg": 10.0}
    assert key_params(CofiRank, {"reg": 10.0, "reg_users": 500}) == {"reg": 10.0, "reg_users": 500}
    base = dict(model="cofirank", protocol="lcr-weak", protocol_params={"n_train": 10}, seed=0,
                data={"name": "tiny"}, metrics=("ndcg@10",))
    pinned = Cell(params={"reg": 10.0, "reg_users": None}, **base)
    before = Cell(params={"reg": 10.0}, **base)   # the cell as it was written before reg_users existed
    defaults_then = {k: v for k, v in before.model_defaults().items()
                     if k not in ("reg_users", "reg_scaled", "reg_users_max")}   # none existed then
    assert pinned.key("v1") == cell_key({**before.config(), "defaults": defaults_then}, "v1")
    assert before.key("v1") != pinned.key("v1")   # the new default scales λ: a new result


def test_which_phases_reg_users_scales_keys_only_where_reg_users_is_read():
    """CofiRank's ``reg_scaled`` came after cells that scaled both phases' λ with the users: a cell that sets it to
    ``"both"`` keeps the key it had when that was the only rule; one relying on the new default (the item phase
    only) gets a new key; a cell at ``reg_users=None`` (nothing scaled, the paper's) keeps its key whatever the
    rule, since ``reg_scaled`` is not read there."""
    from cofiviz.models import CofiRank
    from cofiviz.engine.result_keys import key_defaults, key_params

    base = dict(model="cofirank", protocol="lcr-weak", protocol_params={"n_train": 10}, seed=0,
                data={"name": "tiny"}, metrics=("ndcg@10",))
    relied = Cell(params={"reg": 2.0}, **base)
    both = Cell(params={"reg": 2.0, "reg_scaled": "both"}, **base)
    then = {k: v for k, v in relied.model_defaults().items() if k != "reg_scaled"}
    assert key_params(CofiRank, {"reg": 2.0, "reg_scaled": "both"}) == {"reg": 2.0}
    assert both.key("v1") == cell_key({**relied.config(), "defaults": then}, "v1")
    assert relied.key("v1") != both.key("v1")
    assert key_defaults(CofiRank, {})["reg_scaled"] == "items"
    paper = {"reg": 10.0, "reg_users": None}
    assert "reg_scaled" not in key_defaults(CofiRank, paper)
    assert Cell(params=paper, **base).key("v1") == Cell(params={**paper, "reg_scaled": "both"}, **base).key("v1")


def test_the_key_migrations_name_registered_models_and_their_parameters():
    """The store's key migrations live in ``cofiviz.engine.result_keys`` alone: each names a registered model and
    parameters it has (a renamed parameter fails here, not as silently changed keys), and no model class
    carries store history of its own."""
    from cofiviz.models import MODEL_REGISTRY, Model
    from cofiviz.engine.result_keys import KEY_NEUTRAL, LATE_FEATURES

    for name, features in LATE_FEATURES.items():
        names = MODEL_REGISTRY[name].param_names()
        for switch, (_off, others) in features.items():
            assert {switch, *others} <= set(names), (name, switch, others)
    for name, neutral in KEY_NEUTRAL.items():
        assert set(neutral) <= set(MODEL_REGISTRY[name].param_names()), (name, neutral)
    assert not any(hasattr(Model, a) for a in ("late_features", "key_neutral", "key_defaults", "key_params"))


def test_each_faster_default_is_a_slower_form_the_model_declares_and_a_late_switch_at_its_off_value():
    """``FASTER_DEFAULTS`` names, for each model, the slower forms its shipped cells hold: each is one of the model's
    declared ``speed_forms`` (not its default), and the off value of a ``LATE_FEATURES`` switch, so that cells
    pinned at it keep the keys they had before the switch existed."""
    from cofiviz.models import MODEL_REGISTRY
    from cofiviz.engine.result_keys import FASTER_DEFAULTS, LATE_FEATURES

    assert FASTER_DEFAULTS
    for name, forms in FASTER_DEFAULTS.items():
        klass = MODEL_REGISTRY[name]
        for p, old in forms.items():
            assert old in klass.speed_forms[p] and klass.param[p].default != old, (name, p)
            assert LATE_FEATURES[name][p][0] == old, (name, p)


def test_an_option_of_one_solver_stays_out_of_the_other_solvers_keys(monkeypatch):
    """RegSVD's ``reg_weighting`` is read by its ALS solver only: an SGD cell's key does not change with it (set or
    at its default), an ALS cell's does."""
    from cofiviz.models import RegSVD

    base = dict(protocol="lcr-weak", protocol_params={"n_train": 10}, seed=0, data={"name": "tiny"}, metrics=("ndcg@10",))
    sgd = Cell(model="regsvd", params={"max_iter": 2}, **base)
    als = Cell(model="regsvd", params={"max_iter": 2, "solver": "als"}, **base)
    k_sgd, k_als = sgd.key("v1"), als.key("v1")
    assert Cell(model="regsvd", params={"max_iter": 2, "reg_weighting": "none"}, **base).key("v1") == k_sgd
    assert Cell(model="regsvd", params={"max_iter": 2, "solver": "als", "reg_weighting": "none"},
                **base).key("v1") != k_als
    monkeypatch.setattr(RegSVD.param["reg_weighting"], "default", "none")
    assert sgd.key("v1") == k_sgd and als.key("v1") != k_als


@pytest.mark.parametrize("model, params, reads", [("regsvd", {}, True), ("regsvd", {"solver": "als"}, True),
                                                   ("svdpp", {}, True), ("cofirank", {}, True),
                                                   ("cofirank", {"loss": "ordinal"}, False)])
def test_a_faster_default_keeps_the_keys_of_cells_pinned_at_the_slower_form(model, params, reads, monkeypatch):
    """RegSVD's float32 SGD, conjugate-gradient ALS and loss seen during the epoch, SVD++'s loss and CofiRank's gains
    start became defaults after cells of the slower forms shipped (``result_keys.FASTER_DEFAULTS``): a cell that sets
    the slower form keeps the key it had while that was the default; a cell at the new defaults gets another key
    where the cell reads the parameter (CofiRank's ordinal loss has no assignment to start)."""
    from cofiviz.models import get_model_class
    from cofiviz.engine.result_keys import FASTER_DEFAULTS

    klass, old = get_model_class(model), FASTER_DEFAULTS[model]
    base = dict(protocol="lcr-weak", protocol_params={"n_train": 10}, seed=0, data={"name": "tiny"}, metrics=("ndcg@10",))

    def key(**p):
        return Cell(model=model, params={"max_iter": 2, **params, **p}, **base).key("v1")

    new_default, pinned = key(), key(**old)
    with monkeypatch.context() as m:
        for p, v in old.items():
            m.setattr(klass.param[p], "default", v)
        before = key()
    assert pinned == before
    assert (new_default != before) == reads


def test_regsvds_solver_options_stay_out_of_the_keys_of_cells_that_do_not_read_them():
    """``cg_steps`` is read by the conjugate-gradient ALS only, ``als_solve`` by the ALS, ``dtype`` by SGD and the
    conjugate-gradient ALS (the exact solve computes in float64), ``sgd_loss`` by SGD."""
    base = dict(protocol="lcr-weak", protocol_params={"n_train": 10}, seed=0, data={"name": "tiny"}, metrics=("ndcg@10",))

    def key(**params):
        return Cell(model="regsvd", params={"max_iter": 2, **params}, **base).key("v1")

    exact = key(solver="als", als_solve="cholesky")
    assert key(solver="als", als_solve="cholesky", cg_steps=7) == exact
    assert key(solver="als", als_solve="cholesky", dtype="float64") == exact
    assert key(solver="als", als_solve="cholesky", sgd_loss="after") == exact
    cg = key(solver="als")
    assert cg != exact and cg != key(solver="als", cg_steps=3) and cg != key(solver="als", dtype="float64")
    assert key(solver="als", sgd_loss="after") == cg
    assert key(als_solve="cholesky", cg_steps=3) == key()
    assert key(dtype="float64") != key() and key(sgd_loss="after") != key()
