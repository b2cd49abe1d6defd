"""How fast the training monitor's curves advance on MovieLens 1M: points per second, scoring spaced out or not.

Each case runs the monitor's own worker path (:class:`cofiviz.background.training_process.TrainingProcess`,
forked from the forkserver that preloads cofiviz, as a served monitor does) on MovieLens 1M with the
monitor's default protocol (``weak``, N = 10, 5 validation ratings a user, at least 5 test ratings: 60,400
training ratings, 30,200 validation, 909,609 test candidates), for ``--iterations`` iterations at the model's
defaults (``tol = 0`` and ``patience = 0`` where the model has them, so that the run lasts). Each model runs
twice: with the monitor's scoring (``score_throttle`` = :data:`~cofiviz.background.training_process.SCORE_THROTTLE`
seconds: once scoring the three parts takes longer than that, an iteration is scored only after the model has
trained as long as scoring takes) and with every iteration scored (``score_throttle=None``).

Reported per run, from the first row on (the worker loads MovieLens 1M and splits it before the first):

``rows/s``     rows received by the follower per second of wall time: the points the loss curve gains;
``scored/s``   scored rows per second: the points the metric curves gain;
``trace/s``    rows per second of the fit's own elapsed time (``elapsed`` of the trace: training and scoring);
``train s``    the median training seconds of an iteration (the trace's ``seconds``: scoring excluded);
``scored``     the iterations scored, of those run.

Goal: at least one point per second on the curves (``rows/s`` >= 1). Scoring only reads the model, so
both runs of a model learn the same (the losses are compared and must be equal to the bit).

Usage (the machine is shared: the load average is printed on every row)::

    .venv/bin/python benchmarks/bench_monitor.py [--models regsvd cofirank lcr ...] [--iterations 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

DATA = "MovieLens 1M"
#: the monitor's weak protocol at N = 10, with the settings the page gives it (``cofiviz.protocols.OFFERED``)
PROTOCOL, N_TRAIN = "weak", 10
DEFAULT_MODELS = ("regsvd", "nmf", "gapfm", "cofirank", "gcr", "lcr", "llorma")


def run(model: str, iterations: int, throttle) -> dict:
    """One monitor run of ``model``; its rows and their arrival times."""
    from cofiviz.background.training_process import TrainingJob, TrainingProcess
    from cofiviz.models import get_model_class
    from cofiviz.protocols import OFFERED

    names = get_model_class(model).param_names()
    params = {"max_iter": iterations, **{k: 0 for k in ("tol", "patience") if k in names}}
    job = TrainingJob(model, params, PROTOCOL, {OFFERED[PROTOCOL].size: N_TRAIN, **OFFERED[PROTOCOL].fixed}, DATA,
                      score_throttle=throttle)
    rows, arrivals = [], []

    def on_row(row):
        rows.append(row)
        arrivals.append(time.monotonic())

    t0 = time.monotonic()
    reason, error = TrainingProcess(job).follow(on_row, threading.Event())
    if error:
        raise RuntimeError(f"{model}: {error}")
    return {"rows": rows, "arrivals": arrivals, "wall": time.monotonic() - t0, "reason": reason}


def summary(res: dict) -> dict:
    rows, t = res["rows"], res["arrivals"]
    scored = [r for r in rows if r["test_ndcg@10"] == r["test_ndcg@10"]]
    span = t[-1] - t[0] if len(t) > 1 else float("nan")
    elapsed = rows[-1]["elapsed"] - rows[0]["elapsed"] if len(rows) > 1 else float("nan")
    return {"n": len(rows), "scored": len(scored), "rows_per_s": (len(rows) - 1) / span,
            "scored_per_s": (sum(1 for r in scored if r is not rows[0]) / span),
            "trace_per_s": (len(rows) - 1) / elapsed,
            "train_s": statistics.median(r["seconds"] for r in rows[1:]) if len(rows) > 1 else rows[0]["seconds"]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    ap.add_argument("--iterations", type=int, default=20, help="iterations per run (default 20)")
    args = ap.parse_args(argv)

    from cofiviz.background.training_process import SCORE_THROTTLE, start_forkserver

    start_forkserver()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; MovieLens 1M, weak N=10; "
          f"{args.iterations} iterations; throttle {SCORE_THROTTLE} s")
    print(f"{'model':<10} {'scoring':<9} {'rows/s':>7} {'scored/s':>8} {'trace/s':>7} {'train s':>8} "
          f"{'scored':>7}  load")
    for model in args.models:
        losses = {}
        for label, throttle in (("spaced", SCORE_THROTTLE), ("every", None)):
            res = run(model, args.iterations, throttle)
            s = summary(res)
            losses[label] = [r["loss"] for r in res["rows"]]
            print(f"{model:<10} {label:<9} {s['rows_per_s']:7.2f} {s['scored_per_s']:8.2f} {s['trace_per_s']:7.2f} "
                  f"{s['train_s']:8.3f} {s['scored']:>3}/{s['n']:<3}  {os.getloadavg()[0]:.2f}", flush=True)
        same = losses["spaced"] == losses["every"]
        print(f"{'':<10} losses of the two runs equal to the bit: {same}")


if __name__ == "__main__":
    main()
