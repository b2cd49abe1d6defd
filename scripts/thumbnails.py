"""Regenerate the landing page's thumbnails: one screenshot of every dashboard, taken in Debian's chromium.

    .venv/bin/python scripts/thumbnails.py [--chromium /usr/bin/chromium]

Serves the apps as ``cofiviz serve`` does, waits until the server says its warm-up is done (its kernels ready: no
page then shows the notice of kernels being prepared), opens each page at 1200×800, waits until its content has
drawn and writes ``cofiviz/dashboards/thumbnails/<app>.png`` at 0.4 scale (480×320, a few tens of kB each).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

from cofiviz.dashboards.catalog import APPS, THUMBNAILS
from cofiviz.dashboards.serving import KERNELS_ROUTE, SERVER_STATUS, app_files, serve_command

ROOT = Path(__file__).resolve().parents[1]
#: what to do on a page before its picture is taken, so that the thumbnail shows the page at work
ACTIONS = {"monitor": lambda page: page.get_by_role("button", name="Run").click()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_warm(url: str, proc: subprocess.Popen, timeout: float = 900) -> None:
    """Wait until the server ``proc`` at ``url`` says its warm-up behind it is done (minutes with a cold cache)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"panel serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/{KERNELS_ROUTE}/{SERVER_STATUS}", timeout=5) as resp:
                said = json.loads(resp.read())
            if said.get("server_pid") == proc.pid and said.get("state") == "warm":
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"{url} did not warm up within {timeout} s")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--settle", type=float, default=8.0, help="seconds to let a page draw after it loaded")
    args = p.parse_args(argv)
    THUMBNAILS.mkdir(exist_ok=True)
    port = _free_port()
    apps = app_files(ROOT / "apps")
    proc = subprocess.Popen(serve_command(apps, port=port, address="127.0.0.1"), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_warm(url, proc)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
            context = browser.new_context(viewport={"width": 1200, "height": 800}, device_scale_factor=0.4)
            for path in apps:
                slug = path.stem
                page = context.new_page()
                page.goto(f"{url}/{slug}", wait_until="networkidle", timeout=180_000)
                if slug in ACTIONS:
                    ACTIONS[slug](page)
                page.wait_for_timeout(args.settle * 1000)
                out = THUMBNAILS / f"{slug}.png"
                page.screenshot(path=str(out))
                page.close()
                known = "" if slug in APPS else " (not in cofiviz.dashboards.catalog.APPS: add its description)"
                print(f"{out.relative_to(ROOT)}: {out.stat().st_size / 1024:.0f} kB{known}")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
