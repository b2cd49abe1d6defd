"""Helpers the dashboards share: the model names, kernel safety, the per-session worker and bounded inputs."""

from __future__ import annotations

import os
import threading
import weakref
from functools import partial

import numba
import panel as pn
import param

from ..models import available_models

__all__ = ["model_names", "use_thread_safe_numba", "SessionWorker", "clamp", "BoundedInput"]

def use_thread_safe_numba() -> str:
    """Ask numba for the thread-safe ``omp`` layer (effective only before the first parallel kernel runs).

    Returns the configured layer name. :func:`cofiviz.background.cells.kernels_need_lock` tells whether the layer
    actually in use still needs :data:`~cofiviz.background.cells.KERNEL_LOCK`.
    """
    # idle OpenMP threads sleep instead of spinning: on a small machine spinning workers starve the
    # server's event loop (read by libgomp when it loads, so set before the first parallel kernel)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if numba.config.THREADING_LAYER in ("default", "workqueue"):
        numba.config.THREADING_LAYER = "omp"
    return numba.config.THREADING_LAYER


def model_names() -> list[str]:
    """The registered model names (every model of :mod:`cofiviz.models`)."""
    return available_models()


class SessionWorker:
    """One background thread per browser session, and the thread-safe way back into its document.

    Long work (training, computing cells) is followed from :meth:`start`'s thread, never on the server's
    event loop; the thread hands results back with :meth:`schedule`, which queues ``fn`` on the session's
    event loop (``doc.add_next_tick_callback``, under the document lock) or calls it at once outside a
    server (in JupyterLab).

    Starting is atomic: :meth:`claim` takes the worker (a compare-and-set under a lock), so of two
    clicks arriving together on two server threads exactly one starts work; the claim lasts until the
    work's last callback calls :meth:`release`. :attr:`stop` is the work's stop flag: the Stop button
    sets it, and so does the end of the browser session (``pn.state.on_session_destroyed``), which
    also sets :attr:`closed` so that the work can end its worker process outright.
    """

    def __init__(self, name: str):
        self.name = name
        self.stop = threading.Event()
        self.closed = threading.Event()
        self.thread: threading.Thread | None = None
        self._doc = None
        self._hooked = False
        self._lock = threading.Lock()
        self._claimed = False

    @property
    def busy(self) -> bool:
        """True from a successful :meth:`claim` until :meth:`release`, and while the thread runs."""
        return self._claimed or (self.thread is not None and self.thread.is_alive())

    def claim(self) -> bool:
        """Take the worker for one piece of work: True for exactly one caller until :meth:`release`."""
        with self._lock:
            if self.busy:
                return False
            self._claimed = True
            return True

    def release(self) -> None:
        """Give the worker back (the work's last callback, or a start that did not happen)."""
        with self._lock:
            self._claimed = False

    def bind(self) -> None:
        """Attach to the current session's document (done by :meth:`start`; call it first to
        :meth:`schedule` before the thread starts)."""
        self._doc = pn.state.curdoc
        if self._doc is not None and self._doc.session_context is not None and not self._hooked:
            try:
                pn.state.on_session_destroyed(self._on_destroyed)
                self._hooked = True
            except Exception as exc:  # never block the work on the hook; the Stop button still works
                print(f"cofiviz {self.name}: could not watch the session's end: {exc}")

    def start(self, target, *args) -> None:
        """Run ``target(*args)`` in a new daemon thread, bound to the current session's document.

        The caller holds the claim (:meth:`claim`); ``target`` releases it through its last callback.
        """
        self.bind()
        self.stop.clear()
        self.thread = threading.Thread(target=target, args=args, daemon=True, name=f"cofiviz-{self.name}")
        self.thread.start()

    def _on_destroyed(self, session_context) -> None:
        """The browser tab closed (Bokeh destroyed the session): stop this session's work."""
        self.closed.set()
        self.stop.set()

    def schedule(self, fn, *args) -> None:
        """Run ``fn(*args)`` on the session's event loop, or now when there is no server session."""
        doc = self._doc
        if doc is not None and doc.session_context is not None:
            try:
                doc.add_next_tick_callback(partial(fn, *args))
            except Exception:  # the session is gone: stop quietly
                self.closed.set()
                self.stop.set()
        else:
            fn(*args)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it is not running any more."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not (self.thread is not None and self.thread.is_alive())


