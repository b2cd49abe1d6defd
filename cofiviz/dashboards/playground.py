"""Metric playground: reorder a small graded list by hand and watch the ranking metrics respond.

Eight items with true grades 0..5 are ranked by scores. The visitor moves an item up or down (the
buttons swap its place with its neighbour), edits the grades or the scores as text (equal scores make
ties, which are highlighted and broken by :data:`cofiviz.metrics.TIE_RULE`), and sees NDCG@k, AP,
GAP, P@k, ERU, MRR and ERR recomputed with the library's own functions, each position's contribution to
each metric (the terms each metric family declares, :func:`cofiviz.metrics.position_terms`), and the formulas
with the current numbers. ``panel serve apps/playground.py`` serves it;
in JupyterLab, ``MetricPlayground()`` shows it inline.

Cascade vs non-cascade: NDCG, P@k and ERU add up one term per position that depends only on the item
there and its position; AP, GAP, MRR and ERR are *cascade* metrics, where an item's term also depends on
what was ranked above it (AP and GAP: the relevant items above; MRR: only the first relevant one
counts; ERR: the chance that the items above did not already satisfy the user). The preset "NDCG vs GAP" shows two orders on which they disagree.
"""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the Bokeh backend so .opts works anywhere)
import numpy as np
import pandas as pd
import panel as pn
import param

from .. import metrics as M
from ..metrics.table import BUILT_IN
from .theme import PlotFlow, alert, side_by_side

__all__ = ["MetricPlayground", "PRESETS", "contributions", "metric_values", "parse_numbers"]

ITEMS = tuple("ABCDEFGH")
YMAX = 5

#: name -> (grades per item, scores per item). "NDCG vs GAP" orders were found by searching 4,000
#: random orders of the grades (5, 4, 3, 3, 2, 1, 0, 0) with the real :func:`cofiviz.metrics.ndcg`
#: (k = 5, the default cutoff) and :func:`cofiviz.metrics.gap` for the pair that maximises
#: min(NDCG@5(A) - NDCG@5(B), GAP(B) - GAP(A)) (0.13): NDCG@5 prefers A, GAP prefers B.
#: ``tests/test_app_playground.py`` checks the disagreement.
_GRADES = (5, 4, 3, 3, 2, 1, 0, 0)


def _scores_for(order) -> tuple:
    """Scores that put item ``order[p]`` at position ``p + 1`` (8, 7, ..., 1)."""
    s = np.empty(len(order))
    s[list(order)] = np.arange(len(order), 0, -1)
    return tuple(float(v) for v in s)


PRESETS = {
    "Ideal order": (_GRADES, _scores_for(range(8))),
    "Reversed": (_GRADES, _scores_for(range(7, -1, -1))),
    "NDCG vs GAP: A (NDCG@5 prefers)": (_GRADES, _scores_for((5, 2, 4, 0, 1, 7, 6, 3))),
    "NDCG vs GAP: B (GAP prefers)": (_GRADES, _scores_for((1, 3, 7, 6, 5, 0, 2, 4))),
    "Ties": (_GRADES, (3.0, 3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 0.0)),
}

METRICS = ("NDCG@k", "AP", "GAP", "P@k", "ERU", "MRR", "ERR")
CASCADE = {"NDCG@k": False, "AP": True, "GAP": True, "P@k": False, "ERU": False, "MRR": True, "ERR": True}


def parse_numbers(text: str, n: int, name: str, *, integers: bool = False, low=None, high=None) -> tuple:
    """Parse ``n`` comma- or space-separated numbers, raising ValueError with a readable message."""
    parts = [p for p in str(text).replace(",", " ").split() if p]
    out = []
    for p in parts:
        try:
            v = float(p)
        except ValueError:
            raise ValueError(f"{name}: {p!r} is not a number") from None
        if not np.isfinite(v):
            raise ValueError(f"{name}: {p!r} must be finite")
        if integers and v != int(v):
            raise ValueError(f"{name}: {p!r} must be a whole number")
        if low is not None and v < low or high is not None and v > high:
            raise ValueError(f"{name}: {p!r} is outside {low}..{high}")
        out.append(int(v) if integers else v)
    if len(out) != n:
        raise ValueError(f"{name}: expected {n} numbers (one per item {', '.join(ITEMS[:n])}), got {len(out)}")
    return tuple(out)


def _names(k: int) -> dict:
    """The library's metric name of each metric of :data:`METRICS` at cutoff ``k``."""
    return {"NDCG@k": f"ndcg@{k}", "AP": "ap", "GAP": "gap", "P@k": f"p@{k}", "ERU": "eru", "MRR": "mrr",
            "ERR": "err"}


