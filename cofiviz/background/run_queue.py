"""The queue of a server's training runs: as many run at once as the machine has cores, the others wait in order.

A class on one server presses Run together. Every run started at once would share the cores and each would take
as long as all of them together; the queue admits up to :attr:`RunQueue.slots` runs (the cores this process may
use, or ``$COFIVIZ_RUN_SLOTS``) and keeps the others waiting in the order they came. It lives in the server's
process, below the pages: each session holds at most one :class:`Place`, which waits (:meth:`Place.wait`, from
the session's follower thread), then runs, then leaves (the run ended, was stopped, or the session closed). A
session's new Run takes its own place over (the monitor kills the run it replaces): a queued place keeps its
position, a running one its slot.

A waiting place is told where it stands (:class:`Wait`): its position, how many run and wait, and when it is
expected to start. The expectation comes from the running runs' progress: a run that has done a fraction ``f`` of
its work (iterations done / Max iter, reported by :meth:`Place.progress`) in ``t`` seconds is expected to need
``t (1 - f) / f`` more; a run still waiting is expected to hold a slot as long as the runs that held one lately
(:data:`RECENT` of them), or as long as the running ones are projected to take. Max iter is an upper bound (early
stopping ends many runs sooner), so the expectation errs late rather than early.

The runs admitted share the cores: :meth:`Place.threads` is the number of numba threads a run may use now, the
cores but one (the server's) divided among the runs going on, at least one each.
"""

from __future__ import annotations

import heapq
import itertools
import os
import statistics
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

from ..util.errors import ParameterError

__all__ = ["RunQueue", "Place", "Wait", "run_queue", "SLOTS_ENV", "usable_cores", "default_slots", "RECENT"]

