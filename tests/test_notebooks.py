"""Every notebook runs top to bottom (in quick mode) and is stored without outputs; the course is complete.

The run of each notebook also checks the numbers and settings its prose states (``prose_numbers``), proves every
exercise's check right on the solution and wrong on a planted mistake (:data:`PLANTED`), exports the notebook's
student edition to HTML (no solution, nothing from the network) and, with ``COFIVIZ_RECORD_SECONDS=1``, records
its run seconds per part for notebook 00's lesson plan (``notebooks/run-seconds.json``).
"""

import html
import json
import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import prose_numbers
from cofiviz.cli import course
from cofiviz.course import editions, plan

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: the course, in order; each is executed below like every other notebook
COURSE = ["01-ranking-metrics", "02-cofirank", "03-local-collaborative-ranking", "04-gapfm",
          "05-reproducing-the-papers", "05b-the-tables-row-by-row", "06-scaling-out", "07-rank-functional-lab"]


def _two_hour_path() -> list[str]:
    """The notebooks of notebook 00's lesson plan (its ``CORE = {...}``, read from the cell, not run)."""
    import ast

    for cell in nbformat.read(ROOT / "notebooks" / "00-quickstart.ipynb", as_version=4).cells:
        for node in ast.walk(ast.parse(cell.source)) if cell.cell_type == "code" else ():
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["CORE"]:
                return list(ast.literal_eval(node.value))
    raise AssertionError("notebook 00 has no CORE = {...} lesson plan")


#: the notebooks of the two-hour path, each with at least three exercises
CORE = _two_hour_path()
#: the paper each course notebook takes its formulas from (named in its text)
PAPERS = {"01-ranking-metrics": ["CofiRank", "GAPfm", "LCR"], "02-cofirank": ["CofiRank", "NIPS 2007"],
          "03-local-collaborative-ranking": ["Local Collaborative Ranking", "WWW 2014"],
          "04-gapfm": ["GAPfm", "CIKM 2013"], "05-reproducing-the-papers": ["paper_table()"],
          "05b-the-tables-row-by-row": ["paper_table()"],
          "06-scaling-out": ["Dask"], "07-rank-functional-lab": ["Designing the rank functional"]}


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


def test_the_course_is_complete():
    stems = {p.stem for p in NOTEBOOKS}
    assert [c for c in COURSE if c not in stems] == []


@pytest.mark.parametrize("name", COURSE)
def test_course_notebook_teaches_with_prose_formulas_and_code(name):
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    for paper in PAPERS[name]:
        assert paper in text, f"{name} does not name {paper!r}"
    if name not in ("05-reproducing-the-papers", "05b-the-tables-row-by-row", "06-scaling-out"):  # they compare numbers
        assert re.search(r"\$\$.+?\$\$", text, re.S), f"{name} has no displayed formula"
    # the quick mode the test suite uses is read from the environment, never hard-wired
    assert 'os.environ.get("COFIVIZ_QUICK") == "1"' in code


