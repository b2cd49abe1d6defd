"""Work a server hands to other processes: the training workers, the data sets they preload, and the pool of recommenders.

The dashboards (:mod:`cofiviz.dashboards`) only display: the monitor follows a :class:`~.training_process.TrainingProcess`,
the recommendations page reads the models a :class:`~.recommenders.RecommenderPool` trained. Nothing here imports Panel.
"""
