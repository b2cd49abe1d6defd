"""Metric playground: `panel serve apps/playground.py`."""

import panel as pn

from cofiviz.dashboards.playground import MetricPlayground
from cofiviz.dashboards.theme import page

pn.extension(sizing_mode="stretch_width")

page("Metric playground", MetricPlayground()).servable()
