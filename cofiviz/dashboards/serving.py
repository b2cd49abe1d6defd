"""How the dashboards are served: the one ``panel serve`` command line (``cofiviz serve``, ``make serve`` and the
browser tests all run it).

Every app cofiviz carries is served (:func:`cofiviz.util.bundled.app_files`: ``apps/`` in the repository, the installed
package's copy after ``pip install``), the landing page (:data:`~.catalog.INDEX_TEMPLATE`) lists them with their
thumbnails (served at ``/thumbnails/``) and the notebooks, every page loads the script of ``static/`` (served at
``/cofiviz-static/``: the sidebar starts closed on a narrow screen), and the status of the background warm-up of the
numba kernels (:mod:`cofiviz.background.kernels`) is served at ``/cofiviz-kernels/status.json`` from a folder of the
server's own (:func:`kernels_folder`), which the landing page polls. :mod:`.serve_setup` starts that warm-up when
nothing started it, and loads the kernels, the data and the dashboards once it is done, behind the server. A page
may send messages up to 64 MiB (uploads travel in 4 MB chunks, far below it; Bokeh's default limit is 20 MB).
Nothing is loaded from the internet.

A page's websocket is accepted only from the origins :func:`allowed_origins` lists: the address served, and, on a
server that listens on every interface (``0.0.0.0``) or on a LAN address, the names and addresses by which the
machine's network knows it, so that students who open the teacher's machine by its LAN address or host name get
their pages; another name (a DNS alias, a proxy) is added with ``origins``.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from ..util.bundled import app_files as bundled_app_files, folder
from .catalog import INDEX_TEMPLATE, THUMBNAILS, course_html

__all__ = ["served_apps", "serve_command", "app_files", "WEBSOCKET_MAX_MESSAGE", "SETUP", "KERNELS_ROUTE",
           "SERVER_STATUS", "kernels_folder", "served_kernels_folder", "NARROW_JS", "STATIC_ROUTE", "allowed_origins",
           "machine_names", "EVERY_INTERFACE"]

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
#: the addresses that make a server listen on every network interface
EVERY_INTERFACE = ("0.0.0.0", "::", "")
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
    (:func:`cofiviz.util.bundled.app_files`)."""
    files = bundled_app_files() if directory is None else sorted(Path(directory).glob("*.py"))
    if not files:
        where = folder("apps") if directory is None else Path(directory).resolve()
        raise FileNotFoundError(f"no apps in {where}")
    return files


def machine_names() -> list[str]:
    """The names and IPv4 addresses by which other machines may reach this one: its host name, its fully
    qualified name and the address of every network interface but the loopback's, each once."""
    import psutil

    names = [socket.gethostname(), socket.getfqdn()]
    for addresses in psutil.net_if_addrs().values():
        for a in addresses:
            if a.family == socket.AF_INET and not ipaddress.ip_address(a.address).is_loopback:
                names.append(a.address)
    return [n for n in dict.fromkeys(names) if n and n != "localhost"]


def allowed_origins(address: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    """The origins (``HOST:PORT``) whose pages may open a websocket on a server at ``address:port``.

    A server on the loopback (``localhost``, ``127.0.0.1``) accepts its own address. One that listens on every
    interface (:data:`EVERY_INTERFACE`) accepts ``localhost``, ``127.0.0.1`` and :func:`machine_names`; one on
    another address accepts that address and the machine's names. Each of ``extra`` is added as given, with
    ``:port`` when it names no port (``*`` accepts every origin). IPv6 addresses are not listed: Bokeh's origin
    check reads the colons of an IPv6 address as a port's.
    """
    if address in EVERY_INTERFACE:
        hosts = ["localhost", "127.0.0.1", *machine_names()]
    else:
        try:
            loopback = ipaddress.ip_address(address).is_loopback
        except ValueError:         # a host name
            loopback = address == "localhost"
        hosts = [address] if loopback else [address, *machine_names()]
    origins = [f"{h}:{port}" for h in hosts]
    origins += [o if o == "*" or ":" in o else f"{o}:{port}" for o in extra]
    return list(dict.fromkeys(origins))


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
                  setup: bool = True, threads: int = 4, python: str = sys.executable,
                  origins: Sequence[str] = ()) -> list[str]:
    """The ``panel serve`` command line that serves ``apps`` (default: every app the package carries).

    Parameters
    ----------
    apps : list of path, optional
        The app files; the landing page lists them.
    port, address : int, str
        Where to listen; pages from the origins of :func:`allowed_origins` may open a websocket.
    origins : sequence of str
        More origins (``HOST[:PORT]``) whose pages may open a websocket.
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
    cmd = [python, "-m", "panel", "serve", *apps, "--port", str(port), "--address", address]
    for origin in allowed_origins(address, port, origins):
        cmd += ["--allow-websocket-origin", origin]
    cmd += ["--num-threads", str(threads), "--websocket-max-message-size", str(WEBSOCKET_MAX_MESSAGE),
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
