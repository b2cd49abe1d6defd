"""Every registered model trained once on MovieLens 100K (and, when asked, MovieLens 1M), in the background,
for the recommendations page.

:class:`RecommenderPool` trains the models of one data set one after another in a worker process (forked from
the training workers' forkserver, at a lower priority than the server's, so that it trains on the cores the
sessions leave idle), quickest fit first, so that the page appears at once and its lists fill in as the models
finish. Each model is saved (``.npz`` + JSON) under :func:`recommenders_dir`; a server started later loads them
from there instead of training again.

How a model is trained is its :class:`Recipe` (:func:`recipe`):

MovieLens 100K
    fitted on all the ratings with the settings that :func:`cofiviz.search.tuning.tune` chose for it on a
    seeded tenth of the ratings held out (a search of :data:`BUDGET` seconds), a search made once and shipped
    with cofiviz (:mod:`.recommender_settings`). A fresh server then spends on each model only its fit, not its
    search. A model the file does not hold is tuned here (a budget of :data:`BUDGET` seconds,
    ``$COFIVIZ_RECOMMENDER_BUDGET``), then refitted on all the ratings.
MovieLens 1M
    trained only once a page asks for it (or ``$COFIVIZ_RECOMMENDERS_ML1M=1`` asks at the server's start), after
    MovieLens 100K's models: its pool waits for the 100K worker to end, so that the two never share the server's
    two cores. Each model is tuned with the same budget on a seeded sample of :data:`TUNE_USERS` users (all
    their ratings, a tenth held out), then refitted on all of MovieLens 1M with the chosen setting; an
    iterative model refits for the number of iterations its best trial ran on the sample. What a model's class
    declares of its cost (``Model.scale``, :func:`recipe`) makes the exceptions: a *heavy* model (the
    collaborative Gaussian processes, CGPR and CGPOR, whose EM multiplies and factorises 3,706 × 3,706 item
    matrices every iteration, about a minute each on one core) is not searched: it runs
    :data:`HEAVY_ITERATIONS` iterations at its defaults on a seeded sample of :data:`HEAVY_USERS` users, and
    every user of MovieLens 1M is then folded in (for the GPs, each user's posterior from the learned item mean
    and covariance). A model capped *per user* (CofiRank, whose NDCG loss solves an assignment over each user's
    rated items at every step of its bundle method, about k·n² for a user of n ratings; MovieLens 1M's users
    have up to 2,314, and one iteration on all their ratings took 7 minutes) is tuned and fitted on at most
    that many ratings of each user (a seeded choice; CofiRank's 100), as in CofiRank's own weak-generalization
    protocol of N ratings a user.

``$COFIVIZ_RECOMMENDERS_QUICK=1`` trains every model for :data:`QUICK_ITERATIONS` iterations (a heavy one for
:data:`QUICK_HEAVY_ITERATIONS`; an inner loop such as a hyper-parameter ascent, ``Model.inner_iterations``, as many)
at its defaults instead, on a quick subset of the data set (:func:`quick_subset`: the ratings of the
:data:`QUICK_ITEMS` most-rated movies, at most :data:`QUICK_PER_USER` a user); the test suite's servers use it.
``$COFIVIZ_RECOMMENDERS_DIR`` puts the saved models elsewhere (MovieLens 1M's in its subfolder ``movielens-1m``).
``$COFIVIZ_RECOMMENDERS_MODELS`` (registry names separated by commas) trains and shows only those models, on every
data set: a server on few cores can offer a class fewer of them (:func:`models_from_environment`).

The worker ends with the server: it watches a pipe whose other end the server holds, and exits when it closes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..util._version import __version__
from ..datasets import default_cache_dir
from ..util.errors import ParameterError
from ..util.jsonable import jsonable
from ..models import available_models, get_model_class, make_model
from ..search.tuning import tune
from .offered import load_dataset
from .recommender_settings import BUDGET, DATA, SETTINGS_FILE, settings_digest, shipped_settings
from .training_process import leave_a_core, worker_context

__all__ = ["DATA", "ML1M", "OFFERED", "BUDGET", "QUICK_ITERATIONS", "TUNE_USERS", "SETTINGS_FILE", "Recipe", "recipe",
           "defaults_digest",
           "RecommenderPool", "PoolStatus", "pool", "ordered", "train_one", "recommenders_dir", "user_sample",
           "cap_per_user", "quick_subset", "budget_from_environment", "quick_from_environment", "ml1m_from_environment",
           "models_from_environment", "MODELS_ENV"]

ML1M = "MovieLens 1M"
#: the data sets the page offers, the default first
OFFERED = (DATA, ML1M)
#: the folder (under MovieLens 100K's) and the name in paths of each data set other than the default
FOLDERS = {ML1M: "movielens-1m"}
#: iterations per model in quick mode (``$COFIVIZ_RECOMMENDERS_QUICK=1``), and per heavy model (``Model.scale``)
QUICK_ITERATIONS = 3
QUICK_HEAVY_ITERATIONS = 1
#: the file a model's directory holds once it is complete
META = "meta.json"
#: MovieLens 1M: the users of the seeded sample a model is tuned on
TUNE_USERS = 1000
#: MovieLens 1M: a heavy model's iterations (``Model.scale.heavy``), and the users of the seeded sample it learns
#: from before every user is folded in
HEAVY_ITERATIONS = 3
HEAVY_USERS = 1000
#: quick mode's subset: the most-rated movies kept, and the ratings kept per user at most
QUICK_ITEMS = 300
QUICK_PER_USER = 30


@dataclass(frozen=True)
class Recipe:
    """How one model is trained on one data set.

    Attributes
    ----------
    search : bool
        Tune the model's settings (:func:`cofiviz.search.tuning.tune`) before the fit; else its defaults.
    tune_users : int, optional
        Tune on a seeded sample of this many users (all their ratings) instead of every user; the model is
        then refitted on all the ratings.
    fit_users : int, optional
        Fit on a seeded sample of this many users, then fold every user in (``fold_in``: the model's learned
        item side scores each user from the user's own ratings).
    per_user : int, optional
        Tune and fit on at most this many ratings of each user (a seeded choice, :func:`cap_per_user`).
    params : dict
        Settings fixed before the search and the fit.
    note : str
        What the page says about the recipe ("" for the data set's usual one).
    shipped_trials : int, optional
        ``params`` are the choice of a shipped search of this many trials (:data:`SETTINGS_FILE`).
    """

    search: bool = True
    tune_users: int | None = None
    fit_users: int | None = None
    per_user: int | None = None
    params: dict = field(default_factory=dict)
    note: str = ""
    shipped_trials: int | None = None


def _ml1m_recipe(name: str) -> Recipe:
    """MovieLens 1M's recipe of model ``name``, from what its class declares of its cost (``Model.scale``)."""
    scale = get_model_class(name).scale
    if scale.heavy:
        params = {k: v for k, v in (("max_iter", HEAVY_ITERATIONS), ("tol", 0.0)) if k in get_model_class(name).param}
        return Recipe(search=False, fit_users=HEAVY_USERS, params=params,
                      note=f"not searched: {HEAVY_ITERATIONS} iterations at the defaults on a seeded sample of "
                           f"{HEAVY_USERS:,} users, then every user folded in ({scale.why})")
    if scale.per_user is not None:
        return Recipe(tune_users=TUNE_USERS, per_user=scale.per_user,
                      note=f"tuned and fitted on at most {scale.per_user} ratings of each user (a seeded choice): "
                           f"{scale.why}")
    return Recipe(tune_users=TUNE_USERS)


def recipe(name: str, data: str = DATA) -> Recipe:
    """How model ``name`` is trained on ``data`` (a label of :data:`OFFERED`) outside quick mode."""
    if data == ML1M:
        return _ml1m_recipe(name)
    entry = shipped_settings().get(name)
    if entry is None:
        return Recipe()
    return Recipe(search=False, params=dict(entry["params"]), shipped_trials=entry["trials"],
                  note=(f"settings shipped with cofiviz: chosen by a {entry['trials']:,}-trial search on a held-out "
                        f"tenth of the ratings (validation {entry['metric']} {entry['score']:.4f})"))


def _check_data(data: str) -> None:
    if data not in OFFERED:
        raise ValueError(f"the recommendations are trained on {', '.join(OFFERED)}; got {data!r}")


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


def ml1m_from_environment() -> bool:
    """True when ``$COFIVIZ_RECOMMENDERS_ML1M`` is ``1``: a server trains MovieLens 1M's models from its start
    (after MovieLens 100K's), not only once a page asks for them."""
    return os.environ.get("COFIVIZ_RECOMMENDERS_ML1M", "") == "1"


#: the environment variable that names the models the pages train (default: every registered one)
MODELS_ENV = "COFIVIZ_RECOMMENDERS_MODELS"


def models_from_environment() -> list[str]:
    """The models the recommendations page trains and shows: the registry names in ``$COFIVIZ_RECOMMENDERS_MODELS``
    (separated by commas, each once), else every registered model.

    Raises
    ------
    ParameterError
        When the variable names a model the registry does not know, names one twice, or names none.
    """
    raw = os.environ.get(MODELS_ENV, "").strip()
    if not raw:
        return available_models()
    names = [n.strip().lower() for n in raw.split(",")]
    known = available_models()
    unknown = [n for n in names if n and n not in known]
    if unknown or "" in names:
        shown = ", ".join(repr(n) for n in unknown) if unknown else "an empty name"
        raise ParameterError(f"${MODELS_ENV} names {shown}; expected registry names separated by commas, "
                         f"among: {', '.join(known)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ParameterError(f"${MODELS_ENV} names {', '.join(map(repr, twice))} more than once: {raw!r}")
    return names


def defaults_digest() -> str:
    """A short digest of every registered model's default parameters, so that changed defaults train into a new
    folder in quick mode (which fits the defaults)."""
    defaults = {name: get_model_class(name)().get_params() for name in available_models()}
    return hashlib.sha1(json.dumps(jsonable(defaults), sort_keys=True).encode()).hexdigest()[:8]


def recommenders_dir(budget: float, quick: bool, data: str = DATA) -> Path:
    """Where the trained models of ``data`` are saved: ``$COFIVIZ_RECOMMENDERS_DIR``, else under the data cache,
    one folder per cofiviz version and training mode (a new version, budget, shipped settings or, in quick mode,
    models' defaults train again); MovieLens 1M's in the subfolder ``movielens-1m`` of MovieLens 100K's, beside its
    models and never in their way."""
    _check_data(data)
    if os.environ.get("COFIVIZ_RECOMMENDERS_DIR"):
        base = Path(os.environ["COFIVIZ_RECOMMENDERS_DIR"]).expanduser()
    else:
        mode = (f"quick{QUICK_ITERATIONS}-defaults{defaults_digest()}" if quick
                else f"shipped{settings_digest()}-tuned{budget:g}s")
        base = default_cache_dir() / "recommenders" / f"{__version__}-{mode}"
    return base / FOLDERS[data] if data in FOLDERS else base


def ordered(names) -> list[str]:
    """``names`` in training order: quickest fit first (the shipped settings' ``fit_seconds``), so that the page
    fills at once; the models without shipped settings last, alphabetically (each is searched first)."""
    known = shipped_settings()
    return sorted(names, key=lambda n: (n not in known, known.get(n, {}).get("fit_seconds", 0.0), n))


def user_sample(ratings, n_users: int, seed: int = 0, *, reindex: bool = True):
    """The ratings of a seeded sample of ``n_users`` users (all of them when there are no more).

    With ``reindex`` the table holds only the sampled users (and every item, with its side table); without, it
    keeps ``ratings``' index space (the other users have no ratings), as a ``fold_in`` of all users needs.
    """
    if n_users >= ratings.n_users:
        return ratings
    users = np.sort(np.random.default_rng(seed).choice(ratings.n_users, size=n_users, replace=False))
    keep = np.zeros(ratings.n_users, dtype=bool)
    keep[users] = True
    part = ratings.take(keep[ratings.users], name=f"{ratings.name} ({n_users:,} users, seed {seed})")
    return part.reindexed(keep_users=users) if reindex else part


def cap_per_user(ratings, per_user: int, seed: int = 0, keep=None):
    """At most ``per_user`` ratings of each user (a seeded choice among those of ``keep``, a mask of the ratings:
    default all), in ``ratings``' index space."""
    keep = np.ones(len(ratings), dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    rng = np.random.default_rng(seed)
    chosen = np.zeros(len(ratings), dtype=bool)
    for u in range(ratings.n_users):
        sl = ratings.user_slice(u)
        mine = np.flatnonzero(keep[sl]) + sl.start
        chosen[mine if len(mine) <= per_user else rng.choice(mine, size=per_user, replace=False)] = True
    return ratings.take(chosen, name=f"{ratings.name} (at most {per_user} a user)")


def quick_subset(ratings, n_items: int = QUICK_ITEMS, per_user: int = QUICK_PER_USER, seed: int = 0):
    """Quick mode's data: the ratings of the ``n_items`` most-rated items, at most ``per_user`` of each
    user's (a seeded choice), in a table of those items and of the users left with ratings."""
    counts = ratings.item_counts()
    items = np.sort(np.lexsort((np.arange(ratings.n_items), -counts))[:n_items])
    on_item = np.zeros(ratings.n_items, dtype=bool)
    on_item[items] = True
    part = cap_per_user(ratings, per_user, seed, keep=on_item[ratings.items])
    users = np.flatnonzero(np.bincount(part.users, minlength=ratings.n_users) > 0)
    return part.reindexed(keep_users=users, keep_items=items)


def _describe(model, trials: int | None, seconds: float, quick: bool, data: str, how: Recipe, fitted_on) -> dict:
    return {"name": type(model).model_name(), "class": type(model).__name__, "label": type(model).display_name(),
            "params": model.get_params(),
            "tuned": trials is not None, "trials": trials, "shipped": how.shipped_trials is not None,
            "seconds": round(seconds, 2),
            "iterations": len(model.history_), "cofiviz": __version__, "data": data, "quick": quick,
            "note": how.note, "fitted_on": {"ratings": len(fitted_on), "users": fitted_on.n_users,
                                            "items": fitted_on.n_items}}


def _fit(name: str, ratings, budget: float, quick: bool, data: str, how: Recipe | None):
    """Model ``name`` trained on ``ratings`` by recipe ``how`` (default: :func:`recipe`'s): ``(model, trials or
    None, the table fitted on, the recipe)``."""
    if quick:
        how = Recipe(search=False, note=(f"quick: a few iterations at the defaults on the ratings of the "
                                         f"{QUICK_ITEMS} most-rated movies, at most {QUICK_PER_USER} a user"))
        data_fit = quick_subset(ratings)
        model = make_model(name)
        most = QUICK_HEAVY_ITERATIONS if type(model).scale.heavy else QUICK_ITERATIONS
        caps = ("max_iter", *type(model).inner_iterations)   # its iterations and any inner loop's
        model.set_params(**{p: min(most, getattr(model, p)) for p in caps if p in model.param_names()})
        return model.fit(data_fit), None, data_fit, how
    how = recipe(name, data) if how is None else how
    ratings = ratings if how.per_user is None else cap_per_user(ratings, how.per_user)
    model = make_model(name, **how.params)
    if how.search and how.tune_users is None and how.fit_users is None:
        tune(model, ratings, None, budget=budget, seed=0)
        return model, len(model.tuning_.trials), ratings, how
    trials = None
    if how.search:
        sample = user_sample(ratings, how.tune_users) if how.tune_users else ratings
        trials = len(tune(model, sample, None, budget=budget, seed=0, refit=False).trials)
    if how.fit_users is None:
        return model.fit(ratings), trials if how.shipped_trials is None else how.shipped_trials, ratings, how
    model.fit(user_sample(ratings, how.fit_users, reindex=False))
    return model.fold_in(ratings), trials, ratings, how


def train_one(name: str, directory: str | Path, *, budget: float = BUDGET, quick: bool = False,
              ratings=None, data: str = DATA, how: Recipe | None = None) -> dict:
    """Train model ``name`` on ``data`` by its recipe and save it as ``directory/name``; returns its description.

    ``ratings`` are ``data``'s ratings (loaded when not given). ``how`` overrides :func:`recipe`'s recipe.
    When ``quick``, the model is fitted at its defaults for at most :data:`QUICK_ITERATIONS` iterations (on
    :func:`quick_subset`) and ``how`` is not used. The folder appears complete or not at all
    (it is written beside and renamed).
    """
    if ratings is None:
        _check_data(data)
        ratings = load_dataset(data)
    directory = Path(directory)
    t0 = time.perf_counter()
    model, trials, fitted_on, how = _fit(name, ratings, budget, quick, data, how)
    meta = _describe(model, trials, time.perf_counter() - t0, quick, data, how, fitted_on)
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


def _worker_main(control, directory: str, names: list[str], budget: float, quick: bool, data: str = DATA) -> None:
    """Train every model of ``names`` that ``directory`` does not hold yet; a failure is written as
    ``directory/name.error`` and the next model goes on."""
    threading.Thread(target=_exit_when_server_goes, args=(control,), daemon=True,
                     name="cofiviz-recommenders-watch").start()
    leave_a_core(spare=0)    # every core, below the server: sessions come first, but idle cores train
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        ratings = load_dataset(data)
    except Exception as exc:  # every model fails with the reason, which the page shows
        for name in names:
            (directory / f"{name}.error").write_text(f"could not load {data}: {type(exc).__name__}: {exc}")
        return
    for name in names:
        if _ready(directory, name):
            continue
        (directory / "training").write_text(name)
        try:
            train_one(name, directory, budget=budget, quick=quick, ratings=ratings, data=data)
            (directory / f"{name}.error").unlink(missing_ok=True)
        except Exception as exc:  # one model failing leaves the others to train
            (directory / f"{name}.error").write_text(f"{type(exc).__name__}: {exc}")
    (directory / "training").unlink(missing_ok=True)


@dataclass
class PoolStatus:
    """What the pool has: the models ready (in training order), the one in training, the failed ones; ``queued``
    while its worker waits for another pool's to end."""

    ready: list[str]
    pending: list[str]
    training: str | None = None
    failed: dict[str, str] = field(default_factory=dict)
    alive: bool = False
    queued: bool = False

    @property
    def done(self) -> bool:
        """Every model is ready or failed (or the worker is gone and none is queued, so nothing more will come)."""
        return not self.pending or not (self.alive or self.queued)


class RecommenderPool:
    """Trains every registered model once on one data set, in one background worker process, and loads them
    for the pages.

    Parameters
    ----------
    directory : path, optional
        Where the models are saved (default :func:`recommenders_dir`).
    names : list of str, optional
        The models (default: :func:`models_from_environment`, every registered one unless
        ``$COFIVIZ_RECOMMENDERS_MODELS`` names some).
    budget : float, optional
        Tuning seconds per model (default :func:`budget_from_environment`).
    quick : bool, optional
        A few iterations at the defaults instead of tuning (default :func:`quick_from_environment`).
    data : str
        The data set, a label of :data:`OFFERED`.
    after : RecommenderPool, optional
        A pool whose worker must end before this one's starts (:meth:`start` then queues it).
    """

    def __init__(self, directory=None, names=None, budget: float | None = None, quick: bool | None = None,
                 data: str = DATA, after: "RecommenderPool | None" = None):
        _check_data(data)
        self.data = data
        self.budget = budget_from_environment() if budget is None else float(budget)
        self.quick = quick_from_environment() if quick is None else bool(quick)
        self.directory = Path(directory) if directory is not None else recommenders_dir(self.budget, self.quick,
                                                                                         data)
        self.names = ordered(models_from_environment() if names is None else names)
        self.after = after
        self._process = None
        self._control = None
        self._queued = False
        self._lock = threading.Lock()
        self._models: dict[str, tuple[float, object]] = {}

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    @property
    def queued(self) -> bool:
        """True while :meth:`start` waits for :attr:`after`'s worker to end."""
        return self._queued

    def start(self) -> bool:
        """Start the worker unless it runs, is queued or every model is saved already; True when it started or
        was queued (behind :attr:`after`'s running worker)."""
        with self._lock:
            if self.alive or self._queued or all(_ready(self.directory, n) for n in self.names):
                return False
            if self.after is not None and self.after.alive:
                self._queued = True
                threading.Thread(target=self._start_after, daemon=True, name="cofiviz-recommenders-queue").start()
                return True
            self._launch()
            return True

    def _start_after(self) -> None:
        while self.after.alive:
            time.sleep(1.0)
        with self._lock:
            if self._queued:            # not stopped meanwhile
                self._launch()
                self._queued = False

    def _launch(self) -> None:
        """Start the worker process (the caller holds the lock)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for name in self.names:  # a new worker tries the failed ones again
            (self.directory / f"{name}.error").unlink(missing_ok=True)
        ctx = worker_context()
        child_control, self._control = ctx.Pipe(duplex=False)
        self._process = ctx.Process(target=_worker_main, daemon=True, name=f"cofiviz-recommenders-{self.data}",
                                    args=(child_control, str(self.directory), self.names, self.budget,
                                          self.quick, self.data))
        try:
            self._process.start()
        finally:
            child_control.close()

    def stop(self) -> None:
        """End the worker, or its wait in the queue (the models saved so far stay)."""
        with self._lock:
            self._queued = False
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
        alive = self.alive
        return PoolStatus(ready=ready, pending=pending, training=training if alive and training in pending else None,
                          failed=failed, alive=alive, queued=self._queued)

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


_POOLS: dict[str, RecommenderPool] = {}
_POOL_LOCK = threading.Lock()


def pool(start: bool = True, data: str = DATA) -> RecommenderPool:
    """The process's one :class:`RecommenderPool` of ``data`` (configured from the environment), started unless
    ``start`` is False. MovieLens 1M's pool starts after MovieLens 100K's worker has ended."""
    _check_data(data)
    with _POOL_LOCK:
        if data not in _POOLS:
            after = None
            if data != DATA:
                after = _POOLS.setdefault(DATA, RecommenderPool())
            _POOLS[data] = RecommenderPool(data=data, after=after)
        chosen = _POOLS[data]
    if start:
        chosen.start()
    return chosen
