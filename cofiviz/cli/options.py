"""What the commands share: usage errors, ``--set KEY=VALUE`` parsing, the ratings-file reading options,
plain-text tables and JSON output."""

from __future__ import annotations

import argparse
import codecs
import json
import math
import sys
from pathlib import Path
from typing import Any, Sequence

import param

from ..util.errors import ParameterError
from ..util.jsonable import jsonable
from ..ratings import DUPLICATE_POLICIES

__all__ = ["UsageError", "Parser", "parse_sets", "convert_value", "convert_plain", "convert_model_sets",
           "add_reading_arguments", "reading", "print_table", "write_json"]


class UsageError(ParameterError):
    """A command-line usage error (exit code 2)."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit code 2, without the usage dump."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message}")


# ---------------------------------------------------------------------------------- --set parsing
def parse_sets(items: Sequence[str] | None) -> dict[str, list[str]]:
    """``["k=v", "k2=a,b"]`` → ``{"k": ["v"], "k2": ["a", "b"]}`` (raw strings, order kept)."""
    out: dict[str, list[str]] = {}
    for item in items or []:
        if "=" not in item:
            raise UsageError(f"--set expects KEY=VALUE (or KEY=V1,V2,... to search), got {item!r}")
        key, value = item.split("=", 1)
        key = key.strip().replace("-", "_")
        if not key:
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}")
        values = [v.strip() for v in value.split(",")]
        if any(v == "" for v in values):
            raise UsageError(f"--set {key}: empty value in {value!r}")
        if key in out:
            raise UsageError(f"--set {key} given twice")
        out[key] = values
    return out


_TRUE = {"true", "1", "yes", "on", "y", "t"}
_FALSE = {"false", "0", "no", "off", "n", "f"}


def convert_value(owner: str, key: str, parameter, raw: str) -> Any:
    """Convert one ``--set`` string with the type of a :mod:`param` parameter.

    Integer, Number, Boolean, Selector (matched against the objects' text) and String are handled;
    anything else is parsed as JSON when it can be, else kept as text.
    """
    def bad(expected: str) -> UsageError:
        return UsageError(f"{owner} parameter {key!r}: {raw!r} is not {expected}")

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
        raise UsageError(f"{owner} parameter {key!r}: {raw!r} is not one of "
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


def convert_model_sets(klass, sets: dict[str, list[str]]) -> dict[str, list[Any]]:
    """Every ``--set`` value of a model converted with its parameter's type; an unknown key is a usage error."""
    valid = klass.param_names()
    unknown = [k for k in sets if k not in valid]
    if unknown:
        raise UsageError(f"model {klass.model_name()!r} has no parameter {unknown[0]!r}; valid parameters: "
                         f"{', '.join(valid)}")
    return {k: [convert_value(f"model {klass.model_name()!r}", k, klass.param[k], v) for v in vals]
            for k, vals in sets.items()}


def convert_plain(raw: str, default: Any) -> Any:
    """Convert a protocol parameter by its default's type (JSON for anything else)."""
    if isinstance(default, bool):
        low = raw.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise UsageError(f"{raw!r} is not a boolean (true/false)")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise UsageError(f"{raw!r} is not an integer") from None
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise UsageError(f"{raw!r} is not a number") from None
    if isinstance(default, str):
        return raw
    if raw.lower() in ("none", "null"):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


# ---------------------------------------------------------------------------------- reading ratings files
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


def add_reading_arguments(p: argparse.ArgumentParser, files: str) -> None:
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


def reading(args) -> dict[str, Any]:
    """The reading options given on the command line, as keywords of :func:`cofiviz.datasets.read`."""
    return {k: getattr(args, k) for k in _READING if getattr(args, k, None) is not None}


# ---------------------------------------------------------------------------------- output
def print_table(rows: list[dict], columns: list[str], out=None) -> None:
    """``rows`` as aligned text columns (floats with four decimals)."""
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


def write_json(path: str | Path, payload: dict) -> None:
    """``payload`` as indented JSON (NaN and infinities written as ``null``), parent directories created."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(jsonable(payload, nonfinite="none"), indent=2, default=str))
