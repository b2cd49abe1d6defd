"""How far a recomputed cell is from the shipped one: per kind of value, in units in the last place.

A seeded cell computes the same operations in the same order on every machine, with two exceptions that
the code removes where it records a value: BLAS libraries (OpenBLAS picks its kernels by CPU, and an AVX-512
kernel sums a dot product in another order than an AVX2 one) and thread counts. What is left is stated per
kind of value in :data:`KINDS`, with the largest distance in ulp that :func:`compare` accepts for it:

- **metrics** (the results rows: test and validation values and their standard deviations), **per-user
  values** and **curves** (test and validation metrics per iteration) come from the metric kernels of
  :mod:`cofiviz.metrics`, which rank the scores and sum in a fixed order: they must agree to the last bit.
- **training losses** (the loss column of a trace) are sums of many terms in an order fixed by the kernel
  that records them. They are accepted within :data:`LOSS_ULP` ulp, so that a loss summed by a BLAS call
  in a model yet to be made fixed-order reports "agrees within N ulp" instead of failing.
- **counts and labels** (numbers of users, iterations, the best iteration, the stopping reason) are exact.

A distance in ulp counts the representable doubles between two values (0 for equal values, ``-0.0`` and
``0.0`` included; two NaNs agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["KINDS", "LOSS_ULP", "ulps", "Difference", "CellAgreement", "compare"]

#: the largest distance, in units in the last place, that a recomputed training loss may be from the shipped one
LOSS_ULP = 16
#: each kind of recorded value with the largest distance in ulp a recomputation may have from what ships
KINDS = {"metrics": 0, "per-user values": 0, "curves": 0, "training losses": LOSS_ULP, "counts and labels": 0}

#: per table: the columns that identify a row, and the compared columns with their kind
_RESULTS = (["part", "metric"], {"value": "metrics", "std": "metrics", "n_users": "counts and labels",
                                 "n_skipped": "counts and labels", "iterations": "counts and labels",
                                 "best_iteration": "counts and labels", "stopped_reason": "counts and labels"})
_PER_USER = (["user", "metric"], {"value": "per-user values"})
_TRACES = (["iteration", "part", "metric"], {"value": "curves"})


def ulps(a, b) -> np.ndarray:
    """The distance between float64 values in units in the last place, element by element (``uint64``).

    The bit patterns are mapped to a line on which consecutive doubles are consecutive integers (negative
    values mirrored, so ``-0.0`` and ``0.0`` are both 0); two NaNs are 0 apart, a NaN and a number the
    largest distance.
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    ia, ib = a.view(np.int64), b.view(np.int64)
    low = np.iinfo(np.int64).min
    ia = np.where(ia < 0, low - ia, ia)
    ib = np.where(ib < 0, low - ib, ib)
    ua, ub = ia.astype(np.uint64), ib.astype(np.uint64)      # two's complement: the difference wraps correctly
    with np.errstate(over="ignore"):
        d = np.where(ia >= ib, ua - ub, ub - ua)
    na, nb = np.isnan(a), np.isnan(b)
    d = np.where(na & nb, np.uint64(0), d)
    return np.where(na ^ nb, np.iinfo(np.uint64).max, d).astype(np.uint64)


@dataclass
class Difference:
    """The largest difference of one column: where it is, the two values and how far apart they are."""

    table: str
    column: str
    kind: str
    row: dict
    shipped: object
    recomputed: object
    ulp: int | None            # None for text and integer columns, which agree or not
    relative: float | None

    @property
    def where(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.row.items())

    def describe(self) -> str:
        far = f"{self.ulp} ulp, relative difference {self.relative:.1e}, " if self.ulp is not None else ""
        return (f"{self.kind} ({self.table}.{self.column}) at {self.where}: {far}"
                f"shipped {self.shipped!r}, recomputed {self.recomputed!r}")


@dataclass
class CellAgreement:
    """How one recomputed cell compares with what ships.

    ``status`` is ``"exact"`` (every value to the last bit), ``"within"`` (some value differs, each within
    the tolerance of its kind) or ``"differs"`` (a value beyond its kind's tolerance, or a different shape).
    ``largest`` is the difference farthest from agreeing (the one beyond tolerance if any).
    """

    key: str
    description: str
    status: str
    largest: Difference | None = None
    problem: str | None = None
    differences: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status != "differs"

    def line(self) -> str:
        """One line a person can read: the cell and how it agrees."""
        head = f"cell {self.key} ({self.description})"
        if self.status == "exact":
            return f"{head}: agrees to the last bit"
        if self.problem is not None:
            return f"{head}: DIFFERS: {self.problem}"
        d = self.largest
        if self.status == "within":
            return (f"{head}: agrees within {d.ulp} ulp (largest relative difference {d.relative:.1e}, in "
                    f"{d.table}.{d.column}, {d.kind}, at {d.where})")
        return f"{head}: DIFFERS in {d.describe()}"


