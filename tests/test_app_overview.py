"""The dataset overview app in a real headless Chromium, served by a real `panel serve`."""

import re

import pytest

from conftest import count_canvases, screenshot

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(quiet_pages):
    return quiet_pages


def test_overview_renders_movielens_and_switches_dataset(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1000}))
    page.goto(f"{server.url}/overview", wait_until="networkidle")
    # the summary names the real data set's size
    page.get_by_text("100,000").first.wait_for(timeout=30_000)
    # Bokeh plots rendered: each Bokeh plot draws into a canvas
    page.wait_for_function("document.querySelectorAll('canvas').length >= 0")
    n_canvas = page.evaluate("""() => {
        const walk = (root) => { let n = root.querySelectorAll('canvas').length;
            root.querySelectorAll('*').forEach(e => { if (e.shadowRoot) n += walk(e.shadowRoot); }); return n; };
        return walk(document); }""")
    assert n_canvas >= 3, f"expected the histogram and two long-tail plots, found {n_canvas} canvases"
    assert page.get_by_text("Star Wars (1977)").count() >= 1, "most-rated items table should list titles"
    screenshot(page, "overview-movielens")

    # one real interaction: switch to a synthetic data set, the summary changes
    page.locator("select").first.select_option(label="Synthetic: popularity-dominated")
    page.get_by_text("Synthetic: popularity-dominated").nth(1).wait_for(timeout=30_000)
    body = page.inner_text("body")
    assert "100,000" not in re.sub(r"\s+", " ", body.split("Synthetic: popularity-dominated")[-1])[:400]
    screenshot(page, "overview-synthetic")
    assert page_errors.errors == [], page_errors.errors


def test_overview_shows_movielens_1m_with_its_titles(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1000}))
    page.goto(f"{server.url}/overview", wait_until="networkidle")
    page.get_by_text("100,000").first.wait_for(timeout=30_000)
    # loaded when the page first asks for it (from the data cache), then described like MovieLens 100K
    page.locator("select").first.select_option(label="MovieLens 1M")
    page.get_by_text("1,000,209").first.wait_for(timeout=120_000)
    for figure in ("6,040", "3,706"):
        assert page.get_by_text(figure).count() >= 1, figure
    page.get_by_text("American Beauty (1999)").first.wait_for(timeout=60_000)   # its most-rated movie
    assert count_canvases(page) >= 3
    screenshot(page, "overview-movielens-1m")
    assert page_errors.errors == [], page_errors.errors
