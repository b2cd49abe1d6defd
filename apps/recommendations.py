"""Recommendations per user with their popularity lean: `panel serve apps/recommendations.py`."""

import panel as pn

from cofiviz.dashboards.gate import app_page
from cofiviz.dashboards.recommendations import Recommendations

pn.extension(sizing_mode="stretch_width")

app_page("recommendations", Recommendations).servable()
