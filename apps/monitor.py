"""Training monitor: `panel serve apps/monitor.py`."""

import panel as pn

from cofiviz.dashboards.monitor import TrainingMonitor
from cofiviz.dashboards.theme import page

pn.extension("tabulator", sizing_mode="stretch_width")

page("Training monitor", TrainingMonitor()).servable()
