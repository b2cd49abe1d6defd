"""Numbers a notebook's prose states, checked against what its cells compute.

A number in a Markdown cell that a cell computes is written ``<span data-computed="EXPR">TEXT</span>``: EXPR is a
Python expression read in the notebook's namespace once every cell has run, TEXT the number as the prose shows
it (``.364``, ``0.250``, ``−0.023``, ``+0.041``, ``1,200``, ``35 %``). TEXT agrees with EXPR's value when the value,
rounded to the digits TEXT shows, is TEXT. Numbers that depend on the quick mode (``COFIVIZ_QUICK``) are printed
by the cells, not written in the prose: the suite runs the notebooks in quick mode.
"""

from __future__ import annotations

import json
import re

import nbformat

#: a computed number in Markdown
COMPUTED = re.compile(r'<span data-computed="([^"]+)">([^<]*)</span>')
#: the line the appended cell prints its values on
TAG = "COFIVIZ-PROSE-NUMBERS "


def marks(nb) -> list[tuple[int, str, str]]:
    """``(cell index, EXPR, TEXT)`` of every computed number in the notebook's Markdown cells."""
    return [(i, m.group(1), m.group(2)) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
            for m in COMPUTED.finditer(c.source)]


def parse(text: str) -> tuple[float, int]:
    """The number TEXT shows and its digits after the decimal point.

    Raises
    ------
    ValueError
        TEXT is not a number as prose writes one.
    """
    t = text.strip().replace("\u2212", "-").replace("\u2009", "").replace(",", "").replace(" ", "")
    t = t[:-1] if t.endswith("%") else t
    if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", t):
        raise ValueError(f"{text!r} is not a number as prose writes one")
    return float(t), len(t.split(".")[1]) if "." in t else 0


def agrees(text: str, value: float) -> bool:
    """True when ``value`` rounded to the digits ``text`` shows is ``text``."""
    shown, digits = parse(text)
    return abs(float(value) - shown) <= 0.5 * 10.0 ** -digits * (1 + 1e-9)


def reading_cell(nb):
    """A code cell that prints the value of every EXPR of ``nb`` as JSON after :data:`TAG`."""
    exprs = sorted({e for _, e, _ in marks(nb)})
    return nbformat.v4.new_code_cell(
        "import json as _json\n"
        f"print({TAG!r} + _json.dumps({{_e: float(eval(_e)) for _e in {exprs!r}}}))")


def disagreements(nb) -> list[str]:
    """After the notebook ran with :func:`reading_cell` last: each computed number whose prose disagrees."""
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    values = json.loads(out.split(TAG, 1)[1].splitlines()[0])
    return [f"cell {i}: the prose says {text!r}, {expr} is {values[expr]!r}" for i, expr, text in marks(nb)
            if not agrees(text, values[expr])]
