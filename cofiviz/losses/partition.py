"""The ordered-partition likelihood of a rated list: probabilistic models over ordered partitions (PMOP) of Tran,
Phung & Venkatesh (SDM 2011), with two subset potentials.

The blog post "The rank 1 problem" ("Taking ties into account"): "Ranking with ties can be seen as an
instance of the problem class of simultaneous partitioning a set into subsets and ordering the subsets
[...] there exists at least a case where the loss function can be computed in linear time." That is the
authors' SDM 2011 paper. Its full text could not be read: the model below is the one its abstract and the
blog post describe, and the closed forms and gradients are derived here (each is checked against enumeration of
the subsets in the tests). Which potential the paper calls its linear-time case could not be checked; both
potentials that give one are offered.

Model
-----
A user's ratings are an ordered partition of the rated items: groups of equal ratings
``X_1 ≻ X_2 ≻ … ≻ X_K``, best first. The groups are chosen in turn, each *as a whole*, among every
non-empty subset of the items not chosen yet, ``R_k = X_k ∪ X_{k+1} ∪ … ∪ X_K`` (``N_k = |R_k|`` items):

    p(X_1, …, X_K) = Π_k p(X_k | R_k),    p(X_k | R_k) = Φ(X_k) / Σ_{∅ ≠ S ⊆ R_k} Φ(S)

with item potentials ``φ(x) = exp(f_x)`` of the scores ``f`` and a subset potential ``Φ`` built from them.
The sum over the ``2^{N_k} − 1`` subsets has a closed form for two potentials (``potential=``):

``"mean"``     ``Φ(S) = (1 / |S|) Σ_{x ∈ S} φ(x)``. An item lies in ``binom(N − 1, m − 1)`` subsets of size
               ``m``, each weighting it by ``1/m``, and ``Σ_m binom(N − 1, m − 1) / m = Σ_m binom(N, m) / N``, so

                   Σ_{∅ ≠ S ⊆ R_k} Φ(S) = C_k Σ_{x ∈ R_k} φ(x),    C_k = (2^{N_k} − 1) / N_k

               and ``log p(X_k | R_k) = log Σ_{X_k} e^f − log Σ_{R_k} e^f − log(C_k |X_k|)``: the probability that
               Plackett–Luce's first pick from ``R_k`` falls in ``X_k``, times a constant of the group sizes. (The
               plain sum ``Φ(S) = Σ_{x ∈ S} φ(x)`` changes only that constant.)
``"product"``  ``Φ(S) = Π_{x ∈ S} φ(x)``. Expanding ``Π_{x ∈ R}(1 + φ(x))`` gives every subset's product once, so

                   Σ_{∅ ≠ S ⊆ R_k} Φ(S) = P_k − 1,    P_k = Π_{x ∈ R_k} (1 + e^{f_x})

               and ``log p(X_k | R_k) = Σ_{X_k} f − log(P_k − 1)``: each item of ``R_k`` joins the chosen subset
               on its own with odds ``e^{f_x}``, conditioned on a non-empty choice. There is no constant.

Loss
----
``"mean"``: the negative log-likelihood without the parameter-free constants ``log(C_k |X_k|)``,

    L(f, y) = Σ_k [ log Σ_{x ∈ R_k} e^{f_x} − log Σ_{x ∈ X_k} e^{f_x} ]
            = Σ_k log(1 + S_{k+1} / T_k),      T_k = Σ_{x ∈ X_k} e^{f_x},  S_k = Σ_{x ∈ R_k} e^{f_x} = T_k + S_{k+1}

with ``S_{K+1} = 0``. The exact negative log-likelihood adds the constant, which depends on the group
sizes only:

    −log p(X_1, …, X_K) = L(f, y) + Σ_k log(C_k |X_k|),   log C_k = log(2^{N_k} − 1) − log N_k

(:func:`partition_log_constant`; ``ordered_partition_loss(…, exact=True)``). With ``g(x)`` the group of
item ``x``, the gradient is

    ∂L/∂f_x = −e^{f_x} / T_{g(x)} + Σ_{k ≤ g(x)} e^{f_x} / S_k

The sums ``S_k`` are backward cumulative sums, so after one sort the loss and gradient take linear time. They
are carried as logarithms (each ``log T_k`` a log-sum-exp with the group's maximum subtracted, ``log S_k``
accumulated by ``logaddexp`` from the last group up), the stage loss is ``log1p(e^{log S_{k+1} − log T_k})``,
and the gradient's sum over ``k`` is ``e^{f_x − log S_{g(x)}} W_{g(x)}`` with
``W_k = Σ_{j ≤ k} S_k / S_j = 1 + W_{k−1} e^{log S_k − log S_{k−1}}`` in ``[1, k]``. Scores of any size give a
finite gradient, and a finite loss whenever the loss itself fits in a float (it grows like the score
differences of items in the wrong order).

``"product"``: the exact negative log-likelihood,

    L(f, y) = Σ_k [ log(P_k − 1) − Σ_{x ∈ X_k} f_x ],   log P_k = Σ_{x ∈ R_k} log(1 + e^{f_x})

    ∂L/∂f_x = σ(f_x) Σ_{k ≤ g(x)} P_k / (P_k − 1) − 1,   σ(f) = e^f / (1 + e^f)

also linear time after the sort (``log P_k`` accumulated from the last group up; ``log(P_k − 1)`` as
``log(expm1(log P_k))``). ``log P_k`` is held at least 1e-300, which changes nothing unless every score of
``R_k`` is below about −690.

Properties (tested in ``tests/test_losses_smoothed_rank_partition.py``)

- Each is a distribution over ordered partitions: the probabilities of all ordered partitions of a set (their
  number is the Fubini, or ordered Bell, number the blog post mentions) sum to 1 (``"mean"`` with its
  constant).
- The loss depends on the groups only: it is the same in every order of the tied items, and for any ratings
  with the same order of levels.
- ``"mean"``: each stage loss is ``−log`` of the Plackett–Luce probability that the first item chosen from
  ``R_k`` lies in ``X_k``, so ``L ≥ 0``, and ``L`` is at most Breslow's Plackett–Luce loss (:mod:`.listwise`),
  which takes ``−log`` of every tied item's choice. It depends on ``φ`` only through ratios: adding a constant
  to every score leaves it unchanged (the gradient sums to 0). Without ties (every group one item) ``L`` is
  Plackett–Luce's negative log-likelihood, the ListMLE loss; the exact negative log-likelihood exceeds it by
  ``Σ_k log C_k``, the mass the model gives to the ordered partitions with ties. A list whose items are all
  tied is one group, ``R_1 = X_1``: ``L = 0`` and the gradient is 0 (its exact negative log-likelihood is
  ``log(2^N − 1)`` whatever the scores); the last group of every list likewise contributes 0 to ``L``. ``L``
  is smooth but not convex in ``f`` once a group other than the last has more than one item: each stage is a
  difference of two log-sum-exps, e.g. two tied items above a third, ``f = (t, −t, 0)``, give
  ``L = log(1 + 1/(2 cosh t))``, positive and tending to 0 both ways; it is convex when every group but the
  last is a single item (Plackett–Luce).
- ``"product"``: the scores' level matters, not only their differences: an item's odds of joining the chosen
  group are ``e^{f_x}`` against staying out, so raising every score makes large groups likelier. The last group
  contributes ``log(P_K − 1) − Σ_{X_K} f > 0``, and an all-tied list is not free: its loss is
  ``Σ log(1 + e^{−f_x})`` plus ``log(1 − Π(1 + e^{f_x})^{−1})``, small when every item scores high. Without
  ties it is not Plackett–Luce.

Source. Tran The Truyen, Dinh Q. Phung and Svetha Venkatesh, "Probabilistic Models over Ordered
Partitions with Applications in Document Ranking and Collaborative Filtering", Proc. SIAM International
Conference on Data Mining (SDM) 2011, pp. 426–437, as its abstract and the blog post describe it (the full
text, and its companion preprint arXiv:1009.1690, could not be read). A subset potential such as
``exp(mean of f over S)`` has no closed-form normaliser and is not implemented.

Layers: :func:`partition_loss_grad` and :func:`partition_product_loss_grad` are the numba kernels of one
list (the bilinear model calls them per user when ``pl_ties="partition"`` or ``"partition_product"``);
:func:`ordered_partition_loss` is their checked NumPy-facing wrapper (``exact=True`` adds the mean
potential's constant); :func:`partition_log_constant` gives that constant of a rated list;
:func:`log_subset_normaliser` gives ``log Σ_{∅ ≠ S ⊆ R} Φ(S)`` of one set of scores. :data:`LISTWISE_TIES`
lists the listwise treatments of a rated list the bilinear model offers: Plackett–Luce with Breslow's or
Efron's rule, or this model with either potential.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..util.errors import ParameterError, named
from .listwise import PL_TIES, check_scored_list, group_log_sums, tie_groups

__all__ = ["LISTWISE_TIES", "POTENTIALS", "listwise_ties_code", "partition_loss_grad", "partition_product_loss_grad",
           "ordered_partition_loss", "partition_log_constant", "log_subset_normaliser", "warmup"]

#: Listwise treatments of a rated list, in the order of their integer codes: Plackett–Luce with
#: Breslow's (0) or Efron's (1) rule for ties (:mod:`.listwise`), or the ordered-partition model with the
#: mean (2) or the product (3) potential.
LISTWISE_TIES = PL_TIES + ("partition", "partition_product")
#: the subset potentials of the ordered-partition model with a closed-form normaliser (module documentation)
POTENTIALS = ("mean", "product")


def listwise_ties_code(ties: str) -> int:
    """The integer code of a listwise treatment (``"breslow"`` → 0, ``"efron"`` → 1, ``"partition"`` → 2,
    ``"partition_product"`` → 3).

    Raises
    ------
    ParameterError
        An unknown name; the message lists the valid ones.
    """
    return LISTWISE_TIES.index(named(ties, LISTWISE_TIES, "listwise ties treatment"))


# ---------------------------------------------------------------------------------------------- numba
@njit(cache=True, nogil=True, inline="always")
def _log1pexp(x):
    """``log(1 + e^x)``, finite for every ``x`` below +inf (0 at −inf)."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True, nogil=True)
