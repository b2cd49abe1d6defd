"""The tidy outcome of experiment cells: three pandas tables that concatenate and summarise.

``results``
    One row per (cell, part, metric): the final metric on the test part (and on the validation part
    when the protocol has one, which is what choosing a setting uses).
``traces``
    One row per (cell, iteration, part, metric): ``iteration``, ``seconds``, ``elapsed``, ``loss``,
    ``part`` and ``value`` (:class:`cofiviz.trace.Trace`).
``per_user``
    One row per (cell, user, metric) of the test part, when the cell kept them.

Every row carries the cell's key (``cell``), its label, model name, protocol, seed and one column per
model parameter (``model.<name>``) and protocol parameter (``protocol.<name>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import pandas as pd

__all__ = ["Results"]


@dataclass
class Results:
    """Tidy outcome of one or many cells: ``results``, ``traces`` and ``per_user`` DataFrames."""

    results: pd.DataFrame = field(default_factory=pd.DataFrame)
    traces: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_user: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: ``(key, description, error)`` of cells that failed (filled by :func:`cofiviz.sweep.sweep`)
    failed: list = field(default_factory=list)

    @classmethod
    def concat(cls, parts: Iterable["Results"]) -> "Results":
        parts = list(parts)

        def cat(attr):
            frames = [getattr(p, attr) for p in parts if len(getattr(p, attr))]
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        return cls(cat("results"), cat("traces"), cat("per_user"))

    @property
    def cells(self) -> list[str]:
        return [] if self.results.empty else list(dict.fromkeys(self.results["cell"]))

    def summary(self, metric: str | None = None, part: str = "test") -> pd.DataFrame:
        """Mean, std and count over seeds of each metric, per label, model setting and protocol setting."""
        r = self.results
        if r.empty:
            return pd.DataFrame()
        r = r[r["part"] == part]
        if metric is not None:
            r = r[r["metric"] == metric]
        keys = [c for c in ("label", "model", "setting", "protocol", "protocol_params") if c in r.columns]
        out = r.groupby(keys + ["metric"], sort=False, dropna=False)["value"].agg(["mean", "std", "count"])
        return out.reset_index()
