"""Run the authors' CofiRank (C++ release 0.1) on cofiviz's own splits, beside cofiviz's CofiRank.

This is how the ``original`` column of ``cofiviz reproduce cofirank-table2`` / ``cofirank-table3`` was
measured: the same split files go to both programs, and both rankings are scored by cofiviz's NDCG@10
(``cofiviz.metrics.ndcg``), so the only difference left is the model code.

The authors' program is not part of cofiviz. Build it yourself from its public repository
(``markusweimer/cofirank``): it needs a C++ compiler and the Boost uBLAS headers, e.g.
``g++ -O2 -DNDEBUG -std=c++11 -Isrc -I<boost include> <the .cpp files of nbproject/Makefile-Deploy.mk>``.
Its ``main`` (``src/cofi/cfbmrm-train.cpp``) redirects ``std::clog`` to a local file and never
restores it, so the program crashes on exit *after* writing its outputs; restoring ``std::clog``'s
buffer before ``return 0`` fixes that without touching the algorithm. Pass the binary with ``--binary``.

What is written for the program (its formats, read from its source):
* one line per user, ``item:rating`` entries with 1-based item ids (``write_cofirank_lines``); only
  users with training ratings get a line, so every line has ratings (the NDCG loss refuses a user
  with fewer than ``trainK`` ratings, and a user without test ratings would make its NDCG NaN);
* a configuration file at the paper's settings: ``cofi.dimW`` 100, λ = 10 for both phases,
  ``loss.ndcg.trainK`` 10, ``loss.ndcg.c_exponent`` −0.25, and 31 outer iterations
  (``cofi.minIterations`` = ``cofi.maxIterations`` = 30, so no early stop); ``cofi.storeF`` 1.
* weak generalization: ``WEAK`` mode, F = U·Mᵀ of the training users; strong generalization:
  ``STRONG`` mode with the test users' given ratings (``DtrainStrongFile``) and test ratings
  (``DtestStrongFile``), F of the folded-in test users.
The program writes F densely with six significant digits (``read_cofirank_scores``); its seeds are
not settable (``rand()`` is never seeded), so a run is deterministic for given files.

Usage::

    .venv/bin/python benchmarks/authors_cofirank.py --binary /path/to/cofirank weak \\
        --losses ndcg ordinal regression --ns 10 20 50 --seeds 0 1 2 --cofiviz
    .venv/bin/python benchmarks/authors_cofirank.py --binary /path/to/cofirank strong --losses ndcg --cofiviz

    .venv/bin/python benchmarks/authors_cofirank.py --binary /path/to/cofirank topn --ns 10 20 30 50 \
        --seeds 0 1 2 3 4 5 6 7 8 9

``topn`` is GAPfm §5.1's top-N protocol as ``cofiviz reproduce gapfm-topn`` runs it (Given N rated items;
the held-out rated items plus 1000 sampled unrated ones ranked; a validation part of 5 rated and 200
unrated items per user). The GAPfm paper ran "the publicly available software package from the
authors" with d = 10 and "the remaining parameters tuned on the validation set": here λ ∈ {1, 10, 100,
1000} × the program's user and item offsets (off / on), the setting with the best mean validation
GAP@5 over the seeds chosen per N, and its test GAP@5, NDCG@5 and P@5 (threshold 5) printed beside
PopRec's on the same splits. The program has no early stopping, so its last (31st) iterate is scored.

``--cofiviz`` also fits cofiviz's CofiRank in the original code's form (item-id reference order; for
the ordinal loss the original pair loop: cost Δy and no 1/M) on the same splits and prints both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cofiviz.util.errors import DataError
from cofiviz.evaluation import evaluate
from cofiviz.engine.experiment import make_split
from cofiviz.metrics import score_lists
from cofiviz.models import CofiRank, PopRec
from cofiviz.reproductions.cofirank import WEAK_METHODS
from cofiviz.reproductions.spec import paper_preset
from cofiviz.reproductions.gapfm import TOPN_COFIRANK_GRID
from cofiviz.search import best_index

#: The authors' ``cofi.loss`` for each cofiviz loss.
LOSS_NAMES = {"ndcg": "NDCG", "ordinal": "ORDINAL", "regression": "REGRESSION"}

#: cofiviz's CofiRank in the original code's form, per loss: the reproduction rows the program's numbers
#: sit beside (their settings are the paper's plus the form of the loss)
COFIVIZ_ORIGINAL_FORM = {loss: next(m.fixed for m in WEAK_METHODS if m.label == label)
                         for loss, label in (("ndcg", "CofiRank-NDCG (item-id order)"),
                                             ("ordinal", "CofiRank-Ordinal (original form)"),
                                             ("regression", "CofiRank-Regression"))}


def write_cofirank_lines(path, users, items, ratings, rows) -> None:
    """Write ratings in the authors' input format: line ``j`` holds user ``rows[j]``'s ratings.

    Parameters
    ----------
    path : path-like
    users, items : array of int
        0-based indices; ``items`` are written 1-based, as the program reads them.
    ratings : array of float
    rows : array of int
        The users, in line order; a user in ``rows`` without ratings gets an empty line. A rating
        whose user is not in ``rows`` is an error (it would be lost).
    """
    users = np.asarray(users, dtype=np.int64)
    items = np.asarray(items, dtype=np.int64)
    ratings = np.asarray(ratings, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.int64)
    line_of = {int(u): j for j, u in enumerate(rows)}
    missing = sorted({int(u) for u in np.unique(users)} - set(line_of))
    if missing:
        raise DataError(f"{len(missing)} user(s) with ratings have no line in rows (first: user index {missing[0]}); "
                        "expected every rated user in rows")
    if len(items) and items.min() < 0:
        raise DataError(f"item index {int(items.min())} is negative; expected 0-based indices")
    lines: list[list[str]] = [[] for _ in rows]
    for k in np.lexsort((items, users)):
        lines[line_of[int(users[k])]].append(f"{int(items[k]) + 1}:{ratings[k]:g}")
    with open(path, "w") as f:
        for entries in lines:
            f.write(" ".join(entries) + "\n")


def read_cofirank_scores(path) -> list[dict[int, float]]:
    """Read the program's ``F.lsvm``: one line per user of ``col:value`` (1-based columns).

    Returns one ``{item index (0-based): score}`` dict per line; an entry the program did not write
    (it skips exact zeros) scores 0. A malformed entry is an error naming the line and the entry.
    """
    out = []
    with open(path) as f:
        for n, line in enumerate(f, start=1):
            row: dict[int, float] = {}
            for tok in line.split():
                col, sep, val = tok.partition(":")
                try:
                    if not sep:
                        raise ValueError
                    j, v = int(col), float(val)
                except ValueError:
                    raise DataError(f"{path}, line {n}: entry {tok!r} is not 'column:value'") from None
                if j < 1:
                    raise DataError(f"{path}, line {n}: column {j} in {tok!r}; expected 1-based columns")
                row[j - 1] = v
            out.append(row)
    return out


def config_text(loss: str, protocol: str, **overrides) -> str:
    """The program's configuration at the paper's settings (``type name value`` per line).

    The settings are the paper's, as ``CofiRank.presets["paper"]`` declares them; the program
    counts its iterations from 0, so ``maxIterations = max_iter - 1`` runs ``max_iter`` of them.
    """
    p = paper_preset("cofirank")
    cfg = {
        "string cofibmrm.DtrainFile": "train.lsvm", "string cofibmrm.DtestFile": "test.lsvm",
        "string cofibmrm.evaluation": "WEAK" if protocol == "weak" else "STRONG",
        "string cofibmrm.DtrainStrongFile": "given.lsvm", "string cofibmrm.DtestStrongFile": "strongtest.lsvm",
        "string cofi.outfolder": "out/", "int cofi.storeF": 1, "int cofi.storeModel": 0,
        "double cofi.userphase.lambda": f"{p['reg']:g}", "double cofi.moviephase.lambda": f"{p['reg']:g}",
        "int cofi.dimW": p["rank"], "string cofi.loss": LOSS_NAMES[loss], "int loss.ndcg.trainK": p["k"],
        "double loss.ndcg.c_exponent": p["c_exponent"],
        "int cofi.minIterations": p["max_iter"] - 1, "int cofi.maxIterations": p["max_iter"] - 1,
        "int cofi.eval.ndcg": 1, "int cofi.eval.ndcg.k": 10, "int cofi.eval.norm": 1,
        "int cofi.eval.evaluateOnTestSet": 1 if protocol == "weak" else 0, "int cofi.eval.evaluateOnTrainSet": 0,
    }
    cfg.update(overrides)
    return "".join(f"{k} {v}\n" for k, v in cfg.items())


def _run_program(binary: str, workdir: Path, config: str, n_lines: int) -> tuple[list[dict[int, float]], float]:
    """Write ``run.cfg``, run the program in ``workdir``; returns its F (``n_lines`` users) and wall seconds."""
    (workdir / "run.cfg").write_text(config)
    t = time.perf_counter()
    proc = subprocess.run([binary, "run.cfg"], cwd=workdir, capture_output=True, text=True)
    secs = time.perf_counter() - t
    f_path = workdir / "out" / "F.lsvm"
    if not f_path.exists():
        raise RuntimeError(f"the authors' program wrote no {f_path} (exit code {proc.returncode}); "
                           f"its log: {workdir / 'out' / 'clog.txt'}; stderr: {proc.stderr[-400:]}")
    F = read_cofirank_scores(f_path)
    if len(F) != n_lines:
        raise RuntimeError(f"{f_path} has {len(F)} lines, expected {n_lines} (one per user)")
    return F, secs


def _write_training(workdir: Path, split, test=None) -> np.ndarray:
    """Create ``workdir/out``, write ``train.lsvm`` and ``test.lsvm`` (empty lines without ``test``).

    Returns the users in line order (those with training ratings).
    """
    (workdir / "out").mkdir(parents=True, exist_ok=True)
    tr = split.train
    rows = np.unique(tr.users)
    write_cofirank_lines(workdir / "train.lsvm", tr.users, tr.items, tr.ratings, rows)
    if test is None:
        (workdir / "test.lsvm").write_text("\n" * len(rows))
    else:
        write_cofirank_lines(workdir / "test.lsvm", test.users, test.items, test.ratings, rows)
    return rows


def run_authors(binary: str, split, loss: str, protocol: str, workdir: Path) -> tuple[float, float]:
    """Run the authors' program on ``split``; returns (NDCG@10 on the test part, wall seconds)."""
    if protocol == "weak":
        f_rows = _write_training(workdir, split, split.test)
    else:
        _write_training(workdir, split)
        f_rows = np.unique(split.given.users)
        g, te = split.given, split.test
        write_cofirank_lines(workdir / "given.lsvm", g.users, g.items, g.ratings, f_rows)
        write_cofirank_lines(workdir / "strongtest.lsvm", te.users, te.items, te.ratings, f_rows)
    F, secs = _run_program(binary, workdir, config_text(loss, protocol), len(f_rows))
    line_of = {int(u): j for j, u in enumerate(f_rows)}
    return _mean_metrics(split.test, F, line_of, ("ndcg@10",))["ndcg@10"], secs


