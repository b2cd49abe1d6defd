"""The server's run queue: as many runs at once as it has slots, the others waiting in order, told where they stand.

The queue itself is checked on a clock of the test's own (the expected starts are arithmetic on the running runs'
progress); the monitor's controller is checked on real worker processes sharing a one-slot queue: a second
session's run waits, is told its position, starts when the first ends; a new Run replaces a session's queued or
running run and keeps its place; Stop takes a waiting run out of the queue.
"""

from __future__ import annotations

import threading
import time

import pytest

from cofiviz.background import run_queue as rq
from cofiviz.background.run_queue import RunQueue, default_slots
from cofiviz.background.training_process import TrainingJob
from cofiviz.dashboards.monitor_run import MonitorRun, duration, ordinal, queue_text

SMALL = "Synthetic: small (300 users, 200 items)"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(rq.time, "monotonic", c)
    return c


def test_up_to_slots_run_and_the_others_wait_in_the_order_they_came(clock):
    q = RunQueue(slots=2, cores=4)
    a, b, c, d = (q.enter(owner=x) for x in "abcd")
    assert [p.state for p in (a, b, c, d)] == ["running", "running", "waiting", "waiting"]
    assert (q.snapshot()["slots"], len(q.snapshot()["running"]), len(q.snapshot()["waiting"])) == (2, 2, 2)
    assert c.where().position == 1 and d.where().position == 2 and d.where().waiting == 2
    assert a.where() is None                       # a running place is not waiting anywhere
    b.leave()
    assert c.state == "running" and d.state == "waiting" and d.where().position == 1
    b.leave()                                      # leaving twice does nothing
    assert d.state == "waiting"
    d.leave()                                      # a waiting place may leave: nobody is admitted in its stead
    a.leave()
    c.leave()
    assert q.snapshot() == {"slots": 2, "running": [], "waiting": []}


def test_the_runs_going_on_share_the_cores_but_the_servers(clock):
    q = RunQueue(slots=3, cores=4)
    a = q.enter()
    assert a.threads() == 3                        # alone: every core but the server's
    b = q.enter()
    assert a.threads() == b.threads() == 1         # (4 - 1) // 2
    b.leave()
    assert a.threads() == 3
    assert RunQueue(slots=2, cores=1).enter().threads() == 1   # never fewer than one


def test_a_waiting_place_is_told_when_it_should_start_from_the_running_runs_progress(clock):
    q = RunQueue(slots=1, cores=2)
    a, b, c = q.enter(), q.enter(), q.enter()
    assert b.where().expected_start is None        # nothing to judge from before the first report
    clock.now += 10
    a.progress(0.25)                               # a quarter in 10 s: 30 s to go, 40 s a run
    assert b.where().expected_start == pytest.approx(30.0)
    assert c.where().expected_start == pytest.approx(70.0)
    clock.now += 30
    a.leave()                                      # it held its slot 40 s
    assert b.admitted
    assert c.where().expected_start == pytest.approx(40.0)   # b is expected to hold it as long
    clock.now += 10
    b.progress(0.5)                                # its own progress now: 10 s more
    assert c.where().expected_start == pytest.approx(10.0)


def test_wait_returns_when_admitted_or_leaves_when_cancelled():
    q = RunQueue(slots=1, cores=2)
    a, b, c = q.enter(), q.enter(), q.enter()
    seen = []
    admitted = []
    waiter = threading.Thread(target=lambda: admitted.append(b.wait(lambda: False, seen.append, poll=0.05)))
    waiter.start()
    time.sleep(0.2)
    assert not admitted and seen and seen[0].position == 1
    a.leave()
    waiter.join(5)
    assert admitted == [True] and b.admitted
    cancel = threading.Event()
    quitter = threading.Thread(target=lambda: admitted.append(c.wait(cancel.is_set, poll=0.05)))
    quitter.start()
    cancel.set()
    q.poke()
    quitter.join(5)
    assert admitted == [True, False] and c.state == "left" and q.snapshot()["waiting"] == []


def test_the_slots_come_from_the_environment_or_the_cores(monkeypatch):
    monkeypatch.setenv(rq.SLOTS_ENV, "3")
    assert default_slots() == 3
    monkeypatch.setenv(rq.SLOTS_ENV, "0")
    assert default_slots() == 1
    monkeypatch.setenv(rq.SLOTS_ENV, "two")
    with pytest.raises(ValueError, match="COFIVIZ_RUN_SLOTS must be a whole number of runs, not 'two'"):
        default_slots()
    monkeypatch.delenv(rq.SLOTS_ENV)
    assert default_slots() == rq.usable_cores()


