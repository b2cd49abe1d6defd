"""The check a reader runs under an exercise: right, not yet (with a hint), or not answered.

An exercise of the course puts its answer in one variable (``ndcg3 = ...``); the cell under the answer
calls :func:`check` with that variable and what it should be, computed from the library or the notebook's
data, never from the answer itself. The check prints one line and never raises, so that *Run All* goes
through a notebook whose exercises are not answered yet. The test suite reads :data:`RESULTS` to prove each
check right on the solution and wrong on a planted mistake.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["check", "Outcome", "RESULTS", "RIGHT", "WRONG", "UNANSWERED"]


class Outcome(str):
    """What :func:`check` returns: ``"right"``, ``"wrong"`` or ``"unanswered"``, which a notebook does not echo
    under the line the check printed."""

    def _ipython_display_(self):
        pass


RIGHT, WRONG, UNANSWERED = Outcome("right"), Outcome("wrong"), Outcome("unanswered")
#: the last outcome of every exercise checked in this kernel: ``{"1.1": "right", ...}``
RESULTS: dict[str, str] = {}


def _matches(answer: Any, expected: Any, rtol: float, atol: float) -> bool:
    """True when ``answer`` is ``expected``: text by its words (case and spaces aside), numbers and arrays to
    the tolerances, anything else by ``==``."""
    if isinstance(expected, str):
        return isinstance(answer, str) and " ".join(answer.lower().split()) == " ".join(expected.lower().split())
    if isinstance(expected, (bool, np.bool_)):
        return isinstance(answer, (bool, np.bool_)) and bool(answer) == bool(expected)
    if isinstance(expected, (dict, set, frozenset)):
        return answer == expected
    exp = np.asarray(expected)
    if exp.dtype.kind in "biufc":
        ans = np.asarray(answer)
        if ans.dtype.kind not in "biufc" or ans.shape != exp.shape:
            return False
        return bool(np.allclose(ans, exp, rtol=rtol, atol=atol))
    return bool(answer == expected)


def check(exercise: str, answer: Any, expected: Any = None, *, test: Callable[[Any], bool] | None = None,
          hint: str, right: str = "", rtol: float = 1e-6, atol: float = 1e-9, show: bool = True) -> Outcome:
    """Say whether ``answer`` answers exercise ``exercise``; returns :data:`RIGHT`, :data:`WRONG` or
    :data:`UNANSWERED` and records it in :data:`RESULTS`.

    Parameters
    ----------
    exercise : str
        The exercise's number as the notebook prints it (``"1.1"``).
    answer : object
        The reader's answer; ``...`` (the empty answer cell of the student edition) is not answered yet.
    expected : object, optional
        What the answer should be: a number or an array (equal within ``rtol``, ``atol`` and of the same
        shape), a text (the same words, case aside), or anything ``==`` compares.
    test : callable, optional
        Instead of ``expected``: a function of the answer that is True when it is right (for answers with
        more than one right form). An exception it raises counts as a wrong answer.
    hint : str
        What to look at again when the answer is wrong.
    right : str
        What to take away, said with a right answer.
    show : bool
        Print the outcome (the test suite's planted answers check silently).

    Raises
    ------
    ValueError
        Neither or both of ``expected`` and ``test`` are given.
    """
    if (expected is None) == (test is None):
        raise ValueError("check: give the expected answer or a test of it, not both")
    if answer is Ellipsis:
        outcome, line = UNANSWERED, (f"Exercise {exercise}: not answered yet. Replace the ... in the cell above "
                                     f"with your answer, run it, then run this check again.")
    else:
        try:
            ok = bool(test(answer)) if test is not None else _matches(answer, expected, rtol, atol)
            problem = ""
        except Exception as exc:          # a malformed answer is a wrong answer, not an error of the notebook
            ok, problem = False, f" ({type(exc).__name__}: {exc})"
        if ok:
            outcome, line = RIGHT, f"Exercise {exercise}: right." + (f" {right}" if right else "")
        else:
            outcome, line = WRONG, f"Exercise {exercise}: not yet{problem}. Hint: {hint}"
    RESULTS[str(exercise)] = str(outcome)
    if show:
        print(line)
    return outcome
