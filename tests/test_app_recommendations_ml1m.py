"""The recommendations page on MovieLens 1M, in a real headless Chromium: its models are trained once the page
chooses it, after MovieLens 100K's, and the page shows them by MovieLens 1M's ids. The server offers a few models
(``$COFIVIZ_RECOMMENDERS_MODELS``): that every registered model trains and fills in its card is the MovieLens 100K
page test's (``test_app_recommendations.py``), and MovieLens 1M's pool trains each model as MovieLens 100K's does
(``test_movielens_1m_trains_after_movielens_100k_and_the_page_shows_it_by_ids``)."""

import re

import pytest

from cofiviz.background.offered import load_dataset
from cofiviz.background.recommenders import ML1M, MODELS_ENV
from cofiviz.models import available_models
from conftest import PanelServer, screenshot

#: the models this page offers: the two baselines and one of the papers' methods (every model's card is the
#: MovieLens 100K page's test)
OFFERED_HERE = ["poprec", "itemmean", "lcr"]


@pytest.fixture(scope="module")
def server():
    srv = PanelServer(["apps/recommendations.py"], env={MODELS_ENV: ",".join(OFFERED_HERE)})
    yield srv
    srv.close()


def _titles(page, name):
    return page.locator(f".cofiviz-top-{name} td").all_inner_texts()


@pytest.mark.browser
def test_the_page_trains_and_shows_movielens_1m_once_chosen(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1500, "height": 1200}))
    page.goto(f"{server.url}/recommendations", wait_until="domcontentloaded")
    page.locator(".cofiviz-recommenders-progress").first.wait_for(timeout=60_000)
    page.locator(".cofiviz-data select").first.select_option(ML1M)
    page.get_by_text("models are trained on MovieLens 1M").first.wait_for(timeout=120_000)
    n_models = len(OFFERED_HERE)
    # queued behind MovieLens 100K's models, then trained in the background; the lists fill in meanwhile
    done = re.compile(rf"All {n_models} models are trained\s+on MovieLens 1M")
    page.locator(".cofiviz-recommenders-progress", has_text=done).first.wait_for(timeout=1_200_000)
    r = load_dataset(ML1M)
    titles = set(r.item_info["title"])
    rated = set(r.item_info["title"].to_numpy()[r.items[r.user_slice(0)]])
    for name in OFFERED_HERE:
        page.locator(f".cofiviz-top-{name} td").first.wait_for(timeout=60_000)
        shown = set(_titles(page, name)) & titles
        assert len(shown) == 10, (name, shown)           # ten MovieLens 1M titles, none the user rated
        assert not shown & rated, name
    assert all(page.locator(f".cofiviz-top-{name}").count() == 0 for name in available_models()
               if name not in OFFERED_HERE), "a card of a model the server does not offer"
    assert page.get_by_text("User 1: 53 ratings").count() >= 1
    assert page.locator(".bk-Canvas, canvas").count() >= 2  # the popularity-lean bars and the overlap heat map
    screenshot(page, "recommendations-ml1m-user1")
    box = page.locator(".cofiviz-user input").first
    box.fill("6040")
    box.press("Enter")
    page.get_by_text("User 6040:").first.wait_for(timeout=60_000)
    box.fill("6041")
    box.press("Enter")
    page.get_by_text("is not in MovieLens 1M (ids run from 1 to 6040)").first.wait_for(timeout=60_000)
    assert page_errors.errors == [], page_errors.errors
