"""The recommendations page: every model trained once in a background process, popularity lean, list overlap,
and the app in a real headless Chromium, filling in as the models finish."""

import time

import numpy as np
import pytest

from cofiviz.dashboards._shared import load_dataset
from cofiviz.dashboards.recommendations import Recommendations, list_overlap, popularity_lean
from cofiviz.dashboards.recommenders import RecommenderPool, ordered, train_one
from cofiviz.models import available_models, get_model_class
from conftest import PanelServer, screenshot


def test_training_order_puts_the_quick_baselines_first_and_keeps_every_model():
    names = ordered(available_models())
    assert sorted(names) == available_models()
    assert names[:2] == ["poprec", "itemmean"]


def test_poprec_follows_popularity_and_itemmean_less(tmp_path):
    r = load_dataset("MovieLens 100K")
    counts = r.item_counts()
    lean = {}
    for name in ("poprec", "itemmean"):
        meta = train_one(name, tmp_path, quick=True, ratings=r)
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


@pytest.fixture(scope="module")
def quick_pool(tmp_path_factory):
    """Three models and one that cannot be built, trained in the background worker process."""
    pool = RecommenderPool(tmp_path_factory.mktemp("recommenders"), names=["poprec", "itemmean", "nope", "regsvd"],
                           quick=True)
    assert pool.start()
    yield pool
    pool.stop()


def test_the_pool_trains_in_the_background_and_reports_failures(quick_pool):
    st = quick_pool.wait(600)
    assert st.ready == ["poprec", "itemmean", "regsvd"] and not st.pending
    assert "nope" in st.failed and "unknown model" in st.failed["nope"]
    # a pool whose every model is saved starts no worker: a server started later loads them
    assert not RecommenderPool(quick_pool.directory, names=st.ready, quick=True).start()
    assert quick_pool.meta("regsvd")["params"]["max_iter"] <= 3
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
    screenshot(page, "recommendations-user2")
    box.fill("99999")
    box.press("Enter")
    page.get_by_text("is not in MovieLens 100K").first.wait_for(timeout=60_000)
    assert page_errors.errors == [], page_errors.errors
