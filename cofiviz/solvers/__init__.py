"""Numerical solvers under cofiviz's models.

- :func:`linear_sum_assignment` (:mod:`.lap`): exact linear assignment in numba (shortest augmenting
  paths, Jonker–Volgenant / Crouse), a drop-in for SciPy's; :func:`~.lap.lap_rank2` solves CofiRank's
  rank-two NDCG cost without building the matrix.
- :func:`bmrm` (:mod:`.bmrm`): the bundle method for regularised risk minimisation (CofiRank
  Algorithm 1) with an SMO solver for its dual QP; its numba helpers also run inside kernels.
- :mod:`.dense`: small dense linear algebra (products, Cholesky, solves) in a fixed order of operations, the
  same bits on every CPU, where a model would otherwise call BLAS or LAPACK.
"""

from .bmrm import BMRMResult, bmrm
from .bmrm import warmup as _bmrm_warmup   # ``bmrm`` the function shadows ``bmrm`` the module here
from .dense import warmup as _dense_warmup
from .lap import linear_sum_assignment
from .lap import warmup as _lap_warmup

__all__ = ["linear_sum_assignment", "bmrm", "BMRMResult", "warmup"]


def warmup() -> None:
    """Compile (or load from numba's cache) the assignment, BMRM and dense-algebra kernels on tiny problems."""
    _lap_warmup()
    _bmrm_warmup()
    _dense_warmup()
