"""The ``cofiviz`` command line.

::

    cofiviz run MODEL --train FILE --test FILE [--valid FILE] [--set KEY=VALUE ...]
                      [--metrics ndcg@10,ap,gap,zero_one] [--seed S] [--json OUT] [--threshold 4]
                      [--scale LO,HI] [--duplicates error|first|last|mean] [--encoding ENC] [--sep SEP]
                      [--user COL] [--item COL] [--rating COL]
    cofiviz split PROTOCOL --data movielens-100k|FILE --out DIR [--set KEY=VALUE ...] [--seed S]
                           [--scale LO,HI] [--duplicates ...] [--encoding ENC] [--sep SEP] [--user COL] ...
    cofiviz datasets [list | fetch NAME]
    cofiviz models
    cofiviz warmup
    cofiviz sweep CONFIG [--store DIR] [--scheduler tcp://HOST:PORT | --workers N | --in-process]
                         [--numba-threads N] [--retries N] [--out FILE.parquet] [--no-progress]
    cofiviz reproduce NAME|list [--quick] [--store DIR] [--html OUT] [--workers N] [--scheduler ADDR]
                                [--json OUT]

Exit codes: 0 success; 2 a usage error (unknown model, parameter, metric or protocol, a value out of
range — one line naming what is valid); 1 bad data (the file and line at fault), a dataset that
cannot be obtained, or a fit that diverged. No traceback is shown for any of these.
"""

from __future__ import annotations

import argparse
import codecs
import inspect
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .compile_notice import announce_compilation
from .errors import CofivizError, DataError, DataSourceError, ModelFitError, ParameterError
from .jsonable import jsonable
from .ratings import DUPLICATE_POLICIES

__all__ = ["main", "parse_sets", "convert_value"]

PROG = "cofiviz"
SEARCH_ON_VALID = "valid file"
SEARCH_ON_TRAIN = "10% of train"


class _UsageError(ParameterError):
    """A command-line usage error (exit code 2)."""


# ---------------------------------------------------------------------------------- --set parsing
def parse_sets(items: Sequence[str] | None) -> dict[str, list[str]]:
    """``["k=v", "k2=a,b"]`` → ``{"k": ["v"], "k2": ["a", "b"]}`` (raw strings, order kept)."""
    out: dict[str, list[str]] = {}
    for item in items or []:
        if "=" not in item:
            raise _UsageError(f"--set expects KEY=VALUE (or KEY=V1,V2,... to search), got {item!r}")
        key, value = item.split("=", 1)
        key = key.strip().replace("-", "_")
        if not key:
            raise _UsageError(f"--set expects KEY=VALUE, got {item!r}")
        values = [v.strip() for v in value.split(",")]
        if any(v == "" for v in values):
            raise _UsageError(f"--set {key}: empty value in {value!r}")
        if key in out:
            raise _UsageError(f"--set {key} given twice")
        out[key] = values
    return out


_TRUE = {"true", "1", "yes", "on", "y", "t"}
_FALSE = {"false", "0", "no", "off", "n", "f"}


def convert_value(owner: str, key: str, parameter, raw: str) -> Any:
    """Convert one ``--set`` string with the type of a :mod:`param` parameter.

    Integer, Number, Boolean, Selector (matched against the objects' text) and String are handled;
    anything else is parsed as JSON when it can be, else kept as text.
    """
    import param

    def bad(expected: str) -> _UsageError:
        return _UsageError(f"{owner} parameter {key!r}: {raw!r} is not {expected}")

    if isinstance(parameter, param.Boolean):
        low = raw.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise bad("a boolean (true/false)")
    if isinstance(parameter, param.Selector):
        objects = list(parameter.objects or [])
        for obj in objects:
            if str(obj) == raw or str(obj).lower() == raw.lower():
                return obj
        raise _UsageError(f"{owner} parameter {key!r}: {raw!r} is not one of "
                          f"{', '.join(str(o) for o in objects)}")
    if isinstance(parameter, param.Integer):
        try:
            return int(raw)
        except ValueError:
            try:
                f = float(raw)
            except ValueError:
                raise bad("an integer") from None
            if not math.isfinite(f) or f != int(f):
                raise bad("an integer") from None
            return int(f)
    if isinstance(parameter, param.Number):
        try:
            return float(raw)
        except ValueError:
            raise bad("a number") from None
    if isinstance(parameter, param.String):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _convert_model_sets(klass, sets: dict[str, list[str]]) -> dict[str, list[Any]]:
    valid = klass.param_names()
    unknown = [k for k in sets if k not in valid]
    if unknown:
        raise _UsageError(f"model {klass.model_name()!r} has no parameter {unknown[0]!r}; valid parameters: "
                          f"{', '.join(valid)}")
    return {k: [convert_value(f"model {klass.model_name()!r}", k, klass.param[k], v) for v in vals]
            for k, vals in sets.items()}


