"""Dataset overview dashboard: what a ratings table looks like before anything is trained on it.

Shows the size and density of a dataset, its ratings histogram, how many ratings users and items
have (the long tail that makes popularity such a strong baseline), and the most-rated items with
their titles. ``panel serve apps/overview.py`` serves it; in JupyterLab, ``DatasetOverview()`` shows
it inline.
"""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the Bokeh backend so .opts works anywhere)
import numpy as np
import pandas as pd
import panel as pn
import param
from bokeh.models import NumeralTickFormatter

from ..background.offered import DATASETS, load_dataset
from ..ratings import Ratings
from .theme import alert, flow, side_by_side

#: whole numbers with thousands separators on the axes ("350,000", not Bokeh's "3.500e+5")
COUNT_TICKS = NumeralTickFormatter(format="0,0")

__all__ = ["DatasetOverview", "DATASETS", "load_dataset"]


def _counts_histogram(counts: np.ndarray, label: str, color: str) -> hv.Histogram:
    counts = counts[counts > 0]
    edges = np.unique(np.round(np.logspace(0, np.log10(max(counts.max(), 2)) + 1e-9, 30)).astype(int))
    freq, edges = np.histogram(counts, bins=edges)
    return hv.Histogram((edges, freq), kdims=[hv.Dimension(label)], vdims=["count"]).opts(
        logx=True, color=color, line_color=None, responsive=True, height=260, tools=["hover"],
        title=f"{label} (log scale)", yformatter=COUNT_TICKS)


class DatasetOverview(pn.viewable.Viewer):
    """Size, ratings histogram and the long tails of users and items for one dataset."""

    dataset = param.Selector(default="MovieLens 100K", objects=list(DATASETS), doc="Dataset to describe.")
    top_n = param.Integer(default=15, bounds=(5, 50), doc="How many of the most-rated items to list.")

    def __init__(self, **params):
        super().__init__(**params)
        self._error = alert("", alert_type="danger", visible=False)

    @param.depends("dataset")
    def _ratings(self) -> Ratings | None:
        try:
            ratings = load_dataset(self.dataset)
        except Exception as exc:  # shown in the page, never as a traceback
            self._error.object = f"Could not load {self.dataset}: {exc}"
            self._error.visible = True
            return None
        self._error.visible = False
        return ratings

    @param.depends("dataset")
    def summary(self):
        r = self._ratings()
        if r is None:
            return pn.pane.Markdown("")
        density = len(r) / (r.n_users * r.n_items)
        uc, ic = r.user_counts(), r.item_counts()
        rows = [("ratings", f"{len(r):,}"), ("users", f"{r.n_users:,}"), ("items", f"{r.n_items:,}"),
                ("density", f"{density:.2%}"), ("rating scale", f"{r.scale[0]:g} – {r.scale[1]:g}"),
                ("mean rating", f"{r.global_mean:.3f}"),
                ("ratings per user", f"median {np.median(uc):.0f}, min {uc.min()}, max {uc.max()}"),
                ("ratings per item", f"median {np.median(ic):.0f}, min {ic.min()}, max {ic.max()}")]
        table = "\n".join(f"| {k} | {v} |" for k, v in rows)
        return pn.pane.Markdown(f"### {self.dataset}\n\n| | |\n|---|---|\n{table}", css_classes=["cofiviz-summary"],
                                sizing_mode="stretch_width")

    @param.depends("dataset")
    def histogram(self):
        r = self._ratings()
        if r is None:
            return pn.pane.Markdown("")
        values, counts = np.unique(r.ratings, return_counts=True)
        bars = hv.Bars(pd.DataFrame({"rating": [f"{v:g}" for v in values], "ratings": counts}),
                       kdims=["rating"], vdims=["ratings"])
        return bars.opts(title="Ratings histogram", responsive=True, height=260, color="#4c72b0", tools=["hover"],
                         yformatter=COUNT_TICKS)

    @param.depends("dataset")
    def long_tails(self):
        r = self._ratings()
        if r is None:
            return pn.pane.Markdown("")
        return flow(pn.pane.HoloViews(_counts_histogram(r.user_counts(), "ratings per user", "#55a868")),
                    pn.pane.HoloViews(_counts_histogram(r.item_counts(), "ratings per item", "#c44e52")))

    @param.depends("dataset", "top_n")
    def top_items(self):
        r = self._ratings()
        if r is None:
            return pn.pane.Markdown("")
        counts = r.item_counts()
        sums = np.bincount(r.items, weights=r.ratings, minlength=r.n_items)
        order = np.lexsort((np.arange(r.n_items), -counts))[: self.top_n]
        titles = (r.item_info["title"].to_numpy()[order] if r.item_info is not None and "title" in r.item_info
                  else r.item_ids[order].astype(str))
        df = pd.DataFrame({"item": r.item_ids[order], "title": titles, "ratings": counts[order],
                           "mean rating": np.round(sums[order] / np.maximum(counts[order], 1), 2)})
        if np.array_equal(df["item"].astype(str), df["title"].astype(str)):   # ids that are the titles: said once
            df = df.drop(columns="item")
        return pn.widgets.Tabulator(df, disabled=True, show_index=False, sizing_mode="stretch_width", height=380,
                                    name="Most-rated items")

    def __panel__(self):
        controls = pn.Param(self.param, widgets={"dataset": pn.widgets.Select, "top_n": pn.widgets.IntSlider},
                            show_name=False, sizing_mode="stretch_width")
        return pn.Column(
            self._error,
            side_by_side([controls, self.summary], [self.histogram, self.long_tails]),
            pn.pane.Markdown("### Most-rated items"),
            self.top_items,
            sizing_mode="stretch_width")
