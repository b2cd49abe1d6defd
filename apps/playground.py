"""Metric playground: `panel serve apps/playground.py`."""

import panel as pn

from cofiviz.dashboards.catalog import app
from cofiviz.dashboards.playground import MetricPlayground
from cofiviz.dashboards.theme import page

pn.extension(sizing_mode="stretch_width")

page(app("playground").title, MetricPlayground()).servable()
