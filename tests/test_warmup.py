"""The kernels' warm-up: its plan, its parallel processes (each kernel compiled once, by a child; the calling
process loads them all from the cache), its errors, and the lock that keeps numba's cache whole when several
processes write it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cofiviz.cli import main
from cofiviz.engine import warmup as W
from cofiviz.util.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, cache: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)


@pytest.mark.parametrize("jobs", [0, -2, 1.5, "2", True])
def test_jobs_must_be_a_positive_integer(jobs):
    with pytest.raises(ParameterError, match="jobs must be a positive integer"):
        W.warmup(jobs=jobs)


def test_the_command_line_rejects_a_bad_jobs(capsys):
    assert main(["warmup", "--jobs", "0"]) == 2
    assert "jobs must be a positive integer" in capsys.readouterr().err


def test_the_plan_holds_every_module_once_and_its_order_has_no_cycle():
    names = [name for name, _ in W._targets()]
    jobs = W._plan(names)
    assert "others" not in {j.name for j in jobs}, "a warmed-up module is missing from the plan"
    held = [m for j in jobs for m in j.modules]
    assert len(held) == len(set(held))
    for name in names:
        assert any(m == name or m.startswith(name + ".") for m in held), name
    known = {j.name for j in jobs}
    done: set[str] = set()
    pending = list(jobs)
    while pending:       # the order can be followed to the end: every prerequisite exists, no cycle
        ready = [j for j in pending if set(j.after) <= done]
        assert ready, f"jobs that wait for each other: {[j.name for j in pending]}"
        for j in ready:
            assert set(j.after) <= known
            done.add(j.name)
            pending.remove(j)


def test_a_partial_plan_keeps_the_order_and_runs_unknown_modules_last():
    jobs = {j.name: j for j in W._plan(["cofiviz.solvers", "cofiviz.models.bilinear", "my_own_kernels"])}
    assert jobs["cofiviz.losses"].modules == ("cofiviz.solvers.lap",)
    assert jobs["cofiviz.solvers.bmrm"].modules == ("cofiviz.solvers.bmrm",)
    assert jobs["cofiviz.solvers.dense"].modules == ("cofiviz.solvers.dense",)
    # its other prerequisite, the local models' kernels, is not asked for
    assert set(jobs["cofiviz.models.bilinear"].after) == {"cofiviz.losses", "cofiviz.solvers.dense"}
    assert jobs["others"].modules == ("my_own_kernels",)
    assert set(jobs["others"].after) == set(jobs) - {"others"}
    chain = W._chain_seconds(list(jobs.values()))
    assert chain["cofiviz.losses"] > chain["cofiviz.models.bilinear"] > chain["others"]


def test_the_plan_follows_what_each_model_declares_and_its_seconds_are_measured():
    """A model's module is a job after the jobs of the warm-ups its classes name (``Model.warmup_after``); the
    jobs' seconds come from the benchmark's measurement (``bench_compile.py --plan``), one for every job."""
    from cofiviz.models import available_models, get_model_class

    jobs = {j.name: j for j in W.plan()}
    for name in available_models():
        klass = get_model_class(name)
        if klass.__module__ in jobs:
            owners = {next(j.name for j in jobs.values() if fn.__module__ in j.modules) for fn in klass.warmup_after}
            assert owners <= set(jobs[klass.__module__].after), name
    assert set(jobs["cofiviz.models.cofirank"].after) == {"cofiviz.util.elementary", "cofiviz.losses",
                                                          "cofiviz.solvers.bmrm", "cofiviz.solvers.dense"}
    measured = W.measured_seconds()
    assert set(jobs) <= set(measured), sorted(set(jobs) - set(measured))
    assert all(jobs[n].seconds == measured[n] >= 0 for n in jobs)


def test_parallel_warmup_compiles_in_children_and_the_next_process_only_loads(tmp_path):
    cache = tmp_path / "numba-cache"
    modules = ["cofiviz.solvers", "cofiviz.models.nmf"]
    header = """
        import json, sys
        from numba.core import event
        from numba.core.dispatcher import Dispatcher
        compiled = []
        class Count(event.Listener):
            def on_start(self, ev):
                compiled.append(ev.data["dispatcher"].py_func.__module__)
            def on_end(self, ev):
                pass
        event.register("numba:compile", Count())
        from cofiviz.engine import warmup as W

        def kernels():
            for name, mod in list(sys.modules.items()):
                if name.startswith("cofiviz."):
                    for obj in vars(mod).values():
                        if isinstance(obj, Dispatcher) and obj.py_func.__module__ == name:
                            yield obj
    """
    first = _python(header + f"""
        W.warmup(verbose=True, jobs=2, modules={modules!r}, load=False)
        print(json.dumps({{"compiled": [m for m in compiled if m.startswith("cofiviz")],
                          "loaded": sum(len(k.signatures) for k in kernels())}}))
    """, cache)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert json.loads(lines[-1]) == {"compiled": [], "loaded": 0}, "the calling process compiled or loaded kernels"
    children = {line.rsplit("(process ", 1)[1].rstrip(")") for line in lines if "(process " in line}
    assert len(children) == 2, first.stdout                    # two jobs ran at once
    assert {line.split(":")[0].strip() for line in lines if "(process " in line} == {
        "cofiviz.solvers.lap", "cofiviz.solvers.bmrm", "cofiviz.solvers.dense", "cofiviz.models.nmf"}
    assert any(cache.rglob("*.nbi"))

    second = _python(header + f"""
        W.warmup(verbose=True, jobs=2, modules={modules!r})
        print(json.dumps({{"compiled": [m for m in compiled if m.startswith("cofiviz")],
                          "hits": sum(sum(k.stats.cache_hits.values()) for k in kernels()),
                          "misses": sum(sum(k.stats.cache_misses.values()) for k in kernels())}}))
    """, cache)
    assert second.returncode == 0, second.stderr
    assert "every kernel loaded in this process" in second.stdout
    got = json.loads(second.stdout.splitlines()[-1])
    assert got["compiled"] == [] and got["misses"] == 0 and got["hits"] > 0, got


@pytest.fixture
def parallel(monkeypatch, tmp_path):
    """Modules of one's own, and a warm-up that runs them in child processes whatever the cache holds."""
    monkeypatch.setattr(W, "uncached_share", lambda: 1.0)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cofiviz_test_broken.py").write_text(
        "def warmup():\n    raise ZeroDivisionError('no kernel today')\n")
    (tmp_path / "cofiviz_test_dying.py").write_text("import os\n\ndef warmup():\n    os._exit(3)\n")
    (tmp_path / "cofiviz_test_fine.py").write_text("def warmup():\n    pass\n")
    return tmp_path


