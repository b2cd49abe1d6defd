"""``cofiviz split PROTOCOL --data NAME|NAME=PATH|FILE --out DIR``: write a protocol's split to files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import datasets, protocols
from ..util.errors import ParameterError
from .options import UsageError, add_reading_arguments, convert_plain, parse_sets, reading

__all__ = ["add_parser", "split", "load_data"]


def add_parser(sub) -> None:
    s = sub.add_parser("split", help="write a protocol's train/valid/test split to files")
    s.add_argument("protocol", metavar="PROTOCOL")
    s.add_argument("--data", required=True,
                   help="a data set name (movielens-100k, movielens-1m, ...; `cofiviz datasets`), NAME=PATH for one "
                        "read from your own files (netflix-prize=FOLDER, eachmovie=Vote.txt, yelp=REVIEWS.json), or a "
                        "ratings file")
    s.add_argument("--out", required=True, metavar="DIR")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="protocol parameter")
    s.add_argument("--seed", type=int, default=0)
    add_reading_arguments(s, "the --data file")
    s.set_defaults(func=split)


def load_data(spec: str, options: dict | None = None):
    """A ratings file (CSV, TSV, Parquet), else ``NAME=PATH`` for a data set read from your own files
    (``netflix-prize=FOLDER``, ``eachmovie=Vote.txt``, ``yelp=REVIEWS.json``; see
    :func:`cofiviz.datasets.user_files`), else a dataset name (``movielens-100k``, ``popularity``, ...).

    ``options`` (the reading flags, :func:`~cofiviz.cli.options.reading`) go to :func:`cofiviz.datasets.read`;
    with ``NAME=PATH`` only ``--duplicates`` applies (its readers take ``duplicates=``); with a dataset name they
    are a usage error.
    """
    path = Path(spec)
    options = options or {}
    if path.is_file():
        return datasets.read(path, **options)
    needs = datasets.user_files()
    name, equals, where = spec.partition("=")
    try:
        key = datasets.canonical(name)
    except ParameterError:
        key = None
    if equals or key in needs:
        if key not in needs:
            raise UsageError(f"--data {spec!r}: NAME=PATH is for the data sets read from your own files "
                             f"({', '.join(needs)}), and {name!r} is not one of them; give a ratings file or a "
                             "dataset name")
        if not where:
            raise UsageError(f"--data {key} reads your own copy of its files: give --data {key}=PATH, PATH being "
                             f"{needs[key]}")
        unused = [k for k in options if k != "duplicates"]
        if unused:
            raise UsageError(f"{', '.join(f'--{k}' for k in unused)} {'applies' if len(unused) == 1 else 'apply'} "
                             f"only to a ratings file; --data {key}=PATH reads its own format (--duplicates applies)")
        return datasets.load(key, path=where, **options)
    if options:
        flags = ", ".join(f"--{k}" for k in options)
        raise UsageError(f"{flags} only apply to a ratings file, and --data {spec!r} is not a file; give a "
                         "ratings file, or leave them out for a dataset name")
    try:
        return datasets.load(spec)
    except ParameterError as exc:
        raise UsageError(f"--data {spec!r} is neither a file nor a dataset name ({exc}); give a ratings file "
                         "(CSV, TSV, Parquet with user item rating) or a dataset name") from None


def split(args) -> int:
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
            raise UsageError(f"protocol {args.protocol!r} has no parameter {key!r}; valid parameters: "
                             f"{', '.join(k for k in defaults if k != 'seed')}")
        if len(vals) != 1:
            raise UsageError(f"--set {key}: a split takes one value, got {','.join(vals)}")
        try:
            kwargs[key] = convert_plain(vals[0], defaults[key])
        except UsageError as exc:
            raise UsageError(f"protocol {args.protocol!r} parameter {key!r}: {exc}") from None
    if "seed" in defaults:
        kwargs["seed"] = args.seed
    ratings = load_data(args.data, reading(args))
    result = protocols.make(args.protocol, ratings, **kwargs)
    out = result.write(args.out)
    parts = ", ".join(f"{name} {len(r):,}" for name, r in result.parts())
    print(f"wrote the {result.protocol.get('name', args.protocol)} split of "
          f"{getattr(ratings, 'name', None) or args.data} (seed {args.seed}) to {out}: {parts}")
    return 0