def log_c(n):
    """``log C = log((2^n − 1) / n)`` of a set of ``n ≥ 1`` items ; 0 for ``n = 1``."""
    if n <= 60:
        return math.log((2.0 ** n - 1.0) / n)
    ln2 = 0.6931471805599453                 # log(2^n − 1) = n log 2 + log1p(−2^{−n}), for 2^n beyond 2^60
    return n * ln2 + math.log1p(-math.exp(-n * ln2)) - math.log(n)


@njit(cache=True, nogil=True)
def log_normaliser_kernel(f):
    """``log Σ_{∅ ≠ S ⊆ R} Φ(S) = log C + log Σ_{x ∈ R} e^{f_x}`` of the scores ``f`` of a set ``R`` (−inf if empty)."""
    n = f.shape[0]
    if n == 0:
        return -np.inf
    mx = -np.inf
    for j in range(n):
        if f[j] > mx:
            mx = f[j]
    s = 0.0
    for j in range(n):
        s += math.exp(f[j] - mx)
    return log_c(n) + mx + math.log(s)


@njit(cache=True, nogil=True)
def partition_log_constant_kernel(y):
    """``Σ_k log(C_k |X_k|)`` of the ordered partition given by the ratings ``y`` (0 for an empty list)."""
    n = y.shape[0]
    if n == 0:
        return 0.0
    _, starts, n_groups = tie_groups(y)
    out = 0.0
    for k in range(n_groups):
        out += log_c(n - starts[k]) + math.log(starts[k + 1] - starts[k])
    return out


