"""The page frame every cofiviz dashboard shares."""

from __future__ import annotations

import panel as pn

from .serving import NARROW_JS, STATIC_ROUTE

__all__ = ["page", "alert", "ALERT_CSS", "HEADINGS_CSS", "NARROW_CSS", "PLOT_MIN_WIDTH", "CONTROLS_WIDTH", "side_by_side", "flow", "PlotFlow",
           "NARROW_JS", "STATIC_ROUTE"]

#: no plot is drawn narrower than this (CSS pixels): on a narrower line the plots wrap onto lines of their own
PLOT_MIN_WIDTH = 320
#: the width of a page's column of controls beside its plots
CONTROLS_WIDTH = 340

#: the stylesheet of a Markdown pane whose text changes while the page is open: the template's Bootstrap stylesheet
#: reaches the pane's headings once its text has changed (h3 and h4 at 1.5rem and more) but not at its first render,
#: so that the pane just updated would stand out; ``:host h4`` outranks Bootstrap's ``h4`` whatever the order of
#: the stylesheets
HEADINGS_CSS = ":host h3 { font-size: 1.4em; } :host h4 { font-size: 1.2em; }"

#: the stylesheet of a notice (:func:`alert`): its text's first and last paragraphs keep no outer margin, so that the
#: box's own padding is the space above and below the text (the paragraphs' margins would add a line's height under it)
ALERT_CSS = ":host p:first-child { margin-top: 0; } :host p:last-child { margin-bottom: 0; }"


def alert(text: str = "", **params) -> pn.pane.Alert:
    """A notice of the pages (``pn.pane.Alert`` with ``params``: ``alert_type``, ``visible``...) styled by
    :data:`ALERT_CSS`."""
    return pn.pane.Alert(text, stylesheets=[ALERT_CSS, *params.pop("stylesheets", [])], **params)


#: below 768 px the sidebar is a drawer (:data:`NARROW_JS` starts it closed): opened, it takes the screen's width and
#: the page's main area follows under it, where beside it the main area would be squeezed to a few pixels; on a
#: phone the header stays one line, the page's title set smaller between the menu button and the busy indicator
#: (which Bootstrap's navbar would otherwise wrap onto a line of its own), cut short with an ellipsis if need be
NARROW_CSS = """
@media (max-width: 767.98px) {
  #content { flex-wrap: wrap; overflow-y: auto !important; }
  #sidebar.show { width: 100% !important; max-width: 100% !important; height: auto; border-right: none;
                  border-bottom: 1px solid var(--bs-border-color); }
  #main { flex: 1 0 100%; }
}
@media (max-width: 479.98px) {
  #header { flex-wrap: nowrap; }
  #header .app-header { flex: 1 1 auto; min-width: 0; }
  #header .title { display: block; font-size: 1.1em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  #header .pn-busy-container { flex: none; }
}
"""

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
    template = pn.template.BootstrapTemplate(title=f"cofiviz · {title}", main=[main], header_background="#2f4f6f",
                                             sidebar=[about] if sidebar is None else [sidebar, about],
                                             collapsed_sidebar=sidebar is None, sidebar_width=sidebar_width)
    template.config.raw_css.append(NARROW_CSS)
    # the page's scripts: Panel puts the extension's script files in every served page's head
    pn.config.js_files = {**pn.config.js_files, "cofiviz-narrow": f"{STATIC_ROUTE}/{NARROW_JS.name}"}
    return template


def side_by_side(controls, main, controls_width: int = CONTROLS_WIDTH) -> pn.FlexBox:
    """``controls`` (a list of objects) in a column beside ``main`` (a list) on a wide screen, above it on a narrow
    one: a wrapping flex line whose main part is at least :data:`PLOT_MIN_WIDTH` wide and takes the rest."""
    left = pn.Column(*controls, width=controls_width, styles={"flex": f"0 1 {controls_width}px"})
    right = pn.Column(*main, min_width=PLOT_MIN_WIDTH, sizing_mode="stretch_width",
                      styles={"flex": f"1 1 {PLOT_MIN_WIDTH}px"})
    return pn.FlexBox(left, right, flex_wrap="wrap", sizing_mode="stretch_width")


def _flowing(obj, min_width: int = PLOT_MIN_WIDTH, basis: int | None = None):
    """``obj`` as an item of a wrapping line: at least ``min_width`` pixels, growing to share the line; ``basis``
    (default ``min_width``) is the width it asks for before growing, so that a wider one wraps sooner and shrinks
    to ``min_width`` only on a line narrower than ``basis``."""
    obj.min_width = min_width
    obj.sizing_mode = "stretch_width"
    obj.styles = {**(obj.styles or {}), "flex": f"1 1 {max(basis or min_width, min_width)}px"}
    return obj


def flow(*objects, min_width: int = PLOT_MIN_WIDTH) -> pn.FlexBox:
    """Objects side by side as long as each gets ``min_width`` pixels, wrapped onto more lines when not."""
    return pn.FlexBox(*(_flowing(obj, min_width) for obj in objects), flex_wrap="wrap", sizing_mode="stretch_width")


class PlotFlow(pn.viewable.Viewer):
    """Plots side by side while each gets :data:`PLOT_MIN_WIDTH` pixels, one under the other on a narrow screen.

    What a HoloViews ``Layout(...).cols(n)`` draws, except that a layout keeps its ``n`` columns at any width. Set
    :attr:`objects` to a list of HoloViews elements (responsive, with a fixed height); the panes are kept and
    only their objects change, so that a page updates in place. ``linked_axes`` is the panes' own (Panel links
    the axes of plots that share a dimension, and a linked categorical axis keeps the factors of every plot drawn
    on it: False for plots whose categories change from one update to the next).
    """

    def __init__(self, objects=(), css_classes: list[str] | None = None, linked_axes: bool = True):
        super().__init__()
        self._linked_axes = linked_axes
        self._basis, self._rebuild = PLOT_MIN_WIDTH, False
        self._box = pn.FlexBox(flex_wrap="wrap", sizing_mode="stretch_width", css_classes=css_classes or [])
        self.objects = list(objects)

    @property
    def basis(self) -> int:
        """The width in pixels each plot asks for before the line is shared (default :data:`PLOT_MIN_WIDTH`): plots
        whose axis labels take much of their width ask for more, so that fewer stand side by side; on a line
        narrower than it a plot still shrinks to :data:`PLOT_MIN_WIDTH`."""
        return self._basis

    @basis.setter
    def basis(self, pixels: int) -> None:
        pixels = max(int(pixels), PLOT_MIN_WIDTH)
        if pixels != self._basis:        # new panes at the next objects (a drawn pane's styles are not changed)
            self._basis, self._rebuild = pixels, True

    @property
    def objects(self) -> list:
        return [pane.object for pane in self._box.objects]

    @objects.setter
    def objects(self, elements) -> None:
        elements = list(elements)
        rebuild, self._rebuild = self._rebuild, False
        panes = [] if rebuild else list(self._box.objects)
        for pane, element in zip(panes, elements):
            pane.object = element
        if rebuild or len(panes) != len(elements):
            panes = panes[:len(elements)] + [_flowing(pn.pane.HoloViews(e, linked_axes=self._linked_axes),
                                                      basis=self._basis) for e in elements[len(panes):]]
            self._box.objects = panes

    def __panel__(self):
        return self._box
