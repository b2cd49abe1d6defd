"""The model contract every cofiviz method follows.

A model is a :class:`param.Parameterized` whose parameters (with their bounds and documentation) are
its constructor's keywords, so the same declaration drives validation, the command line's
``--set KEY=VALUE`` and the dashboards' forms. Training is an epoch loop in Python
(:meth:`Model.fit`) that calls the subclass's one-iteration step, reports each iteration to the
callbacks, checks that the loss stays finite, and early-stops on validation data; the heavy work of a
step runs in numba kernels that know nothing of this class.

Subclasses implement

- ``_setup(train, rng)``: allocate state for a fit (factors, caches);
- ``_step(iteration) -> float``: one iteration, returning the training loss (or ``nan`` if the
  method has none);
- ``_scores(users, items) -> ndarray``: scores of (user, item) index pairs;
- ``_state() -> dict[str, ndarray]`` / ``_set_state(dict)``: the learned arrays, for save/load and
  for keeping the best iterate during early stopping.

and may set the class attributes ``iterative = False`` (closed-form: ``fit`` runs one step) and
``has_loss = False`` (``_step`` returns ``nan``). Every model declares ``divergence_hint``, the
parameters that keep its fit stable, named when a fit diverges (see :meth:`Model.fit`), and
``_state_spec(n_users, n_items)``, the arrays ``_set_state`` needs and their shapes, which
:meth:`Model.load` checks a save against. A model that can score new users from their own ratings with its
item side kept (strong generalization) overrides :meth:`Model.fold_in`; :meth:`Model.folds_in` says whether it
does, and the base class's ``fold_in`` refuses naming the model. A concrete subclass registers itself under its
lower-case class name (``PopRec`` → ``"poprec"``, :meth:`Model.model_name`), which is also every
instance's ``name``; mark base classes with param's ``__abstract = True`` and test helpers with
``register = False`` to keep them out of the registry. A model module may define a module-level
``warmup()`` that compiles its numba kernels on tiny inputs; :func:`cofiviz.warmup` calls it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Sequence

import numpy as np
import param

from ..util.errors import DataError, ModelFitError, ParameterError
from ..metrics.names import check_metrics, lower_is_better
from ..metrics.scorer import mean_metrics
from ..ratings import Ratings
from . import persistence
from .divergence import DivergenceWatch, check_divergence
# the registry's functions are re-exported here, where the model contract is looked for
from .registry import MODEL_REGISTRY, available_models, get_model_class, make_model
from .scale import Scale

__all__ = ["Model", "IterationInfo", "NotFittedError", "MODEL_REGISTRY", "get_model_class", "available_models",
           "make_model"]


@dataclass
class IterationInfo:
    """What a model reports to its callbacks after each training iteration.

    Attributes
    ----------
    iteration : int
        1-based iteration number.
    seconds : float
        Wall time of this iteration (validation scoring excluded).
    elapsed : float
        Wall time since ``fit`` started, validation scoring included.
    loss : float
        Training objective after the iteration (``nan`` for methods without one).
    metrics : dict
        Validation metrics of this iteration, keyed ``"valid_<metric>"`` (empty without ``valid``).
    model : Model
        The model being trained (its current state can be scored).
    """

    iteration: int
    seconds: float
    elapsed: float
    loss: float
    metrics: dict = field(default_factory=dict)
    model: Any = None

    def as_dict(self) -> dict:
        return {"iteration": self.iteration, "seconds": self.seconds, "elapsed": self.elapsed,
                "loss": self.loss, **self.metrics}


Callback = Callable[[IterationInfo], Any]



class Model(param.Parameterized):
    """Abstract collaborative ranking model.

    Parameters
    ----------
    seed : int
        Seed of every random choice the model makes (initialisation, sampling); a seeded fit is
        reproducible.
    max_iter : int
        Iterations at most.
    patience : int
        With validation data, stop after this many iterations without improving the validation
        metric (``valid_metric``) and restore the best iterate; 0 disables early stopping.
    valid_metric : str
        The metric early stopping watches (any name :func:`cofiviz.metrics.score_lists` accepts).

    Notes
    -----
    A callback is called as ``callback(info)`` with an :class:`IterationInfo` after every iteration;
    returning ``True`` stops training after that iteration (it is how the dashboards' Stop button
    works). A diverging fit (a non-finite or exploding loss or learned array) raises
    :class:`~cofiviz.util.errors.ModelFitError` naming the parameters in :attr:`divergence_hint`.
    """

    __abstract = True
    #: False for closed-form models (PopRec, ItemMean): ``fit`` runs exactly one iteration
    iterative: ClassVar[bool] = True
    #: True for the baselines every table ends with (PopRec, ItemMean): scores that need no learning of users
    baseline: ClassVar[bool] = False
    #: The name tables and pages show where it is not the class name (:meth:`display_name`)
    display: ClassVar[str | None] = None
    #: What to change when a fit diverges: ``(parameter, "lower" | "raise")`` pairs, the step size
    #: first. Empty only for closed-form models, which have no such parameter.
    divergence_hint: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: How its fit grows with the data (:class:`~cofiviz.models.scale.Scale`): the leaderboards, the
    #: recommendations page and the scale benchmark read it
    scale: ClassVar[Scale] = Scale()
    #: The ``warmup()`` functions of the kernels other modules share with its fit (``cofiviz.solvers.dense.warmup``,
    #: another model's module's): a parallel warm-up (:func:`cofiviz.warmup`) runs them before its module's own
    #: ``warmup()``, so that each kernel is compiled by one process
    warmup_after: ClassVar[tuple[Callable[[], object], ...]] = ()
    #: The slower forms a user can ask for, which compute the same model: parameter -> its other values (the
    #: default is the fastest form whose ranking is level with them; ``benchmarks/bench_forms.py`` tests each
    #: pair user by user). Empty: the model has one form.
    speed_forms: ClassVar[dict[str, tuple]] = {}
    #: The settings :attr:`speed_forms` are compared under, each form where the setting reads it (the defaults,
    #: and another solver's setting where a form belongs to that solver)
    speed_form_settings: ClassVar[tuple[dict, ...]] = ({},)

    seed = param.Integer(default=0, bounds=(0, None), doc="Seed of every random choice of the model.")
    max_iter = param.Integer(default=100, bounds=(1, 100_000), doc="Iterations at most.")
    patience = param.Integer(default=0, bounds=(0, None),
                             doc="Early stopping: iterations without validation improvement (0: off).")
    valid_metric = param.String(default="ndcg@10", doc="Metric watched by early stopping.")

    #: What :func:`cofiviz.search.tune` searches: parameter name -> a distribution of :mod:`cofiviz.search.space`, ranges drawn
    #: from the settings the reproductions found to matter. Empty: tuning fits the model as configured.
    search_space: ClassVar[dict] = {}
    #: The parameters under which :attr:`search_space`'s values mean what they say, where a default differs: a
    #: grid drawn from the space (the MovieLens 1M leaderboards) holds them. Empty: the defaults will do.
    search_holds: ClassVar[dict] = {}
    #: The parameters that count iterations, besides ``max_iter``: an inner loop of the fit (a hyper-parameter
    #: ascent, say) that a quick fit caps as it caps ``max_iter``.
    inner_iterations: ClassVar[tuple[str, ...]] = ()
    #: Settings :func:`cofiviz.search.tune` tries right after the configured model, before its random draws, each over the
    #: configured values (the configured model on the damped item-mean offset, say): safe starting points that a
    #: drawn setting must beat on both halves of the validation users to be chosen instead.
    tune_anchors: ClassVar[tuple[dict, ...]] = ()
    #: The parameters that make the model rank as the damped item mean alone (no factors, or factors held at 0 by
    #: a large penalty, and the fixed item offset of :mod:`cofiviz.models.prior` on), its damping left out.
    #: :func:`cofiviz.search.tune` tries it at each damping of :data:`cofiviz.search.tuning.ITEM_MEAN_DAMPINGS` among its
    #: anchors, so that a search can always fall back on the baseline. None: the model has no such setting.
    item_mean_setting: ClassVar[dict | None] = None
    #: Named settings for :meth:`from_preset`; ``"paper"`` holds the paper's own settings.
    presets: ClassVar[dict[str, dict]] = {}
    #: The values a page's first form of the model starts from, where they differ from its defaults (the training
    #: monitor's first Run)
    first_run: ClassVar[dict] = {}
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Registered under the lower-case class name unless the class is abstract (param's
        # ``__abstract = True``) or opts out with ``register = False`` (helpers in tests).
        abstract = cls.__dict__.get(f"_{cls.__name__.lstrip('_')}__abstract", False)
        if not abstract and cls.__dict__.get("register", True) and not cls.__name__.startswith("_"):
            MODEL_REGISTRY[cls.model_name()] = cls

    @classmethod
    def model_name(cls) -> str:
        """The registry name: the lower-case class name (``PopRec`` → ``"poprec"``)."""
        return cls.__name__.lower()

    @classmethod
    def display_name(cls) -> str:
        """The name tables and pages show: :attr:`display` where the class sets it (``SVDpp`` → ``"SVD++"``),
        else the class name."""
        return cls.display or cls.__name__

    def __init__(self, **params):
        unknown = sorted(set(params) - set(self.param_names()))
        if unknown:
            raise ParameterError(f"{type(self).__name__} has no parameter(s) {', '.join(map(repr, unknown))}; "
                                 f"valid parameters: {', '.join(self.param_names())}")
        try:
            # param's instance ``name`` is the registry name, not an auto-numbered label
            super().__init__(name=self.model_name(), **params)
        except (ValueError, TypeError) as exc:
            raise ParameterError(f"{type(self).__name__}: {exc}") from None
        self._check_params()
        self.history_: list[dict] = []
        self.train_: Ratings | None = None
        self.fit_seconds_: float = float("nan")
        self.stopped_reason_: str = ""
        self.best_iteration_: int | None = None

    # ------------------------------------------------------------------ parameters
    @classmethod
    def from_preset(cls, name: str, **params) -> "Model":
        """A model with the settings of preset ``name`` (``params`` override them).

        Raises
        ------
        ParameterError
            The class has no such preset; the message lists those it has.
        """
        if name not in cls.presets:
            raise ParameterError(f"{cls.model_name()} has no preset {name!r}; its presets: "
                                 f"{', '.join(cls.presets) or 'none'}")
        return cls(**{**cls.presets[name], **params})

    def _check_params(self) -> None:
        """Refuse a combination of parameter values that no fit can run, with a :class:`ParameterError` naming them
        (the constructor and :meth:`set_params` call it; each value alone is checked by its declaration). A model
        with such a combination overrides it."""

    @classmethod
    def param_names(cls) -> list[str]:
        """The constructor's keyword parameters (param's ``name`` excluded), in declaration order."""
        return [p for p in cls.param if p != "name"]

    def get_params(self) -> dict:
        return {p: getattr(self, p) for p in self.param_names()}

    def set_params(self, **params) -> "Model":
        """Change parameters in place (validated like the constructor's); returns ``self``.

        All or nothing: when one value is refused, none is changed. A fitted model keeps its learned
        state; the new values apply from the next ``fit``.
        """
        unknown = sorted(set(params) - set(self.param_names()))
        if unknown:
            raise ParameterError(f"{type(self).__name__} has no parameter(s) {', '.join(map(repr, unknown))}; "
                                 f"valid parameters: {', '.join(self.param_names())}")
        type(self)(**{**self.get_params(), **params})  # validates every value before any is set
        try:
            self.param.update(**params)
        except (ValueError, TypeError) as exc:
            raise ParameterError(f"{type(self).__name__}: {exc}") from None
        return self

    # ------------------------------------------------------------------ training
    def fit(self, train: Ratings, valid: Ratings | None = None,
            callbacks: Callback | Sequence[Callback] | None = None) -> "Model":
        """Train on ``train``; report every iteration to ``callbacks``; early-stop on ``valid``.

        Parameters
        ----------
        train : Ratings
        valid : Ratings, optional
            Ratings in the same index space; each user's validation items are ranked after every
            iteration and scored with ``valid_metric`` (reported as ``info.metrics["valid_<metric>"]``, the
            metric in canonical spelling: ``"NDCG@10"`` is reported as ``"valid_ndcg@10"``).
            Callbacks that want more metrics score ``info.model`` themselves, e.g. with
            :func:`cofiviz.metrics.mean_metrics`.
        callbacks : callable or list of callables
            Called with an :class:`IterationInfo` after each iteration; return ``True`` to stop.

        Returns
        -------
        self

        Raises
        ------
        DataError
            ``train`` or ``valid`` is not a :class:`~cofiviz.Ratings` of one index space.
        ParameterError
            ``valid_metric`` is not a metric name.
        ModelFitError
            The fit diverged: the loss or a learned array became non-finite, the loss rose above
            its best value by more than :data:`~cofiviz.models.divergence.LOSS_GROWTH_LIMIT` times, or a
            learned float array's root mean square grew past
            :data:`~cofiviz.models.divergence.NORM_GROWTH_LIMIT` times its scale (see
            :func:`~cofiviz.models.divergence.check_divergence`). The message names the parameters to change
            (:attr:`divergence_hint`); the model is left unfitted.

        Notes
        -----
        With ``valid`` and ``patience > 0`` the best iterate (by ``valid_metric``; lower is better for
        error metrics such as ``zero_one``) is kept and restored at the end, whether training stopped
        early or ran out of iterations; ``best_iteration_`` records it. A stop requested by a callback
        keeps the current iterate. ``stopped_reason_`` says why training ended.
        """
        if not isinstance(train, Ratings):
            raise DataError(f"train must be a cofiviz.Ratings, got {type(train).__name__}")
        if len(train) == 0:
            raise DataError("train holds no ratings")
        if valid is not None:
            if not isinstance(valid, Ratings):
                raise DataError(f"valid must be a cofiviz.Ratings or None, got {type(valid).__name__}")
            if valid.n_users != train.n_users or valid.n_items != train.n_items:
                raise DataError("valid must share train's index space (take both from one Split)")
        if callable(callbacks):
            callbacks = [callbacks]
        callbacks = list(callbacks or [])
        for cb in callbacks:
            if not callable(cb):
                raise ParameterError(f"callbacks must be callables, got {type(cb).__name__}")
        use_valid = valid is not None and len(valid) > 0
        watched = check_metrics([self.valid_metric])[0] if use_valid else self.valid_metric
        sign = -1.0 if lower_is_better(watched) else 1.0
        self.train_ = train
        self.history_ = []
        self.stopped_reason_ = ""
        self.best_iteration_ = None
        rng = np.random.default_rng(self.seed)
        start = time.perf_counter()
        try:
            try:
                self._setup(train, rng)
            except ModelFitError as exc:
                raise ModelFitError(self._divergence_message(f"{exc} (while setting up the fit)")) from exc
            watch = DivergenceWatch(self, train)
            best_value, best_state, since_best = -np.inf, None, 0
            n_iter = self.max_iter if self.iterative else 1
            it = 0
            for it in range(1, n_iter + 1):
                t0 = time.perf_counter()
                try:
                    loss = float(self._step(it))
                except ModelFitError as exc:  # a solver inside the step gave up on non-finite numbers
                    raise ModelFitError(self._divergence_message(f"{exc} (in iteration {it})")) from exc
                seconds = time.perf_counter() - t0
                check_divergence(self, it, loss, watch)
                metrics = {}
                if use_valid:
                    metrics = {f"valid_{k}": v for k, v in self._mean_metrics(valid, [watched]).items()}
                info = IterationInfo(it, seconds, time.perf_counter() - start, loss, metrics, self)
                self.history_.append(info.as_dict())
                stop = False
                for cb in callbacks:
                    if cb(info) is True:
                        stop = True
                if stop:
                    self.stopped_reason_ = f"stopped by a callback after iteration {it}"
                    break
                if metrics and self.patience > 0:
                    value = sign * metrics[f"valid_{watched}"]
                    if value > best_value:
                        best_value, since_best, self.best_iteration_ = value, 0, it
                        best_state = {k: np.array(v, copy=True) for k, v in self._state().items()}
                    else:
                        since_best += 1
                        if since_best >= self.patience:
                            self.stopped_reason_ = (
                                f"early stop: {self.valid_metric} did not improve for {self.patience} "
                                f"iteration(s); best {sign * best_value:.4f} at iteration {self.best_iteration_}")
                            break
                if self._converged(it):
                    self.stopped_reason_ = f"converged after iteration {it}"
                    break
            else:
                self.stopped_reason_ = f"reached max_iter ({n_iter})" if self.iterative else "fitted (one pass)"
            if (best_state is not None and self.best_iteration_ != it
                    and not self.stopped_reason_.startswith("stopped by a callback")):
                self._set_state(best_state)
                self.stopped_reason_ += f"; restored the best iterate ({self.best_iteration_})"
        except BaseException:
            self.train_ = None  # a failed fit leaves no half-trained model behind
            raise
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _divergence_hint(self) -> tuple[tuple[str, str], ...]:
        """The ``(parameter, "lower" | "raise")`` pairs to name for these settings (default:
        :attr:`divergence_hint`; a model overrides this when a parameter matters only in some settings)."""
        return tuple(type(self).divergence_hint)

    def divergence_advice(self) -> str:
        """What to change when this model's fit diverges, with the current values:
        ``"lower lr (now 100.0) or raise reg (now 0.1)"``."""
        hint = self._divergence_hint()
        if not hint:
            return ("no parameter of this closed-form model controls its stability: look for extreme values in "
                    "the ratings")
        parts = [f"{direction} {name} (now {getattr(self, name)!r})" for name, direction in hint]
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]

    def _divergence_message(self, what: str) -> str:
        return f"{type(self).__name__}: {what}; {self.divergence_advice()}"

    #: False for methods whose ``_step`` returns ``nan`` because they have no training objective
    has_loss: ClassVar[bool] = True

    def _loss_may_be_nan(self) -> bool:
        return not (self.iterative and self.has_loss)

    def _converged(self, iteration: int) -> bool:
        """Stopping test on the training objective; the default never stops early."""
        return False

    def _mean_metrics(self, ratings: Ratings, metrics: Iterable[str]) -> dict[str, float]:
        return mean_metrics(self, ratings, list(metrics), train=self.train_)

    # ------------------------------------------------------------------ scoring
    def _require_fitted(self) -> None:
        if self.train_ is None:
            raise NotFittedError(f"{type(self).__name__} is not fitted yet: call fit(train) or "
                                 f"{type(self).__name__}.load(path) first")

    @classmethod
    def folds_in(cls) -> bool:
        """Whether the model scores new users from their own ratings with its learned item side kept
        (:meth:`fold_in`, strong generalization): it does when its class defines ``fold_in``."""
        return cls.fold_in is not Model.fold_in

    def fold_in(self, given: Ratings, seed: int | None = None) -> "Model":
        """Fit the users of ``given`` with what the model learned of the items kept (strong generalization).

        A model that can (:meth:`folds_in`) overrides this; here it refuses, naming the model.

        Raises
        ------
        ParameterError
            The model cannot fold in new users.
        """
        raise ParameterError(f"{type(self).__name__} cannot fold in new users: it learns nothing of the items that "
                             "would score a user from that user's ratings alone; fit it on the given ratings "
                             "instead")

    def _check_given(self, given) -> None:
        """Validate the new users' ratings of a ``fold_in`` (strong generalization): fitted model,
        a :class:`~cofiviz.Ratings` in the model's index space."""
        self._require_fitted()
        if not isinstance(given, Ratings):
            raise DataError(f"given must be a cofiviz.Ratings, got {type(given).__name__}")
        if given.n_users != self.train_.n_users or given.n_items != self.train_.n_items:
            raise DataError(f"given must share the model's index space ({self.train_.n_users} users x "
                            f"{self.train_.n_items} items), got {given.n_users} x {given.n_items}; "
                            "take it from the same Split as the training table")

    @property
    def is_fitted(self) -> bool:
        return self.train_ is not None

    def score(self, users, items) -> np.ndarray:
        """Scores of (user, item) index pairs; ``users`` and ``items`` broadcast against each other.

        Higher means ranked earlier. Indices are positions in the training table's index space
        (``train.user_ids`` / ``train.item_ids``).

        Raises
        ------
        ParameterError
            Indices that are not integers, out of range, or shapes that do not broadcast.
        """
        self._require_fitted()
        users = _as_index(users, "users")
        items = _as_index(items, "items")
        try:
            users, items = np.broadcast_arrays(users, items)
        except ValueError:
            raise ParameterError(f"users (shape {users.shape}) and items (shape {items.shape}) do not "
                                 "broadcast against each other") from None
        for label, idx, n in (("users", users, self.train_.n_users), ("items", items, self.train_.n_items)):
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                bad = idx[(idx < 0) | (idx >= n)][0]
                raise ParameterError(f"{label} holds index {bad}, expected 0 <= index < {n}")
        shape = users.shape
        if users.size == 0:
            return np.zeros(shape, dtype=np.float64)
        out = self._scores(np.ascontiguousarray(users.ravel(), dtype=np.int32),
                           np.ascontiguousarray(items.ravel(), dtype=np.int32))
        return np.asarray(out, dtype=np.float64).reshape(shape)

    def recommend(self, user: int, k: int = 10, exclude_seen: bool = True,
                  exclude=None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` item indices for user index ``user`` and their scores, best first.

        Items the user rated in training are left out when ``exclude_seen`` is true, and the item indices of
        ``exclude`` too (the items the user rated elsewhere: a page that shows a model trained on part of the
        data leaves out everything the user rated). Ties are broken by item index (lower first), so the result
        is deterministic. Fewer than ``k`` items come back when fewer are left to recommend.

        Raises
        ------
        ParameterError
            ``user`` is not a user index, ``k`` is not a positive integer, or ``exclude`` holds something other
            than item indices.
        """
        self._require_fitted()
        n_users, n_items = self.train_.n_users, self.train_.n_items
        if isinstance(user, (bool, np.bool_)) or not isinstance(user, (int, np.integer)) \
                or not (0 <= int(user) < n_users):
            raise ParameterError(f"user {user!r} is not a user index, expected an integer 0 <= user < {n_users}")
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or int(k) < 1:
            raise ParameterError(f"k must be a positive integer number of items, got {k!r}")
        keep = np.ones(n_items, dtype=bool)
        if exclude is not None:
            extra = np.asarray(exclude)
            if extra.size and (extra.dtype.kind not in "iu" or extra.min() < 0 or extra.max() >= n_items):
                raise ParameterError(f"exclude must hold item indices 0 <= i < {n_items}, got {exclude!r:.80}")
            keep[extra.astype(np.int64)] = False
        if exclude_seen:
            keep[self.train_.items[self.train_.user_slice(int(user))]] = False
        items = np.arange(n_items)
        scores = self.score(np.full(n_items, int(user)), items)
        items, scores = items[keep], scores[keep]
        order = np.lexsort((items, -scores))[: int(k)]
        return items[order], scores[order]

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> Path:
        """Save to ``path`` with suffix ``.npz`` (arrays) and ``.json`` (parameters, ids, history).

        No pickle is used; see :func:`cofiviz.models.persistence.save` for the files and what they
        record (format :data:`~cofiviz.models.persistence.FORMAT_VERSION`). Returns the ``.npz`` path.
        """
        return persistence.save(self, path)

    @classmethod
    def load(cls, path) -> "Model":
        """Load a model written by :meth:`save` (call on :class:`Model` or on the right subclass).

        Everything is checked before a model is returned: both files exist; the JSON is a model
        description with the keys :meth:`save` writes; its ``model`` and ``class`` name a known model
        (of class ``cls`` or a subclass); the ``.npz`` has the SHA-256 the JSON records and opens; it
        holds every array the JSON lists with the recorded shape and dtype, the training table, and
        every array the model's ``_state_spec`` declares, shaped for the parameters and the training
        table.

        A save of another format than :data:`~cofiviz.models.persistence.FORMAT_VERSION` is refused,
        format 1 included (its JSON carries no checksum of its ``.npz``, so the two files cannot be
        checked against each other): fit the model again and save it.

        Raises
        ------
        DataError
            Naming the file and the problem: a missing file; a JSON that is not a model description,
            lacks a key or has another format; an unknown model, or one of another class than
            ``cls``; a ``.npz`` that is damaged or truncated, or from another save than the JSON
            (checksum mismatch); a missing array; arrays whose shapes do not fit the parameters or
            the training table.
        """
        npz, js, meta = persistence.read_meta(path)
        return persistence.restore(_saved_class(cls, meta, js), npz, js, meta)

    def _extra_meta(self) -> dict:
        return {}

    def _set_extra_meta(self, extra: dict) -> None:
        pass

    def state_size(self, n_users: int, n_items: int) -> dict[str, int]:
        """The values each array of the fitted state holds, at these parameters, for a training table of
        ``n_users`` x ``n_items``: what a fit keeps whatever the number of ratings (arrays whose length is
        only known after a fit, and the fit's temporaries, are not counted).

        >>> from cofiviz.models import get_model_class
        >>> get_model_class("itemmean")().state_size(3, 4)
        {'item_scores': 4, 'item_counts': 4}
        """
        spec = self._state_spec(int(n_users), int(n_items)) or {}
        return {name: int(np.prod(shape, dtype=np.int64)) for name, shape in spec.items()
                if None not in shape}

    # ------------------------------------------------------------------ subclass hooks
    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        raise TypeError(f"{type(self).__name__} does not define _setup()")  # pragma: no cover

    def _step(self, iteration: int) -> float:
        raise TypeError(f"{type(self).__name__} does not define _step()")  # pragma: no cover

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        raise TypeError(f"{type(self).__name__} does not define _scores()")  # pragma: no cover

    def _state(self) -> dict[str, np.ndarray]:
        raise TypeError(f"{type(self).__name__} does not define _state()")  # pragma: no cover

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        raise TypeError(f"{type(self).__name__} does not define _set_state()")  # pragma: no cover

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]] | None:
        """The arrays ``_set_state`` needs and their shapes, for these parameters and a training table of
        ``n_users`` x ``n_items`` (``None`` in a shape: any length). :meth:`load` checks a save against it;
        ``None`` (the default, for helpers) declares nothing."""
        return None


class NotFittedError(DataError):
    """A model was used (scored, saved, asked to recommend) before ``fit`` or ``load``."""


def _as_index(values, label: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        if arr.size == 0:
            return arr.astype(np.int64)
        raise ParameterError(f"{label} must be integer indices, got an array of dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ParameterError(f"{label} must be integer indices, got non-integer values")
    return arr.astype(np.int64)


def _saved_class(cls: type[Model], meta: dict, js: Path) -> type[Model]:
    """The class a save holds, checked against ``cls`` (the class ``load`` was called on)."""
    name, class_name = meta["model"], meta["class"]
    if cls is not Model and class_name == cls.__name__ and name == cls.model_name():
        return cls  # also covers unregistered subclasses
    klass = MODEL_REGISTRY.get(name)
    if klass is None:
        raise DataError(f"{js}: unknown model {name!r}; known: {', '.join(sorted(MODEL_REGISTRY))}")
    if klass.__name__ != class_name:
        raise DataError(f"{js}: model {name!r} is a {klass.__name__}, but the file names the class {class_name!r}")
    if cls is not Model and not issubclass(klass, cls):
        raise DataError(f"{js} holds a {klass.__name__}, not a {cls.__name__}")
    return klass