@njit(cache=True, nogil=True)
def partition_loss_grad(f, y, grad):
    """The ordered-partition loss of one list with the mean potential, and its gradient (module documentation).

    Parameters
    ----------
    f : float64[n]
        Scores (higher: chosen earlier), ``φ(x) = e^{f_x}``.
    y : float64[n]
        Ratings (higher: better); equal ratings form a group ``X_k``, chosen as a whole.
    grad : float64[n]
        Output, ``∂L/∂f_x = −e^{f_x} / T_{g(x)} + Σ_{k ≤ g(x)} e^{f_x} / S_k`` .

    Returns
    -------
    float
        ``L(f, y) = Σ_k [log S_k − log T_k] = Σ_k log(1 + S_{k+1} / T_k)``: the negative log-likelihood without the constant ``Σ_k log(C_k |X_k|)`` (0 for an empty list).
    """
    n = f.shape[0]
    if n == 0:
        return 0.0
    order, starts, n_groups = tie_groups(y)
    log_t, log_s = group_log_sums(f, order, starts, n_groups)   # log T_k, log S_k = log(T_k + S_{k+1})
    loss = 0.0
    w = 0.0                                    # W_k = Σ_{j ≤ k} S_k / S_j
    for k in range(n_groups):
        loss += _log1pexp(log_s[k + 1] - log_t[k])
        if k == 0:
            w = 1.0
        else:
            w = 1.0 + w * math.exp(log_s[k] - log_s[k - 1])
        for a in range(starts[k], starts[k + 1]):
            x = order[a]
            grad[x] = math.exp(f[x] - log_s[k]) * w - math.exp(f[x] - log_t[k])
    return loss


