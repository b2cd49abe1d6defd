"""`panel serve notebooks/01-ranking-metrics.ipynb` serves the notebook's metric playground as an app."""

import time
from pathlib import Path

import nbformat
import pytest

from conftest import PanelServer, screenshot, wait_for_canvases
from conftest import playground_ndcg as _ndcg

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "notebooks/01-ranking-metrics.ipynb"


def test_notebook_marks_exactly_the_playground_servable():
    nb = nbformat.read(ROOT / NOTEBOOK, as_version=4)
    servable = [c.source for c in nb.cells if c.cell_type == "code" and ".servable(" in c.source]
    assert len(servable) == 1 and "MetricPlayground()" in servable[0]
    # the call is the cell's last expression, so JupyterLab displays the playground inline too
    assert servable[0].strip().splitlines()[-1].startswith("playground.servable(")


@pytest.fixture(scope="module")
def server():
    srv = PanelServer([NOTEBOOK])
    yield srv
    srv.close()


@pytest.mark.browser
def test_served_notebook_moving_an_item_changes_ndcg(server, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1100}))
    page.goto(f"{server.url}/01-ranking-metrics", wait_until="networkidle")
    page.locator(".cofiviz-metric-values").first.wait_for(timeout=30_000)
    assert "Metric playground" in page.title()
    assert wait_for_canvases(page, 1) >= 1
    # the notebook's last cell moves the top item down and back: the served page shows the default list
    assert _ndcg(page) == "0.542"
    screenshot(page, "notebook-01-initial")

    page.get_by_role("button", name="▼").first.click()
    deadline = time.monotonic() + 30
    while _ndcg(page) == "0.542" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ndcg(page) not in ("0.542", None)
    page.wait_for_timeout(1500)  # let the bar charts redraw before the screenshot
    screenshot(page, "notebook-01-moved")
    assert page_errors.errors == [], page_errors.errors