def _grid(values: dict[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(values)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(values[k] for k in keys))]


# ---------------------------------------------------------------------------------- helpers
def _print_table(rows: list[dict], columns: list[str], out=None) -> None:
    out = out or sys.stdout
    def fmt(v):
        if isinstance(v, float):
            return "nan" if not math.isfinite(v) else f"{v:.4f}"
        return str(v)
    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)), file=out)
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)), file=out)


def _carve_tenth(train, seed: int):
    """A seeded tenth of each user's training ratings as validation; the rest stays train.

    Each user with at least 5 training ratings gives ``max(2, round(n / 10))`` of them (a list of one
    item cannot be ranked, so two at least); users with fewer give none.
    """
    rng = np.random.default_rng(seed)
    counts = train.user_counts()
    hold = np.zeros(len(train), dtype=bool)
    for u in np.flatnonzero(counts >= 5):
        n = int(counts[u])
        k = max(2, int(round(n / 10)))
        start = int(train.indptr[u])
        pick = rng.choice(n, size=k, replace=False)
        hold[start + pick] = True
    if not hold.any():
        raise DataError("cannot carve a validation tenth out of train: no user has 5 or more training ratings; "
                        "pass --valid FILE to search parameters")
    return train.take(~hold, name="train (90%)"), train.take(hold, name="valid (10% of train)")


