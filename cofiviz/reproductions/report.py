"""A reproduction's outcome: the paper-vs-cofiviz table, its text form, and the self-contained HTML report."""

from __future__ import annotations

import html
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..metrics.names import lower_is_better
from ..engine.results import Results
from ..search.selection import choose_setting
from ..evaluation.significance import best_against_others, holm
from .lcr import figure_summary, short_labels
from .spec import REPRODUCTIONS, Reproduction, paper_frame

__all__ = ["ReproductionReport", "compare", "format_table", "write_html", "paper_table", "add_paired_tests",
           "PAIRED_COLUMNS", "p_text"]

#: the significance columns of a comparison table (:func:`add_paired_tests`)
PAIRED_COLUMNS = ["vs_best", "t_test_p", "wilcoxon_p", "p_holm"]


def paper_table() -> pd.DataFrame:
    """Every published number the reproductions hold: paper, table, dataset, protocol, method, metric,
    n_train, value, std (one row per cell), on MovieLens and on the data sets read from the user's files
    (:attr:`Reproduction.other_data`)."""
    cells = list(dict.fromkeys(c for rep in REPRODUCTIONS.values()
                               for c in [*rep.paper_numbers, *(c for o in rep.other_data for c in o.paper_numbers)]))
    return paper_frame(cells)


@dataclass
class ReproductionReport:
    """What :func:`cofiviz.reproductions.reproduce` returns: the comparison table, every result, notes,
    the HTML path, the table's title and the command that ran it (``--data`` included)."""

    name: str
    table: pd.DataFrame
    results: Results
    notes: list
    html: Path | None = None
    seconds: float = 0.0
    title: str = ""
    command: str = ""

    def text(self) -> str:
        return format_table(self.table)


def compare(rep: Reproduction, results: Results, missing: list, quick: bool) -> pd.DataFrame:
    """Paper vs cofiviz, one row per (metric, N, method), with the difference.

    ``cells`` holds the store keys of the chosen setting's cells (comma-separated), whose per-user values ship.
    """
    ref = paper_frame(rep.paper_numbers)
    r = results.results
    ns = rep.ns[:1] if quick else rep.ns
    rows = []
    n_col = f"protocol.{rep.n_param}"
    for metric in rep.metrics:
        criterion = rep.metrics if rep.selection == "mean" else [metric]
        for n in ns:
            for m in rep.methods:
                p = ref[(ref["method"] == m.paper) & (ref["metric"] == metric) & (ref["n_train"] == n)] \
                    if (m.paper and len(ref)) else ref.iloc[0:0]
                pv = float(p["value"].iloc[0]) if len(p) else math.nan
                ps = float(p["std"].iloc[0]) if len(p) and pd.notna(p["std"].iloc[0]) else math.nan
                row = {"metric": metric, "N": n, "method": m.label, "paper": pv, "paper_std": ps,
                       "original": float(m.original.get(n, math.nan)) if metric == rep.metrics[0] else math.nan,
                       "cofiviz": math.nan, "cofiviz_std": math.nan, "diff": math.nan, "seeds": 0,
                       "setting": "", "status": "", "cells": ""}
                if m in missing:
                    row["status"] = ("missing: " + (m.note or "not in cofiviz")) if m.model is None else \
                        f"missing: model {m.model!r} is not registered"
                    rows.append(row)
                    continue
                sub = r[(r["label"] == m.label)] if len(r) else r
                if len(sub) and n_col in sub.columns:
                    sub = sub[sub[n_col] == n]
                if m.stop_per_metric and len(sub):
                    watched = sub["setting"].map(lambda text: json.loads(text).get("valid_metric"))
                    sub = sub[watched == metric]
                if not len(sub):
                    fails = [e for _, what, e in results.failed if what.startswith(f"{m.label}(")
                             and f"{rep.n_param}={n}" in what]
                    row["status"] = f"failed: {fails[0]}" if fails else "not run"
                    rows.append(row)
                    continue
                chosen, setting = choose_setting(sub, metric, criterion, rep.selection)
                vals = chosen["value"].astype(float)
                diverged = bool(len(vals)) and bool(vals.isna().any())
                row.update(cofiviz=float(vals.mean()), cofiviz_std=float(vals.std(ddof=1)) if len(vals) > 1 else math.nan,
                           seeds=int(len(vals)), setting=setting,
                           status="diverged at every setting" if diverged else "ok",
                           cells=",".join(dict.fromkeys(chosen["cell"])) if "cell" in chosen.columns else "")
                if diverged:
                    row.update(cofiviz=math.nan, cofiviz_std=math.nan, cells="")
                row["diff"] = row["cofiviz"] - pv
                rows.append(row)
    return add_paired_tests(pd.DataFrame(rows), results)


