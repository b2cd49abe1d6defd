"""The course's editions and the checks its exercises run.

``checks``: :func:`~cofiviz.course.checks.check`, which a notebook calls under an exercise to tell the reader
whether the answer is right, or give a hint. ``editions``: the student edition (the solutions replaced by an
empty answer cell) and the teacher edition (the solutions shown) written from ``notebooks/``. ``plan``: the
lesson plan of notebook 00, from the notebooks' words and the run seconds the test suite measured.
"""

from .checks import check

__all__ = ["check"]
