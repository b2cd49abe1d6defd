"""The recommendations page: every model trained once in a background process, popularity lean, list overlap,
and the app in a real headless Chromium, filling in as the models finish."""

import hashlib
import json
import re
import time
import tomllib

import numpy as np
import pytest

from cofiviz.background.offered import load_dataset
from cofiviz.background.recommender_settings import SETTINGS_FILE, ship_settings, shipped_settings
from cofiviz.background.recommenders import (DATA, HEAVY_ITERATIONS, HEAVY_USERS, ML1M, MODELS_ENV, QUICK_ITEMS,
                                             QUICK_ITERATIONS, QUICK_PER_USER, TUNE_USERS, Recipe, RecommenderPool, cap_per_user,
                                             defaults_digest, models_from_environment, ordered, quick_subset, recipe, recommenders_dir, train_one,
                                             user_sample)
from cofiviz.dashboards.recommendations import Recommendations, list_overlap, popularity_lean
from cofiviz.metrics.scorer import per_user_metrics
from cofiviz.models import available_models, get_model_class, make_model
from cofiviz.protocols.validation import carve_validation
from conftest import ROOT, PanelServer, heading_sizes, screenshot
from playwright.sync_api import expect


def test_every_model_ships_settings_its_class_takes_and_the_quickest_fits_train_first():
    settings = shipped_settings()
    assert sorted(settings) == available_models(), \
        "run `python -m cofiviz.background.recommender_settings --ship --models NAME` for each model missing"
    for name, entry in settings.items():
        assert set(entry["params"]) == set(get_model_class(name).param_names()), f"{name}: ship its settings again"
        assert make_model(name, **entry["params"]).get_params() == entry["params"]
        how = recipe(name, DATA)
        assert not how.search and how.params == entry["params"] and how.shipped_trials == entry["trials"] >= 1
        assert f"{entry['trials']:,}-trial search" in how.note
    names = ordered(available_models())
    assert sorted(names) == available_models()
    seconds = [settings[n]["fit_seconds"] for n in names]
    assert seconds == sorted(seconds)
    assert ordered(["nope", *names[::-1]]) == [*names, "nope"]      # a model without settings is searched: last
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert SETTINGS_FILE.name in patterns["cofiviz.background"]     # a wheel carries them


def test_shipping_settings_writes_each_models_choice_and_keeps_the_others(tmp_path):
    path = tmp_path / "settings.json"
    ship_settings(["poprec"], budget=0.5, path=path, log=None)
    ship_settings(["itemmean"], budget=0.5, path=path, log=None)
    content = json.loads(path.read_text())
    assert sorted(content["models"]) == ["itemmean", "poprec"] and content["data"] == DATA
    entry = shipped_settings(path)["itemmean"]
    assert entry["trials"] >= 1 and entry["metric"] == "ndcg@10" and 0.0 < entry["score"] <= 1.0
    assert make_model("itemmean", **entry["params"]).get_params() == entry["params"]
    assert shipped_settings(tmp_path / "absent.json") == {}


def _cheap_shipped() -> list[str]:
    """The models whose shipped fit takes at most a second where they shipped (a choice without chance)."""
    return sorted(n for n, e in shipped_settings().items() if e["fit_seconds"] <= 1.0)


def test_the_shipped_settings_score_what_their_search_recorded():
    """Each cheap model's shipped setting, fitted on the search's part of MovieLens 100K (a seeded tenth held
    out), scores on the held-out tenth the value the search recorded, to the last bit."""
    r = load_dataset(DATA)
    train, valid = carve_validation(r, seed=0)
    cheap = _cheap_shipped()
    assert len(cheap) >= 8, cheap
    for name in cheap:
        entry = shipped_settings()[name]
        model = make_model(name, **entry["params"]).fit(train, valid=valid)
        values = per_user_metrics(model, valid, [entry["metric"]], train=model.train_)[entry["metric"]]
        assert float(values[~np.isnan(values)].mean()) == entry["score"], name


def test_quick_mode_caps_a_fits_inner_loop_as_its_iterations(tmp_path):
    """GPOR's hyper-parameter ascent (``Model.inner_iterations``) runs as few iterations as a quick fit's loop."""
    r = load_dataset("Synthetic: small (300 users, 200 items)")
    assert get_model_class("gpor").inner_iterations == ("evidence_iter",)
    meta = train_one("gpor", tmp_path, quick=True, ratings=r)
    assert meta["params"]["evidence_iter"] == QUICK_ITERATIONS == meta["params"]["max_iter"]
    assert meta["params"]["hyperparameters"] == "evidence"


