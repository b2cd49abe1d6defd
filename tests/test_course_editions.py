"""The course's student and teacher editions, and the checks under its exercises.

``cofiviz course --editions DIR`` writes both from ``notebooks/``: the student edition holds no solution (an empty
answer cell instead) and keeps each exercise's check, which answers "not answered yet", "not yet" with a hint, or
"right"; the teacher edition shows the solutions. The student edition runs top to bottom as a class gets it.
"""

import html
import re
import shutil

import nbformat
import numpy as np
import pytest

from cofiviz.cli import course, main
from cofiviz.course import check, checks, editions, plan
from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_a_check_says_right_not_yet_or_not_answered_and_never_raises(capsys):
    assert check("9.1", 0.5, 0.5, hint="h") == "right" and checks.RESULTS["9.1"] == "right"
    assert check("9.1", np.array([1.0, 2.0]), [1.0, 2.0 + 1e-9], hint="h", right="well done") == "right"
    assert "Exercise 9.1: right. well done" in capsys.readouterr().out
    assert check("9.1", 0.6, 0.5, hint="look at the damping") == "wrong"
    assert "Exercise 9.1: not yet. Hint: look at the damping" in capsys.readouterr().out
    assert check("9.1", ..., 0.5, hint="h") == "unanswered" and "not answered yet" in capsys.readouterr().out
    assert check("9.1", [1.0], [1.0, 2.0], hint="h") == "wrong"                 # another shape
    assert check("9.1", "x", 0.5, hint="h") == "wrong"                          # not a number
    assert check("9.1", " Item  Mean", "item mean", hint="h") == "right"        # words, case and spaces aside
    assert check("9.1", {"reg"}, {"reg", "item_prior"}, hint="h") == "wrong"
    assert check("9.1", 3, test=lambda a: a > 2, hint="h") == "right"
    assert check("9.1", None, test=lambda a: a > 2, hint="h") == "wrong"         # the test raised: a wrong answer
    assert "TypeError" in capsys.readouterr().out
    with pytest.raises(ValueError):
        check("9.1", 1, hint="h")
    # a check cell shows the line it printed, not its return value as well
    assert hasattr(check("9.1", 1, 1, hint="h"), "_ipython_display_")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_student_edition_has_no_solution_and_a_check_under_each_empty_answer(path):
    nb = nbformat.read(path, as_version=4)
    found = editions.exercises(nb)
    student = editions.student(nb)
    assert not [c for c in student.cells if editions.SOLUTION in c.metadata.get("tags", [])]
    assert len(student.cells) == len(nb.cells)
    solutions = "\n".join(nb.cells[e.solution].source for e in found)
    for e in found:
        answer, test = student.cells[e.solution], student.cells[e.check]
        assert answer.source.endswith(f"\n{e.answer} = ...") and editions.ANSWER in answer.metadata["tags"]
        assert test.source == nb.cells[e.check].source and test.metadata["editable"] is False
        assert test.metadata["jupyter"]["source_hidden"] is True
    text = "\n".join(c.source for c in student.cells)
    assert all(line.strip() not in text for line in solutions.splitlines() if len(line.strip()) > 30
               and line.strip() not in "\n".join(c.source for c in nb.cells if c.cell_type == "code"
                                                and editions.SOLUTION not in c.metadata.get("tags", [])))
    teacher = editions.teacher(nb)
    for e in editions.exercises(teacher):
        assert teacher.cells[e.solution].source == nb.cells[e.solution].source
        assert not teacher.cells[e.solution].metadata.get("jupyter", {}).get("source_hidden")


