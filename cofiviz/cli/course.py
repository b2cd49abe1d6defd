"""``cofiviz course``: run every notebook of the course and export it to HTML, to read with its outputs.

Each notebook of ``notebooks/`` is executed as ``jupyter lab notebooks/`` runs it (the kernel's working
directory is the notebook's folder) and written as ``OUT/NAME.html`` by nbconvert's HTML exporter, with an
``OUT/index.html`` that lists them. The notebooks load Bokeh, Panel and HoloViews inline
(``pn.extension(..., inline=True)``), so the pages draw their plots with no network; widgets that need a
running kernel show their last state, and the formulas, typeset by MathJax from its CDN, show as LaTeX
offline. ``cofiviz serve`` links the pages from the landing page when
:data:`~cofiviz.dashboards.catalog.COURSE_HTML` holds them.

The notebooks are those of ``--notebooks DIR``; without it, those of ``notebooks/`` in the working directory when
it holds some (the repository's), else the course cofiviz carries (:mod:`cofiviz.util.bundled`), copied first to
:data:`COURSE_SOURCE` with the experiment files it reads, since nothing runs inside an installed package
(:func:`course_notebooks`).
"""

from __future__ import annotations

import html
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from ..util.bundled import copy_course
from ..course.editions import write_editions
from ..dashboards.catalog import COURSE_HTML, notebooks
from ..util.errors import ParameterError

__all__ = ["add_parser", "course", "execute", "to_html", "export", "editions", "katex_files", "OFFLINE_TEMPLATE",
           "course_notebooks", "COURSE_SOURCE", "NOTEBOOKS"]

#: the notebooks' folder the command reads, relative to the working directory, when it holds notebooks
NOTEBOOKS = "notebooks"
#: where the command copies the course cofiviz carries when the working directory has no notebooks: beside the
#: pages it writes (:data:`~cofiviz.dashboards.catalog.COURSE_HTML`); the copy holds ``notebooks/`` and
#: ``experiments/``
COURSE_SOURCE = "cofiviz-results/course-source"

#: nbconvert's JupyterLab page without its CDN scripts, with KaTeX (from ``resources``) typesetting the formulas
OFFLINE_TEMPLATE = r"""{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}
<style type="text/css">{{ resources.katex_css }}</style>
<script>{{ resources.katex_js }}</script>
<script>{{ resources.katex_auto_render }}</script>
<script>
document.addEventListener("DOMContentLoaded", function () {
  renderMathInElement(document.body, {
    delimiters: [{left: "$$", right: "$$", display: true}, {left: "\\[", right: "\\]", display: true},
                 {left: "$", right: "$", display: false}, {left: "\\(", right: "\\)", display: false}],
    ignoredTags: ["script", "noscript", "style", "textarea", "pre", "code", "option"],
    ignoredClasses: ["jp-OutputArea-output", "jp-InputArea-editor"],
    throwOnError: false
  });
});
</script>
{%- endblock html_head_js_mathjax -%}
"""


def katex_files() -> dict[str, str]:
    """KaTeX's script, its auto-render extension and its style sheet, from the copy Panel ships.

    Raises
    ------
    FileNotFoundError
        The installed Panel ships no KaTeX (the message says where it was looked for).
    """
    import panel

    found = sorted((Path(panel.__file__).parent / "dist" / "bundled" / "katex").glob("katex@*/dist"))
    if not found:
        raise FileNotFoundError(f"no KaTeX under {Path(panel.__file__).parent / 'dist' / 'bundled' / 'katex'}")
    dist = found[-1]
    read = lambda name: (dist / name).read_text(encoding="utf-8").replace("</script", "<\\/script")
    return {"katex_js": read("katex.min.js"), "katex_auto_render": read("contrib/auto-render.min.js"),
            "katex_css": read("katex.min.css")}


@contextmanager
def _quick(quick: bool):
    """``COFIVIZ_QUICK=1`` for the kernels started inside (the notebooks' quick mode), as it was after."""
    before = os.environ.get("COFIVIZ_QUICK")
    if quick:
        os.environ["COFIVIZ_QUICK"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COFIVIZ_QUICK", None)
        else:
            os.environ["COFIVIZ_QUICK"] = before


def execute(path: str | os.PathLike, *, quick: bool = False, timeout: int = 3600, extra_cells=()):
    """Run a notebook top to bottom from its own folder; returns the notebook with its outputs.

    Parameters
    ----------
    path : path
        The ``.ipynb`` file.
    quick : bool
        Run in the notebooks' quick mode (``COFIVIZ_QUICK=1``: smaller fits, what the test suite runs).
    timeout : int
        Seconds a cell may take.
    extra_cells : sequence of nbformat cells
        Appended before running (the test suite's check of the numbers in the prose).

    Raises
    ------
    nbclient.exceptions.CellExecutionError
        A cell failed; the message shows the cell and its traceback.
    """
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    nb.cells.extend(extra_cells)
    with _quick(quick):
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.resolve().parent)}}).execute()
    return nb


