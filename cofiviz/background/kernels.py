"""The numba kernels a server prepares behind it: a background warm-up process and the status file it writes.

A server answers at once and leaves its kernels to a process of their own, started by :func:`start`
(``cofiviz serve`` starts it before it becomes the server; a server's setup starts one when nothing did). The
process runs :func:`cofiviz.warmup` at a lower priority (:data:`~.training_process.NICENESS`, as the training
workers) with ``load=False``: on a fresh installation its parallel processes compile every kernel into numba's
cache, with the warm-up's locked cache writes; with a warm cache it only checks that every kernel loads. The modules
that the quick pages need come first (``first``). It ends when the server does: it watches its parent, and once
the parent is gone it ends its compiling processes, then itself.

How far it is goes into a small JSON file, :data:`STATUS` in a folder the server serves (the landing page polls
it; the pages read it with :func:`read_status`), written atomically (a file beside it, then renamed), by one
process at a time: :func:`start` writes the first, the warm-up process the others, and the server (:func:`wait`)
writes ``failed`` for a warm-up process that ended without a word::

    {"server_pid": 4242, "pid": 4243, "state": "compiling", "modules": ["cofiviz.util.elementary", ...],
     "ready": ["cofiviz.util.elementary"], "uncached": 1.0, "seconds": 12.5, "error": null,
     "message": "numba kernels are being compiled (first start of this installation): 1 of 22 modules ready"}

``state`` is ``starting`` (the process is importing cofiviz), ``compiling`` (kernels are missing from the
cache), ``loading`` (every kernel is cached; each is loaded once to check), ``done`` or ``failed``.
``server_pid`` is the server the status belongs to: a server ignores a status file another server left.
``$COFIVIZ_WARMUP_MODULES`` (comma-separated module names) restricts the modules a server's warm-up prepares, for
tests and benchmarks; a page that needs another module then waits for the warm-up to end and compiles it itself.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

from ..engine.warmup import PARALLEL_FROM, Progress, covers, default_jobs, warmup
from .training_process import NICENESS

__all__ = ["STATUS", "MODULES_ENV", "EVERY", "start", "read_status", "write_json", "status_of", "ready",
           "describe", "modules_from_environment", "process_alive", "wait", "prepares", "main"]

#: the status file's name, in the folder a server serves it from
STATUS = "status.json"
#: the environment variable that restricts the modules a server's warm-up prepares (comma-separated)
MODULES_ENV = "COFIVIZ_WARMUP_MODULES"
#: what a page that may run any model needs: every module the warm-up prepares
EVERY = ("*",)
#: the states after which nothing changes any more
FINAL = ("done", "failed")
#: seconds between two looks at the parent process
PARENT_POLL = 1.0
#: seconds the warm-up may take to end once its server is gone
GRACE = 10.0


def modules_from_environment() -> list[str] | None:
    """The modules ``$COFIVIZ_WARMUP_MODULES`` names, or None (every module) when it is unset or empty."""
    names = [m.strip() for m in os.environ.get(MODULES_ENV, "").split(",") if m.strip()]
    return names or None


def write_json(path: str | Path, data: dict) -> None:
    """Write ``data`` to ``path`` atomically: a reader sees the old file or the new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_status(folder: str | Path) -> dict | None:
    """The status in ``folder``, or None when there is none (or it cannot be read)."""
    try:
        return json.loads((Path(folder) / STATUS).read_text())
    except (OSError, ValueError):
        return None


def status_of(folder: str | Path, server_pid: int) -> dict | None:
    """The status in ``folder`` if it belongs to the server ``server_pid``, else None."""
    status = read_status(folder)
    return status if status is not None and status.get("server_pid") == server_pid else None


