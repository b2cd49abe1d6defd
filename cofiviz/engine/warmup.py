"""Compile (or load from numba's on-disk cache) every numba kernel once, ahead of first use.

``import cofiviz`` compiles nothing; the first call of a kernel does, which takes seconds. ``cofiviz warmup``
(``make test``) calls :func:`warmup` once before the work that needs the kernels; a server (``make serve``) calls
it in a background process of its own (:mod:`cofiviz.background.kernels`), then loads the kernels from the cache
behind the server, so that a visitor waits for no compilation of a page that is open. With a warm cache
(``cache=True`` kernels, ``NUMBA_CACHE_DIR`` writable) it takes well under a second per module.

With an empty cache, compiling is most of the work, and it runs in parallel: the modules' ``warmup()``
functions are grouped into the jobs of :func:`plan`, which ``jobs`` fresh ``spawn`` processes sharing this one's
numba cache compile at once, each writing the kernels it compiles to the cache; this process then loads
every kernel from the cache (unless ``load=False``). When most kernels already have an entry in the cache
(:data:`PARALLEL_FROM`), the modules run in this process only. numba's cache is not safe for two processes
that write the same kernel's index at once (both may give their signature the same data file, and one
signature would then load the other's machine code), so

- the plan keeps the modules that compile a kernel in common in one job, or orders their jobs (the job
  that compiles the shared kernels first, the others after it, when they only load them), so that each
  kernel is compiled by one process;
- while a warm-up runs (in the compiling processes, and in any process that calls :func:`warmup`, such as
  a server), every write to the cache holds an exclusive lock on a file of the cache's directory
  (:func:`locked_cache_writes`), so that a plan that no longer matches the code, or two warm-ups at once,
  cost a kernel compiled twice, never a wrong entry. A process that may compile while another warms up (a
  server whose warm-up runs in a background process) holds :func:`locked_cache_writes` for that time too.

A warm-up says how far it is through ``progress`` (a :class:`Progress` after its plan is made and after each
job), and ``first`` names the modules whose jobs start before the others (a server's quick pages).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from numba.core import caching
from numba.core.dispatcher import Dispatcher

from .. import losses, metrics, solvers
from ..util import elementary
from ..util.errors import CofivizError, ParameterError
from ..models import available_models, get_model_class

try:  # POSIX; without it every module warms up in this process
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["warmup", "WarmupError", "SHARED", "plan", "measured_seconds", "PARALLEL_FROM", "default_jobs",
           "uncached_share", "Progress", "locked_cache_writes", "covers"]


class WarmupError(CofivizError, RuntimeError):
    """A module's ``warmup()`` failed, or a process compiling kernels died; the message names the module."""


@dataclass(frozen=True)
class Job:
    """Modules whose ``warmup()`` one process runs in turn.

    Attributes
    ----------
    name : str
        The job's name, which ``after`` of other jobs refers to: its first module.
    modules : tuple of str
        Module names, run in this order: a module :func:`warmup` is asked for, or one of its submodules
        (``cofiviz.solvers.lap`` warms up part of ``cofiviz.solvers``).
    after : tuple of str
        Jobs that must have finished first: they compile kernels this job's modules also use.
    seconds : float
        The CPU seconds of its cold compile, which order the jobs (the longest chain of jobs first): measured
        by ``benchmarks/bench_compile.py --plan`` into :data:`SECONDS_FILE`, :data:`UNMEASURED_SECONDS` for a
        module it does not hold.
    """

    name: str
    modules: tuple[str, ...]
    after: tuple[str, ...] = ()
    seconds: float = 10.0


@dataclass(frozen=True)
class Progress:
    """How far a warm-up is: what :func:`warmup` hands its ``progress`` callback.

    Attributes
    ----------
    modules : tuple of str
        Every module the warm-up runs, those of ``first`` ahead: the modules of its plan's jobs when it compiles in
        parallel processes (``cofiviz.solvers.lap``, ``cofiviz.solvers.dense``, ...), else the modules it was
        asked for.
    ready : tuple of str
        The modules of ``modules`` whose kernels are ready: in numba's cache, compiled by a parallel job, or
        loaded (or compiled) in the calling process.
    uncached : float
        The share of kernels that had no entry in the cache when the warm-up started (:func:`uncached_share`):
        1 on a fresh installation, 0 when every kernel only loads.
    parallel : bool
        Whether the modules run in parallel processes (and compile) or in this process, one after the other.
    """

    modules: tuple[str, ...]
    ready: tuple[str, ...] = ()
    uncached: float = 1.0
    parallel: bool = False

    @property
    def done(self) -> bool:
        """Every module is ready."""
        return len(self.ready) == len(self.modules)


