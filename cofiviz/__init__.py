"""cofiviz: a lab for collaborative ranking.

Data flows one way: :class:`Ratings` → a protocol (:mod:`cofiviz.protocols`) makes a :class:`Split`
→ a model's ``fit`` (:mod:`cofiviz.models`) → metrics (:mod:`cofiviz.metrics`) score its rankings
→ :func:`evaluate` returns tidy tables. Importing cofiviz compiles nothing: numba kernels are
compiled (and cached on disk) at first use, or ahead of time by :func:`warmup`.
"""

from ._version import __version__
from .errors import CofivizError, DataError, DataSourceError, ModelFitError, ParameterError
from .ratings import Ratings
from .split import Split
from . import datasets, metrics, models, protocols
from .evaluation import evaluate, Evaluation
from .experiment import Experiment, Results
from .store import ResultsStore
from .warmup import warmup

__all__ = ["Ratings", "Split", "datasets", "metrics", "models", "protocols", "evaluate", "Evaluation", "Experiment", "Results", "ResultsStore",
           "warmup", "CofivizError", "DataError", "DataSourceError", "ModelFitError", "ParameterError",
           "__version__"]
