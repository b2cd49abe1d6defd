"""Loss shapes: what the models actually minimise, drawn against what they are meant to optimise.

Two tabs, every curve computed by :mod:`cofiviz.losses`. The first, **Surrogates & bounds**, has four panels:

- **LCR Figure 4** — each pairwise surrogate of Local Collaborative Ranking (Table 1) against
  Δf = f_ui − f_uj for ΔM = 1…4, with the margin γ and the loss family adjustable, over the zero-one
  pair loss it bounds (:func:`cofiviz.losses.surrogates.figure4_frame`).
- **CofiRank's convex bound** — the NDCG@k loss of eq 4 against the true regret 1 − NDCG@k on a small
  list whose scores the visitor edits, along the line where one item's score moves
  (:func:`cofiviz.losses.structured_loss_curve`).
- **GAPfm's logistic smoothing** — the rank indicator I(R_j ≤ R_i) ≈ g(Δf) (eq 6) and 1/R_i ≈ g(f_i)
  (eq 7) against the exact terms, with a score scale c (the smoothing of c·f: large c sharpens it).
- **The smoothed rank** (blog post 003, ApproxNDCG) — the smoothed NDCG loss of a two-item list (ratings
  1 and 0) against Δf = f_a − f_b for γ = 0.5, 1, 2, 5, over the exact 1 − NDCG step, and its slope: the
  curve is non-convex and flat where the pair's probability saturates
  (:func:`cofiviz.losses.smoothed_rank_pair_curve`).

The second tab, **Ties & Plackett–Luce** (blog post 003), draws the probabilities of a win, a tie and a
loss against the score difference under Rao–Kupper (θ adjustable) and Davidson (ν adjustable)
(:func:`cofiviz.losses.tie_probabilities`), and the listwise Plackett–Luce loss of a small list the
visitor edits, with its gradient per item and the loss while one item's score moves
(:func:`cofiviz.losses.plackett_luce_loss`, Breslow or Efron ties). Tabs are rendered when first shown.

Every plot that follows an input is a HoloViews ``DynamicMap`` on the inputs (``hv.streams.Params``): a change
redraws the curves of the plots already on the page (new data, titles and ranges), not new plots. An input that
cannot be drawn (a malformed list) leaves the last curves that could be drawn, with the message beside them.

``panel serve apps/losses.py`` serves it; in JupyterLab, ``LossShapes()`` shows it inline, and each panel can be
shown alone where a text speaks of it: ``surrogates_panel()``, ``bound_panel()``, ``gapfm_panel()``,
``smoothed_rank_panel()``, ``ties_panel()`` and ``plackett_luce_panel()``.
"""

from __future__ import annotations

from functools import partial

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the Bokeh backend so .opts works anywhere)
import numpy as np
import pandas as pd
import panel as pn
import param

from ..losses import structured_loss_curve
from ..losses.smoothed_gap import gap_terms, rank_indicator_shape, reciprocal_rank_curve
from .. import metrics as M
from ..losses.structured import ndcg_loss
from ..losses.surrogates import SURROGATE_LABELS, figure4_frame
from ..losses.listwise import PL_TIES, pl_list_probability, plackett_luce_loss
from ..losses.smoothed_rank import smoothed_rank_pair_curve
from ..losses.ties import tie_probabilities
from ._shared import BoundedInput
from .theme import PlotFlow, alert, side_by_side
from .playground import parse_numbers

__all__ = ["LossShapes", "figure4_summary", "tie_summary", "smoothed_rank_summary"]

FAMILIES = {"Log": ("log_m", "log_a"), "Exp": ("exp_m", "exp_a"), "Hinge": ("hinge_m", "hinge_a")}
DM_COLORS = {1.0: "#4c72b0", 2.0: "#55a868", 3.0: "#c44e52", 4.0: "#8172b2"}
ITEMS = tuple("ABCDEF")
# each plot's own axes: Panel links the axes of plots that share a dimension, and plots that redraw in place
# keep ranges of their own
SURROGATE_DF = hv.Dimension("surrogate_df", label="Δf")
SURROGATE_LOSS = hv.Dimension("surrogate_loss", label="loss")
BOUND_SCORE = hv.Dimension("bound_score", label="score of the moving item")
BOUND_LOSS = hv.Dimension("bound_loss", label="loss")
PL_SCORE = hv.Dimension("pl_score", label="score of the moving item")
PL_LOSS = hv.Dimension("pl_loss", label="loss")


def _framewise(elements) -> hv.Overlay:
    """An overlay whose axes follow each frame it is redrawn with (``framewise`` is an option of its elements)."""
    return hv.Overlay([element.opts(framewise=True) for element in elements])