def covers(module: str, name: str) -> bool:
    """Whether the warm-up of ``module`` prepares (part of) the kernels of ``name``: one is the other or a
    submodule of it (``cofiviz.solvers.lap`` covers part of ``cofiviz.solvers``, ``cofiviz.metrics`` all of
    ``cofiviz.metrics.ndcg``)."""
    return module == name or module.startswith(name + ".") or name.startswith(module + ".")


#: The kernels several modules share, each compiled by one job before the modules that use them: the surrogate
#: losses (every pairwise model), the elementary functions by the C library (the metrics, the losses, CofiRank,
#: the local models, the GPs), the losses and the assignment (CofiRank, the bilinear model), the fixed-order dense
#: algebra, BMRM, the kernels of the local models (``models/_local_kernels.py``), weighted ALS
#: (``models/_wals_kernels.py``: LLORMA, RegSVD) and the metrics. A model's
#: module is a job of its own after the jobs its classes name (``Model.warmup_after``); a module asked for that
#: neither holds runs in one last job, after all of these.
SHARED: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("cofiviz.losses.surrogates",), ()),
    (("cofiviz.util.elementary",), ()),
    (("cofiviz.losses", "cofiviz.solvers.lap"), ("cofiviz.losses.surrogates", "cofiviz.util.elementary")),
    (("cofiviz.solvers.dense",), ()),
    (("cofiviz.solvers.bmrm",), ("cofiviz.solvers.dense",)),
    (("cofiviz.models._local_kernels",), ("cofiviz.losses.surrogates", "cofiviz.util.elementary")),
    (("cofiviz.models._wals_kernels",), ()),
    (("cofiviz.metrics",), ("cofiviz.util.elementary",)),
)

#: CPU seconds of each job's cold compile, written by ``benchmarks/bench_compile.py --plan --ship``
SECONDS_FILE = Path(__file__).with_name("warmup_seconds.json")
#: the seconds assumed for a job the file does not hold
UNMEASURED_SECONDS = 10.0

#: the share of kernels missing from the cache from which :func:`warmup` compiles in parallel processes: a fresh
#: cache misses them all, an edit of one kernel module a few, which this process compiles faster than new
#: processes would start
PARALLEL_FROM = 0.25

_LOCK_NAME = "cofiviz-cache-writes.lock"


def _targets() -> list[tuple[str, Callable[[], object]]]:
    """``(module name, warmup function)`` for the metrics, every registered model's module and the shared
    kernels its classes name (``Model.warmup_after``), the losses and the solvers, each once."""
    classes = [get_model_class(name) for name in available_models()]
    modules = [metrics] + [sys.modules[k.__module__] for k in classes]
    modules += [sys.modules[fn.__module__] for k in classes for fn in k.warmup_after]
    found: dict[str, Callable[[], object]] = {}
    for mod in modules + [losses, solvers, elementary]:
        fn = getattr(mod, "warmup", None)
        if callable(fn) and mod.__name__ not in found:
            found[mod.__name__] = fn
    return list(found.items())


def _warmup_function(name: str, known: dict[str, Callable[[], object]]) -> Callable[[], object]:
    """The ``warmup`` of module ``name``: one of :func:`_targets`, or any importable module's."""
    if name in known:
        return known[name]
    try:
        fn = getattr(importlib.import_module(name), "warmup", None)
    except ImportError as exc:
        raise WarmupError(f"cannot warm up {name}: {exc}") from exc
    if not callable(fn):
        raise WarmupError(f"cannot warm up {name}: it has no warmup() function")
    return fn


