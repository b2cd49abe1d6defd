"""Training in worker processes: a session that trains never slows the server's other sessions.

:class:`TrainingJob` says what to train (a model and its parameters, the data and the protocol);
:class:`TrainingProcess` runs one job in a child process and follows it from a thread of the session.
Children are forked from multiprocessing's forkserver, which imports cofiviz and loads every model,
numba kernel and dashboard data set once (:mod:`._worker_preload`), so a run starts training at once.

A child

- splits the data, fits the model and sends one row per iteration (the loss, the seconds and NDCG@10,
  AP and GAP on train, validation and test) through a pipe; when scoring the three parts takes longer than
  :data:`SCORE_THROTTLE` seconds (a million test candidates of MovieLens 1M), iterations are scored only
  once the model has trained as long as scoring takes (:class:`cofiviz.engine.trace.Trace`'s ``throttle``), and
  the rows in between carry the loss and the seconds with NaN metrics;
- stops after the current iteration when asked (its fit callback returns True): :meth:`TrainingProcess.follow`
  sends ``"stop"`` down a second pipe, which a small thread of the child watches;
- runs at a lower priority with one numba thread fewer than the machine has cores, so the server keeps a core, or
  fewer when the server's :class:`~.run_queue.RunQueue` runs others beside it (the threads its
  :class:`~.run_queue.Place` allows, sent down the control pipe as they change and applied between iterations);
- ends by itself when the server's ends of the pipes close (the server exited, even when killed), after the
  current iteration or at the latest :data:`ORPHAN_GRACE` seconds later. Children are daemonic, so a server
  that exits normally terminates the ones still running.

A run asks the server's :class:`~.run_queue.RunQueue` for a slot before its process starts
(:meth:`TrainingProcess.when_admitted`), and tells its place how far it is (iterations done / Max iter; a tuning
run's search counts as its first half, by the budget's seconds), from which the runs waiting behind it learn when
they are expected to start.

Errors (data a protocol cannot split, a model whose fit fails) come back as messages for the page.
As with every multiprocessing start method but fork, each worker imports the main script of the process
that starts it again (as ``__mp_main__``): a script's own top-level code belongs under
``if __name__ == "__main__":``.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field
from multiprocessing import forkserver


from .. import protocols
from ..models import make_model
from ..search.tuning import tune
from ..ratings import Ratings
from ..engine.training import train_and_evaluate
from .offered import load_dataset
from .run_queue import Place
from .run_story import list_sizes, summarize

__all__ = ["TrainingJob", "TrainingProcess", "start_forkserver", "worker_context", "leave_a_core", "METRICS", "PARTS",
           "COLUMNS", "SCORE_THROTTLE"]

METRICS = ("ndcg@10", "ap", "gap")
PARTS = ("train", "valid", "test")
#: the columns of one iteration's row
COLUMNS = ["iteration", "seconds", "elapsed", "loss"] + [f"{p}_{m}" for p in PARTS for m in METRICS]
#: the module the forkserver imports before forking any worker
PRELOAD = "cofiviz.background._worker_preload"
#: seconds a child whose server has gone may finish its iteration before it exits anyway
ORPHAN_GRACE = 10.0
#: how much lower than the server a child runs (``os.nice``)
NICENESS = 10
#: a rated item counts as relevant for AP and GAP from this rating on
RELEVANT_FROM = 4.0
#: seconds of scoring an iteration above which scoring is spaced out (:class:`cofiviz.engine.trace.Trace`'s ``throttle``)
SCORE_THROTTLE = 0.25


def worker_context():
    """The forkserver context; its server preloads :data:`PRELOAD` (when this process starts it)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([PRELOAD])
    return ctx


def start_forkserver() -> None:
    """Start the workers' forkserver now; it preloads in the background while the caller goes on."""
    worker_context()
    forkserver.ensure_running()


@dataclass(frozen=True)
class TrainingJob:
    """What one run trains.

    Attributes
    ----------
    model : str
        A registered model's name.
    params : dict
        The model's parameters.
    protocol : str
        A protocol of :func:`cofiviz.protocols.make`.
    protocol_params : dict
        The protocol's parameters.
    data : str or Ratings
        A dashboard data set's label (the worker has it loaded) or the ratings themselves (an upload).
    tune_budget : float
        When positive, first tune the model on the split's validation part for that many seconds
        (:func:`cofiviz.search.tune`), then train with the chosen setting.
    score_throttle : float, optional
        The curves' :class:`~cofiviz.engine.trace.Trace` ``throttle`` (default :data:`SCORE_THROTTLE`); None scores
        every iteration.
    """

    model: str
    params: dict
    protocol: str
    protocol_params: dict = field(default_factory=dict)
    data: str | Ratings = ""
    tune_budget: float = 0.0
    score_throttle: float | None = SCORE_THROTTLE

    def split(self):
        ratings = load_dataset(self.data) if isinstance(self.data, str) else self.data
        return protocols.make(self.protocol, ratings, **self.protocol_params)