@njit(cache=True, nogil=True, inline="always")
def _log_expm1(x):
    """``log(e^x − 1)`` of ``x > 0``."""
    if x > 30.0:
        return x + math.log1p(-math.exp(-x))
    return math.log(math.expm1(x))


@njit(cache=True, nogil=True)
def partition_product_loss_grad(f, y, grad):
    """The ordered-partition loss of one list with the product potential, and its gradient (module documentation).

    Parameters
    ----------
    f : float64[n]
        Scores; an item joins the chosen group with odds ``e^{f_x}``.
    y : float64[n]
        Ratings (higher: better); equal ratings form a group ``X_k``, chosen as a whole.
    grad : float64[n]
        Output, ``∂L/∂f_x = σ(f_x) Σ_{k ≤ g(x)} P_k / (P_k − 1) − 1``.

    Returns
    -------
    float
        ``L(f, y) = Σ_k [log(P_k − 1) − Σ_{x ∈ X_k} f_x]``, ``P_k = Π_{x ∈ R_k}(1 + e^{f_x})``: the exact negative
        log-likelihood (0 for an empty list).
    """
    n = f.shape[0]
    if n == 0:
        return 0.0
    order, starts, n_groups = tie_groups(y)
    log_p = np.zeros(n_groups + 1)                # log P_k, from the last group up; log P_{K+1} = 0
    for k in range(n_groups - 1, -1, -1):
        s = 0.0
        for a in range(starts[k], starts[k + 1]):
            s += _log1pexp(f[order[a]])
        log_p[k] = log_p[k + 1] + s
    loss = 0.0
    acc = 0.0                                     # Σ_{j ≤ k} P_j / (P_j − 1)
    for k in range(n_groups):
        lp = max(log_p[k], 1e-300)
        loss += _log_expm1(lp)
        acc += -1.0 / math.expm1(-lp)
        for a in range(starts[k], starts[k + 1]):
            x = order[a]
            loss -= f[x]
            if f[x] >= 0.0:
                sig = 1.0 / (1.0 + math.exp(-f[x]))
            else:
                e = math.exp(f[x])
                sig = e / (1.0 + e)
            grad[x] = sig * acc - 1.0
    return loss


# ---------------------------------------------------------------------------------------------- NumPy
def _check_vector(values, name: str) -> np.ndarray:
    """``values`` as a contiguous float64 vector; ``ParameterError`` naming ``name`` if not numeric or not finite."""
    try:
        v = np.ascontiguousarray(np.asarray(values, dtype=np.float64).ravel())
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be a numeric array: {exc}") from None
    if not np.all(np.isfinite(v)):
        raise ParameterError(f"{name} must be finite")
    return v