def default_jobs() -> int:
    """The processes that compile at once by default: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _check_jobs(jobs) -> int:
    if jobs is None:
        return default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ParameterError(f"jobs must be a positive integer (the processes that compile at once), got {jobs!r}")
    return jobs


def measured_seconds() -> dict[str, float]:
    """The CPU seconds of each job's cold compile that :data:`SECONDS_FILE` holds (none without the file)."""
    try:
        return {str(k): float(v) for k, v in json.loads(SECONDS_FILE.read_text()).items()}
    except FileNotFoundError:
        return {}


def plan() -> list[Job]:
    """Every job of the parallel warm-up: the :data:`SHARED` kernels', then one per registered model's module,
    after the jobs of the warm-up functions its classes declare (``Model.warmup_after``)."""
    seconds = measured_seconds()
    owner = {m: mods[0] for mods, _ in SHARED for m in mods}
    jobs = {mods[0]: Job(mods[0], mods, after, seconds.get(mods[0], UNMEASURED_SECONDS)) for mods, after in SHARED}
    for name in available_models():
        klass = get_model_class(name)
        module = klass.__module__
        if not callable(getattr(sys.modules[module], "warmup", None)):
            continue
        after = [owner.get(fn.__module__, fn.__module__) for fn in klass.warmup_after]
        if module in jobs:
            after = [*jobs[module].after, *after]
        after = tuple(dict.fromkeys(a for a in after if a != module))
        jobs[module] = Job(module, (module,), after, seconds.get(module, UNMEASURED_SECONDS))
        owner[module] = module
    unknown = {a for job in jobs.values() for a in job.after} - set(jobs)
    if unknown:
        raise WarmupError(f"the warm-up of {', '.join(sorted(unknown))} is asked to run first, but no job holds it")
    return list(jobs.values())


def _plan(names: Sequence[str]) -> list[Job]:
    """:func:`plan` restricted to the modules ``names`` (a job keeps the modules that are one of them or a
    submodule of one); a job left empty passes its prerequisites on to the jobs that waited for it, and the
    modules of ``names`` that no job holds form one last job, after all the others."""

    def asked(module: str) -> bool:
        return any(module == name or module.startswith(name + ".") for name in names)

    full = plan()
    needs = {job.name: job.after for job in full}
    kept = {job.name: Job(job.name, tuple(filter(asked, job.modules)), (), job.seconds) for job in full}
    kept = {name: job for name, job in kept.items() if job.modules}

    def prerequisites(name: str) -> set[str]:
        out: set[str] = set()
        for dep in needs[name]:
            out |= {dep} if dep in kept else prerequisites(dep)
        return out

    jobs = [Job(j.name, j.modules, tuple(sorted(prerequisites(j.name))), j.seconds) for j in kept.values()]
    held = [m for job in jobs for m in job.modules]
    rest = tuple(n for n in names if not any(m == n or m.startswith(n + ".") for m in held))
    if rest:
        jobs.append(Job("others", rest, tuple(j.name for j in jobs), UNMEASURED_SECONDS * len(rest)))
    return jobs


def _chain_seconds(jobs: Sequence[Job]) -> dict[str, float]:
    """Each job's seconds plus the longest chain of jobs that wait for it: the order in which to start them."""
    waiting = {j.name: [k for k in jobs if j.name in k.after] for j in jobs}
    memo: dict[str, float] = {}

    def chain(job: Job) -> float:
        if job.name not in memo:
            memo[job.name] = job.seconds + max((chain(k) for k in waiting[job.name]), default=0.0)
        return memo[job.name]

    return {j.name: chain(j) for j in jobs}


_patch_lock = threading.Lock()
_patch_depth = 0


