"""Shared fixtures: a real `panel serve` process and a real headless Chromium driven by Playwright."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import tempfile
import time
import warnings
import urllib.request
from pathlib import Path

import pytest

# a test process beside another (pytest-xdist's workers) computes on one thread, numba's and the BLAS's alike, so
# that two processes share two cores instead of four spinning threads contending for them; the servers and
# notebooks the tests start inherit it
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

from cofiviz.dashboards.serving import (KERNELS_ROUTE, SERVER_STATUS, WEBSOCKET_MAX_MESSAGE,  # noqa: F401
                                        serve_command)       # tests import them from here

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("COFIVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def server_env() -> dict:
    """What a server started by the tests runs with: the recommendations page trains its models for a few
    iterations (not tuned for minutes) into a folder of its own."""
    return {"COFIVIZ_RECOMMENDERS_QUICK": "1",
            "COFIVIZ_RECOMMENDERS_DIR": tempfile.mkdtemp(prefix="cofiviz-recommenders-")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, log: Path, timeout: float, what: str) -> bool:
    """Poll ``url`` until it answers 200 (True) or ``timeout`` passes (False); a dead ``proc`` raises
    with the end of its ``log``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return True
        except (OSError, http.client.HTTPException):   # not up yet, or an answer cut short while it starts
            time.sleep(0.5)
    return False


def server_warm(url: str, pid: int) -> bool:
    """Whether the server ``pid`` at ``url`` says that its warm-up behind it is done (its kernels loaded, its data
    read, its dashboards built once: ``cofiviz.dashboards.serving.SERVER_STATUS``)."""
    try:
        with urllib.request.urlopen(f"{url}/{KERNELS_ROUTE}/{SERVER_STATUS}", timeout=5) as resp:
            said = json.loads(resp.read())
    except (OSError, ValueError, http.client.HTTPException):
        return False
    return said.get("server_pid") == pid and said.get("state") == "warm"


