"""The page frame every cofiviz dashboard shares."""

from __future__ import annotations

import panel as pn

__all__ = ["page", "HEADINGS_CSS"]

#: the stylesheet of a Markdown pane whose text changes while the page is open: the template's Bootstrap stylesheet
#: reaches the pane's headings once its text has changed (h3 and h4 at 1.5rem and more) but not at its first render,
#: so that the pane just updated would stand out; ``:host h4`` outranks Bootstrap's ``h4`` whatever the order of
#: the stylesheets
HEADINGS_CSS = ":host h3 { font-size: 1.4em; } :host h4 { font-size: 1.2em; }"

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
