"""The wheel carries what cofiviz serves: installed from it, cofiviz serves its pages and hands out its course.

The module builds a wheel of the repository (``pip wheel``, offline, from a copy of the project's files so that the
build writes nothing here), installs it with no dependencies into a fresh virtual environment, and gives that
environment this one's installed packages through a ``.pth`` file naming their folder: a plain path, so Python
adds the folder to ``sys.path`` without processing the ``.pth`` files inside it, among them the editable install's
finder that would import cofiviz from the repository. Every command then runs in a temporary folder, with
cofiviz imported from the new environment's ``site-packages`` (the first test checks it): ``cofiviz apps --paths``,
``cofiviz notebooks DIR``, ``cofiviz course --editions DIR --no-html``, ``cofiviz serve`` and ``panel serve`` on
an installed app file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
import zipfile
from pathlib import Path

import pytest

from cofiviz.background import kernels as K
from conftest import ROOT, free_port, server_env, wait_for_http

#: what the build needs of the project, copied to a folder of the test's own
PROJECT_FILES = ("pyproject.toml", "README.md", "cofiviz", "apps", "notebooks", "experiments")
#: the repository's folders the package carries, by their folder in the wheel
CARRIED = {"apps": "cofiviz/_shipped/apps", "notebooks": "cofiviz/_shipped/notebooks",
           "experiments": "cofiviz/_shipped/experiments"}
#: the page each server must answer (its only kernels are ``cofiviz.util.elementary``'s, a second of compiling)
PAGE = "overview"


def _skipped(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n.startswith(".") or n in ("__pycache__", "build", "cofiviz-results")
            or n.endswith(".egg-info")]


def _carried_files(kind: str) -> list[str]:
    """The repository's files of ``kind`` that the wheel must carry: every file of the folder but hidden ones."""
    pattern = "*.py" if kind == "apps" else "*"
    return sorted(p.name for p in (ROOT / kind).glob(pattern) if p.is_file() and not p.name.startswith("."))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("project")
    for name in PROJECT_FILES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, symlinks=True, ignore=_skipped)
        else:
            shutil.copyfile(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "--quiet", str(src), "--wheel-dir", str(out)], capture_output=True, text=True)
    assert built.returncode == 0, f"pip wheel failed:\n{built.stdout}\n{built.stderr}"
    (found,) = out.glob("cofiviz-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    """A fresh virtual environment with cofiviz installed from the wheel, this one's packages beside it."""
    where = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    # installed before the .pth names this environment's packages: pip sees no cofiviz installed there to replace
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "--quiet", str(wheel)], check=True, capture_output=True, text=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "cofiviz-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return where


