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
:meth:`Model.load` checks a save against. A concrete subclass registers itself under its
lower-case class name (``PopRec`` → ``"poprec"``, :meth:`Model.model_name`), which is also every
instance's ``name``; mark base classes with param's ``__abstract = True`` and test helpers with
``register = False`` to keep them out of the registry. A model module may define a module-level
``warmup()`` that compiles its numba kernels on tiny inputs; :func:`cofiviz.warmup` calls it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Sequence

import numpy as np
import param

from ..errors import CofivizError, DataError, ModelFitError, ParameterError
from ..jsonable import jsonable
from ..metrics.names import check_metrics, lower_is_better
from ..metrics.scorer import mean_metrics
from ..ratings import Ratings

__all__ = ["Model", "IterationInfo", "NotFittedError", "MODEL_REGISTRY", "get_model_class", "available_models",
           "make_model"]

MODEL_REGISTRY: dict[str, type["Model"]] = {}
#: Version of the files :meth:`Model.save` writes and :meth:`Model.load` reads. 2: the JSON records the
#: SHA-256 of the ``.npz`` and the name, shape and dtype of every array in it. Saves of format 1, which
#: had no checksum to tie the two files together, are refused with a message to save the model again.
FORMAT_VERSION = 2
#: Keys every saved JSON holds.
_META_KEYS = ("format", "model", "class", "params", "scale", "checksum", "arrays")
#: Arrays of the training table in every ``.npz``.
_TRAIN_ARRAYS = ("train__users", "train__items", "train__ratings", "train__user_ids", "train__item_ids")