# ---------------------------------------------------------------------------------- commands
def _cmd_run(args) -> int:
    from .evaluation import check_metrics, default_threshold, evaluate, mean_metrics
    from .metrics import lower_is_better
    from .models.registry import get_model_class
    from .split import Split

    klass = get_model_class(args.model)
    try:
        sets = parse_sets(args.set)
        values = _convert_model_sets(klass, sets)
    except _UsageError:
        raise
    metrics = check_metrics(args.metrics)
    base_params: dict[str, Any] = {}
    if args.seed is not None:
        if "seed" in klass.param_names() and "seed" not in values:
            base_params["seed"] = args.seed
    seed = 0 if args.seed is None else args.seed
    candidates = [{**base_params, **combo} for combo in _grid(values)] or [dict(base_params)]
    # validate every candidate before any data is read or model trained
    for cand in candidates:
        klass(**cand)
    searching = len(candidates) > 1

    protocol = _protocol_beside(args.train)
    negatives, given = args.negatives, args.given
    if protocol is not None:  # a directory written by `cofiviz split`: its extra parts belong to the protocol
        here = Path(args.train).parent
        for part in ("negatives", "given"):
            if getattr(args, part) is None:
                found = [here / f"{part}.{ext}" for ext in ("tsv", "csv") if (here / f"{part}.{ext}").is_file()]
                if found:
                    if part == "negatives":
                        negatives = found[0]
                    else:
                        given = found[0]
                    if not args.quiet:
                        print(f"using {found[0]} (written with the split; pass --{part} to override)",
                              file=sys.stderr)
    split = Split.from_files(args.train, args.test, args.valid, negatives=negatives, given=given,
                             protocol=protocol, **_reading(args))
    unseen = split.report.get("unseen", {})
    if not args.quiet:
        for part, seen in unseen.items():
            if seen["users_unseen"] or seen["items_unseen"]:
                print(f"warning: {seen['users_unseen']:,} of the {seen['users']:,} {part} users and "
                      f"{seen['items_unseen']:,} of the {seen['items']:,} {part} items have no rating in "
                      f"{args.train}{' (nor in ' + str(given) + ')' if given is not None else ''}", file=sys.stderr)
    threshold = args.threshold if args.threshold is not None else default_threshold(split)
    ymax = args.ymax
    first = metrics[0]
    lower = lower_is_better(first)

    search = None
    chosen = candidates[0]
    if searching:
        if split.valid is not None:
            s_train, s_valid, on = split.train, split.valid, SEARCH_ON_VALID
        else:
            s_train, s_valid = _carve_tenth(split.train, seed)
            on = SEARCH_ON_TRAIN
        inner = Split(train=s_train, test=s_valid, protocol={"name": f"search on {on}"})
        scored = []
        for cand in candidates:
            model = klass(**cand).fit(s_train, valid=s_valid)
            ev = evaluate(model, inner, metrics=[first], part="test", threshold=threshold, ymax=ymax)
            score = ev.means[first]
            scored.append({"params": cand, "score": score})
            if not args.quiet:
                shown = ", ".join(f"{k}={v}" for k, v in cand.items() if k in values)
                print(f"search {shown}: {first} = {score:.4f}", file=sys.stderr)
        def key(entry):
            s = entry["score"]
            if s is None or not math.isfinite(s):
                return -math.inf
            return -s if lower else s
        best = max(range(len(scored)), key=lambda i: key(scored[i]))  # first of equals wins
        chosen = scored[best]["params"]
        search = {"chosen": {k: chosen[k] for k in values}, "candidates": scored, "metric": first, "on": on}
        if on == SEARCH_ON_TRAIN:
            search["carve"] = ("max(2, round(n/10)) of each user's training ratings (users with n >= 5), "
                               f"seed {seed}; the chosen values were refit on the full train file")

    model = klass(**chosen)
    iterations: list[dict] = []

    def record(info):
        row = {"iteration": info.iteration, "seconds": info.seconds, "loss": info.loss}
        if split.valid is not None and len(split.valid):
            row.update(mean_metrics(info.model, split.valid, metrics, train=split.train,
                                    threshold=threshold, ymax=ymax))
        iterations.append(row)

    t0 = time.perf_counter()
    model.fit(split.train, valid=split.valid, callbacks=[record])
    fit_seconds = time.perf_counter() - t0
    ev = evaluate(model, split, metrics=metrics, part="test", threshold=threshold, ymax=ymax)

    summary_rows = ev.summary.to_dict("records")
    result = {
        "model": klass.model_name(),
        "params": model.get_params(),
        "metrics": ev.means,
        "n_users": ev.info["n_users"],
        "fit_seconds": fit_seconds,
        "iterations": iterations,
        "summary": summary_rows,
        "threshold": threshold,
        "ymax": ev.info["ymax"],
        "tie_rule": ev.info["tie_rule"],
        "seed": args.seed,
        "stopped_reason": model.stopped_reason_,
        "files": {"train": str(args.train), "test": str(args.test),
                  "valid": None if args.valid is None else str(args.valid),
                  "negatives": None if negatives is None else str(negatives),
                  "given": None if given is None else str(given)},
        "protocol": split.protocol.get("name", "custom"),
        "n_test_users_unseen": unseen.get("test", {}).get("users_unseen", 0),
        "n_test_items_unseen": unseen.get("test", {}).get("items_unseen", 0),
    }
    if search is not None:
        result["search"] = search
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(jsonable(result, nonfinite="none"), indent=2, default=str))
    if not args.quiet:
        print(f"{klass.model_name()}  ({len(split.train):,} training ratings, "
              f"{ev.info['n_users']:,} test users, fit {fit_seconds:.2f} s)")
        if search:
            print("chosen on " + search["on"] + ": " + ", ".join(f"{k}={v}" for k, v in search["chosen"].items()))
        _print_table(summary_rows, ["metric", "mean", "std", "n_users", "n_skipped"])
        if args.json:
            print(f"wrote {args.json}")
    return 0


def _protocol_beside(train_file) -> dict | None:
    """The ``protocol.json`` that ``cofiviz split`` wrote next to the train file, if any."""
    meta = Path(train_file).parent / "protocol.json"
    if not meta.is_file():
        return None
    try:
        out = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(out, dict):
        out.pop("scale", None)
        return out
    return None


