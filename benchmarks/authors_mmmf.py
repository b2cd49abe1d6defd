"""Run the MATLAB code of fast MMMF (Rennie & Srebro 2005) under GNU Octave on cofiviz's own splits, beside cofiviz's MMMF.

CofiRank's Table 2 (Weimer et al., NIPS 2007) ran "MATLAB code available from the homepage of the authors" of fast
MMMF with k = 100 and λ = 1/1.6 on MovieLens (weak generalization, N = 10, 20, 50 training ratings per user). This
script runs that code on the splits ``cofiviz reproduce cofirank-table2`` uses (``protocols.cofirank_weak`` of
MovieLens 100K, one seed per split), scores both programs' rankings with cofiviz's NDCG@10 (gain 2^r − 1), and
prints them side by side, so that the only difference left is the model code.

The code is not part of cofiviz. Its authors' homepage is gone; a copy of Jason Rennie's files is in the public
repository ``ShamalShaikh/IMMMF-Recommender-system`` (``m3fshc.m``: objective and gradient of the all-threshold
smooth-hinge loss; ``conjgrad.m``: Polak–Ribière conjugate gradients; ``CG/``: its line search). Pass the folder
holding them with ``--code``. That copy of ``m3fshc.m`` was changed to fit ``l + 1`` thresholds per user (two
more, below the lowest and above the highest rating) while its header still documents Rennie's ``l − 1``;
``--thresholds original`` (the default) runs a copy of it, written to a temporary folder, with the header's
``l − 1`` thresholds restored (the loop over thresholds ``k = 1 … l − 1`` with ``T = +1`` where ``Y ≤ k``),
``--thresholds copy`` runs the file as it is.

What the driver does, as the code's own scripts (``mmmfWeak.m``, ``startIMMMF.m``) do: the training ratings as a
sparse users × items matrix ``Y`` (0: unrated), ``v0 = randn(...)`` (Octave's generator seeded with the split's
seed), ``conjgrad(v0, par)`` with ``par.objGrad = @m3fshc``, ``par.lineSearchFun = @cgLineSearch``, ``par.c2 =
1e-2``, ``par.tol`` 1e-3 and ``par.maxiter`` (``--maxiter``, default 100, cofiviz's row's number of iterations),
``par.lambda`` = 1/1.6, ``par.p`` = 100, ``par.l`` = 5; the scores of the test pairs are ``U_u · V_i``.

Usage::

    apt-get install octave    # or any GNU Octave >= 6
    .venv/bin/python benchmarks/authors_mmmf.py --code /path/to/IMMMF-Recommender-system --ns 10 20 50 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from cofiviz import datasets
from cofiviz.metrics.scorer import PairScores, per_user_metrics
from cofiviz.models import MMMF
from cofiviz.protocols import cofirank_weak

#: the paper's settings (CofiRank §6)
RANK, REG = 100, 1 / 1.6
METRIC = "ndcg@10"

DRIVER = r"""
addpath(genpath('{code}'));  % as the code's own scripts do; the folder's conjgrad.m comes before CG/'s
tr = load('{train}'); te = load('{test}');
n = {n_users}; m = {n_items}; p = {rank}; l = {levels};
Y = sparse(tr(:, 1), tr(:, 2), tr(:, 3), n, m);
randn('seed', {seed});
v0 = randn(n * p + m * p + n * {n_thresholds}, 1);
par = struct();
par.lineSearchFun = @cgLineSearch; par.c2 = 1e-2; par.objGrad = @m3fshc;
par.lambda = {reg!r}; par.l = l; par.tol = 1e-3; par.maxiter = {maxiter}; par.p = p; par.Y = Y;
t0 = tic;
[v, numiter, ogcalls, J] = conjgrad(v0, par);
seconds = toc(t0);
U = reshape(v(1:n * p), n, p);
V = reshape(v(n * p + 1:n * p + m * p), m, p);
s = sum(U(te(:, 1), :) .* V(te(:, 2), :), 2);
fid = fopen('{scores}', 'w'); fprintf(fid, '%.17g\n', s); fclose(fid);
fid = fopen('{info}', 'w'); fprintf(fid, '%d %d %.3f %.17g\n', numiter, ogcalls, seconds, J(end)); fclose(fid);
"""


def restore_original_thresholds(source: str) -> str:
    """``m3fshc.m`` with the ``l − 1`` thresholds its header documents (Rennie's form) in place of the copy's
    ``l + 1``: the parameter count, the reshape, the gradient's shape and the loop over thresholds."""
    out = source.replace("n.*(l+1)", "n.*(l-1)").replace("n*(l+1)),n,l+1)", "n*(l-1)),n,l-1)")
    out = out.replace("dtheta = zeros(n,l+1)", "dtheta = zeros(n,l-1)").replace("for k=1:l+1", "for k=1:l-1")
    out = out.replace("(Y > (k-1))", "(Y > k)").replace("% [n,l+1]", "% [n,l-1]")
    if "l+1" in out or out.count("l-1") < 4:
        raise SystemExit("m3fshc.m is not the expected copy: the threshold count could not be restored")
    return out


def run_reference(code: Path, split, seed: int, maxiter: int, thresholds: str, work: Path) -> tuple[np.ndarray, dict]:
    """Fit the MATLAB code on ``split.train``; the scores of ``split.test``'s pairs and the run's facts."""
    train, test = split.train, split.test
    levels = len(np.unique(train.ratings))
    folder = code
    if thresholds == "original":
        folder = work / "code"
        shutil.copytree(code, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.txt", "*.mat", "results*"))
        (folder / "m3fshc.m").write_text(restore_original_thresholds((code / "m3fshc.m").read_text()))
    n_thr = levels - 1 if thresholds == "original" else levels + 1
    np.savetxt(work / "train.txt", np.c_[train.users + 1, train.items + 1, train.ratings], fmt="%d %d %g")
    np.savetxt(work / "test.txt", np.c_[test.users + 1, test.items + 1], fmt="%d")
    script = DRIVER.format(code=folder, train=work / "train.txt", test=work / "test.txt", n_users=train.n_users,
                           n_items=train.n_items, rank=RANK, levels=levels, seed=seed, n_thresholds=n_thr, reg=REG,
                           maxiter=maxiter, scores=work / "scores.txt", info=work / "info.txt")
    (work / "driver.m").write_text(script)
    t0 = time.perf_counter()
    done = subprocess.run(["octave", "--no-gui", "--quiet", "--no-window-system", str(work / "driver.m")],
                          capture_output=True, text=True, cwd=work, env={**os.environ, "OMP_NUM_THREADS": "1",
                                                                         "OPENBLAS_NUM_THREADS": "1"})
    if done.returncode != 0:
        raise SystemExit(f"octave failed:\n{done.stderr[-2000:]}")
    numiter, ogcalls, seconds, objective = (work / "info.txt").read_text().split()
    info = {"iterations": int(numiter), "evaluations": int(ogcalls), "seconds": float(seconds),
            "objective": float(objective), "wall": time.perf_counter() - t0}
    return np.loadtxt(work / "scores.txt"), info


def ndcg_of_scores(split, scores: np.ndarray) -> float:
    """Mean NDCG@10 over the test users of a ranking given by one score per test pair."""
    values = per_user_metrics(PairScores(split.test, scores), split.test, [METRIC])[METRIC]
    return float(np.nanmean(values))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--code", required=True, type=Path, help="folder with m3fshc.m, conjgrad.m and CG/")
    p.add_argument("--ns", nargs="+", type=int, default=[10, 20, 50])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--maxiter", type=int, default=100)
    p.add_argument("--thresholds", choices=["original", "copy"], default="original")
    p.add_argument("--json", default=None, help="write one row per split here")
    args = p.parse_args(argv)
    if shutil.which("octave") is None:
        raise SystemExit("GNU Octave is not installed (apt-get install octave)")
    ratings = datasets.load("movielens-100k")
    rows = []
    print(f"{'N':>3} {'seed':>4} {'reference':>9} {'cofiviz':>8} {'diff':>8} {'ref it':>6} {'ref s':>7} {'cofiviz s':>9}")
    for n in args.ns:
        for seed in args.seeds:
            split = cofirank_weak(ratings, n_train=n, seed=seed)
            with tempfile.TemporaryDirectory() as tmp:
                scores, info = run_reference(args.code.resolve(), split, seed, args.maxiter, args.thresholds, Path(tmp))
            t0 = time.perf_counter()
            model = MMMF(rank=RANK, reg=REG, max_iter=args.maxiter, item_prior=0.0, seed=seed).fit(split.train)
            ours_s = time.perf_counter() - t0
            ours = float(np.nanmean(per_user_metrics(model, split.test, [METRIC])[METRIC]))
            ref = ndcg_of_scores(split, scores)
            row = {"N": n, "seed": seed, "reference": ref, "cofiviz": ours, "diff": ours - ref,
                   "thresholds": args.thresholds, "maxiter": args.maxiter, "reference_run": info,
                   "cofiviz_seconds": ours_s, "cofiviz_iterations": len(model.history_)}
            rows.append(row)
            print(f"{n:>3} {seed:>4} {ref:9.4f} {ours:8.4f} {ours - ref:+8.4f} {info['iterations']:>6} "
                  f"{info['seconds']:7.1f} {ours_s:9.1f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
