"""Every dashboard served together with the landing page, as `make serve` does (`cofiviz serve`)."""

import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from cofiviz.dashboards.catalog import APPS as CATALOG
from cofiviz.dashboards.catalog import notebooks
from conftest import ROOT, PanelServer, screenshot

pytestmark = pytest.mark.browser

APPS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "apps").glob("*.py"))
#: what each app shows once its first view is there
READY = {"overview": "text=100,000", "playground": ".cofiviz-metric-values td", "losses": ".cofiviz-fig4-table td",
         "monitor": "text=Ready.", "recommendations": ".cofiviz-recommenders-progress",
         "comparisons": ".cofiviz-comparisons-status"}


@pytest.fixture(scope="module")
def server():
    srv = PanelServer(APPS)
    yield srv
    srv.close()


@pytest.mark.parametrize("app", [Path(a).stem for a in APPS])
def test_every_app_serves_its_first_view_without_errors(server, chromium, page_errors, app):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1000}))
    requested = []
    page.on("request", lambda req: requested.append(req.url))
    # the server builds a session's whole document when the page is requested
    with urllib.request.urlopen(f"{server.url}/{app}", timeout=60) as resp:
        assert resp.status == 200
        assert b"bokeh" in resp.read().lower()
    page.goto(f"{server.url}/{app}", wait_until="domcontentloaded")
    page.locator(READY.get(app, "body")).first.wait_for(timeout=60_000)
    screenshot(page, f"all-{app}")
    assert page_errors.errors == [], page_errors.errors
    # nothing comes from the internet (fonts, style sheets, scripts): the page works offline
    elsewhere = [u for u in requested if urlparse(u).netloc not in ("", f"127.0.0.1:{server.port}")]
    assert elsewhere == [], elsewhere


def test_every_app_has_a_description_and_a_thumbnail():
    for app in APPS:
        entry = CATALOG.get(Path(app).stem)
        assert entry is not None, f"{app} has no entry in cofiviz.dashboards.catalog.APPS"
        assert entry.description.strip() and entry.thumbnail.is_file(), app
        assert entry.thumbnail.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", entry.thumbnail


def test_landing_page_lists_every_app_and_notebook_and_loads_nothing_from_elsewhere(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1000}))
    requested = []
    page.on("request", lambda req: requested.append(req.url))
    page.goto(f"{server.url}/", wait_until="networkidle")
    assert page.title().startswith("cofiviz")
    for app in APPS:
        slug = Path(app).stem
        card = page.locator(f"#app-{slug}")
        assert CATALOG[slug].title in card.inner_text()
        assert CATALOG[slug].description in card.inner_text()
        # the thumbnail arrived and decoded
        assert card.locator("img").evaluate("img => img.complete && img.naturalWidth > 0"), slug
        assert card.locator("a").get_attribute("href") == f"./{slug}"
    listed = page.locator(".notebook").all_inner_texts()
    expected = notebooks(ROOT / "notebooks")
    assert len(listed) == len(expected) == len(list((ROOT / "notebooks").glob("*.ipynb"))) > 0
    for text, nb in zip(listed, expected):
        assert nb.title in text and nb.name in text
    hosts = {urlparse(u).netloc for u in requested if not u.startswith(("data:", "blob:"))}
    assert hosts == {f"127.0.0.1:{server.port}"}, sorted(requested)
    screenshot(page, "landing")
    # a card opens its app
    page.locator("#app-playground a").click()
    page.locator(READY["playground"]).first.wait_for(timeout=60_000)
    assert page_errors.errors == [], page_errors.errors
