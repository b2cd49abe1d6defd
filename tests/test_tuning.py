"""Search spaces, presets and tuning: every model's space is valid, a search is seeded and repeatable, the refit
is the chosen setting, diverging settings are failed trials, and the command line's --tune / --preset."""

import json
import subprocess
import sys

import numpy as np
import pytest

from cofiviz import datasets
from cofiviz.cli import main
from cofiviz.util.errors import ModelFitError, ParameterError
from cofiviz.models import available_models, get_model_class
from cofiviz.search import space as S
from cofiviz.search.tuning import ITEM_MEAN_DAMPINGS, tune
from cofiviz.protocols.validation import carve_validation

DATA = dict(kind="local_low_rank", n_users=120, n_items=80, n_ratings=3000, seed=0)


@pytest.fixture(scope="module")
def parts():
    r = datasets.load("synthetic", **DATA)
    train, valid = carve_validation(r, seed=3)
    return train, valid


def test_distributions_stay_in_their_ranges_and_are_seeded():
    rng = np.random.default_rng(0)
    for dist, check in [(S.Uniform(0.5, 2.0), lambda v: 0.5 <= v <= 2.0),
                        (S.LogUniform(1e-3, 10.0), lambda v: 1e-3 <= v <= 10.0),
                        (S.IntUniform(3, 7), lambda v: isinstance(v, int) and 3 <= v <= 7),
                        (S.IntLogUniform(2, 50), lambda v: isinstance(v, int) and 2 <= v <= 50),
                        (S.Choice(("a", "b", "c")), lambda v: v in ("a", "b", "c"))]:
        draws = [dist.sample(rng) for _ in range(500)]
        assert all(check(v) for v in draws), dist
        assert len(set(draws)) > 1, dist
    # both ends of an integer range are reachable
    ints = {S.IntLogUniform(2, 5).sample(rng) for _ in range(500)}
    assert ints == {2, 3, 4, 5}
    space = {"a": S.LogUniform(1.0, 2.0), "b": S.Choice((1, 2, 3))}
    assert S.sample(space, np.random.default_rng(7)) == S.sample(space, np.random.default_rng(7))


@pytest.mark.parametrize("name", available_models())
def test_every_model_has_a_valid_search_space_and_presets(name):
    klass = get_model_class(name)
    assert klass.search_space, f"{name} declares no search space"
    assert set(klass.search_space) <= set(klass.param_names())
    rng = np.random.default_rng(0)
    for _ in range(50):          # every draw is a setting the constructor accepts
        klass(**S.sample(klass.search_space, rng))
    for anchor in klass.tune_anchors:  # anchors name parameters, and the constructor accepts them
        assert anchor and set(anchor) <= set(klass.param_names()), anchor
        model = klass(**anchor)
        assert all(getattr(model, k) == v for k, v in anchor.items()), anchor
    for preset, params in klass.presets.items():
        model = klass.from_preset(preset)
        assert all(getattr(model, k) == v for k, v in params.items()), preset
    with pytest.raises(ParameterError, match="no preset 'nope'"):
        klass.from_preset("nope")


