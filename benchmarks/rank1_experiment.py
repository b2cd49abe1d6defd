"""The rank-1 experiment on MovieLens 100K (:mod:`cofiviz.reproductions.rank_functional` holds it).

Each (model, dimension, protocol, seed) cell is stored in a :class:`cofiviz.engine.store.ResultsStore` under
``benchmarks/results/rank1`` (git-ignored), so a rerun reads them instead of fitting again.

Usage (heavy: run niced on a shared machine)::

    NUMBA_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/rank1_experiment.py [--seeds 0,1] [--dims 1,2,5]
        [--models cofirank,gcr,regsvd] [--protocols all,controversial] [--store DIR]

It prints one table per protocol: rows are the latent dimension, columns the models, values the mean
NDCG@10 over seeds (± std with more than one seed), PopRec repeated on every row; the NDCG@10 of a random
order of the same test lists (the floor: the two protocols' lists differ, so only gains over the floor and over
PopRec compare across them); then the lift over PopRec (model − PopRec, same seed, mean over seeds).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from cofiviz.reproductions.rank_functional import (DIMS, MODELS, PROTOCOLS, lift, random_baseline,
                                                  rank1_experiments, rank1_table)
from cofiviz.engine.store import ResultsStore

STORE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "rank1"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0", help="comma-separated split / model seeds (default 0)")
    ap.add_argument("--dims", default=",".join(map(str, DIMS)))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--store", default=str(STORE))
    ap.add_argument("--csv", default=None, help="also write the tidy results to this CSV")
    a = ap.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",") if s]
    dims = [int(d) for d in a.dims.split(",") if d]
    models = [m for m in a.models.split(",") if m]
    store = ResultsStore(a.store)
    frames = []
    for proto in [p for p in a.protocols.split(",") if p]:
        exp = rank1_experiments(proto, dims, models, seeds)
        t0 = time.perf_counter()

        def done(cell, key, res):
            sec = float(res.results["fit_seconds"].iloc[0])
            val = res.results.query("part == 'test' and metric == 'ndcg@10'")["value"].iloc[0]
            print(f"  [{proto}] {cell.describe()}: ndcg@10 {val:.4f} (fit {sec:.1f}s)", file=sys.stderr, flush=True)

        res = exp.run(store=store, on_cell=done)
        res.results["protocol_name"] = proto
        frames.append(res.results)
        print(f"\n== {proto}: NDCG@10 on MovieLens 100K, weak generalization N=20"
              f"{' (controversial test items)' if proto == 'controversial' else ''}; seeds {seeds} "
              f"({time.perf_counter() - t0:.0f}s)")
        print(rank1_table(res, dims).to_string())
        rnd = random_baseline(proto, seeds)
        pop = res.results.query("model == 'poprec' and part == 'test' and metric == 'ndcg@10'")["value"].mean()
        print(f"random order: {rnd:.4f}; PopRec − random: {pop - rnd:+.4f}")
        print(f"-- lift over PopRec ({proto})")
        print(lift(res, dims).to_string())
    if a.csv:
        pd.concat(frames, ignore_index=True).to_csv(a.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
