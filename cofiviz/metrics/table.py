"""The table of list-metric families: one entry per family, read by the name parser, the batch evaluator and the warm-up.

Adding a list metric is its module (a per-user ``@njit`` kernel, a batch kernel over the ranked lists, a public
single-list function and its :class:`~cofiviz.metrics.family.Family` declaration), one entry in :data:`BUILT_IN`
and its reference test (``tests/reference_metrics.py``). A family defined outside cofiviz is added with
:func:`register`.
"""

from __future__ import annotations

from .err import ERR
from .eru import ERU, NERU
from .family import Family
from .gap import GAP, GP, GR
from .ndcg import NDCG
from .precision import AP, MRR, PRECISION

__all__ = ["BUILT_IN", "ZERO_ONE", "ZERO_ONE_ALIASES", "families", "family", "register", "unregister"]

#: The pairwise error of LCR (eq 6, §5.1), the one error metric: lower is better. It needs the users' training
#: ratings as well as their candidate lists (:func:`cofiviz.metrics.zero_one_lists`), so it is not a list family.
ZERO_ONE = "zero_one"
#: Names of :data:`ZERO_ONE`, compared after stripping, lower-casing and writing ``-`` as ``_``; no family takes one.
ZERO_ONE_ALIASES = ("zero_one", "zeroone", "zero_one_error", "e01", "01")

#: cofiviz's own families, in the order names are listed
BUILT_IN: tuple[Family, ...] = (NDCG, AP, GAP, PRECISION, MRR, ERU, NERU, GP, GR, ERR)

_TABLE: dict[str, Family] = {f.name: f for f in BUILT_IN}


def families() -> tuple[Family, ...]:
    """Every family known now: the built-in ones, then the registered ones in the order they came."""
    return tuple(_TABLE.values())


def family(name: str) -> Family:
    """The family called ``name`` (``KeyError`` when there is none: :func:`cofiviz.metrics.parse_metric` says which
    names exist)."""
    return _TABLE[name]


def register(fam: Family) -> Family:
    """Add a family to the table: its names parse, :func:`cofiviz.metrics.score_lists` computes it, and every
    caller of either (the command line's ``--metrics``, experiments, the pages) accepts it.

    Raises
    ------
    ValueError
        A family of that name exists, or the name is the zero-one error's.
    """
    if fam.name in _TABLE:
        raise ValueError(f"a metric family called {fam.name!r} exists")
    if fam.name in ZERO_ONE_ALIASES:
        raise ValueError(f"{fam.name!r} is a name of the zero-one error")
    _TABLE[fam.name] = fam
    return fam


def unregister(name: str) -> None:
    """Remove a registered family (the built-in ones stay)."""
    if name in {f.name for f in BUILT_IN}:
        raise ValueError(f"{name!r} is a built-in metric family")
    _TABLE.pop(name, None)
