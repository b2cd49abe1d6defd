"""Recommendations: one MovieLens user's ratings beside each trained model's top-N, with titles.

Every model is trained once per server process on all of MovieLens 100K (lazily, on first use, and
shared read-only between sessions through ``pn.cache``: a trained model on fixed data never changes).
For each list the page shows how strongly it follows item popularity: the mean popularity percentile
of the recommended items (100 = the most-rated item) and the Spearman correlation between the
model's scores over all items and the items' number of ratings (1 = ranks purely by popularity, as
PopRec does). ``panel serve apps/recommendations.py`` serves it; in JupyterLab,
``Recommendations()`` shows it inline.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param

from .overview import load_dataset

__all__ = ["Recommendations", "trained_model", "popularity_lean", "RECOMMENDERS", "warm"]

DATA = "MovieLens 100K"
#: model name -> parameters for the whole-MovieLens fit (quick ones only; others are added when registered)
RECOMMENDERS = {"poprec": {}, "itemmean": {}, "regsvd": {"max_iter": 30, "seed": 0}}


def _available() -> list[str]:
    from ._shared import model_names

    names = set(model_names())
    return [m for m in RECOMMENDERS if m in names]


@pn.cache(max_items=8)
def trained_model(name: str):
    """Model ``name`` fitted on all of MovieLens 100K, once per process (read-only afterwards)."""
    from ..models.registry import get_model_class

    model = get_model_class(name)(**RECOMMENDERS.get(name, {}))
    return model.fit(load_dataset(DATA))


def popularity_lean(model, user: int, items: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """``(mean popularity percentile of items, Spearman(model scores of user over all items, counts))``."""
    pct = pd.Series(counts).rank(pct=True).to_numpy() * 100.0
    all_items = np.arange(len(counts))
    scores = model.score(np.full(len(counts), user), all_items)
    rho = pd.Series(scores).corr(pd.Series(counts.astype(float)), method="spearman")
    return float(pct[items].mean()) if len(items) else float("nan"), float(rho)


def warm() -> None:
    """Train every recommender once (called by the server's warm-up)."""
    for name in _available():
        trained_model(name)


class Recommendations(pn.viewable.Viewer):
    """A MovieLens user's ratings and each model's top-N side by side, with their popularity lean."""

    user = param.Integer(default=1, bounds=(1, None), doc="MovieLens user id (1 … 943).")
    n = param.Integer(default=10, bounds=(1, 50), doc="Length of each list.")

    def __init__(self, **params):
        super().__init__(**params)
        self._error = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._ratings_view = pn.Column(sizing_mode="stretch_width")
        self._lists = pn.Row(sizing_mode="stretch_width")
        self._refresh()

    def _show_error(self, msg: str | None):
        self._error.object = msg or ""
        self._error.visible = bool(msg)

    @param.depends("user", "n", watch=True)
    def _refresh(self):
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
        self._ratings_view.objects = [
            pn.pane.Markdown(f"### User {self.user}: {len(mine)} ratings, mean {mine['rating'].mean():.2f}"),
            pn.pane.DataFrame(mine.head(25), index=False, sizing_mode="stretch_width", max_rows=25,
                              css_classes=["cofiviz-user-ratings"]),
        ]
        cards = []
        for name in _available():
            try:
                model = trained_model(name)
                items, scores = model.recommend(u, k=self.n)
                pct, rho = popularity_lean(model, u, items, counts)
            except Exception as exc:  # one model failing leaves the others on the page
                cards.append(pn.pane.Alert(f"{name}: {exc}", alert_type="warning"))
                continue
            df = pd.DataFrame({"#": np.arange(1, len(items) + 1), "title": titles[items],
                               "ratings of item": counts[items]})
            cards.append(pn.Column(
                pn.pane.Markdown(f"#### {type(model).__name__}\nmean popularity percentile **{pct:.0f}**, "
                                 f"Spearman with popularity **{rho:+.2f}**"),
                pn.pane.DataFrame(df, index=False, sizing_mode="stretch_width", css_classes=[f"cofiviz-top-{name}"]),
                sizing_mode="stretch_width"))
        self._lists.objects = cards

    def __panel__(self):
        controls = pn.Param(self.param, parameters=["user", "n"], show_name=False,
                            widgets={"user": {"type": pn.widgets.IntInput, "css_classes": ["cofiviz-user"]},
                                     "n": pn.widgets.IntSlider}, sizing_mode="stretch_width")
        intro = pn.pane.Markdown(
            "Each model is trained once on all of MovieLens 100K; the lists leave out what the user rated. "
            "*Popularity percentile*: 100 = the most-rated movie. *Spearman*: rank correlation of the model's "
            "scores for this user with the movies' number of ratings over all movies.")
        return pn.Column(self._error, pn.Row(pn.Column(controls, intro, self._ratings_view, width=420),
                                             self._lists, sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")
