"""``cofiviz datasets``, ``cofiviz models`` and ``cofiviz warmup``: what the lab holds, and compiling it."""

from __future__ import annotations

import inspect
import time

from .. import datasets
from ..models import available_models, get_model_class
from ..engine.warmup import warmup as warm_kernels
from .options import UsageError

__all__ = ["add_parsers", "list_datasets", "list_models", "warmup"]


def add_parsers(sub) -> None:
    d = sub.add_parser("datasets", help="list or fetch datasets")
    d.add_argument("action", nargs="?", choices=["list", "fetch"], default="list")
    d.add_argument("name", nargs="?", default=None)
    d.set_defaults(func=list_datasets)

    m = sub.add_parser("models", help="list models with their parameters, defaults and bounds, search spaces and "
                                      "presets")
    m.set_defaults(func=list_models)

    w = sub.add_parser("warmup", help="compile (or load) every numba kernel once")
    w.add_argument("--quiet", action="store_true")
    w.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="processes that compile at once with an empty cache (default: the cores; 1: this process only)")
    w.set_defaults(func=warmup)


def list_datasets(args) -> int:
    needs = datasets.user_files()
    if args.action in (None, "list"):
        described = {(f"{name}=PATH" if name in needs else name): text for name, text in datasets.describe().items()}
        width = max(len(n) for n in described)
        for name, text in described.items():
            print(f"{name.ljust(width)}  {text}")
        print(f"{'FILE'.ljust(width)}  your own user item rating file (CSV, TSV, Parquet), e.g. "
              "cofiviz split cofirank-weak --data FILE --out DIR")
        return 0
    if not args.name:
        raise UsageError(f"datasets fetch needs a NAME; available: {', '.join(datasets.available())}")
    key = datasets.canonical(args.name)
    if key in needs:
        raise UsageError(f"{key} cannot be fetched: it is read from your own copy of its files ({needs[key]}); use "
                         f"it as --data {key}=PATH, e.g. cofiviz split cofirank-weak --data {key}=PATH --out DIR")
    t0 = time.perf_counter()
    r = datasets.load(args.name)
    where = ""
    if "movielens" in str(getattr(r, "name", "") or "").lower() or args.name.lower().startswith(("movielens", "ml")):
        where = f" (cached in {datasets.default_cache_dir()})"
    print(f"{r!r} in {time.perf_counter() - t0:.1f} s{where}")
    return 0


def list_models(args) -> int:
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
        space = getattr(klass, "search_space", None) or {}
        if space:
            print("    search space (--tune): " + "; ".join(f"{k} {v}" for k, v in space.items()))
        presets = getattr(klass, "presets", None) or {}
        for preset, values in presets.items():
            print(f"    preset {preset} (--preset {preset}): " + ", ".join(f"{k}={v!r}" for k, v in values.items()))
    return 0


def warmup(args) -> int:
    seconds = warm_kernels(verbose=not args.quiet, jobs=args.jobs, load=False)  # this process exits next
    print(f"numba kernels compiled or loaded from cache in {seconds:.2f} s")
    return 0
