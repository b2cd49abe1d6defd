"""A server answers first and prepares its numba kernels behind it: the status, the pages that wait, the process.

The browser test starts ``cofiviz serve`` as ``make serve`` does, on an empty numba cache (``NUMBA_CACHE_DIR``)
with its background warm-up restricted to ``cofiviz.util.elementary`` (``$COFIVIZ_WARMUP_MODULES``, a second of
compiling), and holds the lock of every cache directory the warm-up writes (the lock of
:func:`cofiviz.engine.warmup.locked_cache_writes`), so that the warm-up cannot finish before the test lets it, however
fast or loaded the machine: meanwhile the landing page answers and says the kernels are being prepared, and the
dataset overview (which needs ``cofiviz.util.elementary``) shows its notice; once the lock is released, the overview
builds its content and the landing page stops saying it, both without a reload.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import psutil
import pytest
from numba.core.caching import _CacheLocator

from cofiviz.background import kernels as K
from cofiviz.engine import warmup as W
from cofiviz.dashboards.catalog import APPS, EVERY, first_kernels
from cofiviz.dashboards.serving import KERNELS_ROUTE, kernels_folder, serve_command, served_kernels_folder
from conftest import ARTIFACTS, ROOT, free_port, screenshot, server_env, wait_for_http



def _status(modules, ready, state="compiling", uncached=1.0):
    return {"server_pid": 1, "pid": 2, "state": state, "modules": list(modules), "ready": list(ready),
            "uncached": uncached}


def test_a_page_is_ready_once_every_module_that_covers_its_kernels_is():
    status = _status(["cofiviz.util.elementary", "cofiviz.metrics", "cofiviz.solvers.lap", "cofiviz.solvers.dense"],
                     ["cofiviz.util.elementary", "cofiviz.solvers.lap"])
    assert K.ready(status, ["cofiviz.util.elementary"])
    assert not K.ready(status, ["cofiviz.util.elementary", "cofiviz.metrics"])
    assert not K.ready(status, ["cofiviz.solvers"])              # cofiviz.solvers.dense is not ready yet
    assert not K.ready(status, ["cofiviz.models.lcr"])           # not prepared by this warm-up: waits for its end
    assert not K.ready(status, EVERY)
    assert K.ready(status, ())                                   # a page that needs no kernel
    assert K.ready(None, EVERY)                                  # a server without a background warm-up
    for final in ("done", "failed"):
        assert K.ready({**status, "state": final}, EVERY)


def test_the_status_says_what_is_done_in_words():
    assert K.describe(_status(["a", "b", "c"], ["a"])) == \
        "numba kernels are being compiled (first start of this installation): 1 of 3 modules ready"
    assert "some changed" in K.describe(_status(["a"], [], uncached=0.1))
    assert K.describe(_status(["a", "b"], ["a"], "loading", 0.0)) == \
        "numba kernels are being loaded from numba's cache: 1 of 2 modules ready"
    assert "checking numba's cache" in K.describe(_status([], [], "starting"))
    assert "compiled in 12 s" in K.describe({**_status(["a"], ["a"], "done"), "seconds": 12.2})
    failed = K.describe({**_status(["a"], [], "failed"), "error": "WarmupError: boom"})
    assert "failed (WarmupError: boom)" in failed and "compiles what it needs" in failed


def test_every_page_names_kernels_the_warmup_prepares():
    """A module a page waits for must be one the warm-up runs (or part of one), else the page would wait for the
    warm-up's end; the quick pages' modules are prepared first."""
    known = [name for name, _ in W._targets()]
    for entry in APPS.values():
        if entry.kernels != EVERY:
            for name in entry.kernels:
                assert any(W.covers(m, name) for m in known), (entry.slug, name)
    assert K.prepares(None, EVERY) and not K.prepares(["cofiviz.metrics"], EVERY)
    assert K.prepares(["cofiviz.util.elementary", "cofiviz.metrics"], APPS["playground"].kernels)
    assert not K.prepares(["cofiviz.util.elementary"], APPS["playground"].kernels)
    assert set(first_kernels()) == {n for e in APPS.values() if e.kernels != EVERY for n in e.kernels}
    assert APPS["monitor"].kernels == EVERY       # it trains any model


def test_the_command_line_serves_the_folder_of_the_kernels_status_per_port():
    cmd = serve_command(port=5123, address="localhost")
    folder = served_kernels_folder(cmd)
    assert folder == kernels_folder(5123) and folder.is_dir() and folder != kernels_folder(5124)
    assert f"{KERNELS_ROUTE}={folder}" in cmd[cmd.index("--static-dirs"):]


def test_the_warmup_process_writes_its_status_and_ends_with_its_parent(tmp_path):
    """Started by a parent that then exits (a server that ends), the warm-up process and its compiling process end
    too; the status said ``starting`` before ``start`` returned, then ``compiling``."""
    (tmp_path / "cofiviz_test_slow.py").write_text("import time\n\ndef warmup():\n    time.sleep(600)\n")
    folder = tmp_path / "status"
    parent = textwrap.dedent(f"""
        import json, os, sys, time
        from cofiviz.background import kernels as K
        proc = K.start({str(folder)!r}, modules=["cofiviz_test_slow"])
        print(json.dumps(K.read_status({str(folder)!r})), flush=True)
        print(proc.pid, flush=True)
        while (K.read_status({str(folder)!r}) or {{}}).get("state") != "compiling":
            time.sleep(0.2)
    """)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    first, pid = out.stdout.splitlines()[:2]
    assert json.loads(first)["state"] == "starting" and json.loads(first)["pid"] == int(pid)
    status = K.read_status(folder)
    assert status["state"] == "compiling" and status["modules"] == ["cofiviz_test_slow"] and status["ready"] == []
    try:
        warm = psutil.Process(int(pid))
        family = [warm] + warm.children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    gone, alive = psutil.wait_procs(family, timeout=120)
    assert alive == [], [p.cmdline() for p in alive]


class HeldCacheWrites:
    """Holds the write lock of every directory of numba's cache under ``cache`` that cofiviz's kernels write to,
    until :meth:`release`: a warm-up compiles, then waits before its first write."""

    def __init__(self, cache: Path):
        self.locks = []
        for folder in sorted({p.parent for p in (ROOT / "cofiviz").rglob("*.py")}):
            where = cache / _CacheLocator.get_suitable_cache_subpath(str(folder / "any.py"))
            where.mkdir(parents=True, exist_ok=True)
            lock = open(where / W._LOCK_NAME, "a")
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.locks.append(lock)

    def release(self) -> None:
        for lock in self.locks:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
        self.locks = []


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read().decode()


@pytest.mark.browser
def test_the_server_answers_first_and_a_page_opens_once_its_kernels_are_ready(tmp_path, chromium):
    cache = tmp_path / "numba"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"serve-first-{port}.log"
    env = {**os.environ, **server_env(), "NUMBA_CACHE_DIR": str(cache), K.MODULES_ENV: "cofiviz.util.elementary"}
    held = HeldCacheWrites(cache)
    out = open(log, "w")
    proc = subprocess.Popen([sys.executable, "-m", "cofiviz.cli", "serve", "--port", str(port), "--address",
                             "127.0.0.1"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        browser = chromium
        # the landing page answers while the warm-up waits to write its first kernel, and says so
        assert wait_for_http(f"{url}/", proc, log, 300, "cofiviz serve"), log.read_text()
        html = _get(f"{url}/")
        tag = re.search(r'<div id="kernels-status"[^>]*>', html).group(0)
        assert "hidden" not in tag and "numba kernels are being" in html, html[:3000]
        status = json.loads(_get(f"{url}/{KERNELS_ROUTE}/{K.STATUS}"))
        assert status["state"] in ("starting", "compiling") and status["server_pid"] == proc.pid
        landing = browser.new_page(viewport={"width": 1024, "height": 800})
        landing.goto(f"{url}/", wait_until="domcontentloaded")
        assert landing.locator("#kernels-status").is_visible()
        assert landing.locator("#app-overview .preparing").is_visible()
        assert landing.locator("#app-monitor .preparing").is_visible()
        # a page whose kernels are not ready says so
        overview = browser.new_page(viewport={"width": 1024, "height": 800})
        overview.goto(f"{url}/overview", wait_until="domcontentloaded")
        overview.locator(".cofiviz-preparing").first.wait_for(timeout=120_000)
        overview.get_by_text("Dataset overview is being prepared").wait_for(timeout=30_000)
        assert overview.get_by_text("numba kernels are being").count() == 1
        assert overview.locator(".cofiviz-preparing code", has_text="cofiviz.util.elementary").count() == 1
        screenshot(overview, "serve-first-overview-preparing")
        screenshot(landing, "serve-first-landing-preparing")
        assert not K.ready(json.loads(_get(f"{url}/{KERNELS_ROUTE}/{K.STATUS}")), ["cofiviz.util.elementary"])

        # the warm-up writes its kernels: the page builds its content, the landing page stops saying it
        held.release()
        overview.locator("text=100,000").first.wait_for(timeout=300_000)
        assert overview.locator(".cofiviz-preparing").count() == 0
        landing.locator("#kernels-status").wait_for(state="hidden", timeout=120_000)
        assert landing.locator("#app-overview .preparing").is_hidden()
        assert landing.locator("#app-monitor .preparing").is_hidden()     # the warm-up has ended
        status = json.loads(_get(f"{url}/{KERNELS_ROUTE}/{K.STATUS}"))
        assert status["state"] == "done" and status["ready"] == ["cofiviz.util.elementary"], status
        assert overview.get_by_text("is being prepared").count() == 0
        screenshot(overview, "serve-first-overview-ready")
        for page in (landing, overview):
            page.close()
    finally:
        held.release()
        proc.terminate()
        proc.wait(timeout=60)
        out.close()
    text = log.read_text()
    assert "numba kernels are prepared behind it" in text and "numba kernels ready (compiled)" in text, text


@pytest.mark.parametrize("ready", [0, 1, 2, 22])
def test_a_waiting_page_shows_its_notice_with_the_progress(tmp_path, ready):
    """The notice of a page whose kernels are not ready, at every step of a warm-up's progress; the page's own
    content is not built yet."""
    import panel as pn

    from cofiviz.dashboards import gate

    modules = [f"cofiviz.models.m{i}" for i in range(21)] + ["cofiviz.metrics"]
    done = modules[:ready] if ready < len(modules) else modules[:-1]
    K.write_json(tmp_path / K.STATUS, {**_status(modules, done), "server_pid": os.getpid()})
    built = []
    gate.watch_kernels(tmp_path)
    try:
        page = gate.app_page("playground", lambda: built.append(1) or pn.pane.Markdown("content"))
    finally:
        gate.watch_kernels(None)
    assert built == []
    notice = page.main[0][0]
    text = notice.objects[0].object
    assert "Metric playground is being prepared" in text and f"{len(done)} of 22 modules ready" in text
    bar = notice.objects[1]
    assert (bar.max, bar.value) == (22, len(done))


def test_a_server_without_its_setup_serves_no_kernels_status():
    assert served_kernels_folder(serve_command(port=5125, setup=False)) is None
