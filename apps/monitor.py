"""Training monitor: `panel serve apps/monitor.py`."""

import panel as pn

from cofiviz.dashboards.gate import app_page
from cofiviz.dashboards.monitor import TrainingMonitor

pn.extension("tabulator", "filedropper", sizing_mode="stretch_width")


def monitor():
    m = TrainingMonitor()
    # the controls in the sidebar: a form that appears there does not lay the plots out again
    return m.results(), m.controls()


app_page("monitor", monitor, sidebar=True).servable()
