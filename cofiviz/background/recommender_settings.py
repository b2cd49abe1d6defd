"""MovieLens 100K's settings of every model for the recommendations page, chosen once by a search and shipped.

:func:`ship_settings` (``python -m cofiviz.background.recommender_settings --ship``) tunes each model as the page's
pool would (:func:`cofiviz.search.tuning.tune`, :data:`BUDGET` seconds, seed 0, a seeded tenth of each user's
ratings held out), fits the choice on all the ratings to time it, and writes :data:`SETTINGS_FILE` (package data).
:func:`shipped_settings` reads it for :mod:`.recommenders`, whose fresh server then spends on each model only its
fit. The trials a budget allows depend on the machine; the choice of a given number of trials does not
(``tune(..., trials=...)`` repeats it to the last bit), and each entry's ``score`` is what the chosen setting
scores on the held-out tenth, which the suite recomputes for the cheap models. Each entry names every parameter it
was searched with, so an entry searched under another default (GCR's and LCR's, searched with fixed gradient steps)
fits as it was searched.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import time
from pathlib import Path

from ..util._version import __version__
from ..util.jsonable import jsonable
from ..models import available_models, make_model
from ..search.tuning import tune
from .offered import load_dataset

__all__ = ["DATA", "BUDGET", "SETTINGS_FILE", "shipped_settings", "settings_digest", "ship_settings"]

#: the data set the settings are for (the recommendations page's default)
DATA = "MovieLens 100K"
#: seconds of tuning per model (the page's own searches take ``$COFIVIZ_RECOMMENDER_BUDGET`` instead)
BUDGET = 30.0
#: the shipped settings
SETTINGS_FILE = Path(__file__).with_name("recommender_settings.json")


def shipped_settings(path: str | Path = SETTINGS_FILE) -> dict:
    """MovieLens 100K's shipped settings: model name -> ``{"params", "trials", "metric", "score",
    "fit_seconds", "kept_reference"}`` (``score``: the chosen setting's validation value in the search;
    ``fit_seconds``: its fit on all the ratings where it was shipped; ``kept_reference``: the search kept its
    reference setting, the defaults). ``{}`` when the file is absent."""
    path = Path(path)
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        return {}
    return _read_settings(str(path), stamp)["models"]


@functools.lru_cache(maxsize=4)
def _read_settings(path: str, stamp: int) -> dict:
    return json.loads(Path(path).read_text())


def settings_digest(path: Path = SETTINGS_FILE) -> str:
    """A short digest of the shipped settings, so that new settings train into a new folder."""
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()[:8]
    except FileNotFoundError:
        return "none"


def ship_settings(names=None, budget: float = BUDGET, path: str | Path = SETTINGS_FILE, log=print) -> dict:
    """Search each model's settings on MovieLens 100K and write the choices to ``path`` (:data:`SETTINGS_FILE`).

    Each model of ``names`` (default: every registered one) is tuned as :func:`.recommenders.train_one` would tune it
    (:func:`cofiviz.search.tuning.tune`, ``budget`` seconds, seed 0, a held-out tenth of each user's ratings),
    then fitted on all the ratings with the choice, whose seconds order the pool's training (:func:`.recommenders.ordered`).
    The entries of other models already in ``path`` are kept. The trials a budget allows depend on the machine;
    the choice of a given number of trials does not (``tune(..., trials=...)`` repeats it to the last bit), and
    ``score`` is what the chosen setting scores on the held-out tenth, which the suite recomputes.

    Returns
    -------
    dict
        The file's content.
    """
    path = Path(path)
    ratings = load_dataset(DATA)
    content = json.loads(path.read_text()) if path.is_file() else {"models": {}}
    names = sorted(available_models() if names is None else names)
    for name in names:
        model = make_model(name)
        tuning = tune(model, ratings, None, budget=budget, seed=0, refit=False)
        t0 = time.perf_counter()
        model.fit(ratings)
        seconds = time.perf_counter() - t0
        content["models"][name] = jsonable({
            "params": model.get_params(), "trials": len(tuning.trials), "metric": tuning.metric,
            "score": tuning.trials[tuning.chosen]["score"], "fit_seconds": round(seconds, 2),
            "kept_reference": tuning.check["kept_reference"]})
        if log is not None:
            log(f"{name}: {len(tuning.trials)} trials, validation {tuning.metric} "
                f"{tuning.trials[tuning.chosen]['score']:.4f}, fit {seconds:.1f} s")
    content.update(data=DATA, seed=0, budget=float(budget), cofiviz=__version__,
                   command="python -m cofiviz.background.recommender_settings --ship")
    content["models"] = dict(sorted(content["models"].items()))
    path.write_text(json.dumps(content, indent=1, sort_keys=False) + "\n")
    _read_settings.cache_clear()
    return content


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m cofiviz.background.recommender_settings",
                                 description="Ship the recommendations page's MovieLens 100K settings.")
    ap.add_argument("--ship", action="store_true", required=True,
                    help=f"search each model's settings and write them to {SETTINGS_FILE.name}")
    ap.add_argument("--models", nargs="+", default=None, help="models (default: every registered one)")
    ap.add_argument("--budget", type=float, default=BUDGET, help=f"search seconds per model (default {BUDGET:g})")
    args = ap.parse_args(argv)
    ship_settings(args.models, budget=args.budget)


if __name__ == "__main__":
    main()