def test_poprec_follows_popularity_and_itemmean_less(tmp_path):
    r = load_dataset("MovieLens 100K")
    counts = r.item_counts()
    lean = {}
    for name in ("poprec", "itemmean"):
        meta = train_one(name, tmp_path, ratings=r, how=Recipe(search=False))
        assert meta["name"] == name and meta["tuned"] is False
        model = get_model_class(name).load(tmp_path / name / "model")
        items, _ = model.recommend(0, k=10)
        lean[name] = popularity_lean(model, 0, items, counts)
    pct, rho = lean["poprec"]
    assert pct > 95 and rho > 0.99
    assert lean["itemmean"][1] < rho


def test_list_overlap_is_the_jaccard_index():
    ov = list_overlap({"a": np.array([1, 2, 3, 4]), "b": np.array([3, 4, 5, 6]), "c": np.array([9])})
    j = {(row.a, row.b): row.jaccard for row in ov.itertuples()}
    assert j[("a", "a")] == 1.0 and j[("a", "b")] == pytest.approx(2 / 6) and j[("a", "c")] == 0.0
    assert all(j[(x, y)] == j[(y, x)] for x, y in j)
    assert list_overlap({}).empty


def test_a_tuned_model_is_saved_with_its_search(tmp_path):
    r = load_dataset("Synthetic: small (300 users, 200 items)")
    meta = train_one("itemmean", tmp_path, budget=0.5, ratings=r)
    assert meta["tuned"] is True and meta["trials"] >= 1 and 0.0 <= meta["params"]["damping"] <= 50.0
    assert not list(tmp_path.glob(".*partial*"))


def test_each_data_set_saves_in_a_folder_of_its_own(monkeypatch, tmp_path):
    monkeypatch.delenv("COFIVIZ_RECOMMENDERS_DIR", raising=False)
    base = recommenders_dir(30.0, False)
    assert base.name.endswith("-tuned30s") and recommenders_dir(30.0, False, DATA) == base
    digest = hashlib.sha1(SETTINGS_FILE.read_bytes()).hexdigest()[:8]
    assert f"shipped{digest}" in base.name           # new shipped settings train into a new folder
    assert recommenders_dir(30.0, False, ML1M) == base / "movielens-1m"
    quick = recommenders_dir(30.0, True)
    assert quick.name.endswith(f"-quick{QUICK_ITERATIONS}-defaults{defaults_digest()}")
    # quick mode fits the defaults: a changed default trains into a new folder
    monkeypatch.setattr(get_model_class("itemmean").param["damping"], "default", 3.25)
    assert recommenders_dir(30.0, True) != quick and recommenders_dir(30.0, False) == base
    monkeypatch.setenv("COFIVIZ_RECOMMENDERS_DIR", str(tmp_path))
    assert recommenders_dir(1.0, True) == tmp_path and recommenders_dir(1.0, True, ML1M) == tmp_path / "movielens-1m"
    with pytest.raises(ValueError, match="MovieLens 100K, MovieLens 1M"):
        recommenders_dir(1.0, True, "MovieLens 10M")
    assert "movielens-1m" not in available_models()   # the subfolder is never taken for a model's folder


def test_every_model_has_a_recipe_for_movielens_1m_and_the_costly_ones_a_documented_cheaper_one():
    """What a model's class declares of its cost (``Model.scale``) picks its MovieLens 1M recipe: a heavy model is
    fitted at its defaults on a sample of users and folds every user in, a capped one tunes and fits on at most
    its cap of each user's ratings, the others are tuned on a sample of users."""
    special = set()
    for name in available_models():
        how, scale = recipe(name, ML1M), get_model_class(name).scale
        if scale.heavy:
            assert not how.search and how.fit_users == HEAVY_USERS and how.params["max_iter"] == HEAVY_ITERATIONS
            assert get_model_class(name).folds_in() and scale.why in how.note
            special.add(name)
        elif scale.per_user is not None:
            assert how.search and how.per_user == scale.per_user and scale.why in how.note
            special.add(name)
        else:
            assert how == Recipe(tune_users=TUNE_USERS)
    assert special == {"cgpr", "cgpor", "cofirank"}
    assert recipe("cofirank", ML1M).per_user == 100


