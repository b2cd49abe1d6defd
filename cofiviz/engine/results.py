"""The tidy outcome of experiment cells: three pandas tables that concatenate and summarise.

``results``
    One row per (cell, part, metric): the final metric on the test part (and on the validation part
    when the protocol has one, which is what choosing a setting uses).
``traces``
    One row per (cell, iteration, part, metric): ``iteration``, ``seconds``, ``elapsed``, ``loss``,
    ``part`` and ``value`` (:class:`cofiviz.engine.trace.Trace`).
``per_user``
    One row per (cell, user, metric) of the test part, when the cell kept them.

Every row carries the cell's key (``cell``), its label, model name, protocol, seed and one column per
model parameter (``model.<name>``) and protocol parameter (``protocol.<name>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd

from ..metrics.names import lower_is_better
from ..evaluation.significance import PAIRED_FIELDS, best_against_others, holm

__all__ = ["Results"]


@dataclass
class Results:
    """Tidy outcome of one or many cells: ``results``, ``traces`` and ``per_user`` DataFrames."""

    results: pd.DataFrame = field(default_factory=pd.DataFrame)
    traces: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_user: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: ``(key, description, error)`` of cells that failed (filled by :func:`cofiviz.engine.sweep.sweep`)
    failed: list = field(default_factory=list)

    @classmethod
    def concat(cls, parts: Iterable["Results"]) -> "Results":
        parts = list(parts)

        def cat(attr):
            frames = [getattr(p, attr) for p in parts if len(getattr(p, attr))]
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        return cls(cat("results"), cat("traces"), cat("per_user"))

    @classmethod
    def diverged(cls, ident: dict, parts: list[str], metrics: list[str], traces: pd.DataFrame, **final) -> "Results":
        """One cell whose fit diverged: a row per (part, metric) with NaN values and no user scored, ``ident``'s
        columns, ``final``'s columns (``threshold``, ``fit_seconds``, ``iterations``, ``best_iteration``,
        ``stopped_reason``), and the curves traced until the divergence."""
        n = len(parts) * len(metrics)
        res = pd.DataFrame({**{k: [v] * n for k, v in ident.items()},
                            "part": [p for p in parts for _ in metrics], "metric": list(metrics) * len(parts),
                            "value": np.full(n, np.nan), "std": np.full(n, np.nan),
                            "n_users": np.zeros(n, dtype=np.int64), "n_skipped": np.zeros(n, dtype=np.int64),
                            **{k: [v] * n for k, v in final.items()}})
        traces = traces.copy()
        for k, v in reversed(list(ident.items())):
            traces.insert(0, k, [v] * len(traces))
        return cls(res, traces, pd.DataFrame())

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

    def paired_tests(self, metric: str) -> pd.DataFrame:
        """The paired tests of the best method against each other one, per protocol setting, on the test part.

        A method is a (label, model setting) over its seeds; its per-user test values (cells run with
        ``per_user=True``) are paired with the best method's by (seed, user), since a seed fixes the split. The
        best has the highest mean over seeds of ``metric`` (lowest for an error rate), as :meth:`summary` ranks. Columns: the protocol's columns,
        ``label``, ``setting``, ``best`` and ``best_setting`` (the best method's), ``is_best``, the fields of
        :func:`cofiviz.evaluation.significance.paired_test` (``a`` this method, ``b`` the best) and ``p_holm``, the
        Wilcoxon p-value after Holm's correction across every test of the table. Empty without per-user values.
        """
        columns = ["label", "setting", "best", "best_setting", "is_best", *PAIRED_FIELDS, "p_holm"]
        r, pu = self.results, self.per_user
        if r.empty or pu is None or pu.empty:
            return pd.DataFrame(columns=columns)
        r = r[(r["part"] == "test") & (r["metric"] == metric)]
        pu = pu[pu["metric"] == metric]
        groups = [c for c in ("protocol", "protocol_params") if c in r.columns]
        methods = [c for c in ("label", "setting") if c in r.columns]
        frames = []
        for gkey, g in (r.groupby(groups, sort=False, dropna=False) if groups else [((), r)]):
            names, values, means = [], {}, {}
            for mkey, mg in g.groupby(methods, sort=False, dropna=False):
                sub = pu[pu["cell"].isin(set(mg["cell"]))]
                if len(sub):
                    i = len(names)
                    names.append(mkey if isinstance(mkey, tuple) else (mkey,))
                    means[i] = float(mg["value"].mean())
                    values[i] = pd.Series(sub["value"].to_numpy(dtype=float),
                                          index=(sub["seed"].astype(str) + ":" + sub["user"].astype(str)).to_numpy())
            if not values:
                continue
            low = lower_is_better(metric)
            ranked = pd.Series(means).dropna()
            best = None if ranked.empty else int(ranked.idxmin() if low else ranked.idxmax())
            t = best_against_others(values, metric, lower_is_better=low, best=best)
            for j, col in enumerate(methods):
                t[col] = [names[i][j] for i in t["method"]]
            best = names[int(t["best"].iloc[0])]
            t["best"] = best[0]
            t["best_setting"] = best[1] if len(best) > 1 else ""
            for j, col in enumerate(groups):
                t[col] = gkey[j] if isinstance(gkey, tuple) else gkey
            frames.append(t.drop(columns="method"))
        if not frames:
            return pd.DataFrame(columns=columns)
        out = pd.concat(frames, ignore_index=True)
        out["p_holm"] = holm(out["wilcoxon_p"].to_numpy(dtype=np.float64))
        return out[groups + columns]
