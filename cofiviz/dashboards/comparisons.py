"""Comparisons: the papers' tables and figures, paper beside cofiviz, from the results store.

One page for every reproduction of :mod:`cofiviz.reproductions`: CofiRank's NDCG / ordinal / regression
losses (Tables 2 and 3), LCR against its baselines (Table 2) and over rank × number of local models ×
loss (Figures 1, 2, 3 and 5: curves over iterations and a heatmap of the final values), GAPfm against
CofiRank and PopRec (Table 4 and the top-N protocol). The paper's numbers are drawn beside ours.

Nothing is computed to show a page: :func:`cofiviz.reproductions.status` reads the cells already in the
store (written by ``cofiviz reproduce NAME`` or by a sweep), so cached results show at once. A table with rows on
data sets read from the user's files (EachMovie, the Netflix Prize, Yelp) shows, in its Data choice, each run of
them the store holds (found from the cells' manifests, the data not read again); the rows not run yet show their
published numbers, and the page says which files they need and the command that runs them. The cells
still missing are listed; "Compute" asks :func:`cofiviz.background.cells.compute_cells` for the chosen one (or
all, one after another), in a worker thread of the visitor's session, which writes it into the store; the page
redraws after each. Stop takes effect after the current
cell; closing the tab stops the worker. ``panel serve apps/comparisons.py`` serves it;
``Comparisons()`` shows it inline in JupyterLab.
"""

from __future__ import annotations

import json
import os
import threading
import time
from functools import partial

import pandas as pd
import panel as pn
import param

from ..background.cells import compute_cells, describe_cell
from ..util.errors import ParameterError
from ..reproductions import REPRODUCTIONS, figure_trends, short_labels
from ..reproductions.report import p_text
from ..reproductions.run import files_needed, shipped_note, views
from ..reproductions.spec import data_label
from ..engine.store import default_store
from ._shared import SessionWorker
from .theme import HEADINGS_CSS, PLOT_MIN_WIDTH, PlotFlow, alert, side_by_side

__all__ = ["Comparisons", "default_store", "read_all"]

_FIGURES = ("Figure 1", "Figure 2", "Figure 3", "Figure 5")
#: about how many pixels a character of a bar's method name takes on its axis (Bokeh's 11-px axis labels)
LABEL_PIXELS_PER_CHAR = 7
#: p_holm: the Wilcoxon test against the best method of the same N, Holm-corrected across the table
_TABLE_COLUMNS = ["N", "method", "paper", "original", "cofiviz", "cofiviz_std", "diff", "vs_best", "p_holm", "seeds",
                  "status", "setting"]


def _horizontal_group_labels(plot, element):
    """Lying grouped bars: the method names beside the axis read left to right, as the bars do."""
    for axis in plot.state.yaxis:
        if hasattr(axis, "group_label_orientation"):
            axis.group_label_orientation = "horizontal"


def read_all(quick: bool = False, store: str | None = None, data=None) -> threading.Thread:
    """Read every reproduction's results once, in a background thread, so that switching to any of them in any
    session of this process shows it at once (:func:`cofiviz.reproductions.cached_status`): on its own data set and
    on each run on the user's files the store holds."""
    store = store or str(default_store())

    def read():
        for name in REPRODUCTIONS:
            try:
                for view in views(name, quick=quick, store=store, data=data):
                    view.read(name, quick=quick, store=store)
            except Exception:  # the page says why when this reproduction is chosen
                pass

    thread = threading.Thread(target=read, daemon=True, name="cofiviz-comparisons-read-all")
    thread.start()
    return thread