def ready(status: dict | None, needs: Sequence[str]) -> bool:
    """Whether the kernels of the modules ``needs`` are ready, as ``status`` says.

    ``needs`` names modules (``cofiviz.metrics``) or is :data:`EVERY`. No status (a server without a background
    warm-up), a final one or no needs: ready. Otherwise each module needs every module of the warm-up that covers
    it (:func:`cofiviz.engine.warmup.covers`: ``cofiviz.solvers`` waits for ``cofiviz.solvers.lap`` and the others) to
    be ready, and a module the warm-up does not prepare waits for its end.
    """
    if status is None or not needs or status.get("state") in FINAL:
        return True
    if tuple(needs) == EVERY:
        return False
    modules, done = status.get("modules") or [], set(status.get("ready") or [])
    for name in needs:
        parts = [m for m in modules if covers(m, name)]
        if not parts or not set(parts) <= done:
            return False
    return True


def describe(status: dict | None) -> str:
    """One sentence on the kernels for a reader: what is being done and how far it is."""
    if status is None:
        return "numba kernels: no background warm-up in this server"
    state = status.get("state")
    modules, done = status.get("modules") or [], status.get("ready") or []
    count = f"{len(done)} of {len(modules)} modules ready"
    if state == "starting":
        return "numba kernels are being prepared: checking numba's cache"
    if state == "compiling":
        why = "first start of this installation" if status.get("uncached", 1.0) >= PARALLEL_FROM \
            else "some changed since they were cached"
        return f"numba kernels are being compiled ({why}): {count}"
    if state == "loading":
        return f"numba kernels are being loaded from numba's cache: {count}"
    if state == "failed":
        return (f"preparing the numba kernels failed ({status.get('error') or 'no reason given'}); each page "
                "compiles what it needs when it runs")
    seconds = status.get("seconds")
    took = f" in {seconds:.0f} s" if isinstance(seconds, (int, float)) else ""
    verb = "compiled" if (status.get("uncached") or 0) > 0 else "checked"
    return f"numba kernels ready: {len(modules)} modules {verb}{took}"


def _status(server_pid: int, state: str, **fields) -> dict:
    out = {"server_pid": server_pid, "pid": os.getpid(), "state": state, "modules": [], "ready": [],
           "uncached": None, "seconds": None, "error": None, "updated": time.time()}
    out.update(fields)
    out["message"] = describe(out)
    return out


