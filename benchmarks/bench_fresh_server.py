"""How soon a fresh server's recommendations page shows its models; a benchmark.

A fresh server is ``cofiviz serve`` as ``make serve`` starts it (every dashboard, the warm-up, the numba cache as
the install left it) with an empty folder of trained recommenders (``$COFIVIZ_RECOMMENDERS_DIR``): its
background worker fits every model on MovieLens 100K with the shipped settings
(:data:`cofiviz.background.recommenders.SETTINGS_FILE`). The benchmark launches it, opens the recommendations
page in Debian's Chromium as soon as the server answers, and records, from the launch:

- when the server answered;
- when each model's folder was complete (the worker's ``meta.json``, polled every 0.2 s), and the fit seconds
  the worker measured;
- when the page first said that 8 models, and then all of them, were trained (its progress line, read every
  0.5 s; the page checks the pool every ``POLL_MS``).

The goal it measures: every model shown within 180 s on 2 cores, the first eight within 30 s. The machine is
shared: the load average is printed before and after.

Usage::

    .venv/bin/python benchmarks/bench_fresh_server.py [--json OUT] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FIRST = 8
#: the page's progress line
PROGRESS = re.compile(r"models are trained")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


def _shown(text: str, total: int) -> int | None:
    """The number of trained models the page's progress line says, or None when it says none."""
    if f"All {total} models are trained" in text:
        return total
    m = re.search(r"(\d+) of (\d+) models are trained", text)
    return int(m.group(1)) if m else None


def main(argv=None) -> dict:
    from playwright.sync_api import sync_playwright

    from cofiviz.background.recommenders import META, ordered, shipped_settings
    from cofiviz.dashboards.serving import serve_command
    from cofiviz.models import available_models

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=None, help="write the measurements to this file")
    ap.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds (default 900)")
    args = ap.parse_args(argv)
    names = ordered(available_models())
    total = len(names)
    folder = Path(tempfile.mkdtemp(prefix="cofiviz-bench-fresh-"))
    port = _free_port()
    env = {**os.environ, "COFIVIZ_RECOMMENDERS_DIR": str(folder)}
    env.pop("COFIVIZ_RECOMMENDERS_QUICK", None)
    load_before = os.getloadavg()[0]
    log = open(folder.parent / f"{folder.name}.log", "w")
    t0 = time.monotonic()
    proc = subprocess.Popen(serve_command(port=port, address="127.0.0.1"), stdout=log, stderr=subprocess.STDOUT,
                            env=env)
    url = f"http://127.0.0.1:{port}"
    ready: dict[str, float] = {}
    page_at: dict[int, float] = {}
    answered = None
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
            page = None
            next_read = 0.0
            while time.monotonic() - t0 < args.timeout:
                now = time.monotonic() - t0
                if proc.poll() is not None:
                    raise RuntimeError(f"the server exited with {proc.returncode}; its log: {log.name}")
                for name in names:
                    if name not in ready and (folder / name / META).is_file():
                        ready[name] = now
                if answered is None and _answers(f"{url}/static/js/bokeh.min.js"):
                    answered = time.monotonic() - t0
                    page = browser.new_page(viewport={"width": 1440, "height": 900})
                    page.goto(f"{url}/recommendations", wait_until="domcontentloaded")
                if page is not None and now >= next_read:
                    next_read = now + 0.5
                    texts = page.get_by_text(PROGRESS).all_inner_texts()     # pierces Panel's shadow roots
                    count = max((_shown(t, total) or 0 for t in texts), default=0)
                    for k in (FIRST, total):
                        if count >= k and k not in page_at:
                            page_at[k] = time.monotonic() - t0
                if total in page_at:
                    break
                time.sleep(0.2)
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    settings = shipped_settings()
    rows = []
    for name in names:
        meta = json.loads((folder / name / META).read_text()) if name in ready else {}
        rows.append({"model": name, "ready_s": ready.get(name), "fit_s": meta.get("seconds"),
                     "shipped_fit_s": settings.get(name, {}).get("fit_seconds")})
    out = {"machine": {"cores": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()[0]},
           "server_answered_s": answered, "page_first8_s": page_at.get(FIRST), "page_all_s": page_at.get(total),
           "models": rows}
    print(f"{os.cpu_count()} cores, load average {load_before:.2f} before, {out['machine']['load_after']:.2f} "
          f"after; seconds from the launch of `cofiviz serve`")
    print(f"server answered: {answered if answered is None else f'{answered:.1f}'}")
    print(f"{'model':<9} {'ready at':>9} {'fit s':>7} {'shipped fit s':>14}")
    for r in rows:
        at = "-" if r["ready_s"] is None else f"{r['ready_s']:.1f}"
        fit = "-" if r["fit_s"] is None else f"{r['fit_s']:.1f}"
        print(f"{r['model']:<9} {at:>9} {fit:>7} {r['shipped_fit_s'] if r['shipped_fit_s'] is not None else '-':>14}")
    for k, label in ((FIRST, f"the first {FIRST}"), (total, f"all {total}")):
        at = page_at.get(k)
        print(f"page showed {label} models at: {'not within the timeout' if at is None else f'{at:.1f} s'}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
