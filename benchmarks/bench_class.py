"""Benchmark: a class on one server. Thirty students open the landing page and the monitor, ten of them press Run.

Serves the monitor with its landing page by the command ``cofiviz serve`` runs (the test suite's ``PanelServer``,
warmed up as a visitor finds it), and drives it with server-side clients: each student is a thread that fetches
the landing page over HTTP and opens the monitor with Bokeh's client API (``bokeh.client.pull_session``: the
session the browser would open, its document built by the server and sent over the websocket), so that no browser
shares the server's cores. The page is ready when its document has arrived; the client reads it as JSON and makes
none of its models, which a browser makes with its own CPU. A student who presses Run sends the Run button's click
event, as the browser does, at the first Run's defaults (LCR on MovieLens 100K), and follows the page's status line
until the run has finished.

The server serves every page, as ``cofiviz serve`` does. Phases:

1. **alone**: once the server is idle (its start-up work behind it: the recommendations' models trained, the
   comparisons' results read; :func:`wait_idle`), one session at a time presses Run with nobody else on the server,
   ``--alone-runs`` times (default :data:`ALONE_RUNS`: a run's time alone varies from one run to the next by more
   than a tenth on this machine): the run's time alone is their median (press to finished);
2. **a class** per ``--arrival`` value (default 30 s, then 150 s), one after the other on the same server, each on
   a settled server (:func:`settle`: the sessions closed before it discarded, the server idle):
   ``--sessions`` students arrive spread evenly over that many seconds; every third of them, up to ``--runs``,
   presses Run once the page is ready; the others keep their page open; the server's peak memory (its process and
   its workers, summed resident memory sampled every 0.2 s) is taken meanwhile.

Bokeh's client is driven as a browser drives a page: its messages are read in a loop (:func:`_handle_messages`),
it waits for a page as long as a browser does, and Run is pressed by sending the button's click event by the
button's id, as the browser sends it.

Recorded: page-ready times (landing page fetched, monitor session opened; median and 95th percentile), each run's
press order k, wait in the queue (press to the status saying it trains) and duration (to finished), errors (a
session that failed, a run that failed, an error or traceback in the server's log), and the CPU seconds of the
server's own process and of the students' clients (this process) during the class: what the pages cost the cores
the runs share. The goals on a 2-core machine:
page ready p95 ≤ 5 s; every run finishes, the k-th Run pressed within 1.2 × ⌈k / slots⌉ × its time alone; zero
errors. The slots are the server's (its cores, ``cofiviz serve --run-slots``).

Usage::

    .venv/bin/python benchmarks/bench_class.py [--sessions 30] [--runs 10] [--arrival 30 150] [--json OUT]
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import platform
import re
import statistics
import sys
import threading
import time
import urllib.request
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import psutil  # noqa: E402
from bokeh.client import pull_session  # noqa: E402
from bokeh.client import connection as bokeh_connection  # noqa: E402
from bokeh.client.connection import ClientConnection  # noqa: E402
from bokeh.client.session import ClientSession  # noqa: E402
from bokeh.client.states import DISCONNECTED, ErrorReason  # noqa: E402
from bokeh.protocol.messages.patch_doc import patch_doc  # noqa: E402
from bokeh.protocol.messages.pull_doc_reply import pull_doc_reply  # noqa: E402

from conftest import PanelServer  # noqa: E402

from cofiviz.dashboards.serving import app_files  # noqa: E402

from cofiviz.background.run_queue import default_slots  # noqa: E402

#: how often a student looks at the page's status line (seconds)
LOOK = 0.25
#: runs alone whose median is a run's time alone (``--alone-runs``)
ALONE_RUNS = 5


async def _handle_messages(self) -> None:
    """Bokeh's client reads each message of a connection one ``await`` deeper than the last (``_handle_messages``
    awaits ``_next``, which awaits ``_handle_messages``), so that a page that streams its iterations overflows the
    stack after a few hundred messages; this reads them in a loop, handing each patch to the session."""
    while True:
        message = await self._pop_message()
        if message is None:
            await self._transition_to_disconnected(DISCONNECTED(ErrorReason.HTTP_ERROR, 500, "Internal server error."))
            return
        if message.msgtype == "PATCH-DOC":
            self._session._handle_patch(message)
        if self._until_predicate is not None and self._until_predicate():
            self._until_predicate = None
            self._loop.stop()
            return


def _keep_document_json(self, document) -> None:
    """The reply to a pull keeps the document as the server sent it (JSON), without making its models."""
    document.sent_json = self.content["doc"]


def _read_patch(self, message) -> None:
    """A patch read as JSON: a change of a watched model's ``text`` is kept (the session's :attr:`texts`)."""
    texts = getattr(self, "texts", None)
    if texts is None:
        return
    for event in message.content.get("events", []):
        if event.get("kind") == "ModelChanged" and event.get("attr") == "text":
            ident = (event.get("model") or {}).get("id")
            if ident in texts and isinstance(event.get("new"), str):
                texts[ident] = event["new"]


# A page is ready when the server has sent its document. A browser then makes its models and draws them with its
# own CPU; Bokeh's client would make the models in this process, beside the server on the same cores (about 1 s of
# CPU for the monitor's document), so the students read the document as JSON and follow only the status line.
ClientConnection._handle_messages = _handle_messages
pull_doc_reply.push_to_document = _keep_document_json
ClientSession._handle_patch = _read_patch
# a browser waits for a page as long as it takes; Bokeh's client gives up on a websocket after tornado's 20 s
bokeh_connection.HTTPRequest = partial(bokeh_connection.HTTPRequest, connect_timeout=600, request_timeout=600)


def objects(node):
    """Every model object (``{"type": "object", "id": ..., "attributes": ...}``) in a document's JSON."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "id" in node:
            yield node
        for value in node.values():
            yield from objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from objects(value)


