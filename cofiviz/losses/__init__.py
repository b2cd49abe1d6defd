"""Ranking losses, each with value, (sub)gradient and — where it has one — a vectorised shape for plots.

CofiRank's losses (Weimer et al., NIPS 2007, and its extended version's appendix A):

==============  =====================================================
loss            per-user value and subgradient
==============  =====================================================
``ndcg``        :func:`ndcg_loss` (eq 4, linear assignment)
``eru``         :func:`eru_loss` (appendix A.4)
``ordinal``     :func:`ordinal_loss` (Algorithm 2, O(n log n))
``preference``  :func:`preference_loss` (Algorithm 3), :func:`pairs_loss`
``regression``  :func:`regression_loss` (appendix A.1)
==============  =====================================================

:func:`structured_loss_curve` draws the structured losses (``ndcg``, ``eru``) and their regret along a
line of scores, for plots.

LCR's pairwise surrogates (Lee et al., WWW 2014, Table 1) live in :mod:`.surrogates`
(:func:`surrogate_shape`, :func:`figure4_frame`); GAPfm's smoothed GAP in :mod:`.smoothed_gap`.

The losses of the blog post "The rank 1 problem": the listwise Plackett–Luce loss with Breslow's or Efron's
ties (:mod:`.listwise`), the tie-aware pairwise Rao–Kupper and Davidson losses (:mod:`.ties`), the
ordered-partition likelihood that chooses each group of tied items as a whole (:mod:`.partition`,
:func:`ordered_partition_loss`: the model of Tran, Phung & Venkatesh, SDM 2011, with the mean potential,
which is Plackett–Luce when there are no ties, or the product potential) and the smoothed rank with its smoothed NDCG loss
(:mod:`.smoothed_rank`, :func:`smoothed_rank_loss`, ApproxNDCG).

The numba kernels behind them (``*_loss_grad``) work on one user's arrays; :mod:`.collab` packs a
whole ratings table and dispatches per user, for kernels that run in parallel over users.
"""

import numpy as np

from . import listwise, partition, smoothed_rank, surrogates, ties
from .collab import LOSS_CODES, LOSS_NAMES, build_loss_data, total_loss_grad, user_loss_grad
from .pairwise import PAIR_COSTS, ordinal_loss, pairs_loss, preference_loss
from .regression import regression_loss
from .surrogates import SURROGATE_LABELS, SURROGATES, figure4_frame, surrogate_shape, zero_one_shape
from .listwise import PL_TIES, pl_list_probability, plackett_luce_loss
from .partition import LISTWISE_TIES, log_subset_normaliser, ordered_partition_loss, partition_log_constant
from .smoothed_rank import smoothed_positions, smoothed_rank_loss, smoothed_rank_pair_curve
from .ties import TIE_MODELS, tie_frame, tie_loss, tie_probabilities
from .structured import (REFERENCE_ORDERS, eru_loss, eru_regret, ndcg_loss, ndcg_regret,
                         structured_loss_curve)

__all__ = ["LOSS_CODES", "LOSS_NAMES", "PAIR_COSTS", "REFERENCE_ORDERS", "build_loss_data",
           "total_loss_grad", "user_loss_grad", "ndcg_loss", "eru_loss", "ndcg_regret", "eru_regret",
           "ordinal_loss", "pairs_loss", "preference_loss", "regression_loss",
           "structured_loss_curve", "SURROGATES", "SURROGATE_LABELS", "figure4_frame", "surrogate_shape",
           "zero_one_shape", "warmup", "PL_TIES", "plackett_luce_loss", "pl_list_probability",
           "TIE_MODELS", "tie_loss", "tie_probabilities", "tie_frame", "LISTWISE_TIES", "ordered_partition_loss",
           "partition_log_constant", "log_subset_normaliser", "smoothed_rank_loss", "smoothed_positions",
           "smoothed_rank_pair_curve"]


def warmup() -> None:
    """Compile (or load from numba's cache) every loss kernel on a tiny input."""
    f = np.array([0.3, -0.2, 0.1])
    y = np.array([5.0, 3.0, 4.0])
    ndcg_loss(f, y, k=2)
    eru_loss(f, y, k=2)
    ordinal_loss(f, y)
    pairs_loss(f, y)
    preference_loss(f, [[1, 0]])
    regression_loss(f, y)
    ndcg_regret(f, y)
    indptr = np.array([0, 3])
    for name in LOSS_NAMES:
        total_loss_grad(build_loss_data(indptr, y, name), f)
    surrogates.warmup()
    listwise.warmup()
    ties.warmup()
    partition.warmup()
    smoothed_rank.warmup()
