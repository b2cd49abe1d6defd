"""Where a search's next setting comes from: seeded random draws, or Optuna's TPE with pruning and a stored study.

:func:`cofiviz.search.tune` runs the trials, keeps their per-user validation values and applies its
selection rule; a searcher only proposes the settings of the drawn trials (after the configured model and the
anchors), may stop a drawn trial early, and learns each trial's outcome.

``"random"``  :class:`RandomSearcher`: each parameter drawn independently from its distribution with a NumPy
              generator (Bergstra & Bengio, JMLR 2012); no pruning; nothing stored.
``"optuna"``  :class:`OptunaSearcher`: Optuna's tree-structured Parzen estimator (``TPESampler``, seeded;
              Bergstra, Bardenet, Bengio & Kégl, NeurIPS 2011) proposes each setting from the trials so far, and
              its ``MedianPruner`` stops a drawn trial whose validation score at an iteration is below the median
              of the earlier drawn trials at that iteration (once :data:`PRUNE_MIN_TRIALS` of them reached it,
              and not before :data:`PRUNE_WARMUP_ITERATIONS` iterations). With ``storage`` (an SQLite file) every trial, its
              per-user validation values included, is stored as it ends, and a later search with the same
              storage and the same model, settings and metric resumes: it starts from the stored trials and
              adds new ones. Optuna is an optional extra (``pip install "cofiviz[optuna]"``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..util.errors import ParameterError
from .space import contains, sample

__all__ = ["SEARCHERS", "RandomSearcher", "OptunaSearcher", "make_searcher", "PRUNE_MIN_TRIALS",
           "PRUNE_WARMUP_ITERATIONS"]

#: the searchers :func:`~cofiviz.search.tuning.tune` accepts
SEARCHERS = ("random", "optuna")
#: how many earlier drawn trials must have reached an iteration before the pruner may stop a trial there
PRUNE_MIN_TRIALS = 5
#: iterations every drawn trial runs before the pruner may stop it
PRUNE_WARMUP_ITERATIONS = 10
#: how many proposals of already tried settings the TPE searcher accepts in a row before it draws at random
_MAX_REPEATS = 50


class RandomSearcher:
    """Independent seeded draws from the search space; never stops a trial early."""

    name = "random"

    def __init__(self, space: dict, rng: np.random.Generator):
        self.space, self.rng = space, rng

    def resumed(self) -> list[dict]:
        return []

    def propose(self, tried: Callable[[dict], float | None]) -> dict:
        """A setting not tried yet (``tried`` gives a tried setting's score, None for a new one)."""
        drawn = sample(self.space, self.rng)
        while tried(drawn) is not None:
            drawn = sample(self.space, self.rng)
        return drawn

    def prune(self, value: float, iteration: int) -> bool:
        return False

    def record(self, trial: dict, values: np.ndarray | None, kind: str) -> None:
        pass


def _distributions(space: dict) -> dict:
    """Each dimension's Optuna distribution (:meth:`~.space.Dimension.optuna`)."""
    return {name: dist.optuna() for name, dist in space.items()}


def _plain(value: Any) -> Any:
    """``value`` as JSON can store it (NumPy scalars as Python ones, NaN as None)."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


class OptunaSearcher:
    """Optuna's seeded TPE sampler and median pruner, the study optionally stored in SQLite (module docstring).

    Parameters
    ----------
    space : dict
        The search space (:mod:`cofiviz.search.space` distributions).
    seed : int
        Seed of the sampler.
    direction : {"maximize", "minimize"}
    identity : dict
        What the stored study must match to be resumed (model, configured settings, metric, fixed parameters).
    storage : str or Path, optional
        An SQLite file; None keeps the study in memory.
    """

    name = "optuna"

    def __init__(self, space: dict, seed: int, direction: str, identity: dict, storage=None):
        try:
            import optuna
        except ImportError as exc:
            raise ParameterError('searcher="optuna" needs Optuna: pip install "cofiviz[optuna]"') from exc
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna, self.space, self.distributions = optuna, space, _distributions(space)
        url = None
        if storage is not None:
            path = Path(storage)
            if path.suffix not in (".db", ".sqlite", ".sqlite3"):
                raise ParameterError(f"storage must be an SQLite file ending in .db, .sqlite or .sqlite3, got "
                                     f"{str(storage)!r}")
            path.parent.mkdir(parents=True, exist_ok=True)
            url = f"sqlite:///{path.resolve()}"
        self.study = optuna.create_study(
            study_name=f"cofiviz-{identity['model']}", storage=url, load_if_exists=True, direction=direction,
            sampler=optuna.samplers.TPESampler(seed=seed),
            pruner=optuna.pruners.MedianPruner(n_startup_trials=0, n_warmup_steps=PRUNE_WARMUP_ITERATIONS,
                                               n_min_trials=PRUNE_MIN_TRIALS))
        identity = {k: _plain(v) for k, v in identity.items()}
        stored = self.study.user_attrs.get("cofiviz")
        if stored is None:
            self.study.set_user_attr("cofiviz", identity)
        elif stored != identity:
            differ = sorted(k for k in set(stored) | set(identity) if stored.get(k) != identity.get(k))
            raise ParameterError(f"the study stored in {storage} is a search of another setting (it differs in "
                                 f"{', '.join(differ)}); give another storage file to start a new search")
        self.current = None

    def resumed(self) -> list[dict]:
        """The stored trials, oldest first: each as ``{"trial": dict, "values": array or None, "kind": str}``."""
        out = []
        for t in sorted(self.study.get_trials(deepcopy=False), key=lambda t: t.number):
            mine = t.user_attrs.get("cofiviz_trial")
            if mine is None or t.state == self.optuna.trial.TrialState.RUNNING:
                continue
            values = t.user_attrs.get("cofiviz_values")
            trial = dict(mine)
            trial["score"] = float("nan") if trial.get("score") is None else trial["score"]
            out.append({"trial": trial, "kind": t.user_attrs.get("cofiviz_kind", "drawn"),
                        "values": None if values is None else np.array([np.nan if v is None else v for v in values],
                                                                      dtype=float)})
        return out

    def propose(self, tried: Callable[[dict], float | None]) -> dict:
        """TPE's next setting; one already tried is told its earlier score and another is asked for (after
        :data:`_MAX_REPEATS` of them in a row, a random draw)."""
        for _ in range(_MAX_REPEATS):
            trial = self.study.ask(self.distributions)
            drawn = {k: trial.params[k] for k in self.space}
            score = tried(drawn)
            if score is None:
                self.current = trial
                return drawn
            self.study.tell(trial, score if score == score else None,
                            state=self.optuna.trial.TrialState.COMPLETE if score == score
                            else self.optuna.trial.TrialState.FAIL)
        rng = np.random.default_rng(len(self.study.trials))
        drawn = sample(self.space, rng)
        while tried(drawn) is not None:
            drawn = sample(self.space, rng)
        self.current = None  # recorded as a finished trial of its own
        return drawn

    def prune(self, value: float, iteration: int) -> bool:
        """Report a drawn trial's validation score at an iteration; True when the pruner stops it."""
        if self.current is None or value != value:
            return False
        self.current.report(float(value), iteration)
        return bool(self.current.should_prune())

    def record(self, trial: dict, values: np.ndarray | None, kind: str) -> None:
        """Tell the study how a trial ended and store it (its per-user values too) for a resumed search."""
        TrialState = self.optuna.trial.TrialState
        attrs = {"cofiviz_trial": {k: (_plain(v) if k != "params" else {p: _plain(x) for p, x in v.items()})
                                   for k, v in trial.items()},
                 "cofiviz_kind": kind,
                 "cofiviz_values": None if values is None else [_plain(v) for v in np.asarray(values, float)]}
        score = trial["score"]
        state = (TrialState.PRUNED if trial.get("pruned") else
                 TrialState.FAIL if score != score else TrialState.COMPLETE)
        if kind == "drawn" and self.current is not None:
            for k, v in attrs.items():
                self.current.set_user_attr(k, v)
            self.study.tell(self.current, None if state != TrialState.COMPLETE else score, state=state)
            self.current = None
            return
        # the configured model, the anchors and a random fallback: added as finished trials; their values of the
        # searched parameters inform the sampler where the space holds them
        shown = trial["params"]
        params = ({k: shown[k] for k in self.space}
                  if all(k in shown for k in self.space) and contains(self.space, shown) else {})
        self.study.add_trial(self.optuna.trial.create_trial(
            state=state, value=score if state == TrialState.COMPLETE else None, params=params,
            distributions={k: self.distributions[k] for k in params}, user_attrs=attrs))


def make_searcher(name: str, space: dict, rng: np.random.Generator, seed: int, direction: str,
                  identity: dict, storage=None):
    """The searcher called ``name`` (:data:`SEARCHERS`); ``storage`` only with ``"optuna"``."""
    if name not in SEARCHERS:
        raise ParameterError(f"searcher must be one of {', '.join(SEARCHERS)}, got {name!r}")
    if name == "random":
        if storage is not None:
            raise ParameterError('storage keeps an Optuna study: give it with searcher="optuna"')
        return RandomSearcher(space, rng)
    return OptunaSearcher(space, seed, direction, identity, storage)
