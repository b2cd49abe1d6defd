"""How the dashboards are served: the one ``panel serve`` command line (``cofiviz serve``, ``make serve`` and the
browser tests all run it).

Every app of ``apps/`` is served, the landing page (:data:`~.catalog.INDEX_TEMPLATE`) lists them with their
thumbnails (served at ``/thumbnails/``) and the notebooks, every page loads the script of ``static/`` (served at
``/cofiviz-static/``: the sidebar starts closed on a narrow screen), and :mod:`.serve_setup` loads the data and compiles
the kernels before the first visitor. A page may send messages up to 64 MiB (uploads travel in 4 MB chunks,
far below it; Bokeh's default limit is 20 MB). Nothing is loaded from the internet.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from .catalog import INDEX_TEMPLATE, THUMBNAILS, course_html
from .theme import NARROW_JS, STATIC_ROUTE

__all__ = ["served_apps", "serve_command", "app_files", "WEBSOCKET_MAX_MESSAGE", "SETUP"]

#: the largest message a page may send (bytes): above ``upload.UPLOAD_CHUNK``, so an upload up to its limit fits
WEBSOCKET_MAX_MESSAGE = 64 * 2**20
#: run by ``panel serve --setup`` before the first visitor
SETUP = Path(__file__).resolve().parent / "serve_setup.py"


def app_files(directory: str | Path = "apps") -> list[Path]:
    """The dashboards of ``directory`` (``apps/*.py``), in file-name order."""
    files = sorted(Path(directory).glob("*.py"))
    if not files:
        raise FileNotFoundError(f"no apps in {Path(directory).resolve()}: run this from the cofiviz repository")
    return files


def served_apps(argv: Sequence[str]) -> list[str] | None:
    """The names of the apps a ``panel serve`` command line serves (``apps/monitor.py`` → ``monitor``), or
    None when ``argv`` is not one."""
    if "serve" not in argv:
        return None
    names = []
    for arg in argv[list(argv).index("serve") + 1:]:
        if arg.startswith("-"):
            break
        names.append(Path(arg).stem)
    return names


def serve_command(apps: Sequence[str | Path] | None = None, *, port: int = 5006, address: str = "localhost",
                  setup: bool = True, threads: int = 4, python: str = sys.executable) -> list[str]:
    """The ``panel serve`` command line that serves ``apps`` (default: every app of ``apps/``).

    Parameters
    ----------
    apps : list of path, optional
        The app files; the landing page lists them.
    port, address : int, str
        Where to listen; only pages from ``address:port`` may open a websocket.
    setup : bool
        Load the data and compile the kernels before the first visitor (:data:`SETUP`).
    threads : int
        Panel's threads for the sessions' callbacks.
    python : str
        The interpreter that runs Panel.
    """
    apps = [str(a) for a in (app_files() if apps is None else apps)]
    cmd = [python, "-m", "panel", "serve", *apps, "--port", str(port), "--address", address,
           "--allow-websocket-origin", f"{address}:{port}", "--num-threads", str(threads),
           "--websocket-max-message-size", str(WEBSOCKET_MAX_MESSAGE),
           "--index", str(INDEX_TEMPLATE)]
    static = [f"thumbnails={THUMBNAILS}"] if THUMBNAILS.is_dir() else []
    static += [f"{STATIC_ROUTE}={NARROW_JS.parent}"]
    if (course := course_html()) is not None:        # the notebooks with their outputs (``cofiviz course``)
        static += [f"course={course}"]
    cmd += ["--static-dirs", *static]
    if setup:
        cmd += ["--setup", str(SETUP)]
    return cmd