def test_a_seeded_search_repeats_and_refits_the_chosen_setting(parts):
    train, valid = parts
    klass = get_model_class("regsvd")
    runs = []
    for _ in range(2):
        model = klass(max_iter=15)
        tune(model, train, valid, budget=600, trials=4, seed=1)
        runs.append(model)
    a, b = (m.tuning_ for m in runs)
    assert [t["params"] for t in a.trials] == [t["params"] for t in b.trials]
    assert [t["score"] for t in a.trials] == [t["score"] for t in b.trials]
    assert len(a.trials) == 4 and a.validation == "given"
    # the first trial is the model as configured (RegSVD has no anchors: it is the reference); the chosen one has
    # the best validation score unless the cross-check keeps the reference
    assert not klass.tune_anchors and a.check["reference"] == 0
    assert a.trials[0]["params"] == {k: klass.param[k].default for k in klass.search_space}
    scores = [t["score"] for t in a.trials]
    assert a.check["best"] == int(np.argmax(scores)) and sum(a.check["users"]) == valid.n_users
    if a.check["best"] != 0:
        gains = a.check["gains"]
        assert np.all(np.isfinite(gains)) and a.check["kept_reference"] == (min(gains) <= 0)
    assert a.chosen == (0 if a.check["kept_reference"] else a.check["best"])
    # the model is refitted with the chosen setting: its validation score is the chosen trial's, to the bit
    model = runs[0]
    assert {k: getattr(model, k) for k in a.trials[a.chosen]["params"]} == a.trials[a.chosen]["params"]
    assert model._mean_metrics(valid, ["ndcg@10"])["ndcg@10"] == scores[a.chosen]
    frame = a.frame()
    assert list(frame["chosen"]).index(True) == a.chosen and len(frame) == 4


def test_without_validation_a_tenth_of_train_is_carved_and_the_refit_uses_all_of_train(parts):
    train, _ = parts
    model = get_model_class("gcr")(max_iter=8)
    tune(model, train, budget=600, trials=2, seed=0)
    t = model.tuning_
    assert t.validation == "carved"
    assert model.max_iter == max(1, t.trials[t.chosen]["iterations"]) and model.patience == 0
    assert model.train_ is train and len(model.history_) <= model.max_iter


def test_sizes_and_membership_of_spaces():
    assert S.size({"a": S.Choice(("x", "y")), "b": S.IntUniform(3, 5)}) == 6
    assert S.size({"a": S.Choice((1, 2)), "b": S.Uniform(0.0, 1.0)}) is None
    space = {"a": S.Choice(("x", "y")), "b": S.IntLogUniform(2, 9), "c": S.LogUniform(0.1, 1.0)}
    assert S.contains(space, {"a": "y", "b": 9, "c": 0.1})
    for outside in ({"a": "z", "b": 9, "c": 0.5}, {"a": "x", "b": 10, "c": 0.5}, {"a": "x", "b": 2.5, "c": 0.5},
                    {"a": "x", "b": 2, "c": 1.5}):
        assert not S.contains(space, outside), outside


def test_a_finite_space_is_searched_without_repeats_and_ends_once_every_setting_is_tried(parts, monkeypatch):
    train, valid = parts
    t = tune(get_model_class("poprec")(), train, valid, budget=600, seed=0, refit=False)
    settings = [tr["params"]["tie_break"] for tr in t.trials]
    assert sorted(settings) == ["mean", "none"]  # both settings, each once, long before the budget
    # a configured setting outside the space does not count towards trying the space's settings
    gcr = get_model_class("gcr")
    monkeypatch.setattr(gcr, "search_space", {"rank": S.IntUniform(2, 3)})
    t = tune(gcr(max_iter=2, rank=7), train, valid, budget=600, seed=0, refit=False)
    # (its anchors are outside the space too: the configured rank without the item-mean offset, and the item mean
    # alone at five dampings)
    means = [0] * len(ITEM_MEAN_DAMPINGS)
    assert [tr["params"]["rank"] for tr in t.trials] in ([7, 7, *means, 2, 3], [7, 7, *means, 3, 2])
    assert [tr["params"]["item_prior"] for tr in t.trials] == [2.0, 0.0] + [1.0] * len(means) + [2.0, 2.0]
    assert [tr["params"]["prior_damping"] for tr in t.trials][2:-2] == list(ITEM_MEAN_DAMPINGS)


def test_fixed_parameters_are_not_searched(parts):
    train, valid = parts
    model = get_model_class("gcr")(max_iter=3, rank=4)
    tune(model, train, valid, budget=600, trials=3, seed=0, fixed={"rank"})
    assert all("rank" not in t["params"] for t in model.tuning_.trials) and model.rank == 4
    with pytest.raises(ParameterError, match="no parameter"):
        tune(model, train, valid, trials=1, fixed={"nope"})


