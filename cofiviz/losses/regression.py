"""CofiRank-Regression: the squared loss of appendix A.1 (Weimer et al., CofiRank's extended version).

    l(f, y) = ½ Σ_j (f_j − y_j)²,        ∂_f l = f − y.

(The appendix prints the gradient as ``y − f``, a sign slip; the authors' C++ code uses
``Σ (f − y)²`` without the ½, which is the same problem at twice the regularisation λ.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..util.errors import ParameterError

__all__ = ["regression_loss", "regression_loss_grad"]


@njit(cache=True, nogil=True)
def regression_loss_grad(f, y, g):
    """``½ Σ (f − y)²`` for one user; writes the gradient ``f − y`` into ``g``."""
    loss = 0.0
    for j in range(f.shape[0]):
        r = f[j] - y[j]
        g[j] = r
        loss += 0.5 * r * r
    return loss


def regression_loss(f, y):
    """Squared loss of one user's scores ``f`` against ratings ``y``; returns ``(loss, grad)``."""
    f = np.ascontiguousarray(f, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if f.ndim != 1 or f.shape != y.shape:
        raise ParameterError(f"f and y must be 1-D arrays of one length, got shapes {f.shape} and {y.shape}")
    g = np.empty(len(f))
    return float(regression_loss_grad(f, y, g)), g