def _exercise_notebook(folder):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A lesson\n\nThe mean of $x_1, x_2$ is $\\frac{x_1 + x_2}{2}$."),
        nbformat.v4.new_code_cell("import numpy as np\ngrades = np.array([5.0, 4.0, 3.0])"),
        nbformat.v4.new_markdown_cell("**Exercise 1.1 · The mean.** Put the mean grade in `mean_grade`."),
        nbformat.v4.new_code_cell("mean_grade = grades.sum() / len(grades)   # THE-SOLUTION",
                                  metadata={"tags": ["solution"], "jupyter": {"source_hidden": True}}),
        nbformat.v4.new_code_cell("from cofiviz.course import check\n\ncheck(\"1.1\", mean_grade, grades.mean(), "
                                  "hint=\"add and divide\")", metadata={"tags": ["check"]})])
    nbformat.write(nb, folder / "00-lesson.ipynb")


def test_the_editions_command_writes_both_and_their_pages_load_nothing_from_the_network(tmp_path, capsys):
    books = tmp_path / "notebooks"
    books.mkdir()
    _exercise_notebook(books)
    out = tmp_path / "editions"
    assert main(["course", "--notebooks", str(books), "--editions", str(out), "--quick"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(out / k) for k in ("student", "teacher", "student-html", "teacher-html")]
    assert "THE-SOLUTION" not in (out / "student" / "00-lesson.ipynb").read_text()
    assert "THE-SOLUTION" in (out / "teacher" / "00-lesson.ipynb").read_text()
    student = (out / "student-html" / "00-lesson.html").read_text()
    teacher = (out / "teacher-html" / "00-lesson.html").read_text()
    assert "THE-SOLUTION" not in student and "Exercise 1.1: not answered yet" in student
    assert "add and divide" not in student and "add and divide" in teacher   # the student's check is folded away
    assert "THE-SOLUTION" in teacher and "Exercise 1.1: right." in teacher
    for page in (student, teacher):
        assert not re.findall(r"<script[^>]*\ssrc=", page)                  # no script from anywhere
        assert not re.findall(r"""(?:src|href)=["']https?://""", page)       # nor a style sheet or an image
        assert "renderMathInElement" in page and "katex" in page            # formulas typeset by the KaTeX inside
    assert "the student edition" in (out / "student-html" / "index.html").read_text()


def test_the_editions_of_the_course_are_written_without_running_them(tmp_path, capsys):
    out = tmp_path / "editions"
    assert main(["course", "--notebooks", str(ROOT / "notebooks"), "--editions", str(out), "--no-html"]) == 0
    names = sorted(p.name for p in NOTEBOOKS) + [plan.SECONDS_FILE]        # the lesson plan's measurements with them
    assert sorted(p.name for p in (out / "student").iterdir()) == sorted(names)
    assert sorted(p.name for p in (out / "teacher").iterdir()) == sorted(names)


def test_the_student_edition_of_a_notebook_runs_top_to_bottom_and_its_checks_answer(tmp_path):
    """What a class gets: notebook 00's student edition, run from its own folder as Run All does, raises nothing, and
    every check says the exercise is not answered yet; with a wrong answer written in, the check gives its hint."""
    shutil.copytree(ROOT / "notebooks", tmp_path / "course")
    editions.write_editions(tmp_path / "course", tmp_path / "out")
    path = tmp_path / "out" / "student" / "00-quickstart.ipynb"
    nb = nbformat.read(path, as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if editions.ANSWER in c.metadata.get("tags", []))
    nb.cells.insert(first + 2, nbformat.v4.new_code_cell("damped = np.array([3.5, 3.5])\n" + nb.cells[first + 1].source))
    nbformat.write(nb, path)
    ran = course.execute(path, quick=True, timeout=600)
    errors = [o for c in ran.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, [f"{e.ename}: {e.evalue}" for e in errors]
    said = ["".join(o.get("text", "") for o in c.outputs) for c in ran.cells if "check" in c.metadata.get("tags", [])]
    assert len(said) == 3 and all("not answered yet" in s for s in said)
    assert "Exercise 0.1: not yet. Hint:" in "".join(o.get("text", "") for o in ran.cells[first + 2].outputs)
    page = html.unescape(re.sub(r"<[^>]+>", "", course.to_html(ran)))
    assert "damped = (sums[pick] + d * mu)" not in page and "damped = ..." in page
