"""Metric playground: `panel serve apps/playground.py`."""

import panel as pn

from cofiviz.dashboards.gate import app_page
from cofiviz.dashboards.playground import MetricPlayground

pn.extension(sizing_mode="stretch_width")

app_page("playground", MetricPlayground).servable()
