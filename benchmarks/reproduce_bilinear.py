"""The rank-functional lab on MovieLens 100K: side features for new users, ties used or dropped.

The experiments live in :mod:`cofiviz.reproductions.rank_functional`; this script runs them and prints
their tables.

``strong``  Side features on strong generalization (:func:`cofiviz.protocols.strong_generalization`:
            items with ≥ 50 ratings, the 100 heaviest users are new users with ``n_given`` = 10 given
            ratings, folded in with the item side frozen, the rest of their ratings ranked). The
            bilinear model (:class:`cofiviz.models.Bilinear`, rank 10) with ``features`` = ``latent``
            (one-hot ids: plain factorisation), ``given`` (user age / gender / occupation and item
            genres / release year only) and ``both``, trained with the listwise Plackett–Luce loss
            (λ = 0.05 and 0.3; also with user features only, ``item_features="none"``), and with
            Davidson's tie-aware loss and LCR's Log[M] surrogate (λ = 0.3; latent and both); PopRec
            beside them. No validation part: both λ are shown, none is chosen on the test users.
``coldstart`` The same with only 1 or 3 given ratings per new user (Plackett–Luce, λ = 0.3; ids,
            both, and user features only).
``ties``    Ties used versus dropped on weak generalization (N = 20 and 50 training ratings per user,
            the rest ranked): the tie-aware Rao–Kupper (θ = 2) and Davidson (ν = 1) losses with pairs of
            equal ratings used as ties (``ties="use"``) or dropped (``ties="drop"``), latent features
            only, same split, same seed, same everything else; the Plackett–Luce loss with Breslow's and
            Efron's tie rules, the ordered-partition likelihood (Tran, Phung & Venkatesh, SDM 2011) with the
            mean and with the product potential, and the smoothed-rank NDCG loss (γ = 0.3, 1, 3) beside them, and PopRec.

Every fit runs a fixed number of iterations (no validation part, no early stopping). Cells are cached in
a :class:`cofiviz.engine.store.ResultsStore` under ``benchmarks/results/bilinear`` (git-ignored).

Usage (run niced on a shared machine)::

    NUMBA_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/reproduce_bilinear.py [strong] [coldstart] [ties] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cofiviz.reproductions.rank_functional import (bilinear_table, coldstart_experiment, strong_experiment,
                                                  ties_experiment)
from cofiviz.engine.store import ResultsStore

STORE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "bilinear"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="*", default=["strong", "coldstart", "ties"], choices=["strong", "coldstart", "ties"])
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--store", default=str(STORE))
    a = ap.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",") if s]
    store = ResultsStore(a.store)

    def done(cell, key, res):
        val = res.results.query("part == 'test' and metric == 'ndcg@10'")["value"].iloc[0]
        print(f"  {cell.describe()}: ndcg@10 {val:.4f} (fit {float(res.results['fit_seconds'].iloc[0]):.1f}s)",
              file=sys.stderr, flush=True)

    for what in a.what:
        t0 = time.perf_counter()
        if what == "strong":
            res = strong_experiment(seeds).run(store=store, on_cell=done)
            print(f"\n== Side features for new users: MovieLens 100K, strong generalization (100 new users, "
                  f"10 given ratings each); seeds {seeds} ({time.perf_counter() - t0:.0f}s)")
            print(bilinear_table(res, ["model.features", "model.reg"]).to_string())
        elif what == "coldstart":
            res = coldstart_experiment(seeds).run(store=store, on_cell=done)
            print(f"\n== Colder starts: strong generalization with 1 or 3 given ratings per new user (Plackett-Luce, "
                  f"λ = 0.3); seeds {seeds} ({time.perf_counter() - t0:.0f}s)")
            print(bilinear_table(res, ["protocol.n_given", "model.features"]).to_string())
        else:
            res = ties_experiment(seeds).run(store=store, on_cell=done)
            print(f"\n== Ties used or dropped: MovieLens 100K, weak generalization; seeds {seeds} "
                  f"({time.perf_counter() - t0:.0f}s)")
            print(bilinear_table(res, ["protocol.n_train", "model.ties", "model.pl_ties", "model.gamma"]).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
