"""`cofiviz serve`, the command `make serve` runs: every app and the landing page, from a real process."""

import os
import subprocess
import sys
import urllib.request

import pytest

from cofiviz.dashboards.serving import app_files, serve_command
from conftest import ARTIFACTS, ROOT, free_port, server_env, wait_for_http

pytestmark = pytest.mark.browser


def test_serve_command_serves_every_app_with_the_landing_page():
    cmd = serve_command(port=5123, address="localhost")
    apps = [str(p) for p in app_files(ROOT / "apps")]
    assert len(apps) >= 6
    for flag in ("--index", "--setup", "--websocket-max-message-size"):
        assert flag in cmd
    assert cmd[cmd.index("--allow-websocket-origin") + 1] == "localhost:5123"


def test_cofiviz_serve_answers_on_its_port():
    port = free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"cofiviz-serve-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cofiviz.cli", "serve", "--port", str(port), "--address",
                                 "127.0.0.1"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, **server_env()})
        try:
            assert wait_for_http(f"http://127.0.0.1:{port}/", proc, log, 300, "cofiviz serve"), log.read_text()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as resp:
                page = resp.read().decode()
            for path in app_files(ROOT / "apps"):
                assert f'href="./{path.stem}"' in page
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/thumbnails/monitor.png", timeout=30) as resp:
                assert resp.read()[:4] == b"\x89PNG"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert "serving the dashboards at" in log.read_text()
