"""Recommendations per user with their popularity lean: `panel serve apps/recommendations.py`."""

import panel as pn

from cofiviz.dashboards.catalog import app
from cofiviz.dashboards.recommendations import Recommendations
from cofiviz.dashboards.theme import page

pn.extension(sizing_mode="stretch_width")

page(app("recommendations").title, Recommendations()).servable()