#: a planted wrong answer for every exercise: the check must say "not yet" to it (a typical mistake where one is)
PLANTED = {
    "0.1": "damped = sums[pick] / counts[pick]",                                   # the plain mean, no damping
    "0.2": "n_test = len(ratings)",                                                # the training ratings counted too
    "0.3": "tied_ndcg = metrics.ndcg(true, np.array([5.0, 4, 3, 2, 1]), k=10)",    # ties broken optimistically
    "1.1": "ndcg3 = M.ndcg(grades, scores, k=5)",                                  # the wrong cut-off
    "1.2": "constant_ndcg5 = M.ndcg(grades, grades.copy(), k=5)",                  # the best order, not the worst
    "1.3": "ap3 = M.average_precision(grades, scores, threshold=4)",               # the default threshold
    "2.1": "bound_minus_regret = -bound_minus_regret",                             # regret minus bound
    "2.2": "predicted_reg = 10.0",                                                 # λ not scaled
    "2.3": "bound_at_zero = 0.0",                                                  # the regret of the ideal order
    "3.1": "left_to_locality = gain",                                              # the whole gain
    "3.2": "pair_error = 2 / 6",                                                   # the tie-free count of another list
    "3.3": "differs = {'item_prior'}",                                             # one of the two
    "4.1": "delta_sums = [1.0] * 6",                                               # read as probabilities
    "4.2": "smooth_value = M.gap(np.array([3.0, 2, 1]), np.array([0.5, 0.0, -0.5]), ymax=3)",   # exact GAP
    "4.3": "pair_share = 20 / 50",                                                 # items, not pairs
    "5.1": "paired = (paired[0], paired[2], paired[1])",                          # the p-values swapped
    "5.2": "adjusted = table['wilcoxon_p'].to_numpy(dtype=float)",                 # not corrected
    "5.3": "within = int((published['cofiviz'] - published['paper'] <= 0.02).sum())",   # the signed difference
    "5b.1": "above_paper = 12",
    "6.1": "to_run = len(two_seeds)",                                              # the store ignored
    "7.1": "tie_losses = tie_losses[::-1]",                                        # Efron's first
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_ends_its_lesson_with_exercises_each_with_its_solution_and_a_check(path):
    """Each "Exercise" prompt is followed by its solution (a code cell tagged ``solution``, its source hidden in
    JupyterLab) and by its check (a code cell tagged ``check`` that calls ``check`` with the exercise's number and
    the answer's variable); every exercise has a planted wrong answer below; a core notebook has three or more."""
    nb = nbformat.read(path, as_version=4)
    found = editions.exercises(nb)              # raises on a prompt without its solution and check
    assert found, f"{path.name} has no exercise"
    for e in found:
        solution = nb.cells[e.solution]
        assert solution.metadata.get("jupyter", {}).get("source_hidden") is True, (path.name, e.number)
        assert not re.search(r"^\s*assert ", solution.source, re.M), f"{path.name}, {e.number}: the check checks, not the solution"
        assert re.search(rf"^{re.escape(e.answer)}\b[\w\s,]*=(?!=)", solution.source, re.M), f"{path.name}, {e.number}: no {e.answer} ="
        assert "from cofiviz.course import check" in nb.cells[e.check].source
        assert e.number in PLANTED, f"{path.name}: exercise {e.number} has no planted wrong answer in PLANTED"
    if path.stem in CORE:
        assert len(found) >= 3, f"{path.name} is a core notebook with {len(found)} exercises"


def test_every_planted_answer_belongs_to_an_exercise():
    numbers = {e.number for p in NOTEBOOKS for e in editions.exercises(nbformat.read(p, as_version=4))}
    assert sorted(set(PLANTED) - numbers) == []


def _planted_cells(nb) -> list:
    """After the run: the check results of the solutions, then each exercise's planted answer and its check again,
    then the results of those (each printed as JSON after a tag)."""
    report = lambda tag: nbformat.v4.new_code_cell(
        f"import json as _json\nfrom cofiviz.course import checks as _checks\nprint({tag!r} + _json.dumps(_checks.RESULTS))")
    cells = [report("SOLVED ")]
    for e in editions.exercises(nb):
        cells += [nbformat.v4.new_code_cell(PLANTED[e.number]),
                  nbformat.v4.new_code_cell(nb.cells[e.check].source)]
    return cells + [report("PLANTED ")]


def _reported(nb, tag) -> dict:
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            text = o.get("text", "")
            if o.get("output_type") == "stream" and text.startswith(tag):
                return json.loads(text[len(tag):].splitlines()[0])
    raise AssertionError(f"no {tag.strip()} line in the run")


def _code(path) -> str:
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


#: the notebooks that show a cofiviz dashboard
SHOWING = [p for p in NOTEBOOKS if "from cofiviz.dashboards." in _code(p)]


def test_every_dashboard_notebook_is_checked_for_its_extensions():
    assert {p.stem for p in SHOWING} >= {"00-quickstart", "02-cofirank", "05-reproducing-the-papers",
                                         "07-rank-functional-lab"}


@pytest.mark.parametrize("path", SHOWING, ids=[p.stem for p in SHOWING])
def test_a_notebook_showing_a_dashboard_loads_what_it_draws_with(path):
    """``pn.extension`` is called, inline (offline), and with ``"tabulator"`` when a dashboard module the notebook
    imports builds a Tabulator table (JupyterLab draws nothing for it otherwise)."""
    code = _code(path)
    calls = re.findall(r"pn\.extension\(([^)]*)\)", code)
    assert calls and all("inline=True" in c for c in calls), f"{path.name}: pn.extension(..., inline=True) is missing"
    modules = set(re.findall(r"from cofiviz\.dashboards\.(\w+) import", code))
    tables = sorted(m for m in modules if "pn.widgets.Tabulator" in (ROOT / "cofiviz" / "dashboards" / f"{m}.py").read_text())
    if tables:
        assert any('"tabulator"' in c for c in calls), f"{path.name} shows {tables} without loading tabulator"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.name}: cells {dirty} hold outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom_from_its_folder_and_exports_to_html(path):
    """Executed as ``jupyter lab notebooks/`` runs it (the kernel's working directory is ``notebooks/``), by the
    function ``cofiviz course`` runs; the numbers and settings its prose states agree with what its cells compute
    and build; every exercise's check says right to the solution and not yet to the planted answer; the page
    ``cofiviz course`` writes of the run draws its plots with BokehJS inline (no network), and so does the page of
    the student edition, which holds no solution. With ``COFIVIZ_RECORD_SECONDS=1`` the run's seconds per part go
    into ``notebooks/run-seconds.json`` (notebook 00's lesson plan)."""
    folder = ROOT / "notebooks"
    before = sorted(p.name for p in folder.iterdir())
    source = nbformat.read(path, as_version=4)
    stored = len(source.cells)
    extra = _planted_cells(source) + [prose_numbers.reading_cell(source)]
    t0 = time.perf_counter()
    nb = course.execute(path, quick=True, timeout=600, extra_cells=extra)
    wall = time.perf_counter() - t0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, [f"{e.ename}: {e.evalue}" for e in errors]
    assert sorted(p.name for p in folder.iterdir()) == before, "the notebook left files in notebooks/"
    assert prose_numbers.disagreements(nb) == []
    numbers = [e.number for e in editions.exercises(source)]
    assert _reported(nb, "SOLVED ") == dict.fromkeys(numbers, "right"), "a check does not accept its solution"
    assert _reported(nb, "PLANTED ") == dict.fromkeys(numbers, "wrong"), "a check accepts a planted wrong answer"
    if os.environ.get("COFIVIZ_RECORD_SECONDS") == "1":
        appended = sum(plan.cell_seconds(c) for c in nb.cells[stored:])
        plan.record(path.stem, source, nb, wall - appended, path.parent / plan.SECONDS_FILE)
    ran = nbformat.from_dict(nb)
    ran.cells = ran.cells[:stored]
    page = course.to_html(ran)
    title = nb.cells[0].source.splitlines()[0].lstrip("# ").strip()
    assert html.escape(title, quote=False) in page
    if "hv.extension" in _code(path) or "pn.extension" in _code(path):
        assert "Bokeh" in page and "cdn.bokeh.org" not in page
    student = course.to_html(editions.student(ran, keep_outputs=True))
    assert html.escape(title, quote=False) in student and "renderMathInElement" in student
    assert not re.findall(r"<script[^>]*\ssrc=", student), "the student page loads a script"
    text = html.unescape(re.sub(r"<[^>]+>", "", student))          # what the page shows, highlighting aside
    for e in editions.exercises(source):
        for line in source.cells[e.solution].source.splitlines():
            if len(line.strip()) > 25 and line.strip() not in _code_outside_solutions(source):
                assert line.strip() not in text, f"{e.number}: the student page shows {line.strip()!r}"
        assert f"{e.answer} = ..." in text