def figure4_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Value of each loss at Δf = 0 (or the grid point nearest to it) per ΔM: a table for the page."""
    at0 = frame.loc[(frame["delta_f"] - 0.0).abs() == (frame["delta_f"] - 0.0).abs().min()]
    table = at0.pivot_table(index="label", columns="delta_m", values="value")
    table.columns = [f"ΔM={c:g}" for c in table.columns]
    return table.round(4).reset_index().rename(columns={"label": "loss at Δf = 0"})


OUTCOME_COLORS = {"win": "#55a868", "tie": "#8172b2", "loss": "#c44e52"}
#: Scales γ of the smoothed-rank panel, and their colours.
SR_GAMMAS = {0.5: "#4c72b0", 1.0: "#55a868", 2.0: "#c44e52", 5.0: "#8172b2"}


def smoothed_rank_summary(gammas=tuple(SR_GAMMAS), deltas=(-4.0, 0.0, 4.0), h: float = 1e-4) -> pd.DataFrame:
    """Smoothed NDCG loss of the pair (ratings 1 and 0) and its slope in Δf at a few Δf, per γ: a table for the page."""
    rows = []
    for g in gammas:
        for d in deltas:
            loss = float(smoothed_rank_pair_curve(d, g)[0])
            slope = float((smoothed_rank_pair_curve(d + h, g)[0] - smoothed_rank_pair_curve(d - h, g)[0]) / (2 * h))
            rows.append({"γ": f"{g:g}", "Δf": f"{d:g}", "loss": loss, "slope": slope})
    return pd.DataFrame(rows).round(4)


def outcome_probabilities(model: str, delta, p: float) -> dict[str, np.ndarray]:
    """P(win), P(tie), P(loss) of a tie-aware model (:func:`cofiviz.losses.tie_probabilities`), and at its
    Bradley–Terry limit (Rao–Kupper's θ = 1, Davidson's ν = 0, where the library's models refuse the parameter
    because a tie has probability 0) the limit itself: P(win) = 1 / (1 + exp(−Δf)), P(tie) = 0."""
    delta = np.asarray(delta, dtype=float)
    if (model == "rao_kupper" and p == 1.0) or (model == "davidson" and p == 0.0):
        win = 1.0 / (1.0 + np.exp(-delta))
        return {"win": win, "tie": np.zeros_like(win), "loss": 1.0 - win}
    return tie_probabilities(model, delta, p)


def tie_summary(theta: float, nu: float, deltas=(0.0, 1.0, 3.0)) -> pd.DataFrame:
    """P(win), P(tie), P(loss) of both tie-aware models at a few score differences: a table for the page."""
    rows = []
    for model, label, p in (("rao_kupper", f"Rao–Kupper θ={theta:g}", theta), ("davidson", f"Davidson ν={nu:g}", nu)):
        probs = outcome_probabilities(model, np.asarray(deltas, dtype=float), p)
        for k, d in enumerate(deltas):
            rows.append({"model": label, "Δf": f"{d:g}", "P(win)": probs["win"][k], "P(tie)": probs["tie"][k],
                         "P(loss)": probs["loss"][k]})
    return pd.DataFrame(rows).round(4)



def true_regret(y: np.ndarray, f: np.ndarray, k: int) -> float:
    """``1 − NDCG@k`` of the scores ``f`` for grades ``y`` by :func:`cofiviz.metrics.ndcg`, whose tie rule puts the
    lower grade first among equal scores (0 when no grade is above 0)."""
    value = M.ndcg(y, f, k=k)
    return 0.0 if np.isnan(value) else 1.0 - float(value)

class LossShapes(pn.viewable.Viewer):
    """LCR's surrogates (Figure 4), CofiRank's convex NDCG bound, GAPfm's logistic smoothing; ties and Plackett–Luce."""

    family = param.Selector(default="Log", objects=list(FAMILIES), doc="LCR loss family (Table 1).")
    gamma = param.Number(default=0.0, bounds=(-2.0, 3.0), step=0.1, doc="LCR margin γ.")
    df_range = param.Number(default=4.0, bounds=(1.0, 8.0), step=0.5, doc="Δf axis from −range to +range.")

    grades = param.String(default="5, 4, 3, 2, 1, 0", doc="CofiRank list: true grades of items A..F.")
    scores = param.String(default="0.5, 0.9, 0.1, 0.3, -0.2, -0.6", doc="CofiRank list: scores of items A..F.")
    moving = param.Selector(default="A", objects=list(ITEMS), doc="The item whose score moves along the x axis.")
    k = param.Integer(default=5, bounds=(1, 6), doc="NDCG cutoff.")

    scale = param.Number(default=1.0, bounds=(0.1, 10.0), step=0.1,
                         doc="GAPfm: score scale c, the logistic smooths c·f (larger c = sharper).")

    theta = param.Number(default=2.0, bounds=(1.0, 10.0), step=0.01,
                         doc="Rao–Kupper threshold θ ≥ 1 (θ = 1: Bradley–Terry, no ties).")
    nu = param.Number(default=1.0, bounds=(0.0, 5.0), step=0.01,
                      doc="Davidson tie propensity ν ≥ 0 (ν = 0: Bradley–Terry, no ties).")
    tie_range = param.Number(default=6.0, bounds=(1.0, 12.0), step=0.5, doc="Δf axis from −range to +range.")
    pl_grades = param.String(default="5, 4, 4, 3, 3, 1", doc="Plackett–Luce list: ratings of items A..F (ties allowed).")
    pl_scores = param.String(default="1.2, 0.4, 0.9, -0.3, 0.1, -1.0", doc="Plackett–Luce list: scores of items A..F.")
    pl_ties = param.Selector(default="breslow", objects=list(PL_TIES), doc="Treatment of tied ratings.")
    pl_moving = param.Selector(default="A", objects=list(ITEMS), doc="The item whose score moves along the x axis.")

    def __init__(self, **params):
        super().__init__(**params)
        self._memo: dict[str, tuple] = {}
        self._drawn: dict[str, dict] = {}
        self._error = alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._fig4_table = pn.pane.DataFrame(pd.DataFrame(), index=False, sizing_mode="stretch_width",
                                             css_classes=["cofiviz-fig4-table"])
        self._bound_error = alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._bound_text = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["cofiviz-bound-text"])
        self._gapfm_text = pn.pane.Markdown(sizing_mode="stretch_width")
        self._smoothed = PlotFlow()
        self._smoothed_table = pn.pane.DataFrame(smoothed_rank_summary(), index=False, sizing_mode="stretch_width",
                                                 css_classes=["cofiviz-smoothed-table"])
        self._ties_table = pn.pane.DataFrame(pd.DataFrame(), index=False, sizing_mode="stretch_width",
                                             css_classes=["cofiviz-ties-table"])
        self._pl_error = alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._pl_text = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["cofiviz-pl-text"])
        # the tables and texts first: they compute what the plots draw, and keep the last list that could be drawn
        self._update_fig4()
        self._update_bound()
        self._update_gapfm()
        self._update_ties()
        self._update_pl()

        def follows(*names):
            return [hv.streams.Params(parameterized=self, parameters=list(names))]

        # not linked: each plot sets its own ranges as it redraws (the two plots of Figure 4 the same ones)
        self._fig4 = PlotFlow([hv.DynamicMap(partial(self._fig4_plot, i), streams=follows("family", "gamma", "df_range"))
                               for i in (0, 1)], linked_axes=False)
        self._bound = pn.pane.HoloViews(
            hv.DynamicMap(self._bound_plot, streams=follows("grades", "scores", "moving", "k")),
            sizing_mode="stretch_width", linked_axes=False)
        self._gapfm = PlotFlow([hv.DynamicMap(self._indicator_plot, streams=follows("scale")),
                                hv.DynamicMap(self._reciprocal_rank_plot, streams=follows("scale", "grades", "scores"))],
                               linked_axes=False)
        self._draw_smoothed_rank()
        self._ties = PlotFlow([hv.DynamicMap(partial(self._ties_plot, m), streams=follows("theta", "nu", "tie_range"))
                               for m in ("rao_kupper", "davidson")], linked_axes=False)
        pl = follows("pl_grades", "pl_scores", "pl_ties", "pl_moving")
        self._pl = PlotFlow([hv.DynamicMap(self._pl_curve_plot, streams=pl),
                             hv.DynamicMap(self._pl_gradient_plot, streams=pl)], linked_axes=False)

    def _remember(self, name: str, key, compute):
        """What ``compute()`` returns for ``key``, computed once while ``key`` stays the latest asked under
        ``name`` (a table and the plots that follow the same inputs share one computation)."""
        held = self._memo.get(name)
        if held is None or held[0] != key:
            held = (key, compute())
            self._memo[name] = held
        return held[1]

    def _drawable(self, name: str, compute, inputs: tuple[str, ...]):
        """``compute`` of the parameters ``inputs`` as they are (remembered under ``name``); when they cannot be
        drawn (``compute`` raises ValueError: a malformed list), what was drawn last, at first with the lists as
        the page opens with them."""
        values = tuple(getattr(self, n) for n in inputs)
        try:
            drawn = self._remember(name, values, partial(compute, *values))
        except ValueError:
            drawn = self._drawn.get(name)
            if drawn is None:
                drawn = compute(*(self.param[n].default if isinstance(self.param[n], param.String) else v
                                  for n, v in zip(inputs, values)))
        self._drawn[name] = drawn
        return drawn

    def _show_error(self, msg: str | None):
        self._error.object = msg or ""
        self._error.visible = bool(msg)

    # ----------------------------------------------------------------------------- LCR Figure 4
    def _fig4_frame(self, family: str, gamma: float, df_range: float) -> pd.DataFrame:
        def compute():
            grid = np.linspace(-df_range, df_range, 241)
            return figure4_frame(FAMILIES[family], delta_m=(1, 2, 3, 4), margin=float(gamma),
                                 delta_f=np.unique(np.concatenate([grid, [0.0]])))
        frame = self._remember("fig4", (family, float(gamma), float(df_range)), compute)
        self._fig4_drawn = (family, float(gamma), float(df_range), frame)
        return frame

    @param.depends("family", "gamma", "df_range", watch=True)
    def _update_fig4(self):
        try:
            frame = self._fig4_frame(self.family, self.gamma, self.df_range)
        except Exception as exc:
            self._show_error(f"Could not compute the LCR losses: {exc}")
            return
        self._show_error(None)
        self._fig4_table.object = figure4_summary(frame)

    def _fig4_plot(self, index: int, family: str, gamma: float, df_range: float) -> hv.Overlay:
        """The ``index``-th loss of the family against Δf for ΔM = 1…4, over the zero-one loss; both plots of a
        family on one y range."""
        try:
            frame = self._fig4_frame(family, gamma, df_range)
        except Exception:  # the message is the table's; the last curves stay
            family, gamma, df_range, frame = self._fig4_drawn
        loss = FAMILIES[family][index]
        sub = frame[frame["loss"] == loss]
        curves = []
        for dm, g in sub.groupby("delta_m"):
            curves.append(hv.Curve((g["delta_f"], np.minimum(g["value"].to_numpy(), 1e6)), SURROGATE_DF,
                                   SURROGATE_LOSS, label=f"ΔM = {dm:g}").opts(
                color=DM_COLORS.get(dm, "black"), line_width=2, tools=["hover"]))
        zo = sub[sub["delta_m"] == 1.0]
        curves.append(hv.Curve((zo["delta_f"], zo["zero_one"]), SURROGATE_DF, SURROGATE_LOSS, label="zero-one").opts(
            color="black", line_dash="dashed", line_width=1.5))
        # the exponential losses grow too fast to show whole; the others up to the family's largest value
        top = 8.0 if family == "Exp" else 1.05 * max(1.0, float(np.minimum(frame["value"], 1e6).max()))
        return _framewise(curves).redim.range(surrogate_df=(-df_range, df_range), surrogate_loss=(-0.2, top)).opts(
            title=f"{SURROGATE_LABELS[loss]}, γ = {gamma:g}", height=320, responsive=True, legend_position="top_right",
            framewise=True, toolbar="above")

    # ----------------------------------------------------------------------------- CofiRank bound
    def _parse_list(self, grades: str | None = None, scores: str | None = None):
        grades = self.grades if grades is None else grades
        scores = self.scores if scores is None else scores
        y = np.asarray(parse_numbers(grades, 6, "Grades", integers=True, low=0, high=10), dtype=np.float64)
        f = np.asarray(parse_numbers(scores, 6, "Scores"), dtype=np.float64)
        if not np.any(y > 0):
            raise ValueError("Grades: at least one grade must be above 0 (otherwise NDCG is undefined)")
        return y, f

    def _bound_curves(self) -> dict:
        """The bound and the regret along the moving item's line, for the inputs as they are; the last list that
        could be drawn when they cannot be (the error is :meth:`_update_bound`'s to show), at first the defaults."""
        def curves(grades, scores, moving, k):
            y, f = self._parse_list(grades, scores)
            i = ITEMS.index(moving)
            direction = np.zeros(len(f))
            direction[i] = 1.0
            ts = np.unique(np.concatenate([np.linspace(-3.0, 3.0, 241), [0.0]]))
            loss, _ = structured_loss_curve(y, f, direction, ts, k=k)
            regret = np.array([true_regret(y, f + t * direction, k) for t in ts])
            return {"y": y, "f": f, "i": i, "moving": moving, "k": k, "x": f[i] + ts, "loss": loss,
                    "regret": regret, "here_loss": ndcg_loss(f, y, k=k)[0], "here_regret": true_regret(y, f, k)}
        return self._drawable("bound", curves, ("grades", "scores", "moving", "k"))

    @param.depends("grades", "scores", "moving", "k", watch=True)
    def _update_bound(self):
        try:
            self._parse_list()
        except ValueError as exc:
            self._bound_error.object = str(exc)
            self._bound_error.visible = True
            return
        self._bound_error.visible = False
        c = self._bound_curves()
        y, f, k = c["y"], c["f"], c["k"]
        order = M.rank_order(y, f)
        tied = len(f) - len(np.unique(f))
        self._bound_text.object = (
            f"Current order: **{' '.join(ITEMS[j] for j in order)}** (grades {' '.join(str(int(y[j])) for j in order)}"
            f"{'; equal scores put the lower grade first, as every metric of cofiviz does' if tied else ''}). "
            f"Convex bound **{c['here_loss']:.4f}** ≥ true regret 1 − NDCG@{k} = **{c['here_regret']:.4f}**. "
            "The bound is piecewise linear and convex in the scores; the regret is a staircase that only changes "
            "when two items swap places, which is why CofiRank minimises the bound instead.")

    def _bound_plot(self, grades, scores, moving, k) -> hv.Overlay:
        """The convex bound of eq 4 and the true regret while one item's score moves, and the current scores."""
        c = self._bound_curves()
        here = c["f"][c["i"]]
        return _framewise([
            hv.Curve((c["x"], c["loss"]), BOUND_SCORE, BOUND_LOSS, label="convex bound (eq 4)").opts(
                color="#c44e52", line_width=2, tools=["hover"]),
            hv.Curve((c["x"], c["regret"]), BOUND_SCORE, BOUND_LOSS, label="1 − NDCG@k").opts(
                color="#4c72b0", line_width=2, interpolation="steps-mid", tools=["hover"]),
            hv.Scatter([(here, c["here_loss"]), (here, c["here_regret"])], BOUND_SCORE, BOUND_LOSS,
                       label="current scores").opts(color="black", size=8),
        ]).opts(title=f"CofiRank NDCG@{c['k']} loss while item {c['moving']}'s score moves", height=340,
                responsive=True, legend_position="top_left", framewise=True, toolbar="above")

    # ----------------------------------------------------------------------------- GAPfm smoothing
    @param.depends("scale", "grades", "scores", watch=True)
    def _update_gapfm(self):
        c = float(self.scale)
        drawn = self._bound_curves()
        y, f = drawn["y"], drawn["f"]
        grades = np.minimum(y, 5).astype(int)
        rated = grades >= 1  # GAPfm's sums run over the user's rated items only
        try:
            exact, smooth = gap_terms(c * f[rated], grades[rated], ymax=5)
            value = M.gap(grades[rated], c * f[rated], ymax=5)
            self._gapfm_text.object = (
                f"On the rated items of the list above (grades capped at 5) with scale c = {c:g}: exact GAP = "
                f"**{value:.4f}** (Z·GAP = **{exact.sum():.4f}**; equal scores ranked as the metrics rank them, the "
                f"lower grade first), smoothed GAP (eq 8) = **{smooth.sum():.4f}**. Eq 7 replaces 1/R by g(f), "
                "which ignores the other items entirely: it only tracks 1/R when scores are spread over a wide range.")
        except Exception as exc:  # e.g. a list with no rated item
            self._gapfm_text.object = f"Smoothed GAP is not defined for this list: {exc}"

    def _indicator_plot(self, scale) -> hv.Overlay:
        """The rank indicator I(R_j ≤ R_i) and its logistic g(c·Δf) (eq 6)."""
        c = float(scale)
        d = np.linspace(-6.0, 6.0, 241)
        exact_ind, smooth_ind = rank_indicator_shape(c * d)
        return _framewise([
            hv.Curve((d, exact_ind), "Δf = f_j − f_i", "value", label="I(R_j ≤ R_i) exact").opts(
                color="black", interpolation="steps-mid", line_width=2),
            hv.Curve((d, smooth_ind), "Δf = f_j − f_i", "value", label="g(c·Δf) (eq 6)").opts(
                color="#c44e52", line_width=2, tools=["hover"]),
        ]).opts(title=f"Rank indicator and its smoothing, c = {c:g}", height=300, responsive=True,
                legend_position="top_left", framewise=True, toolbar="above")

    def _reciprocal_rank_plot(self, scale, grades, scores) -> hv.Overlay:
        """1/R of item A as its score moves (the others fixed) and its two smoothings."""
        c = float(scale)
        f = self._bound_curves()["f"]
        others = np.delete(f, 0)
        grid = np.linspace(min(f.min(), -2.0) - 1.0, max(f.max(), 2.0) + 1.0, 241)
        exact_rr, smooth_rr = reciprocal_rank_curve(c * grid, c * others)
        _, smooth_rank = reciprocal_rank_curve(c * grid, c * others, smooth_rank=True)
        return _framewise([
            hv.Curve((grid, exact_rr), "score of A", "1/R", label="1/R exact").opts(
                color="black", interpolation="steps-mid", line_width=2),
            hv.Curve((grid, smooth_rr), "score of A", "1/R", label="g(c·f) (eq 7)").opts(
                color="#c44e52", line_width=2, tools=["hover"]),
            hv.Curve((grid, smooth_rank), "score of A", "1/R", label="1/(1 + Σ g(c·(f_j − f)))").opts(
                color="#55a868", line_width=2, line_dash="dashed"),
        ]).opts(title=f"1/R of item A and its smoothings, c = {c:g}", height=300,
                responsive=True, legend_position="top_right", framewise=True, toolbar="above")

    # ----------------------------------------------------------------------------- smoothed rank (ApproxNDCG)
    def _draw_smoothed_rank(self):
        d = np.linspace(-6.0, 6.0, 241)
        loss_curves, slope_curves = [], []
        exact = None
        for g, color in SR_GAMMAS.items():
            smooth, exact = smoothed_rank_pair_curve(d, g)
            loss_curves.append(hv.Curve((d, smooth), "Δf = f_a − f_b", "loss", label=f"γ = {g:g}").opts(
                color=color, line_width=2, tools=["hover"]))
            slope_curves.append(hv.Curve((d, -np.gradient(smooth, d)), "Δf = f_a − f_b", "−∂loss/∂Δf",
                                         label=f"γ = {g:g}").opts(color=color, line_width=2, tools=["hover"]))
        loss_curves.append(hv.Curve((d, exact), "Δf = f_a − f_b", "loss", label="1 − NDCG exact").opts(
            color="black", line_dash="dashed", interpolation="steps-mid", line_width=1.5))
        self._smoothed.objects = [
            hv.Overlay(loss_curves).opts(title="Smoothed NDCG loss of a pair (ratings 1 and 0)", height=300,
                                         responsive=True, legend_position="top_right", toolbar="above"),
            hv.Overlay(slope_curves).opts(title="Its slope: flat where σ(γΔf) saturates", height=300,
                                          responsive=True, legend_position="top_right", toolbar="above"),
        ]

    # ----------------------------------------------------------------------------- ties (Rao–Kupper, Davidson)
    @param.depends("theta", "nu", watch=True)
    def _update_ties(self):
        self._ties_table.object = tie_summary(float(self.theta), float(self.nu))

    def _ties_plot(self, model: str, theta, nu, tie_range) -> hv.Overlay:
        """P(win), P(tie) and P(loss) of one tie-aware model against the score difference."""
        d = np.linspace(-tie_range, tie_range, 241)
        bt = " (Bradley–Terry: no ties)"
        if model == "rao_kupper":
            p, title = float(theta), f"Rao–Kupper (1967), θ = {theta:g}" + bt * (theta == 1)
        else:
            p, title = float(nu), f"Davidson (1970), ν = {nu:g}" + bt * (nu == 0)
        probs = outcome_probabilities(model, d, p)
        curves = [hv.Curve((d, probs[o]), "Δf = f_i − f_j", "probability", label=f"P({o})").opts(
            color=OUTCOME_COLORS[o], line_width=2, tools=["hover"]) for o in ("win", "tie", "loss")]
        ranges = {"Δf = f_i − f_j": (-tie_range, tie_range), "probability": (0, 1.02)}
        return _framewise(curves).redim.range(**ranges).opts(title=title, height=320, responsive=True, framewise=True,
                                                             legend_position="right", toolbar="above")

    # ----------------------------------------------------------------------------- Plackett–Luce
    @staticmethod
    def _parse_pl(grades: str, scores: str):
        y = np.asarray(parse_numbers(grades, 6, "Ratings", low=0, high=10), dtype=np.float64)
        f = np.asarray(parse_numbers(scores, 6, "Scores"), dtype=np.float64)
        return y, f

    def _pl_state(self) -> dict:
        """The list's loss and gradient, and the loss while one item's score moves, for the inputs as they are; the
        last list that could be drawn when they cannot be (the error is :meth:`_update_pl`'s), at first the
        defaults."""
        def compute(grades, scores, ties, moving):
            y, f = self._parse_pl(grades, scores)
            loss, grad = plackett_luce_loss(f, y, ties)
            i = ITEMS.index(moving)
            ts = np.linspace(-4.0, 4.0, 161)
            moved = []
            for t in ts:
                g = f.copy()
                g[i] += t
                moved.append(plackett_luce_loss(g, y, ties)[0])
            return {"y": y, "f": f, "i": i, "ties": ties, "moving": moving, "loss": loss, "grad": grad,
                    "x": f[i] + ts, "moved": np.asarray(moved)}
        return self._drawable("pl", compute, ("pl_grades", "pl_scores", "pl_ties", "pl_moving"))

    @param.depends("pl_grades", "pl_scores", "pl_ties", "pl_moving", watch=True)
    def _update_pl(self):
        try:
            self._parse_pl(self.pl_grades, self.pl_scores)
        except ValueError as exc:
            self._pl_error.object = str(exc)
            self._pl_error.visible = True
            return
        self._pl_error.visible = False
        st = self._pl_state()
        y, f, loss = st["y"], st["f"], st["loss"]
        order = M.rank_order(y, f)
        n_tied = int(len(y) - len(np.unique(y)))
        self._pl_text.object = (
            f"Order by score: **{' '.join(ITEMS[j] for j in order)}** (ratings {' '.join(f'{y[j]:g}' for j in order)}). "
            f"Plackett–Luce loss ({st['ties']}) **{loss:.4f}**; likelihood of the ratings' ordering "
            f"exp(−loss) = **{np.exp(-loss):.4f}**. The probability of the strict order by score, "
            f"Π exp(f_i)/Σ_(j≥i) exp(f_j), is **{pl_list_probability(f[order]):.4f}**. "
            f"{n_tied} item(s) share a rating with another: Breslow chooses every tied item from the same set, "
            "Efron removes the group's items on average as they are chosen (closer to averaging over every order "
            "of the tied items).")

    def _pl_curve_plot(self, pl_grades, pl_scores, pl_ties, pl_moving) -> hv.Overlay:
        """The Plackett–Luce loss while one item's score moves, and the current scores."""
        st = self._pl_state()
        return _framewise([
            hv.Curve((st["x"], st["moved"]), PL_SCORE, PL_LOSS, label="Plackett–Luce").opts(
                color="#c44e52", line_width=2, tools=["hover"]),
            hv.Scatter([(st["f"][st["i"]], st["loss"])], PL_SCORE, PL_LOSS, label="current scores").opts(
                color="black", size=8),
        ]).opts(title=f"Plackett–Luce ({st['ties']}) as item {st['moving']}'s score moves", height=320,
                responsive=True, legend_position="top_right", framewise=True, toolbar="above")

    def _pl_gradient_plot(self, pl_grades, pl_scores, pl_ties, pl_moving) -> hv.Bars:
        """The loss's gradient per item, the items named with their ratings."""
        st = self._pl_state()
        frame = pd.DataFrame({"item": [f"{a} ({st['y'][k]:g})" for k, a in enumerate(ITEMS)], "gradient": st["grad"]})
        return hv.Bars(frame, "item", "gradient").opts(
            title="∂loss/∂f per item (rating): negative = push up", height=320, responsive=True, color="#4c72b0",
            framewise=True, toolbar="above")

    # ------------------------------------------------------------------ one panel per section (a notebook shows one)
    def surrogates_panel(self) -> pn.Column:
        """LCR's Figure 4: the pairwise surrogates against Δf, with the family, margin and range."""
        controls = pn.Column(
            pn.Param(self.param, parameters=["family"], show_name=False,
                     widgets={"family": pn.widgets.RadioButtonGroup}, sizing_mode="stretch_width"),
            BoundedInput(self, "gamma", label="γ (margin)", css_classes=["cofiviz-gamma"]),
            pn.Param(self.param, parameters=["df_range"], show_name=False, widgets={"df_range": pn.widgets.FloatSlider},
                     sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
        return pn.Column(self._error, pn.pane.Markdown("## LCR Figure 4: pairwise surrogates against Δf for ΔM = 1…4"),
                         side_by_side([controls, self._fig4_table], [self._fig4]), sizing_mode="stretch_width")

    def bound_panel(self) -> pn.Column:
        """CofiRank's convex upper bound against the true NDCG regret, for a list you edit."""
        controls = pn.Param(self.param, parameters=["grades", "scores", "moving", "k"], show_name=False,
                            widgets={"moving": pn.widgets.RadioButtonGroup, "k": pn.widgets.IntSlider,
                                     "grades": {"type": pn.widgets.TextInput, "css_classes": ["cofiviz-grades"]},
                                     "scores": {"type": pn.widgets.TextInput, "css_classes": ["cofiviz-scores"]}},
                            sizing_mode="stretch_width")
        return pn.Column(pn.pane.Markdown("## CofiRank: convex upper bound vs the true NDCG regret"),
                         side_by_side([controls], [self._bound_error, self._bound, self._bound_text]),
                         sizing_mode="stretch_width")

    def gapfm_panel(self) -> pn.Column:
        """GAPfm's logistic smoothing of the rank terms, with its scale."""
        controls = BoundedInput(self, "scale", label="Scale c", css_classes=["cofiviz-scale"])
        return pn.Column(pn.pane.Markdown("## GAPfm: logistic smoothing of the rank terms"),
                         side_by_side([controls], [self._gapfm, self._gapfm_text]), sizing_mode="stretch_width")

    def smoothed_rank_panel(self) -> pn.Column:
        """The blog post's smoothed rank (ApproxNDCG)."""
        return pn.Column(
            pn.pane.Markdown(
                "## The smoothed rank: ApproxNDCG\n"
                "The blog post's smoothed position π̂_i = 1 + Σ_(j≠i) σ(γ(f_j − f_i)) in place of the position in "
                "NDCG gives the loss 1 − Σ_i (2^y_i − 1) / log2(1 + π̂_i) / IDCG (Qin, Liu & Li 2010). Larger γ "
                "follows the exact step more closely, but the loss is non-convex and flat once the pair's "
                "probability is near 0 or 1, in the right order or the wrong one."),
            side_by_side([self._smoothed_table], [self._smoothed]), sizing_mode="stretch_width")

    def ties_panel(self) -> pn.Column:
        """Rao–Kupper's and Davidson's win, tie and loss probabilities against the score difference."""
        controls = pn.Column(
            BoundedInput(self, "theta", label="θ (Rao–Kupper)", css_classes=["cofiviz-theta"]),
            BoundedInput(self, "nu", label="ν (Davidson)", css_classes=["cofiviz-nu"]),
            pn.Param(self.param, parameters=["tie_range"], show_name=False,
                     widgets={"tie_range": {"type": pn.widgets.FloatSlider, "name": "Δf range"}},
                     sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
        return pn.Column(
            pn.pane.Markdown(
                "## Ties: Rao–Kupper and Davidson extensions of Bradley–Terry\n"
                "With π = exp(f) and Δf = f_i − f_j. Rao–Kupper: P(i ≻ j) = π_i / (π_i + θ π_j), "
                "P(tie) = (θ² − 1) π_i π_j / ((π_i + θ π_j)(π_j + θ π_i)). Davidson: "
                "P(i ≻ j) = π_i / (π_i + π_j + ν √(π_i π_j)), P(tie) = ν √(π_i π_j) / (same). "
                "θ = 1 or ν = 0 is Bradley–Terry, where equal ratings carry no information and are dropped."),
            side_by_side([controls, self._ties_table], [self._ties]), sizing_mode="stretch_width")

    def plackett_luce_panel(self) -> pn.Column:
        """The Plackett–Luce loss of a rated list you edit, with Breslow's or Efron's ties."""
        controls = pn.Param(self.param, parameters=["pl_grades", "pl_scores", "pl_ties", "pl_moving"],
                            show_name=False,
                            widgets={"pl_grades": {"type": pn.widgets.TextInput, "name": "Ratings of A..F",
                                                   "css_classes": ["cofiviz-pl-grades"]},
                                     "pl_scores": {"type": pn.widgets.TextInput, "name": "Scores of A..F",
                                                   "css_classes": ["cofiviz-pl-scores"]},
                                     "pl_ties": {"type": pn.widgets.RadioButtonGroup, "name": "Ties"},
                                     "pl_moving": {"type": pn.widgets.RadioButtonGroup, "name": "Moving item"}},
                            sizing_mode="stretch_width")
        return pn.Column(
            pn.pane.Markdown(
                "## Plackett–Luce: the listwise loss of one rated list\n"
                "P(1 ≻ 2 ≻ … ≻ M) = Π_i exp(f_i) / Σ_(j ≥ i) exp(f_j) (Luce 1959, Plackett 1975); the loss is "
                "its negative logarithm, with equal ratings treated by Breslow's or Efron's rule."),
            side_by_side([controls], [self._pl_error, self._pl, self._pl_text]), sizing_mode="stretch_width")

    def __panel__(self):
        shapes_tab = pn.Column(self.surrogates_panel(), self.bound_panel(), self.gapfm_panel(),
                               self.smoothed_rank_panel(), sizing_mode="stretch_width")
        ties_tab = pn.Column(self.ties_panel(), self.plackett_luce_panel(), sizing_mode="stretch_width")
        # dynamic: a tab's plots are rendered when it is first shown, so the first view costs what it did
        # before the second tab existed
        return pn.Tabs(("Surrogates & bounds", shapes_tab), ("Ties & Plackett–Luce", ties_tab), dynamic=True,
                       sizing_mode="stretch_width")
