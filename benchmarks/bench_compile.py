"""How long ``cofiviz warmup`` takes to compile every numba kernel: one process against several; a benchmark,
not a timed test.

Each measurement runs :func:`cofiviz.warmup` in a fresh Python process as ``cofiviz warmup`` does (what
``make serve`` or ``make test`` pays on a fresh clone; after a parallel compile that process does not load the
kernels itself, ``load=False``):

``cold, jobs=1``   an empty ``NUMBA_CACHE_DIR`` (a new temporary directory), every module compiled in that one
                   process, one after the other;
``cold, jobs=N``   another empty cache, the modules compiled in ``N`` processes at once (default: the cores);
``warm``           the cache the parallel run filled: every kernel loaded from disk (what a process that
                   needs the kernels, such as the dashboards' server, adds after a parallel compile).

Each line gives the wall-clock seconds, the CPU seconds of the process and its children, and the ratio to the
sequential run of the same invocation; the load average is printed with them, since other work on the machine
slows every figure. ``--quick`` warms up two small models only (seconds, not minutes: what the smoke test runs).

``--plan`` measures instead the CPU seconds of each job of :func:`cofiviz.engine.warmup.plan`: the jobs run one after
the other, prerequisites first, in one fresh process with an empty cache. Written to
``cofiviz/engine/warmup_seconds.json`` (``--json``), they order the parallel warm-up's jobs.

Usage::

    .venv/bin/python benchmarks/bench_compile.py [--jobs N] [--quick] [--json OUT]
    .venv/bin/python benchmarks/bench_compile.py --plan [--json cofiviz/engine/warmup_seconds.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: what ``--quick`` warms up: two models that share no kernel, so that two processes compile at once
QUICK_MODULES = ["cofiviz.models.nmf", "cofiviz.models.svdpp"]


def warmup_command(jobs: int | None, modules: list[str] | None) -> list[str]:
    """The command line of one measurement: a fresh interpreter that runs :func:`cofiviz.warmup`."""
    code = ("from cofiviz.engine import warmup; "
            f"warmup.warmup(jobs={jobs!r}, modules={modules!r}, load=False)")
    return [sys.executable, "-c", code]


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def measure(cache: str, jobs: int | None, modules: list[str] | None) -> dict:
    """Wall-clock and CPU seconds of one warm-up in a fresh process with ``NUMBA_CACHE_DIR=cache``, and the
    one-minute load average before it started."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    load = os.getloadavg()[0]
    cpu0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(warmup_command(jobs, modules), check=True, cwd=ROOT, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": _children_cpu() - cpu0, "load_1min": load}


def run(jobs: int | None = None, quick: bool = False) -> dict:
    """The three measurements (``sequential``, ``parallel``, ``warm``), each with its ratio to ``sequential``."""
    modules = QUICK_MODULES if quick else None
    out: dict = {"jobs": jobs, "modules": modules or "all"}
    with tempfile.TemporaryDirectory(prefix="cofiviz-bench-seq-") as seq_cache, \
            tempfile.TemporaryDirectory(prefix="cofiviz-bench-par-") as par_cache:
        out["sequential"] = measure(seq_cache, 1, modules)
        out["parallel"] = measure(par_cache, jobs, modules)
        out["warm"] = measure(par_cache, jobs, modules)
    for key in ("sequential", "parallel", "warm"):
        out[key]["ratio"] = out[key]["seconds"] / out["sequential"]["seconds"]
    out["load_1min_after"] = os.getloadavg()[0]
    return out


PLAN_SNIPPET = """
import json, sys, time
from cofiviz.engine import warmup as W
pending, done, out = W._plan([name for name, _ in W._targets()]), set(), {}
while pending:
    job = next(j for j in pending if set(j.after) <= done)
    t0 = time.process_time()
    W._run_modules(job.modules)
    out[job.name] = time.process_time() - t0
    done.add(job.name)
    pending.remove(job)
print(json.dumps(out))
"""


def plan_seconds() -> dict[str, float]:
    """CPU seconds of each job of the warm-up's plan, compiled in one fresh process with an empty cache."""
    with tempfile.TemporaryDirectory(prefix="cofiviz-bench-plan-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": os.pathsep.join(
            [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
        done = subprocess.run([sys.executable, "-c", PLAN_SNIPPET], check=True, cwd=ROOT, env=env,
                              capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=None, help="processes of the parallel run (default: the cores)")
    ap.add_argument("--quick", action="store_true", help=f"warm up {' and '.join(QUICK_MODULES)} only")
    ap.add_argument("--plan", action="store_true", help="the CPU seconds of each job of cofiviz.engine.warmup.plan()")
    ap.add_argument("--json", default=None, metavar="OUT")
    args = ap.parse_args(argv)
    if args.plan:
        seconds = plan_seconds()
        for name, secs in seconds.items():
            print(f"{name:30s} {secs:6.1f} s cpu")
        print(f"{'total':30s} {sum(seconds.values()):6.1f} s cpu  (load average {os.getloadavg()[0]:.2f})")
        if args.json:
            Path(args.json).write_text(json.dumps({k: round(v, 1) for k, v in seconds.items()}, indent=2) + "\n")
        return 0
    out = run(jobs=args.jobs, quick=args.quick)
    what = "two models" if args.quick else "every module"
    print(f"cofiviz warmup of {what}, {os.cpu_count()} cores")
    labels = {"sequential": "cold, jobs=1", "parallel": f"cold, jobs={args.jobs or 'cores'}", "warm": "warm cache"}
    for key, label in labels.items():
        m = out[key]
        print(f"{label:16s} {m['seconds']:7.1f} s  cpu {m['cpu_seconds']:7.1f} s  "
              f"{m['ratio']:5.2f}x the sequential run  (load average {m['load_1min']:.2f})")
    print(f"load average at the end {out['load_1min_after']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
