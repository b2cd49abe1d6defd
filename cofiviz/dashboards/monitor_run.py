"""The training monitor's controller: one run at a time in a worker process, kept as parameters the page draws.

:class:`MonitorRun` starts a :class:`~cofiviz.background.training_process.TrainingJob` in a worker process
(:class:`~cofiviz.background.training_process.TrainingProcess`) once the server's
:class:`~cofiviz.background.run_queue.RunQueue` admits it, follows it from a thread of the session
(:class:`~._shared.SessionWorker`) and keeps what the run has produced: where it waits in the queue, the
iterations' rows, the trials of a search and the setting it chose, the sentences of
:mod:`~cofiviz.background.run_story`, a status line and an error. A session holds one place in the queue:
:meth:`MonitorRun.submit` of a new job while a run is queued or running replaces that run (killed at once) and
takes its place over; the same job again within :data:`DOUBLE_CLICK` seconds is the second click of a double
click, and is ignored. It holds no widget and no Bokeh model: every change is a parameter, set on the session's
event loop (``SessionWorker.schedule``), and :class:`~.monitor.TrainingMonitor` watches the parameters
and draws them. Rows arrive in batches (:attr:`MonitorRun.batch`) at most every
:attr:`MonitorRun.FLUSH_EVERY` seconds, and further apart as the curves grow (:meth:`MonitorRun.flush_interval`),
so that a fast model floods neither the event loop nor the browser, which redraws every point of a curve on each
batch.
"""

from __future__ import annotations

import io
import threading
import time
from dataclasses import fields

import pandas as pd
import param

from ..background.run_queue import Place, Wait, run_queue
from ..background.run_story import curve_notes, ending
from ..background.training_process import COLUMNS, PARTS, TrainingJob, TrainingProcess
from ._shared import SessionWorker

__all__ = ["MonitorRun", "SCORED", "empty_frame", "DOUBLE_CLICK", "queue_text", "ordinal", "duration"]