TOPN_GRID = [{"reg": reg, "offsets": off} for reg in TOPN_COFIRANK_GRID["reg"] for off in TOPN_COFIRANK_GRID["offsets"]]
TOPN_METRICS = ("gap@5", "ndcg@5", "p@5")


def _mean_metrics(cands, F, line_of, metrics, threshold=5) -> dict[str, float]:
    """Mean over users of ``metrics`` of the lists in ``cands`` ranked by the program's F (cofiviz's metrics)."""
    order = np.argsort(cands.users, kind="stable")
    u, i, r = cands.users[order], cands.items[order], cands.ratings[order]
    s = np.array([F[line_of[int(a)]].get(int(b), 0.0) for a, b in zip(u, i)])
    offsets = np.r_[0, np.cumsum(np.bincount(u, minlength=int(u.max()) + 1))]
    out = score_lists(offsets, r, s, metrics=metrics, threshold=threshold)
    return {m: float(np.nanmean(v)) for m, v in out.items()}


def run_authors_topn(binary: str, split, setting: dict, workdir: Path) -> tuple[dict, dict, float]:
    """The program (NDCG loss, d = 10) on a top-N split: (valid metrics, test metrics, wall seconds)."""
    rows = _write_training(workdir, split)
    off = int(bool(setting["offsets"]))
    config = config_text("ndcg", "weak", **{
        "int cofi.dimW": 10, "double cofi.userphase.lambda": setting["reg"],
        "double cofi.moviephase.lambda": setting["reg"], "int cofi.useMovieOffset": off,
        "int cofi.useUserOffset": off, "int cofi.eval.evaluateOnTestSet": 0})
    F, secs = _run_program(binary, workdir, config, len(rows))
    line_of = {int(u): j for j, u in enumerate(rows)}
    return (_mean_metrics(split.candidates("valid"), F, line_of, TOPN_METRICS),
            _mean_metrics(split.candidates("test"), F, line_of, TOPN_METRICS), secs)


