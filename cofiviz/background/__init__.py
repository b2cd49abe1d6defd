"""Work a server does below its pages: the training workers, the data sets they preload, the pool of recommenders,
the comparisons page's missing cells.

The dashboards (:mod:`cofiviz.dashboards`) only display: the monitor follows a :class:`~.training_process.TrainingProcess`,
the recommendations page reads the models a :class:`~.recommenders.RecommenderPool` trained, the comparisons page
shows the cells :func:`~.cells.compute_cells` computed. Nothing here imports Panel.
"""