@contextlib.contextmanager
def locked_cache_writes() -> Iterator[None]:
    """While in the block (in any thread), every write of numba's cache in this process holds an exclusive lock
    on a file of the cache's directory: numba reads the index, picks a data file for a new signature and writes
    both, which two processes doing it at once would interleave. Blocks may nest; without ``fcntl`` (Windows) the
    block changes nothing."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    global _patch_depth
    with _patch_lock:
        if _patch_depth == 0:
            caching.IndexDataCacheFile.save = _locked_save
        _patch_depth += 1
    try:
        yield
    finally:
        with _patch_lock:
            _patch_depth -= 1
            if _patch_depth == 0:
                caching.IndexDataCacheFile.save = _numba_save


_numba_save = caching.IndexDataCacheFile.save


def _locked_save(self, key, data):
    with open(os.path.join(self._cache_path, _LOCK_NAME), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _numba_save(self, key, data)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def uncached_share() -> float:
    """The share of cofiviz's kernels imported so far that have no entry in numba's cache for their current
    source (kernels inlined into their callers have none of their own and are not counted; the signatures
    are not checked)."""
    kernels = missing = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("cofiviz."):
            continue
        for obj in list(vars(module).values()):
            if (not isinstance(obj, Dispatcher) or getattr(obj.py_func, "__module__", None) != name
                    or obj.targetoptions.get("inline") == "always"):
                continue
            kernels += 1
            try:
                missing += not obj._cache._cache_file._load_index()
            except Exception:  # a kernel without numba's file cache: count it as uncached
                missing += 1
    return missing / kernels if kernels else 1.0


def _run_modules(names: Sequence[str], where: str = "") -> dict[str, tuple[float, float]]:
    """Run the ``warmup()`` of each module of ``names`` in turn; the wall-clock and CPU seconds each took.

    Raises
    ------
    WarmupError
        Naming the module whose warm-up raised (and ``where``, the process), with its exception.
    """
    known = dict(_targets())
    seconds: dict[str, tuple[float, float]] = {}
    for name in names:
        fn = _warmup_function(name, known)
        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            fn()
        except Exception as exc:
            raise WarmupError(f"warming up {name}{where} failed: {type(exc).__name__}: {exc}") from exc
        seconds[name] = (time.perf_counter() - t0, time.process_time() - cpu0)
    return seconds


def _child_job(names: Sequence[str]) -> tuple[dict[str, tuple[float, float]], int]:
    """What a compiling process runs: the modules' warm-ups with locked cache writes; their seconds and its pid."""
    with locked_cache_writes():
        return _run_modules(names, f" in process {os.getpid()}"), os.getpid()


def _first_jobs(jobs: Sequence[Job], first: Sequence[str]) -> set[str]:
    """The names of the jobs that prepare a module of ``first`` (:func:`covers`), and of every job they wait for."""
    by_name = {j.name: j for j in jobs}
    out: set[str] = set()
    todo = [j.name for j in jobs if any(covers(m, name) for m in j.modules for name in first)]
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(by_name[name].after)
    return out


class _Scheduler:
    """Hands out the jobs whose prerequisites have finished: those of ``first`` (:func:`_first_jobs`) before the
    others, then the longest chain first; stops at the first error."""

    def __init__(self, jobs: Sequence[Job], first: Sequence[str] = ()):
        self.pending = list(jobs)
        chain = _chain_seconds(jobs)
        early = _first_jobs(jobs, first)
        self.priority = {name: (name in early, seconds) for name, seconds in chain.items()}
        self.done: set[str] = set()
        self.error: BaseException | None = None
        self.cond = threading.Condition()

    def take(self) -> Job | None:
        with self.cond:
            while True:
                if self.error is not None or not self.pending:
                    return None
                ready = [j for j in self.pending if set(j.after) <= self.done]
                if ready:
                    job = max(ready, key=lambda j: self.priority[j.name])
                    self.pending.remove(job)
                    return job
                self.cond.wait()

    def finish(self, job: Job, error: BaseException | None = None) -> None:
        with self.cond:
            if error is None:
                self.done.add(job.name)
            elif self.error is None:
                self.error = error
            self.cond.notify_all()