def _cmd_split(args) -> int:
    from . import datasets, protocols

    protocols.get(args.protocol)  # unknown protocol: ParameterError listing the valid ones
    sets = parse_sets(args.set)
    defaults = dict(protocols.parameters(args.protocol))
    base = sets.get("base", [defaults.get("base")])[0]
    if isinstance(base, str) and "base" in defaults:
        try:
            defaults = {**protocols.parameters(base), **defaults}
        except ParameterError:
            pass  # make() reports the bad base
    kwargs: dict[str, Any] = {}
    for key, vals in sets.items():
        if key not in defaults:
            raise _UsageError(f"protocol {args.protocol!r} has no parameter {key!r}; valid parameters: "
                              f"{', '.join(k for k in defaults if k != 'seed')}")
        if len(vals) != 1:
            raise _UsageError(f"--set {key}: a split takes one value, got {','.join(vals)}")
        try:
            kwargs[key] = _convert_plain(vals[0], defaults[key])
        except _UsageError as exc:
            raise _UsageError(f"protocol {args.protocol!r} parameter {key!r}: {exc}") from None
    if "seed" in defaults:
        kwargs["seed"] = args.seed
    ratings = _load_data(args.data, datasets, _reading(args))
    split = protocols.make(args.protocol, ratings, **kwargs)
    out = split.write(args.out)
    parts = ", ".join(f"{name} {len(r):,}" for name, r in split.parts())
    print(f"wrote the {split.protocol.get('name', args.protocol)} split of {getattr(ratings, 'name', None) or args.data}"
          f" (seed {args.seed}) to {out}: {parts}")
    return 0


def _convert_plain(raw: str, default: Any) -> Any:
    """Convert a protocol parameter by its default's type (JSON for anything else)."""
    if isinstance(default, bool):
        low = raw.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise _UsageError(f"{raw!r} is not a boolean (true/false)")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise _UsageError(f"{raw!r} is not an integer") from None
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise _UsageError(f"{raw!r} is not a number") from None
    if isinstance(default, str):
        return raw
    if raw.lower() in ("none", "null"):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _load_data(spec: str, datasets, reading: dict | None = None):
    """A ratings file (CSV, TSV, Parquet), else a dataset name (``movielens-100k``, ``popularity``, ...).

    ``reading`` (from :func:`_reading`) goes to :func:`cofiviz.datasets.read`; it is a usage error
    with a dataset name.
    """
    path = Path(spec)
    reading = reading or {}
    if path.is_file():
        return datasets.read(path, **reading)
    if reading:
        flags = ", ".join(f"--{k}" for k in reading)
        raise _UsageError(f"{flags} only apply to a ratings file, and --data {spec!r} is not a file; give a "
                          "ratings file, or leave them out for a dataset name")
    try:
        return datasets.load(spec)
    except ParameterError as exc:
        raise _UsageError(f"--data {spec!r} is neither a file nor a dataset name ({exc}); give a ratings file "
                          "(CSV, TSV, Parquet with user item rating) or a dataset name") from None


def _cmd_datasets(args) -> int:
    from . import datasets

    if args.action in (None, "list"):
        described = datasets.describe()
        width = max(len(n) for n in described)
        for name, text in described.items():
            print(f"{name.ljust(width)}  {text}")
        print(f"{'FILE'.ljust(width)}  your own user item rating file (CSV, TSV, Parquet), e.g. "
              "cofiviz split cofirank-weak --data FILE --out DIR")
        return 0
    if not args.name:
        raise _UsageError(f"datasets fetch needs a NAME; available: {', '.join(datasets.available())}")
    t0 = time.perf_counter()
    r = datasets.load(args.name)
    where = ""
    if "movielens" in str(getattr(r, "name", "") or "").lower() or args.name.lower().startswith(("movielens", "ml")):
        where = f" (cached in {datasets.default_cache_dir()})"
    print(f"{r!r} in {time.perf_counter() - t0:.1f} s{where}")
    return 0


