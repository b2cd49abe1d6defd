"""Recommendations: one MovieLens user's ratings beside every model's top-N, how much each list leans on
popularity, and how much the lists overlap.

The models come from the server's :func:`~.recommenders.pool`: every registered model, tuned within a budget
and trained on all of MovieLens 100K once, in a background process. The page appears at once with the models
ready so far and fills in as the others finish (a served page checks every :data:`POLL_MS` milliseconds; inline
in a notebook, running the cell again shows the models trained since).

Popularity lean of a list: the mean popularity percentile of its items (100 = the most-rated movie), and the
Spearman correlation between the model's scores for the user over all movies and the movies' numbers of
ratings (1 = ranks purely by popularity, as PopRec does). Overlap of two lists: their Jaccard index
``|A ∩ B| / |A ∪ B|``. ``panel serve apps/recommendations.py`` serves the page; in JupyterLab,
``Recommendations()`` shows it inline.
"""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the Bokeh backend so .opts works anywhere)
import numpy as np
import pandas as pd
import panel as pn
import param

from ._shared import load_dataset
from .recommenders import DATA, RecommenderPool, pool

__all__ = ["Recommendations", "popularity_lean", "list_overlap", "POLL_MS"]

#: how often the page looks for newly trained models (milliseconds)
POLL_MS = 2000
PLOT_WIDTH = 520


def popularity_lean(model, user: int, items: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """``(mean popularity percentile of items, Spearman(model scores of user over all items, counts))``.

    The percentile of an item is the share of items with at most its number of ratings (ties share the
    mean rank), times 100.
    """
    pct = pd.Series(counts).rank(pct=True).to_numpy() * 100.0
    all_items = np.arange(len(counts))
    scores = model.score(np.full(len(counts), user), all_items)
    rho = pd.Series(scores).corr(pd.Series(counts.astype(float)), method="spearman")
    return float(pct[items].mean()) if len(items) else float("nan"), float(rho)


def list_overlap(lists: dict[str, np.ndarray]) -> pd.DataFrame:
    """The Jaccard index ``|A ∩ B| / |A ∪ B|`` of every pair of lists (long form: ``a``, ``b``, ``jaccard``);
    two empty lists overlap fully."""
    rows = []
    sets = {name: set(np.asarray(items).tolist()) for name, items in lists.items()}
    for a, sa in sets.items():
        for b, sb in sets.items():
            union = len(sa | sb)
            rows.append({"a": a, "b": b, "jaccard": len(sa & sb) / union if union else 1.0})
    return pd.DataFrame(rows, columns=["a", "b", "jaccard"])


def _params_text(meta: dict) -> str:
    shown = {k: v for k, v in meta.get("params", {}).items()
             if k not in ("seed", "verbose", "valid_metric", "patience", "tol", "n_jobs")}
    text = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items())
    return text if len(text) < 160 else text[:157] + "…"