def _env(venv: Path, **more) -> dict:
    """The environment of a command of ``venv``: its ``bin`` first, nothing that imports from the repository."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "VIRTUAL_ENV": str(venv), **more}


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, env=_env(venv), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(args)} exited with {done.returncode}: {done.stderr[-3000:]}"
    return done


def _site_packages(venv: Path) -> Path:
    return Path(_run(venv, venv, "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
                .stdout.strip()).resolve()


def test_the_wheel_carries_every_app_notebook_and_experiment_file_as_files(wheel):
    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
    names = {i.filename for i in infos}
    for kind, inside in CARRIED.items():
        expected = _carried_files(kind)
        assert expected, f"the repository has no {kind}"
        carried = sorted(n.rsplit("/", 1)[1] for n in names if n.rsplit("/", 1)[0] == inside)
        assert carried == expected, (f"{wheel.name} carries {carried} in {inside}, the repository's {kind}/ holds "
                                     f"{expected}: add the missing files' extensions to pyproject.toml's package data")
    links = [i.filename for i in infos if (i.external_attr >> 16) & 0o170000 == 0o120000]
    assert links == [], f"symbolic links in the wheel: {links}"


def test_cofiviz_comes_from_the_wheel_and_lists_the_installed_apps(venv, tmp_path):
    site = _site_packages(venv)
    where = Path(_run(venv, tmp_path, "python", "-c", "import cofiviz; print(cofiviz.__file__)").stdout.strip())
    assert where.resolve().is_relative_to(site), f"cofiviz imported from {where}, not from the wheel in {site}"
    paths = [Path(p) for p in _run(venv, tmp_path, "cofiviz", "apps", "--paths").stdout.split()]
    assert sorted(p.name for p in paths) == _carried_files("apps")
    for p in paths:
        assert p.is_file() and p.resolve().is_relative_to(site / "cofiviz" / "_shipped" / "apps"), p
    listed = _run(venv, tmp_path, "cofiviz", "apps").stdout
    assert "Training monitor" in listed and str(site) in listed


def test_the_notebooks_command_copies_the_course_into_a_folder_of_the_users(venv, tmp_path):
    done = _run(venv, tmp_path, "cofiviz", "notebooks", "class")
    assert done.stdout.strip() == str(Path("class") / "notebooks") and "jupyter lab" in done.stderr
    assert sorted(p.name for p in (tmp_path / "class" / "notebooks").iterdir()) == _carried_files("notebooks")
    assert sorted(p.name for p in (tmp_path / "class" / "experiments").iterdir()) == _carried_files("experiments")
    assert (tmp_path / "class" / "notebooks" / "00-quickstart.ipynb").read_bytes() == \
        (ROOT / "notebooks" / "00-quickstart.ipynb").read_bytes()
    # a student's work is not replaced without --force
    work = tmp_path / "class" / "notebooks" / "01-ranking-metrics.ipynb"
    work.write_text("my answers")
    refused = subprocess.run([str(venv / "bin" / "cofiviz"), "notebooks", "class"], cwd=tmp_path, env=_env(venv),
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and "01-ranking-metrics.ipynb" in refused.stderr and "--force" in refused.stderr
    assert work.read_text() == "my answers"


def test_the_course_command_builds_the_editions_from_the_installed_notebooks(venv, tmp_path):
    done = _run(venv, tmp_path, "cofiviz", "course", "--editions", "editions", "--no-html")
    assert "the course cofiviz carries" in done.stderr
    for edition in ("student", "teacher"):
        assert sorted(p.name for p in (tmp_path / "editions" / edition).iterdir()) == _carried_files("notebooks")
    assert sorted(p.name for p in (tmp_path / "editions" / "experiments").iterdir()) == _carried_files("experiments")
    assert not (_site_packages(venv) / "cofiviz" / "_shipped" / "cofiviz-results").exists()   # nothing written there


def _serve(venv: Path, cwd: Path, cmd: list[str], port: int, what: str):
    """Start ``cmd`` of ``venv`` in ``cwd``, wait for its landing page and ``/PAGE`` to answer 200, return the
    landing page; the server is stopped in every case."""
    log = cwd / f"{what}.log"
    env = _env(venv, **server_env(), NUMBA_CACHE_DIR=str(cwd / "numba-cache"), **{K.MODULES_ENV: "cofiviz.util.elementary"})
    with open(log, "w") as out:
        proc = subprocess.Popen([str(venv / "bin" / cmd[0]), *cmd[1:]], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            assert wait_for_http(f"{url}/", proc, log, 120, what), log.read_text()[-3000:]
            with urllib.request.urlopen(f"{url}/", timeout=60) as resp:
                landing = resp.read().decode()
            assert wait_for_http(f"{url}/{PAGE}", proc, log, 120, what), log.read_text()[-3000:]
            return landing
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_cofiviz_serve_serves_every_installed_page_and_the_landing_page(venv, tmp_path):
    port = free_port()
    landing = _serve(venv, tmp_path, ["cofiviz", "serve", "--port", str(port), "--address", "127.0.0.1"], port,
                     "cofiviz-serve")
    for name in _carried_files("apps"):
        assert f'href="./{Path(name).stem}"' in landing, name
    assert "Dataset overview" in landing and "Training monitor" in landing
    assert "notebooks/00-quickstart.ipynb" in landing            # the course's notebooks, from the package
    assert "cofiviz notebooks DIR" in landing


def test_panel_serve_serves_an_installed_app_file(venv, tmp_path):
    paths = _run(venv, tmp_path, "cofiviz", "apps", "--paths", PAGE).stdout.split()
    port = free_port()
    # `panel serve`: Panel's own script is in the environment that lends the dependencies, so run its module here
    _serve(venv, tmp_path, ["python", "-m", "panel", "serve", *paths, "--port", str(port), "--address", "127.0.0.1"],
           port, "panel-serve")
