"""Every dashboard served together with the landing page, as `make serve` does (`cofiviz serve`)."""

import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from cofiviz.dashboards.catalog import APPS as CATALOG
from cofiviz.dashboards.catalog import notebooks
from conftest import PAGE_BOXES_JS, ROOT, PanelServer, screenshot, settled_boxes, wait_for_canvases

pytestmark = pytest.mark.browser

APPS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "apps").glob("*.py"))
#: what each app shows once its first view is there
READY = {"overview": "text=100,000", "playground": ".cofiviz-metric-values td", "losses": ".cofiviz-fig4-table td",
         "monitor": "text=Ready.", "recommendations": ".cofiviz-recommenders-progress",
         "comparisons": "text=read in"}     # the summary once the results are read (not while they are)
#: pages whose first view has no plot yet: the monitor draws its figures from the first Run on
NO_PLOT_AT_FIRST = {"monitor"}


@pytest.fixture(scope="module")
def server():
    srv = PanelServer(APPS)
    yield srv
    srv.close()


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


#: the boxes of an app page's header parts: ``[top, bottom, right]`` of its title and its busy indicator
HEADER_JS = """() => { const box = s => { const b = [...document.querySelectorAll(s)].pop().getBoundingClientRect();
                                       return [b.top, b.bottom, b.right]; };
                 return {title: box('#header .title'), busy: box('#header .pn-busy-container')}; }"""

#: a phone, a classroom projector, a small laptop and a desktop
SIZES = [(390, 844), (1024, 768), (1280, 720), (1440, 900)]



@pytest.mark.parametrize("app", [""] + [Path(a).stem for a in APPS])
def test_every_page_serves_and_fits_a_phone_a_projector_and_a_desktop(server, chromium, page_errors, app):
    """Every page's first view comes without an error and without a request leaving this server, and at 390×844,
    1024×768, 1280×720 and 1440×900 every plot and table lies inside the viewport horizontally (the page scrolls
    down, never sideways) and no plot is narrower than 320 px; on the phone the sidebar starts closed. The page
    opens on the phone, then the window is widened (the plots lay themselves out again)."""
    name = app or "landing"
    # the server builds a session's whole document when the page is requested
    with urllib.request.urlopen(f"{server.url}/{app}", timeout=60) as resp:
        assert resp.status == 200
        assert app == "" or b"bokeh" in resp.read().lower()
    requested = []
    page = None
    for width, height in SIZES:
        if page is None:
            page = page_errors(chromium.new_page(viewport={"width": width, "height": height}))
            page.on("request", lambda req: requested.append(req.url))
            page.goto(f"{server.url}/{app}", wait_until="domcontentloaded")
            page.locator(READY.get(app, "body")).first.wait_for(timeout=120_000)
            if app and app not in NO_PLOT_AT_FIRST:
                wait_for_canvases(page, 1, timeout=60_000)
        else:
            page.set_viewport_size({"width": width, "height": height})
        boxes = settled_boxes(page)    # once every plot has its size
        screenshot(page, f"width-{name}-{width}")
        assert boxes["scroll"] <= width, f"{name} scrolls sideways at {width} px: {boxes['scroll']} px wide"
        outside = [b for b in boxes["plots"] + boxes["tables"] if b[0] < -1 or b[1] > width + 1]
        assert outside == [], f"{name} at {width} px: plots or tables outside the viewport {outside}"
        narrow = [b for b in boxes["plots"] if b[2] < 320]
        assert narrow == [], f"{name} at {width} px: plots narrower than 320 px {narrow}"
        if width < 768:
            assert not boxes["sidebar"], f"{name}: the sidebar is open on a {width} px screen"
        if app:                        # the header is one line: menu button, title and busy indicator side by side
            head = page.evaluate(HEADER_JS)
            assert head["busy"][0] < head["title"][1] and head["title"][2] <= head["busy"][2] <= width, (name, width,
                                                                                                       head)
    assert page_errors.errors == [], page_errors.errors
    # nothing comes from the internet (fonts, style sheets, scripts): the page works offline
    elsewhere = [u for u in requested if urlparse(u).netloc not in ("", f"127.0.0.1:{server.port}")]
    assert elsewhere == [], elsewhere


@pytest.mark.parametrize("width, opened", [(1024, True), (390, False)])
def test_the_monitor_s_sidebar_starts_open_on_a_wide_screen_and_closed_on_a_phone(server, chromium, width, opened):
    page = chromium.new_page(viewport={"width": width, "height": 800})
    page.goto(f"{server.url}/monitor", wait_until="domcontentloaded")
    page.locator(READY["monitor"]).first.wait_for(timeout=120_000)
    assert page.evaluate(PAGE_BOXES_JS)["sidebar"] is opened
    page.close()


DRAWER_JS = """() => { const s = document.getElementById('sidebar').getBoundingClientRect(),
                        m = document.getElementById('main').getBoundingClientRect();
                 return {sidebar: [s.left, s.width, s.bottom], main: [m.left, m.width, m.top],
                         scroll: document.scrollingElement.scrollWidth}; }"""


def test_on_a_phone_the_opened_sidebar_takes_the_width_and_the_page_follows_under_it(server, chromium):
    """A drawer on a 390-px screen: opened by the menu button it spans the screen, and the main area (the status,
    the curves) lies under it at the full width, where beside it the main area would keep a few pixels; closed
    again, the main area has the width back. The page's title fits beside the menu button."""
    page = chromium.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{server.url}/monitor", wait_until="domcontentloaded")
    page.locator(READY["monitor"]).first.wait_for(timeout=120_000)
    title = page.evaluate("() => [...document.querySelectorAll('#header .title')].pop().getBoundingClientRect().right")
    assert title <= 390, f"the title reaches {title} px on a 390-px screen"
    page.locator("#sidebar-toggle").click()
    page.wait_for_function("() => document.getElementById('sidebar').classList.contains('show') && "
                           "!document.getElementById('sidebar').classList.contains('collapsing')", timeout=10_000)
    box = page.evaluate(DRAWER_JS)
    assert box["sidebar"][:2] == [0, 390] and box["main"][:2] == [0, 390], box
    assert box["main"][2] >= box["sidebar"][2] - 1 and box["scroll"] == 390, box
    screenshot(page, "monitor-drawer-390")
    page.locator("#sidebar-toggle").click()
    page.wait_for_function("() => !document.getElementById('sidebar').classList.contains('show') && "
                           "!document.getElementById('sidebar').classList.contains('collapsing')", timeout=10_000)
    box = page.evaluate(DRAWER_JS)
    assert box["main"][:2] == [0, 390], box
    page.close()
