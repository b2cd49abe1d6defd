"""Leaderboards beyond the papers: every registered model, its settings chosen on validation, on MovieLens 1M.

``ml1m``       the LCR protocol on MovieLens 1M: N = 10, 20, 50 training and 10 validation ratings per user, the
               rest tested, users with fewer than N + 20 ratings dropped (``lcr-weak``).
``ml1m-weak``  CofiRank's weak generalization on MovieLens 1M: N = 10, 20, 50 given ratings per user, users with
               fewer than N + 10 ratings dropped (the same users as ``cofirank-weak``), with 5 of each user's
               held-out ratings kept as validation to choose the settings on and the rest tested.

Each model is fitted at :data:`N_SETTINGS` settings: its defaults, then draws from its ``search_space`` with a
generator seeded by the model's name (:func:`settings`), so the leaderboard is the same on every machine and
every cell can be recomputed bit for bit. Iterative models run at most :data:`MAX_ITER` iterations, early-stop on
validation NDCG@10 (patience :data:`PATIENCE`) and keep their best iterate; the setting with the best validation score averaged over the
three seeds is reported on test, for each metric, with the paired tests of the best model against every other.
No paper printed numbers on MovieLens 1M: these rows are the first comparison of the methods there. Their
per-user test values (tens of megabytes) do not ship; the table's paired tests do.
"""

from __future__ import annotations

import zlib

from ..models import available_models, baseline_models, get_model_class
from ..protocols import OFFERED
from ..search.space import draw_settings
from .spec import Method, Reproduction, register

__all__ = ["N_SETTINGS", "PATIENCE", "MAX_ITER", "HEAVY_MAX_ITER", "settings", "leaderboard_methods"]

#: the settings each model is fitted at: its defaults and N_SETTINGS - 1 draws from its search space
N_SETTINGS = 3
#: the early-stopping patience of the iterative models (iterations without a better validation NDCG@10)
PATIENCE = 5
#: iterations at most (fewer where a model's default is fewer): one fit of the slowest models on MovieLens 1M
#: takes seconds to a minute per iteration
MAX_ITER = 30
#: iterations at most of a heavy model (``Model.scale.heavy``, the collaborative Gaussian processes), fitted at its
#: defaults only: each EM iteration on MovieLens 1M multiplies 3,706 × 3,706 matrices and factors one in
#: fixed-order numba kernels (minutes on one core), so that three settings at 30 iterations would take days
HEAVY_MAX_ITER = 5


def settings(model: str, n: int = N_SETTINGS) -> list[dict]:
    """The settings ``model`` is fitted at: ``{}`` (its defaults), then draws from its ``search_space``.

    The draws come from ``numpy.random.default_rng(crc32(model))``, rounded to three significant digits; a
    draw equal to an earlier one is skipped, and a space with fewer than ``n`` settings gives all it has.

    Parameters
    ----------
    model : str
        A registered model name.
    n : int
        How many settings at most, the defaults included.

    Returns
    -------
    list of dict
        Parameter dicts (the first one empty: the defaults).
    """
    klass = get_model_class(model)
    space = dict(getattr(klass, "search_space", {}) or {})
    return draw_settings(space, {k: klass.param[k].default for k in space}, n, zlib.crc32(model.encode()))


def leaderboard_methods() -> list[Method]:
    """One :class:`Method` per registered model (the baselines last), each over its :func:`settings`."""
    baselines = baseline_models()
    names = [m for m in available_models() if m not in baselines] + baselines

    def method(m: str) -> Method:
        klass = get_model_class(m)
        heavy = klass.scale.heavy
        cap = min(HEAVY_MAX_ITER if heavy else MAX_ITER, int(klass.param["max_iter"].default))
        # every setting, the defaults included, under the parameters the search space belongs to
        fixed = {"max_iter": cap, "patience": PATIENCE, "valid_metric": "ndcg@10", **klass.search_holds}
        return Method(klass.display_name(), m, None, fixed, settings(m, 1 if heavy else N_SETTINGS),
                      quick={"max_iter": 2})

    return [method(m) for m in names]


def _heavy_notes() -> list[str]:
    """What the notes say of the heavy models (``Model.scale.heavy``), in a sentence (none without one)."""
    heavy = [get_model_class(m) for m in available_models() if get_model_class(m).scale.heavy]
    if not heavy:
        return []
    names = [k.display_name() for k in heavy]
    prose = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    why = "; ".join(dict.fromkeys(k.scale.why for k in heavy))
    return [f"{prose} run at their defaults only, for at most {HEAVY_MAX_ITER} iterations: {why} (3,706 items on "
            f"MovieLens 1M, in fixed-order kernels), minutes per iteration on one core."]


_NOTES = [
    "Every registered model at its defaults and at two settings drawn from its search space (seeded by the model's "
    "name, so the same everywhere); the setting with the best validation score averaged over the three seeds is "
    "reported on test, for each metric. Iterative models run at most 30 iterations (fewer where their default is "
    "fewer), early-stop on validation NDCG@10 (patience 5) and keep their best iterate.",
    *_heavy_notes(),
    "GPOR runs with fixed hyper-parameters (lengthscale, noise, thresholds halfway between the rating values), the "
    "form its search space draws from; its default, the hyper-parameters learned by evidence, is in cofirank-table3.",
    "MovieLens 1M (1,000,209 ratings of 3,706 movies by 6,040 users; cofiviz.datasets.movielens_1m); no paper "
    "printed numbers on it, so there is no paper column.",
]

register(Reproduction(
    "ml1m", "Leaderboard: every model, settings chosen on validation, LCR protocol on MovieLens 1M",
    "cofiviz", None, "lcr-weak", "n_train", [10, 20, 50], [0, 1, 2], ["ndcg@10", "ap", "err@10"],
    leaderboard_methods(), selection="per_metric", dataset="movielens-1m", ship_per_user=False,
    notes=["The LCR protocol: N training + 10 validation ratings per user, the rest tested; users with fewer than "
           "N + 20 ratings dropped.", *_NOTES]))

register(Reproduction(
    "ml1m-weak", "Leaderboard: every model, settings chosen on validation, CofiRank's weak generalization on "
                 "MovieLens 1M",
    "cofiviz", None, "weak", "n_train", [10, 20, 50], [0, 1, 2], ["ndcg@10", "ap", "err@10"],
    leaderboard_methods(), selection="per_metric", dataset="movielens-1m", ship_per_user=False,
    protocol_params=dict(OFFERED["weak"].fixed),
    notes=["CofiRank's weak generalization: N given ratings per user, users with fewer than N + 10 ratings dropped "
           "(as cofirank-weak); 5 of each user's held-out ratings are the validation part the settings are chosen "
           "on, the rest (at least 5) are tested. CofiRank tuned nothing; a leaderboard of tuned models needs "
           "ratings to tune on.", *_NOTES]))
