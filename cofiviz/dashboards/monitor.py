"""Training monitor: pick data, protocol, model and parameters, then watch the model train live.

Each browser session owns one :class:`TrainingMonitor`; its training runs in a worker thread of that
session (never on the server's event loop) and streams its iterations into the plots through
``doc.add_next_tick_callback`` (the thread-safe way into a Bokeh document): rows are batched at most
every 0.5 s and appended with ``ColumnDataSource.stream``, which sends only the new rows, so one
session's training costs the shared event loop next to nothing: NDCG@10,
AP and GAP on train, validation and test, the training loss and the seconds per iteration. Stop takes
effect after the current iteration (the fit callback returns True); closing the tab stops the worker
(``pn.state.on_session_destroyed``). Data sets and splits are shared read-only between sessions
through ``pn.cache``; everything else lives in the Viewer instance. ``panel serve apps/monitor.py``
serves it; in JupyterLab, ``TrainingMonitor()`` shows it inline (updates are then applied directly).
"""

from __future__ import annotations

import io
import os
import tempfile
import threading
import time
from functools import partial

import numpy as np
import pandas as pd
import panel as pn
import param

from ._shared import KERNEL_LOCK, SessionWorker, cached_split, kernels_need_lock, model_names
from .overview import DATASETS, load_dataset

__all__ = ["TrainingMonitor", "UPLOAD", "model_form_widgets", "read_upload"]

UPLOAD = "Uploaded file"
METRICS = ("ndcg@10", "ap", "gap")
PARTS = ("train", "valid", "test")
COLUMNS = ["iteration", "seconds", "elapsed", "loss"] + [f"{p}_{m}" for p in PARTS for m in METRICS]
PART_COLORS = {"train": "#4c72b0", "valid": "#55a868", "test": "#c44e52"}
#: protocols offered, with the parameter "N" maps to (None: N unused) and fixed extras
PROTOCOL_CHOICES = {
    "weak": ("n_train", {"n_valid": 5, "min_test": 5}),
    "lcr-weak": ("n_train", {}),
    "cofirank-weak": ("n_train", {}),
    "fixed-ratio": (None, {"valid_ratio": 0.1}),
}


def read_upload(data: bytes, filename: str):
    """Read an uploaded ratings file with :func:`cofiviz.datasets.read` through a temporary file.

    Raises
    ------
    cofiviz.errors.DataError
        The file is malformed (the message says which rows and why).
    """
    from ..datasets import read
    from ..errors import DataError

    name = os.path.basename(filename or "upload.csv")
    if not data:
        raise DataError(f"{name}: the file is empty")
    suffix = os.path.splitext(name)[1].lower() or ".csv"
    with tempfile.TemporaryDirectory(prefix="cofiviz-upload-") as tmp:
        path = os.path.join(tmp, f"upload{suffix}")
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            return read(path, name=name)
        except Exception as exc:  # name the visitor's file, not our temporary copy
            raise DataError(str(exc).replace(path, name)) from None


def model_form_widgets(model_cls) -> dict:
    """One widget per model parameter, generated from its ``param`` declaration (type, default, bounds, doc).

    Numbers get free-entry inputs (so that an out-of-range value reaches the validation and its message
    instead of being silently clamped); the bounds are shown in the label.
    """
    widgets = {}
    for name in model_cls.param_names():
        p = model_cls.param[name]
        label = name
        bounds = getattr(p, "bounds", None)
        if bounds is not None and bounds != (None, None):
            lo, hi = bounds
            label = f"{name} [{'−∞' if lo is None else lo} … {'∞' if hi is None else hi}]"
        desc = (p.doc or "").strip() or None
        if isinstance(p, param.Boolean):
            w = pn.widgets.Checkbox(label=label, value=bool(p.default))
        elif isinstance(p, param.Selector) and not isinstance(p, param.Boolean):
            objs = list(p.objects) if not isinstance(p.objects, dict) else list(p.objects.values())
            w = pn.widgets.Select(label=label, options=objs, value=p.default)
        elif isinstance(p, param.Integer):
            w = pn.widgets.IntInput(label=label, value=p.default)
        elif isinstance(p, param.Number):
            w = pn.widgets.FloatInput(label=label, value=p.default)
        else:
            w = pn.widgets.TextInput(label=label, value="" if p.default is None else str(p.default))
        w.description = desc
        widgets[name] = w
    return widgets


