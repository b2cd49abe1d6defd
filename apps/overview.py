"""Dataset overview: `panel serve apps/overview.py`."""

import panel as pn

from cofiviz.dashboards.catalog import app
from cofiviz.dashboards.overview import DatasetOverview
from cofiviz.dashboards.theme import page

pn.extension("tabulator", sizing_mode="stretch_width")

page(app("overview").title, DatasetOverview()).servable()
