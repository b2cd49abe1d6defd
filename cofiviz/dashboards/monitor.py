"""Training monitor: pick data, protocol, model and parameters, then watch the model train live.

Each browser session owns one :class:`TrainingMonitor`, the view: the form, the plots, the tables. Its
controller, a :class:`~.monitor_run.MonitorRun`, trains in a worker process
(:mod:`~cofiviz.background.training_process`): the model's fit never runs in the server's process, so a
session that trains costs the other sessions next to nothing. The controller's parameters change on the
session's event loop; the view watches them and draws: each batch of rows
(:meth:`~.monitor_run.MonitorRun.flush_interval` apart) is appended with ``ColumnDataSource.stream``, which
sends only the new rows: NDCG@10, AP and GAP on train,
validation and test, the loss and the seconds per iteration (where scoring outlasts training, as on
MovieLens 1M, the metric curves join the iterations scored:
:data:`~cofiviz.background.training_process.SCORE_THROTTLE`). A run waits for a free worker in the server's
queue (:mod:`cofiviz.background.run_queue`: as many runs at once as the server has cores); while it waits, the
page says its position and when it is expected to start. Run is atomic (a double click starts one run); Run
again with other choices replaces the session's queued or running run, which keeps its place; Stop takes effect
after the current iteration (or leaves the queue); closing the tab stops the run and ends its process if it does
not stop by itself, and gives its place up (``pn.state.on_session_destroyed``).

Uploads (CSV, TSV or Parquet) arrive in one message through a file dropper, up to :data:`UPLOAD_LIMIT_MB`;
the browser refuses a larger file with a message, and an empty or malformed file is reported. A value
of N or Max iter outside its bounds is reset to the bound, and the page says why. The model's form opens
folded away under "▸ Model parameters: <model>" (its widgets and their tooltips would be more than half of a
page's Bokeh models, which a server builds for every session); unfolded, it shows the chosen model's. Each
model's form is built the first time it is shown or a Run reads it, and kept: choosing the model again only shows
it, with the visitor's edits; a Run trains what the form holds, shown or not.

It opens on a first Run that teaches: LCR on MovieLens 100K learns for about half a minute, then
overfits, and early stopping puts back its best iterate. Beside the plots, sentences of
:mod:`~cofiviz.background.run_story` say why validation and test curves differ in height, when the model
overfits, and why the run ended; the table of iterations fills as the run goes, the newest first. The page
opens without its figures and that table, which are most of its document: a run's first rows make them (a run
waiting in the queue has none yet), so that a class opening the page together waits for no figure that has nothing
to show yet.

``panel serve apps/monitor.py`` serves it; in JupyterLab, ``TrainingMonitor()`` shows it inline
(updates are then applied directly; uploading there needs ``pn.extension("filedropper")``).
"""

from __future__ import annotations

import math
import threading
import time
from functools import partial

import numpy as np
import pandas as pd
import panel as pn
import param

from ..background.offered import DATASETS
from ..background.training_process import COLUMNS, METRICS, PARTS, TrainingJob
from ..models.registry import get_model_class
from ..protocols import OFFERED
from ._shared import BoundedInput, model_names
from .model_form import bounded_label, check_param, model_form_widgets
from .monitor_run import SCORED, MonitorRun, empty_frame, queue_text
from .theme import alert, flow, side_by_side
from .upload import UPLOAD, UPLOAD_LIMIT_MB, read_upload, upload_widget

__all__ = ["TrainingMonitor", "UPLOAD", "UPLOAD_LIMIT_MB", "model_form_widgets", "read_upload"]

PART_COLORS = {"train": "#4c72b0", "valid": "#55a868", "test": "#c44e52"}


