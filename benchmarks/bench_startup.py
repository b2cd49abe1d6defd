"""Start-up costs a user waits for: ``import cofiviz`` and ``cofiviz warmup``; a benchmark, not a timed test.

Each measurement runs in a fresh Python process (what a new shell, a notebook kernel or ``panel serve``
pays):

``import``        ``python -c "import cofiviz"`` against ``python -c "import numpy, numba"`` (the floor
                  cofiviz's own modules add to), median of ``--repeat`` runs;
``warm warmup``   ``cofiviz warmup`` with the numba cache already filled (kernels loaded from disk);
``cold warmup``   ``cofiviz warmup`` with ``NUMBA_CACHE_DIR`` pointing at an empty directory (every kernel
                  compiled), only with ``--cold`` because it takes minutes.

Usage::

    .venv/bin/python benchmarks/bench_startup.py [--repeat 5] [--cold] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _seconds(cmd: list[str], env: dict | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, **(env or {})},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="also time a warmup with an empty numba cache (minutes)")
    ap.add_argument("--json", default=None, metavar="OUT")
    args = ap.parse_args(argv)
    py = sys.executable
    cli = [py, "-m", "cofiviz.cli", "warmup", "--quiet"]
    _seconds(cli)  # fills the cache when it is empty, so that the warm figures are warm
    floor = [_seconds([py, "-c", "import numpy, numba"]) for _ in range(args.repeat)]
    imp = [_seconds([py, "-c", "import cofiviz"]) for _ in range(args.repeat)]
    warm = [_seconds(cli) for _ in range(max(1, args.repeat // 2))]
    out = {"import_numpy_numba_s": statistics.median(floor), "import_cofiviz_s": statistics.median(imp),
           "warm_warmup_s": statistics.median(warm)}
    print(f"import numpy, numba      {out['import_numpy_numba_s']:.2f} s (median of {args.repeat})")
    print(f"import cofiviz           {out['import_cofiviz_s']:.2f} s "
          f"({out['import_cofiviz_s'] / out['import_numpy_numba_s']:.1f}x the floor)")
    print(f"cofiviz warmup, warm     {out['warm_warmup_s']:.2f} s")
    if args.cold:
        with tempfile.TemporaryDirectory(prefix="cofiviz-cold-cache-") as cache:
            out["cold_warmup_s"] = _seconds(cli, env={"NUMBA_CACHE_DIR": cache})
        print(f"cofiviz warmup, cold     {out['cold_warmup_s']:.1f} s "
              f"({out['cold_warmup_s'] / out['warm_warmup_s']:.0f}x the warm one)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