def test_a_diverging_setting_is_a_failed_trial(parts, monkeypatch):
    train, valid = parts
    klass = get_model_class("gcr")
    monkeypatch.setattr(klass, "search_space", {"lr": S.LogUniform(1e6, 1e7)})
    monkeypatch.setattr(klass, "tune_anchors", ())  # every trial after the first is a diverging draw
    monkeypatch.setattr(klass, "item_mean_setting", None)
    model = klass(max_iter=20, tol=0.0)
    tune(model, train, valid, budget=600, trials=3, seed=0)
    t = model.tuning_
    assert t.chosen == 0 and all(tr["error"] and np.isnan(tr["score"]) for tr in t.trials[1:])
    assert "lr" in t.trials[1]["error"]
    # a search whose every setting diverges says so
    with pytest.raises(ModelFitError, match="every trial"):
        tune(klass(max_iter=20, tol=0.0, lr=1e7), train, valid, budget=600, trials=2, seed=0)


def test_bad_budget_and_trials_are_parameter_errors(parts):
    train, valid = parts
    model = get_model_class("itemmean")()
    for kwargs in ({"budget": 0}, {"budget": -1.0}, {"trials": 0}):
        with pytest.raises(ParameterError):
            tune(model, train, valid, **kwargs)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "cofiviz.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=900)