def _watch_server(control, stop: threading.Event, threads: list) -> None:
    """Child side: set ``stop`` on ``"stop"``, put ``n`` into ``threads[0]`` on ``("threads", n)``; when the
    server's end closes, stop, and exit after a grace."""
    try:
        while True:
            message = control.recv()
            if message == "stop":
                stop.set()
            elif isinstance(message, tuple) and message[0] == "threads":
                threads[0] = int(message[1])
    except (EOFError, OSError):
        stop.set()
        time.sleep(ORPHAN_GRACE)
        os._exit(0)


def leave_a_core(spare: int = 1, at_most: int | None = None) -> None:
    """Child side: a lower priority (:data:`NICENESS`) and ``spare`` numba threads fewer than the cores this
    process may use (at least one; at most ``at_most``). With ``spare=0`` the child uses every core, only when the
    server's own threads leave them idle (the kernel runs a niced process after the others)."""
    try:
        os.nice(NICENESS)
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
    _set_threads(min(cores - spare, at_most or cores))


def _set_threads(n: int) -> None:
    """Child side: use ``n`` numba threads from the next parallel kernel on (within numba's own limit, at least 1)."""
    import numba

    n = max(1, min(numba.config.NUMBA_NUM_THREADS, int(n)))
    if numba.get_num_threads() != n:
        numba.set_num_threads(n)


def _child_main(rows, control, job: TrainingJob, threads: int | None = None) -> None:
    """The worker: fit ``job``'s model and send ``("sizes", dict)`` once the data is split (the lists'
    lengths, :func:`~.run_story.list_sizes`), ``("row", dict)`` per iteration, then ``("done", summary)``
    (:func:`~.run_story.summarize`) or ``("error", message)``. A tuning job first sends ``("trial", dict)``
    per trial of the search and ``("tuned", dict)`` with the setting it trains (``params``), the trial it
    comes from (``chosen``), whether that is the search's reference (``kept_reference``) or the item mean alone
    (``item_mean``), and the search's verdict in plain words (``summary``, :meth:`~cofiviz.search.tuning.Tuning.summary`).
    ``threads`` caps its numba threads; the server may change the cap while it trains (applied between
    iterations)."""
    stop = threading.Event()
    wanted = [threads]                  # the numba threads the server allows, updated by the watching thread
    threading.Thread(target=_watch_server, args=(control, stop, wanted), daemon=True, name="cofiviz-watch").start()
    try:
        leave_a_core(at_most=threads)
        split = job.split()
        model = make_model(job.model, **job.params)
        if job.tune_budget > 0:
            tuning = tune(model, split.train, split.valid, budget=job.tune_budget, metric=METRICS[0], refit=False,
                          log=lambda trial: rows.send(("trial", trial)), stop=stop.is_set)
            if stop.is_set():
                n = len(tuning.trials)
                rows.send(("done", {"how": "tuning_stopped", "iterations": 0,
                                    "text": f"Stopped while tuning, after {n} trial{'' if n == 1 else 's'}: "
                                            "nothing was trained."}))
                return
            rows.send(("tuned", {"params": model.get_params(), "chosen": tuning.chosen,
                                 "kept_reference": bool(tuning.check.get("kept_reference")),
                                 "item_mean": bool(tuning.check.get("item_mean")), "summary": tuning.summary()}))
        rows.send(("sizes", list_sizes(split)))
        asked = []                      # set when the stop callback ended the fit

        def stop_asked(info):
            if wanted[0] is not None:
                _set_threads(wanted[0])
            if stop.is_set():
                asked.append(info.iteration)
                return True
            return False

        train_and_evaluate(model, split, trace=("train", "valid", "test"), trace_metrics=METRICS,
                           threshold=RELEVANT_FROM, throttle=job.score_throttle,
                           on_iteration=lambda row: rows.send(("row", row)), callbacks=[stop_asked])
        rows.send(("done", summarize(model, stopped=bool(asked))))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server is gone: nobody to tell
    except Exception as exc:  # a message for the page, never a traceback
        try:
            rows.send(("error", str(exc) or type(exc).__name__))
        except OSError:
            pass