class Recommendations(pn.viewable.Viewer):
    """A MovieLens user's ratings and every model's top-N side by side, with their popularity lean and overlap.

    Parameters
    ----------
    models : RecommenderPool, optional
        Where the trained models come from (default: the process's :func:`~.recommenders.pool`, started).
    """

    user = param.Integer(default=1, bounds=(1, None), doc="MovieLens user id (1 … 943).")
    n = param.Integer(default=10, bounds=(1, 50), doc="Length of each list.")

    def __init__(self, models: RecommenderPool | None = None, **params):
        super().__init__(**params)
        self.pool = pool() if models is None else models
        # every pane is made once and later only updated, so that a view shown in a notebook fills in
        # through its comm as well as a served page does
        self._error = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._progress = pn.pane.Markdown("", css_classes=["cofiviz-recommenders-progress"],
                                          sizing_mode="stretch_width")
        self._ratings_title = pn.pane.Markdown("")
        self._ratings_table = pn.pane.DataFrame(pd.DataFrame(), index=False, sizing_mode="stretch_width", max_rows=25,
                                                css_classes=["cofiviz-user-ratings"])
        self._lean_pipe = hv.streams.Pipe(data=self._lean_frame())
        self._overlap_pipe = hv.streams.Pipe(data=list_overlap({}))
        self._plots = pn.Row(
            pn.pane.HoloViews(hv.DynamicMap(self._lean_plot, streams=[self._lean_pipe]), linked_axes=False),
            pn.pane.HoloViews(hv.DynamicMap(self._overlap_plot, streams=[self._overlap_pipe]), linked_axes=False))
        self._cards = {}
        for name in self.pool.names:
            head = pn.pane.Markdown(f"#### {name}\n*waiting to be trained…*", width=330)
            table = pn.pane.DataFrame(pd.DataFrame(), index=False, css_classes=[f"cofiviz-top-{name}"], width=330,
                                      visible=False)
            self._cards[name] = (head, table)
        self._lists = pn.FlexBox(*[pn.Column(head, table, width=340) for head, table in self._cards.values()],
                                 sizing_mode="stretch_width")
        self._shown: tuple = ()
        self.lean = self._lean_frame()
        self.overlap = list_overlap({})
        self._refresh()
        self._poller = None
        if not self._status.done and self._served:
            self._poller = pn.state.add_periodic_callback(self._poll, period=POLL_MS)

    @property
    def _served(self) -> bool:
        """True in a page of a Panel server (which polls the pool), False inline in a notebook."""
        return pn.state.curdoc is not None and pn.state.curdoc.session_context is not None

    @staticmethod
    def _lean_frame(rows=()) -> pd.DataFrame:
        return pd.DataFrame(list(rows), columns=["model", "popularity percentile", "spearman"])

    # ------------------------------------------------------------------ progress
    def _progress_text(self, st) -> str:
        total = len(self.pool.names)
        how = ("a few iterations at their defaults" if self.pool.quick else
               f"each tuned for {self.pool.budget:g} s on a held-out tenth of the ratings, then refitted on all")
        failed = "".join(f"\n- **{name}** failed: {msg}" for name, msg in st.failed.items())
        if not st.pending:
            return f"**All {total} models are trained** on all of MovieLens 100K ({how}).{failed}"
        if not st.alive:
            return (f"{len(st.ready)} of {total} models are trained; the training process has ended "
                    f"(still missing: {', '.join(st.pending)}).{failed}")
        now = f" Training **{st.training}** now." if st.training else ""
        later = ("the others appear here as they finish" if self._served else
                 "run this cell again to show the ones trained since")
        return (f"{len(st.ready)} of {total} models are trained ({how}); {later}.{now} "
                f"Still to come: {', '.join(st.pending)}.{failed}")

    def _poll(self):
        st = self.pool.status()
        if tuple(st.ready) != self._shown or st.done:
            self._refresh()
        else:
            self._progress.object = self._progress_text(st)
        if st.done and self._poller is not None:
            self._poller.stop()
            self._poller = None

    def _show_error(self, msg: str | None):
        self._error.object = msg or ""
        self._error.visible = bool(msg)

    # ------------------------------------------------------------------ content
    @param.depends("user", "n", watch=True)
    def _refresh(self):
        self._status = st = self.pool.status()
        try:
            r = load_dataset(DATA)
        except Exception as exc:
            self._show_error(f"Could not load MovieLens 100K: {exc}")
            return
        ids = r.user_ids
        where = np.flatnonzero(ids.astype(str) == str(self.user))
        if len(where) == 0:
            self._show_error(f"User {self.user} is not in MovieLens 100K (ids run from {ids.min()} to {ids.max()}).")
            return
        self._show_error(None)
        u = int(where[0])
        titles = (r.item_info["title"].to_numpy() if r.item_info is not None and "title" in r.item_info
                  else r.item_ids.astype(str))
        counts = r.item_counts()
        sl = r.user_slice(u)
        mine = pd.DataFrame({"title": titles[r.items[sl]], "rating": r.ratings[sl], "ratings of item": counts[r.items[sl]]})
        mine = mine.sort_values(["rating", "ratings of item"], ascending=False).reset_index(drop=True)
        lists, lean, cards = {}, [], {}
        for name in st.ready:
            try:
                model = self.pool.model(name)
                meta = self.pool.meta(name)
                items, _ = model.recommend(u, k=self.n)
                pct, rho = popularity_lean(model, u, items, counts)
            except Exception as exc:  # one model failing leaves the others on the page
                cards[name] = (f"#### {name}\n**could not recommend:** {exc}", None)
                continue
            label = meta.get("class", name)
            lists[label] = items
            lean.append({"model": label, "popularity percentile": pct, "spearman": rho})
            tuned = (f"tuned: {meta['trials']} trial(s)" if meta.get("tuned") else "defaults") + \
                f", {meta.get('seconds', float('nan')):.0f} s"
            cards[name] = (f"#### {label}\n<small>{tuned}; {_params_text(meta)}</small>\n\n"
                           f"popularity percentile **{pct:.0f}**, Spearman with popularity **{rho:+.2f}**",
                           pd.DataFrame({"#": np.arange(1, len(items) + 1), "title": titles[items],
                                         "ratings": counts[items]}))
        for name in st.pending:
            cards[name] = (f"#### {name}\n*{'training now' if name == st.training else 'waiting to be trained'}…*", None)
        for name, msg in st.failed.items():
            cards[name] = (f"#### {name}\n**failed:** {msg}", None)
        self.lean = self._lean_frame(lean)
        self.overlap = list_overlap(lists)
        with pn.io.hold():
            self._ratings_title.object = f"### User {self.user}: {len(mine)} ratings, mean {mine['rating'].mean():.2f}"
            self._ratings_table.object = mine.head(25)
            for name, (text, table) in cards.items():
                head, pane = self._cards[name]
                head.object = text
                if table is not None:
                    pane.object = table
                pane.visible = table is not None
            self._lean_pipe.send(self.lean)
            self._overlap_pipe.send(self.overlap)
            self._progress.object = self._progress_text(st)
        self._shown = tuple(st.ready)

    def _lean_plot(self, data):
        df = data.sort_values("popularity percentile")
        return hv.Bars(df, "model", ["popularity percentile", "spearman"]).opts(
            width=PLOT_WIDTH, height=300, invert_axes=True, ylim=(0, 100), color="#4c72b0", framewise=True,
            title=f"Popularity lean of user {self.user}'s top-{self.n} (100 = most-rated)",
            tools=["hover"], toolbar=None)

    def _overlap_plot(self, data):
        heat = hv.HeatMap(data, ["a", "b"], ("jaccard", "Jaccard overlap")).opts(
            width=PLOT_WIDTH, height=300, cmap="Blues", clim=(0, 1), colorbar=True, xrotation=45, framewise=True,
            title=f"Overlap of the top-{self.n} lists", xlabel="", ylabel="", tools=["hover"], toolbar=None)
        labels = hv.Labels(data.assign(text=data["jaccard"].map(lambda v: f"{v:.1f}")), ["a", "b"], "text").opts(
            text_font_size="8pt", text_color="black")
        return heat * labels

    def __panel__(self):
        controls = pn.Param(self.param, parameters=["user", "n"], show_name=False,
                            widgets={"user": {"type": pn.widgets.IntInput, "css_classes": ["cofiviz-user"]},
                                     "n": pn.widgets.IntSlider}, sizing_mode="stretch_width")
        intro = pn.pane.Markdown(
            "Every model is trained once on all of MovieLens 100K; the lists leave out what the user rated. "
            "*Popularity percentile*: 100 = the most-rated movie. *Spearman*: rank correlation of the model's "
            "scores for this user with the movies' number of ratings over all movies. *Overlap*: the Jaccard "
            "index of two lists, |A ∩ B| / |A ∪ B|.")
        return pn.Column(self._error, self._progress,
                         pn.Row(pn.Column(controls, intro, self._ratings_title, self._ratings_table, width=420),
                                pn.Column(self._plots, self._lists, sizing_mode="stretch_width"),
                                sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")