def to_html(nb) -> str:
    """An executed notebook as one HTML page (JupyterLab's look; images embedded) that loads nothing from the
    network: its formulas typeset by the KaTeX written into it. A cell whose source JupyterLab folds away
    (``jupyter.source_hidden``: a hidden solution, a check of the student edition) shows its output only."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"cofiviz-offline.j2": OFFLINE_TEMPLATE})],
                            template_file="cofiviz-offline.j2")
    exporter.embed_images = True
    shown = nbformat.from_dict(nb)
    for cell in shown.cells:     # a source JupyterLab folds away (a hidden solution, a student's check) is left out
        if cell.cell_type == "code" and cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            cell.metadata.setdefault("transient", {})["remove_source"] = True
    body, _ = exporter.from_notebook_node(shown, resources=katex_files())
    return body


def export(directory: str | os.PathLike = "notebooks", out: str | os.PathLike = COURSE_HTML, *, quick: bool = False,
           log=print, title: str = "") -> list[Path]:
    """Execute every notebook of ``directory`` and write ``out/NAME.html`` and ``out/index.html``.

    ``title`` names the edition in the index's heading.

    Returns
    -------
    list of Path
        The pages written, the index last.

    Raises
    ------
    ParameterError
        ``directory`` holds no notebook.
    """
    books = notebooks(directory)
    if not books:
        raise ParameterError(f"no notebook (*.ipynb) in {str(directory)!r}; give --notebooks DIR, a folder of "
                             f"notebooks, or leave it out for the course cofiviz carries")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pages = []
    for book in books:
        t0 = time.perf_counter()
        page = out / (Path(book.name).stem + ".html")
        page.write_text(to_html(execute(Path(directory) / book.name, quick=quick)), encoding="utf-8")
        pages.append(page)
        log(f"{book.name}: {time.perf_counter() - t0:.0f} s -> {page}")
    items = "\n".join(f'<li><a href="{html.escape(p.name)}">{html.escape(b.title)}</a><br>{html.escape(b.summary)}</li>'
                      for p, b in zip(pages, books))
    mode = " (quick mode: smaller fits than the course's)" if quick else ""
    index = out / "index.html"
    index.write_text(f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>cofiviz course</title>"
                     f"<meta name='viewport' content='width=device-width, initial-scale=1'></head><body>"
                     f"<h1>The cofiviz course{', ' + html.escape(title) if title else ''}, with its outputs{mode}</h1><ol start='0'>{items}</ol></body></html>\n",
                     encoding="utf-8")
    return pages + [index]


def editions(directory: str | os.PathLike = "notebooks", out: str | os.PathLike = "course-editions", *,
             html: bool = True, quick: bool = False, log=print) -> dict[str, list[Path]]:
    """Write the student and the teacher edition of the notebooks of ``directory`` into ``out/student`` and
    ``out/teacher``; with ``html``, run each edition from its folder and write its pages into ``out/student-html``
    and ``out/teacher-html`` (the student's with its checks saying "not answered yet").

    Returns
    -------
    dict
        ``{"student": [notebooks], "teacher": [notebooks]}`` and, with ``html``, ``"student-html"`` and
        ``"teacher-html"``: the pages, each index last.

    Raises
    ------
    ParameterError
        ``directory`` holds no notebook.
    """
    if not notebooks(directory):
        raise ParameterError(f"no notebook (*.ipynb) in {str(directory)!r}; give --notebooks DIR, a folder of "
                             f"notebooks, or leave it out for the course cofiviz carries")
    written = write_editions(directory, out)
    for edition in ("student", "teacher"):
        log(f"{edition} edition: {len(written[edition])} notebooks -> {Path(out) / edition}")
        if html:
            written[f"{edition}-html"] = export(Path(out) / edition, Path(out) / f"{edition}-html", quick=quick,
                                                log=log, title=f"the {edition} edition")
    return written


def course_notebooks(given: str | os.PathLike | None, log=print) -> Path:
    """The folder of the notebooks to run: ``given`` (``--notebooks DIR``) as it is; without it, :data:`NOTEBOOKS`
    when it holds notebooks, else a copy of the course cofiviz carries in :data:`COURSE_SOURCE` (replacing an
    earlier copy; ``log`` says so)."""
    if given is not None:
        return Path(given)
    if notebooks(NOTEBOOKS):
        return Path(NOTEBOOKS)
    copied = copy_course(COURSE_SOURCE, overwrite=True)
    log(f"no notebook in {NOTEBOOKS}/ here: the course cofiviz carries, copied to {copied}")
    return copied


def add_parser(sub) -> None:
    c = sub.add_parser("course", help="run every notebook and export it to HTML, to read with its outputs; or write "
                                      "the student and teacher editions",
                       description="Run every notebook of --notebooks from its folder and write each as HTML to "
                                   "--out, with an index; `cofiviz serve` then links them from its landing page. "
                                   "With --editions DIR: write the student edition (no solutions; each exercise "
                                   "followed by a check the student runs) and the teacher edition (the solutions "
                                   "shown) to DIR/student and DIR/teacher, and each run and exported to HTML in "
                                   "DIR/student-html and DIR/teacher-html (--no-html: the notebooks only).")
    c.add_argument("--notebooks", default=None, metavar="DIR",
                   help=f"the notebooks' folder (default: {NOTEBOOKS}/ when the working directory has one with "
                        f"notebooks, else the course cofiviz carries, copied to {COURSE_SOURCE}/)")
    c.add_argument("--out", default=COURSE_HTML, metavar="DIR", help=f"where the pages go (default: {COURSE_HTML})")
    c.add_argument("--quick", action="store_true",
                   help="the notebooks' quick mode (smaller fits: what the test suite runs)")
    c.add_argument("--editions", metavar="DIR", default=None,
                   help="write the student and the teacher edition into DIR instead")
    c.add_argument("--no-html", dest="html", action="store_false",
                   help="with --editions: write the editions' notebooks only, not their HTML pages")
    c.set_defaults(func=course)


def course(args) -> int:
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    books = course_notebooks(args.notebooks, log=log)
    if args.editions is not None:
        written = editions(books, args.editions, html=args.html, quick=args.quick, log=log)
        for key in written:
            print(Path(args.editions) / key)
        return 0
    pages = export(books, args.out, quick=args.quick, log=log)
    print(pages[-1])
    return 0
