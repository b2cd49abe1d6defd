"""The ``cofiviz`` command line.

::

    cofiviz run MODEL --train FILE --test FILE [--valid FILE] [--set KEY=VALUE ...]
                      [--metrics ndcg@10,ap,gap,zero_one] [--seed S] [--json OUT] [--threshold 4]
                      [--scale LO,HI] [--duplicates error|first|last|mean] [--encoding ENC] [--sep SEP]
                      [--user COL] [--item COL] [--rating COL] [--per-user]
    cofiviz split PROTOCOL --data movielens-100k|movielens-1m|NAME=PATH|FILE --out DIR [--set KEY=VALUE ...] [--seed S]
                           [--scale LO,HI] [--duplicates ...] [--encoding ENC] [--sep SEP] [--user COL] ...
    cofiviz datasets [list | fetch NAME]
    cofiviz models
    cofiviz warmup [--jobs N] [--quiet]
    cofiviz sweep CONFIG [--store DIR] [--scheduler tcp://HOST:PORT | --workers N | --in-process]
                         [--numba-threads N] [--retries N] [--out FILE.parquet] [--no-progress]
    cofiviz reproduce NAME|list [--quick] [--store DIR] [--html OUT] [--workers N] [--scheduler ADDR]
                                [--json OUT]
    cofiviz serve [--port 5006] [--address localhost] [--threads 4] [--allow-origin HOST[:PORT] ...]
    cofiviz apps [NAME ...] [--paths]
    cofiviz notebooks DIR [--force]
    cofiviz compare A.json B.json --metric M [--json OUT]
    cofiviz course [--notebooks DIR] [--out DIR] [--quick] [--editions DIR [--no-html]]

One module per group of commands (:mod:`.run`, :mod:`.compare`, :mod:`.split`, :mod:`.catalog`, :mod:`.batch`,
:mod:`.serve`, :mod:`.course`, :mod:`.bundled`), each adding its subcommands to the parser; :mod:`.options` holds
what they share.

Exit codes: 0 success; 2 a usage error (unknown model, parameter, metric or protocol, a value out of
range — one line naming what is valid); 1 bad data (the file and line at fault), a dataset that
cannot be obtained, or a fit that diverged. No traceback is shown for any of these.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from ..util.compile_notice import announce_compilation
from ..util.errors import CofivizError, ParameterError
from . import batch, bundled, catalog, compare, course, run, serve, split
from .options import Parser, convert_value, parse_sets

__all__ = ["main", "build_parser", "parse_sets", "convert_value"]

PROG = "cofiviz"


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand."""
    p = Parser(prog=PROG, description="cofiviz: a lab for collaborative ranking.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    run.add_parser(sub)
    compare.add_parser(sub)
    split.add_parser(sub)
    catalog.add_parsers(sub)
    batch.add_parsers(sub)
    serve.add_parser(sub)
    course.add_parser(sub)
    bundled.add_parsers(sub)
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
    except CofivizError as exc:    # bad data, an unreachable dataset, a diverging fit
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
