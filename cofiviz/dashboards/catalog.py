"""What the lab offers a visitor: every dashboard with its title and a one-line description, and the notebooks.

The landing page (``index.html`` beside this module, which ``panel serve --index`` renders) and each app's
page title read them from here, so that a dashboard is described in one place, with the numba kernels it needs
(:attr:`App.kernels`): while a server's background warm-up prepares them, the page says so and opens once they
are ready (:mod:`.gate`), and the landing page marks its card.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..background.kernels import EVERY
from ..util.bundled import MissingFiles, folder

__all__ = ["App", "APPS", "Notebook", "notebooks", "INDEX_TEMPLATE", "THUMBNAILS", "app", "COURSE_HTML",
           "course_html", "EVERY", "first_kernels", "needs_workers"]

HERE = Path(__file__).resolve().parent
#: the landing page, a Tornado template (``panel serve --index``)
INDEX_TEMPLATE = HERE / "index.html"
#: one screenshot per dashboard, ``<slug>.png`` (served at ``/thumbnails/``)
THUMBNAILS = HERE / "thumbnails"
#: where ``cofiviz course`` writes the notebooks as HTML, relative to the working directory (as ``notebooks/``)
COURSE_HTML = "cofiviz-results/course"


@dataclass(frozen=True)
class App:
    """One dashboard: ``apps/<slug>.py`` served at ``/<slug>``.

    Attributes
    ----------
    slug, title, description : str
        Its address, title and one-line description.
    kernels : tuple of str
        The modules whose numba kernels the page runs (in the server or in its worker processes), as
        :func:`cofiviz.warmup` names them, or :data:`EVERY`; empty for a page that runs none, which opens at once.
    trains : bool
        Whether the page trains models in the training workers' processes (forked from the forkserver that a
        server serving such a page starts at once, :func:`needs_workers`).
    """

    slug: str
    title: str
    description: str
    kernels: tuple[str, ...] = ()
    trains: bool = False

    @property
    def thumbnail(self) -> Path:
        return THUMBNAILS / f"{self.slug}.png"


APPS: dict[str, App] = {a.slug: a for a in [
    App("overview", "Dataset overview",
        "MovieLens 100K or your own ratings file: counts, rating and activity distributions, long tails.",
        ("cofiviz.util.elementary",)),                                         # the synthetic data sets' generators
    App("monitor", "Training monitor",
        "Train any model on a protocol's split and watch NDCG, AP and GAP per iteration; stop, save, compare runs.",
        EVERY, trains=True),
    App("comparisons", "Comparisons",
        "The papers' tables and figures reproduced, each cell beside the published number, with its trace.",
        EVERY),                                                           # it computes any reproduction's cells
    App("recommendations", "Recommendations",
        "A user's top-N lists from the models side by side, and how much each leans on popularity.",
        EVERY, trains=True),
    App("playground", "Metric playground",
        "Move items up and down a graded list and watch NDCG, AP, GAP, P@k, ERU and MRR respond, ties included.",
        ("cofiviz.util.elementary", "cofiviz.metrics")),
    App("losses", "Loss shapes",
        "The surrogates CofiRank, LCR and GAPfm minimise, drawn against the metrics they stand in for; ties.",
        ("cofiviz.util.elementary", "cofiviz.losses", "cofiviz.metrics")),
]}


def needs_workers(names) -> bool:
    """Whether a server of the apps ``names`` (None: all of them) trains models in worker processes: it serves a
    page that does (:attr:`App.trains`), or something the catalog does not describe (a notebook, which may)."""
    return names is None or any(name not in APPS or APPS[name].trains for name in names)


def first_kernels() -> list[str]:
    """The modules of the pages that need some kernels but not all of them, each once: a server's warm-up
    prepares them first, so that those pages open first."""
    names = [name for entry in APPS.values() if entry.kernels != EVERY for name in entry.kernels]
    return list(dict.fromkeys(names))


def app(slug: str) -> App:
    """The catalogue entry of ``/slug`` or ``slug``; an app without one gets its slug as title."""
    slug = slug.strip("/")
    return APPS.get(slug, App(slug, slug.replace("_", " ").capitalize(), ""))


@dataclass(frozen=True)
class Notebook:
    """One notebook of the course (``notebooks/``): its file name, its title and its opening sentence."""

    name: str
    title: str
    summary: str


def _first_markdown(path: Path) -> tuple[str, str]:
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    text = next(("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown"), "")
    lines = [ln.strip() for ln in text.splitlines()]
    title = next((ln.lstrip("#").strip() for ln in lines if ln.startswith("#")), path.stem)
    body = [ln for ln in lines if ln and not ln.startswith("#")]
    summary = ""
    for ln in body:  # the first paragraph
        summary = f"{summary} {ln}".strip()
        if ln.endswith((".", ":", "?")):
            break
    return title, re.sub(r"<[^>]+>", "", summary).replace("*", "").replace("`", "")   # marks and tags out


def notebooks(directory: str | Path | None = None) -> list[Notebook]:
    """The notebooks of ``directory`` (relative to the working directory), in file-name order; by default the
    course cofiviz carries (:func:`cofiviz.util.bundled.folder`), none when the installation carries no course.

    A notebook that cannot be read is listed under its file name with an empty summary.
    """
    if directory is None:
        try:
            directory = folder("notebooks")
        except MissingFiles:
            return []
    out = []
    for path in sorted(Path(directory).glob("*.ipynb")):
        try:
            title, summary = _first_markdown(path)
        except (OSError, ValueError):
            title, summary = path.stem, ""
        out.append(Notebook(path.name, title, summary))
    return out


def course_html(directory: str | Path = COURSE_HTML) -> Path | None:
    """The folder of the course's HTML pages (``cofiviz course``), or None when they have not been written."""
    path = Path(directory)
    return path.resolve() if (path / "index.html").is_file() else None