#: the environment variable that sets how many runs a server trains at once (default: its cores)
SLOTS_ENV = "COFIVIZ_RUN_SLOTS"
#: how many of the latest runs' slot times make the expected length of a run
RECENT = 20


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_slots() -> int:
    """How many runs train at once: ``$COFIVIZ_RUN_SLOTS`` when set (at least 1), else :func:`usable_cores`."""
    value = os.environ.get(SLOTS_ENV, "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ParameterError(f"${SLOTS_ENV} must be a whole number of runs, not {value!r}") from None
    return usable_cores()


@dataclass(frozen=True)
class Wait:
    """Where a waiting place stands.

    Attributes
    ----------
    position : int
        1 for the next place to start.
    waiting, running, slots : int
        The places waiting (this one included), the runs going on, and how many may run at once.
    expected_start : float or None
        Seconds from now until it is expected to start; None while no run has reported progress to judge from.
    """

    position: int
    waiting: int
    running: int
    slots: int
    expected_start: float | None


class Place:
    """One session's place in a :class:`RunQueue`: it waits, runs, then leaves. Made by :meth:`RunQueue.enter`."""

    def __init__(self, queue: "RunQueue", owner: str, label: str, number: int):
        self.queue, self.owner, self.label, self.number = queue, owner, label, number
        self.state = "waiting"
        self.entered = time.monotonic()
        self.started: float | None = None       # when its current run started running
        self.fraction = 0.0                     # how much of its current run is done

    @property
    def admitted(self) -> bool:
        """Whether it holds a slot."""
        return self.state == "running"

    def wait(self, cancelled: Callable[[], bool], on_wait: Callable[[Wait], None] | None = None,
             poll: float = 1.0) -> bool:
        """Block until the place holds a slot (True), or until ``cancelled()`` is true (False: the place has left).

        ``on_wait`` is told where the place stands when it starts waiting and at least every ``poll`` seconds
        after (the expectation moves as the running runs progress), outside the queue's lock.
        """
        q = self.queue
        while True:
            with q._cond:
                if self.state == "running":
                    return True
                if self.state == "left" or cancelled():
                    q._leave(self)
                    return False
                where = q._where(self)
            if on_wait is not None and where is not None:
                on_wait(where)
            with q._cond:
                if self.state == "waiting" and not cancelled():
                    q._cond.wait(poll)

    def restart(self) -> None:
        """A new run starts on this place (a session's Run replaced its running one): its progress starts over."""
        with self.queue._cond:
            if self.state == "running":
                self.started, self.fraction = time.monotonic(), 0.0

    def progress(self, fraction: float) -> None:
        """The running run has done ``fraction`` (0 to 1) of its work."""
        self.fraction = min(max(float(fraction), 0.0), 1.0)

    def threads(self) -> int:
        """The numba threads the run may use now: the cores but one, shared among the runs going on."""
        with self.queue._cond:
            running = sum(1 for p in self.queue._places if p.state == "running")
        return max(1, (self.queue.cores - 1) // max(1, running))

    def leave(self) -> None:
        """Give the place up (its slot to the next waiting place); leaving twice does nothing."""
        with self.queue._cond:
            self.queue._leave(self)

    def where(self) -> Wait | None:
        """Where the place stands while it waits; None once it runs or has left."""
        with self.queue._cond:
            return self.queue._where(self)

    def __repr__(self) -> str:
        return f"Place({self.owner!r}, {self.label!r}, {self.state})"


class RunQueue:
    """Up to ``slots`` runs at once, the others waiting in the order they entered.

    Parameters
    ----------
    slots : int, optional
        Runs at once (default :func:`default_slots`).
    cores : int, optional
        The cores the runs share (default :func:`usable_cores`).
    """

    def __init__(self, slots: int | None = None, cores: int | None = None):
        self.slots = max(1, int(slots if slots is not None else default_slots()))
        self.cores = max(1, int(cores if cores is not None else usable_cores()))
        self._cond = threading.Condition(threading.RLock())
        self._places: list[Place] = []              # running and waiting, in the order they entered
        self._held: deque[float] = deque(maxlen=RECENT)   # seconds the latest runs held a slot
        self._numbers = itertools.count(1)

    # ------------------------------------------------------------------ entering and leaving
    def enter(self, owner: str = "", label: str = "") -> Place:
        """A new place at the end of the queue (running at once when a slot is free)."""
        with self._cond:
            place = Place(self, owner, label, next(self._numbers))
            self._places.append(place)
            self._admit()
            return place

    def _leave(self, place: Place) -> None:
        if place.state == "left":
            return
        if place.state == "running" and place.started is not None:
            self._held.append(time.monotonic() - place.started)
        place.state = "left"
        self._places.remove(place)
        self._admit()
        self._cond.notify_all()

    def _admit(self) -> None:
        running = sum(1 for p in self._places if p.state == "running")
        for place in self._places:
            if running >= self.slots:
                break
            if place.state == "waiting":
                place.state, place.started, place.fraction = "running", time.monotonic(), 0.0
                running += 1
                self._cond.notify_all()

    def poke(self) -> None:
        """Wake every waiting place to look at its ``cancelled`` again."""
        with self._cond:
            self._cond.notify_all()

    # ------------------------------------------------------------------ what a waiting place is told
    def _run_length(self, now: float) -> float | None:
        """How long a run is expected to hold a slot: the median of the latest runs' slot times, else the median
        of the running runs' projected lengths; None without either."""
        if self._held:
            return statistics.median(self._held)
        projected = [(now - p.started) / p.fraction for p in self._places
                     if p.state == "running" and p.started is not None and p.fraction > 0]
        return statistics.median(projected) if projected else None

    def expected_starts(self) -> list[float | None]:
        """Seconds from now until each waiting place (in queue order) is expected to start."""
        with self._cond:
            now = time.monotonic()
            length = self._run_length(now)
            free: list[float] = []
            for p in self._places:
                if p.state != "running":
                    continue
                elapsed = now - (p.started or now)
                if p.fraction > 0:
                    free.append(elapsed * (1 - p.fraction) / p.fraction)
                elif length is not None:
                    free.append(max(length - elapsed, 0.0))
                else:
                    free.append(float("inf"))           # unknown yet
            free += [0.0] * max(self.slots - len(free), 0)
            heapq.heapify(free)
            out: list[float | None] = []
            for p in self._places:
                if p.state != "waiting":
                    continue
                at = heapq.heappop(free)
                known = at != float("inf")
                out.append(at if known else None)
                heapq.heappush(free, at + length if known and length is not None else float("inf"))
            return out

    def _where(self, place: Place) -> Wait | None:
        if place.state != "waiting":
            return None
        waiting = [p for p in self._places if p.state == "waiting"]
        position = waiting.index(place) + 1
        return Wait(position=position, waiting=len(waiting), running=len(self._places) - len(waiting),
                    slots=self.slots, expected_start=self.expected_starts()[position - 1])

    def snapshot(self) -> dict:
        """The queue as plain data: ``slots`` and, for ``running`` and ``waiting`` places in order, each one's
        ``owner``, ``label``, seconds in its state and (running) fraction done."""
        with self._cond:
            now = time.monotonic()
            return {"slots": self.slots,
                    "running": [{"owner": p.owner, "label": p.label, "seconds": now - (p.started or now),
                                 "fraction": p.fraction} for p in self._places if p.state == "running"],
                    "waiting": [{"owner": p.owner, "label": p.label, "seconds": now - p.entered}
                                for p in self._places if p.state == "waiting"]}


_queue: RunQueue | None = None
_queue_lock = threading.Lock()


def run_queue() -> RunQueue:
    """This process's queue, made at the first call (its slots from :func:`default_slots` then)."""
    global _queue
    with _queue_lock:
        if _queue is None:
            _queue = RunQueue()
        return _queue