def _py(value):
    """A NumPy scalar as the Python value it holds (so that it prints as ``3``, not ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _rows(frame: pd.DataFrame, ids: list[str]) -> pd.DataFrame:
    ids = [c for c in ids if c in frame.columns]
    return frame.sort_values(ids, kind="stable").reset_index(drop=True) if ids else frame.reset_index(drop=True)


def _kinds(table: str, kind: str, rows: pd.DataFrame) -> np.ndarray:
    """The kind of each row's value: a trace's rows of the training part hold training losses."""
    if table == "traces" and "part" in rows.columns:
        return np.where(rows["part"].to_numpy() == "train", "training losses", kind)
    return np.full(len(rows), kind)


def _table_differences(table: str, want: pd.DataFrame, got: pd.DataFrame, spec) -> tuple[list[Difference], str | None]:
    ids, columns = spec
    ids = [c for c in ids if c in want.columns]
    left, right = _rows(want, ids), _rows(got, ids)
    if left.shape[0] != right.shape[0]:
        return [], f"{table}: {left.shape[0]} rows shipped, {right.shape[0]} recomputed"
    if ids and not all([str(v) for v in left[c]] == [str(v) for v in right[c]] for c in ids):
        return [], f"{table}: the recomputed rows are not the shipped rows ({', '.join(ids)})"
    out = []
    for col, kind in columns.items():
        if col not in left.columns:
            continue
        if col not in right.columns:
            return out, f"{table}: column {col!r} is not recomputed"
        x, y = left[col].to_numpy(), right[col].to_numpy()
        numeric = x.dtype.kind in "fiub" and y.dtype.kind in "fiub"
        if numeric and (x.dtype.kind == "f" or y.dtype.kind == "f"):
            x, y = x.astype(np.float64), y.astype(np.float64)
            d = ulps(x, y)
            kinds = _kinds(table, kind, left)
            for k in dict.fromkeys(kinds.tolist()):
                mask = kinds == k
                if not d[mask].any():
                    continue
                i = int(np.flatnonzero(mask)[np.argmax(d[mask])])
                rel = abs(x[i] - y[i]) / max(abs(x[i]), abs(y[i])) if np.isfinite(x[i] - y[i]) else float("inf")
                out.append(Difference(table, col, k, {c: _py(left[c].iloc[i]) for c in ids}, float(x[i]), float(y[i]),
                                      int(d[i]), float(rel)))
        else:
            sx, sy = [str(v) for v in x], [str(v) for v in y]
            bad = [i for i in range(len(sx)) if sx[i] != sy[i]]
            if bad:
                i = bad[0]
                out.append(Difference(table, col, kind, {c: _py(left[c].iloc[i]) for c in ids}, _py(x[i]), _py(y[i]),
                                      None, None))
    return out, None


def compare(key: str, description: str, want, got) -> CellAgreement:
    """Compare a recomputed cell's :class:`~cofiviz.engine.results.Results` ``got`` with the shipped ``want``.

    Every table that ships for the cell is compared: its results rows, its per-user values and its curves.
    """
    differences: list[Difference] = []
    tables = [("results", want.results, got.results, _RESULTS)]
    if len(want.per_user):
        tables.append(("per_user", want.per_user, got.per_user, _PER_USER))
    if len(want.traces):
        tables.append(("traces", want.traces, got.traces, _TRACES))
    for name, w, g, spec in tables:
        found, problem = _table_differences(name, w, g, spec)
        differences += found
        if problem is not None:
            return CellAgreement(key, description, "differs", None, problem, differences)
    if not differences:
        return CellAgreement(key, description, "exact")
    beyond = [d for d in differences if d.ulp is None or d.ulp > KINDS[d.kind]]
    if beyond:
        unequal = [d for d in beyond if d.ulp is None]     # text and whole numbers: agree or not
        worst = unequal[0] if unequal else max(beyond, key=lambda d: d.ulp)
        return CellAgreement(key, description, "differs", worst, None, differences)
    return CellAgreement(key, description, "within", max(differences, key=lambda d: d.ulp), None, differences)