#: A fit diverged when its training loss rises above its best value so far by more than this many
#: times ``max(|best|, 1)``. Legitimate fits of every model (the reproductions' grids, the largest
#: learning rates they use) rise by at most about 2x in that measure, an AdaGrad first step; a
#: diverging gradient step multiplies the loss by orders of magnitude per iteration.
LOSS_GROWTH_LIMIT = 1e3
#: ... or when the root mean square of the entries of a learned float array exceeds this many times
#: ``max(RMS at the start of the fit, 1, width of the rating scale)``. Legitimate fits stay below 1x
#: in that measure (factors whose products are ratings or score differences of a few units); 1e3x
#: means scores of order 1e6 times the rating scale, which no fit reaches without diverging.
NORM_GROWTH_LIMIT = 1e3


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
    :class:`~cofiviz.errors.ModelFitError` naming the parameters in :attr:`divergence_hint`.
    """

    __abstract = True
    #: False for closed-form models (PopRec, ItemMean): ``fit`` runs exactly one iteration
    iterative: ClassVar[bool] = True
    #: What to change when a fit diverges: ``(parameter, "lower" | "raise")`` pairs, the step size
    #: first. Empty only for closed-form models, which have no such parameter.
    divergence_hint: ClassVar[tuple[tuple[str, str], ...]] = ()

    seed = param.Integer(default=0, bounds=(0, None), doc="Seed of every random choice of the model.")
    max_iter = param.Integer(default=100, bounds=(1, 100_000), doc="Iterations at most.")
    patience = param.Integer(default=0, bounds=(0, None),
                             doc="Early stopping: iterations without validation improvement (0: off).")
    valid_metric = param.String(default="ndcg@10", doc="Metric watched by early stopping.")

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
        self.history_: list[dict] = []
        self.train_: Ratings | None = None
        self.fit_seconds_: float = float("nan")
        self.stopped_reason_: str = ""
        self.best_iteration_: int | None = None

    # ------------------------------------------------------------------ parameters
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
            its best value by more than :data:`LOSS_GROWTH_LIMIT` times, or a learned float array's
            root mean square grew past :data:`NORM_GROWTH_LIMIT` times its scale (see
            :meth:`_check_divergence`). The message names the parameters to change
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
            watch = _DivergenceWatch(self, train)
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
                self._check_divergence(it, loss, watch)
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

    def _check_divergence(self, iteration: int, loss: float, watch: "_DivergenceWatch") -> None:
        """Raise :class:`~cofiviz.errors.ModelFitError` if iteration ``iteration`` diverged.

        Checked after every iteration, in this order: the loss is NaN (for a method that has a
        loss) or infinite; the loss rose above its best value so far by more than
        ``LOSS_GROWTH_LIMIT · max(|best|, 1)``; a float array of :meth:`_state` holds a non-finite
        entry, or the root mean square of its entries exceeds ``NORM_GROWTH_LIMIT · max(RMS at the
        start of the fit, 1, width of the rating scale)``. The arrays are read in place (one sum of
        squares each, no copy), which costs far less than an iteration.
        """
        if np.isnan(loss) and not self._loss_may_be_nan():
            raise ModelFitError(self._divergence_message(f"the training loss is NaN after iteration {iteration}"))
        if np.isinf(loss):
            raise ModelFitError(self._divergence_message(
                f"the training loss is infinite after iteration {iteration}"))
        if np.isfinite(loss):
            best = watch.best_loss
            if best is not None and loss - best > LOSS_GROWTH_LIMIT * max(abs(best), 1.0):
                raise ModelFitError(self._divergence_message(
                    f"the training loss exploded (from its best {best:.3g} to {loss:.3g} after iteration "
                    f"{iteration})"))
            watch.best_loss = loss if best is None else min(best, loss)
        for key, arr in self._state().items():
            arr = np.asarray(arr)
            if arr.dtype.kind not in "fc" or arr.size == 0:
                continue
            if arr.dtype.kind == "c":
                arr = np.abs(arr)
            rms = _rms(arr)
            if np.isfinite(rms) and rms <= watch.limit(key, rms):
                continue
            if not np.all(np.isfinite(arr)):
                raise ModelFitError(self._divergence_message(
                    f"{key} became non-finite after iteration {iteration}"))
            if not np.isfinite(rms):  # finite entries whose squares overflow
                peak = float(np.max(np.abs(arr)))
                rms = peak * _rms(arr / peak)
            raise ModelFitError(self._divergence_message(
                f"the factors exploded ({key}: RMS {rms:.2g} after iteration {iteration}, "
                f"{watch.start.get(key, 0.0):.2g} at the start)"))

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

    def recommend(self, user: int, k: int = 10, exclude_seen: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` item indices for user index ``user`` and their scores, best first.

        Items the user rated in training are left out when ``exclude_seen`` is true. Ties are
        broken by item index (lower first), so the result is deterministic. Fewer than ``k`` items
        come back when fewer are left to recommend.

        Raises
        ------
        ParameterError
            ``user`` is not a user index or ``k`` is not a positive integer.
        """
        self._require_fitted()
        n_users, n_items = self.train_.n_users, self.train_.n_items
        if isinstance(user, (bool, np.bool_)) or not isinstance(user, (int, np.integer)) \
                or not (0 <= int(user) < n_users):
            raise ParameterError(f"user {user!r} is not a user index, expected an integer 0 <= user < {n_users}")
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or int(k) < 1:
            raise ParameterError(f"k must be a positive integer number of items, got {k!r}")
        items = np.arange(n_items)
        scores = self.score(np.full(n_items, int(user)), items)
        if exclude_seen:
            seen = self.train_.items[self.train_.user_slice(int(user))]
            keep = np.ones(n_items, dtype=bool)
            keep[seen] = False
            items, scores = items[keep], scores[keep]
        order = np.lexsort((items, -scores))[: int(k)]
        return items[order], scores[order]

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> Path:
        """Save to ``path`` with suffix ``.npz`` (arrays) and ``.json`` (parameters, ids, history).

        No pickle is used: learned arrays and the training table go into the ``.npz`` (numbers and
        fixed-width strings only, readable with ``np.load(..., allow_pickle=False)``); the model
        name, class, parameters and history into the JSON, with the SHA-256 of the ``.npz`` and the
        name, shape and dtype of each of its arrays (format :data:`FORMAT_VERSION`), which
        :meth:`load` checks. Each file is written under a temporary name and then renamed, so an
        interrupted save leaves the previous files or a pair whose checksums disagree, never a
        half-written file under the final name. Returns the ``.npz`` path.
        """
        self._require_fitted()
        path = Path(path)
        npz = path.with_suffix(".npz")
        js = npz.with_suffix(".json")
        npz.parent.mkdir(parents=True, exist_ok=True)
        arrays = {f"state__{k}": np.asarray(v) for k, v in self._state().items()}
        for k, v in arrays.items():
            if v.dtype.kind == "O":
                raise TypeError(f"{type(self).__name__}._state()[{k[7:]!r}] is an object array; "
                                "save needs numeric or string arrays")  # pragma: no cover
        t = self.train_
        arrays.update(train__users=t.users, train__items=t.items, train__ratings=t.ratings,
                      train__user_ids=t.user_ids, train__item_ids=t.item_ids)
        tmp_npz, tmp_js = npz.with_name(npz.name + ".tmp"), js.with_name(js.name + ".tmp")
        try:
            with open(tmp_npz, "wb") as fh:
                np.savez(fh, **arrays)
            meta = {"format": FORMAT_VERSION, "model": self.model_name(), "class": type(self).__name__,
                    "params": jsonable(self.get_params()), "scale": list(t.scale),
                    "checksum": {"sha256": _sha256(tmp_npz), "bytes": tmp_npz.stat().st_size},
                    "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str} for k, v in arrays.items()},
                    "history": jsonable(self.history_), "fit_seconds": self.fit_seconds_,
                    "stopped_reason": self.stopped_reason_, "extra": jsonable(self._extra_meta())}
            tmp_js.write_text(json.dumps(meta, indent=2, default=str))
            os.replace(tmp_npz, npz)
            os.replace(tmp_js, js)
        finally:
            for tmp in (tmp_npz, tmp_js):
                tmp.unlink(missing_ok=True)
        return npz

    @classmethod
    def load(cls, path) -> "Model":
        """Load a model written by :meth:`save` (call on :class:`Model` or on the right subclass).

        Everything is checked before a model is returned: both files exist; the JSON is a model
        description with the keys :meth:`save` writes; its ``model`` and ``class`` name a known model
        (of class ``cls`` or a subclass); the ``.npz`` has the SHA-256 the JSON records and opens; it
        holds every array the JSON lists with the recorded shape and dtype, the training table, and
        every array the model's ``_state_spec`` declares, shaped for the parameters and the training
        table.

        A save of another format than :data:`FORMAT_VERSION` is refused, format 1 included (written
        before saves carried a checksum, so its two files cannot be checked against each other):
        fit the model again and save it.

        Raises
        ------
        DataError
            Naming the file and the problem: a missing file; a JSON that is not a model description,
            lacks a key or has another format; an unknown model, or one of another class than
            ``cls``; a ``.npz`` that is damaged or truncated, or from another save than the JSON
            (checksum mismatch); a missing array; arrays whose shapes do not fit the parameters or
            the training table.
        """
        path = Path(path)
        npz, js = path.with_suffix(".npz"), path.with_suffix(".json")
        missing = [str(f) for f in (npz, js) if not f.is_file()]
        if missing:
            raise DataError(f"expected {npz} and {js} written by Model.save; missing: {', '.join(missing)}")
        meta = _read_meta(js)
        klass = _saved_class(cls, meta, js)
        _verify_checksum(npz, js, meta["checksum"])
        data = _read_npz(npz)
        for name, info in meta["arrays"].items():
            if name not in data:
                raise DataError(f"{npz} has no array {name!r}, which {js} lists")
            if list(data[name].shape) != list(info.get("shape", [])) or data[name].dtype.str != info.get("dtype"):
                raise DataError(f"{npz}: array {name!r} is {data[name].dtype.str} of shape {list(data[name].shape)}, "
                                f"{js} records {info.get('dtype')} of shape {info.get('shape')}")
        absent = [k for k in _TRAIN_ARRAYS if k not in data]
        if absent:
            raise DataError(f"{npz} has no training-table array {absent[0]!r}; it was not written by Model.save")
        try:
            model = klass(**meta["params"])
        except ParameterError as exc:
            raise DataError(f"{js}: its parameters do not fit a {klass.__name__}: {_one_line(exc)}") from None
        try:
            train = Ratings(data["train__users"], data["train__items"], data["train__ratings"],
                            user_ids=data["train__user_ids"], item_ids=data["train__item_ids"],
                            scale=tuple(meta["scale"]), name="train")
        except (DataError, ValueError, TypeError, IndexError) as exc:
            raise DataError(f"{npz}: the training table is not valid: {_one_line(exc)}") from None
        state = {k[len("state__"):]: v for k, v in data.items() if k.startswith("state__")}
        spec = model._state_spec(train.n_users, train.n_items)
        for key, shape in (spec or {}).items():
            if key not in state:
                raise DataError(f"{npz} has no array 'state__{key}', which a {klass.__name__} needs")
            got = state[key].shape
            if len(got) != len(shape) or any(want is not None and g != want for g, want in zip(got, shape)):
                want = "(" + ", ".join("any" if w is None else str(w) for w in shape) + ")"
                raise DataError(f"{npz}: array 'state__{key}' has shape {got}, but a {klass.__name__} with the "
                                f"parameters of {js} and a training table of {train.n_users} users x "
                                f"{train.n_items} items needs {want}")
        try:
            model._set_extra_meta(meta.get("extra") or {})
            model._set_state(state)
        except KeyError as exc:
            raise DataError(f"{npz} has no array 'state__{exc.args[0]}', which a {klass.__name__} needs") from None
        except (CofivizError, ValueError, TypeError, IndexError, AttributeError) as exc:
            raise DataError(f"{npz}: the arrays do not make a {klass.__name__}: {_one_line(exc)}") from None
        model.train_ = train
        model.history_ = meta.get("history", [])
        model.fit_seconds_ = meta.get("fit_seconds", float("nan"))
        model.stopped_reason_ = meta.get("stopped_reason", "")
        return model

    def _extra_meta(self) -> dict:
        return {}

    def _set_extra_meta(self, extra: dict) -> None:
        pass

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