def topn(binary: str, ns, seeds, base: Path) -> list[dict]:
    data = {"name": "movielens-100k"}
    cells = []
    for n in ns:
        pop = []
        for seed in seeds:
            split = make_split(data, "gapfm-top-n", {"n_train": n}, seed)
            pop.append(evaluate(PopRec().fit(split.train), split, list(TOPN_METRICS), threshold=5))
            for j, setting in enumerate(TOPN_GRID):
                v, te, secs = run_authors_topn(binary, split, setting, base / f"topn-N{n}-s{seed}-g{j}")
                cells.append({"protocol": "topn", "N": n, "seed": seed, **setting, "valid": v, "test": te,
                              "authors_seconds": secs})
                print(f"N={n:<3} seed={seed} reg={setting['reg']:<6g} offsets={setting['offsets']!s:5}  "
                      f"valid GAP@5 {v['gap@5']:.4f}  test GAP@5 {te['gap@5']:.4f}  {secs:5.1f} s", flush=True)
        mine = [c for c in cells if c["N"] == n]
        best = TOPN_GRID[best_index([np.mean([c["valid"]["gap@5"] for c in mine
                                              if (c["reg"], c["offsets"]) == (g["reg"], g["offsets"])])
                                     for g in TOPN_GRID], "gap@5")]
        chosen = [c for c in mine if (c["reg"], c["offsets"]) == (best["reg"], best["offsets"])]
        line = f"== Given {n}: authors' CofiRank (chosen reg={best['reg']:g}, offsets={best['offsets']})"
        for m in TOPN_METRICS:
            vals = [c["test"][m] for c in chosen]
            line += f"  {m} {np.mean(vals):.4f} ± {np.std(vals):.4f}"
        line += "   PopRec" + "".join(f"  {m} {np.mean([p[m] for p in pop]):.4f}" for m in TOPN_METRICS)
        print(line, flush=True)
    return cells


