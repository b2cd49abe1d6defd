"""How a model's fit grows with its data: what a model class declares (:attr:`Model.scale
<cofiviz.models.base.Model.scale>`) so that the leaderboards, the recommendations page and the scale benchmark
treat it right without a list of models of their own."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Scale", "WORK_UNITS"]

#: What one iteration's work can grow with (``n``: one user's training ratings, ``nnz``: all of them, ``I``: the
#: items), each with its meaning
WORK_UNITS = {
    "ratings": "each training rating a fixed number of times",
    "pairs": "the pairs of a user's ratings with different values",
    "item pairs": "all pairs of a user's rated items, ties included",
    "Σn²": "the sum over users of the square of their ratings",
    "Σn³+nnz·I": "a factorisation of each user's n × n matrix, and each rating against every item",
    "Σn³+nnz·I+I³": "as Σn³+nnz·I, plus items × items matrices multiplied and factorised every iteration",
}


@dataclass(frozen=True)
class Scale:
    """How one model's fit grows with its data.

    Attributes
    ----------
    unit : str
        What one iteration's work grows with, a key of :data:`WORK_UNITS` (``benchmarks/bench_scale.py``
        reports the seconds per unit).
    heavy : bool
        An iteration on MovieLens 1M takes minutes: the leaderboards fit the model at its defaults only, for
        a few iterations, and the recommendations page learns it on a sample of users and folds every user in
        (``fold_in``), instead of searching its settings.
    per_user : int, optional
        On MovieLens 1M, the model is tuned and fitted on at most this many ratings of each user (a seeded
        choice): its cost per user grows faster than the user's ratings.
    why : str
        Why it is heavy or capped, as the pages say it.
    """

    unit: str = "ratings"
    heavy: bool = False
    per_user: int | None = None
    why: str = ""

    def __post_init__(self):
        if self.unit not in WORK_UNITS:
            raise ValueError(f"Scale.unit must be one of {', '.join(WORK_UNITS)}; got {self.unit!r}")
        if self.per_user is not None and (isinstance(self.per_user, bool) or not isinstance(self.per_user, int)
                                          or self.per_user < 1):
            raise ValueError(f"Scale.per_user must be a positive integer or None; got {self.per_user!r}")
        if (self.heavy or self.per_user is not None) and not self.why:
            raise ValueError("a heavy or per-user-capped Scale says why (Scale.why)")
