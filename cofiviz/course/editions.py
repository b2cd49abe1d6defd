"""The student edition and the teacher edition of the course, written from its notebooks.

An exercise in a notebook is three cells: its prompt (a Markdown cell opening with ``**Exercise N.M``), its
solution (a code cell tagged ``solution``, its source hidden in JupyterLab) that puts the answer in one
variable, and its check (a code cell tagged ``check`` that calls :func:`cofiviz.course.check` on that
variable). The **student edition** replaces each solution by an empty answer cell (``name = ...``) and keeps
the check, locked and its source folded away, which then says "not answered yet", "not yet" with a hint, or
"right"; it holds no solution and no output. The **teacher edition** shows the solutions. Both are written without outputs.
"""

from __future__ import annotations

import ast
import copy
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path


from .plan import SECONDS_FILE

__all__ = ["Exercise", "exercises", "answer_name", "student", "teacher", "write_editions", "SOLUTION", "CHECK",
           "ANSWER"]

#: the tags of a solution cell, of a check cell, and of the student edition's empty answer cell
SOLUTION, CHECK, ANSWER = "solution", "check", "answer"
PROMPT = re.compile(r"^\*\*Exercise (\d+[a-z]?\.\d+)")


@dataclass(frozen=True)
class Exercise:
    """One exercise of a notebook: its number, the indices of its prompt, solution and check cells, and the
    variable that holds its answer."""

    number: str
    prompt: int
    solution: int
    check: int
    answer: str


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def answer_name(check_source: str) -> tuple[str, str]:
    """The exercise number and the answer's variable of a check cell: the first two arguments of its
    ``check(...)`` call.

    Raises
    ------
    ValueError
        The cell calls no ``check`` whose first argument is a text and second a variable.
    """
    for node in ast.walk(ast.parse(check_source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "check"
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[1], ast.Name)):
            return str(node.args[0].value), node.args[1].id
    raise ValueError("a check cell must call check(\"N.M\", answer_variable, ...)")


def exercises(nb) -> list[Exercise]:
    """Every exercise of ``nb``, in order.

    Raises
    ------
    ValueError
        A prompt is not followed by a solution cell and a check cell, or the check names another exercise.
    """
    out = []
    for i, cell in enumerate(nb.cells):
        m = PROMPT.match(cell.source) if cell.cell_type == "markdown" else None
        if not m:
            continue
        if i + 2 >= len(nb.cells) or SOLUTION not in _tags(nb.cells[i + 1]) or CHECK not in _tags(nb.cells[i + 2]):
            raise ValueError(f"exercise {m.group(1)} (cell {i}): the prompt must be followed by a code cell tagged "
                             f"{SOLUTION!r} and one tagged {CHECK!r}")
        number, name = answer_name(nb.cells[i + 2].source)
        if number != m.group(1):
            raise ValueError(f"exercise {m.group(1)} (cell {i}): its check checks exercise {number}")
        out.append(Exercise(number, i, i + 1, i + 2, name))
    return out


def _clean(cell):
    """The cell without outputs or execution count."""
    cell = copy.deepcopy(cell)
    if cell.cell_type == "code":
        cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    return cell


def student(nb, *, keep_outputs: bool = False):
    """The student edition of a notebook: every solution replaced by an empty answer cell.

    Parameters
    ----------
    nb : NotebookNode
        The notebook as in ``notebooks/`` (or as it ran, with ``keep_outputs``).
    keep_outputs : bool
        Keep the outputs of the cells that are neither solutions nor checks (the test suite exports the
        student edition of a notebook it ran); the checks' outputs, which said "right" to the solution, go.
    """
    import nbformat   # here, not at the top: it takes seconds to import, which every cofiviz command would pay
    ex = {e.solution: e for e in exercises(nb)}
    checks = {e.check for e in ex.values()}
    cells = []
    for i, cell in enumerate(nb.cells):
        if i in ex:
            e = ex[i]
            cells.append(nbformat.v4.new_code_cell(
                f"# Exercise {e.number}: your code here; the answer goes in {e.answer}\n{e.answer} = ...",
                metadata={"tags": [ANSWER]}))
        elif SOLUTION in _tags(cell):
            raise ValueError(f"cell {i} is tagged {SOLUTION!r} but follows no exercise prompt")
        else:
            cell = copy.deepcopy(cell) if keep_outputs and i not in checks else _clean(cell)
            if i in checks:          # locked, its source folded away: what it compares with is not the answer's hint
                cell.metadata["editable"] = False
                cell.metadata["deletable"] = False
                cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            cells.append(cell)
    out = copy.deepcopy(nb)
    out.cells = cells
    return out


def teacher(nb):
    """The teacher edition of a notebook: every solution shown (not hidden) under its prompt, no outputs."""
    out = copy.deepcopy(nb)
    out.cells = [_clean(c) for c in out.cells]
    for e in exercises(out):
        out.cells[e.solution].metadata.get("jupyter", {}).pop("source_hidden", None)
    return out


def write_editions(directory: str | os.PathLike, out: str | os.PathLike) -> dict[str, list[Path]]:
    """Write ``out/student/NAME.ipynb`` and ``out/teacher/NAME.ipynb`` for every notebook of ``directory``, each
    folder with a copy of the run seconds the lesson plan reads (:data:`cofiviz.course.plan.SECONDS_FILE`).

    The files of the ``experiments/`` folder beside ``directory``, when there is one, are copied to
    ``out/experiments/``: a notebook reads them from a folder above its own (notebook 06 its
    ``experiments/lcr_rank_local.yaml``), so each edition runs from its folder as the notebooks do from theirs.

    Returns
    -------
    dict
        ``{"student": [paths], "teacher": [paths]}``, in file-name order.
    """
    import nbformat   # here, not at the top: it takes seconds to import, which every cofiviz command would pay
    written = {"student": [], "teacher": []}
    for path in sorted(Path(directory).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for edition, make in (("student", student), ("teacher", teacher)):
            folder = Path(out) / edition
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(make(nb), folder / path.name)
            written[edition].append(folder / path.name)
    seconds = Path(directory) / SECONDS_FILE
    if seconds.exists():
        for edition in written:
            shutil.copyfile(seconds, Path(out) / edition / SECONDS_FILE)
    experiments = Path(directory).resolve().parent / "experiments"
    if experiments.is_dir():
        (Path(out) / "experiments").mkdir(parents=True, exist_ok=True)
        for path in sorted(experiments.iterdir()):
            if path.is_file() and not path.name.startswith("."):
                shutil.copyfile(path, Path(out) / "experiments" / path.name)
    return written
