"""What a training run did, in plain sentences: why it ended, and what its curves show.

The monitor's worker sends two small records: :func:`list_sizes` once the data is split (how many items
each user's validation and test lists hold) and :func:`summarize` once the fit has ended (how it ended,
the best iteration on validation and whether it was put back). :func:`ending` and :func:`curve_notes`
turn them, with the table of iterations, into the sentences the page shows beside the plots. They are
plain functions of their inputs, so every sentence is tested without a browser.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["list_sizes", "summarize", "ending", "curve_notes", "OVERFIT_AFTER"]

#: iterations without a better validation score after which a falling validation curve is called overfitting
OVERFIT_AFTER = 5


def _mean_list(ratings) -> float:
    """Mean number of items per user that has any, in ``ratings`` (0 when it is empty or None)."""
    if ratings is None or len(ratings) == 0:
        return 0.0
    counts = np.bincount(ratings.users, minlength=ratings.n_users)
    return float(counts[counts > 0].mean())


def list_sizes(split) -> dict:
    """How long the lists are that validation and test rank, per user on average.

    Returns
    -------
    dict
        ``valid`` and ``test``: mean items per user in the validation part and in the test candidates.
    """
    return {"valid": _mean_list(split.valid), "test": _mean_list(split.candidates("test"))}


def summarize(model, stopped: bool) -> dict:
    """How the fit of ``model`` ended, as plain values.

    Follows the order of the epoch loop of :meth:`cofiviz.models.Model.fit`: a stop asked for by a callback
    (``stopped``: the visitor's Stop, or a closed session) keeps the current iterate; otherwise the patience,
    then the model's convergence test, then ``max_iter`` end the loop, and the best iterate on validation is
    put back when it is not the last.

    Returns
    -------
    dict
        ``how`` (``"stopped"``, ``"early"``, ``"converged"``, ``"max_iter"`` or ``"one_pass"``), ``iterations``,
        ``best_iteration`` (None without validation or patience), ``restored`` (bool), ``patience``,
        ``valid_metric`` and ``reason`` (the model's own ``stopped_reason_``).
    """
    n = len(model.history_)
    best = model.best_iteration_
    patience = int(getattr(model, "patience", 0) or 0)
    if stopped:
        how = "stopped"
    elif not model.iterative:
        how = "one_pass"
    elif best is not None and patience > 0 and n - best >= patience:
        how = "early"
    elif n < model.max_iter:
        how = "converged"
    else:
        how = "max_iter"
    return {"how": how, "iterations": n, "best_iteration": None if best is None else int(best),
            "restored": bool(best is not None and best != n and not stopped), "patience": patience,
            "valid_metric": model.valid_metric, "reason": model.stopped_reason_}


def _it(n: int) -> str:
    return f"{n} iteration" + ("" if n == 1 else "s")


def ending(summary: dict) -> str:
    """One or two plain sentences saying why the run ended and which iterate the model keeps."""
    if "text" in summary:             # a run that ended before or outside the fit: the worker's own words
        return summary["text"]
    how, n = summary["how"], summary["iterations"]
    metric = summary.get("valid_metric", "ndcg@10").upper()
    if how == "stopped":
        return (f"Stopped after iteration {n}, as asked. The model keeps that iteration: it puts back its best "
                "iterate only when it ends a run by itself.")
    if how == "one_pass":
        return "Fitted in one pass: this model does not iterate."
    text = {"early": f"Stopped early after iteration {n}: validation {metric} had not improved for "
                     f"{_it(summary['patience'])} (the patience).",
            "converged": f"Converged after iteration {n}: the training loss improved by less than the tolerance "
                         "(tol).",
            "max_iter": f"Ran the {_it(n)} Max iter allows."}[how]
    if summary.get("restored"):
        text += (f" The model was put back to iteration {summary['best_iteration']} (the dashed line), the best "
                 "on validation: that is the model a user of it would get.")
    return text


def _at(frame: pd.DataFrame, iteration: int, column: str) -> float:
    return float(frame.loc[frame["iteration"] == iteration, column].iloc[0])


def curve_notes(frame: pd.DataFrame, sizes: dict | None, metric: str = "ndcg@10",
                best: int | None = None) -> list[str]:
    """The sentences that explain the curves drawn so far.

    Parameters
    ----------
    frame : DataFrame
        The run's iterations (the monitor's columns: ``iteration``, ``train_<metric>``, ``valid_<metric>``,
        ``test_<metric>``; NaN in iterations that were not scored).
    sizes : dict or None
        :func:`list_sizes` of the run's split.
    metric : str
        The metric the sentences speak of.
    best : int, optional
        The iteration the fit found best on validation (:func:`summarize`'s ``best_iteration``, scored every
        iteration); the sentences take it as the turning point. Without it, the best scored iteration is.

    Returns
    -------
    list of str
        Why validation and test differ in height (once both are scored); and, once the validation score has
        not improved for :data:`OVERFIT_AFTER` scored iterations while the training score rose, that the
        model overfits, with the numbers.
    """
    notes = []
    name = metric.upper()
    cols = [f"{p}_{metric}" for p in ("train", "valid", "test")]
    if not set(cols) <= set(frame.columns):
        return notes
    scored = frame.dropna(subset=cols)
    if sizes and len(scored) and sizes.get("valid", 0) > 0:
        v, t = sizes["valid"], sizes["test"]
        relation = "shorter" if v < t else "longer"
        notes.append(
            f"Validation ranks each user's {v:.0f} validation ratings, test the user's {t:.0f} test ratings (means "
            f"per user). {name} of a {relation} list is {'higher' if v < t else 'lower'} for the same model, so "
            "the curves differ in height: compare how they move, not where they sit.")
    if len(scored) > OVERFIT_AFTER:
        train, valid = scored[cols[0]].to_numpy(), scored[cols[1]].to_numpy()
        its = scored["iteration"].to_numpy()
        # the first best; or the scored iteration nearest the fit's best (a throttled run scores some only)
        b = int(np.argmax(valid)) if best is None else int(np.argmin(np.abs(its - best)))
        last = len(valid) - 1
        if last - b >= OVERFIT_AFTER and train[last] > train[b] and valid[last] < valid[b]:
            tb, tl = _at(scored, its[b], cols[2]), _at(scored, its[last], cols[2])
            since = f"iteration {its[b]}" if best is None or its[b] == best else f"about iteration {best}"
            notes.append(
                f"Overfitting: since {since} the training {name} rose from {train[b]:.4f} to "
                f"{train[last]:.4f} while validation fell from {valid[b]:.4f} to {valid[last]:.4f} (test: "
                f"{tb:.4f} to {tl:.4f}). The model is learning its training ratings rather than what the users "
                "like; early stopping exists to keep the best iterate.")
    return notes