def test_what_a_waiting_student_is_told():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == \
        ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]
    assert [duration(s) for s in (3, 42, 130, 601, 3900)] == ["a few seconds", "40 s", "2 min 10 s", "10 min",
                                                               "1 h 5 min"]
    text = queue_text(rq.Wait(position=3, waiting=4, running=2, slots=2, expected_start=75.0))
    assert "3rd in the queue" in text and "trains 2 runs at once; 2 are training and 2 wait ahead of yours" in text
    assert "about **1 min 15 s**" in text and "Stop leaves the queue" in text
    assert "once the runs ahead report" in queue_text(rq.Wait(1, 1, 1, 1, None))


def _job(max_iter, model="regsvd", **params):
    return TrainingJob(model, {"max_iter": max_iter, "tol": 0.0, "patience": 0, **params}, "weak",
                       {"n_train": 50, "n_valid": 5, "min_test": 5}, SMALL)


def _until(condition, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def test_a_second_sessions_run_waits_is_told_where_and_starts_when_the_first_ends():
    q = RunQueue(slots=1, cores=2)
    first, second = MonitorRun(queue=q), MonitorRun(queue=q)
    statuses = []
    second.param.watch(lambda e: statuses.append(e.new), "status")
    assert first.submit(_job(10_000), "first …") == "started"
    assert _until(lambda: len(first.history) + len(first._pending) >= 2)
    assert second.submit(_job(3), "second …") == "started"
    assert _until(lambda: second.queued is not None)
    assert second.queued.position == 1 and second.queued.running == 1 and second.running
    assert len(second.history) == 0
    assert first.stop()
    assert first.join(60) and second.join(120)
    assert list(second.history["iteration"]) == [1, 2, 3] and second.queued is None
    assert any(s.startswith("Waiting for a free worker: 1st in the queue") for s in statuses)
    assert any("in the queue) …" in s and s.startswith("second") for s in statuses)
    assert statuses[-1].startswith("Finished after **3** iterations.") and statuses[-1].endswith("in the queue first.")
    assert q.snapshot() == {"slots": 1, "running": [], "waiting": []}


def test_a_new_run_replaces_the_sessions_queued_or_running_one_and_keeps_its_place():
    q = RunQueue(slots=1, cores=2)
    first, second = MonitorRun(queue=q), MonitorRun(queue=q)
    assert first.submit(_job(10_000), "first …") == "started"
    assert _until(lambda: len(first.history) + len(first._pending) >= 1)
    assert first.submit(_job(10_000), "first again …") == "ignored"        # a double click's second click
    assert second.submit(_job(10_000), "waits …") == "started"
    assert _until(lambda: second.queued is not None)
    assert second.submit(_job(2, reg=0.5), "waits, other settings …") == "replaced"
    assert _until(lambda: second.queued is not None) and second.queued.position == 1
    assert len(q.snapshot()["waiting"]) == 1                              # one place per session
    old = first._process
    assert first.submit(_job(2, reg=0.3), "first, replaced …") == "replaced"
    assert not old.alive                                                  # the replaced run's process ended
    assert first.join(120) and second.join(120)
    assert list(first.history["iteration"]) == [1, 2] and list(second.history["iteration"]) == [1, 2]
    assert q.snapshot() == {"slots": 1, "running": [], "waiting": []}


def test_stop_takes_a_waiting_run_out_of_the_queue():
    q = RunQueue(slots=1, cores=2)
    first, second = MonitorRun(queue=q), MonitorRun(queue=q)
    first.submit(_job(10_000), "first …")
    second.submit(_job(3), "second …")
    assert _until(lambda: second.queued is not None)
    assert second.stop() and second.join(30)
    assert second.status == "Left the queue: nothing was trained." and not second.running
    assert second._process is None and len(q.snapshot()["waiting"]) == 0
    first.stop()
    assert first.join(60)


def test_serve_takes_the_slots_and_refuses_a_count_that_is_not_one(capsys):
    from cofiviz.cli import build_parser, main

    assert build_parser().parse_args(["serve", "--run-slots", "3"]).run_slots == 3
    assert build_parser().parse_args(["serve"]).run_slots is None
    for bad in ("0", "two"):
        assert main(["serve", "--run-slots", bad]) == 2
        assert f"argument --run-slots: expected a whole number of runs (1 or more), not " in capsys.readouterr().err


def test_a_closed_tab_frees_its_place_and_its_worker():
    q = RunQueue(slots=1, cores=2)
    first, second = MonitorRun(queue=q), MonitorRun(queue=q)
    first.submit(_job(10_000), "first …")
    second.submit(_job(3), "second …")
    assert _until(lambda: second.queued is not None)
    second._work._on_destroyed(None)                # what Bokeh calls when the tab's session is destroyed
    assert second.join(30) and q.snapshot()["waiting"] == []
    assert _until(lambda: len(first.history) + len(first._pending) >= 1)
    first._work._on_destroyed(None)
    assert first.join(60) and not first._process.alive
    assert q.snapshot() == {"slots": 1, "running": [], "waiting": []}
