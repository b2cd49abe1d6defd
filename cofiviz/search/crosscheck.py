"""The cross-check of a search: what its best setting gains on validation users its selection did not look at.

The best of many trials on one validation part is partly the luckiest. The validation users are split at random
(seeded) into two halves A and B; the trial best on A is compared with a reference on B, and the trial best on B
with it on A (a two-fold cross-validation of the selection). :func:`cofiviz.search.tune` keeps the best trial only
when it gains on both halves, and before that asks the factors to beat the item mean alone by more than the noise
of those out-of-selection differences (:func:`cross_checked_noise`, :data:`ITEM_MEAN_Z` standard errors).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ITEM_MEAN_Z", "cross_checked_gains", "cross_checked_gain", "cross_checked_noise", "best_on",
           "cross_check", "scored_mean"]

#: how many standard errors its mean a search's gain over the item mean must reach, the per-user differences taken on
#: the half of the validation users each best trial was not chosen on: a one-sided paired test at the 5 % level
#: (normal approximation)
ITEM_MEAN_Z = 1.645


def cross_checked_gains(reference: np.ndarray, best_a: np.ndarray, best_b: np.ndarray, in_a: np.ndarray,
                        lower_is_better: bool = False) -> tuple[float, float]:
    """What a search gains over the reference on each half it did not select on (module docstring).

    Parameters
    ----------
    reference, best_a, best_b : float arrays (one value per user, NaN where not scored)
        Per-user validation values of the reference (the configured model or an anchor), of the trial best
        on the users of half A and of the trial best on half B.
    in_a : bool array
        The users of half A (the others are half B).
    lower_is_better : bool
        The metric's direction.

    Returns
    -------
    (float, float)
        ``mean_B(best_a) − mean_B(reference)`` and ``mean_A(best_b) − mean_A(reference)``, their signs flipped
        for a lower-is-better metric so that a positive gain is an improvement; NaN where a half has no scored
        user.
    """
    in_b, mean, sign = ~in_a, scored_mean, -1.0 if lower_is_better else 1.0
    return (sign * (mean(best_a, in_b) - mean(reference, in_b)), sign * (mean(best_b, in_a) - mean(reference, in_a)))


def cross_checked_gain(reference: np.ndarray, best_a: np.ndarray, best_b: np.ndarray, in_a: np.ndarray,
                       lower_is_better: bool = False) -> float:
    """The mean of :func:`cross_checked_gains`: the two-fold estimate of what a search gains over the reference."""
    return float(np.mean(cross_checked_gains(reference, best_a, best_b, in_a, lower_is_better)))


def scored_mean(values: np.ndarray, mask: np.ndarray) -> float:
    """The mean of ``values[mask]`` over its scored (non-NaN) users; NaN when there is none."""
    v = values[mask]
    v = v[~np.isnan(v)]
    return float(v.mean()) if len(v) else float("nan")


def best_on(values: dict, among, mask: np.ndarray, sign: float) -> int:
    """The trial of ``among`` whose per-user ``values`` have the best mean on the users of ``mask`` (ties: the
    earlier trial; a half without scored users counts as the worst)."""
    def score(i):
        mean = scored_mean(values[i], mask)
        return -np.inf if np.isnan(mean) else sign * mean
    return max(sorted(among), key=lambda i: (score(i), -i))


def cross_check(values: dict, reference: int, among, in_a: np.ndarray, sign: float) -> tuple[float, float]:
    """What the trials of ``among`` gain over ``reference`` on the half of the validation users each best one was
    not chosen on (:func:`cross_checked_gains`)."""
    best_a, best_b = best_on(values, among, in_a, sign), best_on(values, among, ~in_a, sign)
    return cross_checked_gains(values[reference], values[best_a], values[best_b], in_a, sign < 0)


def cross_checked_noise(reference: np.ndarray, best_a: np.ndarray, best_b: np.ndarray, in_a: np.ndarray,
                        lower_is_better: bool = False) -> tuple[float, float]:
    """The out-of-selection gain over the reference on all the validation users, and its noise.

    Each user contributes one difference: a user of half B ``best_a − reference``, a user of half A
    ``best_b − reference`` (sign flipped for a lower-is-better metric; users not scored on both sides left out).

    Returns
    -------
    (float, float)
        The mean of these differences, and ``ITEM_MEAN_Z`` standard errors of it (``ITEM_MEAN_Z · sd / √n``);
        NaN below two users.
    """
    sign = -1.0 if lower_is_better else 1.0
    d = sign * np.where(in_a, best_b - reference, best_a - reference)
    d = d[~np.isnan(d)]
    if len(d) < 2:
        return float("nan"), float("nan")
    return float(d.mean()), float(ITEM_MEAN_Z * d.std(ddof=1) / np.sqrt(len(d)))