class _DivergenceWatch:
    """What the divergence checks of one fit compare against.

    ``best_loss`` is the lowest finite loss so far; ``start`` the root mean square of every float
    array of :meth:`Model._state` right after ``_setup`` (an array that appears later, such as a kept
    best iterate, is measured when first seen); ``floor`` the larger of 1 and the width of the
    training table's rating scale, the size that factors and offsets of a sane fit may reach
    whatever their start (biases start at 0, some factors at 0.001).
    """

    def __init__(self, model: Model, train: Ratings):
        self.best_loss: float | None = None
        self.floor = max(1.0, float(train.scale[1] - train.scale[0]))
        self.start: dict[str, float] = {}
        if model.iterative:  # a closed-form model has no state before its one step
            for key, arr in model._state().items():
                arr = np.asarray(arr)
                if arr.dtype.kind == "f" and arr.size:
                    rms = _rms(arr)
                    if np.isfinite(rms):
                        self.start[key] = rms

    def limit(self, key: str, rms: float) -> float:
        """The largest root mean square array ``key`` may reach (``rms``: its value now)."""
        if key not in self.start and np.isfinite(rms):
            self.start[key] = rms
        return NORM_GROWTH_LIMIT * max(self.start.get(key, 0.0), self.floor)


def _rms(arr: np.ndarray) -> float:
    """Root mean square of the entries of a float array, read in place (``inf`` when the squares overflow)."""
    if arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    axes = list(range(arr.ndim))
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.einsum(arr, axes, arr, axes, []))
    return float(np.sqrt(total / arr.size))


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


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _read_meta(js: Path) -> dict:
    """The JSON of a save, checked for the keys :meth:`Model.load` reads."""
    try:
        meta = json.loads(js.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{js}: not a model description written by Model.save (not JSON: {exc})") from None
    if not isinstance(meta, dict):
        raise DataError(f"{js}: not a model description written by Model.save (a JSON {type(meta).__name__}, "
                        "expected an object)")
    if "format" not in meta:
        raise DataError(f"{js}: the model description lacks the key 'format'")
    fmt = meta["format"]
    if fmt == 1 and not isinstance(fmt, bool):
        raise DataError(f"{js} is a format-1 save, written before saves carried a checksum of their .npz, so "
                        "its two files cannot be checked against each other; fit the model again and save it")
    if fmt != FORMAT_VERSION:
        raise DataError(f"{js}: format {fmt!r} is not one this cofiviz reads (it reads format {FORMAT_VERSION})")
    absent = [k for k in _META_KEYS if k not in meta]
    if absent:
        raise DataError(f"{js}: the model description lacks the key(s) {', '.join(map(repr, absent))}")
    for key, kind in (("model", str), ("class", str), ("params", dict), ("scale", list)):
        if not isinstance(meta[key], kind):
            raise DataError(f"{js}: {key!r} must be a JSON {'string' if kind is str else kind.__name__}, "
                            f"got {meta[key]!r}")
    if len(meta["scale"]) != 2:
        raise DataError(f"{js}: 'scale' must be [lowest, highest], got {meta['scale']!r}")
    if not isinstance(meta["checksum"], dict) or not isinstance(meta["checksum"].get("sha256"), str):
        raise DataError(f"{js}: 'checksum' must be an object with the 'sha256' of the .npz, got {meta['checksum']!r}")
    if not isinstance(meta["arrays"], dict) or not all(isinstance(v, dict) for v in meta["arrays"].values()):
        raise DataError(f"{js}: 'arrays' must map each array name to its shape and dtype")
    return meta


def _saved_class(cls: type[Model], meta: dict, js: Path) -> type[Model]:
    """The class a save holds, checked against ``cls`` (the class ``load`` was called on)."""
    name, class_name = meta["model"], meta["class"]
    if cls is not Model and class_name == cls.__name__ and name == cls.model_name():
        return cls  # also covers unregistered subclasses
    klass = MODEL_REGISTRY.get(name)
    if klass is None:
        from . import _load_all  # noqa: F401
        klass = MODEL_REGISTRY.get(name)
    if klass is None:
        raise DataError(f"{js}: unknown model {name!r}; known: {', '.join(sorted(MODEL_REGISTRY))}")
    if klass.__name__ != class_name:
        raise DataError(f"{js}: model {name!r} is a {klass.__name__}, but the file names the class {class_name!r}")
    if cls is not Model and not issubclass(klass, cls):
        raise DataError(f"{js} holds a {klass.__name__}, not a {cls.__name__}")
    return klass


def _verify_checksum(npz: Path, js: Path, checksum: dict) -> None:
    """Compare the ``.npz`` with the SHA-256 its JSON records; tell a damaged file from another save's."""
    if _sha256(npz) == checksum["sha256"]:
        return
    try:
        with zipfile.ZipFile(npz) as zf:
            intact = zf.testzip() is None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, zlib.error):
        intact = False
    if intact:
        raise DataError(f"{js} and {npz} are not from the same save (checksum mismatch: {npz} is a readable "
                        f"archive, but not the one {js} describes)")
    size = checksum.get("bytes")
    got = npz.stat().st_size
    how = f"{got:,} bytes, the save wrote {size:,}" if isinstance(size, int) and size != got else "its bytes changed"
    raise DataError(f"{npz} is damaged or truncated (checksum mismatch with {js}; {how})")


def _read_npz(npz: Path) -> dict[str, np.ndarray]:
    """Every array of a ``.npz``, read into memory; an unreadable archive is a :class:`DataError`."""
    try:
        data = np.load(npz, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):  # a lone .npy array under the .npz name
            raise ValueError("it holds a single array, not an archive of named arrays")
        with data:
            return {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, zlib.error) as exc:
        raise DataError(f"{npz} is not a readable .npz archive ({type(exc).__name__}: {_one_line(exc)})") from None


def available_models() -> list[str]:
    """Names of the registered models (what ``cofiviz run MODEL`` accepts)."""
    from . import _load_all  # noqa: F401  (importing registers every model)
    return sorted(MODEL_REGISTRY)


def get_model_class(name: str) -> type[Model]:
    from . import _load_all  # noqa: F401
    key = str(name).lower()
    if key not in MODEL_REGISTRY:
        raise ParameterError(f"unknown model {name!r}; available models: {', '.join(sorted(MODEL_REGISTRY))}")
    return MODEL_REGISTRY[key]


def make_model(name: str, **params) -> Model:
    """Build a registered model by name with keyword parameters."""
    return get_model_class(name)(**params)
