"""cofiviz: a lab for collaborative ranking.

Data flows one way: :class:`Ratings` → a protocol (:mod:`cofiviz.protocols`) makes a :class:`Split`
→ a model's ``fit`` (:mod:`cofiviz.models`) → metrics (:mod:`cofiviz.metrics`) score its rankings
→ :func:`evaluate` returns tidy tables; an :class:`Experiment` runs many such cells into a
:class:`ResultsStore`, and :mod:`cofiviz.reproductions` holds the papers' tables. Importing cofiviz
compiles nothing: numba kernels are compiled (and cached on disk) at first use, or ahead of time by
:func:`warmup`. ``ARCHITECTURE.md`` draws the layers.
"""

import os as _os

# numba vectorises loops of exp, log, pow … with Intel's SVML when it finds it installed, and SVML's results
# change with the CPU's vector width: the kernels call the C library's scalar functions instead (the same
# bits on every CPU). Read by numba when it is first imported.
_os.environ.setdefault("NUMBA_DISABLE_INTEL_SVML", "1")

from .util._version import __version__
from .util.errors import CofivizError, DataError, DataSourceError, ModelFitError, ParameterError
from .ratings import Ratings
from .split import Split
from . import datasets, metrics, models, protocols
from .evaluation import evaluate, Evaluation
from .engine.experiment import Experiment
from .engine.results import Results
from .engine.store import ResultsStore
from .engine.warmup import warmup

__all__ = ["Ratings", "Split", "datasets", "metrics", "models", "protocols", "evaluate", "Evaluation", "Experiment",
           "Results", "ResultsStore", "warmup", "CofivizError", "DataError", "DataSourceError", "ModelFitError",
           "ParameterError", "__version__"]