def p_text(p: float) -> str:
    """A p-value as text: two significant digits, and ``<1e-300`` where it underflows to 0 (thousands of paired
    users and a clear difference)."""
    return "<1e-300" if p < 1e-300 else f"{p:.1e}"


def _user_values(groups: dict, cells: str, metric: str) -> pd.Series:
    """One method's per-user test values over its chosen cells, keyed ``"seed:user"`` (a seed is a split), in
    the order of the per-user table; ``groups`` is that table grouped by (cell, metric)."""
    parts = [groups[(c, metric)] for c in dict.fromkeys(c for c in str(cells).split(",") if c)
             if (c, metric) in groups]
    if not parts:
        return pd.Series(dtype=float)
    pu = pd.concat(parts).sort_index()
    index = pu["seed"].astype(str) + ":" + pu["user"].astype(str)
    return pd.Series(pu["value"].to_numpy(dtype=float), index=index.to_numpy())


def add_paired_tests(table: pd.DataFrame, results: Results) -> pd.DataFrame:
    """The paired tests of the best method of each (metric, N) against each other one, as the papers report
    significance (CofiRank Table 2: the best against the second best; GAPfm §5: Wilcoxon, p < 0.01).

    Users are paired within a split (the same seed); ``vs_best`` is the method's mean per-user difference to the
    best one (0 on the best row), ``t_test_p`` and ``wilcoxon_p`` the two-sided p-values of
    :func:`cofiviz.evaluation.significance.paired_test`, ``p_holm`` the Wilcoxon p-value after Holm's correction
    across every test of the table. NaN where a method has no per-user values (cells computed without them), and in every row of
    a (metric, N) whose best method has none: the best is the best mean of all the rows, not of those with values.
    """
    table = table.copy()
    for c in PAIRED_COLUMNS:
        table[c] = math.nan
    pu = results.per_user
    if table.empty or pu is None or pu.empty or "cells" not in table.columns:
        return table
    groups = dict(tuple(pu.reset_index(drop=True).groupby(["cell", "metric"], sort=False)))
    for (metric, n), g in table[table["status"] == "ok"].groupby(["metric", "N"], sort=False):
        values = {i: _user_values(groups, table.at[i, "cells"], metric) for i in g.index}
        values = {i: v for i, v in values.items() if len(v)}
        low = lower_is_better(metric)
        means = g["cofiviz"].dropna()
        best = (means.idxmin() if low else means.idxmax()) if len(means) else None
        if len(values) < 2 or best not in values:
            continue
        tests = best_against_others(values, metric, lower_is_better=low, best=best)
        for _, t in tests.iterrows():
            i = t["method"]
            table.loc[i, ["vs_best", "t_test_p", "wilcoxon_p"]] = (
                (0.0, math.nan, math.nan) if t["is_best"] else (t["diff"], t["t_test_p"], t["wilcoxon_p"]))
    table["p_holm"] = holm(table["wilcoxon_p"].to_numpy(dtype=float))
    return table


def format_table(table: pd.DataFrame) -> str:
    """The comparison as aligned text (what the command line prints)."""
    if table.empty:
        return "(no rows)"

    def f(v, signed=False):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "—"
        return f"{v:+.4f}" if signed else f"{v:.4f}"
    def fp(v):
        return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else p_text(v)
    lines = []
    orig = "original" in table.columns and table["original"].notna().any()
    tested = "p_holm" in table.columns and table["p_holm"].notna().any()
    w = max([30, *(len(str(m)) for m in table["method"])])
    for metric, g in table.groupby("metric", sort=False):
        lines.append(f"\n{metric}")
        head = (f"  {'N':>3}  {'method':{w}s} {'paper':>8}" + (f" {'original':>8}" if orig else "")
                + f" {'cofiviz':>8} {'± std':>7} {'diff':>8}" + (f" {'p (Holm)':>8}" if tested else "")
                + "  status / chosen setting")
        lines.append(head)
        for _, r in g.iterrows():
            extra = r["status"] if r["status"] != "ok" else r["setting"]
            lines.append(f"  {r['N']:>3}  {r['method']:{w}s} {f(r['paper']):>8}"
                         + (f" {f(r['original']):>8}" if orig else "")
                         + f" {f(r['cofiviz']):>8} {f(r['cofiviz_std']):>7} {f(r['diff'], True):>8}"
                         + ((" " + ("    best" if r["vs_best"] == 0 else f"{fp(r['p_holm']):>8}")) if tested else "")
                         + f"  {extra}")
    if orig:
        lines.append("\noriginal: the authors' own code run on the same protocol (mean of seeds 0-2); diff is "
                     "cofiviz - paper")
    if tested:
        lines.append("\np (Holm): Wilcoxon signed-rank test of each method against the best of its N (paired by user "
                     "and split), Holm-corrected across the table")
    return "\n".join(lines)


