"""Every registered model trained once on all of MovieLens 100K, in the background, for the recommendations page.

:class:`RecommenderPool` trains the models one after another in a worker process (forked from the training
workers' forkserver, at a lower priority and with a core left to the server), fastest first, so that the page
appears at once and its lists fill in as the models finish. Each model is tuned with
:meth:`cofiviz.models.Model.tune` on a seeded tenth of the ratings held out (a budget of :data:`BUDGET`
seconds, ``$COFIVIZ_RECOMMENDER_BUDGET``), refitted on all of them, and saved (``.npz`` + JSON) under
:func:`recommenders_dir`; a server started later loads them from there instead of training again.

``$COFIVIZ_RECOMMENDERS_QUICK=1`` trains every model for a few iterations at its defaults instead (the test
suite's servers use it). ``$COFIVIZ_RECOMMENDERS_DIR`` puts the saved models elsewhere.

The worker ends with the server: it watches a pipe whose other end the server holds, and exits when it closes.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._version import __version__
from ..datasets import default_cache_dir
from ..models import available_models, get_model_class, make_model
from ._shared import load_dataset
from .training_process import leave_a_core, worker_context

__all__ = ["DATA", "BUDGET", "QUICK_ITERATIONS", "RecommenderPool", "PoolStatus", "pool", "ordered", "train_one",
           "recommenders_dir", "budget_from_environment", "quick_from_environment"]

DATA = "MovieLens 100K"
#: seconds of tuning per model, unless ``$COFIVIZ_RECOMMENDER_BUDGET`` says otherwise
BUDGET = 30.0
#: iterations per model in quick mode (``$COFIVIZ_RECOMMENDERS_QUICK=1``)
QUICK_ITERATIONS = 3
#: trained first, in this order: they take a second each and fill the page at once
FIRST = ("poprec", "itemmean", "regsvd", "nmf")
#: trained last: their fits take minutes on MovieLens 100K
LAST = ("cgpr", "cgpor")
#: the file a model's directory holds once it is complete
META = "meta.json"


def budget_from_environment() -> float:
    """The tuning budget per model: ``$COFIVIZ_RECOMMENDER_BUDGET`` seconds, else :data:`BUDGET`."""
    raw = os.environ.get("COFIVIZ_RECOMMENDER_BUDGET", "")
    try:
        value = float(raw) if raw else BUDGET
    except ValueError:
        raise ValueError(f"COFIVIZ_RECOMMENDER_BUDGET must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"COFIVIZ_RECOMMENDER_BUDGET must be positive, got {raw!r}")
    return value


def quick_from_environment() -> bool:
    """True when ``$COFIVIZ_RECOMMENDERS_QUICK`` is ``1`` (a few iterations at the defaults, no tuning)."""
    return os.environ.get("COFIVIZ_RECOMMENDERS_QUICK", "") == "1"


def recommenders_dir(budget: float, quick: bool) -> Path:
    """Where the trained models are saved: ``$COFIVIZ_RECOMMENDERS_DIR``, else under the data cache, one folder
    per cofiviz version and training mode (a new version or budget trains again)."""
    if os.environ.get("COFIVIZ_RECOMMENDERS_DIR"):
        return Path(os.environ["COFIVIZ_RECOMMENDERS_DIR"]).expanduser()
    mode = f"quick{QUICK_ITERATIONS}" if quick else f"tuned{budget:g}s"
    return default_cache_dir() / "recommenders" / f"{__version__}-{mode}"


def ordered(names) -> list[str]:
    """``names`` in training order: :data:`FIRST` (the quick baselines), the others alphabetically, :data:`LAST`."""
    names = list(names)
    first = [n for n in FIRST if n in names]
    last = [n for n in LAST if n in names]
    return first + sorted(n for n in names if n not in first and n not in last) + last


def _describe(model, trials: int | None, seconds: float, quick: bool) -> dict:
    return {"name": type(model).model_name(), "class": type(model).__name__, "params": model.get_params(),
            "tuned": not quick, "trials": trials, "seconds": round(seconds, 2),
            "iterations": len(model.history_), "cofiviz": __version__}


def train_one(name: str, directory: str | Path, *, budget: float = BUDGET, quick: bool = False,
              ratings=None) -> dict:
    """Train model ``name`` on all of :data:`DATA` and save it as ``directory/name``; returns its description.

    Tuned for ``budget`` seconds on a seeded tenth of the ratings held out, then refitted on all (or, when
    ``quick``, fitted at its defaults for at most :data:`QUICK_ITERATIONS` iterations). The folder appears
    complete or not at all (it is written beside and renamed).
    """
    ratings = load_dataset(DATA) if ratings is None else ratings
    directory = Path(directory)
    t0 = time.perf_counter()
    model = make_model(name)
    trials = None
    if quick:
        if "max_iter" in model.param_names():
            model.set_params(max_iter=min(QUICK_ITERATIONS, model.max_iter))
        model.fit(ratings)
    else:
        model.tune(ratings, None, budget=budget, seed=0)
        trials = len(model.tuning_.trials)
    meta = _describe(model, trials, time.perf_counter() - t0, quick)
    partial = directory / f".{name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    model.save(partial / "model")
    (partial / META).write_text(json.dumps(meta, indent=1, default=str))
    final = directory / name
    shutil.rmtree(final, ignore_errors=True)
    os.replace(partial, final)
    return meta


def _ready(directory: Path, name: str) -> bool:
    return (directory / name / META).is_file()


def _exit_when_server_goes(control) -> None:
    """Worker side: the server's end of ``control`` closed (it exited, even when killed): exit at once."""
    try:
        while True:
            control.recv()
    except (EOFError, OSError):
        os._exit(0)


