"""How soon a fresh clone's ``make serve`` answers, and how soon its kernels are ready; a benchmark.

What a new user does: ``git clone`` this repository (its committed state) into a temporary folder, ``make install``
there (timed on its own), then ``make serve`` with numba's cache empty (``NUMBA_CACHE_DIR`` pointing at an empty
folder: an editable install caches next to the sources, in ``__pycache__``, which a fresh clone has none of; the
trained recommenders go to an empty folder too). From the start of ``make serve`` it records, in seconds:

- ``landing_s``: the landing page's first HTTP 200 (polled every 0.1 s), and whether that first page says that
  the kernels are being prepared (``landing_says_preparing``, with its sentence);
- for the metric playground and the training monitor, opened in Debian's Chromium as soon as the landing page
  answers: when each showed its "being prepared" notice (``notice_s``) and its real content (``content_s``: the
  playground's values table, the monitor's status line);
- ``done_s``: when the kernels' status (``/cofiviz-kernels/status.json``, polled every 0.25 s) said ``done``, with
  the seconds the warm-up process itself measured, and the status at each change (``timeline``);
- ``warm_s``: when the server said its warm-up behind it (kernels loaded, data read, dashboards built) was done.

The goals it measures: the landing page within 20 s of ``make serve`` on 2 cores, the pages' notices at once and
their content once their kernels are ready. The load average is printed before and after.

``--venv PATH`` skips the install (for a quicker look): the clone's ``.venv`` is a link to PATH, an installed
venv of the same ``pyproject.toml`` (its stamp present), and ``PYTHONPATH`` puts the clone's sources first, so
that the clone's code runs; ``make -n serve`` is checked to install nothing first, so that PATH is never changed.

Usage::

    .venv/bin/python benchmarks/bench_serve_cold.py [--json OUT] [--venv PATH] [--keep] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
#: what each page shows once built
CONTENT = {"playground": ".cofiviz-metric-values td", "monitor": ".cofiviz-monitor-status"}
STATUS = "cofiviz-kernels/status.json"
SERVER = "cofiviz-kernels/server.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def _json(url: str) -> dict | None:
    code, text = _get(url)
    try:
        return json.loads(text) if code == 200 else None
    except ValueError:
        return None


def _stamp(clone: Path) -> str:
    """The Makefile's stamp name for the clone's ``pyproject.toml`` (``cksum``'s CRC)."""
    out = subprocess.run("cat pyproject.toml | cksum", shell=True, cwd=clone, capture_output=True, text=True,
                         check=True)
    return f".installed-{out.stdout.split()[0]}"


def _reuse_venv(clone: Path, venv: Path, env: dict) -> None:
    """Link ``venv`` as the clone's ``.venv`` without letting ``make`` install into it."""
    stamp = venv / _stamp(clone)
    if not stamp.is_file():
        raise SystemExit(f"{venv} has no {stamp.name}: it was installed from another pyproject.toml; drop --venv")
    (clone / ".venv").symlink_to(venv.resolve())
    old = stamp.stat().st_mtime - 60
    os.utime(clone / "pyproject.toml", (old, old))          # older than the stamp: make installs nothing
    dry = subprocess.run(["make", "-n", "serve"], cwd=clone, capture_output=True, text=True, env=env)
    if "pip" in dry.stdout or dry.returncode:
        raise SystemExit(f"make serve would install into {venv}:\n{dry.stdout}{dry.stderr}")
    env["PYTHONPATH"] = str(clone)


def _leftovers(work: Path) -> list[int]:
    """Processes still running from the clone or with its numba cache."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                environ = (proc / "environ").read_bytes()
            except OSError:
                continue
            if str(work) in cmd or str(work).encode() in environ:
                found.append(int(proc.name))
    return [p for p in found if p != os.getpid()]


def main(argv=None) -> dict:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=None, help="write the measurements to this file")
    ap.add_argument("--venv", default=None, type=Path, help="reuse this installed venv instead of `make install`")
    ap.add_argument("--repo", default=str(ROOT), help="the repository to clone (default: this one)")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its folder is printed)")
    ap.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds (default 900)")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="cofiviz-cold-"))
    clone = work / "cofiviz"
    subprocess.run(["git", "clone", "--quiet", args.repo, str(clone)], check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
    cache, recommenders = work / "numba-cache", work / "recommenders"
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COFIVIZ_", "NUMBA_", "VIRTUAL_ENV"))}
    env.update(NUMBA_CACHE_DIR=str(cache), COFIVIZ_RECOMMENDERS_DIR=str(recommenders))
    install_s = None
    if args.venv is not None:
        _reuse_venv(clone, args.venv, env)
    else:
        t0 = time.monotonic()
        subprocess.run(["make", "install"], cwd=clone, env=env, check=True)
        install_s = time.monotonic() - t0
    assert not any(clone.rglob("*.nbi")), "the clone has cached kernels"

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    load_before = os.getloadavg()
    log_path = work / "make-serve.log"
    out: dict = {"commit": commit, "venv": str(args.venv) if args.venv else "fresh (make install)",
                 "install_s": install_s, "machine": {"cores": os.cpu_count(), "load_before": load_before}}
    timeline: list[dict] = []
    pages: dict[str, dict] = {name: {} for name in CONTENT}
    landing_s = done_s = warm_s = None
    with sync_playwright() as pw, open(log_path, "w") as log:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        t0 = time.monotonic()
        proc = subprocess.Popen(["make", "serve", f"PORT={port}"], cwd=clone, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        opened: dict[str, object] = {}
        try:
            next_status = 0.0
            while time.monotonic() - t0 < args.timeout:
                now = time.monotonic() - t0
                if proc.poll() is not None:
                    raise RuntimeError(f"make serve exited with {proc.returncode}: {log_path.read_text()[-3000:]}")
                if landing_s is None:
                    code, html = _get(f"{url}/", timeout=2)
                    if code == 200:
                        landing_s = time.monotonic() - t0
                        tag = re.search(r'<div id="kernels-status"[^>]*>', html)
                        message = re.search(r'<p id="kernels-message">([^<]*)</p>', html)
                        out["landing_says_preparing"] = bool(tag and "hidden" not in tag.group(0))
                        out["landing_message"] = message.group(1).strip() if message else None
                        for name in CONTENT:
                            page = browser.new_page(viewport={"width": 1440, "height": 900})
                            page.goto(f"{url}/{name}", wait_until="commit")
                            opened[name] = page
                            pages[name]["opened_s"] = time.monotonic() - t0
                    else:
                        time.sleep(0.1)
                        continue
                for name, page in opened.items():
                    seen = pages[name]
                    if "notice_s" not in seen and page.locator(".cofiviz-preparing").count():
                        seen["notice_s"] = time.monotonic() - t0
                    if "content_s" not in seen and page.locator(CONTENT[name]).count():
                        seen["content_s"] = time.monotonic() - t0
                if now >= next_status:
                    next_status = now + 0.25
                    status = _json(f"{url}/{STATUS}")
                    if status is not None:
                        row = {"t": round(now, 2), "state": status["state"], "ready": len(status["ready"]),
                               "total": len(status["modules"])}
                        if not timeline or {k: v for k, v in timeline[-1].items() if k != "t"} != \
                                {k: v for k, v in row.items() if k != "t"}:
                            timeline.append(row)
                        if done_s is None and status["state"] in ("done", "failed"):
                            done_s = now
                            out["status"] = {k: status[k] for k in ("state", "seconds", "error", "message")}
                    server = _json(f"{url}/{SERVER}")
                    if warm_s is None and server is not None and server.get("state") == "warm":
                        warm_s = now
                if done_s is not None and warm_s is not None and all("content_s" in p for p in pages.values()):
                    break
                time.sleep(0.1)
            for name, page in opened.items():
                page.screenshot(path=str(work / f"{name}.png"))
        finally:
            browser.close()
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(3)
    left = _leftovers(work)
    for pid in left:        # the server's background processes end with it: anything left is a finding
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    out.update(landing_s=landing_s, done_s=done_s, warm_s=warm_s, pages=pages, timeline=timeline,
               leftover_processes=len(left))
    out["machine"]["load_after"] = os.getloadavg()
    print(f"{os.cpu_count()} cores, load average {load_before[0]:.2f} before, {out['machine']['load_after'][0]:.2f} "
          f"after; commit {commit[:10]}, {out['venv']}; seconds from the start of `make serve`")
    if install_s is not None:
        print(f"make install: {install_s:.1f} s")
    fmt = lambda v: "-" if v is None else f"{v:.1f}"   # noqa: E731
    print(f"landing page answered: {fmt(landing_s)} (says preparing: {out.get('landing_says_preparing')}: "
          f"{out.get('landing_message')!r})")
    for name, seen in pages.items():
        print(f"{name}: notice {fmt(seen.get('notice_s'))}, content {fmt(seen.get('content_s'))}")
    print(f"kernels done: {fmt(done_s)} (the warm-up process: {fmt((out.get('status') or {}).get('seconds'))} s); "
          f"server warm: {fmt(warm_s)}; processes left after the server ended: {len(left)}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    if args.keep:
        print(f"clone, log and screenshots kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return out


if __name__ == "__main__":
    main()
