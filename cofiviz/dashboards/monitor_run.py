"""The training monitor's controller: one run at a time in a worker process, kept as parameters the page draws.

:class:`MonitorRun` starts a :class:`~cofiviz.background.training_process.TrainingJob` in a worker process
(:class:`~cofiviz.background.training_process.TrainingProcess`), follows it from a thread of the session
(:class:`~._shared.SessionWorker`) and keeps what the run has produced: the iterations' rows, the trials of
a search and the setting it chose, the sentences of :mod:`~cofiviz.background.run_story`, a status line
and an error. It holds no widget and no Bokeh model: every change is a parameter, set on the session's
event loop (``SessionWorker.schedule``), and :class:`~.monitor.TrainingMonitor` watches the parameters
and draws them. Rows arrive in batches (:attr:`MonitorRun.batch`) at most every
:attr:`MonitorRun.FLUSH_EVERY` seconds, so a fast model cannot flood the event loop.
"""

from __future__ import annotations

import io
import threading
import time

import pandas as pd
import param

from ..background.run_story import curve_notes, ending
from ..background.training_process import COLUMNS, PARTS, TrainingJob, TrainingProcess
from ._shared import SessionWorker

__all__ = ["MonitorRun", "SCORED", "empty_frame"]

#: the metric columns of a row (NaN in an iteration that was not scored)
SCORED = [c for c in COLUMNS if c.split("_", 1)[0] in PARTS]


def empty_frame() -> pd.DataFrame:
    """A table of iterations with no row: the columns of :data:`~cofiviz.background.training_process.COLUMNS`."""
    return pd.DataFrame({c: pd.Series(dtype="int64" if c == "iteration" else "float64") for c in COLUMNS})


