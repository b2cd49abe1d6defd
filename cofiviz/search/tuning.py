"""Tuning a model on validation ratings: a seeded random search of its search space within a time budget.

The first trial is the model as configured (its defaults, or the preset or values it was given), the next ones
its ``tune_anchors`` (settings that are safe starting points, such as the configured model on the damped item-mean
offset; each overrides the configured values it names), then its ``item_mean_setting`` at each damping of
:data:`ITEM_MEAN_DAMPINGS` (the model reduced to the damped item mean, the baseline a ranking model must beat);
every later trial draws the parameters of the model's
``search_space`` with a generator seeded by ``seed`` (the other parameters stay as configured), fits on the
training ratings with early stopping on the validation ratings, and scores the validation metric. Trials start
while the budget lasts, and a trial still running when 1.5 times the budget has passed is stopped at that
iteration; ``trials`` caps their number so that a search can be repeated exactly (the time budget alone depends
on the machine). A setting is never tried twice: in a space of finitely many settings (choices and integers only)
the search ends once it has tried them all. The setting with the best validation score wins
(:func:`cofiviz.search.best_index`: ties go to the earlier trial), if a cross-check says that it beats the
reference: the best of the configured model and its anchors. A search therefore hands back a model below the
damped item mean on validation only when a setting beat the item mean on both halves there; when the item mean
wins, :meth:`Tuning.summary` says so in plain words.

The cross-check. The best of hundreds of trials on one validation part is partly the luckiest: its score is biased
upwards, and on short validation lists (10 ratings per user) that bias can exceed the real differences between
settings, so that a search would replace good defaults by a worse setting. The validation users are therefore split
at random (seeded) into two halves A and B. The trial best on A is compared with the reference on B, where its
selection did not look, and the trial best on B with it on A (a two-fold cross-validation of the selection). The
best trial is chosen only when it gains on both halves, else the reference is kept; the mean of the two differences
is the estimated gain. Each trial early-stops on the whole validation part, the reference as much as the others,
so the comparison is level. The reference itself is chosen among a few settings fixed before the search, so its
own selection is hardly biased.

The baseline first. The same cross-check is run before, with the best item-mean anchor as the reference and every
other trial as a candidate, and a stricter bar. Each validation user contributes one out-of-selection difference:
a user of half B the trial best on A minus the item mean, a user of half A the trial best on B minus it. The
factors are chosen only when the gain on each half is positive and the mean of these differences over all the
users exceeds the validation noise, :data:`ITEM_MEAN_Z` standard errors of that mean (a one-sided paired test
at the 5 % level). With thousands of trials, the best of one half still gains a little on the other by chance;
unless the gain clears the noise, the item mean is chosen. Only then does the rule above choose among the other
trials.

Random search spends a budget well on spaces where a few parameters matter (Bergstra & Bengio, JMLR 2012):
every trial tries a new value of each of them.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..util.errors import ModelFitError, ParameterError
from ..metrics.names import check_metrics, lower_is_better
from ..protocols.validation import carve_validation
from ..ratings import Ratings
from .crosscheck import best_on, cross_check, cross_checked_gains, cross_checked_noise
from .rule import best_index
from .searchers import make_searcher
from .space import contains, size
from .trials import fit_and_score

__all__ = ["Tuning", "tune", "choose", "trial_params", "anchors", "EARLY_STOP_PATIENCE", "ITEM_MEAN_DAMPINGS"]

#: the patience a trial early-stops with when the model's own ``patience`` is 0
EARLY_STOP_PATIENCE = 10
#: the dampings (pseudo-ratings at the global mean) the item-mean anchors are tried at: the range of
#: :class:`~cofiviz.models.ItemMean`'s own search space, 0 to 50
ITEM_MEAN_DAMPINGS = (0.0, 5.0, 10.0, 25.0, 50.0)


@dataclass
class Tuning:
    """What a search found.

    Attributes
    ----------
    metric : str
        The validation metric that chose.
    trials : list of dict
        One per trial: ``trial``, ``params`` (the searched ones), ``score``, ``iterations``, ``seconds``,
        ``error`` (a diverged fit's message; its score is NaN), and ``pruned`` (the iteration the searcher's
        pruner stopped it at; such a trial's score is NaN and it is not a candidate) where it was pruned.
    chosen : int
        The winning trial's index.
    best_params : dict
        Every parameter of the winning setting.
    refit_params : dict
        What the model is refitted with: ``best_params``, and after a carved validation part the winning trial's
        number of iterations with early stopping off (the refit has no validation ratings).
    budget, seconds : float
        The time allowed and the time spent, in seconds.
    validation : str
        ``"given"`` or ``"carved"`` (a seeded tenth of each user's training ratings).
    check : dict
        The cross-check (module docstring): ``reference`` (the best of the configured trial, 0, and the anchors'),
        ``best`` (the trial with the best validation score), ``gains`` (what the trial best on A gains over the
        reference on B, and the one best on B on A, in the metric's direction: positive is better; ``NaN`` when
        it could not be estimated), ``gain`` (their mean), ``kept_reference`` (whether the reference was kept
        instead of the best trial), ``item_mean`` (whether the chosen trial is an item-mean anchor),
        ``item_mean_trial`` (the best item-mean anchor, None without one), ``item_mean_gains`` (what the other trials
        gain over it on the two halves), ``item_mean_gain`` (their gain over all the validation users) and
        ``item_mean_noise`` (the noise it must exceed; both from :func:`cross_checked_noise`) and ``users``
        (validation users in halves A and B).
    resumed : int
        How many of the trials a stored study held before this search (``storage``); 0 for a new search.
    """

    metric: str
    trials: list = field(default_factory=list)
    chosen: int = 0
    best_params: dict = field(default_factory=dict)
    refit_params: dict = field(default_factory=dict)
    budget: float = 0.0
    seconds: float = 0.0
    validation: str = "given"
    check: dict = field(default_factory=dict)
    resumed: int = 0

    def frame(self) -> pd.DataFrame:
        """The trials as a table: one row per trial, one column per searched parameter."""
        rows = [{"trial": t["trial"], **t["params"], "score": t["score"], "iterations": t["iterations"],
                 "seconds": t["seconds"], "chosen": i == self.chosen, "error": t["error"],
                 "pruned": t.get("pruned", 0)}
                for i, t in enumerate(self.trials)]
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """What the search chose and why, in plain words."""
        check, k = self.check, self.chosen
        params = self.trials[k]["params"] if 0 <= k < len(self.trials) else {}
        gains = check.get("item_mean_gains") or []
        gain, noise = check.get("item_mean_gain", float("nan")), check.get("item_mean_noise", float("nan"))
        if check.get("item_mean"):
            said = ("With these ratings the item mean alone ranks best on validation (damping "
                    f"{params.get('prior_damping', float('nan')):g}); the factors add nothing")
            if len(gains) == 2 and max(gains) > 0 and gain == gain and noise == noise:
                said += (f": the other settings gained {gains[0]:+.4f} and {gains[1]:+.4f} on the two halves of the "
                         f"validation users they were not chosen on, {gain:+.4f} over all of them, within the noise "
                         f"({noise:.4f})")
            return said + "."
        beat = check.get("item_mean_gains") or []
        beat = (f" It beat the item mean alone (trial {check['item_mean_trial']}) by {beat[0]:+.4f} and "
                f"{beat[1]:+.4f} on the two halves of the validation users."
                if check.get("item_mean_trial") is not None and len(beat) == 2 and beat[0] == beat[0] else "")
        gains = check.get("gains") or []
        ref = "the configured setting" if check.get("reference", 0) == 0 else f"anchor trial {check['reference']}"
        if check.get("kept_reference") and check.get("best") != check.get("reference") and len(gains) == 2:
            return (f"The best trial, {check['best']}, gained {gains[0]:+.4f} and {gains[1]:+.4f} over {ref} on the "
                    "two halves of the validation users it was not chosen on: not both, so that one is kept." + beat)
        if check.get("kept_reference"):
            return f"No trial beat {ref} on validation: it is kept." + beat
        if len(gains) == 2 and gains[0] == gains[0]:
            return (f"Trial {k} gained {gains[0]:+.4f} and {gains[1]:+.4f} over {ref} on the two halves of the "
                    "validation users it was not chosen on." + beat)
        return f"Trial {k} has the best validation {self.metric}." + beat

    def as_dict(self) -> dict:
        return {"metric": self.metric, "chosen": self.chosen, "best_params": dict(self.best_params),
                "refit_params": dict(self.refit_params),
                "budget": self.budget, "seconds": self.seconds, "validation": self.validation,
                "check": dict(self.check), "summary": self.summary(), "resumed": self.resumed,
                "trials": [dict(t) for t in self.trials]}


def anchors(klass, fixed=()) -> list[dict]:
    """The settings a search of ``klass`` tries after the configured model, before its draws: ``tune_anchors``,
    then ``item_mean_setting`` at each of :data:`ITEM_MEAN_DAMPINGS` (as ``prior_damping``); those that set a
    parameter of ``fixed`` are left out."""
    out = [dict(a) for a in getattr(klass, "tune_anchors", ())]
    setting = getattr(klass, "item_mean_setting", None)
    if setting is not None:
        out += [{**setting, "prior_damping": d} for d in ITEM_MEAN_DAMPINGS]
    fixed = set(fixed)
    return [a for a in out if not set(a) & fixed]


def trial_params(klass, base: dict, drawn: dict, metric: str) -> dict:
    """The settings a trial fits with: ``base`` (the configured model's) overridden by ``drawn``, early stopping on
    ``metric`` with :data:`EARLY_STOP_PATIENCE` where an iterative model's ``patience`` is 0."""
    params = {**base, **drawn, "valid_metric": metric}
    if klass.iterative and params.get("patience", 0) == 0:
        params["patience"] = EARLY_STOP_PATIENCE
    return params


def _identity(klass, base: dict, metric: str, fixed, seed: int, train: Ratings, valid: Ratings) -> dict:
    """What a stored search must match to be resumed: the model, its configured settings, the metric, the fixed
    parameters, the seed and a fingerprint of the training and validation ratings."""
    digest = hashlib.sha1()
    for part in (train, valid):
        for array in (part.users, part.items, part.ratings):
            digest.update(np.ascontiguousarray(array).tobytes())
    return json.loads(json.dumps({"model": klass.model_name(), "settings": base, "metric": metric,
                                  "fixed": sorted(fixed), "seed": int(seed), "ratings": digest.hexdigest()},
                                 default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def tune(model, train: Ratings, valid: Ratings | None = None, *, budget: float = 60.0, trials: int | None = None,
         metric: str | None = None, seed: int = 0, fixed=(), refit: bool = True,
         log: Callable[[dict], Any] | None = None, stop: Callable[[], bool] | None = None,
         searcher: str = "random", storage=None) -> Tuning:
    """Search ``model``'s ``search_space`` on validation ratings, then refit ``model`` with the chosen setting.

    Parameters
    ----------
    model : Model
        Configured as the first trial; it ends fitted with the chosen setting.
    train : Ratings
    valid : Ratings, optional
        Validation ratings in ``train``'s index space; without them a seeded tenth of each user's training
        ratings is held out for the search, and the refit uses all of ``train`` for as many iterations as
        the chosen trial's best.
    budget : float
        Seconds the search may start trials in (> 0).
    trials : int, optional
        At most this many trials (the search is then repeatable to the last bit).
    metric : str, optional
        The validation metric (default: the model's ``valid_metric``).
    seed : int
        Seed of the draws (and of the carved validation part).
    fixed : iterable of str
        Parameters of the search space to leave as configured.
    refit : bool
        Refit ``model`` with the chosen setting (else it is only configured with it: ``model.fit(train,
        valid=valid)`` then gives the same model, ``valid=None`` after a carved part).
    log : callable, optional
        Called with each finished trial's dict.
    stop : callable, optional
        Polled after every iteration of a trial; once it returns True the running trial ends at that iteration
        and no other starts (the search then chooses among the trials it has).
    searcher : {"random", "optuna"}
        Where the drawn trials' settings come from (:mod:`cofiviz.search.searchers`): seeded random draws, or
        Optuna's seeded TPE sampler, whose median pruner also stops a drawn trial that falls behind the earlier
        ones at the same iteration. The configured trial, the anchors and the selection rule are the same.
    storage : str or Path, optional
        With ``searcher="optuna"``: an SQLite file the study is kept in. A search given the file of an earlier
        one of the same model, settings, metric, seed and validation ratings resumes it: its trials count as
        this search's first ones, and this call's budget and ``trials`` go to new trials.

    Returns
    -------
    Tuning
    """
    klass = type(model)
    metric, fixed = _checked(klass, model, budget, trials, metric, fixed)
    base = model.get_params()
    search_train, search_valid, carved = train, valid, valid is None or len(valid) == 0
    if carved:
        search_train, search_valid = carve_validation(train, seed=seed)
    space = {k: v for k, v in (getattr(klass, "search_space", {}) or {}).items() if k not in fixed}
    draws = make_searcher(searcher, space, np.random.default_rng(seed), seed,
                          "minimize" if lower_is_better(metric) else "maximize",
                          _identity(klass, base, metric, fixed, seed, search_train, search_valid), storage)
    out = Tuning(metric, budget=float(budget), validation="carved" if carved else "given")
    start = time.perf_counter()
    run = _Trials(klass, base, metric, fixed, space, draws, search_train, search_valid)
    run.resume(out)
    limit = trials if trials is not None else (1 if not space else None)
    run.run(out, limit, deadline=start + budget, hard_stop=start + 1.5 * budget,
            stopped=stop if stop is not None else (lambda: False), log=log)
    if all(np.isnan(t["score"]) for t in out.trials):
        raise ModelFitError(f"every trial of the search diverged; the first: {out.trials[0]['error']}")
    # the cross-check's halves, from their own stream (the draws of the settings do not depend on them)
    in_a = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0]).random(search_valid.n_users) < 0.5
    out.chosen, out.check = choose([t["score"] for t in out.trials], run.values_of, run.item_mean_trials,
                                   run.ref_trials, in_a, metric)
    best = dict(run.fitted[out.chosen])
    out.best_params = {**best, "patience": base.get("patience", 0), "valid_metric": base.get("valid_metric", metric)}
    out.refit_params = dict(best)
    if carved and klass.iterative:
        out.refit_params.update(max_iter=max(1, out.trials[out.chosen]["iterations"]), patience=0)
    model.set_params(**out.refit_params)
    if refit:
        model.fit(train, valid=None if carved else valid)
    out.seconds = time.perf_counter() - start
    model.tuning_ = out
    return out


def _checked(klass, model, budget, trials, metric, fixed) -> tuple[str, set]:
    """The canonical validation metric and the set of fixed parameters, after checking a search's arguments."""
    if not isinstance(budget, (int, float)) or not budget > 0:
        raise ParameterError(f"budget must be a positive number of seconds, got {budget!r}")
    if trials is not None and (not isinstance(trials, (int, np.integer)) or trials < 1):
        raise ParameterError(f"trials must be a positive integer, got {trials!r}")
    metric = check_metrics([metric or model.valid_metric])[0]
    fixed = set(fixed)
    unknown = sorted(fixed - set(klass.param_names()))
    if unknown:
        raise ParameterError(f"{klass.model_name()} has no parameter(s) {', '.join(unknown)} to fix")
    return metric, fixed


class _Trials:
    """The trials of one search as they run: the configured model, the anchors, then the searcher's draws.

    Keeps what the choice needs: every trial's fitted parameters (``fitted``), the per-user validation values of
    each trial that did not diverge (``values_of``), the reference trials (the configured one and the anchors) and
    the item-mean anchors among them.
    """

    def __init__(self, klass, base: dict, metric: str, fixed: set, space: dict, draws, train: Ratings,
                 valid: Ratings):
        self.klass, self.base, self.metric, self.space, self.draws = klass, base, metric, space, draws
        self.train, self.valid = train, valid
        self.starts = anchors(klass, fixed)
        # the item-mean anchors come last among them
        self.first_item_mean = 1 + len([a for a in getattr(klass, "tune_anchors", ()) if not set(a) & fixed])
        self.shown = list(space) + sorted({k for a in self.starts for k in a} - set(space))  # what a trial shows
        self.n_settings = size(space) if space else None
        self.tried: dict = {}  # the settings tried, as text, and their scores
        self.tried_in_space = 0
        self.fitted: list[dict] = []
        self.values_of: dict = {}
        self.ref_trials: set = set()
        self.item_mean_trials: set = set()

    def key(self, params: dict) -> str:
        return repr([params[k] for k in self.shown])

    def exhausted(self) -> bool:
        return self.n_settings is not None and self.tried_in_space >= self.n_settings

    def resume(self, out: Tuning) -> None:
        """Take a stored study's trials, as they ended, as the search's first ones."""
        for old in self.draws.resumed():
            trial, params = old["trial"], trial_params(self.klass, self.base, old["trial"]["params"], self.metric)
            index = len(out.trials)
            if old["values"] is not None and not trial.get("pruned"):
                self.values_of[index] = old["values"]
                if old["kind"] != "drawn":
                    self.ref_trials.add(index)
            if old["kind"] == "item_mean":
                self.item_mean_trials.add(index)
            self.tried[self.key(params)] = trial["score"]
            self.tried_in_space += contains(self.space, params)
            out.trials.append(trial)
            self.fitted.append(params)
        out.resumed = len(out.trials)

    def next_setting(self, n: int) -> tuple[dict, bool, str]:
        """``(drawn parameters, whether a reference trial, kind)`` of trial ``n``."""
        drawn, reference = {}, n <= len(self.starts)
        kind = "configured" if not n else "anchor"
        if self.starts and 0 < n <= len(self.starts):
            drawn = self.starts[n - 1]
            if self.key({**self.base, **drawn}) in self.tried:  # an anchor the configured model is: one more draw
                drawn, reference = {}, False
            elif n >= self.first_item_mean:
                self.item_mean_trials.add(n)
                kind = "item_mean"
        if n and not drawn:
            drawn, reference, kind = self.draws.propose(lambda d: self.tried.get(self.key({**self.base, **d}))), \
                False, "drawn"
        return drawn, reference, kind

    def run(self, out: Tuning, limit, *, deadline: float, hard_stop: float, stopped, log) -> None:
        """Trials while the budget lasts (``limit`` at most), each appended to ``out.trials``."""
        while ((limit is None or len(out.trials) < limit) and (not out.trials or time.perf_counter() < deadline)
               and not (out.trials and (stopped() or self.exhausted()))):
            n = len(out.trials)
            drawn, reference, kind = self.next_setting(n)
            params = trial_params(self.klass, self.base, drawn, self.metric)
            self.tried[self.key(params)] = float("nan")
            self.tried_in_space += contains(self.space, params)
            trial, values = self.one(n, params, kind, hard_stop, stopped)
            if values is not None:
                self.values_of[n] = values
                if reference:
                    self.ref_trials.add(n)
            self.tried[self.key(params)] = trial["score"]
            self.draws.record(trial, values, kind)
            out.trials.append(trial)
            self.fitted.append(params)
            if log is not None:
                log(trial)

    def one(self, n: int, params: dict, kind: str, hard_stop: float, stopped) -> tuple[dict, np.ndarray | None]:
        """Trial ``n`` fitted and scored (:func:`~.trials.fit_and_score`): its record and its per-user values (None
        for a diverged or pruned trial)."""
        t0 = time.perf_counter()
        trial = {"trial": n, "params": {k: params[k] for k in self.shown},
                 "score": float("nan"), "iterations": 0, "seconds": 0.0, "error": ""}
        pruned = []

        def callback(info):
            if kind == "drawn" and self.draws.prune(info.metrics.get(f"valid_{self.metric}", float("nan")),
                                                    info.iteration):
                pruned.append(info.iteration)
            return bool(pruned) or time.perf_counter() > hard_stop or stopped()

        values = None
        try:
            found = fit_and_score(self.klass, params, self.train, self.valid, self.metric, callbacks=callback,
                                  score_if=lambda _: not pruned)
            if pruned:  # a drawn trial the pruner stopped: not a candidate
                trial["pruned"], trial["iterations"] = pruned[0], pruned[0]
            else:
                values = found.values
                trial["score"] = found.score
                trial["iterations"] = int(found.model.best_iteration_ or len(found.model.history_))
        except ModelFitError as exc:  # a diverging setting is a failed trial, not a failed search
            trial["error"] = str(exc)
        trial["seconds"] = time.perf_counter() - t0
        return trial, values


def choose(scores: list, values_of: dict, item_mean_trials: set, ref_trials: set, in_a: np.ndarray,
           metric: str) -> tuple[int, dict]:
    """The search's selection rule (module docstring): the chosen trial and the record of its cross-checks.

    Parameters
    ----------
    scores : list of float
        Every trial's validation score (NaN: diverged or pruned).
    values_of : dict
        Trial -> per-user validation values, for the trials that are candidates.
    item_mean_trials, ref_trials : set
        The item-mean anchors; the reference trials (the configured one and the anchors).
    in_a : bool array
        The validation users of half A.
    metric : str

    Returns
    -------
    (int, dict)
        The chosen trial and :attr:`Tuning.check`.
    """
    sign = -1.0 if lower_is_better(metric) else 1.0
    nan2 = (float("nan"), float("nan"))

    def best_of(trials) -> int:
        trials = sorted(trials)
        return trials[best_index([scores[i] for i in trials], metric)]

    # first the baseline: the factors must beat the best item-mean anchor on both halves, by more than the noise
    means = sorted(item_mean_trials & set(values_of))
    others = set(values_of) - set(means)
    item_mean_gains, item_mean_gain, item_mean_noise, item_mean = nan2, float("nan"), float("nan"), False
    if means and others:
        ref_mean = best_of(means)
        best_a, best_b = best_on(values_of, others, in_a, sign), best_on(values_of, others, ~in_a, sign)
        item_mean_gains = cross_checked_gains(values_of[ref_mean], values_of[best_a], values_of[best_b], in_a,
                                              sign < 0)
        item_mean_gain, item_mean_noise = cross_checked_noise(values_of[ref_mean], values_of[best_a],
                                                              values_of[best_b], in_a, sign < 0)
        item_mean = not (all(g > 0 for g in item_mean_gains) and item_mean_gain > item_mean_noise)
    elif means:
        item_mean = True
    # then among the other settings: a drawn one must beat the best of the configured trial and the anchors
    pool = set(means) if item_mean else others
    chosen = best_of(pool)
    refs = sorted(ref_trials & pool)
    reference = best_of(refs) if refs else 0
    gains = nan2
    if chosen not in refs and refs:
        gains = cross_check(values_of, reference, pool, in_a, sign)
    kept_reference = bool(refs) and (chosen in refs or not (gains[0] > 0 and gains[1] > 0))
    check = {"reference": reference, "best": chosen, "gains": list(gains), "gain": float(np.mean(gains)),
             "kept_reference": kept_reference, "item_mean": item_mean,
             "item_mean_trial": best_of(means) if means else None, "item_mean_gains": list(item_mean_gains),
             "item_mean_gain": item_mean_gain, "item_mean_noise": item_mean_noise,
             "users": [int(np.sum(in_a)), int(len(in_a) - np.sum(in_a))]}
    return (reference if kept_reference else chosen), check
