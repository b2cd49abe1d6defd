"""The papers' comparisons, one command each: ``cofiviz reproduce NAME``.

Every reproduction runs a paper's protocol through :class:`~cofiviz.engine.experiment.Experiment` (cells already
in the results store are read, not run), puts the paper's numbers beside cofiviz's with the difference per
cell, and writes a self-contained HTML report (tables and HoloViews plots, all JavaScript inline).

One module per paper holds its protocols' settings, the methods' grids, the published numbers and the
numbers of the authors' own code: :mod:`.cofirank` (``cofirank-table2``, ``cofirank-table3``,
``cofirank-tuned``), :mod:`.lcr` (``lcr-table2``, ``lcr-figures``), :mod:`.gapfm` (``gapfm-table4``,
``gapfm-topn``, and ``gapfm-table2``, ``gapfm-table3`` on the Netflix Prize), and :mod:`.leaderboard` the
comparisons beyond the papers (``ml1m``, ``ml1m-weak``: every model on MovieLens 1M). A table's rows on the data
sets that cannot be downloaded (EachMovie, the Netflix Prize, Yelp) are its :class:`OtherData`, with their own N
values, splits, rows and published numbers, run on the user's files with ``data={"name": ..., "path": ...}``
(``cofiviz reproduce NAME --data netflix-prize=FOLDER``). :mod:`.spec` defines what a reproduction is, :mod:`.report` the comparison and the
report, :mod:`.run` running one or reading it from the store, :mod:`.shipped` the full results that ship
inside the package (shown at once; the user's store takes precedence).

A method whose model is not registered (see :func:`cofiviz.models.available_models`) is reported as a
missing row, never as an error. ``quick=True`` runs a reduced version (the first N, one seed, one or two
settings, a few iterations) meant for tests and a first look; its numbers are not the paper's.
"""

from . import cofirank, gapfm, lcr, leaderboard
from .lcr import figure_summary, figure_trends, short_labels
from .report import ReproductionReport, compare, format_table, paper_table, write_html
from .run import (ReproductionStatus, cached_status, compute_cell, preview, reproduce, ship_reproduction, status,
                  stored_runs, verify_shipped)
from .spec import REPRODUCTIONS, Method, OtherData, PaperCell, Reproduction, get, register

__all__ = ["REPRODUCTIONS", "Reproduction", "Method", "PaperCell", "OtherData", "ReproductionReport",
           "ReproductionStatus", "preview", "stored_runs",
           "reproduce", "status", "cached_status", "compute_cell", "verify_shipped", "ship_reproduction",
           "paper_table", "compare", "format_table", "write_html",
           "figure_summary", "figure_trends", "short_labels", "get", "register", "cofirank", "lcr", "gapfm",
           "leaderboard"]
