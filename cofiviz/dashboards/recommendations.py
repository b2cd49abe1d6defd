"""Recommendations: one MovieLens user's ratings beside every model's top-N, how much each list leans on
popularity, and how much the lists overlap, on MovieLens 100K (the default) or MovieLens 1M.

The models come from the server's :func:`~.recommenders.pool` of the chosen data set: every registered model,
tuned within a budget and trained once, in a background process (how, for each data set: :mod:`.recommenders`).
MovieLens 1M's models are trained only once the page is switched to it, after MovieLens 100K's. The page appears
at once with the models ready so far and fills in as the others finish (a served page checks every
:data:`POLL_MS` milliseconds; inline in a notebook, running the cell again shows the models trained since).

The page speaks in the data set's ids: a model trained on part of the data (a sample of users, or quick mode's
subset of MovieLens 1M) is asked about the chosen user by id, its items are named by their titles in the whole
data set, and every list leaves out what the user rated in the whole data set.

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

from ..background.offered import load_dataset
from ..background.recommenders import (DATA, ML1M, OFFERED, QUICK_ITEMS, QUICK_PER_USER, TUNE_USERS, RecommenderPool,
                                       pool)
from ..models.registry import get_model_class
from ._shared import BoundedInput
from .theme import HEADINGS_CSS, alert, flow, side_by_side

__all__ = ["Recommendations", "popularity_lean", "list_overlap", "POLL_MS"]

#: how often the page looks for newly trained models (milliseconds)
POLL_MS = 2000


def popularity_lean(model, user: int, items: np.ndarray, counts: np.ndarray,
                    to_full: np.ndarray | None = None) -> tuple[float, float]:
    """``(mean popularity percentile of items, Spearman(model scores of user over all its items, counts))``.

    The percentile of an item is the share of items with at most its number of ratings (ties share the
    mean rank), times 100.

    Parameters
    ----------
    model : Model
        Fitted.
    user : int
        A user index of the model.
    items : array of int
        The list, as item indices of the model.
    counts : array of int
        The number of ratings of each item of the data set.
    to_full : array of int, optional
        The data set's index of each item of the model, when the model was trained on a subset of the items
        (default: the model's items are the data set's).
    """
    pct = pd.Series(counts).rank(pct=True).to_numpy() * 100.0
    to_full = np.arange(len(counts)) if to_full is None else np.asarray(to_full)
    scores = model.score(np.full(len(to_full), user), np.arange(len(to_full)))
    rho = pd.Series(scores).corr(pd.Series(counts[to_full].astype(float)), method="spearman")
    return float(pct[to_full[items]].mean()) if len(items) else float("nan"), float(rho)


def _index_of(ids: np.ndarray, wanted) -> np.ndarray:
    """The positions in ``ids`` of each of ``wanted`` (-1 where absent), ids compared as text."""
    return pd.Index(np.asarray(ids).astype(str)).get_indexer(np.asarray(wanted).astype(str))


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


def _params_text(name: str, meta: dict) -> str:
    """The settings a model was trained with, in words: those that differ from its defaults (``"rank 20 · reg
    0.0531 · center: no"``), or ``"its defaults"``."""
    try:
        defaults = get_model_class(name)().get_params()
    except Exception:  # a model this process does not know: every setting is shown
        defaults = {}
    words = []
    for k, v in meta.get("params", {}).items():
        if k in ("seed", "verbose", "valid_metric", "patience", "tol", "n_jobs") or v is None or defaults.get(k) == v:
            continue
        if isinstance(v, bool):
            words.append(f"{k.replace('_', ' ')}: {'yes' if v else 'no'}")
        else:
            words.append(f"{k.replace('_', ' ')} {v:.3g}" if isinstance(v, float) else f"{k.replace('_', ' ')} {v}")
    text = " · ".join(words) or "its defaults"
    return text if len(text) < 160 else text[:157] + "…"


class Recommendations(pn.viewable.Viewer):
    """A MovieLens user's ratings and every model's top-N side by side, with their popularity lean and overlap.

    Parameters
    ----------
    models : RecommenderPool or dict of str to RecommenderPool, optional
        Where the trained models come from: a pool (for its own data set) or one pool per data set label, started
        by the caller. A data set without one uses the process's :func:`~.recommenders.pool` of that data set,
        started when the page first shows it.
    """

    data = param.Selector(default=DATA, objects=list(OFFERED), doc="The data set the models are trained on.")
    user = param.Integer(default=1, bounds=(1, None), doc="MovieLens user id (1 … 943 in 100K, 1 … 6040 in 1M).")
    n = param.Integer(default=10, bounds=(1, 50), doc="Length of each list.")

    def __init__(self, models: RecommenderPool | dict | None = None, **params):
        super().__init__(**params)
        if isinstance(models, RecommenderPool):
            models = {models.data: models}
        self._pools: dict[str, RecommenderPool] = dict(models or {})
        # every pane is made once and later only updated, so that a view shown in a notebook fills in
        # through its comm as well as a served page does
        self._error = alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._progress = pn.pane.Markdown("", css_classes=["cofiviz-recommenders-progress"],
                                          sizing_mode="stretch_width")
        self._ratings_title = pn.pane.Markdown("", stylesheets=[HEADINGS_CSS])
        self._ratings_table = pn.pane.DataFrame(pd.DataFrame(), index=False, sizing_mode="stretch_width", max_rows=25,
                                                css_classes=["cofiviz-user-ratings"])
        # the plots are drawn anew at each refresh (not streamed into): the number of models shown falls when the
        # data set changes, and bars streamed fewer rows than before failed in the browser ("Size mismatch")
        self._lean_pane = pn.pane.HoloViews(self._lean_plot(self._lean_frame()), linked_axes=False)
        self._overlap_pane = pn.pane.HoloViews(self._overlap_plot(list_overlap({})), linked_axes=False)
        self._plots = flow(self._lean_pane, self._overlap_pane)  # side by side, wrapped when narrow
        self._cards: dict[str, tuple] = {}      # model name -> (heading, table): shared by the data sets
        self._lists = pn.FlexBox(sizing_mode="stretch_width")
        self._shown: tuple = ()
        self.lean = self._lean_frame()
        self.overlap = list_overlap({})
        self._poller = None
        self._status = None
        self._on_data()

    @property
    def pool(self) -> RecommenderPool:
        """The pool of the data set shown (the process's, started, the first time it is asked for)."""
        if self.data not in self._pools:
            self._pools[self.data] = pool(data=self.data)
        return self._pools[self.data]

    @property
    def _served(self) -> bool:
        """True in a page of a Panel server (which polls the pool), False inline in a notebook."""
        return pn.state.curdoc is not None and pn.state.curdoc.session_context is not None

    @staticmethod
    def _lean_frame(rows=()) -> pd.DataFrame:
        return pd.DataFrame(list(rows), columns=["model", "popularity percentile", "spearman"])

    @param.depends("data", watch=True)
    def _on_data(self):
        """Show the chosen data set's models: its pool (the process's started, or queued, the first time), its
        cards, a poller while it trains."""
        try:
            models = self.pool
        except Exception as exc:  # a pool that cannot start: said in the page
            self._show_error(f"Could not start training the models on {self.data}: {exc}")
            return
        # each model's card is made once and only shown or hidden after: the page keeps its layout when the data
        # set changes, and only the cards' contents are updated
        for name in models.names:
            if name not in self._cards:
                head = pn.pane.Markdown(f"#### {name}\n*waiting to be trained…*", width=330, stylesheets=[HEADINGS_CSS])
                table = pn.pane.DataFrame(pd.DataFrame(), index=False, css_classes=[f"cofiviz-top-{name}"],
                                          width=330, visible=False)
                self._cards[name] = (head, table)
                self._lists.append(pn.Column(head, table, width=340))
        for card in self._lists.objects:
            card.visible = card.objects[0] in (self._cards[name][0] for name in models.names)
        self._shown = ()
        self._refresh()
        if not self._status.done and self._served and self._poller is None:
            self._poller = pn.state.add_periodic_callback(self._poll, period=POLL_MS)

    # ------------------------------------------------------------------ progress
    def _how(self) -> str:
        models = self.pool
        if models.quick:
            return (f"a few iterations at their defaults, on the ratings of the {QUICK_ITEMS} most-rated movies "
                    f"(at most {QUICK_PER_USER} a user)")
        if models.data == ML1M:
            return (f"each tuned for {models.budget:g} s on a seeded sample of {TUNE_USERS:,} users (a tenth of "
                    f"their ratings held out), then refitted on all of MovieLens 1M; CGPR, CGPOR and CofiRank are "
                    f"trained more cheaply, as their cards say")
        return ("each fitted on all the ratings with the settings that a search on a held-out tenth of them chose "
                "(shipped with cofiviz, so that no model is searched here)")

    def _progress_text(self, st) -> str:
        total = len(self.pool.names)
        how = self._how()
        failed = "".join(f"\n- **{name}** failed: {msg}" for name, msg in st.failed.items())
        if not st.pending:
            return f"**All {total} models are trained** on {self.data} ({how}).{failed}"
        if st.queued:
            return (f"{len(st.ready)} of {total} models are trained on {self.data}; the others are trained once "
                    f"{DATA}'s models are done ({how}). Still to come: {', '.join(st.pending)}.{failed}")
        if not st.alive:
            return (f"{len(st.ready)} of {total} models are trained on {self.data}; the training process has ended "
                    f"(still missing: {', '.join(st.pending)}).{failed}")
        now = f" Training **{st.training}** now." if st.training else ""
        later = ("the others appear here as they finish" if self._served else
                 "run this cell again to show the ones trained since")
        return (f"{len(st.ready)} of {total} models are trained on {self.data} ({how}); {later}.{now} "
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
    def _card(self, name: str, r, user_id: str, counts: np.ndarray, titles: np.ndarray, rated: np.ndarray):
        """``(label, items of the data set, lean row, heading, table)`` of model ``name`` for the user; raises
        when the model cannot recommend."""
        model = self.pool.model(name)
        meta = self.pool.meta(name)
        label = meta.get("label", meta.get("class", name))
        same = len(model.train_.item_ids) == r.n_items and np.array_equal(model.train_.item_ids, r.item_ids)
        to_full = np.arange(r.n_items) if same else _index_of(r.item_ids, model.train_.item_ids)
        where = np.flatnonzero(model.train_.user_ids.astype(str) == user_id)
        if len(where) == 0:
            return label, None, None, (f"#### {label}\n*user {user_id} is not among the "
                                       f"{model.train_.n_users:,} users this model was trained on*"), None
        u = int(where[0])
        seen = rated if same else _index_of(model.train_.item_ids, r.item_ids[rated])
        items = model.recommend(u, self.n, exclude_seen=False, exclude=seen[seen >= 0])[0]
        pct, rho = popularity_lean(model, u, items, counts, to_full)
        full = to_full[items]
        seconds = meta.get("seconds", float("nan"))
        if meta.get("shipped"):
            tuned = f"fitted in {seconds:.0f} s"
        else:
            tuned = (f"tuned: {meta['trials']} trial(s)" if meta.get("tuned") else "defaults") + f", {seconds:.0f} s"
        note = f"; {meta['note']}" if meta.get("note") else ""
        head = (f"#### {label}\n<small>{tuned}{note}; {_params_text(name, meta)}</small>\n\n"
                f"popularity percentile **{pct:.0f}**, Spearman with popularity **{rho:+.2f}**")
        table = pd.DataFrame({"#": np.arange(1, len(full) + 1), "title": titles[full], "ratings": counts[full]})
        return label, full, {"model": label, "popularity percentile": pct, "spearman": rho}, head, table

    @param.depends("user", "n", watch=True)
    def _refresh(self):
        models = self.pool
        self._status = st = models.status()
        try:
            r = load_dataset(self.data)
        except Exception as exc:
            self._show_error(f"Could not load {self.data}: {exc}")
            return
        ids = r.user_ids
        user_id = str(self.user)
        where = np.flatnonzero(ids.astype(str) == user_id)
        if len(where) == 0:
            self._show_error(f"User {self.user} is not in {self.data} (ids run from {ids.min()} to {ids.max()}).")
            self._progress.object = self._progress_text(st)
            return
        self._show_error(None)
        u = int(where[0])
        titles = (r.item_info["title"].to_numpy() if r.item_info is not None and "title" in r.item_info
                  else r.item_ids.astype(str))
        counts = r.item_counts()
        sl = r.user_slice(u)
        rated = r.items[sl]
        mine = pd.DataFrame({"title": titles[rated], "rating": r.ratings[sl], "ratings of item": counts[rated]})
        mine = mine.sort_values(["rating", "ratings of item"], ascending=False).reset_index(drop=True)
        lists, lean, cards = {}, [], {}
        for name in st.ready:
            try:
                label, items, row, head, table = self._card(name, r, user_id, counts, titles, rated)
            except Exception as exc:  # one model failing leaves the others on the page
                cards[name] = (f"#### {name}\n**could not recommend:** {exc}", None)
                continue
            cards[name] = (head, table)
            if items is not None:
                lists[label] = items
                lean.append(row)
        for name in st.pending:
            doing = "training now" if name == st.training else "waiting to be trained"
            cards[name] = (f"#### {name}\n*{doing}…*", None)
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
            self._lean_pane.object = self._lean_plot(self.lean)
            self._overlap_pane.object = self._overlap_plot(self.overlap)
            self._progress.object = self._progress_text(st)
        self._shown = tuple(st.ready)

    def _lean_plot(self, data):
        df = data.sort_values("popularity percentile")
        return hv.Bars(df, "model", ["popularity percentile", "spearman"]).opts(
            responsive=True, height=300, invert_axes=True, ylim=(0, 100), color="#4c72b0",
            title=f"Popularity lean of user {self.user}'s top-{self.n} (100 = most-rated)",
            tools=["hover"], toolbar=None)

    def _overlap_plot(self, data):
        heat = hv.HeatMap(data, ["a", "b"], ("jaccard", "Jaccard overlap")).opts(
            responsive=True, height=440, cmap="Blues", clim=(0, 1), colorbar=True, xrotation=45,
            title=f"Overlap of the top-{self.n} lists", xlabel="", ylabel="", tools=["hover"], toolbar=None)
        # light text on the dark half of the colour map, dark text on the light half
        marked = data.assign(text=data["jaccard"].map(lambda v: f"{v:.1f}"),
                             ink=np.where(data["jaccard"] > 0.5, "white", "black"))
        labels = hv.Labels(marked, ["a", "b"], ["text", "ink"]).opts(text_font_size="8pt", text_color="ink")
        return heat * labels

    def __panel__(self):
        controls = pn.Column(
            pn.Param(self.param, parameters=["data"], show_name=False,
                     widgets={"data": {"type": pn.widgets.Select, "css_classes": ["cofiviz-data"]}},
                     sizing_mode="stretch_width"),
            BoundedInput(self, "user", widget=pn.widgets.IntInput, label="User", css_classes=["cofiviz-user"]),
            pn.Param(self.param, parameters=["n"], show_name=False, widgets={"n": pn.widgets.IntSlider},
                     sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
        intro = pn.pane.Markdown(
            "Every model is trained once on the data set chosen (MovieLens 1M's the first time the page shows it, "
            "after MovieLens 100K's); the lists leave out what the user rated. "
            "*Popularity percentile*: 100 = the most-rated movie. *Spearman*: rank correlation of the model's "
            "scores for this user with the movies' number of ratings over all movies. *Overlap*: the Jaccard "
            "index of two lists, |A ∩ B| / |A ∪ B|.")
        return pn.Column(self._error, self._progress,
                         side_by_side([controls, intro, self._ratings_title, self._ratings_table],
                                      [self._plots, self._lists]),
                         sizing_mode="stretch_width")