def test_a_cap_per_user_keeps_a_seeded_choice_of_each_users_ratings():
    r = load_dataset(DATA)
    c = cap_per_user(r, 30)
    assert c.n_users == r.n_users and (c.user_counts() == np.minimum(r.user_counts(), 30)).all()
    assert c.equals(cap_per_user(r, 30)) and not c.equals(cap_per_user(r, 30, seed=1))
    pairs = set(zip(r.users.tolist(), r.items.tolist()))
    assert set(zip(c.users.tolist(), c.items.tolist())) <= pairs


def test_samples_of_users_and_the_quick_subset_keep_ids_and_titles():
    r = load_dataset(ML1M)
    s = user_sample(r, 1000)
    assert s.n_users == 1000 and s.n_items == r.n_items and len(s.item_info) == r.n_items
    assert user_sample(r, 1000).equals(s)                       # seeded
    ids = set(s.user_ids.tolist())
    assert len(s) == int(np.isin(r.user_ids[r.users], list(ids)).sum())   # every rating of the users sampled
    kept = user_sample(r, 1000, reindex=False)
    assert kept.n_users == r.n_users and int((kept.user_counts() > 0).sum()) == 1000 and len(kept) == len(s)
    q = quick_subset(r)
    assert q.n_items == QUICK_ITEMS and q.user_counts().max() <= QUICK_PER_USER
    assert set(q.item_ids.tolist()) <= set(r.item_ids.tolist()) and q.item_info["title"].tolist() == q.item_ids.tolist()
    most = r.item_ids[np.argsort(-r.item_counts(), kind="stable")[:QUICK_ITEMS]]
    assert set(most.tolist()) == set(q.item_ids.tolist())


def test_a_model_tuned_on_a_sample_of_users_is_refitted_on_all_of_them(tmp_path):
    r = load_dataset("Synthetic: small (300 users, 200 items)")
    meta = train_one("regsvd", tmp_path, budget=0.5, ratings=r, how=Recipe(tune_users=60))
    assert meta["tuned"] and meta["trials"] >= 1 and meta["fitted_on"]["ratings"] == len(r)
    model = get_model_class("regsvd").load(tmp_path / "regsvd" / "model")
    assert model.train_.n_users == r.n_users and len(model.train_) == len(r) and model.patience == 0


def test_the_em_on_a_sample_of_users_then_every_user_folded_in(tmp_path):
    r = load_dataset("Synthetic: small (300 users, 200 items)")
    how = Recipe(search=False, fit_users=40, params={"max_iter": 2, "tol": 0.0}, note="a sample")
    meta = train_one("cgpr", tmp_path, ratings=r, how=how)
    assert not meta["tuned"] and meta["note"] == "a sample" and meta["iterations"] == 2
    model = get_model_class("cgpr").load(tmp_path / "cgpr" / "model")
    assert int((model.train_.user_counts() > 0).sum()) == 40     # the EM's users
    learned = model.means()
    # every user is scored from the user's own ratings: the fold-in of all users gives the same scores
    model.fold_in(r)
    np.testing.assert_array_equal(model.means(), learned)
    # the lists leave out what the user rated in the whole data set, not only in the EM's sample
    u = int(np.flatnonzero(model.train_.user_counts() == 0)[0])
    rated = r.items[r.user_slice(u)]
    items = model.recommend(u, 10, exclude_seen=False, exclude=rated)[0]
    assert len(items) == 10 and not set(items.tolist()) & set(rated.tolist())


def test_excluding_what_a_user_rated_is_excluding_the_seen_items_for_a_model_trained_on_all_ratings(tmp_path):
    r = load_dataset(DATA)
    train_one("itemmean", tmp_path, ratings=r, how=Recipe(search=False))
    model = get_model_class("itemmean").load(tmp_path / "itemmean" / "model")
    for u in (0, 5, 900):
        np.testing.assert_array_equal(model.recommend(u, 12, exclude_seen=False, exclude=r.items[r.user_slice(u)])[0],
                                      model.recommend(u, k=12)[0])