def ordered_partition_loss(scores, ratings, exact: bool = False, potential: str = "mean") -> tuple[float, np.ndarray]:
    """``(L, ∂L/∂f)``: the ordered-partition loss of one rated list (Tran, Phung & Venkatesh, SDM 2011).

    The groups of equal ratings are chosen best first, each as a whole among every non-empty subset of
    the items left (module documentation), with the subset potential

    - ``"mean"``: ``Φ(S) = (1/|S|) Σ_{x ∈ S} e^{f_x}``, ``L = Σ_k [ log Σ_{x ∈ R_k} e^{f_x} − log Σ_{x ∈ X_k} e^{f_x} ]``
      (the negative log-likelihood without a constant of the group sizes);
    - ``"product"``: ``Φ(S) = Π_{x ∈ S} e^{f_x}``, ``L = Σ_k [ log(Π_{x ∈ R_k}(1 + e^{f_x}) − 1) − Σ_{x ∈ X_k} f_x ]``
      (the exact negative log-likelihood).

    Parameters
    ----------
    scores : array_like
        Predicted scores ``f`` of the list's items.
    ratings : array_like
        Their ratings; higher is better, equal ratings form a group.
    exact : bool
        With ``"mean"``: add the constant ``Σ_k log(C_k |X_k|)`` (:func:`partition_log_constant`), giving the
        exact negative log-likelihood ``−log p(X_1, …, X_K)``; the gradient is the same either way. ``"product"``
        has no constant.
    potential : {"mean", "product"}
        The subset potential.

    Returns
    -------
    (float, numpy.ndarray)
        The loss (the exact negative log-likelihood if ``exact``) and its gradient in ``scores``
        (module documentation).

    Raises
    ------
    ParameterError
        Shapes that differ, non-finite values, an ``exact`` that is not a bool, or an unknown ``potential``.
    """
    if not isinstance(exact, (bool, np.bool_)):
        raise ParameterError(f"exact must be True or False, got {exact!r}")
    potential = named(potential, POTENTIALS, "ordered-partition potential")
    f, y = check_scored_list(scores, ratings)
    grad = np.empty_like(f)
    if potential == "product":
        return float(partition_product_loss_grad(f, y, grad)), grad
    loss = float(partition_loss_grad(f, y, grad))
    if exact:
        loss += float(partition_log_constant_kernel(y))
    return loss, grad


def partition_log_constant(ratings) -> float:
    """``Σ_k log(C_k |X_k|)``, ``C_k = (2^{N_k} − 1) / N_k``: the parameter-free part of the negative log-likelihood.

    ``X_1 ≻ … ≻ X_K`` are the groups of equal ratings, best first, and ``N_k`` the number of items in
    ``X_k ∪ … ∪ X_K``, of the mean potential. Adding it to :func:`ordered_partition_loss` gives
    ``−log p(X_1, …, X_K)``; it depends on the group sizes only (0 for an empty list).

    Raises
    ------
    ParameterError
        Non-numeric or non-finite ratings.
    """
    return float(partition_log_constant_kernel(_check_vector(ratings, "ratings")))


def log_subset_normaliser(scores) -> float:
    """``log Σ_{∅ ≠ S ⊆ R} Φ(S) = log C + log Σ_{x ∈ R} e^{f_x}`` for the scores of a set ``R``.

    ``Φ(S) = (1/|S|) Σ_{x ∈ S} e^{f_x}`` is the mean potential and ``C = (2^N − 1)/N`` with
    ``N = |R|``: the sum over the ``2^N − 1`` non-empty subsets takes linear time. It is the
    denominator of a stage's choice; ``-inf`` for an empty set.

    Raises
    ------
    ParameterError
        Non-numeric or non-finite scores.
    """
    return float(log_normaliser_kernel(_check_vector(scores, "scores")))


def warmup() -> None:
    """Compile (or load from numba's cache) the ordered-partition kernels."""
    ordered_partition_loss([0.2, -0.1, 0.4], [5.0, 3.0, 5.0], exact=True)
    ordered_partition_loss([0.2, -0.1, 0.4], [5.0, 3.0, 5.0], potential="product")
    log_subset_normaliser([0.2, -0.1])
