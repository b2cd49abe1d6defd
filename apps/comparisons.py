"""Comparisons: the papers' tables and figures from the results store: `panel serve apps/comparisons.py`."""

import panel as pn

from cofiviz.dashboards.comparisons import Comparisons
from cofiviz.dashboards.gate import app_page

pn.extension("tabulator", sizing_mode="stretch_width")

app_page("comparisons", Comparisons.from_environment).servable()
