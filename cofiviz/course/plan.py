"""The lesson plan of the course: minutes to read each part of a notebook, to run it, and for its dashboards.

A notebook's parts are its sections (a Markdown line opening with ``## ``; what comes before the first one is
its opening). Reading minutes count the prose at :data:`WORDS_PER_MINUTE` and the code at
:data:`CODE_LINES_PER_MINUTE` (HTML marks are not read). Running minutes are the seconds the test suite
measured when it ran the notebook in quick mode (``COFIVIZ_QUICK=1``, how a class runs it), kept beside the
notebooks in :data:`SECONDS_FILE` with a hash of each notebook's code and headings (the exercises' solutions
and answers left out, so that the student and teacher editions have the hash of the notebook they come from): a
notebook whose code changed since is measured again (``tests/test_notebooks.py`` says how). A dashboard shown in a part gets
:data:`DASHBOARD_MINUTES` to play with it (one panel of a dashboard, :data:`PANEL_MINUTES`), an exercise done
in class :data:`EXERCISE_MINUTES`: those are allotted, not measured. An exercise's prompt, solution and check are
not counted as reading: they are the exercise's minutes.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path

import pandas as pd

__all__ = ["SECONDS_FILE", "WORDS_PER_MINUTE", "CODE_LINES_PER_MINUTE", "DASHBOARD_MINUTES", "PANEL_MINUTES",
           "EXERCISE_MINUTES", "OPENING", "dashboard", "parts", "code_hash", "cell_seconds", "record", "measured", "lesson_plan"]

#: the file beside the notebooks that holds the run seconds the test suite measured, per notebook and part
SECONDS_FILE = "run-seconds.json"
WORDS_PER_MINUTE = 150
CODE_LINES_PER_MINUTE = 20
#: minutes allotted to a dashboard shown in class, to one panel of a dashboard, and to an exercise done in class
DASHBOARD_MINUTES = 5
PANEL_MINUTES = 2
EXERCISE_MINUTES = 5
#: the name of what comes before a notebook's first section
OPENING = "(opening)"
_HEADING = re.compile(r"^## +(.+?)\s*$")


def _read(nb):
    import nbformat   # here, not at the top: it takes seconds to import, which every cofiviz command would pay
    return nbformat.read(nb, as_version=4) if isinstance(nb, (str, Path)) else nb


def dashboard(source: str) -> str | None:
    """``"app"`` when a code cell shows a dashboard (its last line builds or serves a class it imports from
    ``cofiviz.dashboards``), ``"panel"`` when it shows one panel of one (``LossShapes().bound_panel()``), else None."""
    if not re.search(r"^from cofiviz\.dashboards\.\w+ import", source, re.M):
        return None
    lines = [l.strip() for l in source.strip().splitlines() if l.strip() and not l.strip().startswith("#")]
    last = lines[-1] if lines else ""
    if re.search(r"_panel\(\)", last):
        return "panel"
    built = re.fullmatch(r"\w+", last) and re.search(rf"^{last}\s*=\s*[A-Z]\w*\(", source, re.M)
    if re.match(r"^(None if QUICK else )?[A-Z]\w*\(", last) or ".servable(" in last or built:
        return "app"
    return None


def parts(nb) -> pd.DataFrame:
    """One row per part of a notebook: its cells, the words and code lines to read, its dashboards (whole apps and
    single panels) and its exercises.

    Parameters
    ----------
    nb : path or NotebookNode
    """
    nb = _read(nb)
    exercise_cells = {j for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("**Exercise")
                      for j in (i, i + 1, i + 2)}
    new = lambda name: {"part": name, "cells": [], "words": 0, "code lines": 0, "dashboards": 0, "panels": 0,
                        "exercises": 0}
    rows = [new(OPENING)]
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                m = _HEADING.match(line)
                if m:
                    rows.append(new(m.group(1)))
                if i not in exercise_cells:
                    rows[-1]["words"] += len(re.sub(r"<[^>]+>", " ", line).split())
            rows[-1]["exercises"] += cell.source.startswith("**Exercise")
        elif cell.cell_type == "code":
            if i not in exercise_cells:
                rows[-1]["code lines"] += len(cell.source.splitlines())
            shown = dashboard(cell.source)
            rows[-1]["dashboards"] += shown == "app"
            rows[-1]["panels"] += shown == "panel"
        rows[-1]["cells"].append(i)
    return pd.DataFrame(rows)


def code_hash(nb) -> str:
    """A hash of what decides a notebook's run seconds per part: its code cells (but the exercises' solutions and
    the student edition's answers) and its section headings."""
    nb = _read(nb)
    skip = {"solution", "answer"}
    text = "\n\x00".join(c.source if c.cell_type == "code" else "\n".join(
        l for l in c.source.splitlines() if _HEADING.match(l)) for c in nb.cells if c.cell_type in ("code", "markdown")
        and not skip & set(c.get("metadata", {}).get("tags", [])))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cell_seconds(cell) -> float:
    """Seconds a cell of an executed notebook took, from the timestamps nbclient records (0 without them)."""
    t = cell.get("metadata", {}).get("execution", {})
    start, end = t.get("iopub.execute_input"), t.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
    return max(0.0, (parse(end) - parse(start)).total_seconds())