def _run_parallel(jobs: Sequence[Job], n_processes: int, report: Callable[[str], None],
                  first: Sequence[str] = (), finished: Callable[[Job], None] = lambda job: None) -> None:
    """Run ``jobs`` in ``n_processes`` spawned processes (each the only worker of a pool of its own, so that a
    process that dies is known by its job), those of ``first`` before the others; ``finished(job)`` after each
    job that succeeded (from one of this process's threads); raise the first error once the running jobs have
    finished."""
    scheduler = _Scheduler(jobs, first)

    def worker(pool: ProcessPoolExecutor) -> None:
        while (job := scheduler.take()) is not None:
            try:
                seconds, pid = pool.submit(_child_job, job.modules).result()
            except BrokenProcessPool as exc:
                scheduler.finish(job, WarmupError(f"the process compiling {', '.join(job.modules)} died ({exc})"))
                return
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which raises it
                scheduler.finish(job, exc)
                return
            for name, (secs, cpu) in seconds.items():
                report(f"  {name}: {secs:.2f} s, cpu {cpu:.2f} s (process {pid})")
            try:
                finished(job)
            except BaseException as exc:  # noqa: BLE001 - the caller's callback: handed to the calling thread
                scheduler.finish(job, exc)
                return
            scheduler.finish(job)

    context = multiprocessing.get_context("spawn")
    pools = [ProcessPoolExecutor(max_workers=1, mp_context=context) for _ in range(n_processes)]
    threads = [threading.Thread(target=worker, args=(pool,), daemon=True, name=f"cofiviz-warmup-{i}")
               for i, pool in enumerate(pools)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
    if scheduler.error is not None:
        raise scheduler.error


def warmup(verbose: bool = False, jobs: int | None = None, modules: Sequence[str] | None = None,
           load: bool = True, first: Sequence[str] = (),
           progress: Callable[[Progress], None] | None = None) -> float:
    """Run each module's ``warmup()`` on tiny inputs so that its numba kernels are compiled or loaded.

    Parameters
    ----------
    verbose : bool
        Print one line per module with the wall-clock and CPU seconds it took (and the process that ran it).
    jobs : int, optional
        Processes that compile at once (default: :func:`default_jobs`, the cores). With ``jobs > 1`` the
        modules run in the jobs of :func:`plan` in up to ``jobs`` fresh processes, which write the kernels to
        numba's cache; then every module's ``warmup()`` runs in this process and loads them. With
        ``jobs=1``, or a cache that holds most kernels already (:data:`PARALLEL_FROM`), the modules run here,
        one after the other.
    modules : sequence of str, optional
        The modules to warm up (default: the metrics, every registered model's module, the losses and the
        solvers). Any importable module with a ``warmup()`` function may be named.
    load : bool
        After the other processes compiled the kernels, load them into this one (False: leave them in the
        cache, for a process about to exit, such as ``cofiviz warmup``'s).
    first : sequence of str
        Modules to prepare before the others: the jobs that compile their kernels (and the jobs those wait for)
        start first, and in this process they run first.
    progress : callable, optional
        Called with a :class:`Progress` once the modules are known (none ready yet), then each time modules are
        ready: after each job of the parallel processes (their kernels are in the cache; with ``load=True``
        this process loads them all afterwards), or after each module run here. Called from this process's
        threads, one call at a time.

    Returns
    -------
    float
        Seconds taken in total.

    Raises
    ------
    ParameterError
        ``jobs`` is not a positive integer.
    WarmupError
        A module's warm-up raised, or a compiling process died; the message names the module.
    """
    n = _check_jobs(jobs)
    start = time.perf_counter()
    names = [name for name, _ in _targets()] if modules is None else list(dict.fromkeys(modules))
    names.sort(key=lambda name: not any(covers(name, f) for f in first))     # stable: ``first`` ahead
    report = print if verbose else (lambda line: None)
    tell = progress if progress is not None else (lambda state: None)
    with locked_cache_writes():
        uncached = uncached_share()
        if n > 1 and fcntl is not None and names and uncached >= PARALLEL_FROM:
            plan = _plan(names)
            early = _first_jobs(plan, first)
            held = tuple(m for job in sorted(plan, key=lambda j: j.name not in early) for m in job.modules)
            ready: set[str] = set()
            lock = threading.Lock()
            tell(Progress(held, (), uncached, True))

            def finished(job: Job) -> None:
                with lock:
                    ready.update(job.modules)
                    tell(Progress(held, tuple(m for m in held if m in ready), uncached, True))

            _run_parallel(plan, min(n, len(plan)), report, first, finished)
            if load:
                t0 = time.perf_counter()
                _run_modules(names)
                report(f"  every kernel loaded in this process: {time.perf_counter() - t0:.2f} s")
        else:
            tell(Progress(tuple(names), (), uncached, False))
            for i, name in enumerate(names):
                secs, cpu = _run_modules([name])[name]
                report(f"  {name}: {secs:.2f} s, cpu {cpu:.2f} s")
                tell(Progress(tuple(names), tuple(names[:i + 1]), uncached, False))
    return time.perf_counter() - start
