"""Loss shapes (LCR Figure 4, CofiRank's convex bound, GAPfm's smoothing): `panel serve apps/losses.py`."""

import panel as pn

from cofiviz.dashboards.catalog import app
from cofiviz.dashboards.losses import LossShapes
from cofiviz.dashboards.theme import page

pn.extension(sizing_mode="stretch_width")

page(app("losses").title, LossShapes()).servable()