class Comparisons(pn.viewable.Viewer):
    """The papers' comparisons, paper beside cofiviz, from the results store; missing cells computable."""

    reproduction = param.Selector(default="lcr-figures", objects=list(REPRODUCTIONS),
                                  doc="The paper's table or figures.")
    metric = param.Selector(default="ndcg@10", objects=["ndcg@10"], doc="Metric shown.")
    figure = param.Selector(default="Figure 1", objects=list(_FIGURES), doc="LCR figure (lcr-figures only).")
    quick = param.Boolean(default=False, doc="The reduced (quick) versions of the reproductions.")
    store = param.String(default="", doc="Results store directory (default $COFIVIZ_STORE or "
                                         "cofiviz-results/store).")
    data = param.Parameter(default=None, doc="Data spec of the reproductions (None: each one's own data set).")

    @classmethod
    def from_environment(cls, **params) -> "Comparisons":
        """A Comparisons page configured from the environment (as ``apps/comparisons.py`` builds it).

        ``COFIVIZ_STORE`` (the store directory), ``COFIVIZ_QUICK=1`` (the quick versions) and
        ``COFIVIZ_COMPARISONS_DATA`` (a JSON data spec, e.g. a small synthetic set) override the defaults.
        """
        env = os.environ
        if env.get("COFIVIZ_QUICK", "").strip() not in ("", "0"):
            params.setdefault("quick", True)
        if env.get("COFIVIZ_COMPARISONS_DATA"):
            try:
                params.setdefault("data", json.loads(env["COFIVIZ_COMPARISONS_DATA"]))
            except json.JSONDecodeError as exc:
                raise ParameterError(f"COFIVIZ_COMPARISONS_DATA is not JSON: {exc}") from None
        return cls(**params)

    def __init__(self, **params):
        if not params.get("store"):
            params["store"] = str(default_store())
        super().__init__(**params)
        self._error = alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._summary = pn.pane.Markdown("", css_classes=["cofiviz-comparisons-status"], stylesheets=[HEADINGS_CSS],
                                         sizing_mode="stretch_width")
        self._plots = PlotFlow()
        self._table = pn.widgets.Tabulator(pd.DataFrame(columns=_TABLE_COLUMNS), disabled=True, show_index=False,
                                           height=300, sizing_mode="stretch_width", pagination=None,
                                           layout="fit_data_stretch", widths={"run": 240, "method": 320},
                                           # long method names wrap within their column instead of being cut
                                           formatters={"method": {"type": "textarea"}})
        self._notes = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._pending_select = pn.widgets.Select(label="Cell to compute", options={}, sizing_mode="stretch_width")
        self._table_title = pn.pane.Markdown("#### Paper and cofiviz", stylesheets=[HEADINGS_CSS])
        self._compute = pn.widgets.Button(label="Compute selected", color="primary", width=160)
        self._compute_all = pn.widgets.Button(label="Compute all missing", width=170)
        self._stop_btn = pn.widgets.Button(label="Stop", color="danger", width=80, disabled=True)
        self._progress = pn.pane.Markdown("", css_classes=["cofiviz-comparisons-progress"],
                                          sizing_mode="stretch_width")
        self._compute.on_click(partial(self._on_compute, False))
        self._compute_all.on_click(partial(self._on_compute, True))
        self._stop_btn.on_click(self._on_stop)
        self._figure_widget = pn.widgets.Select.from_param(self.param.figure, label="Figure (LCR figures)",
                                                           sizing_mode="stretch_width")
        # the data sets the chosen table can be shown on (its own, the runs on the user's files, the rows not run)
        self._data_select = pn.widgets.Select(label="Data", options=[], visible=False, sizing_mode="stretch_width",
                                              css_classes=["cofiviz-comparisons-data"])
        self._data_select.param.watch(self._on_data_choice, "value")
        self._views = []                           # the chosen reproduction's views (reproductions.run.views)
        self._view = None                          # the label of the view chosen in the Data select (None: the first)
        self._choosing = False                     # True while the page itself sets the Data select
        self._files = pn.pane.Markdown("", css_classes=["cofiviz-comparisons-files"], sizing_mode="stretch_width",
                                       visible=False)
        self._status = None
        self._work = SessionWorker("compare")
        self._reader = SessionWorker("read")       # schedules a read's result on the session's event loop
        self._wanted = None                        # the latest choice: a thread's read is shown only while it is
        self._refresh()

    # ------------------------------------------------------------------ reading the store
    @param.depends("reproduction", "quick", "store", "data", watch=True)
    def _choose_reproduction(self):
        """Another reproduction (or store, data, quick): shown on its first data set."""
        self._view = None
        self._refresh()

    def _on_data_choice(self, event):
        if self._choosing or event.new is None or event.new == self._view:
            return
        self._view = event.new
        self._refresh()

    def _refresh(self):
        """Show the chosen reproduction.

        In a served session the page first empties and says what it reads, so that no other reproduction's
        content stays on screen meanwhile; a thread reads it (at once when this process has read it before:
        :func:`~cofiviz.reproductions.cached_status`), and only the last choice is drawn when several reads
        overlap. Outside a server it is read and drawn at once.
        """
        rep = REPRODUCTIONS[self.reproduction]
        wanted = dict(quick=self.quick, store=self.store, data=self.data)
        doc = pn.state.curdoc
        self._wanted = object()                    # this choice: a read for an earlier one is not shown
        if doc is None or doc.session_context is None:
            self._read(rep, wanted, None, self._view)
            return
        import holoviews as hv

        self._status = None                        # nothing to draw or compute until the read is done
        self._compute.disabled = self._compute_all.disabled = True
        with pn.io.hold():
            self._summary.object = f"### {rep.title}\nReading its results …"
            self._plots.objects = [hv.Div(f"<p>Reading the results of {rep.name} …</p>")]
            # emptied with the columns it has: a browser's table handed new columns and, at once, the rows read
            # next could keep its columns and drop the rows
            self._table.value = self._table.value.iloc[0:0]
            self._table_title.object = ""
            self._notes.object = ""
            self._figure_widget.visible = rep.is_figures
        self._reader.bind()
        threading.Thread(target=self._read, args=(rep, wanted, self._wanted, self._view), daemon=True,
                         name="cofiviz-comparisons-read").start()

    def _read(self, rep, wanted: dict, token, chosen: str | None = None):
        """Read ``rep``'s status on the view labelled ``chosen`` (default its first; a thread's work when ``token``
        is set) and show it."""
        t0 = time.perf_counter()
        found = []
        try:
            found = views(rep.name, **wanted)
            view = next((v for v in found if v.label == chosen), found[0] if found else None)
            st = view.read(rep.name, quick=wanted["quick"], store=wanted["store"]) if view is not None else None
            error = None if view is not None else "no data to show it on"
        except Exception as exc:  # a missing paper table, an unreadable store, bad data: said in the page
            st, error, view = None, exc, None
        seconds = time.perf_counter() - t0
        shown = (found, view)
        if token is None:
            self._show(rep, st, error, seconds, shown)
        else:
            self._reader.schedule(self._show_if_current, token, rep, st, error, seconds, shown)

    def _show_if_current(self, token, rep, st, error, seconds, shown=((), None)):
        # a callback of the session's event loop: its changes reach the browser together when it returns (a
        # ``pn.io.hold`` here would keep them from being sent at all)
        if token is self._wanted:            # else a later choice is read (or shown) instead
            self._show_all(rep, st, error, seconds, shown)

    def _show(self, rep, st, error, seconds: float, shown=((), None)):
        with pn.io.hold():                       # the browser gets the new title and content in one message
            self._show_all(rep, st, error, seconds, shown)

    def _show_views(self, rep, found, view):
        """The Data choice (shown when the table can be shown on more than one data set) and the sentences on the
        rows that need the user's files and are not in the store."""
        self._views = list(found)
        labels = [v.label for v in found]
        self._choosing = True
        try:
            self._data_select.options = labels
            self._data_select.value = view.label if view is not None else None
        finally:
            self._choosing = False
        self._view = view.label if view is not None else None
        self._data_select.visible = len(labels) > 1
        have = {v.data.get("name") for v in found if isinstance(v.data, dict) and v.version}
        needed = files_needed(rep.name, have)
        self._files.object = ("**Rows that need your files.** " + " ".join(needed)) if needed else ""
        self._files.visible = bool(needed)

    def _show_all(self, rep, st, error, seconds: float, shown=((), None)):
        self._status = st
        self._show_views(rep, *shown)
        if st is None:
            self._show_error(f"Cannot read the results of {rep.name}: {error}")
            self._summary.object = f"### {rep.title}"
            self._plots.objects = []
            return
        base, rep = rep, st.reproduction          # the table as bound to the data shown (its title, rows, numbers)
        self._show_error(None)
        self._figure_widget.visible = rep.is_figures
        metrics = list(rep.metrics)
        self.param.metric.objects = metrics
        if self.metric not in metrics:
            self.metric = metrics[-1] if "ndcg@10" not in metrics else "ndcg@10"
        n, done, n_shipped = len(st.cells), st.n_done, st.n_shipped
        where = f"`{self.store}`"
        if st.needs:
            self._summary.object = (
                f"### {rep.title}\nThese rows run on your own copy of {data_label(rep.data_name)}, which cannot be "
                f"downloaded: run `{rep.command(self.quick)}` and they show here beside the paper's numbers, "
                f"which are below.")
        else:
            held = (f"{done} of {n} cells are here: **{n_shipped} shipped with cofiviz**, {done - n_shipped} in the "
                    f"results store {where}" if n_shipped else f"{done} of {n} cells are in the results store {where}")
            data = rep.dataset if isinstance(rep.dataset, dict) else {}
            on = (f" They ran on {data_label(rep.data_name)} from `{data['path']}` (data version {st.version})."
                  if data.get("path") and rep.data_name != base.data_name else "")
            self._summary.object = (
                f"### {rep.title}\n{held}"
                f"{' (quick versions)' if self.quick else ''}; read in {seconds:.2f} s.{on} "
                + ("Every cell is there." if done == n else
                   f"**{n - done} missing**: compute them below, or run `{rep.command(self.quick)}`."))
        notes = list(rep.notes) + [f"{m.label}: {m.note or 'not in cofiviz'}" for m in st.missing]
        if n_shipped:
            notes.insert(0, shipped_note(rep.name, n_shipped))
        if rep.is_figures:
            notes += figure_trends(st.table)      # the trends the paper states, against the stored runs
        self._notes.object = "\n".join(f"- {x}" for x in notes)
        pending = st.pending
        self._pending_select.options = {f"{i + 1}. {describe_cell(c)}": i for i, (c, _) in enumerate(pending[:500])}
        self._compute.disabled = self._compute_all.disabled = self._work.busy or not pending
        self._draw()

    @param.depends("metric", "figure", watch=True)
    def _draw(self):
        st = self._status
        if st is None:
            return
        if st.reproduction.is_figures:
            self._table_title.object = f"#### The runs of {self.figure}: final and best test {self.metric}"
            self._plots.objects = self._figure_plot(st)
            summary = st.table
            if len(summary):
                s = summary[(summary["figure"] == self.figure) & (summary["metric"] == self.metric)]
                self._table.value = s[["run", "final", "best", "best_iteration", "iterations"]].round(4) \
                    .reset_index(drop=True)
            else:
                self._table.value = pd.DataFrame(columns=["run", "final", "best", "best_iteration", "iterations"])
            return
        t = st.table
        t = t[t["metric"] == self.metric] if len(t) else t
        self._plots.objects = self._table_plot(t)
        # the authors' own code's numbers exist for a few CofiRank rows only
        cols = [c for c in _TABLE_COLUMNS if c in t.columns and (c != "original" or t[c].notna().any())]
        with_paper = "paper" in cols and t["paper"].notna().any()
        self._table_title.object = ("#### The paper's numbers and cofiviz's" if with_paper else
                                    "#### cofiviz's results (no paper printed these)")
        view = t[cols].copy()
        if "p_holm" in view.columns:  # p-values span many decades: shown as text, "best" on the best row
            view["p_holm"] = ["best" if vb == 0 else ("—" if pd.isna(p) else p_text(p))
                              for p, vb in zip(t["p_holm"], t["vs_best"])]
        self._table.value = view.round(4).reset_index(drop=True) if len(t) else \
            pd.DataFrame(columns=_TABLE_COLUMNS)

    def _table_plot(self, t: pd.DataFrame):
        """Grouped bars per N, the paper's value beside cofiviz's for each method: a list of plots."""
        import holoviews as hv
        import holoviews.plotting.bokeh  # noqa: F401  (the backend .opts needs, also outside a notebook)

        frames = []
        for source in ("paper", "cofiviz"):
            if len(t):
                frames.append(t.assign(source=source, value=t[source])[["N", "method", "source", "value"]])
        df = pd.concat(frames) if frames else pd.DataFrame(columns=["N", "method", "source", "value"])
        df = df[df["value"].notna()]
        if df.empty:
            return [hv.Div("<p>No result in the store yet for this metric: compute a cell below.</p>")]
        lo = max(0.0, float(df["value"].min()) - 0.05)
        hi = min(1.0, float(df["value"].max()) + 0.03)
        # without published numbers (the leaderboards) one bar per method; many methods: one plot per row
        with_paper = bool((df["source"] == "paper").any())
        many = df["method"].nunique() > 8
        # long method names ("CofiRank-NDCG at cofiviz's defaults") overlap under upright bars: lie them down
        lying = int(df["method"].str.len().max()) > 16
        style = ({"cmap": {"paper": "#999999", "cofiviz": "#c44e52"}, "color": "source"} if with_paper
                 else {"color": "#c44e52"})

        def shape(g):
            if not lying:
                return {"height": 320, "xrotation": 45 if many else 35}
            return {"height": 80 + 24 * len(g), "invert_axes": True, "invert_yaxis": True,
                    "hooks": [_horizontal_group_labels]}

        # lying bars' method names take the plot's left part: each plot asks for room for them beside its bars
        self._plots.basis = PLOT_MIN_WIDTH + LABEL_PIXELS_PER_CHAR * int(df["method"].str.len().max()) if lying \
            else PLOT_MIN_WIDTH
        plots = [hv.Bars(g if with_paper else g.drop(columns="source"), kdims=["method", "source"] if with_paper
                         else ["method"], vdims=("value", self.metric)).opts(
                 title=f"{self.metric}, N = {n}", responsive=True, min_width=300, ylim=(lo, hi), tools=["hover"],
                 show_legend=False, **shape(g), **style)
                 for n, g in df.groupby("N", sort=True)]
        return plots

    def _figure_plot(self, st):
        """LCR figures: test curves over iterations per run, and for Figure 5 the final-value heat map: a list of plots."""
        import holoviews as hv
        import holoviews.plotting.bokeh  # noqa: F401  (the backend .opts needs, also outside a notebook)

        t = st.results.traces
        if t.empty or not (t["label"] == self.figure).any():
            return [hv.Div(f"<p>No run of {self.figure} in the store yet: compute its cells below.</p>")]
        g = t[(t["label"] == self.figure) & (t["part"] == "test") & (t["metric"] == self.metric)]
        if g.empty:
            return [hv.Div(f"<p>{self.figure} has no test {self.metric} trace.</p>")]
        short = short_labels(g["setting"].unique())
        # the run is a column of each curve, so that the hover names it
        curves = {short[s]: hv.Curve(gs.sort_values("iteration").assign(run=short[s]), "iteration",
                                     [("value", f"test {self.metric}"), "run"])
                  for s, gs in g.groupby("setting", sort=False)}
        overlay = hv.NdOverlay(curves, kdims="run").opts(
            title=f"LCR {self.figure}: test {self.metric} over iterations", height=380, responsive=True,
            legend_position="right", tools=["hover"])
        if self.figure != "Figure 5":
            return [overlay]
        summ = st.table
        s = summ[(summ["figure"] == "Figure 5") & (summ["metric"] == self.metric)].copy()
        # categorical axes, in numeric order
        s["rank"] = s["setting"].map(lambda x: json.loads(x).get("rank"))
        s["n_local"] = s["setting"].map(lambda x: json.loads(x).get("n_local"))
        s = s.sort_values(["n_local", "rank"]).astype({"rank": str, "n_local": str})
        heat = hv.HeatMap(s, ["n_local", "rank"], ("final", f"final test {self.metric}")).opts(
            title=f"Figure 5: final test {self.metric}, rank × number of local models", height=360,
            responsive=True, colorbar=True, tools=["hover"], cmap="viridis")
        labels = hv.Labels(s.assign(text=s["final"].map(lambda v: f"{v:.3f}")), ["n_local", "rank"], "text").opts(
            text_color="white", text_font_size="9pt")
        # twenty runs: the hover names each curve instead of a legend taller than the plot
        curves = overlay.opts(show_legend=False, height=360,
                              title=f"LCR Figure 5: test {self.metric} over iterations (hover a curve for its run)")
        return [heat * labels, curves]

    def _show_error(self, msg: str | None):
        self._error.object = msg or ""
        self._error.visible = bool(msg)

    # ------------------------------------------------------------------ computing missing cells
    def _on_compute(self, all_cells: bool, event=None):
        if self._status is None or not self._work.claim():   # atomic: a double click computes once
            return
        pending = self._status.pending
        if not pending:
            self._work.release()
            return
        if all_cells:
            todo = pending
        else:
            i = self._pending_select.value
            if i is None or i >= len(pending):
                self._work.release()
                self._show_error("Choose a missing cell first.")
                return
            todo = [pending[i]]
        self._compute.disabled = self._compute_all.disabled = True
        self._stop_btn.disabled = False
        self._progress.object = f"Computing {len(todo)} cell(s) …"
        self._work.start(self._run_cells, todo, self._status.version)

    def _on_stop(self, event=None):
        self._work.stop.set()
        self._progress.object = "Stopping after the current cell …"

    def wait(self, timeout: float = 300.0) -> bool:
        """Wait for the compute worker; True when none is running any more."""
        return self._work.join(timeout)

    def _run_cells(self, todo, version):
        ran, error = compute_cells(todo, self.store, version, self._work.stop,
                                   on_cell=lambda *done: self._work.schedule(self._cell_done, *done))
        self._work.schedule(self._finish, ran, len(todo), error)

    def _cell_done(self, ran, total, what, seconds):
        self._progress.object = f"Computed {ran} of {total}: {what} ({seconds:.1f} s)."
        self._refresh()

    def _finish(self, ran, total, error):
        self._work.release()          # before the refresh, which enables Compute again
        self._stop_btn.disabled = True
        self._progress.object = (f"Done: {ran} of {total} cell(s) computed"
                                 f"{' (stopped)' if self._work.stop.is_set() and ran < total else ''}.")
        self._refresh()
        if error:
            self._show_error(error)

    # ------------------------------------------------------------------ layout
    def __panel__(self):
        names = {f"{r.name} — {r.title}": r.name for r in REPRODUCTIONS.values()}
        controls = pn.Column(
            pn.widgets.Select.from_param(self.param.reproduction, options=names, label="Reproduction",
                                         sizing_mode="stretch_width"),
            pn.widgets.Select.from_param(self.param.metric, label="Metric", sizing_mode="stretch_width"),
            self._data_select, self._figure_widget, sizing_mode="stretch_width")
        compute = pn.Column(pn.pane.Markdown("#### Missing cells"), self._pending_select,
                            pn.FlexBox(self._compute, self._compute_all, self._stop_btn, flex_wrap="wrap"),
                            self._progress,
                            sizing_mode="stretch_width")
        right = [self._summary, self._files, self._plots, self._table_title, self._table, pn.pane.Markdown("#### Notes"), self._notes]
        return pn.Column(self._error, side_by_side([controls, compute], right), sizing_mode="stretch_width")
