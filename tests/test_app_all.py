"""Every dashboard served together, as `make serve` does (`panel serve apps/*.py`), after the warm-up."""

import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, PanelServer, screenshot

pytestmark = pytest.mark.browser

APPS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "apps").glob("*.py"))
#: what each app shows once its first view is there
READY = {"overview": "text=100,000", "playground": ".cofiviz-metric-values td", "losses": ".cofiviz-fig4-table td",
         "monitor": "text=Ready.", "recommendations": ".cofiviz-top-poprec td",
         "comparisons": ".cofiviz-comparisons-status"}


@pytest.fixture(scope="module")
def server():
    srv = PanelServer(APPS)
    yield srv
    srv.close()


@pytest.mark.parametrize("app", [Path(a).stem for a in APPS])
def test_every_app_serves_its_first_view_without_errors(server, chromium, page_errors, app):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1000}))
    # the server builds a session's whole document when the page is requested
    with urllib.request.urlopen(f"{server.url}/{app}", timeout=60) as resp:
        assert resp.status == 200
        assert b"bokeh" in resp.read().lower()
    page.goto(f"{server.url}/{app}", wait_until="domcontentloaded")
    page.locator(READY.get(app, "body")).first.wait_for(timeout=60_000)
    screenshot(page, f"all-{app}")
    assert page_errors.errors == [], page_errors.errors
