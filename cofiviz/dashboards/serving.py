"""How the dashboards are served: the one ``panel serve`` command line (``cofiviz serve``, ``make serve`` and the
browser tests all run it).

Every app cofiviz carries is served (:func:`cofiviz.bundled.app_files`: ``apps/`` in the repository, the installed
package's copy after ``pip install``), the landing page (:data:`~.catalog.INDEX_TEMPLATE`) lists them with their
thumbnails (served at ``/thumbnails/``) and the notebooks, every page loads the script of ``static/`` (served at
``/cofiviz-static/``: the sidebar starts closed on a narrow screen), and the status of the background warm-up of the
numba kernels (:mod:`cofiviz.background.kernels`) is served at ``/cofiviz-kernels/status.json`` from a folder of the
server's own (:func:`kernels_folder`), which the landing page polls. :mod:`.serve_setup` starts that warm-up when
nothing started it, and loads the kernels, the data and the dashboards once it is done, behind the server. A page
may send messages up to 64 MiB (uploads travel in 4 MB chunks, far below it; Bokeh's default limit is 20 MB).
Nothing is loaded from the internet.
"""

from __future__ import annotations

import getpass
import os
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from ..bundled import app_files as bundled_app_files, folder
from .catalog import INDEX_TEMPLATE, THUMBNAILS, course_html

__all__ = ["served_apps", "serve_command", "app_files", "WEBSOCKET_MAX_MESSAGE", "SETUP", "KERNELS_ROUTE",
           "SERVER_STATUS", "kernels_folder", "served_kernels_folder", "NARROW_JS", "STATIC_ROUTE"]

#: the largest message a page may send (bytes): above ``upload.UPLOAD_CHUNK``, so an upload up to its limit fits
WEBSOCKET_MAX_MESSAGE = 64 * 2**20
#: run by ``panel serve --setup`` before the server listens
SETUP = Path(__file__).resolve().parent / "serve_setup.py"
#: the script every page loads (served from ``static/``; :func:`~.theme.page` names it): below 768 px the sidebar
#: starts closed
NARROW_JS = Path(__file__).resolve().parent / "static" / "narrow.js"
#: where a server serves the files of ``static/``
STATIC_ROUTE = "cofiviz-static"
#: where a server serves the folder of its kernels' status (:func:`kernels_folder`)
KERNELS_ROUTE = "cofiviz-kernels"
#: the file of that folder in which the server's warm-up behind it says how far it is
#: (:func:`cofiviz.dashboards.warm.warm_server`)
SERVER_STATUS = "server.json"


def kernels_folder(port: int) -> Path:
    """The folder of the kernels' status of the server on ``port``: one per user and port in the temporary
    folder (a server on that port overwrites what an earlier one left), created if missing."""
    user = os.getuid() if hasattr(os, "getuid") else getpass.getuser()
    folder = Path(tempfile.gettempdir()) / f"cofiviz-kernels-{user}-{port}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def served_kernels_folder(argv: Sequence[str]) -> Path | None:
    """The folder a ``panel serve`` command line serves at :data:`KERNELS_ROUTE`, or None."""
    for arg in argv:
        if arg.startswith(f"{KERNELS_ROUTE}="):
            return Path(arg.split("=", 1)[1])
    return None


def app_files(directory: str | Path | None = None) -> list[Path]:
    """The dashboards of ``directory`` (its ``*.py``), in file-name order; by default the apps the package carries
    (:func:`cofiviz.bundled.app_files`)."""
    files = bundled_app_files() if directory is None else sorted(Path(directory).glob("*.py"))
    if not files:
        where = folder("apps") if directory is None else Path(directory).resolve()
        raise FileNotFoundError(f"no apps in {where}")
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
    """The ``panel serve`` command line that serves ``apps`` (default: every app the package carries).

    Parameters
    ----------
    apps : list of path, optional
        The app files; the landing page lists them.
    port, address : int, str
        Where to listen; only pages from ``address:port`` may open a websocket.
    setup : bool
        Run :data:`SETUP`: start the kernels' background warm-up when nothing started it (its status served at
        :data:`KERNELS_ROUTE`), then load the kernels, the data and the dashboards behind the server. Without it
        the pages compile what they need when they first run it.
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
    if setup:                                         # the setup starts the kernels' warm-up, whose status it is
        static += [f"{KERNELS_ROUTE}={kernels_folder(port)}"]
    if (course := course_html()) is not None:        # the notebooks with their outputs (``cofiviz course``)
        static += [f"course={course}"]
    cmd += ["--static-dirs", *static]
    if setup:
        cmd += ["--setup", str(SETUP)]
    return cmd
