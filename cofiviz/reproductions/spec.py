"""What a reproduction is: the paper's protocol, its methods (rows) with their grids, and its numbers.

A :class:`Reproduction` turns into experiments (one per method, :meth:`Reproduction.experiments`) that
the engine runs and stores; its :meth:`Reproduction.findings` words what the results say about the
paper's claims. The paper modules (:mod:`.cofirank`, :mod:`.lcr`, :mod:`.gapfm`) define and
:func:`register` them, each with the published numbers of its tables as :class:`PaperCell` rows.

A paper's table often has rows on data sets that cannot be downloaded (EachMovie, the Netflix Prize, Yelp):
those rows are an :class:`OtherData` of the reproduction (the data set's own N values, splits, protocol
parameters, methods and published numbers), run on the user's copy of the files with
:meth:`Reproduction.on` (``cofiviz reproduce NAME --data netflix-prize=FOLDER``). A reproduction whose every row
is on such a data set (GAPfm's Netflix tables) has ``dataset=None`` and runs only on the user's files.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from .. import datasets
from ..util.errors import DataError, ParameterError, named
from ..engine.experiment import Experiment, resolve_model
from ..engine.result_keys import shipped_forms
from ..engine.results import Results
from ..models import get_model_class

__all__ = ["Method", "Reproduction", "PaperCell", "OtherData", "REPRODUCTIONS", "register", "get", "is_available",
           "paper_preset", "paper_frame", "PAPER_COLUMNS", "DATA_LABELS", "data_spec", "data_option", "data_label"]


class PaperCell(NamedTuple):
    """One published number: ``value`` (± ``std`` when printed) of ``method`` in ``table``, on ``dataset``.

    ``protocol`` is the paper's protocol as the shared tables name it (``weak``, ``strong``, ``weak+valid10``,
    ``given-n-probe``), ``dataset`` the name cofiviz loads the data set by (:func:`cofiviz.datasets.load`).
    """

    paper: str
    table: str
    protocol: str
    method: str
    metric: str
    n_train: int
    value: float
    std: float | None = None
    dataset: str = "movielens-100k"


#: the columns of :func:`paper_frame` (those of the shared tables of published numbers)
PAPER_COLUMNS = ["paper", "table", "dataset", "protocol", "method", "metric", "n_train", "value", "std"]

#: how the pages and reports name the data sets of the papers
DATA_LABELS = {"movielens-100k": "MovieLens 100K", "movielens-1m": "MovieLens 1M", "netflix-prize": "the Netflix Prize",
               "eachmovie": "EachMovie", "yelp": "Yelp"}
#: what ``--data NAME=`` is followed by in the commands the messages print
_PLACEHOLDERS = {"netflix-prize": "FOLDER"}


def paper_preset(model: str, without: tuple = ()) -> dict:
    """The settings a model declares for its paper (``presets["paper"]`` of its class), without ``without``: what a
    reproduction's methods start from, read where the model keeps them."""
    return {k: v for k, v in get_model_class(model).presets["paper"].items() if k not in without}


def paper_frame(cells: list[PaperCell]) -> pd.DataFrame:
    """Published numbers as a table: paper, table, dataset, protocol, method, metric, n_train, value, std."""
    frame = pd.DataFrame([c._asdict() for c in cells], columns=list(PaperCell._fields))[PAPER_COLUMNS]
    frame["std"] = frame["std"].astype(float)
    return frame


def data_label(name: str) -> str:
    """A data set's name as prose writes it (``"the Netflix Prize"``, ``"EachMovie"``)."""
    return DATA_LABELS.get(name, name)


def data_option(name: str) -> str:
    """The command-line option that reads a data set from the user's files: ``--data netflix-prize=FOLDER``."""
    return f"--data {name}={_PLACEHOLDERS.get(name, 'PATH')}"


