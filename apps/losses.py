"""Loss shapes (LCR Figure 4, CofiRank's convex bound, GAPfm's smoothing): `panel serve apps/losses.py`."""

import panel as pn

from cofiviz.dashboards.gate import app_page
from cofiviz.dashboards.losses import LossShapes

pn.extension(sizing_mode="stretch_width")

app_page("losses", LossShapes).servable()