def record(name: str, source, executed, wall_seconds: float, path: str | Path) -> dict:
    """Write the run seconds of notebook ``name`` per part into ``path``: each part's cells' seconds, the
    kernel's start and what no cell accounts for going to the opening. Returns the entry written.

    Parameters
    ----------
    name : str
        The notebook's file name without ``.ipynb``.
    source : path or NotebookNode
        The notebook as stored (its parts and hash).
    executed : NotebookNode
        The same notebook after the run (cells appended after the stored ones are not counted).
    wall_seconds : float
        The whole run, from starting the kernel to the last stored cell's end.
    path : path
        The measurements' file (:data:`SECONDS_FILE` in the notebooks' folder).
    """
    source = _read(source)
    table = parts(source)
    per_part = {row["part"]: sum(cell_seconds(executed.cells[i]) for i in row["cells"]
                                 if executed.cells[i].cell_type == "code") for _, row in table.iterrows()}
    per_part[OPENING] += max(0.0, wall_seconds - sum(per_part.values()))
    entry = {"hash": code_hash(source), "seconds": round(wall_seconds, 1),
             "parts": {k: round(v, 1) for k, v in per_part.items()}}
    path = Path(path)
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault("mode", "quick (COFIVIZ_QUICK=1)")
    data.setdefault("measured by", "tests/test_notebooks.py with COFIVIZ_RECORD_SECONDS=1")
    data.setdefault("notebooks", {})[name] = entry
    data["notebooks"] = dict(sorted(data["notebooks"].items()))
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return entry


def measured(path: str | Path) -> dict:
    """The recorded run seconds: ``{"mode": ..., "machine": ..., "notebooks": {name: {"hash", "seconds",
    "parts"}}}`` (empty notebooks when nothing was recorded)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else {"notebooks": {}}


def lesson_plan(folder: str | Path, core: dict, *, in_class_exercises: int = 1,
                seconds: str | Path | None = None) -> pd.DataFrame:
    """The course part by part: minutes to read, to run (measured), for the dashboards and exercises, and
    whether the part is in the core path.

    Parameters
    ----------
    folder : path
        The notebooks' folder.
    core : dict
        ``{notebook name: "all" or [part names]}``: the parts a class goes through; every other part, and
        every notebook not named, is optional.
    in_class_exercises : int
        Exercises of each core notebook done in class (the first ones); the others are homework.
    seconds : path, optional
        The measured run seconds (default: :data:`SECONDS_FILE` in ``folder``).

    Returns
    -------
    DataFrame
        One row per (notebook, part): ``read``, ``run``, ``dashboards``, ``exercises`` (minutes), ``core``
        (bool: the class reads it), ``runs in class`` (bool: the part of a notebook of the path, which a class runs
        top to bottom, its optional parts included), ``measured`` (False where the notebook changed since its
        seconds were recorded: its run minutes are then missing).
    """
    import nbformat   # here, not at the top: it takes seconds to import, which every cofiviz command would pay
    recorded = measured(Path(folder) / SECONDS_FILE if seconds is None else seconds)["notebooks"]
    rows = []
    for path in sorted(Path(folder).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        entry = recorded.get(path.stem)
        fresh = entry is not None and entry["hash"] == code_hash(nb)
        wanted = core.get(path.stem, [])
        done_in_class = 0
        for _, p in parts(nb).iterrows():
            in_core = wanted == "all" or p["part"] in wanted or (p["part"] == OPENING and bool(wanted))
            exercises = min(p["exercises"], max(0, in_class_exercises - done_in_class)) if in_core else 0
            done_in_class += exercises
            rows.append({"notebook": path.stem, "part": p["part"],
                         "read": p["words"] / WORDS_PER_MINUTE + p["code lines"] / CODE_LINES_PER_MINUTE,
                         "run": entry["parts"].get(p["part"], 0.0) / 60 if fresh else float("nan"),
                         "dashboards": p["dashboards"] * DASHBOARD_MINUTES + p["panels"] * PANEL_MINUTES,
                         "exercises": exercises * EXERCISE_MINUTES, "core": in_core, "runs in class": bool(wanted),
                         "measured": fresh})
    return pd.DataFrame(rows)
