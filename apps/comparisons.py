"""Comparisons: the papers' tables and figures from the results store: `panel serve apps/comparisons.py`."""

import panel as pn

from cofiviz.dashboards.catalog import app
from cofiviz.dashboards.comparisons import Comparisons
from cofiviz.dashboards.theme import page

pn.extension("tabulator", sizing_mode="stretch_width")

page(app("comparisons").title, Comparisons.from_environment()).servable()
