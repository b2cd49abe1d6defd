"""``cofiviz course``: run every notebook of the course and export it to HTML, to read with its outputs.

Each notebook of ``notebooks/`` is executed as ``jupyter lab notebooks/`` runs it (the kernel's working
directory is the notebook's folder) and written as ``OUT/NAME.html`` by nbconvert's HTML exporter, with an
``OUT/index.html`` that lists them. The notebooks load Bokeh, Panel and HoloViews inline
(``pn.extension(..., inline=True)``), so the pages draw their plots with no network; widgets that need a
running kernel show their last state, and the formulas, typeset by MathJax from its CDN, show as LaTeX
offline. ``cofiviz serve`` links the pages from the landing page when
:data:`~cofiviz.dashboards.catalog.COURSE_HTML` holds them.
"""

from __future__ import annotations

import html
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from ..dashboards.catalog import COURSE_HTML, notebooks
from ..errors import ParameterError

__all__ = ["add_parser", "course", "execute", "to_html", "export"]


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
    """An executed notebook as one HTML page (JupyterLab's look; images embedded, cells' sources shown)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    exporter.embed_images = True
    body, _ = exporter.from_notebook_node(nb)
    return body


def export(directory: str | os.PathLike = "notebooks", out: str | os.PathLike = COURSE_HTML, *, quick: bool = False,
           log=print) -> list[Path]:
    """Execute every notebook of ``directory`` and write ``out/NAME.html`` and ``out/index.html``.

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
        raise ParameterError(f"no notebook (*.ipynb) in {str(directory)!r}; run this from the repository's folder "
                             f"or give --notebooks DIR")
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
                     f"<h1>The cofiviz course, with its outputs{mode}</h1><ol start='0'>{items}</ol></body></html>\n",
                     encoding="utf-8")
    return pages + [index]


def add_parser(sub) -> None:
    c = sub.add_parser("course", help="run every notebook and export it to HTML, to read with its outputs",
                       description="Run every notebook of --notebooks from its folder and write each as HTML to "
                                   "--out, with an index; `cofiviz serve` then links them from its landing page.")
    c.add_argument("--notebooks", default="notebooks", metavar="DIR", help="the notebooks' folder (default: notebooks)")
    c.add_argument("--out", default=COURSE_HTML, metavar="DIR", help=f"where the pages go (default: {COURSE_HTML})")
    c.add_argument("--quick", action="store_true",
                   help="the notebooks' quick mode (smaller fits: what the test suite runs)")
    c.set_defaults(func=course)


def course(args) -> int:
    pages = export(args.notebooks, args.out, quick=args.quick, log=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(pages[-1])
    return 0