class PanelServer:
    """`panel serve` on a free localhost port, as `cofiviz serve` runs it, stopped when the test module ends.

    The server answers at once and warms up behind it: its background warm-up loads (or, on a fresh clone,
    compiles) the kernels, then the server loads them, the data and its dashboards. With ``setup`` the tests start
    once that is done, as a visitor of a warm server finds the pages; on a busy machine a cold compile takes
    minutes, so the wait is long and ends early only if the server exits.
    """

    def __init__(self, apps: list[str], setup: bool = True, timeout: float = 900.0, env: dict | None = None):
        self.port = free_port()
        self.log = ARTIFACTS / f"panel-serve-{self.port}.log"
        ARTIFACTS.mkdir(exist_ok=True)
        cmd = serve_command(apps, port=self.port, address="127.0.0.1", setup=setup)
        self._logf = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._logf, stderr=subprocess.STDOUT,
                                     env={**os.environ, **server_env(), **(env or {})})
        # static files answer without building a session: polling an app's page on a loaded machine starts a
        # session (a whole notebook run) at each poll that times out
        deadline = time.monotonic() + timeout
        if wait_for_http(f"{self.url}/static/js/bokeh.min.js", self.proc, self.log, timeout, "panel serve"):
            while setup and not server_warm(self.url, self.proc.pid):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            else:
                return
        self.close()
        raise RuntimeError(f"panel serve did not warm up within {timeout} s: {self.log.read_text()[-3000:]}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._logf.close()


def forkservers(srv: PanelServer) -> list:
    """The training workers' forkservers under a test server's process."""
    import psutil

    found = []
    for p in psutil.Process(srv.proc.pid).children():
        try:
            if "forkserver" in " ".join(p.cmdline()):
                found.append(p)
        except psutil.Error:          # one that has ended (the kernels' warm-up, once done)
            pass
    return found


#: pages whose tests need no server of their own (nothing trains, no setting of the environment): one server per
#: pytest worker serves them together (:func:`quiet_pages`)
QUIET_PAGES = ["apps/losses.py", "apps/overview.py", "apps/playground.py"]


@pytest.fixture(scope="session")
def quiet_pages():
    """One server of :data:`QUIET_PAGES` for every test of this worker that opens one of them."""
    srv = PanelServer(QUIET_PAGES)
    yield srv
    srv.close()


@pytest.fixture(scope="session")
def chromium():
    """A headless Debian Chromium launched by Playwright (never a downloaded browser)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's chromium (`make test` installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page_errors():
    """Collects console errors and page exceptions of the pages a test opens, and closes those pages when the test
    ends (an open page keeps its session, and whatever it polls or draws, on the machine the next tests share)."""
    errors: list[str] = []
    pages = []

    def attach(page):
        page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}")
                if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
        pages.append(page)
        return page

    attach.errors = errors
    yield attach
    for page in pages:
        if not page.is_closed():
            page.close()


def screenshot(page, name: str) -> Path | None:
    """Save a screenshot under test-artifacts/screenshots/ and return its path.

    A screenshot is an artifact for people to look at, not a check: when a busy page cannot be captured
    within a minute (a browser redrawing a live plot on a loaded machine), the test goes on with a warning.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    out = ARTIFACTS / "screenshots" / f"{name}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        page.screenshot(path=str(out), full_page=True, timeout=60_000)
    except PlaywrightTimeout:
        warnings.warn(f"screenshot {name!r} not taken: the page did not settle within 60 s")
        return None
    return out


#: the number of canvases in the page, shadow roots included (every Bokeh plot draws into one)
_CANVASES_JS = """() => {
    const walk = (root) => { let n = root.querySelectorAll('canvas').length;
        root.querySelectorAll('*').forEach(e => { if (e.shadowRoot) n += walk(e.shadowRoot); }); return n; };
    return walk(document); }"""


#: every plot (a Bokeh canvas wider than a toolbar icon) and table of the page, shadow roots included, with the
#: page's own scroll width and whether the sidebar is open
PAGE_BOXES_JS = """() => {
  const out = {plots: [], tables: [], scroll: document.scrollingElement.scrollWidth,
               sidebar: (document.getElementById('sidebar') || {classList: {contains: () => false}}).classList.contains('show')};
  const walk = root => root.querySelectorAll('*').forEach(el => {
    if (el.tagName === 'CANVAS' || el.tagName === 'TABLE') {
      const r = el.getBoundingClientRect();
      if (r.width > 60 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden')
        (el.tagName === 'CANVAS' ? out.plots : out.tables).push([r.left, r.right, r.width]);
    }
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  walk(document);
  return out; }"""


def settled_boxes(page, still_ms: int = 600, every_ms: int = 150, timeout_ms: int = 15_000) -> dict:
    """:data:`PAGE_BOXES_JS` once the page's layout holds still: the same plots, tables and scroll width read
    again and again for ``still_ms`` (the plots lay themselves out a few frames after the window's size changed,
    and a loaded machine takes longer), at most ``timeout_ms``; the last reading then."""
    # two frames: the resize observers have fired and the plots have begun to lay themselves out
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    last, since = None, time.monotonic()
    deadline = since + timeout_ms / 1000
    while True:
        boxes = page.evaluate(PAGE_BOXES_JS)
        now = time.monotonic()
        if boxes != last:
            last, since = boxes, now
        elif now - since >= still_ms / 1000 or now > deadline:
            return boxes
        page.wait_for_timeout(every_ms)


def count_canvases(page) -> int:
    """Canvases in the page, shadow roots included (every Bokeh plot draws into one)."""
    return page.evaluate(_CANVASES_JS)


def heading_sizes(page, tag: str = "h4") -> list[str]:
    """The computed font size of every ``tag`` heading in the page, shadow roots included."""
    return page.evaluate("""tag => {
      const sizes = [];
      const walk = root => root.querySelectorAll('*').forEach(el => {
        if (el.tagName === tag.toUpperCase()) sizes.push(getComputedStyle(el).fontSize);
        if (el.shadowRoot) walk(el.shadowRoot);
      });
      walk(document);
      return sizes;
    }""", tag)


def wait_for_canvases(page, n: int = 1, timeout: float = 30_000) -> int:
    """Wait until the page has drawn at least ``n`` canvases; returns how many it has."""
    page.wait_for_function(f"() => ({_CANVASES_JS})() >= {int(n)}", timeout=timeout)
    return count_canvases(page)


def playground_ndcg(page):
    """NDCG@5 as the metric playground's values table shows it (its first number), or None before it renders."""
    import re

    cells = page.locator(".cofiviz-metric-values td")
    cells.first.wait_for(timeout=30_000)
    nums = re.findall(r"\d+\.\d{3}", " ".join(cells.all_inner_texts()))
    return nums[0] if nums else None