def clamp(value, bounds, label: str) -> tuple[object, str | None]:
    """``value`` kept within ``bounds`` (``None``: unbounded on that side), and a note when it was not: the value to
    use and ``None``, or the nearest bound and a sentence that says why (``"γ = 99 is above its upper bound 3;
    set to 3."``)."""
    lo, hi = bounds
    if lo is not None and value < lo:
        return lo, f"{label} = {value:g} is below its lower bound {lo:g}; set to {lo:g}."
    if hi is not None and value > hi:
        return hi, f"{label} = {value:g} is above its upper bound {hi:g}; set to {hi:g}."
    return value, None


class BoundedInput(pn.viewable.Viewer):
    """A number a user types, for a bounded parameter of a page, with a note beside it when it is refused.

    A value within the parameter's bounds sets the parameter; one outside sets it to the nearest bound, shows the
    bound in the input, and the note under the input says what was typed and what is used, so that the plot
    always shows what the input shows. An empty input is reset to the parameter's value with a note too. The
    input follows the parameter when the page changes it. The widget carries the CSS class ``cofiviz-bounded``, and
    :meth:`of` finds its :class:`BoundedInput` again.
    """

    _of: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, widget) -> "BoundedInput | None":
        """The :class:`BoundedInput` whose input ``widget`` is, or ``None``."""
        return cls._of.get(widget)

    def __init__(self, obj: param.Parameterized, name: str, widget=pn.widgets.EditableFloatSlider,
                 label: str | None = None, css_classes: list[str] | None = None, term: str | None = None, **kwargs):
        super().__init__()
        p = obj.param[name]
        self._obj, self._name = obj, name
        self.label = label or p.label
        #: what the note calls the input (default: its label)
        self.term = term or self.label
        self.bounds = p.bounds
        opts = dict(label=self.label, value=getattr(obj, name), css_classes=["cofiviz-bounded"] + (css_classes or []),
                    sizing_mode="stretch_width", **kwargs)
        # a slider spans the bounds; a number box gets none, which the browser would enforce without a word
        self._slider = issubclass(widget, (pn.widgets.EditableFloatSlider, pn.widgets.EditableIntSlider))
        if self._slider:
            opts.update(start=self.bounds[0], end=self.bounds[1], step=p.step or opts.get("step", 0.1))
        self.widget = widget(**opts)
        BoundedInput._of[self.widget] = self
        self._note_classes = ["cofiviz-input-note"] + [f"{c}-note" for c in css_classes or []]
        self._note = self._box = None      # the note is made at its first message (:attr:`note`)
        self._resetting = False
        self.widget.param.watch(self._typed, "value")
        obj.param.watch(self._follow, name)

    @property
    def note(self) -> pn.pane.Markdown:
        """The note under the input, hidden while it has nothing to say; made when first asked for (most pages never
        show one, and every pane is a model more in every session)."""
        if self._note is None:
            self._note = pn.pane.Markdown("", visible=False, margin=(0, 10), styles={"color": "#b45309"},
                                          css_classes=self._note_classes)
            if self._box is not None:
                self._box.append(self._note)
        return self._note

    @property
    def value(self):
        """The parameter's value: what the page draws."""
        return getattr(self._obj, self._name)

    def _typed(self, event):
        if self._resetting:
            return
        value = event.new
        if value is None:
            new = getattr(self._obj, self._name)
            msg = f"{self.term} needs a number; kept {new:g}."
        else:
            new, msg = clamp(value, self.bounds, self.term)
        if msg or self._note is not None:
            self.note.object, self.note.visible = msg or "", bool(msg)
        if new != value:
            self._show(new)
        setattr(self._obj, self._name, new)

    def _follow(self, event):
        if self.widget.value != event.new:
            self._show(event.new)

    def _show(self, value):
        """Put ``value`` in the input without taking it for a typed one (and a slider back on its bounds)."""
        self._resetting = True
        try:
            self.widget.value = value
            if self._slider:
                self.widget.param.update(start=self.bounds[0], end=self.bounds[1])
        finally:
            self._resetting = False

    def __panel__(self):
        if self._box is None:
            shown = [self.widget] if self._note is None else [self.widget, self._note]
            self._box = pn.Column(*shown, sizing_mode="stretch_width", margin=0)
        return self._box