def _check_param(model_cls, name: str, value) -> str | None:
    """A readable message when ``value`` is not valid for parameter ``name`` of ``model_cls``, else None."""
    p = model_cls.param[name]
    bounds = getattr(p, "bounds", None)
    if isinstance(p, param.Number) and value is None:
        return f"{name}: a number is required"
    if isinstance(p, param.Number) and bounds is not None and isinstance(value, (int, float)):
        lo, hi = bounds
        incl = getattr(p, "inclusive_bounds", (True, True))
        if lo is not None and (value < lo or (value == lo and not incl[0])):
            return f"{name} = {value} is below its lower bound {lo}"
        if hi is not None and (value > hi or (value == hi and not incl[1])):
            return f"{name} = {value} is above its upper bound {hi}"
    return None


def _empty_frame() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="float64") for c in COLUMNS})


class TrainingMonitor(pn.viewable.Viewer):
    """Choose data, protocol and model; Run trains in a per-session worker thread and plots live."""

    data = param.Selector(default="Synthetic: small (300 users, 200 items)", objects=[*DATASETS, UPLOAD],
                          doc="Data set (or a file you upload).")
    protocol = param.Selector(default="weak", objects=list(PROTOCOL_CHOICES), doc="Evaluation protocol.")
    n = param.Integer(default=10, bounds=(1, 100), doc="N: training ratings per user (weak protocols).")
    model = param.Selector(default="regsvd", objects=["regsvd"], doc="Model to train.")
    max_iter = param.Integer(default=30, bounds=(1, 10_000), doc="Iterations at most.")

    def __init__(self, **params):
        names = model_names()
        wanted = params.pop("model", None)   # any registered model, known only once the list is filled in
        super().__init__(**params)
        self.param.model.objects = names
        if self.model not in names:
            self.model = "regsvd" if "regsvd" in names else names[0]
        self._error = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width",
                                    css_classes=["cofiviz-monitor-error"])
        self._status = pn.pane.Markdown("Ready.", css_classes=["cofiviz-monitor-status"],
                                        sizing_mode="stretch_width")
        self._upload = pn.widgets.FileInput(accept=".csv,.tsv,.txt,.dat,.data,.parquet,.pq", multiple=False,
                                            visible=False)
        self._upload.param.watch(self._on_upload, "value")
        self._uploaded = None
        self._run = pn.widgets.Button(label="Run", color="primary", width=100)
        self._stop_btn = pn.widgets.Button(label="Stop", color="danger", width=100, disabled=True)
        self._run.on_click(self._on_run)
        self._stop_btn.on_click(self._on_stop)
        self._form = pn.Column(sizing_mode="stretch_width")
        self._form_widgets: dict = {}
        self._sources: list = []  # the Bokeh data sources of the figures shown (one per display)
        self._pending: list[dict] = []
        self._pending_lock = threading.Lock()
        self._last_flush = 0.0
        self._frame = _empty_frame()
        self._table = pn.widgets.Tabulator(_empty_frame(), disabled=True, show_index=False, height=260,
                                           sizing_mode="stretch_width", pagination=None)
        self._csv = pn.widgets.FileDownload(callback=self._csv_bytes, filename="training.csv", label="CSV",
                                            disabled=True, width=140)
        self._parquet = pn.widgets.FileDownload(callback=self._parquet_bytes, filename="training.parquet",
                                                label="Parquet", disabled=True, width=140)
        self._work = SessionWorker("train")
        if wanted is not None and wanted != self.model:
            self.model = wanted          # builds the form (a watcher)
        else:
            self._build_form()

    # ------------------------------------------------------------------ form
    @param.depends("model", watch=True)
    def _build_form(self):
        from ..models.base import get_model_class

        cls = get_model_class(self.model)
        widgets = {k: w for k, w in model_form_widgets(cls).items() if k not in ("max_iter",)}
        for name, w in widgets.items():
            w.param.watch(partial(self._on_param_change, name), "value")
        self._form_widgets = widgets
        doc = (cls.__doc__ or "").strip().split("\n")[0]
        self._form.objects = [pn.pane.Markdown(f"**{cls.__name__}** — {doc}"), *widgets.values()]

    def _on_param_change(self, name, event):
        from ..models.base import get_model_class

        msg = _check_param(get_model_class(self.model), name, event.new)
        self._show_error(msg)

    @param.depends("data", watch=True)
    def _on_data(self):
        self._upload.visible = self.data == UPLOAD

    def _on_upload(self, event):
        if not event.new:
            return
        try:
            self._uploaded = read_upload(event.new, self._upload.filename or "upload.csv")
        except Exception as exc:  # DataError with the row, or anything unexpected: never a traceback
            self._uploaded = None
            self._show_error(f"Could not read {self._upload.filename!r}: {exc}")
            return
        self._show_error(None)
        self._status.object = f"Uploaded **{self._upload.filename}**: {self._uploaded!r}"

    def _show_error(self, msg: str | None):
        self._error.object = msg or ""
        self._error.visible = bool(msg)

    # ------------------------------------------------------------------ run / stop
    def _model_params(self) -> dict:
        from ..models.base import get_model_class

        cls = get_model_class(self.model)
        values = {}
        for name, w in self._form_widgets.items():
            msg = _check_param(cls, name, w.value)
            if msg:
                raise ValueError(msg)
            values[name] = w.value
        values["max_iter"] = self.max_iter
        return values

    def _split(self):
        arg, extra = PROTOCOL_CHOICES[self.protocol]
        params = dict(extra)
        if arg is not None:
            params[arg] = self.n
        if self.data == UPLOAD:
            if self._uploaded is None:
                raise ValueError("Upload a ratings file first (CSV, TSV or Parquet with user, item, rating).")
            from .. import protocols

            return protocols.make(self.protocol, self._uploaded, **params)
        return cached_split(self.data, self.protocol, tuple(sorted(params.items())))

    def _on_run(self, event=None):
        if self._work.busy:
            return
        from ..models.base import get_model_class

        try:
            model = get_model_class(self.model)(**self._model_params())
            split = self._split()
        except Exception as exc:
            self._show_error(f"Cannot start: {exc}")
            return
        self._show_error(None)
        self._work.bind()
        self._frame = _empty_frame()
        # Bokeh models change only under the document lock (Panel may run this handler in a thread pool)
        self._work.schedule(self._clear_sources)
        with self._pending_lock:
            self._pending, self._last_flush = [], 0.0
        self._table.value = _empty_frame()
        self._csv.disabled = self._parquet.disabled = True
        self._run.disabled, self._stop_btn.disabled = True, False
        self._status.object = f"Training **{self.model}** on {self.data} ({self.protocol}, N = {self.n}) …"
        self._work.start(self._train, model, split)

    def _clear_sources(self):
        for source in self._sources:
            source.data = {c: np.array([], dtype=float) for c in COLUMNS}

    def _on_stop(self, event=None):
        self._work.stop.set()
        self._status.object = "Stopping after the current iteration …"

    def stop_and_wait(self, timeout: float = 30.0) -> bool:
        """Ask the worker to stop and wait for it; True when no worker is running any more."""
        self._work.stop.set()
        return self._work.join(timeout)

    # ------------------------------------------------------------------ the worker thread

    def _train(self, model, split):
        from ..evaluation import mean_metrics

        parts = {"train": split.train, "valid": split.valid, "test": split.candidates("test")}
        threshold = 4.0

        def on_iteration(info):
            row = {"iteration": info.iteration, "seconds": info.seconds, "elapsed": info.elapsed,
                   "loss": info.loss}
            for part, ratings in parts.items():
                if ratings is None or len(ratings) == 0:
                    vals = {m: np.nan for m in METRICS}
                else:
                    vals = mean_metrics(info.model, ratings, list(METRICS), train=split.train, threshold=threshold)
                for m in METRICS:
                    row[f"{part}_{m}"] = float(vals.get(m, np.nan))
            self._queue_row(row)
            time.sleep(self.YIELD_SECONDS)  # let the event loop threads take the GIL between iterations
            return self._work.stop.is_set()

        error = None
        try:
            # numba's thread count is per thread: leave one core to the server's event loop
            import numba

            numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS - 1))
        except Exception:
            pass
        try:
            if kernels_need_lock():
                with KERNEL_LOCK:
                    model.fit(split.train, split.valid, callbacks=[on_iteration])
            else:
                model.fit(split.train, split.valid, callbacks=[on_iteration])
            reason = model.stopped_reason_
        except Exception as exc:  # shown in the page
            error, reason = f"Training failed: {exc}", "failed"
        self._work.schedule(self._finish, reason, error)

    def _queue_row(self, row: dict):
        """Worker side: queue one iteration's row; schedule a flush at most every FLUSH_EVERY seconds, so a
        fast model cannot flood the event loop (each flush redraws every plot once)."""
        with self._pending_lock:
            self._pending.append(row)
            now = time.monotonic()
            due = now - self._last_flush >= self.FLUSH_EVERY
            if due:
                self._last_flush = now
        if due:
            self._work.schedule(self._flush)

    # ------------------------------------------------------------------ on the event loop
    FLUSH_EVERY = 0.5
    YIELD_SECONDS = 0.003

    def _flush(self):
        with self._pending_lock:
            rows, self._pending = self._pending, []
        if not rows:
            return
        df = pd.DataFrame(rows, columns=COLUMNS)
        self._frame = pd.concat([self._frame, df], ignore_index=True) if len(self._frame) else df
        new = {c: df[c].to_numpy(dtype=float) for c in COLUMNS}
        for source in self._sources:
            source.stream(new)
        row = rows[-1]
        self._status.object = (f"Iteration **{row['iteration']}** of {self.max_iter}: loss {row['loss']:.4g}, "
                               f"{row['seconds']:.3f} s; test NDCG@10 {row['test_ndcg@10']:.4f}")

    def _finish(self, reason: str, error: str | None):
        self._flush()
        self._run.disabled, self._stop_btn.disabled = False, True
        if error:
            self._show_error(error)
        n = len(self._frame)
        self._status.object = f"Finished after **{n}** iteration(s): {reason}."
        self._table.value = self._frame.round(5).astype({"iteration": int})
        self._csv.disabled = self._parquet.disabled = n == 0

    def _csv_bytes(self):
        return io.BytesIO(self._frame.to_csv(index=False).encode())

    def _parquet_bytes(self):
        buf = io.BytesIO()
        self._frame.to_parquet(buf, index=False)
        buf.seek(0)
        return buf

    @property
    def history(self) -> pd.DataFrame:
        """The iterations streamed so far (a copy)."""
        return self._frame.copy()

    # ------------------------------------------------------------------ plots
    def _make_figures(self) -> list:
        """Five Bokeh figures drawing from one new ColumnDataSource that every flush streams into.

        Plain Bokeh streaming (``ColumnDataSource.stream``) sends only the new rows to the browser, so a
        redraw costs next to nothing on the shared event loop, whatever the number of iterations.
        """
        from bokeh.models import ColumnDataSource, HoverTool
        from bokeh.plotting import figure

        source = ColumnDataSource({c: self._frame[c].to_numpy() for c in COLUMNS})
        self._sources.append(source)
        figs = []
        for metric in METRICS:
            fig = figure(title=metric.upper(), height=260, sizing_mode="stretch_width", x_axis_label="iteration",
                         toolbar_location=None, tools="")
            for part in PARTS:
                fig.line("iteration", f"{part}_{metric}", source=source, color=PART_COLORS[part], line_width=2,
                         legend_label=part)
                fig.scatter("iteration", f"{part}_{metric}", source=source, color=PART_COLORS[part], size=4)
            fig.add_tools(HoverTool(tooltips=[("iteration", "@iteration")] + [
                (part, f"@{{{part}_{metric}}}{{0.0000}}") for part in PARTS]))
            fig.legend.location = "bottom_right"
            figs.append(fig)
        for col, title, color in (("loss", "training loss", "#8172b2"), ("seconds", "seconds per iteration",
                                                                          "#937860")):
            fig = figure(title=title, height=220, sizing_mode="stretch_width", x_axis_label="iteration",
                         toolbar_location=None, tools="")
            fig.line("iteration", col, source=source, color=color, line_width=2)
            fig.scatter("iteration", col, source=source, color=color, size=4)
            fig.add_tools(HoverTool(tooltips=[("iteration", "@iteration"), (col, f"@{col}{{0.0000}}")]))
            figs.append(fig)
        return figs

    def __panel__(self):
        controls = pn.Param(self.param, parameters=["data", "protocol", "n", "model", "max_iter"], show_name=False,
                            widgets={"data": pn.widgets.Select, "protocol": pn.widgets.Select,
                                     "n": pn.widgets.IntInput, "model": pn.widgets.Select,
                                     "max_iter": pn.widgets.IntInput},
                            sizing_mode="stretch_width")
        figs = self._make_figures()
        plots = pn.Column(
            pn.Row(*(pn.pane.Bokeh(f, sizing_mode="stretch_width") for f in figs[:3]), sizing_mode="stretch_width"),
            pn.Row(*(pn.pane.Bokeh(f, sizing_mode="stretch_width") for f in figs[3:]), sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
        left = pn.Column(controls, self._upload, pn.pane.Markdown("#### Model parameters"), self._form,
                         pn.Row(self._run, self._stop_btn), width=340)
        right = pn.Column(self._status, plots, pn.pane.Markdown("#### Results"), self._table,
                          pn.Row(self._csv, self._parquet), sizing_mode="stretch_width")
        return pn.Column(self._error, pn.Row(left, right, sizing_mode="stretch_width"), sizing_mode="stretch_width")