def start(folder: str | Path, server_pid: int | None = None, first: Sequence[str] = (),
          modules: Sequence[str] | None = None) -> subprocess.Popen:
    """Start the background warm-up for the server ``server_pid`` (default: this process), writing its status
    into ``folder`` (created if missing); the status says ``starting`` before this returns.

    Parameters
    ----------
    folder : path
        Where :data:`STATUS` goes (a folder the server serves).
    server_pid : int, optional
        The server the warm-up works for. The warm-up process is this process's child and ends when this
        process does, so the server is this process (or the process it becomes by ``exec``).
    first : sequence of str
        Modules to prepare before the others (those of the pages that need few kernels).
    modules : sequence of str, optional
        The modules to prepare (default: :func:`modules_from_environment`, else every module).

    Returns
    -------
    subprocess.Popen
        The warm-up process, in a session of its own: a Ctrl-C meant for the server does not reach it or its
        compiling processes, which end quietly once the server has.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    server_pid = os.getpid() if server_pid is None else server_pid
    modules = modules_from_environment() if modules is None else list(modules)
    cmd = [sys.executable, "-m", __name__, "--status", str(folder / STATUS), "--server-pid", str(server_pid),
           "--first", ",".join(first)]
    if modules:
        cmd += ["--modules", ",".join(modules)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
    # the process imports cofiviz (seconds) before it writes its own status: this one comes first
    write_json(folder / STATUS, _status(server_pid, "starting", pid=proc.pid, modules=list(modules or [])))
    return proc


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs; a child of this process that ended is reaped (it is no zombie left)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:  # not this process's child
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait(folder: str | Path, server_pid: int, poll: float = 0.5) -> dict | None:
    """Wait until the warm-up of the server ``server_pid`` has ended; its last status (None when it has none).

    A warm-up process that ended without saying so (killed) gets a ``failed`` status written for it; one that is
    this process's child is reaped once it has ended.
    """
    while True:
        status = status_of(folder, server_pid)
        if status is None:
            return None
        pid = status.get("pid")
        if status.get("state") in FINAL:
            if pid is not None:
                process_alive(pid)                          # reaped, when it has ended and is this process's child
            return status
        if pid is not None and not process_alive(pid):
            status = status_of(folder, server_pid)          # its last word, written just before it ended
            if status is not None and status.get("state") not in FINAL:
                status.update(state="failed", error="the warm-up process ended before it finished", updated=time.time())
                status["message"] = describe(status)
                write_json(Path(folder) / STATUS, status)
            return status
        time.sleep(poll)


def prepares(modules: Sequence[str] | None, needs: Sequence[str]) -> bool:
    """Whether a warm-up of ``modules`` (None: every module) prepares the kernels of ``needs`` (module names or
    :data:`EVERY`)."""
    if modules is None or not needs:
        return True
    if tuple(needs) == EVERY:
        return False
    return all(any(covers(m, name) for m in modules) for name in needs)


def _end_with_parent(parent: int, gone: threading.Event) -> None:
    """Once the parent process is gone, end this process: its compiling processes first (the warm-up then fails,
    and its pools shut down cleanly), then, if it still runs after :data:`GRACE` seconds, this process's group."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    gone.set()
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    if children:
        time.sleep(GRACE)
        if os.getpgid(0) == os.getpid():
            os.killpg(os.getpid(), signal.SIGTERM)
    os._exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """The warm-up process: ``python -m cofiviz.background.kernels --status FILE --server-pid PID``."""
    ap = argparse.ArgumentParser(prog="python -m cofiviz.background.kernels", description=__doc__.split("\n")[0])
    ap.add_argument("--status", required=True, help="the status file to write")
    ap.add_argument("--server-pid", type=int, required=True, help="the server the status belongs to")
    ap.add_argument("--first", default="", help="modules to prepare first, comma-separated")
    ap.add_argument("--modules", default="", help="the modules to prepare, comma-separated (default: every one)")
    ap.add_argument("--jobs", type=int, default=None, help="processes that compile at once (default: the cores)")
    args = ap.parse_args(argv)
    try:
        os.nice(NICENESS)
    except OSError:
        pass
    gone = threading.Event()
    threading.Thread(target=_end_with_parent, args=(os.getppid(), gone), daemon=True, name="cofiviz-parent").start()
    t0 = time.perf_counter()
    path, server = Path(args.status), args.server_pid
    first = [m for m in args.first.split(",") if m]
    modules = [m for m in args.modules.split(",") if m] or None
    last: list[Progress] = []

    def write(state: str, progress: Progress, **fields) -> None:
        if gone.is_set():       # the server and its folder are gone
            return
        try:
            write_json(path, _status(server, state, modules=progress.modules, ready=progress.ready,
                                     uncached=progress.uncached, seconds=time.perf_counter() - t0, **fields))
        except FileNotFoundError:
            if path.parent.is_dir():
                raise               # the server removes the folder as it ends: then there is no one to tell

    def progress(state: Progress) -> None:
        if not last:
            what = "compiling" if state.uncached > 0 else "loading"
            print(f"cofiviz: numba kernels: {what} {len(state.modules)} modules in the background "
                  f"({'parallel processes' if state.parallel else 'one process'}, lower priority)", flush=True)
        last[:] = [state]
        write("compiling" if state.uncached > 0 else "loading", state)

    try:
        warmup(jobs=args.jobs or default_jobs(), modules=modules, load=False, first=first, progress=progress)
    except Exception as exc:  # said in the status: the pages then compile what they need themselves
        if gone.is_set():
            return 0
        write("failed", last[0] if last else Progress(()), error=f"{type(exc).__name__}: {exc}")
        print(f"cofiviz: numba kernels: the background warm-up failed: {exc}", file=sys.stderr, flush=True)
        return 1
    state = last[0] if last else Progress(())
    write("done", state)
    print(f"cofiviz: numba kernels ready ({'compiled' if state.uncached > 0 else 'loaded'}) in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
