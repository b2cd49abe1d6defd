"""The page frame every cofiviz dashboard shares."""

from __future__ import annotations

import panel as pn

__all__ = ["page"]

ABOUT = ("cofiviz — a lab for collaborative ranking: models that learn to rank items per user, "
         "evaluated with NDCG, AP and GAP.")


def page(title: str, main, sidebar=None, sidebar_width: int = 360) -> pn.template.BootstrapTemplate:
    """A BootstrapTemplate titled ``cofiviz · title`` holding ``main``.

    Parameters
    ----------
    title : str
        The page's title.
    main : object
        What the page shows.
    sidebar : object, optional
        Controls shown in an open sidebar. The sidebar is a layout of its own in the browser, so that a
        change there (a form that appears) does not lay out the main area's plots again. Without it the
        sidebar holds only a short note and starts collapsed.
    sidebar_width : int
        The sidebar's width in pixels.
    """
    about = pn.pane.Markdown(ABOUT)
    return pn.template.BootstrapTemplate(title=f"cofiviz · {title}", main=[main], header_background="#2f4f6f",
                                         sidebar=[about] if sidebar is None else [sidebar, about],
                                         collapsed_sidebar=sidebar is None, sidebar_width=sidebar_width)
