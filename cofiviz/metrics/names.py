"""Metric names: their spelling, parsing, the zero-one error's aliases and which metrics are lower-is-better.

Every metric name cofiviz accepts (command line, experiments, early stopping, dashboards) is checked
here: the list metrics of :func:`cofiviz.metrics.score_lists`, whose families and their cutoff rules come from
the table of :mod:`cofiviz.metrics.table` (:func:`metric_forms`, parsed by :func:`parse_metric`), and
:data:`ZERO_ONE`, LCR's pairwise error, which needs the users' training ratings as well as their candidate lists
(:func:`cofiviz.metrics.zero_one_lists`).
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

from ..util.errors import ParameterError
from .table import BUILT_IN, ZERO_ONE, ZERO_ONE_ALIASES, families

__all__ = ["METRIC_FORMS", "FAMILIES", "ZERO_ONE", "ZERO_ONE_ALIASES", "MetricSpec", "parse_metric", "parse_metrics",
           "is_zero_one", "lower_is_better", "check_metrics", "metric_forms"]

#: The names of cofiviz's own list metrics (``K`` is a positive integer; case-insensitive); with the families
#: registered since: :func:`metric_forms`.
METRIC_FORMS = tuple(form for f in BUILT_IN for form in f.forms)
#: cofiviz's own list-metric families, in the table's order.
FAMILIES = tuple(f.name for f in BUILT_IN)

_PATTERN = re.compile(r"^\s*([a-z]+)\s*(?:@\s*(\S+))?\s*$")


class MetricSpec(NamedTuple):
    """A parsed metric name: canonical ``name`` (lower case, e.g. ``"ndcg@10"``), ``family``
    (``"ndcg"``) and cutoff ``k`` (``None`` = whole list)."""

    name: str
    family: str
    k: int | None


def metric_forms() -> tuple[str, ...]:
    """Every list metric name :func:`score_lists` understands now, registered families included."""
    return tuple(form for f in families() for form in f.forms)


def _forms() -> str:
    return ", ".join(metric_forms())


def is_zero_one(name) -> bool:
    """Whether ``name`` is one of the zero-one error's names (:data:`ZERO_ONE_ALIASES`)."""
    return isinstance(name, str) and name.strip().lower().replace("-", "_") in ZERO_ONE_ALIASES


def lower_is_better(metric: str) -> bool:
    """Whether smaller values of ``metric`` are better: the zero-one error; every other metric is higher-is-better."""
    return is_zero_one(metric)


def parse_metric(name) -> MetricSpec:
    """Parse a list metric's name such as ``"NDCG@10"``, ``"ap"`` or ``"p@5"``.

    Raises
    ------
    ParameterError
        Unknown name or bad cutoff; the message lists the valid forms (:data:`METRIC_FORMS`). The
        zero-one error is refused with a pointer to :func:`cofiviz.metrics.zero_one_lists`.

    Examples
    --------
    >>> parse_metric("NDCG@10")
    MetricSpec(name='ndcg@10', family='ndcg', k=10)
    """
    if not isinstance(name, str):
        raise ParameterError(f"metric names must be strings, got {name!r}; valid forms: {_forms()}")
    if is_zero_one(name):
        raise ParameterError("zero_one needs the training ratings as well as the candidate lists: use "
                             "cofiviz.metrics.zero_one_lists (or zero_one for one user)")
    m = _PATTERN.match(name.lower())
    cutoffs = {f.name: f.cutoff for f in families()}
    if m is None or m.group(1) not in cutoffs:
        raise ParameterError(f"unknown metric {name!r}; valid forms: {_forms()} (K a positive integer)")
    family, ktxt = m.group(1), m.group(2)
    if ktxt is None:
        if cutoffs[family] == "required":
            raise ParameterError(f"metric {name!r} needs a cutoff, e.g. {family}@5; valid forms: {_forms()}")
        return MetricSpec(family, family, None)
    if cutoffs[family] == "none":
        raise ParameterError(f"metric {name!r} takes no cutoff (use {family!r}); valid forms: {_forms()}")
    if not ktxt.isdigit() or int(ktxt) < 1:
        raise ParameterError(f"the cutoff of metric {name!r} must be a positive integer, got {ktxt!r}; "
                             f"valid forms: {_forms()}")
    k = int(ktxt)
    return MetricSpec(f"{family}@{k}", family, min(k, 2 ** 62))  # beyond any list length: whole list


def parse_metrics(metrics) -> list[MetricSpec]:
    """Parse list metrics given as a sequence or a comma-separated string; duplicates removed, order kept."""
    if isinstance(metrics, str):
        metrics = [t for t in metrics.split(",") if t.strip()]
    try:
        items = list(metrics)
    except TypeError:
        raise ParameterError(f"metrics must be a list of metric names, got {metrics!r}; "
                             f"valid forms: {_forms()}") from None
    if not items:
        raise ParameterError(f"metrics must name at least one metric; valid forms: {_forms()}")
    specs: dict[str, MetricSpec] = {}
    for item in items:
        spec = parse_metric(item)
        specs.setdefault(spec.name, spec)
    return list(specs.values())


def check_metrics(metrics: str | Iterable[str]) -> list[str]:
    """Validate metric names and return them in canonical spelling, duplicates removed.

    Accepts a list or a comma-separated string: every list metric :func:`parse_metric` knows and the
    zero-one error under any of its names (:data:`ZERO_ONE_ALIASES`, canonical ``zero_one``).

    Raises
    ------
    ParameterError
        An unknown or malformed metric name; the message lists the valid forms.
    """
    valid = ", ".join((*metric_forms(), ZERO_ONE))
    if isinstance(metrics, str):
        metrics = metrics.split(",")
    try:
        metrics = list(metrics)
    except TypeError:
        raise ParameterError(f"metrics must be a list of names, got {type(metrics).__name__}") from None
    if not metrics:
        raise ParameterError(f"no metric given; valid metrics: {valid}")
    out: list[str] = []
    for m in metrics:
        if not isinstance(m, str) or not m.strip():
            raise ParameterError(f"metric names must be non-empty strings, got {m!r}; valid metrics: {valid}")
        if is_zero_one(m):
            canon = ZERO_ONE
        else:
            try:
                canon = parse_metric(m.strip()).name
            except ParameterError as exc:
                msg = str(exc)
                raise ParameterError(msg if ZERO_ONE in msg else f"{msg}; also {ZERO_ONE}") from None
        if canon not in out:
            out.append(canon)
    return out