def _worker_main(control, directory: str, names: list[str], budget: float, quick: bool) -> None:
    """Train every model of ``names`` that ``directory`` does not hold yet; a failure is written as
    ``directory/name.error`` and the next model goes on."""
    threading.Thread(target=_exit_when_server_goes, args=(control,), daemon=True,
                     name="cofiviz-recommenders-watch").start()
    leave_a_core()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ratings = load_dataset(DATA)
    for name in names:
        if _ready(directory, name):
            continue
        (directory / "training").write_text(name)
        try:
            train_one(name, directory, budget=budget, quick=quick, ratings=ratings)
            (directory / f"{name}.error").unlink(missing_ok=True)
        except Exception as exc:  # one model failing leaves the others to train
            (directory / f"{name}.error").write_text(f"{type(exc).__name__}: {exc}")
    (directory / "training").unlink(missing_ok=True)


@dataclass
class PoolStatus:
    """What the pool has: the models ready (in training order), the one in training, the failed ones."""

    ready: list[str]
    pending: list[str]
    training: str | None = None
    failed: dict[str, str] = field(default_factory=dict)
    alive: bool = False

    @property
    def done(self) -> bool:
        """Every model is ready or failed (or the worker is gone, so nothing more will come)."""
        return not self.pending or not self.alive


class RecommenderPool:
    """Trains every registered model once, in one background worker process, and loads them for the pages.

    Parameters
    ----------
    directory : path, optional
        Where the models are saved (default :func:`recommenders_dir`).
    names : list of str, optional
        The models (default: every registered one).
    budget : float, optional
        Tuning seconds per model (default :func:`budget_from_environment`).
    quick : bool, optional
        A few iterations at the defaults instead of tuning (default :func:`quick_from_environment`).
    """

    def __init__(self, directory=None, names=None, budget: float | None = None, quick: bool | None = None):
        self.budget = budget_from_environment() if budget is None else float(budget)
        self.quick = quick_from_environment() if quick is None else bool(quick)
        self.directory = Path(directory) if directory is not None else recommenders_dir(self.budget, self.quick)
        self.names = ordered(available_models() if names is None else names)
        self._process = None
        self._control = None
        self._lock = threading.Lock()
        self._models: dict[str, tuple[float, object]] = {}

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def start(self) -> bool:
        """Start the worker unless it runs or every model is saved already; True when it started."""
        with self._lock:
            if self.alive or all(_ready(self.directory, n) for n in self.names):
                return False
            self.directory.mkdir(parents=True, exist_ok=True)
            for name in self.names:  # a new worker tries the failed ones again
                (self.directory / f"{name}.error").unlink(missing_ok=True)
            ctx = worker_context()
            child_control, self._control = ctx.Pipe(duplex=False)
            self._process = ctx.Process(target=_worker_main, daemon=True, name="cofiviz-recommenders",
                                        args=(child_control, str(self.directory), self.names, self.budget,
                                              self.quick))
            try:
                self._process.start()
            finally:
                child_control.close()
            return True

    def stop(self) -> None:
        """End the worker (the models saved so far stay)."""
        with self._lock:
            if self._control is not None:
                self._control.close()
                self._control = None
            if self._process is not None:
                self._process.join(5)
                if self._process.is_alive():
                    self._process.kill()
                    self._process.join(5)

    def wait(self, timeout: float | None = None, poll: float = 0.5) -> PoolStatus:
        """Wait until every model is ready or failed, or ``timeout`` seconds; returns the status then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self.status()
            if st.done or (deadline is not None and time.monotonic() >= deadline):
                return st
            time.sleep(poll)

    def status(self) -> PoolStatus:
        """Which models are ready, failed, in training and still to come."""
        ready, pending, failed = [], [], {}
        for name in self.names:
            err = self.directory / f"{name}.error"
            if _ready(self.directory, name):
                ready.append(name)
            elif err.is_file():
                failed[name] = err.read_text()
            else:
                pending.append(name)
        current = self.directory / "training"
        try:
            training = current.read_text().strip() or None
        except OSError:
            training = None
        return PoolStatus(ready=ready, pending=pending, training=training if training in pending else None,
                          failed=failed, alive=self.alive)

    def meta(self, name: str) -> dict:
        """The description saved with model ``name`` (its parameters, whether tuned, trials, seconds)."""
        return json.loads((self.directory / name / META).read_text())

    def model(self, name: str):
        """Model ``name`` as saved (loaded once per save; read-only: do not fit it)."""
        meta = self.directory / name / META
        stamp = meta.stat().st_mtime
        with self._lock:
            cached = self._models.get(name)
            if cached is not None and cached[0] == stamp:
                return cached[1]
        model = get_model_class(name).load(self.directory / name / "model")
        with self._lock:
            self._models[name] = (stamp, model)
        return model


_POOL: RecommenderPool | None = None
_POOL_LOCK = threading.Lock()


def pool(start: bool = True) -> RecommenderPool:
    """The process's one :class:`RecommenderPool` (configured from the environment), started unless ``start``
    is False."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = RecommenderPool()
    if start:
        _POOL.start()
    return _POOL