def data_spec(data: Any) -> dict | None:
    """A data spec as the reproductions key it: ``None`` stays ``None``, a name becomes ``{"name": NAME}``, and a
    data set read from the user's files (:func:`cofiviz.datasets.user_files`) gets its registered name and the
    absolute path of its files, so that ``~/netflix``, ``./netflix`` and ``/home/me/netflix`` give one store key
    and Dask workers started elsewhere find the files. Other specs (a synthetic set, a ratings file) are kept as
    they are."""
    if data is None:
        return None
    spec = {"name": data} if isinstance(data, str) else dict(data)
    try:
        name = datasets.canonical(spec["name"]) if "name" in spec else None
    except ParameterError:
        return spec
    if name in datasets.user_files():
        spec["name"] = name
        if spec.get("path") is not None:
            spec["path"] = str(Path(os.fspath(spec["path"])).expanduser().resolve())
    return spec


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

    Where a model's default has become a faster or guarded form of the same model since its results shipped, every
    grid sets the form they were computed with (:func:`~cofiviz.engine.result_keys.shipped_forms`) unless ``fixed`` or
    ``grid`` sets it, so that the shipped cells keep their keys and bits.
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
class OtherData:
    """The rows of a paper's table on a data set read from the user's own files (EachMovie, Netflix, Yelp).

    What is not given is the reproduction's own: ``ns=None`` runs its N values, ``methods=None`` its methods
    (without their ``original`` numbers, which are the authors' code on MovieLens). ``protocol_params`` are
    merged over the reproduction's; ``threshold=None`` keeps its relevance threshold.

    Attributes
    ----------
    dataset : str
        The data set's registered name (``netflix-prize``, ``eachmovie``, ``yelp``).
    title : str
        The title of the table on this data set.
    paper_numbers : list of PaperCell
        The published numbers of these rows (``PaperCell.dataset`` is ``dataset``).
    ns, seeds, methods, protocol_params, threshold
        The data set's own N values, splits, rows, protocol parameters and relevance threshold.
    notes : list of str
        What the report says about these rows: the paper's settings, and where a choice begins.
    """

    dataset: str
    title: str
    paper_numbers: list
    ns: list | None = None
    seeds: list | None = None
    methods: list | None = None
    protocol_params: dict = field(default_factory=dict)
    threshold: float | None = None
    notes: list = field(default_factory=list)

    @property
    def files(self) -> str:
        """What ``--data NAME=PATH`` must name (:func:`cofiviz.datasets.user_files`)."""
        return datasets.user_files()[self.dataset]

    @property
    def label(self) -> str:
        return data_label(self.dataset)


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
        How a method's setting is chosen on validation (see :func:`cofiviz.search.selection.choose_setting`).
    threshold : float, optional
        Relevance threshold of the binary metrics.
    protocol_params, trace : dict
        Fixed protocol parameters; what the cells trace per iteration.
    dataset : str, dict or None
        The data set the reproduction runs on (a name of :func:`cofiviz.datasets.load`, or the data spec
        :meth:`on` bound it to); tests replace it. ``None``: every row is on the user's files (``other_data``).
    other_data : list of OtherData
        The table's rows on data sets read from the user's files, run with :meth:`on`.
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
    dataset: Any = "movielens-100k"
    ship_per_user: bool = True
    other_data: list = field(default_factory=list)

    #: True for reproductions of a paper's figures (curves, no table of numbers)
    is_figures = False

    # -------------------------------------------------------------- the data it runs on
    @property
    def data_name(self) -> str | None:
        """The registered name of the data set it runs on (``None``: only on the user's files, not yet given)."""
        d = self.dataset
        if d is None:
            return None
        name = d if isinstance(d, str) else d.get("name")
        try:
            return datasets.canonical(name) if name is not None else None
        except ParameterError:
            return name

    @property
    def needs_files(self) -> bool:
        """Whether every row needs the user's files (it has no data set of its own)."""
        return self.dataset is None

    def other(self, name: str) -> OtherData | None:
        """The rows on data set ``name`` (any spelling :func:`cofiviz.datasets.canonical` reads), or ``None``."""
        try:
            name = datasets.canonical(name)
        except ParameterError:
            return None
        return next((o for o in self.other_data if o.dataset == name), None)

    def files_message(self) -> str:
        """What to give to run the rows on the user's files: ``--data netflix-prize=FOLDER, FOLDER being a folder
        with training_set/ … and probe.txt``, one clause per data set (each named when there are several)."""
        clauses = [f"{data_option(o.dataset)}, {_PLACEHOLDERS.get(o.dataset, 'PATH')} being {o.files}"
                   for o in self.other_data]
        if len(clauses) == 1:
            return clauses[0]
        return "; ".join(f"for {o.label}, {c}" for o, c in zip(self.other_data, clauses))

    def on(self, data: Any = None) -> "Reproduction":
        """This reproduction bound to ``data``: its own data set (``data=None``), one of its :attr:`other_data`
        (``{"name": "netflix-prize", "path": FOLDER}``, ``{"name": "eachmovie", "path": ...}``), whose N values,
        splits, rows, protocol parameters and published numbers it takes, or any other data spec (a smoke test on
        synthetic data: the rows and numbers stay the reproduction's own). The path of the user's files is made
        absolute (:func:`data_spec`).

        Raises
        ------
        DataError
            No data for a reproduction that has none of its own, data it has no rows on, or a data set read from
            the user's files without its ``path``: the message names the files needed and the option to give.
        """
        spec = data_spec(data)
        if spec is None:
            if self.dataset is None:
                raise DataError(f"{self.name} runs on your own copy of {self._on_whom()} (it cannot be downloaded): "
                                f"give {self.files_message()}; e.g. `cofiviz reproduce {self.name} "
                                f"{data_option(self.other_data[0].dataset)}`")
            return self
        name = spec.get("name")
        other = self.other(name) if name is not None else None
        if other is None:
            if self.dataset is None:
                raise DataError(f"{self.name} has rows on {self._on_whom()} only, not on {name or spec}: give "
                                f"{self.files_message()}")
            out = copy.copy(self)
            out.dataset = spec
            if name in datasets.user_files():
                # a data set of the papers that this table has no rows on: its numbers are not the published ones
                out.title = f"{self.title} — run on {data_label(name)}, where the paper printed no numbers"
                out.paper_numbers, out.other_data = [], []
                out.methods = [dataclasses.replace(m, original={}) for m in self.methods]
                out.notes = [*self.notes, f"The paper printed no numbers of this table on {data_label(name)}: the "
                                          "paper column is empty."]
            return out
        if not spec.get("path"):
            raise DataError(f"{self.name} on {other.label} reads your own copy of its files: give "
                            f"{data_option(other.dataset)}, {_PLACEHOLDERS.get(other.dataset, 'PATH')} being "
                            f"{other.files}")
        return self._bound(other, spec)

    def on_dataset(self, name: str) -> "Reproduction":
        """Its rows on the data set ``name`` before the user's files are given: the published numbers, rows, N values
        and splits, bound to ``{"name": NAME}`` (what a page lists before they run; its experiments cannot run).

        Raises
        ------
        DataError
            It has no rows on ``name``.
        """
        other = self.other(name)
        if other is None:
            raise DataError(f"{self.name} has no rows on {name}")
        return self._bound(other, {"name": other.dataset})

    def _bound(self, other: OtherData, spec: dict) -> "Reproduction":
        out = copy.copy(self)
        out.dataset = spec
        out.title, out.paper_numbers = other.title, list(other.paper_numbers)
        out.ns = list(other.ns) if other.ns is not None else list(self.ns)
        out.seeds = list(other.seeds) if other.seeds is not None else list(self.seeds)
        # the ``original`` numbers are the authors' code on MovieLens splits: not these rows'
        out.methods = [dataclasses.replace(m, original={}) for m in
                       (other.methods if other.methods is not None else self.methods)]
        out.protocol_params = {**self.protocol_params, **other.protocol_params}
        out.threshold = other.threshold if other.threshold is not None else self.threshold
        out.notes = list(other.notes)
        out.other_data = []
        return out

    def command(self, quick: bool = False) -> str:
        """The command line that runs it as bound: ``cofiviz reproduce NAME [--data NAME=PATH] [--quick]``."""
        spec = self.dataset if isinstance(self.dataset, dict) else {}
        data = ""
        if self.data_name in datasets.user_files():
            data = f" --data {self.data_name}={shlex.quote(spec['path'])}" if spec.get("path") else \
                f" {data_option(self.data_name)}"
        return f"cofiviz reproduce {self.name}{data}{' --quick' if quick else ''}"

    def _on_whom(self) -> str:
        return " or ".join(o.label for o in self.other_data) or "other data"

    def experiments(self, quick: bool = False, data: Any = None) -> tuple[list, list]:
        """``([(method, Experiment), ...], [missing Method, ...])`` on ``data`` (default: :attr:`dataset`)."""
        data = self.dataset if data is None else data
        if data is None:
            raise DataError(f"{self.name} runs on your own copy of {self._on_whom()}: {self.files_message()}")
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
                                       name=self.experiment_name(quick))))
        return exps, missing

    def experiment_name(self, quick: bool) -> str:
        """The name of its experiments (not part of any key): ``NAME[-DATASET][-quick]``."""
        other = f"-{self.data_name}" if self.data_name in datasets.user_files() else ""
        return f"{self.name}{other}{'-quick' if quick else ''}"

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