def _code_outside_solutions(nb) -> str:
    """The code of every cell but the solutions (a solution's line may repeat a line of the lesson)."""
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code" and editions.SOLUTION not in c.metadata.get("tags", []))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_has_its_run_seconds_measured_for_the_lesson_plan(path):
    """Notebook 00's lesson plan reads each notebook's run seconds per part, measured by the run above; a notebook
    whose code or sections changed since is measured again."""
    entry = plan.measured(path.parent / plan.SECONDS_FILE)["notebooks"].get(path.stem)
    assert entry is not None and entry["hash"] == plan.code_hash(path), (
        f"{path.name} changed since its run seconds were measured: run "
        f"COFIVIZ_RECORD_SECONDS=1 pytest tests/test_notebooks.py -k 'runs_top_to_bottom and {path.stem}'")
    assert set(entry["parts"]) == set(plan.parts(path)["part"])


@pytest.mark.parametrize("text, value, ok", [
    (".364", 0.363633, True), (".364", 0.3625, False), ("0.250", 0.2504999, True), ("0.250", 0.2506, False),
    ("\u22120.023", -0.0234, True), ("+0.041", 0.0414, True), ("\u22120.023", 0.023, False), ("1,200", 1200, True),
    ("1,200", 1201, False), ("35 %", 35.4, True), ("35 %", 0.35, False), ("3", 2.5, True), ("3", 2.49, False)])
def test_a_number_in_prose_agrees_with_its_value_to_the_digits_shown(text, value, ok):
    assert prose_numbers.agrees(text, value) is ok


def test_a_number_in_prose_that_its_cell_does_not_compute_is_found():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("share = 1 / 4"),
        nbformat.v4.new_markdown_cell('A quarter is <span data-computed="share">0.25</span>, not '
                                      '<span data-computed="share * 100">26 %</span>.')])
    nb.cells.append(prose_numbers.reading_cell(nb))
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert prose_numbers.disagreements(nb) == ["cell 1: the prose says '26 %', share * 100 is 25.0"]


def test_every_computed_number_in_prose_is_a_number():
    n = 0
    for path in NOTEBOOKS:
        for i, expr, text in prose_numbers.marks(nbformat.read(path, as_version=4)):
            prose_numbers.parse(text)   # raises on anything else
            compile(expr, f"{path.name}, cell {i}", "eval")
            n += 1
    assert n > 0, "no notebook marks a computed number in its prose"


