"""Dataset overview: `panel serve apps/overview.py`."""

import panel as pn

from cofiviz.dashboards.gate import app_page
from cofiviz.dashboards.overview import DatasetOverview

pn.extension("tabulator", sizing_mode="stretch_width")

app_page("overview", DatasetOverview).servable()
