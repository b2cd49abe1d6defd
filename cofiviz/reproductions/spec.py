"""What a reproduction is: the paper's protocol, its methods (rows) with their grids, and its numbers.

A :class:`Reproduction` turns into experiments (one per method, :meth:`Reproduction.experiments`) that
the engine runs and stores; its :meth:`Reproduction.findings` words what the results say about the
paper's claims. The paper modules (:mod:`.cofirank`, :mod:`.lcr`, :mod:`.gapfm`) define and
:func:`register` them, each with the published numbers of its tables as :class:`PaperCell` rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pandas as pd

from ..errors import ParameterError, named
from ..experiment import Experiment, resolve_model
from ..result_keys import shipped_forms
from ..results import Results

__all__ = ["Method", "Reproduction", "PaperCell", "REPRODUCTIONS", "register", "get", "is_available",
           "paper_frame"]


class PaperCell(NamedTuple):
    """One published number: ``value`` (± ``std`` when printed) of ``method`` in ``table``."""

    paper: str
    table: str
    protocol: str
    method: str
    metric: str
    n_train: int
    value: float
    std: float | None = None


def paper_frame(cells: list[PaperCell]) -> pd.DataFrame:
    """Published numbers as a table: paper, table, dataset, protocol, method, metric, n_train, value, std."""
    frame = pd.DataFrame([c._asdict() for c in cells], columns=list(PaperCell._fields))
    frame.insert(2, "dataset", "movielens-100k")
    frame["std"] = frame["std"].astype(float)
    return frame


@dataclass
class Method:
    """One row of a paper's table.

    ``model=None`` marks a method of the paper that cofiviz does not implement (reported missing).
    ``grid`` values are lists searched on validation; a list of such dicts is the union of their
    grids (each combined with ``fixed``). ``quick`` replaces ``fixed`` and ``grid`` entries for the
    quick version (a list there is still a grid axis). ``stop_per_metric`` fits each setting once per
    table metric with early stopping watching that metric (``valid_metric``), and each metric's
    column is chosen among the fits that watched it. ``original`` holds reference values ``{N: value}``
    measured by running the authors' own code on the same protocol (shown beside the paper's).

    Where a model's default has become a faster form of the same model since its results shipped, every grid sets
    the form they were computed with (:func:`~cofiviz.result_keys.shipped_forms`) unless ``fixed`` or ``grid`` sets
    it, so that the shipped cells keep their keys and bits.
    """

    label: str
    model: str | None
    paper: str | None = None
    fixed: dict = field(default_factory=dict)
    grid: dict | list = field(default_factory=dict)
    quick: dict = field(default_factory=dict)
    note: str = ""
    stop_per_metric: bool = False
    original: dict = field(default_factory=dict)

    def grids(self, quick: bool, metrics: list | None = None) -> list[dict]:
        """The parameter grids (one dict per part of the union), ready for :class:`Experiment`."""
        parts = self.grid if isinstance(self.grid, list) else [self.grid]
        out = []
        forms = shipped_forms(self.model) if self.model is not None else {}
        for g in (parts[:1] if quick else parts):
            p = {**forms, **self.fixed, **g}
            if quick:
                p = {k: (v[:1] if isinstance(v, list) else v) for k, v in p.items()}
                p.update(self.quick)
            if self.stop_per_metric and metrics:
                p["valid_metric"] = list(metrics)
            out.append(p)
        return out

    def params(self, quick: bool) -> dict:
        """The first grid (the whole grid when it is not a union)."""
        return self.grids(quick)[0]


@dataclass
class Reproduction:
    """A paper's table as experiments plus a comparison with the published numbers.

    Attributes
    ----------
    name, title : str
        The registry name (``cofiviz reproduce NAME``) and a one-line title.
    paper, table : str
        Which published numbers the table is held against (``table=None``: none on this data).
    protocol, n_param, ns, seeds, metrics
        The protocol, its parameter that the table varies (``n_train``...), its values, the split seeds,
        the table's metrics.
    methods : list of Method
    selection : {"per_metric", "mean", "none"}
        How a method's setting is chosen on validation (see :func:`cofiviz.selection.choose_setting`).
    threshold : float, optional
        Relevance threshold of the binary metrics.
    protocol_params, trace : dict
        Fixed protocol parameters; what the cells trace per iteration.
    dataset : str
        The data set the reproduction runs on (a name of :func:`cofiviz.datasets.load`); tests replace it.
    ship_per_user : bool
        Whether its shipped results hold the per-user test values of the table's cells (from which the paired
        tests are computed). ``False`` where they are too many to ship (tens of megabytes on MovieLens 1M): the
        table's paired tests ship instead.
    notes : list of str
        What the report says about the protocol and the rows.
    paper_numbers : list of PaperCell
        The published numbers of the table.
    """

    name: str
    title: str
    paper: str
    table: str | None
    protocol: str
    n_param: str
    ns: list
    seeds: list
    metrics: list
    methods: list
    selection: str = "per_metric"
    threshold: float | None = None
    protocol_params: dict = field(default_factory=dict)
    trace: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    paper_numbers: list = field(default_factory=list)
    dataset: str = "movielens-100k"
    ship_per_user: bool = True

    #: True for reproductions of a paper's figures (curves, no table of numbers)
    is_figures = False

    def experiments(self, quick: bool = False, data: Any = None) -> tuple[list, list]:
        """``([(method, Experiment), ...], [missing Method, ...])`` on ``data`` (default: :attr:`dataset`)."""
        data = self.dataset if data is None else data
        ns = self.ns[:1] if quick else list(self.ns)
        seeds = self.seeds[:1] if quick else list(self.seeds)
        exps, missing = [], []
        for m in self.methods:
            if m.model is None or not is_available(m.model):
                missing.append(m)
                continue
            protocol = {"name": self.protocol, **self.protocol_params}
            if self.n_param:
                protocol[self.n_param] = ns
            models = [{"model": m.model, "label": m.label, "params": g} for g in m.grids(quick, self.metrics)]
            exps.append((m, Experiment(models=models,
                                       data=data, protocol=protocol, seeds=seeds, metrics=self.metrics,
                                       trace=self.trace or None, threshold=self.threshold, per_user=True,
                                       name=f"{self.name}{'-quick' if quick else ''}")))
        return exps, missing

    def findings(self, table: pd.DataFrame, results: Results) -> list[str]:
        """Sentences on what the results say about the paper's claims (none by default)."""
        return []


REPRODUCTIONS: dict[str, Reproduction] = {}


def register(rep: Reproduction) -> Reproduction:
    """Add ``rep`` to :data:`REPRODUCTIONS` under its name."""
    REPRODUCTIONS[rep.name] = rep
    return rep


def get(name: str) -> Reproduction:
    """The reproduction registered as ``name``.

    Raises
    ------
    ParameterError
        An unknown name; the message lists the valid ones.
    """
    return REPRODUCTIONS[named(name, REPRODUCTIONS, "reproduction")]


def is_available(model: str) -> bool:
    """Whether a model of that name is registered."""
    try:
        resolve_model(model)
        return True
    except ParameterError:
        return False