def run_cofiviz(split, loss: str, seed: int) -> tuple[float, float]:
    t = time.perf_counter()
    model = CofiRank(**{**COFIVIZ_ORIGINAL_FORM[loss], "seed": seed}).fit(split.train)
    value = evaluate(model, split, ["ndcg@10"])["ndcg@10"]
    return float(value), time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("protocol", choices=["weak", "strong", "topn"])
    ap.add_argument("--binary", required=True, help="the authors' CofiRank program, built as the docstring says")
    ap.add_argument("--losses", nargs="+", default=["ndcg"], choices=sorted(LOSS_NAMES))
    ap.add_argument("--ns", nargs="+", type=int, default=[10, 20, 50])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--cofiviz", action="store_true", help="also fit cofiviz's CofiRank (original form)")
    ap.add_argument("--workdir", default=None, help="where the files go (default: a temporary directory)")
    ap.add_argument("--json", default=None, help="write every cell's numbers here")
    args = ap.parse_args(argv)
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        ap.error(f"--binary {args.binary!r} is not an executable file; build the authors' program first "
                 "(see this script's docstring)")
    base = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="authors-cofirank-"))
    if args.protocol == "topn":
        cells = topn(args.binary, args.ns, args.seeds, base)
        if args.json:
            Path(args.json).write_text(json.dumps(cells, indent=1))
        return 0
    data = {"name": "movielens-100k"}
    proto_name, n_key = ("cofirank-weak", "n_train") if args.protocol == "weak" else ("strong", "n_given")
    cells = []
    print(f"{'loss':11s} {'N':>3} {'seed':>4}  {'authors':>8} {'secs':>6}" + (f"  {'cofiviz':>8} {'secs':>6}"
                                                                               if args.cofiviz else ""))
    for loss in args.losses:
        for n in args.ns:
            for seed in args.seeds:
                split = make_split(data, proto_name, {n_key: n}, seed)
                a, a_secs = run_authors(args.binary, split, loss, args.protocol,
                                        base / f"{args.protocol}-{loss}-N{n}-s{seed}")
                cell = {"protocol": args.protocol, "loss": loss, "N": n, "seed": seed, "authors": a,
                        "authors_seconds": a_secs}
                line = f"{loss:11s} {n:>3} {seed:>4}  {a:8.4f} {a_secs:6.1f}"
                if args.cofiviz:
                    c, c_secs = run_cofiviz(split, loss, seed)
                    cell.update(cofiviz=c, cofiviz_seconds=c_secs)
                    line += f"  {c:8.4f} {c_secs:6.1f}"
                print(line, flush=True)
                cells.append(cell)
            done = [c for c in cells if c["loss"] == loss and c["N"] == n]
            mean = f"  mean {loss:11s} N={n:<3} authors {np.mean([c['authors'] for c in done]):.4f}"
            if args.cofiviz:
                mean += f"  cofiviz {np.mean([c['cofiviz'] for c in done]):.4f}"
            print(mean, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(cells, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
