"""A served page that opens once the numba kernels it needs are ready, saying until then that they are being prepared.

A server compiles its kernels behind it (:mod:`cofiviz.background.kernels`), so a visitor may come before the
kernels of a page are in numba's cache. :func:`app_page` builds the page's frame at once: when the kernels its
catalogue entry names (:attr:`~.catalog.App.kernels`) are ready, with its content; otherwise with a notice that
says what is being prepared and how far it is, which a periodic callback of the session updates every
:data:`POLL_MS` ms from the warm-up's status file, until the kernels are ready: then it builds the content in
place of the notice (no reload). The server's setup names the status's folder (:func:`watch_kernels`): Bokeh runs an
app's script with the app's own ``sys.argv``, not the server's command line. Outside a server that runs a background
warm-up (``panel serve apps/NAME.py`` alone, JupyterLab) every page is built at once. The landing page reads the
same status (:func:`landing_status`) and polls its file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import panel as pn

from ..background.kernels import EVERY, describe, ready, status_of
from .catalog import app
from .theme import alert, page

__all__ = ["app_page", "kernels_status", "landing_status", "app_ready", "POLL_MS", "notice_text", "watch_kernels"]

#: how often a waiting page reads the warm-up's status (ms)
POLL_MS = 1000

_folder: Path | None = None


def watch_kernels(folder: str | Path | None) -> None:
    """Make the pages of this process wait for the kernels whose status is in ``folder`` (None: wait for none)."""
    global _folder
    _folder = None if folder is None else Path(folder)


def kernels_status() -> dict | None:
    """The status of this server's background warm-up (:func:`watch_kernels`), or None when it runs none."""
    return None if _folder is None else status_of(_folder, os.getpid())


def app_ready(slug: str, status: dict | None = None) -> bool:
    """Whether the kernels of the page ``slug`` are ready (``status``: default :func:`kernels_status`)."""
    return ready(kernels_status() if status is None else status, app(slug).kernels)


def landing_status() -> dict:
    """What the landing page shows of the kernels: ``preparing`` (whether the warm-up is still at work), its
    ``message``, the modules ``ready`` and in ``total``, and the ``status`` itself (None without a warm-up)."""
    status = kernels_status()
    preparing = status is not None and status.get("state") not in ("done", "failed")
    from_status = status or {}
    return {"preparing": preparing, "message": describe(status) if preparing else "",
            "ready": len(from_status.get("ready") or []), "total": len(from_status.get("modules") or []),
            "status": status}


def notice_text(title: str, needs: tuple[str, ...], status: dict | None) -> str:
    """The notice of a page waiting for its kernels (Markdown)."""
    if tuple(needs) == EVERY:
        which = ("This page can run every model: it opens by itself once all the kernels are ready (no need to "
                 "reload). Pages that need fewer kernels, such as the metric playground, open earlier.")
    else:
        which = (f"It needs the kernels of {', '.join(f'`{n}`' for n in needs)} and opens by itself once they are "
                 "ready (no need to reload).")
    return f"### {title} is being prepared\n\n{describe(status)}.\n\n{which}"


def _parts(built, sidebar: bool) -> tuple[object, object | None]:
    """``(main, sidebar)`` of what a page's ``build`` returned."""
    if sidebar:
        main, side = built
        return main, side
    return built, None


def app_page(slug: str, build: Callable[[], object], sidebar: bool = False) -> pn.template.BootstrapTemplate:
    """The page of the app ``slug``, whose content ``build()`` makes once its kernels are ready.

    Parameters
    ----------
    slug : str
        The app's catalogue name (:func:`~.catalog.app`): its title and the kernels it needs.
    build : callable
        Makes the page's content: the main area, or ``(main, sidebar)`` with ``sidebar=True``.
    sidebar : bool
        The page has controls in an open sidebar (:func:`~.theme.page`).

    Returns
    -------
    pn.template.BootstrapTemplate
        The page, to call ``.servable()`` on.
    """
    entry = app(slug)
    status = kernels_status()
    if ready(status, entry.kernels):
        main, side = _parts(build(), sidebar)
        return page(entry.title, main, sidebar=side)
    text = pn.pane.Markdown(notice_text(entry.title, entry.kernels, status), sizing_mode="stretch_width")
    bar = pn.indicators.Progress(bar_color="info", sizing_mode="stretch_width", max=1, value=-1)
    notice = pn.Column(text, bar, css_classes=["cofiviz-preparing"], sizing_mode="stretch_width",
                       styles={"background": "#eef4fb", "border-left": "4px solid #2f6f9f", "padding": "0 12px 12px"})
    main = pn.Column(notice, sizing_mode="stretch_width")
    side = pn.Column(pn.pane.Markdown("The controls appear here once the page is ready."),
                     sizing_mode="stretch_width") if sidebar else None

    def show_progress(status: dict | None) -> None:
        text.object = notice_text(entry.title, entry.kernels, status)
        total = len((status or {}).get("modules") or [])
        if total:
            if bar.value > total:      # the bar's value may not exceed its maximum, even for a moment
                bar.value = 0
            bar.max = total
            bar.value = min(len(status.get("ready") or []), total)

    def check() -> None:
        status = kernels_status()
        if not ready(status, entry.kernels):
            show_progress(status)
            return
        callback.stop()
        try:
            # made as at a page's first render, before the template set the session's design, so that the template
            # styles the content as it styles a page built at once (a component made under the session's design
            # would bring that design's whole stylesheet: Bootstrap's larger headings, tables without borders)
            with pn.config.set(design=None):
                built_main, built_side = _parts(build(), sidebar)
                main.objects = [pn.panel(built_main)]
                if side is not None:
                    side.objects = [pn.panel(built_side)]
        except Exception as exc:  # the page's own error, said where its content would be
            main.objects = [alert(f"This page could not be built: {type(exc).__name__}: {exc}",
                                  alert_type="danger")]
            raise

    show_progress(status)
    callback = pn.state.add_periodic_callback(check, period=POLL_MS)
    return page(entry.title, main, sidebar=side)
