"""The recommendations dashboard: popularity lean, and the app in a real headless Chromium."""

import time

import pytest

from conftest import PanelServer, screenshot
from cofiviz.dashboards.recommendations import Recommendations, popularity_lean, trained_model
from cofiviz.dashboards.overview import load_dataset


def test_poprec_follows_popularity_and_unknown_users_get_a_message():
    r = load_dataset("MovieLens 100K")
    model = trained_model("poprec")
    items, _ = model.recommend(0, k=10)
    pct, rho = popularity_lean(model, 0, items, r.item_counts())
    assert pct > 95 and rho > 0.99
    v = Recommendations()
    v.user = 100000
    assert v._error.visible and "not in MovieLens" in v._error.object
    v.user = 3
    assert not v._error.visible and len(v._lists.objects) >= 2


@pytest.fixture(scope="module")
def server():
    srv = PanelServer(["apps/recommendations.py"])
    yield srv
    srv.close()


def _first_titles(page, name="itemmean"):
    cells = page.locator(f".cofiviz-top-{name} td")
    cells.first.wait_for(timeout=30_000)
    return cells.all_inner_texts()


@pytest.mark.browser
def test_recommendations_changing_the_user_changes_the_list(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1100}))
    page.goto(f"{server.url}/recommendations", wait_until="networkidle")
    before = _first_titles(page)
    assert page.locator(".cofiviz-user-ratings td").count() > 0
    screenshot(page, "recommendations-user1")
    box = page.locator(".cofiviz-user input").first
    box.fill("2")
    box.press("Enter")
    page.get_by_text("User 2:").first.wait_for(timeout=30_000)
    deadline = time.monotonic() + 30
    while _first_titles(page) == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _first_titles(page) != before
    screenshot(page, "recommendations-user2")
    box.fill("99999")
    box.press("Enter")
    page.get_by_text("is not in MovieLens 100K").first.wait_for(timeout=30_000)
    assert page_errors.errors == [], page_errors.errors
