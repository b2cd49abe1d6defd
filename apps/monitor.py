"""Training monitor: `panel serve apps/monitor.py`."""

import panel as pn

from cofiviz.dashboards.catalog import app
from cofiviz.dashboards.monitor import TrainingMonitor
from cofiviz.dashboards.theme import page

pn.extension("tabulator", "filedropper", sizing_mode="stretch_width")

monitor = TrainingMonitor()
# the controls in the sidebar: a form that appears there does not lay the plots out again
page(app("monitor").title, monitor.results(), sidebar=monitor.controls()).servable()