@pytest.fixture(scope="module")
def quick_pools(tmp_path_factory):
    """MovieLens 100K's pool (three models and one that cannot be built), trained in the background worker
    process, and MovieLens 1M's (four models, a collaborative GP among them), queued behind it; and whether
    MovieLens 1M's was queued when started."""
    folder = tmp_path_factory.mktemp("recommenders")
    pool = RecommenderPool(folder, names=["poprec", "itemmean", "nope", "regsvd"], quick=True)
    ml1m = RecommenderPool(folder / "movielens-1m", names=["poprec", "itemmean", "regsvd", "cgpr"], quick=True,
                           data=ML1M, after=pool)
    assert pool.start()
    assert ml1m.start()
    queued = ml1m.status().queued and not ml1m.alive
    yield pool, ml1m, queued
    ml1m.stop()
    pool.stop()


@pytest.fixture(scope="module")
def quick_pool(quick_pools):
    return quick_pools[0]


def test_the_pool_trains_in_the_background_and_reports_failures(quick_pool):
    st = quick_pool.wait(600)
    assert st.ready == ordered(["poprec", "itemmean", "regsvd"]) and not st.pending
    assert "nope" in st.failed and "unknown model" in st.failed["nope"]
    # a pool whose every model is saved starts no worker: a server started later loads them
    assert not RecommenderPool(quick_pool.directory, names=st.ready, quick=True).start()
    assert quick_pool.meta("regsvd")["params"]["max_iter"] <= 3
    assert quick_pool.meta("regsvd")["fitted_on"]["items"] == QUICK_ITEMS     # quick mode's subset, here too
    m1, m2 = quick_pool.model("regsvd"), quick_pool.model("regsvd")
    assert m1 is m2  # loaded once per save


def test_the_page_shows_every_ready_model_and_reports_unknown_users(quick_pool):
    quick_pool.wait(600)
    v = Recommendations(models=quick_pool)
    assert v.lean["model"].tolist() and len(v.lean) == 3
    assert set(v.overlap["a"]) == set(v.lean["model"])
    assert "failed" in v._progress.object and "nope" in v._progress.object
    v.user = 100000
    assert v._error.visible and "not in MovieLens" in v._error.object
    v.user = 3
    assert not v._error.visible
    shown = {name for name, (head, table) in v._cards.items() if table.visible and len(table.object) == v.n}
    assert shown == {"poprec", "itemmean", "regsvd"}
    assert "failed" in v._cards["nope"][0].object


def test_movielens_1m_trains_after_movielens_100k_and_the_page_shows_it_by_ids(quick_pools):
    pool, ml1m, queued = quick_pools
    assert queued, "MovieLens 1M's worker started while MovieLens 100K's was training"
    st = ml1m.wait(900)
    assert st.ready == ordered(["poprec", "itemmean", "regsvd", "cgpr"]), st
    last_100k = max((pool.directory / n / "meta.json").stat().st_mtime for n in pool.status().ready)
    assert min((ml1m.directory / n / "meta.json").stat().st_mtime for n in st.ready) >= last_100k
    assert not RecommenderPool(ml1m.directory, names=st.ready, quick=True, data=ML1M).start()
    assert ml1m.meta("regsvd")["data"] == ML1M and ml1m.meta("regsvd")["fitted_on"]["items"] == QUICK_ITEMS
    # quick mode: a few iterations, and one for a heavy model
    assert ml1m.meta("regsvd")["params"]["max_iter"] == QUICK_ITERATIONS and ml1m.meta("cgpr")["params"]["max_iter"] == 1
    assert set((pool.directory).iterdir()) >= {pool.directory / "movielens-1m"}
    v = Recommendations(models={DATA: pool, ML1M: ml1m})
    assert "MovieLens 100K" in v._progress.object and len(v.lean) == 3
    v.data = ML1M
    assert "All 4 models are trained** on MovieLens 1M" in v._progress.object
    assert sorted(v.lean["model"]) == ["CGPR", "ItemMean", "PopRec", "RegSVD"]
    r = load_dataset(ML1M)
    rated = set(r.item_ids[r.items[r.user_slice(0)]].tolist())
    for name in ("poprec", "cgpr"):
        head, table = v._cards[name]
        assert table.visible and len(table.object) == v.n
        assert set(table.object["title"]) <= set(r.item_info["title"]) and not set(table.object["title"]) & rated
    assert "quick" in v._cards["cgpr"][0].object
    # a user whom quick mode's subset leaves out is said to be so, card by card
    q = quick_subset(r)
    missing = sorted(set(r.user_ids.tolist()) - set(q.user_ids.tolist()))
    if missing:
        v.user = int(missing[0])
        assert not v._error.visible and "is not among the" in v._cards["regsvd"][0].object
    v.user = 6041
    assert v._error.visible and "not in MovieLens 1M (ids run from 1 to 6040)" in v._error.object
    v.data = DATA
    v.user = 2
    assert not v._error.visible and len(v.lean) == 3