def test_an_error_in_a_child_names_the_module_and_the_process(parallel):
    with pytest.raises(W.WarmupError, match=r"warming up cofiviz_test_broken in process \d+ failed: "
                                            r"ZeroDivisionError: no kernel today"):
        W.warmup(jobs=2, modules=["cofiviz_test_fine", "cofiviz_test_broken"])


def test_a_child_that_dies_is_named_by_its_module(parallel):
    with pytest.raises(W.WarmupError, match="the process compiling cofiviz_test_dying died"):
        W.warmup(jobs=2, modules=["cofiviz_test_dying"])


def test_a_module_without_warmup_is_reported(parallel):
    with pytest.raises(W.WarmupError, match="cofiviz_test_nowhere"):
        W.warmup(jobs=1, modules=["cofiviz_test_nowhere"])


def test_children_writing_one_index_at_once_keep_every_entry(tmp_path):
    """Two processes save 150 signatures each of one kernel's index, at once, with the lock: every signature
    keeps its own data file (numba alone may lose entries or give two signatures one data file)."""
    writer = f"""
        import sys
        from numba.core.caching import IndexDataCacheFile
        from cofiviz.engine import warmup as W
        who = sys.argv[1]
        cache = IndexDataCacheFile({str(tmp_path)!r}, "kernel-1.py311", (1.0, 2))
        with W.locked_cache_writes():
            for i in range(150):
                cache.save((who, i), f"{{who}} {{i}}")
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(writer), who], env=env, cwd=ROOT)
             for who in ("a", "b")]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    from numba.core.caching import IndexDataCacheFile
    cache = IndexDataCacheFile(str(tmp_path), "kernel-1.py311", (1.0, 2))
    for who in ("a", "b"):
        for i in range(150):
            assert cache.load((who, i)) == f"{who} {i}"


def test_progress_says_every_module_then_each_as_it_is_ready(parallel):
    """In parallel processes and in this one, the first call names every module with none ready, and each later
    call adds the modules just ready, until all are."""
    (parallel / "cofiviz_test_other.py").write_text("def warmup():\n    pass\n")
    names = ["cofiviz_test_fine", "cofiviz_test_other"]
    for jobs, in_parallel in ((2, True), (1, False)):
        seen: list[W.Progress] = []
        W.warmup(jobs=jobs, modules=names, progress=seen.append)
        assert seen[0].ready == () and not seen[0].done and seen[0].uncached == 1.0
        assert {p.parallel for p in seen} == {in_parallel}
        assert set(seen[0].modules) == set(names) if in_parallel else seen[0].modules == tuple(names)
        assert [len(p.ready) for p in seen] == sorted(len(p.ready) for p in seen)
        assert seen[-1].done and set(seen[-1].ready) == set(names)


def test_a_progress_that_raises_stops_the_warmup_with_its_error(parallel):
    def refuse(state):
        if state.ready:
            raise OSError("no room for the status")

    with pytest.raises(OSError, match="no room for the status"):
        W.warmup(jobs=2, modules=["cofiviz_test_fine"], progress=refuse)


def test_the_first_modules_jobs_start_before_longer_chains():
    jobs = [W.Job("a", ("a",), (), 50.0), W.Job("b", ("b",), (), 1.0), W.Job("c", ("c.x",), ("b",), 1.0),
            W.Job("d", ("d",), (), 30.0)]
    assert W._first_jobs(jobs, ["c"]) == {"b", "c"}
    scheduler = W._Scheduler(jobs, first=["c"])
    order = []
    while (job := scheduler.take()) is not None:
        order.append(job.name)
        scheduler.finish(job)
    assert order == ["b", "c", "a", "d"]
    plain = W._Scheduler(jobs)
    assert plain.take().name == "a"                     # without ``first``: the longest chain first


def test_covers_relates_a_module_to_its_submodules_both_ways():
    assert W.covers("cofiviz.solvers.lap", "cofiviz.solvers") and W.covers("cofiviz.metrics", "cofiviz.metrics.ndcg")
    assert W.covers("cofiviz.metrics", "cofiviz.metrics")
    assert not W.covers("cofiviz.metrics", "cofiviz.metric") and not W.covers("cofiviz.losses", "cofiviz.models")