def _plots(rep: Reproduction, table: pd.DataFrame, results: Results) -> list:
    import holoviews as hv
    import holoviews.plotting.bokeh  # noqa: F401 - the renderer, without loading a notebook's JS from a CDN

    plots = []
    if rep.is_figures:
        t = results.traces
        if not t.empty:
            t = t[t["part"] == "test"]
            for fig, g in t.groupby("label", sort=False):
                short = short_labels(g["setting"].unique())
                for metric, gm in g.groupby("metric", sort=False):
                    curves = {short[s]: hv.Curve(gs.sort_values("iteration"), "iteration", ("value", metric))
                              for s, gs in gm.groupby("setting", sort=False)}
                    plots.append(hv.NdOverlay(curves, kdims="run").opts(
                        title=f"{fig}: test {metric}", width=460, height=300, legend_position="right"))
        return plots
    for (metric, n), g in table.groupby(["metric", "N"], sort=False):
        df = pd.concat([g.assign(source="paper", value=g["paper"]), g.assign(source="cofiviz", value=g["cofiviz"])])
        df = df[df["value"].notna()][["method", "source", "value"]]
        if df.empty:
            continue
        width = max(520, 36 * df["method"].nunique() * df["source"].nunique())   # room for every label
        plots.append(hv.Bars(df, kdims=["method", "source"], vdims="value").opts(
            title=f"{metric}, N = {n}", width=width, height=300, xrotation=45, tools=["hover"],
            ylim=(max(0.0, float(df["value"].min()) - 0.1), min(1.0, float(df["value"].max()) + 0.05))))
    return plots


def write_html(path: Path, rep: Reproduction, table: pd.DataFrame, results: Results, notes: list,
               quick: bool, seconds: float) -> Path:
    """A self-contained HTML report (Bokeh JavaScript inline): notes, the comparison table, plots.

    HoloViews, Panel and Bokeh are imported here, when a report is written, not with the package.
    """
    import holoviews as hv
    import panel as pn
    from bokeh.resources import INLINE

    plots = _plots(rep, table, results)
    fmt = {c: (lambda v: "—" if pd.isna(v) else f"{v:.4f}")
           for c in ("paper", "paper_std", "original", "cofiviz", "cofiviz_std")}
    fmt["diff"] = fmt["vs_best"] = lambda v: "—" if pd.isna(v) else f"{v:+.4f}"
    for c in ("t_test_p", "wilcoxon_p", "p_holm"):
        fmt[c] = lambda v: "—" if pd.isna(v) else p_text(v)
    head = (f"<h1>{html.escape(rep.title)}</h1><p><b>{html.escape(rep.command(quick))}</b>"
            f"{' (quick: reduced version, not the paper protocol in full)' if quick else ''} — "
            f"{len(results.cells)} cells, {seconds:.0f} s, written {time.strftime('%Y-%m-%d %H:%M:%S')}</p>"
            + "".join(f"<p>{html.escape(n)}</p>" for n in notes))
    parts = [pn.pane.HTML(head, sizing_mode="stretch_width")]
    if len(table):
        parts.append(pn.pane.HTML("<h2>Paper vs cofiviz</h2>" + table.to_html(index=False, formatters=fmt,
                                                                                 na_rep="—", escape=True),
                                  sizing_mode="stretch_width"))
    if rep.is_figures:
        fs = figure_summary(results)
        if len(fs):
            parts.append(pn.pane.HTML("<h2>Final and best test values</h2>"
                                      + fs.drop(columns="setting").to_html(index=False,
                                                                           float_format=lambda x: f"{x:.4f}"),
                                      sizing_mode="stretch_width"))
    if plots:
        parts.append(pn.pane.HoloViews(hv.Layout(plots).cols(2), backend="bokeh"))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.html")
    pn.Column(*parts).save(str(tmp), resources=INLINE, embed=True, title=f"cofiviz reproduce {rep.name}")
    os.replace(tmp, path)
    return path
