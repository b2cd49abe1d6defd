"""What a list-metric family declares: its name, its cutoff rule, its batch kernel and the constants that kernel takes.

A family (``ndcg``, ``ap``, ...) is declared once, in its own module, as a :class:`Family`; the table of
:mod:`cofiviz.metrics.table` lists the declarations, and the name parser (:mod:`cofiviz.metrics.names`), the batch
evaluator (:func:`cofiviz.metrics.score_lists`) and the warm-up read it.

The batch kernel of a family runs over every user's list after the lists were ranked once
(:func:`cofiviz.metrics.ranking.prepare_lists`). It is a numba function, ``parallel=True`` over blocks of users
(:func:`cofiviz.metrics.ranking.block_bounds`), called as::

    kernel(offsets, ranked, ideal, gmax, k, n_blocks, *constants, out)

``offsets`` are the CSR offsets; ``ranked[offsets[u]:offsets[u + 1]]`` holds user ``u``'s true ratings in ranked
order (the tie rule of :mod:`cofiviz.metrics.ranking`), ``ideal`` the same ratings sorted descending (only filled
when the family declares ``needs_ideal``), ``gmax[u]`` the list's largest grade when all its grades are integers
up to :data:`~cofiviz.metrics.ranking.MAX_TABLE_GRADE` (else -1), ``k`` the cutoff (0: the whole list), and
``out[u]`` receives the user's value; an empty list gets NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Family", "Options", "CUTOFFS", "cut"]

#: How a family's names take a cutoff: ``"optional"`` (``ndcg`` and ``ndcg@K``), ``"required"`` (``p@K`` only),
#: ``"none"`` (``mrr`` only)
CUTOFFS = ("optional", "required", "none")


def cut(n: int, k: int) -> int:
    """How many positions of a list of ``n`` a cutoff ``k`` takes (``k <= 0``: the whole list), as every kernel
    counts them."""
    return n if (k <= 0 or k > n) else k


@dataclass(frozen=True)
class Options:
    """The parameters of one batch evaluation, as the user gave them (checked by the evaluator).

    Attributes
    ----------
    threshold : float
        Relevance threshold of the binary metrics (``rating >= threshold``).
    ymax : float or None
        Top grade as given (``None``: from the data).
    d, alpha : float
        Neutral vote and half-life of ERU / NERU.
    """

    threshold: float
    ymax: Any
    d: float
    alpha: float


@dataclass(frozen=True)
class Family:
    """One family of list metrics.

    Attributes
    ----------
    name : str
        The family's name and the stem of its metric names (lower case letters).
    cutoff : {"optional", "required", "none"}
        Whether its names take ``@K``.
    kernel : numba function
        The batch kernel (module docstring).
    constants : callable
        ``constants(batch, options) -> tuple``: what the kernel takes after ``n_blocks`` (tables, weights,
        a threshold); called once per evaluation, before the lists are ranked, so that it may check
        ``options`` against the data (ERR's ``ymax``). ``batch`` has ``ratings`` and ``max_len``.
    needs_ideal : bool
        The kernel reads the ideal order.
    graded : bool
        Ratings must be integer grades ``0..ymax`` (checked while ranking).
    warm : callable, optional
        ``warm(ratings, scores)`` calls the family's single-list function once (the warm-up compiles it).
    summary : str
        One line for listings of the metrics.
    terms : callable, optional
        ``terms(yr, yi, k, options) -> (terms, parts)``: one list's value cut into one term per position, from its
        ratings in ranked (``yr``) and ideal (``yi``) order and the cutoff ``k`` (0: the whole list): the terms add
        up to the kernel's value (all NaN when the list is skipped), and ``parts`` names the quantities a formula
        of the value shows (a normaliser, a running precision, ...). :func:`cofiviz.metrics.position_terms` calls
        it; the metric playground draws the terms.
    """

    name: str
    cutoff: str
    kernel: Callable
    constants: Callable[[Any, Options], tuple]
    needs_ideal: bool = False
    graded: bool = False
    warm: Callable | None = None
    summary: str = ""
    terms: Callable | None = None

    def __post_init__(self):
        if not (self.name.isascii() and self.name.isalpha() and self.name.islower()):
            raise ValueError(f"a metric family's name is lower-case letters, got {self.name!r}")
        if self.cutoff not in CUTOFFS:
            raise ValueError(f"cutoff must be one of {CUTOFFS}, got {self.cutoff!r}")

    @property
    def forms(self) -> tuple[str, ...]:
        """The spellings of its names (``K`` a positive integer)."""
        return {"optional": (self.name, f"{self.name}@K"), "required": (f"{self.name}@K",),
                "none": (self.name,)}[self.cutoff]