@pytest.fixture(scope="module")
def server():
    srv = PanelServer(["apps/recommendations.py"])
    yield srv
    srv.close()


def _titles(page, name):
    return page.locator(f".cofiviz-top-{name} td").all_inner_texts()


@pytest.mark.browser
def test_the_page_fills_in_every_model_with_plots_and_follows_the_user(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1500, "height": 1200}))
    page.goto(f"{server.url}/recommendations", wait_until="domcontentloaded")
    page.locator(".cofiviz-recommenders-progress").first.wait_for(timeout=60_000)
    n_models = len(available_models())
    # the lists fill in as the background training finishes, without reloading the page
    page.get_by_text(f"All {n_models} models are trained").first.wait_for(timeout=600_000)
    for name in available_models():
        page.locator(f".cofiviz-top-{name} td").first.wait_for(timeout=60_000)
    assert page.locator(".cofiviz-user-ratings td").count() > 0
    assert page.locator(".bk-Canvas, canvas").count() >= 2  # the popularity-lean bars and the overlap heat map
    screenshot(page, "recommendations-user1")
    before = _titles(page, "itemmean")
    box = page.locator(".cofiviz-user input").first
    box.fill("2")
    box.press("Enter")
    page.get_by_text("User 2:").first.wait_for(timeout=60_000)
    deadline = time.monotonic() + 60
    while _titles(page, "itemmean") == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _titles(page, "itemmean") != before
    # every card's heading keeps one size after its text changed (Bootstrap's h4 reaches a changed pane)
    assert len(set(heading_sizes(page, "h4"))) == 1, heading_sizes(page, "h4")
    screenshot(page, "recommendations-user2")
    box.fill("99999")
    box.press("Enter")
    page.get_by_text("is not in MovieLens 100K").first.wait_for(timeout=60_000)
    box.fill("0")
    box.press("Enter")
    page.get_by_text("User = 0 is below its lower bound 1; set to 1.").first.wait_for(timeout=60_000)
    page.get_by_text("User 1:").first.wait_for(timeout=60_000)
    expect(box).to_have_value("1", timeout=30_000)
    assert page_errors.errors == [], page_errors.errors


def test_the_models_offered_can_be_named_in_the_environment_and_a_wrong_name_is_said(monkeypatch, tmp_path, capsys):
    """``$COFIVIZ_RECOMMENDERS_MODELS`` names the models a server trains and shows (any case, spaces around the
    commas), every registered one when it is unset or blank; a name the registry does not know, an empty name or a
    name given twice is refused with the variable and the names expected, by the pool and by ``cofiviz serve``
    before it serves anything."""
    from cofiviz.cli import main
    from cofiviz.util.errors import ParameterError

    monkeypatch.delenv(MODELS_ENV, raising=False)
    assert models_from_environment() == available_models()
    monkeypatch.setenv(MODELS_ENV, "  ")
    assert models_from_environment() == available_models()
    monkeypatch.setenv(MODELS_ENV, "LCR, poprec ,itemmean")
    assert models_from_environment() == ["lcr", "poprec", "itemmean"]
    assert sorted(RecommenderPool(tmp_path, quick=True).names) == ["itemmean", "lcr", "poprec"]
    for bad, said in (("lcr,nope", "'nope'"), ("lcr,,poprec", "an empty name"), ("lcr,LCR", "'lcr' more than once")):
        monkeypatch.setenv(MODELS_ENV, bad)
        with pytest.raises(ParameterError, match=f"{MODELS_ENV} names {re.escape(said)}"):
            models_from_environment()
        with pytest.raises(ParameterError):
            RecommenderPool(tmp_path, quick=True)
        assert main(["serve", "--port", "1"]) == 2
        err = capsys.readouterr().err
        assert MODELS_ENV in err and said in err, err
    monkeypatch.setenv(MODELS_ENV, "nope")
    refused = pytest.raises(ParameterError, models_from_environment).value
    assert "among: " + ", ".join(available_models()) in str(refused)