def _cmd_models(args) -> int:
    from .models.registry import available_models, get_model_class

    for name in available_models():
        klass = get_model_class(name)
        doc = (inspect.getdoc(klass) or "").split("\n")[0]
        print(f"{name}: {doc}")
        shown = [p for p in klass.param_names()
                 if klass.param[p].precedence is None or klass.param[p].precedence >= 0]
        if not shown:
            print("    (no parameters)")
        for p in shown:
            par = klass.param[p]
            extra = ""
            objects = getattr(par, "objects", None)
            if objects:
                extra = " one of " + "|".join(str(o) for o in objects)
            bounds = getattr(par, "bounds", None)
            if bounds is not None and bounds != (None, None):
                inc = getattr(par, "inclusive_bounds", (True, True))
                lo = "-inf" if bounds[0] is None else f"{bounds[0]:g}"
                hi = "inf" if bounds[1] is None else f"{bounds[1]:g}"
                left = "[" if inc[0] and bounds[0] is not None else "("
                right = "]" if inc[1] and bounds[1] is not None else ")"
                extra += f" in {left}{lo}, {hi}{right}"
            print(f"    {p} = {par.default!r} ({type(par).__name__}{extra}): {par.doc or ''}")
    return 0


def _cmd_warmup(args) -> int:
    from .warmup import warmup

    seconds = warmup(verbose=not args.quiet)
    print(f"numba kernels compiled or loaded from cache in {seconds:.2f} s")
    return 0


def _cmd_sweep(args) -> int:
    from .experiment import Experiment
    from .store import ResultsStore

    exp = Experiment.from_file(args.config)
    store = ResultsStore(args.store or Path("cofiviz-results") / "store")
    t0 = time.perf_counter()
    if args.in_process:
        res = exp.run(store=store, progress=not args.no_progress)
        res.failed = []
    else:
        from .sweep import sweep
        res = sweep(exp, store, scheduler=args.scheduler, n_workers=args.workers, numba_threads=args.numba_threads,
                    retries=args.retries, progress=not args.no_progress, batch_size=args.batch)
    seconds = time.perf_counter() - t0
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        res.results.to_parquet(out, index=False)
        if len(res.traces):
            res.traces.to_parquet(out.with_name(out.stem + "_traces" + out.suffix), index=False)
    summary = res.summary()
    print(f"{exp.name}: {len(res.cells)} of {len(exp)} cells in {store.root} ({seconds:.1f} s)")
    if len(summary):
        rows = summary.to_dict("records")
        _print_table(rows, [c for c in ("label", "setting", "protocol_params", "metric", "mean", "std", "count")
                            if c in summary.columns])
    if args.out:
        print(f"wrote {args.out}")
    if res.failed:
        for key, what, err in res.failed:
            print(f"failed: {key} {what}: {err}", file=sys.stderr)
        return 1
    return 0


def _cmd_reproduce(args) -> int:
    from .reproduce import REPRODUCTIONS, format_table, reproduce

    if args.name == "list":
        for name, rep in REPRODUCTIONS.items():
            print(f"{name}: {rep.title}")
        return 0
    data: Any = "movielens-100k"
    if args.data:
        text = args.data.strip()
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise _UsageError(f"--data: not a JSON object ({exc})") from None
        else:
            data = {"path": text} if Path(text).is_file() else text
    report = reproduce(args.name, quick=args.quick, store=args.store, html_path=args.html, workers=args.workers,
                       scheduler=args.scheduler, progress=not args.no_progress, data=data)
    rep = REPRODUCTIONS[report.name]
    print(f"{rep.title}{' — QUICK' if args.quick else ''} ({report.seconds:.0f} s, {len(report.results.cells)} cells)")
    if len(report.table):
        print(format_table(report.table))
    for note in report.notes:
        print(f"- {note}")
    print(f"wrote {report.html}")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"name": report.name, "quick": args.quick, "table": report.table.to_dict("records"),
                   "notes": report.notes, "html": str(report.html)}
        out.write_text(json.dumps(jsonable(payload, nonfinite="none"), indent=2, default=str))
    return 0


# ---------------------------------------------------------------------------------- parser
_SEPARATORS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "space": r"\s+", "whitespace": r"\s+"}
_READING = ("scale", "duplicates", "encoding", "sep", "user", "item", "rating")


