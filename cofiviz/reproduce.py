"""``cofiviz.reproduce``: the reproductions' public names under their first home.

Everything lives in :mod:`cofiviz.reproductions` (one module per paper, the report, the runner); this
module re-exports its public names so that ``from cofiviz.reproduce import reproduce, status`` keeps working.
"""

from .reproductions import (REPRODUCTIONS, Method, PaperCell, Reproduction, ReproductionReport,  # noqa: F401
                            ReproductionStatus, compare, compute_cell, figure_summary, figure_trends,
                            format_table, paper_table, reproduce, short_labels, status, write_html)

__all__ = ["REPRODUCTIONS", "Method", "PaperCell", "Reproduction", "ReproductionReport", "ReproductionStatus",
           "compare", "compute_cell", "figure_summary", "figure_trends", "format_table", "paper_table",
           "reproduce", "short_labels", "status", "write_html"]