def test_notebooks_leave_no_files_in_the_project():
    """The notebooks write their stores and reports to temporary directories, not into the checkout."""
    for name in COURSE:
        code = "\n".join(c.source for c in nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells
                         if c.cell_type == "code")
        for call in re.findall(r"reproduce\([^)]*\)", code):
            assert "html_path=" in call, f"{name}: {call} would write its report into cofiviz-results/"
    assert not (ROOT / "notebooks" / "cofiviz-results").exists()


@pytest.mark.parametrize("text, value, ok", [
    ("4", 4.0, True), ("4", 4, True), ("4", 4.4, False), ("0.1", 0.1, True), ("1e-5", 1e-5, True), ("1/1.6", 1 / 1.6, True),
    ("\u22120.25", -0.25, True), ("0", 0.0, True), ("0", False, False), ("none", "none", True), ("gains", "scores", False),
    ("None", None, True), ("10", "10", False), ("damped_mean", "damped_mean", True)])
def test_a_setting_in_prose_agrees_with_its_value_exactly(text, value, ok):
    assert prose_numbers.setting_agrees(text, value) is ok


def _changed(value, parameter=None):
    """A value other than ``value`` that the parameter accepts."""
    objects = getattr(parameter, "objects", None)
    if objects:
        return next(o for o in (objects.values() if isinstance(objects, dict) else objects) if o != value)
    if isinstance(value, bool) or value is None:
        return 1 if value is None else not value
    return value + 1 if isinstance(value, (int, float)) else f"{value}-changed"


#: every setting the prose reads from the library alone (a class's defaults or presets), with its notebook
LIBRARY_SETTINGS = [(p, expr) for p in NOTEBOOKS for _, expr, _ in prose_numbers.setting_marks(nbformat.read(p, as_version=4))
                    if prose_numbers.reads_only_the_library(expr)]


def test_the_notebooks_state_the_defaults_and_the_papers_settings_from_the_library():
    assert {p.stem for p, _ in LIBRARY_SETTINGS} >= {"02-cofirank", "03-local-collaborative-ranking", "04-gapfm",
                                                      "06-scaling-out", "07-rank-functional-lab"}
    for path in NOTEBOOKS:
        assert prose_numbers.library_disagreements(nbformat.read(path, as_version=4)) == [], path.name


@pytest.mark.parametrize("path, expr", LIBRARY_SETTINGS, ids=[f"{p.stem}:{e}" for p, e in LIBRARY_SETTINGS])
def test_a_changed_default_or_preset_fails_the_prose_that_states_the_old_one(path, expr, monkeypatch):
    """Change the default (``Model().p``) or the preset entry (``Model.presets[...][...]``) that a notebook's prose
    states, as a change to the library would: the check of the prose fails and names the setting."""
    import cofiviz

    default = re.fullmatch(r"cofiviz\.models\.(\w+)\(\)\.(\w+)", expr)
    preset = re.fullmatch(r"cofiviz\.models\.(\w+)\.presets\['(\w+)'\]\['(\w+)'\]", expr)
    assert default or preset, f"{expr}: a setting read from the library is Model().name or Model.presets['x']['name']"
    if default:
        cls, name = getattr(cofiviz.models, default.group(1)), default.group(2)
        # the Parameter's own default: setting the class attribute would change the same object, and undoing it
        # would put that changed object back
        monkeypatch.setattr(cls.param[name], "default", _changed(getattr(cls, name), cls.param[name]))
    else:
        cls, key, name = getattr(cofiviz.models, preset.group(1)), preset.group(2), preset.group(3)
        monkeypatch.setitem(cls.presets[key], name, _changed(cls.presets[key][name], cls.param[name]))
    wrong = prose_numbers.library_disagreements(nbformat.read(path, as_version=4))
    assert any(expr in w for w in wrong), wrong


def test_a_default_changed_before_the_model_is_built_fails_the_run(tmp_path):
    """The same in a kernel: a notebook builds GAPfm at its defaults and its prose reads β from the object. With
    the default changed first (a monkeypatch in the kernel), the run's check of the prose fails."""
    def run(patch):
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell("import cofiviz\n" + patch),
            nbformat.v4.new_code_cell("gapfm = cofiviz.models.GAPfm()"),
            nbformat.v4.new_markdown_cell('At the defaults β = <span data-setting="gapfm.item_prior">16</span> '
                                          '(`user_weight` = <span data-setting="gapfm.user_weight">inverse_length</span>).')])
        nb.cells.append(prose_numbers.reading_cell(nb))
        NotebookClient(nb, timeout=120, kernel_name="python3").execute()
        return prose_numbers.disagreements(nb)

    assert run("") == []
    assert run("cofiviz.models.GAPfm.item_prior = 8.0") == [
        "cell 2: the prose says the setting is '16', gapfm.item_prior is 8.0"]