class MonitorRun(param.Parameterized):
    """One session's training runs: start, follow and stop them; what they produced, as parameters.

    Claim the run with :meth:`claim` (atomic: of two clicks together, one wins), then :meth:`start` a job
    or :meth:`release` the claim. :meth:`stop` asks the run to stop after its current iteration.
    """

    status = param.String(default="Ready.", doc="The status line (Markdown).")
    error = param.String(default="", doc="Why the last run failed (empty when it did not).")
    story = param.List(default=[], item_type=str, doc="What the curves show, in sentences.")
    running = param.Boolean(default=False, doc="A run is on, from start to its last rows.")
    tuning = param.Boolean(default=False, doc="The run searches the model's settings first.")
    trials = param.List(default=[], item_type=dict, doc="The search's trials, a row each.")
    tuned = param.Dict(default=None, allow_None=True,
                       doc="The setting the search chose (``params``, ``chosen`` trial, ``kept_reference``).")
    restored = param.Integer(default=None, allow_None=True,
                             doc="The iteration whose iterate early stopping put back, once the run ended.")
    batch = param.DataFrame(default=None, allow_None=True, doc="The rows of the newest batch of iterations.")
    started = param.Event(doc="A run started: what showed the previous one is to be cleared.")
    finished = param.Event(doc="The run ended: :attr:`history` is complete.")

    #: the shortest time between two batches of rows (seconds)
    FLUSH_EVERY = 0.5

    def __init__(self, **params):
        super().__init__(**params)
        self._work = SessionWorker("train")
        self._process: TrainingProcess | None = None
        self._job: TrainingJob | None = None
        self._pending: list[dict] = []
        self._pending_lock = threading.Lock()
        self._last_flush = 0.0
        self._frame = empty_frame()
        self._sizes: dict | None = None

    # ------------------------------------------------------------------ start and stop
    @property
    def busy(self) -> bool:
        """True from a successful :meth:`claim` until the run's last callback."""
        return self._work.busy

    def claim(self) -> bool:
        """Take the run for one job: True for exactly one caller until the job ends or :meth:`release`."""
        return self._work.claim()

    def release(self) -> None:
        """Give back a claim whose job did not start."""
        self._work.release()

    def start(self, job: TrainingJob, what: str) -> None:
        """Start ``job`` (the caller holds the claim); ``what`` is the status line until the first rows."""
        self._work.bind()
        self._job = job
        self._frame = empty_frame()
        with self._pending_lock:
            self._pending, self._last_flush = [], 0.0
        self._sizes = None
        self.param.update(error="", story=[], trials=[], tuned=None, restored=None, batch=None,
                          tuning=job.tune_budget > 0, running=True, status=what)
        # a view clears its Bokeh sources on this event: on the session's event loop, under the document lock
        self._work.schedule(self.param.trigger, "started")
        self._work.start(self._follow, job)

    def stop(self) -> bool:
        """Ask the run to stop after its current iteration; False when no run is on."""
        if not self._work.busy:         # a click that arrives after the run ended by itself
            return False
        self._work.stop.set()
        self.status = "Stopping after the current iteration …"
        return True

    def stop_and_wait(self, timeout: float = 30.0) -> bool:
        """Ask the run to stop and wait for it; True when no run is going on any more."""
        self._work.stop.set()
        return self._work.join(timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the run's thread to end; True when no run is going on any more."""
        return self._work.join(timeout)

    @property
    def history(self) -> pd.DataFrame:
        """The iterations received so far (a copy)."""
        return self._frame.copy()

    def csv_bytes(self) -> io.BytesIO:
        """The iterations as CSV."""
        return io.BytesIO(self._frame.to_csv(index=False).encode())

    def parquet_bytes(self) -> io.BytesIO:
        """The iterations as Parquet."""
        buf = io.BytesIO()
        self._frame.to_parquet(buf, index=False)
        buf.seek(0)
        return buf

    # ------------------------------------------------------------------ the session's follower thread
    def _follow(self, job: TrainingJob):
        """Start the worker process and hand its rows to the session until the run ends."""
        summary, error = {"how": "failed", "text": "Failed."}, None
        try:
            self._process = TrainingProcess(job)
            summary, error = self._process.follow(self._queue_row, self._work.stop, self._work.closed,
                                                  on_message=self._on_message)
        except Exception as exc:  # the process could not start: said in the page
            error = str(exc) or type(exc).__name__
        self._work.schedule(self._finish, summary, f"Training failed: {error}" if error else None)

    def _queue_row(self, row: dict):
        """Follower side: queue one iteration's row; schedule a flush at most every FLUSH_EVERY seconds."""
        with self._pending_lock:
            self._pending.append(row)
            now = time.monotonic()
            due = now - self._last_flush >= self.FLUSH_EVERY
            if due:
                self._last_flush = now
        if due:
            self._work.schedule(self._flush)

    def _on_message(self, kind: str, payload):
        """Follower side: the lists' lengths, a finished trial of the search, or the setting chosen."""
        if kind == "sizes":
            self._sizes = payload
        elif kind == "trial":
            self._work.schedule(self._add_trial, payload)
        else:
            self._work.schedule(self._set_tuned, payload)

    # ------------------------------------------------------------------ on the session's event loop
    def _add_trial(self, trial: dict):
        row = {"trial": trial["trial"], **{k: (round(v, 5) if isinstance(v, float) else v)
                                           for k, v in trial["params"].items()},
               "valid ndcg@10": None if trial["error"] else round(trial["score"], 5),
               "iterations": trial["iterations"], "seconds": round(trial["seconds"], 2),
               "note": "diverged" if trial["error"] else ""}
        trials = [*self.trials, row]
        scored = [r for r in trials if r["valid ndcg@10"] is not None]
        best = max(scored, key=lambda r: r["valid ndcg@10"]) if scored else None
        self.trials = trials
        self.status = (f"Tuning **{self._job.model}**: trial {trial['trial'] + 1} done"
                       + (f"; best valid NDCG@10 so far {best['valid ndcg@10']:.4f} (trial {best['trial']})"
                          if best else "") + " …")

    def _set_tuned(self, tuned: dict):
        k = tuned["chosen"]
        if 0 <= k < len(self.trials):
            self.trials = [dict(r, note="chosen") if i == k else r for i, r in enumerate(self.trials)]
        self.tuned = tuned
        why = f" {tuned['summary']}" if tuned.get("summary") else ""
        self.status = f"Tuned: training **{self._job.model}** with the setting of trial {k}.{why} …"

    def _flush(self):
        with self._pending_lock:
            rows, self._pending = self._pending, []
        if not rows:
            return
        df = pd.DataFrame(rows, columns=COLUMNS)
        self._frame = pd.concat([self._frame, df], ignore_index=True) if len(self._frame) else df
        self.batch = df
        self.story = curve_notes(self._frame, self._sizes)
        row = rows[-1]
        max_iter = self._job.params.get("max_iter") if self.tuned is None else \
            self.tuned["params"].get("max_iter", self._job.params.get("max_iter"))
        text = f"Iteration **{row['iteration']}** of {max_iter}: loss {row['loss']:.4g}, {row['seconds']:.3f} s"
        last = self._frame[self._frame[SCORED].notna().any(axis=1)].tail(1)
        if len(last):
            at, ndcg = int(last["iteration"].iloc[0]), last["test_ndcg@10"].iloc[0]
            text += f"; test NDCG@10 {ndcg:.4f}" + ("" if at == row["iteration"] else f" (scored at iteration {at})")
        self.status = text

    def _finish(self, summary: dict, error: str | None):
        try:
            self._flush()
            n = len(self._frame)
            if error:
                self.error = error
            self.story = curve_notes(self._frame, self._sizes, best=summary.get("best_iteration"))
            if summary.get("restored"):
                self.restored = int(summary["best_iteration"])
            self.running = False
            self.param.trigger("finished")
            # last: the data is complete
            if summary.get("how") == "failed":
                when = f"after iteration {n}" if n else "before the first iteration"
                self.status = f"Failed {when}: the message above says why."
            else:
                verdict = f" {self.tuned['summary']}" if self.tuned and self.tuned.get("summary") else ""
                self.status = f"Finished after **{n}** iteration{'' if n == 1 else 's'}. {ending(summary)}{verdict}"
        finally:
            self._work.release()        # the next Run may start
