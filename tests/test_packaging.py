"""The project's own files: dependency lists in sync, the two-command Quick start, CI, import cost."""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

# conda names of packages whose pip name differs (or that pip pulls in through an extra)
CONDA_FOR_PIP = {"dask[distributed]": ["dask", "distributed"], "pytrec-eval-terrier": ["pytrec-eval-terrier"]}


def _name(req: str) -> str:
    return re.split(r"[<>=!~ ;]", req.strip(), maxsplit=1)[0].lower()


def _pip_requirements() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + list(project["optional-dependencies"]["test"])
    return {_name(r): r.replace(" ", "") for r in reqs}


def _conda_requirements() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    out = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for p in dep.get("pip", []):
                if not p.startswith("-e"):
                    out[_name(p)] = p.replace(" ", "")
        elif not dep.startswith(("python", "pip")):
            out[_name(dep)] = dep.replace(" ", "")
    return out


def test_environment_yml_and_pyproject_list_the_same_packages_and_versions():
    pip, conda = _pip_requirements(), _conda_requirements()
    expected = {}
    for name, req in pip.items():
        base, spec = name.split("[")[0], req[len(name):]
        for conda_name in CONDA_FOR_PIP.get(name, [base]):
            expected[conda_name] = conda_name + spec
    assert expected == conda, (
        f"only in pyproject: {sorted(set(expected) - set(conda))}, only in environment.yml: "
        f"{sorted(set(conda) - set(expected))}, different pins: "
        f"{sorted(k for k in set(expected) & set(conda) if expected[k] != conda[k])}")


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, f"Quick start must hold exactly one fenced block, found {len(blocks)}"
    lines = [ln.split("#", 1)[0].strip() for ln in blocks[0].splitlines()]
    return [ln for ln in lines if ln]


def test_readme_quick_start_has_exactly_two_commands_serve_then_test():
    commands = _quick_start_commands()
    assert len(commands) == 2, commands
    make = (ROOT / "Makefile").read_text()
    serve, test = commands
    # make serve serves every app through `cofiviz serve` (the one panel serve command line)
    assert serve == "make serve" and "$(BIN)/cofiviz serve" in make.split("serve: ", 1)[1].split("\n\n")[0]
    assert test == "make test"


def test_the_readme_says_how_many_processes_make_test_runs():
    """The README's account of ``make test`` names the number of pytest-xdist processes the Makefile starts."""
    import re

    default = int(re.search(r"^PYTEST_WORKERS \?= (\d+)$", (ROOT / "Makefile").read_text(), re.M).group(1))
    words = {0: "one process", 1: "one pytest-xdist process", 2: "two pytest-xdist processes",
             3: "three pytest-xdist processes", 4: "four pytest-xdist processes"}
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Tests and benchmarks", 1)[1].split("\n## ", 1)[0]
    assert f"in {words[default]}" in " ".join(section.split())


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    body = [ln.strip() for ln in ci if ln.strip() and not ln.startswith("#")]
    assert _quick_start_commands()[1] in body, body


def test_import_compiles_nothing():
    code = """
import json
import cofiviz
import sys
from numba.core.registry import CPUDispatcher
compiled = []
for name, mod in list(sys.modules.items()):
    if name.startswith('cofiviz'):
        for attr, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.signatures:
                compiled.append(f'{name}.{attr}')
print(json.dumps({'compiled': compiled}))
"""
    run = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    cwd=ROOT).stdout.strip().splitlines()[-1])
    assert run["compiled"] == [], f"import compiled kernels: {run['compiled']}"