def _scale_arg(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (float(p) for p in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        lo = hi = None
    if lo is None or not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise argparse.ArgumentTypeError(f"expected LO,HI, two finite numbers with LO < HI (e.g. 1,5), got {text!r}")
    return lo, hi


def _encoding_arg(text: str) -> str:
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown text encoding {text!r} (e.g. utf-8, latin-1, utf-16, "
                                         "cp1252)") from None
    return text


def _sep_arg(text: str) -> str:
    if text == "":
        raise argparse.ArgumentTypeError("expected a separator (a character such as ':' or tab, comma, "
                                         "semicolon, whitespace)")
    return _SEPARATORS.get(text.lower(), text)


def _column_arg(text: str) -> str | int:
    return int(text) if text.isdigit() else text


def _add_reading_arguments(p: argparse.ArgumentParser, files: str) -> None:
    """The options of :func:`cofiviz.datasets.read` that the errors of a ratings file advise."""
    g = p.add_argument_group("reading ratings files", f"how {files} is read (the Python keywords of "
                             "cofiviz.datasets.read); by default sniffed")
    g.add_argument("--scale", type=_scale_arg, default=None, metavar="LO,HI",
                   help="declared rating scale; a rating outside it is an error (default: the observed range)")
    g.add_argument("--duplicates", choices=DUPLICATE_POLICIES, default=None,
                   help="several ratings of one (user, item) pair: error (default), keep the first or the last "
                        "in the file, or their mean")
    g.add_argument("--encoding", type=_encoding_arg, default=None, metavar="ENC",
                   help="text encoding (default utf-8; e.g. latin-1), of the decompressed text for .gz/.bz2/.xz/.zip")
    g.add_argument("--sep", type=_sep_arg, default=None, metavar="SEP",
                   help="field separator (default: sniffed; tab, comma, semicolon, whitespace or a character)")
    for role in ("user", "item", "rating"):
        g.add_argument(f"--{role}", type=_column_arg, default=None, metavar="COL",
                       help=f"the {role} column: a header name or a 0-based position (default: by header name, "
                            "else position)")


def _reading(args) -> dict[str, Any]:
    """The reading options given on the command line, as keywords of :func:`cofiviz.datasets.read`."""
    return {k: getattr(args, k) for k in _READING if getattr(args, k, None) is not None}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2 (argparse's convention) without the usage dump
        raise _UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="cofiviz: a lab for collaborative ranking.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    r = sub.add_parser("run", help="train a model on a split and score its rankings",
                       description="Train MODEL on --train, score its rankings of --test. A --set value "
                                   "with commas (reg=0.1,1,10) is searched on --valid, or on a seeded "
                                   "tenth of each user's training ratings when there is no --valid.")
    r.add_argument("model", metavar="MODEL", help="model name (see `cofiviz models`)")
    r.add_argument("--train", required=True, help="training ratings file (user item rating)")
    r.add_argument("--test", required=True, help="test ratings file")
    r.add_argument("--valid", default=None, help="validation ratings file (early stopping, searches)")
    r.add_argument("--negatives", default=None, help="sampled unrated items (rating 0) added to the test lists "
                   "(top-N protocol; found beside --train when `cofiviz split` wrote it)")
    r.add_argument("--given", default=None, help="test users' given ratings to fold in (strong generalization; "
                   "found beside --train when `cofiviz split` wrote it)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="model parameter; KEY=V1,V2,... searches the values")
    r.add_argument("--metrics", default="ndcg@10,ap,gap", help="comma-separated metrics (default ndcg@10,ap,gap)")
    r.add_argument("--seed", type=int, default=None, help="model seed and seed of the search carve-out")
    r.add_argument("--json", default=None, metavar="OUT", help="write the results as JSON")
    r.add_argument("--threshold", type=float, default=None,
                   help="relevance threshold of AP, P@k (default 4; a top-N protocol.json beside --train: its own)")
    r.add_argument("--ymax", type=float, default=None, help="GAP's highest grade (default: the scale's maximum)")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    _add_reading_arguments(r, "every ratings file")
    r.set_defaults(func=_cmd_run)

    s = sub.add_parser("split", help="write a protocol's train/valid/test split to files")
    s.add_argument("protocol", metavar="PROTOCOL")
    s.add_argument("--data", required=True, help="movielens-100k or a ratings file")
    s.add_argument("--out", required=True, metavar="DIR")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="protocol parameter")
    s.add_argument("--seed", type=int, default=0)
    _add_reading_arguments(s, "the --data file")
    s.set_defaults(func=_cmd_split)

    d = sub.add_parser("datasets", help="list or fetch datasets")
    d.add_argument("action", nargs="?", choices=["list", "fetch"], default="list")
    d.add_argument("name", nargs="?", default=None)
    d.set_defaults(func=_cmd_datasets)

    m = sub.add_parser("models", help="list models with their parameters, defaults and bounds")
    m.set_defaults(func=_cmd_models)

    w = sub.add_parser("warmup", help="compile (or load) every numba kernel once")
    w.add_argument("--quiet", action="store_true")
    w.set_defaults(func=_cmd_warmup)

    sw = sub.add_parser("sweep", help="run an experiment file (YAML / TOML) on Dask, resumably",
                        description="Run every cell of CONFIG that is not yet in the results store, on a "
                                    "LocalCluster (default) or the scheduler at --scheduler; finished cells are "
                                    "written to the store as they complete, so an interrupted sweep resumes.")
    sw.add_argument("config", metavar="CONFIG", help="experiment file (.yaml, .yml or .toml)")
    sw.add_argument("--store", default=None, metavar="DIR", help="results store (default cofiviz-results/store)")
    sw.add_argument("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address (tcp://host:8786)")
    sw.add_argument("--workers", type=int, default=None, help="local cluster workers (default: cores)")
    sw.add_argument("--numba-threads", type=int, default=None, help="numba threads per worker (default cores/workers)")
    sw.add_argument("--retries", type=int, default=3, help="retries of a failed task (default 3)")
    sw.add_argument("--batch", type=int, default=1, help="cells per Dask task (default 1)")
    sw.add_argument("--in-process", action="store_true", help="run the cells one by one in this process, no Dask")
    sw.add_argument("--out", default=None, metavar="FILE.parquet", help="also write the results table here")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw.set_defaults(func=_cmd_sweep)

    rp = sub.add_parser("reproduce", help="reproduce a paper's table or figures; `reproduce list` lists them")
    rp.add_argument("name", metavar="NAME", help="cofirank-table2, cofirank-table3, lcr-table2, lcr-figures, "
                                                 "gapfm-table4, gapfm-topn, or list")
    rp.add_argument("--quick", action="store_true", help="a reduced version (one seed, first N, few iterations)")
    rp.add_argument("--store", default=None, metavar="DIR", help="results store (default cofiviz-results/store)")
    rp.add_argument("--html", default=None, metavar="OUT", help="report file (default cofiviz-results/reproduce-NAME.html)")
    rp.add_argument("--workers", type=int, default=0, help="run on a local Dask cluster of N workers (default: in process)")
    rp.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run on this Dask scheduler")
    rp.add_argument("--json", default=None, metavar="OUT", help="write the comparison as JSON")
    rp.add_argument("--data", default=None, help="other data than MovieLens 100K (a dataset name, a ratings file, "
                                                 "or a JSON object such as '{\"name\": \"synthetic\", \"n_users\": 200}')"
                                                 " — for smoke tests; the paper's numbers are MovieLens 100K's")
    rp.add_argument("--no-progress", action="store_true")
    rp.set_defaults(func=_cmd_reproduce)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 data/fit error, 2 usage error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if not getattr(args, "command", None):
            parser.print_help()
            return 2
        announce_compilation()
        return int(args.func(args) or 0)
    except ParameterError as exc:  # unknown model/parameter/metric/protocol, value out of range
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (DataError, DataSourceError, ModelFitError, CofivizError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"{PROG}: error: {exc.filename or exc}: no such file", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `cofiviz models | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:  # pragma: no cover
            pass
        return 0
    except KeyboardInterrupt:  # pragma: no cover
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
