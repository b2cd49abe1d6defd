"""Every notebook runs top to bottom (in quick mode) and is stored without outputs; the course is complete."""

import html
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import prose_numbers
from cofiviz.cli import course

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: the course, in order; each is executed below like every other notebook
COURSE = ["01-ranking-metrics", "02-cofirank", "03-local-collaborative-ranking", "04-gapfm",
          "05-reproducing-the-papers", "06-scaling-out", "07-rank-functional-lab"]
#: the paper each course notebook takes its formulas from (named in its text)
PAPERS = {"01-ranking-metrics": ["CofiRank", "GAPfm", "LCR"], "02-cofirank": ["CofiRank", "NIPS 2007"],
          "03-local-collaborative-ranking": ["Local Collaborative Ranking", "WWW 2014"],
          "04-gapfm": ["GAPfm", "CIKM 2013"], "05-reproducing-the-papers": ["paper_table()"],
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
    if name not in ("05-reproducing-the-papers", "06-scaling-out"):  # those two compare numbers, not derive
        assert re.search(r"\$\$.+?\$\$", text, re.S), f"{name} has no displayed formula"
    # the quick mode the test suite uses is read from the environment, never hard-wired
    assert 'os.environ.get("COFIVIZ_QUICK") == "1"' in code


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_ends_its_lesson_with_exercises_whose_solutions_check_themselves(path):
    """Each "Exercise" prompt is followed by its solution: a code cell tagged ``solution``, its source hidden in
    JupyterLab, that checks its answer with ``assert`` (the notebook run above executes it)."""
    cells = nbformat.read(path, as_version=4).cells
    prompts = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("**Exercise")]
    assert prompts, f"{path.name} has no exercise"
    for i in prompts:
        solution = cells[i + 1]
        assert solution.cell_type == "code" and "solution" in solution.metadata.get("tags", []), (path.name, i)
        assert solution.metadata.get("jupyter", {}).get("source_hidden") is True, (path.name, i)
        assert re.search(r"^\s*assert ", solution.source, re.M), f"{path.name}, cell {i + 1}: the solution checks nothing"


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
    function ``cofiviz course`` runs; the numbers its prose states agree with what its cells compute; the page
    ``cofiviz course`` writes of the run draws its plots with BokehJS inline (no network)."""
    folder = ROOT / "notebooks"
    before = sorted(p.name for p in folder.iterdir())
    stated = prose_numbers.marks(nbformat.read(path, as_version=4))
    extra = [prose_numbers.reading_cell(nbformat.read(path, as_version=4))] if stated else []
    nb = course.execute(path, quick=True, timeout=600, extra_cells=extra)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, [f"{e.ename}: {e.evalue}" for e in errors]
    assert sorted(p.name for p in folder.iterdir()) == before, "the notebook left files in notebooks/"
    if stated:
        assert prose_numbers.disagreements(nb) == []
    page = course.to_html(nb)
    title = nb.cells[0].source.splitlines()[0].lstrip("# ").strip()
    assert html.escape(title, quote=False) in page
    if "hv.extension" in _code(path) or "pn.extension" in _code(path):
        assert "Bokeh" in page and "cdn.bokeh.org" not in page


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
