"""Paired significance tests of two methods' per-user values, and Holm's correction for a table of them.

The papers report significance this way: CofiRank (Weimer et al., NIPS 2007, Table 2) gives the p-value of
the best method against the second best; GAPfm (Shi et al., CIKM 2013, §5) marks differences that a Wilcoxon
signed-rank test finds significant at p < 0.01. Both compare the *same users* under two methods, so the tests
here are paired: scipy's ``ttest_rel`` (paired t-test) and ``wilcoxon`` (signed-rank test, two-sided) on the
users present on both sides with a finite value on both; the others are left out and counted.

When one method is tested against several others, Holm's step-down correction (Holm, Scand. J. Statist. 1979)
keeps the chance of any false rejection at the level: the i-th smallest of m p-values is multiplied by
``m - i + 1``, and the adjusted values are made non-decreasing in that order (capped at 1).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..util.errors import DataError

__all__ = ["paired_test", "holm", "best_against_others", "PAIRED_FIELDS"]

#: the fields of :func:`paired_test`'s result, in order
PAIRED_FIELDS = ("metric", "n_users", "mean_a", "mean_b", "diff", "t_test_p", "wilcoxon_p", "n_left_out")


def _series(values, name: str) -> pd.Series:
    if isinstance(values, pd.Series):
        s = values
    elif isinstance(values, Mapping):
        s = pd.Series(dict(values))
    else:
        raise DataError(f"{name} must map users to values (a dict or a pandas Series), got {type(values).__name__}")
    if s.index.has_duplicates:
        dup = s.index[s.index.duplicated()][0]
        raise DataError(f"{name} lists user {dup!r} more than once")
    try:
        return s.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must hold numbers: {exc}") from None


def paired_test(a, b, metric: str = "") -> dict:
    """Compare two methods on the users they share: means, difference, paired t-test and Wilcoxon p-values.

    Parameters
    ----------
    a, b : dict or pandas.Series
        Per-user values of the two methods, keyed by user id.
    metric : str
        The metric's name, carried into the result.

    Returns
    -------
    dict
        ``metric``; ``n_users`` (users in both with finite values on both sides); ``mean_a``, ``mean_b`` and
        ``diff`` (``mean_a - mean_b``, the mean per-user difference) over them; ``t_test_p`` and ``wilcoxon_p``
        (two-sided; NaN for fewer than two users; the Wilcoxon p is 1 when every difference is 0);
        ``n_left_out`` (users of either side not compared: missing on the other side or not finite).
    """
    sa, sb = _series(a, "a"), _series(b, "b")
    both = pd.concat([sa, sb], axis=1, keys=["a", "b"], join="outer")
    ok = np.isfinite(both["a"].to_numpy()) & np.isfinite(both["b"].to_numpy())
    both_ok = both[ok]
    n = int(len(both_ok))
    x, y = both_ok["a"].to_numpy(), both_ok["b"].to_numpy()
    d = x - y
    t_p = w_p = float("nan")
    if n >= 2:
        from scipy import stats     # here: scipy.stats takes half a second to import, and the CLI starts without it

        if np.all(d == d[0]):  # a constant difference: no variance, the t statistic is undefined
            t_p = 1.0 if d[0] == 0 else 0.0
        else:
            t_p = float(stats.ttest_rel(x, y).pvalue)
        w_p = 1.0 if np.all(d == 0) else float(stats.wilcoxon(x, y).pvalue)
    return {"metric": metric, "n_users": n,
            "mean_a": float(x.mean()) if n else float("nan"), "mean_b": float(y.mean()) if n else float("nan"),
            "diff": float(d.mean()) if n else float("nan"), "t_test_p": t_p, "wilcoxon_p": w_p,
            "n_left_out": int(len(both) - n)}


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the order given (NaN stays NaN and does not count in m)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = len(idx)
    if m == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out


def best_against_others(values: Mapping[str, pd.Series], metric: str = "", lower_is_better: bool = False,
                        best=None) -> pd.DataFrame:
    """The paired tests of the best method against each other one.

    Parameters
    ----------
    values : mapping of str to pandas.Series
        Each method's per-user values, indexed alike (the same user, or the same (seed, user), under the same
        key), NaN where a user is skipped.
    metric : str
        The metric's name, carried into the rows.
    lower_is_better : bool
        The best method is the one with the lowest mean (an error rate) instead of the highest.
    best : str, optional
        The best method, when the caller ranks the methods otherwise (e.g. by the mean over seeds of the
        per-seed means); default: the best mean of ``values``.

    Returns
    -------
    pandas.DataFrame
        One row per method: ``method``, ``best`` (the best method's name), ``is_best``, and for the others the
        fields of :func:`paired_test` with ``a`` the other method and ``b`` the best one (``diff`` < 0: below
        the best on a higher-is-better metric); the best method's row has NaN there. No rows when no method
        has a value.
    """
    means = {name: float(np.nanmean(s.to_numpy(dtype=float))) if np.isfinite(s.to_numpy(dtype=float)).any()
             else float("nan") for name, s in values.items()}
    scored = {k: v for k, v in means.items() if np.isfinite(v)}
    if not scored:
        return pd.DataFrame(columns=["method", "best", "is_best", *PAIRED_FIELDS])
    if best is None:
        best = (min if lower_is_better else max)(scored, key=scored.get)
    elif best not in values:
        raise KeyError(f"best method {best!r} has no values")
    rows = []
    for name, s in values.items():
        row = {"method": name, "best": best, "is_best": name == best}
        if name == best:
            row.update({f: (metric if f == "metric" else float("nan")) for f in PAIRED_FIELDS})
        else:
            row.update(paired_test(s, values[best], metric=metric))
        rows.append(row)
    return pd.DataFrame(rows)
