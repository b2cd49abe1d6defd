"""`cofiviz course`: every notebook run and written as HTML, and the landing page's link to the pages."""

import nbformat
from tornado.template import Template

from cofiviz.cli import main
from cofiviz.dashboards.catalog import COURSE_HTML, INDEX_TEMPLATE, course_html
from cofiviz.dashboards.serving import app_files, serve_command
from conftest import ROOT


def _notebook(folder, name, title):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# {title}\n\nA first sentence for the index."),
        nbformat.v4.new_code_cell('import os\nimport holoviews as hv\nhv.extension("bokeh", inline=True)\n'
                                  'print("quick" if os.environ.get("COFIVIZ_QUICK") == "1" else "full")\n'
                                  'hv.Curve([1, 3, 2])')])
    nbformat.write(nb, folder / name)


def test_the_course_command_runs_every_notebook_and_writes_pages_that_draw_offline(tmp_path, capsys):
    books = tmp_path / "notebooks"
    books.mkdir()
    _notebook(books, "00-first.ipynb", "First lesson")
    _notebook(books, "01-second.ipynb", "Second lesson")
    out = tmp_path / "html"
    assert main(["course", "--notebooks", str(books), "--out", str(out), "--quick"]) == 0
    assert capsys.readouterr().out.strip() == str(out / "index.html")
    index = (out / "index.html").read_text()
    assert '<a href="00-first.html">First lesson</a>' in index and '<a href="01-second.html">Second lesson</a>' in index
    page = (out / "01-second.html").read_text()
    assert "Second lesson" in page and "quick" in page          # the cell ran, in quick mode, and its output is there
    assert "Bokeh" in page and "cdn.bokeh.org" not in page      # BokehJS inline: the plot draws with no network
    assert sorted(p.name for p in books.iterdir()) == ["00-first.ipynb", "01-second.ipynb"]   # notebooks untouched


def test_a_folder_without_notebooks_is_a_usage_error(tmp_path, capsys):
    assert main(["course", "--notebooks", str(tmp_path), "--out", str(tmp_path / "html")]) == 2
    assert "no notebook (*.ipynb)" in capsys.readouterr().err


def test_the_landing_page_links_the_pages_once_they_are_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    apps = app_files(ROOT / "apps")
    render = lambda: Template(INDEX_TEMPLATE.read_text()).generate(items=[]).decode()
    assert course_html() is None and 'id="course-html"' not in render() and "run\n        <code>cofiviz course" in render()
    assert not any(s.startswith("course=") for s in serve_command(apps))
    (tmp_path / COURSE_HTML).mkdir(parents=True)
    (tmp_path / COURSE_HTML / "index.html").write_text("<html></html>")
    assert course_html() == (tmp_path / COURSE_HTML).resolve()
    assert '<a id="course-html" href="course/index.html">' in render()
    assert f"course={(tmp_path / COURSE_HTML).resolve()}" in serve_command(apps)
