"""The ordered-partition likelihood of a rated list (blog post "The rank 1 problem": "Taking ties into account").

"Ranking with ties can be seen as an instance of the problem class of simultaneous partitioning a set
into subsets and ordering the subsets [...] there exists at least a case where the loss function can be
computed in linear time." A user's ratings are an ordered partition of the rated items: groups of
equal ratings ``G_1 ≻ G_2 ≻ … ≻ G_T``, best first. Instead of breaking a group into single choices (as
Breslow's and Efron's rules of :mod:`.listwise` do), the model chooses each group *as a whole*, in turn,
among every non-empty subset of the items not chosen yet, ``R_t = G_t ∪ G_{t+1} ∪ … ∪ G_T``:

    P(G_1 ≻ … ≻ G_T) = Π_t Φ(G_t) / Z_t,      Z_t = Σ_{∅ ≠ S ⊆ R_t} Φ(S)

With the multiplicative subset potential ``Φ(S) = Π_{i ∈ S} exp(f_i)`` the sum over the ``2^|R_t| − 1``
subsets factorises,

    Z_t = Π_{j ∈ R_t} (1 + e^{f_j}) − 1,

so the whole likelihood costs one sort and linear time. The loss is its negative logarithm,

    L(f, y) = Σ_t [ log Z_t − Σ_{i ∈ G_t} f_i ],   log Z_t = log(e^{A_t} − 1),   A_t = Σ_{j ∈ R_t} log(1 + e^{f_j})

and its gradient, with ``g(k)`` the group of item ``k`` and ``σ`` the logistic function
(``∂ log Z_t/∂f_k = σ(f_k) / (1 − e^{−A_t})`` for ``k ∈ R_t``),

    ∂L/∂f_k = −1 + σ(f_k) Σ_{t ≤ g(k)} 1 / (1 − e^{−A_t}).

``log Z_t`` is a log-sum-exp of linear functions of ``f`` (one per subset), so the loss is convex.
Everything is carried in logarithms — ``log A_t`` as a log-sum-exp of ``log log(1 + e^{f_j})``, and
``log(e^A − 1)`` by ``log(expm1(A))`` or ``A + log1p(−e^{−A})`` — so that scores of any size give finite
values and gradients.

Properties (tested in ``tests/test_losses_smoothed_rank_partition.py``)

- The loss depends on the groups only: it is the same in every order of the tied items.
- The model is a distribution over ordered partitions: the probabilities of all ordered partitions of
  a set (their number is the Fubini, or ordered Bell, number the blog post mentions) sum to 1.
- It is **not** shift-invariant, unlike Plackett–Luce: the level of the scores sets how likely items
  are chosen together. High scores make large groups likely; as every score goes to −∞ the subsets of
  two or more items become negligible and the normaliser tends to Plackett–Luce's ``Σ_{j ∈ R_t} e^{f_j}``.
- Without ties (every group one item) it does not reduce to Plackett–Luce: the normaliser still counts
  the subsets of several items, so ``L = L_PL + Σ_t log(Z_t / Σ_{j ∈ R_t} e^{f_j}) ≥ L_PL``, with equality
  only in the limit of scores → −∞ above.
- A list whose items are all tied is one group chosen at once, ``L = log(Π_j (1 + e^{f_j}) − 1) − Σ_j f_j``:
  it pushes every score up (towards choosing the whole list at once) and says nothing about their order.

Source. The blog post's SDM'11 reference: Truyen Tran, Dinh Phung and Svetha Venkatesh, "Probabilistic
models over ordered partitions with applications in document ranking and collaborative filtering",
Proc. SIAM International Conference on Data Mining (SDM) 2011, pp. 426–437 (a longer version:
arXiv:1009.1690). Its abstract: subsets are "chosen in a stagewise manner [...] with suitable
parameterisation, we can still learn the models in linear time". This module follows the blog post's
description — the stagewise choice among non-empty subsets, and the multiplicative potential as its
linear-time case — not the paper's text: no equation numbers of the paper are given, and a variant of the
potential the paper may also consider (normalised by the subset size, say) is not implemented.

Layers: :func:`partition_loss_grad` is the numba kernel of one list (the bilinear model calls it per user
when ``pl_ties="partition"``); :func:`ordered_partition_loss` is its checked NumPy-facing wrapper;
:func:`log_subset_normaliser` gives ``log Z`` of one set of scores. :data:`LISTWISE_TIES` lists the
listwise treatments of a rated list the bilinear model offers: Plackett–Luce with Breslow's or Efron's
rule, or this model.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..errors import ParameterError
from .listwise import PL_TIES, _check_list, _logaddexp

__all__ = ["LISTWISE_TIES", "listwise_ties_code", "partition_loss_grad", "ordered_partition_loss",
           "log_subset_normaliser", "warmup"]

#: Listwise treatments of a rated list, in the order of their integer codes: Plackett–Luce with
#: Breslow's (0) or Efron's (1) rule for ties (:mod:`.listwise`), or the ordered-partition model (2).
LISTWISE_TIES = PL_TIES + ("partition",)


def listwise_ties_code(ties: str) -> int:
    """The integer code of a listwise treatment (``"breslow"`` → 0, ``"efron"`` → 1, ``"partition"`` → 2).

    Raises
    ------
    ParameterError
        An unknown name; the message lists the valid ones.
    """
    if isinstance(ties, str) and ties.strip().lower() in LISTWISE_TIES:
        return LISTWISE_TIES.index(ties.strip().lower())
    raise ParameterError(f"unknown listwise ties treatment {ties!r}; valid: {', '.join(LISTWISE_TIES)}")


# ---------------------------------------------------------------------------------------------- numba
@njit(cache=True, nogil=True, inline="always")
def _log_softplus(x):
    """``log log(1 + e^x)``, finite for every finite ``x``."""
    if x > 0.0:
        return math.log(x + math.log1p(math.exp(-x)))
    if x > -30.0:
        return math.log(math.log1p(math.exp(x)))
    # log(1 + e^x) = e^x (1 − e^x / 2 + …): its logarithm is x − e^x / 2 to double precision
    return x - 0.5 * math.exp(x)


@njit(cache=True, nogil=True, inline="always")
def _log_sigmoid(x):
    """``log σ(x) = −log(1 + e^{−x})``."""
    if x >= 0.0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit(cache=True, nogil=True, inline="always")
def _log_expm1(log_a):
    """``(A, log(e^A − 1))`` from ``log A``, for ``A > 0``: the log-normaliser ``log Z`` of a set with ``A = Σ log(1 + e^f)``."""
    a = math.exp(log_a)
    if a > 0.6931471805599453:
        return a, a + math.log1p(-math.exp(-a))
    if a > 1e-8:
        return a, math.log(math.expm1(a))
    # log((e^A − 1) / A) = A / 2 + O(A²)
    return a, log_a + 0.5 * a


@njit(cache=True, nogil=True)
def log_normaliser_kernel(f):
    """``log Σ_{∅ ≠ S ⊆ R} Π_{i ∈ S} e^{f_i} = log(Π_j (1 + e^{f_j}) − 1)`` of the scores ``f`` of a set ``R`` (−inf if empty)."""
    log_a = -np.inf
    for j in range(f.shape[0]):
        log_a = _logaddexp(log_a, _log_softplus(f[j]))
    if log_a == -np.inf:
        return -np.inf
    return _log_expm1(log_a)[1]


@njit(cache=True, nogil=True)
def partition_loss_grad(f, y, grad):
    """Ordered-partition negative log-likelihood of one list and its gradient (see the module documentation).

    Parameters
    ----------
    f : float64[n]
        Scores (higher: chosen earlier).
    y : float64[n]
        Ratings (higher: better); equal ratings form a group, chosen as a whole.
    grad : float64[n]
        Output, ``∂L/∂f``.

    Returns
    -------
    float
        ``L(f, y) = Σ_t [log Z_t − Σ_{i ∈ G_t} f_i]`` (0 for an empty list).
    """
    n = f.shape[0]
    if n == 0:
        return 0.0
    order = np.argsort(-y, kind="mergesort")   # best first; ties in stored order (irrelevant to the loss)
    starts = np.empty(n + 1, dtype=np.int64)
    n_groups = 0
    for a in range(n):
        if a == 0 or y[order[a]] != y[order[a - 1]]:
            starts[n_groups] = a
            n_groups += 1
    starts[n_groups] = n
    # A_t = Σ_{j ∈ R_t} log(1 + e^{f_j}) (as log A_t), and log Z_t = log(e^{A_t} − 1), from the last group up
    a_t = np.empty(n_groups)
    log_z = np.empty(n_groups)
    log_a = -np.inf
    for g in range(n_groups - 1, -1, -1):
        for a in range(starts[g], starts[g + 1]):
            log_a = _logaddexp(log_a, _log_softplus(f[order[a]]))
        a_t[g], log_z[g] = _log_expm1(log_a)
    loss = 0.0
    log_w = -np.inf                            # log Σ_{t ≤ g} 1 / (1 − e^{−A_t}) = log Σ_{t ≤ g} e^{A_t − log Z_t}
    for g in range(n_groups):
        sf = 0.0
        for a in range(starts[g], starts[g + 1]):
            sf += f[order[a]]
        loss += log_z[g] - sf
        log_w = _logaddexp(log_w, a_t[g] - log_z[g])
        for a in range(starts[g], starts[g + 1]):
            k = order[a]
            grad[k] = -1.0 + math.exp(_log_sigmoid(f[k]) + log_w)
    return loss


# ---------------------------------------------------------------------------------------------- NumPy
def ordered_partition_loss(scores, ratings) -> tuple[float, np.ndarray]:
    """``(L, ∂L/∂f)``: the ordered-partition loss of one rated list (SDM'11 model; "The rank 1 problem").

    The groups of equal ratings are chosen best first, each as a whole among every non-empty subset of
    the items left, with subset potential ``Π_{i ∈ S} e^{f_i}``:

        L = Σ_t [ log(Π_{j ∈ R_t} (1 + e^{f_j}) − 1) − Σ_{i ∈ G_t} f_i ]

    Parameters
    ----------
    scores : array_like
        Predicted scores ``f`` of the list's items.
    ratings : array_like
        Their ratings; higher is better, equal ratings form a group.

    Returns
    -------
    (float, numpy.ndarray)
        The negative log-likelihood and its gradient in ``scores`` (module documentation).

    Raises
    ------
    ParameterError
        Shapes that differ or non-finite values.
    """
    f, y = _check_list(scores, ratings)
    grad = np.empty_like(f)
    return float(partition_loss_grad(f, y, grad)), grad


def log_subset_normaliser(scores) -> float:
    """``log Σ_{∅ ≠ S ⊆ R} Π_{i ∈ S} e^{f_i} = log(Π_j (1 + e^{f_j}) − 1)`` for the scores of a set ``R``.

    The sum runs over the ``2^|R| − 1`` non-empty subsets; the product form makes it linear in ``|R|``.
    ``-inf`` for an empty set.

    Raises
    ------
    ParameterError
        Non-numeric or non-finite scores.
    """
    f, _ = _check_list(scores, np.zeros(np.size(scores)))
    return float(log_normaliser_kernel(f))


def warmup() -> None:
    """Compile (or load from numba's cache) the ordered-partition kernels."""
    ordered_partition_loss([0.2, -0.1, 0.4], [5.0, 3.0, 5.0])
    log_subset_normaliser([0.2, -0.1])