#: the metric columns of a row (NaN in an iteration that was not scored)
SCORED = [c for c in COLUMNS if c.split("_", 1)[0] in PARTS]
#: seconds within which the same job submitted again is the second click of a double click
DOUBLE_CLICK = 2.0


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``22nd`` …"""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def duration(seconds: float) -> str:
    """A wait in words a reader takes in at a glance: ``a few seconds``, ``40 s``, ``2 min 10 s``, ``1 h 5 min``."""
    if seconds < 10:
        return "a few seconds"
    s = int(round(seconds / 5.0) * 5) if seconds < 600 else int(round(seconds / 60.0) * 60)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        m, rest = divmod(s, 60)
        return f"{m} min" + (f" {rest} s" if rest else "")
    h, rest = divmod(s // 60, 60)
    return f"{h} h" + (f" {rest} min" if rest else "")


def queue_text(wait: Wait) -> str:
    """What a student whose run waits is told (Markdown): its position, what runs and waits, when it should
    start, and what Run and Stop do meanwhile."""
    ahead = wait.position - 1
    line = (f"**Your run waits for a free worker: {ordinal(wait.position)} in the queue.** "
            f"This server trains {wait.slots} run{'' if wait.slots == 1 else 's'} at once; "
            f"{wait.running} {'is' if wait.running == 1 else 'are'} training"
            + (f" and {ahead} {'waits' if ahead == 1 else 'wait'} ahead of yours." if ahead else ".")
            + " ")
    if wait.expected_start is None:
        line += "When it starts will show once the runs ahead report their first iterations."
    else:
        line += (f"Expected to start in about **{duration(wait.expected_start)}** (from the running runs' "
                 "progress; sooner if they stop early).")
    return line + " Run again replaces it with your new choices and keeps its place; Stop leaves the queue."


def _same_job(a: TrainingJob | None, b: TrainingJob) -> bool:
    """Whether two jobs train the same thing (an uploaded file: the same ratings object)."""
    if a is None:
        return False
    for f in fields(TrainingJob):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "data" and not isinstance(x, str):
            if x is not y:
                return False
        elif x != y:
            return False
    return True


def empty_frame() -> pd.DataFrame:
    """A table of iterations with no row: the columns of :data:`~cofiviz.background.training_process.COLUMNS`."""
    return pd.DataFrame({c: pd.Series(dtype="int64" if c == "iteration" else "float64") for c in COLUMNS})


class MonitorRun(param.Parameterized):
    """One session's training runs: start, follow and stop them; what they produced, as parameters.

    :meth:`submit` starts a job, or replaces the run queued or running with it. Underneath, claim the run with
    :meth:`claim` (atomic: of two clicks together, one wins), then :meth:`start` a job or :meth:`release` the
    claim. :meth:`stop` asks the run to stop after its current iteration, or takes it out of the queue.

    Parameters
    ----------
    queue : RunQueue, optional
        The queue that admits the runs (default: the process's, :func:`~cofiviz.background.run_queue.run_queue`).
    """

    status = param.String(default="Ready.", doc="The status line (Markdown).")
    queued = param.Parameter(default=None, doc="Where the run waits in the queue (a ``Wait``), None once it runs.")
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
    FLUSH_EVERY = 1.0
    #: the longest time between two batches of rows (seconds)
    FLUSH_AT_MOST = 5.0
    #: iterations a browser is asked to redraw per second, at most: a batch redraws every point of the curves
    DRAW_RATE = 500

    @classmethod
    def flush_interval(cls, rows: int) -> float:
        """Seconds between two batches once ``rows`` iterations are drawn: ``rows / DRAW_RATE``, kept between
        :attr:`FLUSH_EVERY` and :attr:`FLUSH_AT_MOST`, so that a long run of a fast model keeps the page
        responsive on a loaded machine."""
        return min(max(cls.FLUSH_EVERY, rows / cls.DRAW_RATE), cls.FLUSH_AT_MOST)

    def __init__(self, queue=None, **params):
        super().__init__(**params)
        self._queue = queue
        self._work = SessionWorker("train")
        self._process: TrainingProcess | None = None
        self._job: TrainingJob | None = None
        self._place: Place | None = None       # the session's place in the queue, from a start to the run's end
        self._generation = 0                   # which run the callbacks belong to: a replaced run's are dropped
        self._abandon = threading.Event()      # set when the run is replaced: its follower ends without a word
        self._started_at = 0.0
        self._lock = threading.RLock()         # one submit at a time
        self._place_lock = threading.Lock()    # a place is given up, or taken over, never both
        self._pending: list[dict] = []
        self._pending_lock = threading.Lock()
        self._last_flush = 0.0
        self._rows = 0                         # the rows handed to a batch so far
        self._frame = empty_frame()
        self._sizes: dict | None = None
        self._what = ""
        self._waited = 0.0

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

    def submit(self, job: TrainingJob, what: str) -> str:
        """Run ``job``: start it, or replace the run queued or running with it (which it takes the place of).

        Returns
        -------
        str
            ``"started"``, ``"replaced"``, or ``"ignored"`` for the same job again within :data:`DOUBLE_CLICK`
            seconds of its start (the second click of a double click).
        """
        with self._lock:
            if self.claim():
                self.start(job, what)
                return "started"
            if _same_job(self._job, job) and time.monotonic() - self._started_at < DOUBLE_CLICK:
                return "ignored"
            self._abandon_run()
            self.start(job, what)
            return "replaced"

    def _abandon_run(self) -> None:
        """End the run going on at once, keeping its claim and its place for the run that replaces it: its
        follower leaves without a word and its process is killed."""
        self._generation += 1              # its callbacks still queued are dropped
        with self._place_lock:
            self._abandon.set()
        self._work.stop.set()
        if self._place is not None:
            self._place.queue.poke()       # a follower waiting in the queue looks again
        process = self._process
        if process is not None:
            process.kill()
        self._work.join(30)

    def start(self, job: TrainingJob, what: str) -> None:
        """Start ``job`` (the caller holds the claim); ``what`` is the status line until the first rows."""
        with self._lock:
            self._work.bind()
            self._generation += 1
            generation = self._generation
            self._abandon = threading.Event()
            self._job, self._what = job, what
            self._process = None
            self._started_at = time.monotonic()
            self._waited = 0.0                  # seconds the run waited in the queue (0: it started at once)
            with self._place_lock:
                if self._place is None or self._place.state == "left":
                    self._place = (self._queue or run_queue()).enter(owner=f"{id(self):x}", label=job.model)
            self._frame = empty_frame()
            with self._pending_lock:
                self._pending, self._last_flush, self._rows = [], 0.0, 0
            self._sizes = None
            self.param.update(error="", story=[], trials=[], tuned=None, restored=None, batch=None, queued=None,
                              tuning=job.tune_budget > 0, running=True, status=what)
            # a view clears its Bokeh sources on this event: on the session's event loop, under the document lock
            self._schedule(generation, self.param.trigger, "started")
            self._work.start(self._follow, job, generation, self._place, self._abandon)

    def _schedule(self, generation: int, fn, *args) -> None:
        """``fn(*args)`` on the session's event loop, unless the run ``generation`` was replaced meanwhile."""
        self._work.schedule(self._if_current, generation, fn, *args)

    def _if_current(self, generation: int, fn, *args) -> None:
        if generation == self._generation:
            fn(*args)

    def stop(self) -> bool:
        """Ask the run to stop after its current iteration (or to leave the queue); False when no run is on."""
        if not self._work.busy:         # a click that arrives after the run ended by itself
            return False
        self._work.stop.set()
        if self._place is not None:
            self._place.queue.poke()
        self.status = "Leaving the queue …" if self.queued is not None else "Stopping after the current iteration …"
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
    def _follow(self, job: TrainingJob, generation: int, place: Place, abandon: threading.Event):
        """Wait for the queue to admit the run, start its worker process and hand its rows to the session until
        the run ends; then give the place up (unless a new run replaced this one and took the place over)."""
        summary, error = {"how": "failed", "text": "Failed."}, None
        cancelled = lambda: abandon.is_set() or self._work.stop.is_set()
        try:
            if place.admitted:             # a replaced run's slot: the new run starts at once
                place.restart()
            waited = time.monotonic()
            process = TrainingProcess.when_admitted(job, place, cancelled,
                                                    on_wait=lambda where: self._schedule(generation, self._wait_at,
                                                                                         where))
            if process is None:
                summary = {"how": "left_queue", "text": "Left the queue: nothing was trained."}
            else:
                self._process = process
                if abandon.is_set():       # replaced between its start and now
                    process.kill()
                waited = time.monotonic() - waited
                self._schedule(generation, self._admitted, waited)
                summary, error = process.follow(lambda row: self._queue_row(generation, row), self._work.stop,
                                                self._work.closed,
                                                on_message=lambda kind, payload: self._on_message(generation, kind,
                                                                                                  payload))
        except Exception as exc:  # the process could not start: said in the page
            error = str(exc) or type(exc).__name__
        finally:
            with self._place_lock:
                if not abandon.is_set():
                    place.leave()
                    if self._place is place:
                        self._place = None
        self._schedule(generation, self._finish, summary, f"Training failed: {error}" if error else None)

    def _queue_row(self, generation: int, row: dict):
        """Follower side: queue one iteration's row; schedule a flush once :meth:`flush_interval` has passed."""
        with self._pending_lock:
            if generation != self._generation:
                return
            self._pending.append(row)
            now = time.monotonic()
            due = now - self._last_flush >= self.flush_interval(self._rows)
            if due:
                self._last_flush, self._rows = now, self._rows + len(self._pending)
        if due:
            self._schedule(generation, self._flush)

    def _on_message(self, generation: int, kind: str, payload):
        """Follower side: the lists' lengths, a finished trial of the search, or the setting chosen."""
        if kind == "sizes":
            self._sizes = payload
        elif kind == "trial":
            self._schedule(generation, self._add_trial, payload)
        else:
            self._schedule(generation, self._set_tuned, payload)

    # ------------------------------------------------------------------ on the session's event loop
    def _wait_at(self, where: Wait):
        """The run waits in the queue: where, and when it should start."""
        if not self.running:
            return
        self.queued = where
        self.status = f"Waiting for a free worker: {ordinal(where.position)} in the queue …"

    def _admitted(self, waited: float):
        """The queue admitted the run: it trains now (the status says how long it waited, if it did)."""
        if self.queued is None:
            return
        self.queued, self._waited = None, waited
        self.status = f"{self._what.rstrip(' …')} (started after {duration(waited)} in the queue) …"

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
            self.queued = None
            self.param.trigger("finished")
            # last: the data is complete
            if summary.get("how") == "left_queue":
                self.status = summary["text"]
            elif summary.get("how") == "failed":
                when = f"after iteration {n}" if n else "before the first iteration"
                self.status = f"Failed {when}: the message above says why."
            else:
                verdict = f" {self.tuned['summary']}" if self.tuned and self.tuned.get("summary") else ""
                waited = f" It waited {duration(self._waited)} in the queue first." if self._waited else ""
                self.status = (f"Finished after **{n}** iteration{'' if n == 1 else 's'}. {ending(summary)}{verdict}"
                               f"{waited}")
        finally:
            self._work.release()        # the next Run may start
