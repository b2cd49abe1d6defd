"""Numbers and settings a notebook's prose states, checked against what its cells compute and build.

A number in a Markdown cell that a cell computes is written ``<span data-computed="EXPR">TEXT</span>``: EXPR is a
Python expression read in the notebook's namespace once every cell has run, TEXT the number as the prose shows
it (``.364``, ``0.250``, ``−0.023``, ``+0.041``, ``1,200``, ``35 %``). TEXT agrees with EXPR's value when the value,
rounded to the digits TEXT shows, is TEXT. Numbers that depend on the quick mode (``COFIVIZ_QUICK``) are printed
by the cells, not written in the prose: the suite runs the notebooks in quick mode.

A setting the prose names (a model's β, λ, rank, loss, solver, ...) is written
``<span data-setting="EXPR">TEXT</span>``: EXPR reads the setting from a model object the notebook built
(``lcr.item_prior``) or from the class (``cofiviz.models.LCR().item_prior`` for the library's defaults,
``cofiviz.models.LCR.presets["paper"]["reg"]`` for the paper's), TEXT is the value as written: a number
(``4``, ``0.001``, ``1e-5``, ``1/1.6``), which must be the value exactly, or a word (``none``, ``gains``,
``float32``), which must be the value's text. A changed default thus fails wherever the prose still states the
old one.
"""

from __future__ import annotations

import ast
import json
import re

import nbformat

#: a computed number in Markdown
COMPUTED = re.compile(r'<span data-computed="([^"]+)">([^<]*)</span>')
#: a model setting in Markdown
SETTING = re.compile(r'<span data-setting="([^"]+)">([^<]*)</span>')
#: the line the appended cell prints its values on
TAG = "COFIVIZ-PROSE-NUMBERS "


def marks(nb) -> list[tuple[int, str, str]]:
    """``(cell index, EXPR, TEXT)`` of every computed number in the notebook's Markdown cells."""
    return [(i, m.group(1), m.group(2)) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
            for m in COMPUTED.finditer(c.source)]


def setting_marks(nb) -> list[tuple[int, str, str]]:
    """``(cell index, EXPR, TEXT)`` of every setting named in the notebook's Markdown cells."""
    return [(i, m.group(1).replace("&quot;", '"'), m.group(2)) for i, c in enumerate(nb.cells)
            if c.cell_type == "markdown" for m in SETTING.finditer(c.source)]


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


def setting_number(text: str) -> float | None:
    """The number a setting's TEXT writes (``4``, ``0.001``, ``1e-5``, ``1/1.6``, ``−0.25``), or None for a word."""
    t = text.strip().replace("\u2212", "-").replace("\u2009", "").replace(",", "")
    number = r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"
    if re.fullmatch(number, t):
        return float(t)
    if re.fullmatch(f"{number}/{number}", t):
        a, b = t.split("/")
        return float(a) / float(b)
    return None


def setting_agrees(text: str, value) -> bool:
    """True when a setting's TEXT states ``value``: the same number (to 1e-12 relative), or the same word.

    Booleans and None are words (``True``, ``None``); a number is never a word, nor a word a number.
    """
    number = setting_number(text)
    if number is not None:
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and abs(float(value) - number) <= 1e-12 * max(1.0, abs(number)))
    return text.strip().strip("`'\"") == str(value)


def _jsonable(value):
    """A setting's value as JSON keeps it: numbers, text, booleans and None as they are, anything else as text."""
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def reading_cell(nb):
    """A code cell that prints the value of every EXPR of ``nb`` as JSON after :data:`TAG`: the computed numbers
    as floats, the settings as they are (numbers, text, booleans, None)."""
    exprs = sorted({e for _, e, _ in marks(nb)})
    settings = sorted({e for _, e, _ in setting_marks(nb)})
    return nbformat.v4.new_code_cell(
        "import json as _json\n"
        "_plain = lambda v: v if v is None or isinstance(v, (bool, int, float, str)) else str(v)\n"
        f"print({TAG!r} + _json.dumps({{'numbers': {{_e: float(eval(_e)) for _e in {exprs!r}}}, "
        f"'settings': {{_e: _plain(eval(_e)) for _e in {settings!r}}}}}))")


def values(nb) -> dict:
    """After the notebook ran with :func:`reading_cell` last: ``{"numbers": {EXPR: value}, "settings": {...}}``."""
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    return json.loads(out.split(TAG, 1)[1].splitlines()[0])


def disagreements(nb, read: dict | None = None) -> list[str]:
    """Each computed number and each setting whose prose disagrees with its value.

    ``read`` is what :func:`values` returned; without it, it is read from the notebook's last cell (the notebook
    ran with :func:`reading_cell` last)."""
    read = values(nb) if read is None else read
    wrong = [f"cell {i}: the prose says {text!r}, {expr} is {read['numbers'][expr]!r}" for i, expr, text in marks(nb)
             if not agrees(text, read["numbers"][expr])]
    wrong += [f"cell {i}: the prose says the setting is {text!r}, {expr} is {read['settings'][expr]!r}"
              for i, expr, text in setting_marks(nb) if not setting_agrees(text, read["settings"][expr])]
    return wrong


def reads_only_the_library(expr: str) -> bool:
    """True when EXPR names nothing but ``cofiviz`` (a class's defaults or presets): it can be read without
    running the notebook."""
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)} <= {"cofiviz"}


def library_disagreements(nb) -> list[str]:
    """The settings of ``nb`` that read only the library, evaluated in this process, whose prose disagrees."""
    import cofiviz

    out = []
    for i, expr, text in setting_marks(nb):
        if reads_only_the_library(expr):
            value = eval(expr, {"cofiviz": cofiviz})
            if not setting_agrees(text, value):
                out.append(f"cell {i}: the prose says the setting is {text!r}, {expr} is {value!r}")
    return out