def _all_terms(grades, scores, k, threshold, d, alpha) -> dict:
    """:func:`cofiviz.metrics.position_terms` of each metric of :data:`METRICS` on one list."""
    return {m: M.position_terms(grades, scores, name, threshold=threshold, ymax=YMAX, d=d, alpha=alpha)
            for m, name in _names(k).items()}


def metric_values(grades, scores, k: int = 5, threshold: float = 4, d: float = 3, alpha: float = 5) -> dict:
    """The seven metrics of :data:`METRICS` of one list, then one per metric family registered beyond cofiviz's own
    (:func:`cofiviz.metrics.register`, at cutoff ``k`` when it takes one), computed by :mod:`cofiviz.metrics` (NaN
    when a metric skips the list)."""
    y = np.asarray(grades, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    values = {m: t.value for m, t in _all_terms(y, s, k, threshold, d, alpha).items()}
    for fam in M.families():
        if fam in BUILT_IN:
            continue
        name = fam.name if fam.cutoff == "none" else f"{fam.name}@{k}"
        out = M.score_lists([0, len(y)], y, s, [name], threshold=threshold, ymax=YMAX, d=d, alpha=alpha)
        values[fam.name.upper() + ("" if fam.cutoff == "none" else "@k")] = float(out[name][0])
    return values


def contributions(grades, scores, k: int = 5, threshold: float = 4, d: float = 3, alpha: float = 5):
    """Each position's term of each metric, as the metric families declare them
    (:func:`cofiviz.metrics.position_terms`); the terms of a metric add up to its value.

    Returns
    -------
    order : numpy.ndarray
        ``order[p]`` is the item at position ``p + 1`` (tie rule of :func:`cofiviz.metrics.rank_order`).
    terms : dict of str to numpy.ndarray
        Per-position contribution of each metric in :data:`METRICS`.
    parts : dict
        The numbers the formulas show, from the families' own parts: ``ranked_grades``, NDCG's ``dcg_terms``,
        ``dcg``, ``idcg`` and cutoff ``k``, AP's running precision ``prec`` and ``n_rel``, GAP's ``Z`` and
        ``S``, ERR's ``reach``.
    """
    y = np.asarray(grades, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    found = _all_terms(y, s, k, threshold, d, alpha)
    order = found["NDCG@k"].order
    ndcg, ap, gap = found["NDCG@k"].parts, found["AP"].parts, found["GAP"].parts
    parts = {"dcg_terms": ndcg["dcg_terms"], "dcg": ndcg["dcg"], "idcg": ndcg["idcg"], "k": ndcg["k"],
             "n_rel": ap["n_relevant"], "prec": ap["precision"], "Z": gap["z"], "S": gap["S"],
             "ranked_grades": y[order], "reach": found["ERR"].parts["reach"]}
    return order, {m: t.terms for m, t in found.items()}, parts


def _fmt(v: float, digits: int = 3) -> str:
    return "undefined (skipped)" if v is None or not np.isfinite(v) else f"{v:.{digits}f}"


class MetricPlayground(pn.viewable.Viewer):
    """Reorder a graded list by hand; NDCG@k, AP, GAP, P@k, ERU, MRR and ERR with per-position terms."""

    preset = param.Selector(default="NDCG vs GAP: A (NDCG@5 prefers)", objects=list(PRESETS),
                            doc="Load a prepared list.")
    k = param.Integer(default=5, bounds=(1, 8), doc="Cutoff of NDCG@k and P@k.")
    threshold = param.Integer(default=4, bounds=(1, 5), doc="Relevance threshold of AP, P@k and MRR.")
    grades = param.Tuple(default=_GRADES, length=8, doc="True grade 0..5 of items A..H.")
    scores = param.Tuple(default=PRESETS["NDCG vs GAP: A (NDCG@5 prefers)"][1], length=8,
                         doc="Predicted score of items A..H (higher = earlier).")

    def __init__(self, **params):
        super().__init__(**params)
        self._error = alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._grades_in = pn.widgets.TextInput(label="Grades of A..H (0-5)", sizing_mode="stretch_width")
        self._scores_in = pn.widgets.TextInput(label="Scores of A..H (equal scores = a tie)",
                                               sizing_mode="stretch_width")
        self._grades_in.param.watch(self._on_grades_text, "value")
        self._scores_in.param.watch(self._on_scores_text, "value")
        self._rows = pn.Column(sizing_mode="stretch_width")
        self._values = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["cofiviz-metric-values"])
        self._formulas = pn.pane.Markdown(sizing_mode="stretch_width")
        self._plot = PlotFlow(linked_axes=False)   # each order's own labels on its axis
        self._sync_text()
        self._refresh()

    # ------------------------------------------------------------------ state changes
    @param.depends("preset", watch=True)
    def _load_preset(self):
        g, s = PRESETS[self.preset]
        self.param.update(grades=tuple(g), scores=tuple(s))

    @param.depends("grades", "scores", watch=True)
    def _sync_text(self):
        self._grades_in.value = ", ".join(str(int(g)) for g in self.grades)
        self._scores_in.value = ", ".join(f"{s:g}" for s in self.scores)

    def _show_error(self, msg: str | None):
        self._error.object = msg or ""
        self._error.visible = bool(msg)

    def _on_grades_text(self, event):
        try:
            g = parse_numbers(event.new, len(ITEMS), "Grades", integers=True, low=0, high=YMAX)
        except ValueError as exc:
            self._show_error(str(exc))
            return
        self._show_error(None)
        if g != tuple(self.grades):
            self.grades = g

    def _on_scores_text(self, event):
        try:
            s = parse_numbers(event.new, len(ITEMS), "Scores")
        except ValueError as exc:
            self._show_error(str(exc))
            return
        self._show_error(None)
        if s != tuple(self.scores):
            self.scores = s

    def move(self, item: int, step: int) -> None:
        """Move ``item`` (index into A..H) ``step`` places (-1 = up, +1 = down) by trading places with
        its neighbour; the result is a strict order (scores n..1), so moving breaks ties."""
        order = list(M.rank_order(np.asarray(self.grades, float), np.asarray(self.scores, float)))
        p = order.index(item)
        q = p + step
        if not 0 <= q < len(order):
            return
        order[p], order[q] = order[q], order[p]
        self.scores = _scores_for(order)

    # ------------------------------------------------------------------ views
    @param.depends("grades", "scores", "k", "threshold", watch=True)
    def _refresh(self):
        g, s = self.grades, self.scores
        try:
            values = metric_values(g, s, self.k, self.threshold)
            order, terms, parts = contributions(g, s, self.k, self.threshold)
        except Exception as exc:  # shown in the page, never as a traceback
            self._show_error(f"Could not compute the metrics: {exc}")
            return
        self._rows.objects = self._row_widgets(order)
        self._values.object = self._values_md(values)
        self._formulas.object = self._formulas_md(values, order, terms, parts)
        self._plot.objects = self._bars(order, terms)

    def _row_widgets(self, order):
        s = np.asarray(self.scores)
        tied = {i for i in range(len(s)) if np.sum(s == s[i]) > 1}
        rows = [pn.pane.Markdown("**pos · item · grade · score**", margin=(0, 5))]
        for p, i in enumerate(order):
            up = pn.widgets.Button(label="▲", width=42, margin=(2, 2), description=f"Move {ITEMS[i]} up",
                                   disabled=p == 0, css_classes=[f"move-up-{ITEMS[i]}"])
            down = pn.widgets.Button(label="▼", width=42, margin=(2, 2), description=f"Move {ITEMS[i]} down",
                                     disabled=p == len(order) - 1, css_classes=[f"move-down-{ITEMS[i]}"])
            up.on_click(lambda e, i=i: self.move(i, -1))
            down.on_click(lambda e, i=i: self.move(i, +1))
            stars = "★" * int(self.grades[i]) + "☆" * (YMAX - int(self.grades[i]))
            tie = " **tie**" if i in tied else ""
            style = {"background": "#fff3cd"} if i in tied else {}
            label = pn.pane.Markdown(f"{p + 1}. **{ITEMS[i]}** · {stars} ({self.grades[i]}) · {s[i]:g}{tie}",
                                     margin=(2, 5), styles=style, sizing_mode="stretch_width")
            rows.append(pn.Row(up, down, label, sizing_mode="stretch_width"))
        if tied:
            rows.append(pn.pane.Markdown(f"Highlighted items share a score. Tie rule — {M.TIE_RULE}.",
                                         styles={"font-size": "90%"}))
        return rows

    def _values_md(self, v: dict) -> str:
        cells = " | ".join(f"**{_fmt(v[m])}**" for m in v)
        head = " | ".join(m.replace("@k", f"@{self.k}") for m in v)
        return f"| {head} |\n|{'---|' * len(v)}\n| {cells} |"

    def _formulas_md(self, v, order, terms, parts) -> str:
        yr = parts["ranked_grades"].astype(int)
        k, t = parts["k"], self.threshold
        dcg = " + ".join(f"(2^{g}−1)/log₂({p + 2})" for p, g in enumerate(yr[:k]))
        rel_pos = [p + 1 for p in range(len(yr)) if yr[p] >= t]
        ap = " + ".join(f"{int(round(parts['prec'][p - 1] * p))}/{p}" for p in rel_pos) or "0"
        gap_pos = [p + 1 for p in range(len(yr)) if yr[p] >= 1]
        first = rel_pos[0] if rel_pos else None
        eru = " + ".join(f"{max(g - 3, 0)}/2^({p}/4)" for p, g in enumerate(yr) if g > 3) or "0"
        lines = [
            f"Ranked grades: `{' '.join(map(str, yr))}` (order {' '.join(ITEMS[i] for i in order)}).",
            f"- **NDCG@{self.k}** *(non-cascade)* = DCG / IDCG = [{dcg}] / {parts['idcg']:.3f} "
            f"= {parts['dcg']:.3f} / {parts['idcg']:.3f} = **{_fmt(v['NDCG@k'])}**",
            f"- **AP** *(cascade)*, relevant = grade ≥ {t} at positions {rel_pos or 'none'}: "
            f"(1/{parts['n_rel']}) · [{ap}] = **{_fmt(v['AP'])}**",
            f"- **GAP** *(cascade)* = (1/Z) Σᵢ (Iᵢ/Rᵢ) Σ_{{Rⱼ ≤ Rᵢ}} Iⱼ S(min(yᵢ, yⱼ)), rated at positions "
            f"{gap_pos}, Z = Σ S(yᵢ) = {parts['Z']:g} (S(y) = Σ_{{l ≤ y}} (2^l − 1), its scale cancels) "
            f"= **{_fmt(v['GAP'])}**",
            f"- **P@{self.k}** *(non-cascade)* = (relevant in top {self.k}) / {self.k} = "
            f"{sum(1 for p in rel_pos if p <= self.k)}/{self.k} = **{_fmt(v['P@k'])}**",
            f"- **ERU** *(non-cascade)*, d = 3, α = 5: Σ max(y − 3, 0) / 2^((p − 1)/4) = {eru} "
            f"= **{_fmt(v['ERU'])}**",
            f"- **MRR** *(cascade: only the first relevant counts)* = 1/{first if first else '∞'} "
            f"= **{_fmt(v['MRR'])}**",
            f"- **ERR** *(cascade)* = Σₚ (1/p) R(yₚ) Π_{{i<p}} (1 − R(yᵢ)), R(y) = (2^y − 1)/2^{YMAX}: the chance the "
            f"user is still reading at each position is {' '.join(f'{r:.2f}' for r in parts['reach'])} "
            f"= **{_fmt(v['ERR'])}**",
            "",
            "*Non-cascade* metrics add one term per position that depends only on that item and its place; "
            "in *cascade* metrics an item's term also depends on what is ranked above it. Compare the "
            "presets *NDCG vs GAP: A* and *B*: NDCG@5 only sees the top 5 and rewards high grades there one "
            "by one; GAP looks at the whole list and rewards each rated item for the items ranked above it "
            "that are at least as good.",
        ]
        return "\n".join(lines)

    def _bars(self, order, terms):
        labels = [f"{p + 1}:{ITEMS[i]}" for p, i in enumerate(order)]
        plots = []
        for m in METRICS:
            vals = np.nan_to_num(terms[m])
            df = pd.DataFrame({"position": labels, "contribution": vals})
            kind = "cascade" if CASCADE[m] else "non-cascade"
            name = m.replace("@k", f"@{self.k}")
            plots.append(hv.Bars(df, kdims=["position"], vdims=["contribution"]).opts(
                title=f"{name} ({kind}): total {np.nansum(terms[m]):.3f}", color="#c44e52" if CASCADE[m]
                else "#4c72b0", tools=["hover"], height=220, responsive=True, xrotation=0,
                default_tools=["save", "reset"], toolbar=None))
        return plots

    def __panel__(self):
        controls = pn.Param(self.param, parameters=["preset", "k", "threshold"],
                            widgets={"preset": pn.widgets.Select, "k": pn.widgets.IntSlider,
                                     "threshold": pn.widgets.IntSlider},
                            show_name=False, sizing_mode="stretch_width")
        left = [pn.pane.Markdown("### The list"), controls, self._grades_in, self._scores_in, self._rows]
        right = [pn.pane.Markdown("### Metrics"), self._values, self._plot, self._formulas]
        return pn.Column(self._error, side_by_side(left, right), sizing_mode="stretch_width")