class TrainingMonitor(pn.viewable.Viewer):
    """Choose data, protocol and model; Run trains in a worker process and plots live.

    The page of a :class:`~.monitor_run.MonitorRun` (:attr:`training`), which it starts and stops and whose
    parameters it draws.
    """

    # the first Run: LCR on MovieLens 100K, from the form its class declares (``LCR.first_run``)
    data = param.Selector(default="MovieLens 100K", objects=[*DATASETS, UPLOAD],
                          doc="Data set (or a file you upload).")
    protocol = param.Selector(default="weak", objects=list(OFFERED), doc="Evaluation protocol.")
    n = param.Integer(default=50, bounds=(1, 100), doc="N: training ratings per user (weak protocols).")
    model = param.Selector(default="lcr", objects=["lcr"], doc="Model to train.")
    max_iter = param.Integer(default=300, bounds=(1, 10_000), doc="Iterations at most.")
    budget = param.Integer(default=60, bounds=(5, 3600),
                           doc="Seconds Tune may search the model's settings on the validation part before it trains.")

    #: the labels of the bounded inputs
    _BOUNDED = {"n": "N", "max_iter": "Max iter", "budget": "Tune budget (s)"}
    #: the inputs whose tooltip says more than their label (each tooltip is two more models in every session)
    _EXPLAINED = ("n", "budget")

    def __init__(self, **params):
        names = model_names()
        wanted = params.pop("model", None)   # any registered model, known only once the list is filled in
        # the protocols offered now, a protocol registered after this module was imported among them
        type(self).param.protocol.objects = list(OFFERED)
        super().__init__(**params)
        self.param.model.objects = names
        if self.model not in names:
            self.model = names[0]
        self._error = alert("", alert_type="danger", visible=False, sizing_mode="stretch_width",
                            css_classes=["cofiviz-monitor-error"])
        self._status = pn.pane.Markdown("Ready.", css_classes=["cofiviz-monitor-status"],
                                        sizing_mode="stretch_width")
        # what the curves show, in sentences (:mod:`cofiviz.background.run_story`)
        self._story = alert("", alert_type="light", visible=False, sizing_mode="stretch_width",
                            css_classes=["cofiviz-monitor-story"])
        # free entry (no start/end, which the browser would clamp silently): a value outside the bounds is set
        # to the nearest bound, and a note under the input says why
        self._bounded = {name: BoundedInput(self, name, widget=pn.widgets.IntInput, term=label,
                                            label=bounded_label(label, self.param[name].bounds),
                                            description=self.param[name].doc if name in self._EXPLAINED else None)
                         for name, label in self._BOUNDED.items()}
        self._upload = None             # the file dropper, made when "Uploaded file" is first chosen
        self._upload_box = pn.Column(sizing_mode="stretch_width", visible=False)
        self._uploaded = None
        # no tooltip on Run: shown after the click, it would lie over Tune and Stop (what a new Run does to the one
        # going on is said by the notices above the plots)
        self._run = pn.widgets.Button(label="Run", color="primary", sizing_mode="stretch_width")
        self._tune = pn.widgets.Button(label="Tune", color="success", sizing_mode="stretch_width",
                                       description="Search the model's settings on the validation part for the "
                                                   "budget's seconds, then train with the best")
        self._stop_btn = pn.widgets.Button(label="Stop", color="danger", sizing_mode="stretch_width", disabled=True)
        self._during_run = alert("", alert_type="info", visible=False, sizing_mode="stretch_width",
                                 css_classes=["cofiviz-monitor-during-run"])
        # where the run waits for a free worker (the server's queue), above the plots: seen on a phone too
        self._queue = alert("", alert_type="warning", visible=False, sizing_mode="stretch_width",
                            css_classes=["cofiviz-monitor-queue"])
        self._run.on_click(self._on_run)
        self._tune.on_click(partial(self._on_run, tune=True))
        # the tables of Tune's trials and of the iterations, made when first needed (:attr:`_trials`, :attr:`_table`)
        self._trials_box = pn.Column(sizing_mode="stretch_width")
        self._trials_widget: pn.widgets.Tabulator | None = None
        self._table_widget: pn.widgets.Tabulator | None = None
        self._stop_btn.on_click(self._on_stop)
        self._form = pn.Column(sizing_mode="stretch_width")
        self._forms: dict[str, tuple[pn.Column, dict]] = {}   # model -> (its form, its widgets), built once
        # the form's widgets are most of a page's Bokeh models: a page opens with them folded away, and they
        # are made and reach the page when it is unfolded (a Run reads the widgets, made then if need be)
        self._form_card = pn.Card(self._form, title=self.FORM_TITLE, collapsed=True, sizing_mode="stretch_width",
                                  css_classes=["cofiviz-monitor-form-card"])
        self._form_card.param.watch(self._on_form_unfolded, "collapsed")
        self._sources: list = []  # per display: the Bokeh data sources of every row and of the scored rows
        self._marks: list = []    # per display: the source of the dashed line at the iterate put back
        self._plot_boxes: list[pn.Column] = []  # per display: where its figures go once there is a curve to draw
        self._figures_lock = threading.Lock()    # a display's figures are made once
        self._table_at = -math.inf                # when the table of iterations last took a run's rows
        #: the controller: the runs, and what they produced
        self.training = MonitorRun()
        self._csv = pn.widgets.FileDownload(callback=self.training.csv_bytes, filename="training.csv",
                                            label="CSV", disabled=True, width=140)
        self._parquet = pn.widgets.FileDownload(callback=self.training.parquet_bytes,
                                                filename="training.parquet", label="Parquet", disabled=True,
                                                width=140)
        watch = self.training.param.watch
        watch(lambda e: self._show_error(e.new), "error", onlychanged=False)
        watch(lambda e: setattr(self._status, "object", e.new), "status", onlychanged=False)
        watch(self._show_queued, "queued")
        watch(lambda e: self._tell(e.new), "story")
        watch(self._show_running, "running")
        watch(self._show_trials, "trials")
        watch(self._show_tuned, "tuned")
        watch(self._show_restored, "restored")
        watch(self._show_batch, "batch")
        watch(self._clear, "started")
        watch(self._show_history, "finished")
        if wanted is not None and wanted != self.model:
            self.model = wanted          # the form's title follows (a watcher)
        else:
            self._choose_form()
        if self.data == UPLOAD:
            self._on_data()

    # ------------------------------------------------------------------ form
    #: the title of the model's form; the chosen model's name follows it, and an arrow that says whether it is folded
    FORM_TITLE = "Model parameters"

    @param.depends("model", watch=True)
    def _choose_form(self):
        """The chosen model's form: its name in the title; once the form has been unfolded, shown (built the first
        time, shown again by a visibility switch after)."""
        self._title_form()
        if self._form.objects or not self._form_card.collapsed:
            # one callback on the session's event loop (at once outside a server) changes the layout, so that
            # the browser gets the switch in one message
            pn.state.execute(self._show_form)

    def _form_of(self, model: str) -> tuple[pn.Column, dict]:
        """``(form, widgets)`` of ``model``, built the first time (at its first Run values, ``first_run``) and kept,
        so that a visitor's edits stay while another model is shown."""
        if model not in self._forms:
            cls = get_model_class(model)
            widgets = {k: w for k, w in model_form_widgets(cls).items() if k != "max_iter"}
            for name, value in cls.first_run.items():
                widgets[name].value = value
            for name, w in widgets.items():
                w.param.watch(partial(self._on_param_change, cls, name), "value")
            doc = (cls.__doc__ or "").strip().split("\n")[0]
            form = pn.Column(pn.pane.Markdown(f"**{cls.display_name()}** — {doc}"), *widgets.values(),
                             sizing_mode="stretch_width", visible=False,
                             css_classes=["cofiviz-monitor-form", f"cofiviz-form-{model}"])
            self._forms[model] = (form, widgets)
        return self._forms[model]

    @property
    def _form_widgets(self) -> dict:
        """The chosen model's widgets, by parameter name (built if the form has not been yet)."""
        return self._form_of(self.model)[1]

    def _title_form(self) -> None:
        arrow = "▸" if self._form_card.collapsed else "▾"
        self._form_card.title = f"{arrow} {self.FORM_TITLE}: {get_model_class(self.model).display_name()}"

    def _on_form_unfolded(self, event):
        self._title_form()
        if not event.new:
            pn.state.execute(self._show_form)

    def _show_form(self):
        if self._form_card.collapsed and not self._form.objects:
            return                     # folded and never unfolded: its widgets stay out of the page
        shown = self._form_of(self.model)[0]
        with pn.io.hold():
            if shown not in self._form.objects:
                self._form.append(shown)
            for form, _ in self._forms.values():
                if form.visible != (form is shown):
                    form.visible = form is shown

    def _on_param_change(self, cls, name, event):
        self._show_error(check_param(cls, name, event.new))

    @param.depends("data", watch=True)
    def _on_data(self):
        if self.data == UPLOAD and self._upload is None:
            # made on demand: the page loads FilePond's scripts only when the app asked for them
            # (``pn.extension("filedropper")``, as apps/monitor.py does)
            self._upload = upload_widget(layout="compact", sizing_mode="stretch_width",
                                         css_classes=["cofiviz-monitor-upload"])
            self._upload.param.watch(self._on_upload, "value")
            self._upload_box.objects = [self._upload, pn.pane.Markdown(
                f"A ratings file up to {UPLOAD_LIMIT_MB} MB: CSV, TSV or Parquet with user, item, rating "
                "columns.", sizing_mode="stretch_width")]
        self._upload_box.visible = self.data == UPLOAD

    def _on_upload(self, event):
        files = event.new or {}
        if not files:
            self._uploaded = None
            return
        name, content = list(files.items())[-1]
        # the widget keeps no copy of the bytes (a 50 MB file would otherwise stay in memory twice); a
        # later removal in the browser still reaches this watcher
        files.clear()
        try:
            ratings = read_upload(content, name)
        except Exception as exc:  # DataError with the row, or anything unexpected: never a traceback
            self._uploaded = None
            self._show_error(f"Upload refused: {exc}")
            self._status.object = "Ready."
            return
        self._uploaded = ratings
        self._show_error(None)
        self._status.object = (f"Uploaded **{name}**: {len(ratings):,} ratings, {ratings.n_users:,} users, "
                               f"{ratings.n_items:,} items.")

    def _show_error(self, msg: str | None):
        self._error.object = msg or ""
        self._error.visible = bool(msg)

    # ------------------------------------------------------------------ run / stop
    def _model_params(self) -> dict:
        cls = get_model_class(self.model)
        values = {}
        for name, w in self._form_widgets.items():
            msg = check_param(cls, name, w.value)
            if msg:
                raise ValueError(msg)
            values[name] = w.value
        values["max_iter"] = self.max_iter
        cls(**values)  # a parameter the model refuses is said now, before a process starts
        return values

    def _job(self, tune: bool = False) -> TrainingJob:
        """What Run (or Tune) trains, checked here; the split is made by the worker."""
        arg, extra = OFFERED[self.protocol]
        protocol_params = dict(extra)
        if arg is not None:
            protocol_params[arg] = self.n
        if self.data == UPLOAD:
            if self._uploaded is None:
                raise ValueError("Upload a ratings file first (CSV, TSV or Parquet with user, item, rating).")
            data = self._uploaded
        else:
            data = self.data
        return TrainingJob(self.model, self._model_params(), self.protocol, protocol_params, data,
                           tune_budget=float(self.budget) if tune else 0.0)

    def _on_run(self, event=None, tune: bool = False):
        """Run (or Tune): start a run, or replace the session's queued or running one with it; the same choices
        again within :data:`~.monitor_run.DOUBLE_CLICK` seconds are a double click's second click."""
        try:
            job = self._job(tune)
        except Exception as exc:
            self._show_error(f"Cannot start: {exc}")
            return
        self._show_error(None)
        n = f", N = {self.n}" if OFFERED[self.protocol].size else ""
        what = f"Tuning **{self.model}** for up to {self.budget} s, then training" if tune else \
            f"Training **{self.model}**"
        if self.training.submit(job, f"{what} on {self.data} ({self.protocol}{n}) …") != "ignored":
            if tune or self._trials_widget is not None:
                self._trials.visible = tune
            self._during_run.visible = False

    def _on_stop(self, event=None):
        self.training.stop()

    def stop_and_wait(self, timeout: float = 30.0) -> bool:
        """Ask the run to stop and wait for it; True when no run is going on any more."""
        return self.training.stop_and_wait(timeout)

    @property
    def history(self) -> pd.DataFrame:
        """The iterations streamed so far (a copy)."""
        return self.training.history

    # ------------------------------------------------------------------ drawing the controller's parameters
    #: rows the table shows while a run goes, the newest first (a fast model would otherwise keep the browser busy
    #: redrawing thousands of rows); the whole run replaces them when it ends
    LIVE_TABLE_ROWS = 100
    #: seconds between two updates of the table while a run goes (each sends its rows again; the curves take every
    #: batch)
    LIVE_TABLE_EVERY = 5.0

    def _clear(self, event=None):
        """A run started: empty plots and table (on the event loop: Bokeh models change under the lock)."""
        self._table_at = -math.inf        # the run's first rows go into the table at once
        for pair in self._sources:
            for source in pair:
                source.data = {c: np.array([], dtype=float) for c in COLUMNS}
        for marks in self._marks:
            marks.data = {"x": []}
        self._set_table(empty_frame())

    def _show_running(self, event):
        """Stop while a run is on; Run and Tune stay enabled (a new one replaces the run queued or running); where the
        curves will be, the page says what brings them (:meth:`_show_placeholder`)."""
        running = event.new
        self._stop_btn.disabled = not running
        self._show_placeholder()
        if running:
            self._csv.disabled = self._parquet.disabled = True
        else:
            self._during_run.visible = False

    def _show_queued(self, event):
        """The run's place in the queue, while it waits; the status line says the same."""
        if event.new is None:
            self._queue.visible = False
            return
        self._queue.object = queue_text(event.new)
        self._queue.visible = True

    @property
    def _trials(self) -> pn.widgets.Tabulator:
        """The table of Tune's trials, made at the first Tune (a page that never tunes has none)."""
        if self._trials_widget is None:
            self._trials_widget = pn.widgets.Tabulator(pd.DataFrame(), disabled=True, show_index=False, height=200,
                                                       sizing_mode="stretch_width", pagination=None, visible=False)
            self._trials_box.objects = [self._trials_widget]
        return self._trials_widget

    def _show_trials(self, event):
        if event.new or self._trials_widget is not None:
            self._trials.value = pd.DataFrame(event.new)

    def _show_tuned(self, event):
        """Put the chosen setting into the model's form, so that the next Run trains it again."""
        if event.new is None:
            return
        params = event.new["params"]
        for name, w in self._form_widgets.items():
            if name in params and params[name] != w.value:
                try:
                    w.value = params[name]
                except Exception:  # a value the widget cannot show is still the one trained
                    pass
        if "max_iter" in params:
            self.max_iter = int(params["max_iter"])

    def _show_restored(self, event):
        """The dashed line at the iterate put back (a new run's start clears it, in :meth:`_clear`)."""
        if event.new is None:
            return
        for marks in self._marks:
            marks.data = {"x": [event.new]}

    def _show_batch(self, event):
        df = event.new
        if df is None or not len(df):
            return
        drawn = len(self._sources)
        self._draw_figures()            # the run's first rows: figures made now draw every row so far, these too
        scored = df[df[SCORED].notna().any(axis=1)]
        new, new_scored = ({c: d[c].to_numpy(dtype=float) for c in COLUMNS} for d in (df, scored))
        for every, only_scored in self._sources[:drawn]:
            every.stream(new)
            if len(scored):
                only_scored.stream(new_scored)
        if time.monotonic() - self._table_at >= self.LIVE_TABLE_EVERY:
            self._table_at = time.monotonic()
            self._set_table(self._table_rows(self.training.history.tail(self.LIVE_TABLE_ROWS)))

    def _set_table(self, frame: pd.DataFrame) -> None:
        """Show ``frame`` in the table of iterations, unless it shows it already.

        The same rows set again still reach the browser's table model, and Panel then takes that change for an edit
        made in the browser: read a moment later, after newer rows came, the "edit" no longer fits the table and
        fails. A frame that changes nothing is not set.
        """
        if self._table_widget is None and not len(frame):
            return                       # no table yet, and nothing to show in one
        current = self._table.value
        if current is not None and current.shape == frame.shape and current.equals(frame):
            return
        self._table.value = frame

    @property
    def _table(self) -> pn.widgets.Tabulator:
        """The table of iterations, made with the figures or at the first rows it shows."""
        if self._table_widget is None:
            self._table_widget = pn.widgets.Tabulator(empty_frame(), disabled=True, show_index=False, height=260,
                                                      sizing_mode="stretch_width", pagination=None)
        return self._table_widget

    @staticmethod
    def _table_rows(frame: pd.DataFrame) -> pd.DataFrame:
        """What the table of iterations shows of ``frame``: rounded, whole iteration numbers, the newest first."""
        return frame.round(5).astype({"iteration": int}).iloc[::-1].reset_index(drop=True)

    def _show_history(self, event=None):
        frame = self.training.history
        self._set_table(self._table_rows(frame))
        self._csv.disabled = self._parquet.disabled = len(frame) == 0

    @param.depends("data", "protocol", "n", "model", watch=True)
    def _on_choice_during_run(self):
        """A choice made while a run trains: said what becomes of it (the run keeps what it started with)."""
        if self.training.busy:
            self._during_run.object = ("A run is in progress: it goes on with the data, protocol and model it "
                                       "started with. What you choose now applies to the next Run, which "
                                       "replaces it.")
            self._during_run.visible = True

    def _tell(self, notes: list[str]):
        text = "\n\n".join(notes)
        if text != self._story.object:
            self._story.object = text
        self._story.visible = bool(notes)

    # ------------------------------------------------------------------ plots
    #: what a page shows where its curves will be, until a run starts
    NO_CURVES = ("Press **Run** (on a narrow screen, under the menu button at the top left): the curves are drawn "
                 "here once a run starts, NDCG@10, AP and GAP on the train, validation and test parts, the training "
                 "loss and the seconds per iteration.")
    #: what it shows once Run is pressed, while the run waits in the queue or starts
    CURVES_TO_COME = ("Your run's curves are drawn here from its first iterations: NDCG@10, AP and GAP on the train, "
                      "validation and test parts, the training loss and the seconds per iteration.")

    def _placeholder_text(self) -> str:
        """The text where the curves will be: how to get them, or, once a run is pressed, that they are coming."""
        return self.CURVES_TO_COME if self.training.running else self.NO_CURVES

    def _show_placeholder(self) -> None:
        """Say in every display still without figures what :meth:`_placeholder_text` says now."""
        text = self._placeholder_text()
        for box in self._plot_boxes:
            first = box.objects[0] if box.objects else None
            if isinstance(first, pn.pane.Markdown) and first.object != text:
                first.object = text

    def _plot_box(self) -> pn.Column:
        """Where one display's figures go: made at once when there are curves to draw, otherwise at a run's first
        rows.

        The five figures and the table of iterations are most of a page's Bokeh models, and a server builds and
        sends a new session's whole document on its one event loop: a page without curves yet opens without them,
        so that a class arriving together does not queue behind figures that have nothing to show.
        """
        box = pn.Column(pn.pane.Markdown(self._placeholder_text(), css_classes=["cofiviz-monitor-no-curves"],
                                         sizing_mode="stretch_width"), sizing_mode="stretch_width")
        self._plot_boxes.append(box)
        if len(self.training.history):
            self._draw_figures()
        return box

    def _draw_figures(self) -> None:
        """Put the figures, the table of iterations and the downloads into every display that has none yet.

        Once per display, under a lock: outside a server a run's rows arrive on its follower's thread while another
        thread may make a new display, and a widget put into the same page twice, its first copy then replaced,
        would no longer reach the browser (the downloads would stay disabled).
        """
        with self._figures_lock:
            for box in self._plot_boxes:
                if not box.objects or not isinstance(box.objects[0], pn.FlexBox):
                    # made without the session's design, as at the page's first render, so that the template styles
                    # them as the rest of the page (made under the design, a pane would bring its whole
                    # stylesheet: Bootstrap's larger headings)
                    with pn.config.set(design=None):
                        box.objects = [flow(*(pn.pane.Bokeh(f) for f in self._make_figures())),
                                       pn.pane.Markdown("#### Results"), self._table,
                                       pn.Row(self._csv, self._parquet)]

    def _make_figures(self) -> list:
        """Five Bokeh figures drawing from two new ColumnDataSources that every flush streams into: every
        iteration (loss, seconds) and the iterations scored (metrics).

        Plain Bokeh streaming (``ColumnDataSource.stream``) sends only the new rows to the browser, so a
        redraw costs next to nothing on the shared event loop, whatever the number of iterations. Each curve is a
        line and its points, added as bare glyphs: the browser derives their looks when not selected or muted
        (the page has no selection tool and no legend to mute with), which ``figure.line`` would send as two more
        models a curve.
        """
        from bokeh.models import ColumnDataSource, HoverTool, Legend, LegendItem, Line, Scatter
        from bokeh.plotting import figure

        frame = self.training.history
        source = ColumnDataSource({c: frame[c].to_numpy() for c in COLUMNS})
        done = frame[frame[SCORED].notna().any(axis=1)]
        scored = ColumnDataSource({c: done[c].to_numpy() for c in COLUMNS})
        self._sources.append((source, scored))
        marks = ColumnDataSource({"x": [] if self.training.restored is None else [self.training.restored]})
        self._marks.append(marks)

        def curve(fig, data, column: str, color: str):
            """A line and its points; the line's renderer (what a legend names)."""
            line = fig.add_glyph(data, Line(x="iteration", y=column, line_color=color, line_width=2))
            fig.add_glyph(data, Scatter(x="iteration", y=column, fill_color=color, line_color=color, size=4))
            return line

        figs = []
        for metric in METRICS:
            fig = figure(title=metric.upper(), height=260, sizing_mode="stretch_width", x_axis_label="iteration",
                         toolbar_location=None, tools="")
            lines = [curve(fig, scored, f"{part}_{metric}", PART_COLORS[part]) for part in PARTS]
            fig.add_tools(HoverTool(tooltips=[("iteration", "@iteration")] + [
                (part, f"@{{{part}_{metric}}}{{0.0000}}") for part in PARTS]))
            fig.vspan(x="x", source=marks, line_color="#444444", line_dash="dashed", line_width=1.5)
            # under the plot: never over the newest points
            fig.add_layout(Legend(items=[LegendItem(label=part, renderers=[line]) for part, line in zip(PARTS, lines)],
                                  orientation="horizontal"), "below")
            figs.append(fig)
        for col, title, color in (("loss", "training loss", "#8172b2"), ("seconds", "seconds per iteration",
                                                                          "#937860")):
            fig = figure(title=title, height=220, sizing_mode="stretch_width", x_axis_label="iteration",
                         toolbar_location=None, tools="")
            curve(fig, source, col, color)
            fig.add_tools(HoverTool(tooltips=[("iteration", "@iteration"), (col, f"@{col}{{0.0000}}")]))
            figs.append(fig)
        return figs

    def controls(self) -> pn.Column:
        """Data, protocol, model, Run and Stop, the model's form folded away (a served page puts them in its
        sidebar)."""
        return pn.Column(
            pn.widgets.Select.from_param(self.param.data, label="Data", description=None,
                                      sizing_mode="stretch_width"),
            self._upload_box,
            pn.widgets.Select.from_param(self.param.protocol, label="Protocol", description=None,
                                      sizing_mode="stretch_width"),
            self._bounded["n"],
            pn.widgets.Select.from_param(self.param.model, label="Model", description=None,
                                      sizing_mode="stretch_width"),
            self._bounded["max_iter"], self._bounded["budget"],
            pn.Row(self._run, self._tune, self._stop_btn, sizing_mode="stretch_width"), self._during_run,
            self._form_card, sizing_mode="stretch_width")

    def results(self) -> pn.Column:
        """Messages, status, the live plots, the table of iterations and the downloads."""
        return pn.Column(self._error, self._queue, self._status, self._story, self._trials_box, self._plot_box(),
                         sizing_mode="stretch_width")

    def __panel__(self):
        return side_by_side([self.controls()], [self.results()])