def test_cli_tune_and_preset(tmp_path, parts, monkeypatch, capsys):
    rest, test = parts
    train, valid = carve_validation(rest, seed=4)
    for name, part in (("train.tsv", train), ("valid.tsv", valid), ("test.tsv", test)):
        part.write(tmp_path / name)
    files = ["--train", "train.tsv", "--valid", "valid.tsv", "--test", "test.tsv"]
    out = _cli("run", "regsvd", *files, "--tune", "--trials", "3", "--set", "max_iter=5", "--json", "t.json",
               cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "t.json").read_text())
    tuned = result["search"]["tune"]
    assert len(tuned["trials"]) == 3 and result["search"]["on"] == "valid file"
    assert all("max_iter" not in t["params"] for t in tuned["trials"])
    assert {k: result["params"][k] for k in result["search"]["chosen"]} == result["search"]["chosen"]
    assert "chosen on valid file after 3 trials" in out.stdout and "trial 2:" in out.stderr
    # the paper's settings, overridden by --set
    out = _cli("run", "cofirank", *files, "--preset", "paper", "--set", "max_iter=2", "--json", "p.json",
               cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    params = json.loads((tmp_path / "p.json").read_text())["params"]
    assert params["rank"] == 100 and params["reg"] == 10.0 and params["max_iter"] == 2
    monkeypatch.chdir(tmp_path)
    for bad, message in ((["--preset", "nope"], "no preset 'nope'"), (["--tune", "--set", "rank=2,3"], "--tune"),
                         (["--tune", "--budget", "0"], "--budget"), (["--tune", "--trials", "0"], "--trials")):
        assert main(["run", "regsvd", *files, *bad]) == 2, bad
        assert message in capsys.readouterr().err, bad


def test_the_cross_check_estimates_the_gain_on_the_half_the_selection_did_not_see():
    """Half A's best is judged on B and B's best on A: a setting better only on the users it was picked on
    gains nothing, one better on both halves gains its mean difference, NaN users are left out."""
    from cofiviz.search import cross_checked_gain, cross_checked_gains

    in_a = np.array([True, True, False, False])
    configured = np.array([0.5, 0.5, 0.5, 0.5])
    lucky_on_a = np.array([0.9, 0.9, 0.4, 0.4])      # the best on A, worse on B
    lucky_on_b = np.array([0.4, 0.4, 0.9, 0.9])      # the best on B, worse on A
    assert cross_checked_gain(configured, lucky_on_a, lucky_on_b, in_a) == pytest.approx(-0.1)
    assert cross_checked_gains(configured, lucky_on_a, lucky_on_b, in_a) == pytest.approx((-0.1, -0.1))
    assert cross_checked_gains(configured, configured + 0.1, lucky_on_b, in_a) == pytest.approx((0.1, -0.1))
    better = np.array([0.6, 0.7, 0.6, np.nan])
    assert cross_checked_gain(configured, better, better, in_a) == pytest.approx(0.5 * (0.1 + 0.15))
    # a lower-is-better metric: lower values are the gain
    assert cross_checked_gain(configured, configured - 0.2, configured - 0.1, in_a, True) == pytest.approx(0.15)
    assert np.isnan(cross_checked_gain(configured, better, better, np.zeros(4, bool)))


def test_a_search_that_finds_a_clearly_better_setting_chooses_it(parts, monkeypatch):
    """A configured step size too small to move the factors against drawn ones that learn: the best trial wins
    the cross-check on both halves and is chosen."""
    train, valid = parts
    klass = get_model_class("gapfm")
    monkeypatch.setattr(klass, "search_space", {"learning_rate": S.LogUniform(0.2, 0.5)})
    monkeypatch.setattr(klass, "tune_anchors", ())
    monkeypatch.setattr(klass, "item_mean_setting", None)  # the baseline's own check: test_item_mean_setting.py
    t = tune(klass(max_iter=10, learning_rate=1e-6, item_prior=0.0), train, valid, budget=600, trials=3, seed=0,
             refit=False)
    scores = [tr["score"] for tr in t.trials]
    assert max(scores[1:]) > scores[0] + 0.01, scores
    assert min(t.check["gains"]) > 0.005 and not t.check["kept_reference"] and t.chosen == t.check["best"] != 0


def test_anchors_are_tried_after_the_configured_model_and_the_best_of_them_is_the_reference(parts, monkeypatch):
    """GCR's anchor (the configured model without its item-mean offset) is the second trial; the reference
    the cross-check measures drawn trials against is the better of the two on validation, and it is what is
    chosen unless the best drawn trial gains on both halves. An anchor the configured model already is gives way
    to a draw, and fixing a parameter an anchor sets leaves that anchor out."""
    train, valid = parts
    klass = get_model_class("gcr")
    monkeypatch.setattr(klass, "search_space", {"lr": S.LogUniform(0.05, 0.5),
                                                "item_prior": S.Choice((0.0, 1.0, 2.0))})
    assert klass.tune_anchors == ({"item_prior": 0.0},)
    monkeypatch.setattr(klass, "item_mean_setting", None)  # the baseline's own check: test_item_mean_setting.py
    t = tune(klass(max_iter=5), train, valid, budget=600, trials=4, seed=0, refit=False)
    params = [tr["params"] for tr in t.trials]
    assert params[0]["item_prior"] == klass.param["item_prior"].default > 0
    assert params[1] == {**params[0], "item_prior": 0.0}
    scores = [tr["score"] for tr in t.trials]
    assert t.check["reference"] == (1 if scores[1] > scores[0] else 0)
    if t.check["best"] in (0, 1):
        assert t.chosen == t.check["best"] and t.check["kept_reference"]
    else:
        assert t.chosen == (t.check["reference"] if min(t.check["gains"]) <= 0 else t.check["best"])
    already = tune(klass(max_iter=5, item_prior=0.0), train, valid, budget=600, trials=3, seed=0, refit=False)
    assert [tr["params"]["item_prior"] for tr in already.trials][0] == 0.0
    assert already.trials[1]["params"] != already.trials[0]["params"] and already.check["reference"] == 0
    fixed = tune(klass(max_iter=5), train, valid, budget=600, trials=2, seed=0, refit=False, fixed={"item_prior"})
    assert fixed.trials[1]["params"]["lr"] != fixed.trials[0]["params"]["lr"]
    assert "item_prior" not in fixed.trials[1]["params"]