class TrainingProcess:
    """One training run in a worker process, followed by :meth:`follow`.

    Parameters
    ----------
    job : TrainingJob
        What to train. Its data travels to the child once (a label costs nothing; an upload is pickled).
    place : Place, optional
        Its place in the server's :class:`~.run_queue.RunQueue`, which holds a slot (:meth:`when_admitted`): the
        run tells it its progress and uses the numba threads it allows.
    """

    #: seconds a run whose session closed may take to stop by itself before it is killed
    KILL_GRACE = 10.0

    def __init__(self, job: TrainingJob, place: Place | None = None):
        ctx = worker_context()
        self.job, self.place = job, place
        self._threads = place.threads() if place is not None else None
        self._max_iter = job.params.get("max_iter")
        self._t0 = time.monotonic()
        self._rows, child_rows = ctx.Pipe(duplex=False)
        child_control, self._control = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_child_main, args=(child_rows, child_control, job, self._threads),
                                   daemon=True, name=f"cofiviz-train-{job.model}")
        try:
            self.process.start()
        finally:  # the child holds its ends now: their closing tells each side the other is gone
            child_rows.close()
            child_control.close()

    @classmethod
    def when_admitted(cls, job: TrainingJob, place: Place, cancelled, on_wait=None) -> "TrainingProcess | None":
        """Ask ``place``'s queue for a slot, wait for it (``on_wait`` is told where the place stands, see
        :meth:`~.run_queue.Place.wait`), then start ``job``; None when ``cancelled()`` came true first (the place
        has then left the queue)."""
        if not place.wait(cancelled, on_wait):
            return None
        return cls(job, place=place)

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def _progress(self, kind: str, payload) -> None:
        """Tell the place how far the run is: iterations done / Max iter (the second half of a tuning run, whose
        search is its first half, by the budget's seconds)."""
        if self.place is None:
            return
        tuning = self.job.tune_budget > 0
        if kind == "tuned":
            self._max_iter = payload["params"].get("max_iter", self._max_iter)
        if kind == "trial" and tuning:
            self.place.progress(0.5 * min((time.monotonic() - self._t0) / self.job.tune_budget, 1.0))
        elif kind == "row" and self._max_iter:
            done = min(payload["iteration"] / self._max_iter, 1.0)
            self.place.progress(0.5 + 0.5 * done if tuning else done)

    def _share_threads(self) -> None:
        """Send the child the numba threads its place allows now, when that changed."""
        if self.place is None:
            return
        n = self.place.threads()
        if n != self._threads:
            self._threads = n
            try:
                self._control.send(("threads", n))
            except OSError:
                pass

    def request_stop(self) -> None:
        """Ask the child to stop after its current iteration."""
        try:
            self._control.send("stop")
        except OSError:  # it has ended already
            pass

    def kill(self) -> None:
        """End the child at once."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)

    def follow(self, on_row, stop: threading.Event, closed: threading.Event | None = None,
               poll: float = 0.1, on_message=None) -> tuple[dict, str | None]:
        """Hand each iteration's row to ``on_row`` until the run ends; returns ``(summary, error)``.

        ``on_message(kind, payload)`` receives the ``"sizes"`` message and a tuning job's ``"trial"`` and
        ``"tuned"`` messages. ``summary`` is the child's :func:`~.run_story.summarize` record, or a dict with
        ``how`` and ``text`` when the run ended otherwise.

        ``stop`` set asks the child to stop after its iteration; ``closed`` set (the session ended) also
        kills it if it has not ended :attr:`KILL_GRACE` seconds later. ``error`` is None unless the run
        failed (then ``summary["how"]`` is ``"failed"``).
        """
        stop_sent, kill_at = False, None
        try:
            while True:
                self._share_threads()
                if stop.is_set() and not stop_sent:
                    self.request_stop()
                    stop_sent = True
                if closed is not None and closed.is_set() and kill_at is None:
                    kill_at = time.monotonic() + self.KILL_GRACE
                if kill_at is not None and time.monotonic() >= kill_at:
                    self.kill()
                    return {"how": "killed", "text": "The session closed and its training process was ended."}, None
                if not self._rows.poll(poll):
                    continue
                try:
                    kind, payload = self._rows.recv()
                except EOFError:
                    self.process.join(5)
                    return {"how": "failed", "text": "Failed."}, (f"the training process ended unexpectedly "
                                                                   f"(exit code {self.process.exitcode})")
                self._progress(kind, payload)
                if kind == "row":
                    on_row(payload)
                elif kind in ("trial", "tuned", "sizes"):
                    if on_message is not None:
                        on_message(kind, payload)
                elif kind == "done":
                    return payload, None
                else:
                    return {"how": "failed", "text": "Failed."}, payload
        finally:
            self.process.join(self.KILL_GRACE)
            if self.process.is_alive():
                self.kill()
            self._rows.close()
            self._control.close()
