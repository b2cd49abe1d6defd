"""The page frame every cofiviz dashboard shares."""

from __future__ import annotations

import panel as pn

__all__ = ["page"]

ABOUT = ("cofiviz — a lab for collaborative ranking: models that learn to rank items per user, "
         "evaluated with NDCG, AP and GAP.")


def page(title: str, main) -> pn.template.BootstrapTemplate:
    """A BootstrapTemplate titled ``cofiviz · title`` holding ``main``."""
    return pn.template.BootstrapTemplate(title=f"cofiviz · {title}", main=[main], header_background="#2f4f6f",
                                         sidebar=[pn.pane.Markdown(ABOUT)], collapsed_sidebar=True)