#: what the status line says while a run waits, once it trains, when it ended well, and when it failed
WAITING, FINISHED, FAILED = "Waiting for a free worker", "Finished after", ("Failed", "Training failed")


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0–100), linear between the closest ranks."""
    xs = sorted(values)
    at = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(at), math.ceil(at)
    return xs[lo] + (xs[hi] - xs[lo]) * (at - lo)


class Student:
    """One student's page: the landing page, then a monitor session; optionally a Run followed to its end.

    The session lives in a thread of its own that reads what the server sends (``loop_until_closed``: every patch
    is read, and the status line's new text kept); the student reads the status line and presses Run by sending the
    button's click on the session's own loop.
    """

    def __init__(self, url: str, number: int, presses: bool):
        self.url, self.number, self.presses = url, number, presses
        self.session = None
        self.status_id = self.run_id = None
        self.record: dict = {"student": number, "presses": presses}
        self._reader: threading.Thread | None = None

    def open(self) -> None:
        t0 = time.monotonic()
        with urllib.request.urlopen(f"{self.url}/", timeout=120) as resp:
            body = resp.read().decode()
        if "monitor" not in body:
            raise RuntimeError("the landing page does not list the monitor")
        t1 = time.monotonic()
        opened = threading.Event()
        failed: list[BaseException] = []

        def read():
            try:
                self.session = pull_session(url=f"{self.url}/monitor")
            except BaseException as exc:          # said by open()
                failed.append(exc)
                return
            finally:
                opened.set()
            self.session._connection.loop_until_closed()

        self._reader = threading.Thread(target=read, daemon=True, name=f"student-{self.number}")
        self._reader.start()
        opened.wait()
        if failed:
            raise failed[0]
        t2 = time.monotonic()
        models = list(objects(self.session.document.sent_json))
        self.status_id = next((m["id"] for m in models
                               if "Ready." in html.unescape(str(m.get("attributes", {}).get("text", "")))), None)
        if self.status_id is None:
            raise RuntimeError("the monitor's status line does not say Ready.")
        self.run_id = next(m["id"] for m in models if str(m.get("name")).split(".")[-1] == "Button"
                           and m.get("attributes", {}).get("label") == "Run")
        self.session.texts = {self.status_id: "Ready."}
        self.record.update(landing_s=t1 - t0, monitor_s=t2 - t1, ready_s=t2 - t0)

    def status(self) -> str:
        """The status line's text, without its paragraph tags."""
        return re.sub(r"<[^>]+>", "", html.unescape(self.session.texts[self.status_id])).strip()

    def press_run(self, pressed_at: list, lock: threading.Lock) -> None:
        # the click a browser sends: a ``button_click`` event of the Run button, by its id
        click = patch_doc(patch_doc.create_header(), {}, {"events": [{
            "kind": "MessageSent", "msg_type": "bokeh_event",
            "msg_data": {"type": "event", "name": "button_click",
                         "values": {"type": "map", "entries": [["model", {"id": self.run_id}]]}}}]})
        with lock:
            self.record["k"] = len(pressed_at) + 1
            t = time.monotonic()
            pressed_at.append(t)
        self.record["pressed"] = t
        self.session._connection._loop.add_callback(self.session._connection.send_message, click)

    def follow_run(self, timeout: float) -> None:
        """Look at the status line until it says the run finished or failed; note when it left the queue (the
        status stops saying it waits; a run admitted at once waited 0 s)."""
        t_press, left_queue, waited_seen = self.record["pressed"], None, False
        deadline = t_press + timeout
        while time.monotonic() < deadline:
            text = self.status()
            now = time.monotonic()
            if text.startswith(WAITING):
                waited_seen = True
            elif waited_seen and left_queue is None:
                left_queue = now
            if text.startswith(FINISHED):
                self.record.update(finished=now, wait_s=(left_queue or now) - t_press if waited_seen else 0.0,
                                   run_s=now - t_press, queued=waited_seen, status=text[:200])
                return
            if text.startswith(FAILED):
                raise RuntimeError(f"the run failed: {text[:300]}")
            if self._reader is not None and not self._reader.is_alive():
                raise RuntimeError("the session's connection closed")
            time.sleep(LOOK)
        raise RuntimeError(f"the run did not finish within {timeout:.0f} s (status: {self.status()[:160]})")

    def close(self) -> None:
        if self.session is not None and self._reader is not None and self._reader.is_alive():
            self.session._connection._loop.add_callback(self.session.close)
            self._reader.join(10)


def peak_memory(pid: int, stop: threading.Event, out: dict) -> None:
    """The largest summed resident memory of process ``pid`` and its descendants, sampled until ``stop``; also
    ``out["cpu"]``, the samples' times and the CPU seconds of that process and of this one (the clients) then."""
    server, me = psutil.Process(pid), psutil.Process()
    out.setdefault("cpu", [])
    while not stop.is_set():
        total = 0
        try:
            for p in [server, *server.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            out["cpu"].append((time.monotonic(), sum(server.cpu_times()[:2]), sum(me.cpu_times()[:2])))
        except psutil.Error:
            break
        out["peak"] = max(out.get("peak", 0), total)
        stop.wait(0.2)


def cpu_between(samples: list, t0: float, t1: float) -> tuple[float, float]:
    """CPU seconds of the server and of the clients between times ``t0`` and ``t1`` (the samples nearest them)."""
    if not samples:
        return float("nan"), float("nan")
    at = lambda t: min(samples, key=lambda s: abs(s[0] - t))  # noqa: E731
    a, b = at(t0), at(t1)
    return b[1] - a[1], b[2] - a[2]


def wait_idle(pid: int, share: float = 0.1, window: float = 3.0, timeout: float = 600.0) -> float:
    """Wait until process ``pid`` and its descendants use less than ``share`` of one core over ``window`` seconds
    (at most ``timeout``); the seconds waited."""
    server, t0 = psutil.Process(pid), time.monotonic()

    def cpu() -> float:
        total = 0.0
        for p in [server, *server.children(recursive=True)]:
            try:
                total += sum(p.cpu_times()[:2])
            except psutil.Error:
                pass
        return total

    while time.monotonic() - t0 < timeout:
        before = cpu()
        time.sleep(window)
        if 0.0 <= cpu() - before < share * window:
            break
    return time.monotonic() - t0


#: seconds after which the sessions closed before are discarded: Bokeh's server discards a closed session once it
#: has been unused for 15 s, at a check every 17 s (its defaults, which ``cofiviz serve`` keeps)
DISCARDED_AFTER = 15.0 + 17.0


def settle(pid: int) -> float:
    """Wait until the sessions closed so far are discarded (:data:`DISCARDED_AFTER`) and the server is idle
    (:func:`wait_idle`), so that the next measure starts as the first did; the seconds waited."""
    t0 = time.monotonic()
    time.sleep(DISCARDED_AFTER)
    wait_idle(pid)
    return time.monotonic() - t0


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` itself so far."""
    return sum(psutil.Process(pid).cpu_times()[:2])


def run_alone(url: str, timeout: float) -> float:
    """Seconds from Run to finished for one session alone on the server."""
    s = Student(url, 0, True)
    s.open()
    try:
        s.press_run([], threading.Lock())
        s.follow_run(timeout)
        return s.record["run_s"]
    finally:
        s.close()


def run_class(url: str, sessions: int, runs: int, arrival: float, timeout: float) -> tuple[list[dict], list[str]]:
    """``sessions`` students arriving over ``arrival`` seconds, every third pressing Run (up to ``runs``)."""
    pressers = set(list(range(0, sessions, 3))[:runs])
    if len(pressers) < runs:
        pressers |= set([i for i in range(sessions) if i not in pressers][:runs - len(pressers)])
    students = [Student(url, i, i in pressers) for i in range(sessions)]
    pressed_at: list[float] = []
    lock = threading.Lock()
    errors: list[str] = []
    everyone_done = threading.Event()
    t0 = time.monotonic()

    def student_main(s: Student):
        try:
            time.sleep(max(0.0, t0 + s.number * arrival / sessions - time.monotonic()))
            s.open()
            if s.presses:
                s.press_run(pressed_at, lock)
                s.follow_run(timeout)
            everyone_done.wait()                   # an open page, its connection read by its own thread
        except Exception as exc:
            errors.append(f"student {s.number}: {type(exc).__name__}: {exc}")
            s.record["error"] = str(exc)

    threads = [threading.Thread(target=student_main, args=(s,), daemon=True) for s in students]
    for t in threads:
        t.start()
    deadline = time.monotonic() + arrival + timeout * (runs + 1)
    while any(s.presses and "finished" not in s.record and "error" not in s.record for s in students):
        if time.monotonic() > deadline:
            errors.append("the class did not end in time")
            break
        time.sleep(0.5)
    everyone_done.set()
    for t in threads:
        t.join(30)
    for s in students:
        s.close()
    return [s.record for s in students], errors


def markdown(result: dict) -> str:
    """The README's account of a run: one table of the classes (page-ready times, memory, errors, goals), then one
    of the Runs pressed (waited, finished after, and the goal for the k-th), a column per class."""
    m, scs = result["machine"], result["scenarios"]
    yes = lambda ok: "met" if ok else "**not met**"  # noqa: E731
    head = " | ".join(f"{sc['sessions']} students over {sc['arrival_s']:g} s" for sc in scs)
    runs = result.get("alone_runs_s", [result["alone_s"]])
    lines = [f"{m['cores']} cores, {m['slots']} runs at once; the first Run alone on the idle server took "
             f"{result['alone_s']:.1f} s (median of {len(runs)}: {', '.join(f'{a:.1f}' for a in runs)} s).", "",
             f"| | {head} |", "|---" * (len(scs) + 1) + "|"]
    rows = [("pages opened", lambda sc: f"{sc['page_ready']['opened']} of {sc['sessions']}"),
            ("page ready, median (s)", lambda sc: f"{sc['page_ready']['median_s']:.2f}"),
            ("page ready, 95th percentile (s)", lambda sc: f"{sc['page_ready']['p95_s']:.2f}"),
            ("the monitor's session alone, median (s)", lambda sc: f"{sc['page_ready']['monitor_median_s']:.2f}"),
            ("server's peak memory (MB)", lambda sc: f"{sc['peak_memory_mb']:,.0f}"),
            ("CPU seconds: the server's process / the clients", lambda sc: f"{sc['server_cpu_s']:.1f} / "
                                                                       f"{sc['clients_cpu_s']:.1f}"),
            ("… of them while the first runs trained (s)", lambda sc: f"{sc['first_runs']['server_cpu_s']:.1f} / "
                                                                  f"{sc['first_runs']['clients_cpu_s']:.1f} in "
                                                                  f"{sc['first_runs']['seconds']:.1f}"),
            ("errors", lambda sc: str(len(sc["errors"]))),
            ("goal: page ready p95 ≤ 5 s", lambda sc: yes(sc["goals"]["page_ready_p95_le_5s"])),
            ("goal: every run finished", lambda sc: yes(sc["goals"]["every_run_finished"])),
            ("goal: k-th run within 1.2 × ⌈k / slots⌉ × alone", lambda sc: yes(sc["goals"]["kth_run_within_bound"]))]
    lines += [f"| {label} | " + " | ".join(cell(sc) for sc in scs) + " |" for label, cell in rows]
    lines += ["", "| Run pressed (k) | goal (s) | " + " | ".join(
        f"waited / finished after (s), {sc['arrival_s']:g} s" for sc in scs) + " |", "|---" * (len(scs) + 2) + "|"]
    n = max(len(sc["runs"]) for sc in scs)
    for k in range(1, n + 1):
        cells = []
        for sc in scs:
            r = next((r for r in sc["runs"] if r.get("k") == k), None)
            cells.append(f"{r['wait_s']:.1f} / {r['run_s']:.1f}" if r and "run_s" in r else "did not finish")
        bound = 1.2 * math.ceil(k / m["slots"]) * result["alone_s"]
        lines.append(f"| {k} | {bound:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def server_log_errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(r"\bERROR\b|Traceback|Exception", line)]


def scenario(server: PanelServer, sessions: int, runs: int, arrival: float, timeout: float, slots: int,
             alone: float) -> dict:
    """One class: ``sessions`` students over ``arrival`` seconds, ``runs`` of them pressing Run; its record."""
    logged = len(server.log.read_text(errors="replace"))
    server_cpu, clients_cpu = cpu_seconds(server.proc.pid), cpu_seconds(os.getpid())
    memory: dict = {}
    stop = threading.Event()
    watcher = threading.Thread(target=peak_memory, args=(server.proc.pid, stop, memory), daemon=True)
    watcher.start()
    try:
        records, errors = run_class(server.url, sessions, runs, arrival, timeout)
    finally:
        stop.set()
        watcher.join(5)
    server_cpu, clients_cpu = cpu_seconds(server.proc.pid) - server_cpu, cpu_seconds(os.getpid()) - clients_cpu
    errors += [f"server log: {line}" for line in server_log_errors(server.log.read_text(errors="replace")[logged:])]
    ready = [r["ready_s"] for r in records if "ready_s" in r]
    pressed = sorted((r for r in records if r.get("presses")), key=lambda r: r.get("k", 10**6))
    # the first runs' time (the first press to the last of the first ``slots`` finished): the cores they shared
    first = [r for r in pressed if r.get("k", 10**6) <= slots and "finished" in r]
    window = (min(r["pressed"] for r in first), max(r["finished"] for r in first)) if first else None
    first_cpu = cpu_between(memory.get("cpu", []), *window) if window else (float("nan"), float("nan"))
    for r in pressed:
        if "run_s" in r:
            r["bound_s"] = 1.2 * math.ceil(r["k"] / slots) * alone
            r["within"] = r["run_s"] <= r["bound_s"]
        for key in ("pressed", "finished"):
            r.pop(key, None)
    out = {
        "sessions": sessions, "runs_pressed": runs, "arrival_s": arrival,
        "page_ready": {"median_s": statistics.median(ready) if ready else None,
                       "p95_s": percentile(ready, 95) if ready else None, "max_s": max(ready, default=None),
                       "monitor_median_s": statistics.median(r["monitor_s"] for r in records if "monitor_s" in r)
                       if ready else None,
                       "landing_median_s": statistics.median(r["landing_s"] for r in records if "landing_s" in r)
                       if ready else None,
                       "opened": len(ready)},
        "runs": pressed,
        "peak_memory_mb": memory.get("peak", 0) / 2**20,
        "server_cpu_s": server_cpu, "clients_cpu_s": clients_cpu,
        "first_runs": {"seconds": window[1] - window[0] if window else None, "server_cpu_s": first_cpu[0],
                       "clients_cpu_s": first_cpu[1]},
        "errors": errors,
    }
    out["goals"] = {
        "page_ready_p95_le_5s": bool(ready) and len(ready) == sessions and out["page_ready"]["p95_s"] <= 5.0,
        "every_run_finished": len(pressed) == runs and all("run_s" in r for r in pressed),
        "kth_run_within_bound": all(r.get("within", False) for r in pressed),
        "no_errors": not errors,
    }
    return out


def report(sc: dict) -> None:
    pr = sc["page_ready"]
    print(f"{sc['sessions']} students over {sc['arrival_s']:g} s: page ready median {pr['median_s']:.2f} s, "
          f"p95 {pr['p95_s']:.2f} s ({pr['opened']} opened; the monitor's session alone: median "
          f"{pr['monitor_median_s']:.2f} s)", flush=True)
    for r in sc["runs"]:
        if "run_s" in r:
            print(f"  run k={r['k']:2d}: waited {r['wait_s']:6.1f} s, done after {r['run_s']:6.1f} s "
                  f"(goal {r['bound_s']:6.1f} s){'' if r['within'] else '  OVER'}")
    print(f"  server peak memory {sc['peak_memory_mb']:.0f} MB; errors: {sc['errors'] or 'none'}")
    print("  goals: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in sc["goals"].items()), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--arrival", type=float, nargs="+", default=[30.0, 150.0],
                    help="seconds over which the students arrive: one class per value, on the same server")
    ap.add_argument("--alone-runs", type=int, default=ALONE_RUNS, help="runs alone whose median is the time alone")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take at most")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)

    slots, cores = default_slots(), len(os.sched_getaffinity(0))
    load = os.getloadavg()[0]
    print(f"machine: {cores} cores, {slots} run slots, load average {load:.2f} at the start", flush=True)
    t0 = time.monotonic()
    server = PanelServer([str(p) for p in app_files()])
    print(f"server up and warm in {time.monotonic() - t0:.1f} s", flush=True)
    try:
        idle = wait_idle(server.proc.pid)
        print(f"server idle after {idle:.1f} s more", flush=True)
        alone_runs = [run_alone(server.url, args.timeout) for _ in range(args.alone_runs)]
        alone = statistics.median(alone_runs)
        print(f"alone: the first Run's defaults trained in {', '.join(f'{a:.1f}' for a in alone_runs)} s "
              f"(median {alone:.1f} s)", flush=True)
        scenarios = []
        for arrival in args.arrival:
            settled = settle(server.proc.pid)
            scenarios.append(scenario(server, args.sessions, args.runs, arrival, args.timeout, slots, alone))
            scenarios[-1]["settled_after_s"] = settled
            report(scenarios[-1])
    finally:
        server.close()
    result = {
        "machine": {"cores": cores, "slots": slots, "cpu": platform.processor() or platform.machine(),
                    "load_at_start": load},
        "settings": {"sessions": args.sessions, "runs": args.runs, "arrivals_s": args.arrival,
                     "served": "every page, as cofiviz serve",
                     "run": "the monitor's first Run at its defaults (LCR on MovieLens 100K)"},
        "idle_wait_s": idle,
        "alone_runs_s": alone_runs,
        "alone_s": alone,
        "scenarios": scenarios,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(all(sc["goals"].values()) for sc in scenarios) else 1


if __name__ == "__main__":
    sys.exit(main())
