"""What a result's key records of its model's parameters, and the migrations that keep stored keys valid.

A cell's store key hashes its configuration together with the defaults of every model parameter the cell
does not set, so that a result computed before a default changed is never read as a result of the new
default. Two kinds of parameter were added to models after results of theirs were computed and shipped;
the tables below name them, so that those results keep their keys. The models themselves know nothing of
the store: this module is the one place that does.

- :data:`LATE_FEATURES`: a switch whose off value computes exactly what the model computed before the
  feature existed. While it is off, the switch and its other parameters stay out of the key.
- :data:`KEY_NEUTRAL`: a parameter whose default is *not* the old behaviour, with the value that is. A
  cell that sets it to that value keeps the key it had before; one that relies on the new default gets a
  new key.
- :data:`CHANGED_DEFAULTS`: a parameter whose default changed, with its old default. A cell that sets it to
  the old default keeps the key it had when it relied on that default; one that relies on the new default
  gets a new key.
- :data:`FASTER_DEFAULTS`: a parameter whose default became a faster form of the same model (a
  :data:`LATE_FEATURES` switch whose off value is the slower form), with the form the shipped results were
  computed with. It keys as :data:`CHANGED_DEFAULTS` does, and every reproduction sets it to that form
  (:func:`shipped_forms`), so that its shipped cells keep their keys and their bits.
- :data:`GUARDED_DEFAULTS`: a parameter whose default became a guarded form of the same fit, which computes the
  shipped form's bits wherever its guard does not act, with the form the shipped results were computed with. It
  keys and ships as :data:`FASTER_DEFAULTS` does.
- :data:`READ_ONLY_WHEN`: a parameter that only some values of other parameters read (an option of one
  solver; :data:`SET`: any value but ``None``). While none of them holds, the parameter stays out of the key.

A new parameter of a model whose results ship makes every shipped cell of that model stale unless it is
declared here (``tests/test_shipped.py`` says which reproductions to regenerate).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LATE_FEATURES", "KEY_NEUTRAL", "CHANGED_DEFAULTS", "FASTER_DEFAULTS", "GUARDED_DEFAULTS", "READ_ONLY_WHEN",
           "SET", "key_defaults", "key_params", "neutral_params", "shipped_forms", "unread_params"]

#: The item-mean offset (:class:`cofiviz.models.prior.ItemPriorParams`): off at ``item_prior`` 0
_ITEM_PRIOR = {"item_prior": (0.0, ("prior_damping",))}

#: The Gaussian processes' hyper-parameters learned by evidence (:mod:`cofiviz.models.gp`): off when fixed
_EVIDENCE = {"hyperparameters": ("fixed", ("evidence_users", "evidence_iter"))}

#: model name -> ``{switch: (off value, the switch's other parameters)}``
LATE_FEATURES: dict[str, dict[str, tuple]] = {
    "bilinear": _ITEM_PRIOR,
    "cgpor": _EVIDENCE,
    "cgpr": _EVIDENCE,
    "gpr": _EVIDENCE,
    "gapfm": _ITEM_PRIOR,
    "llorma": _ITEM_PRIOR,
    "mmmf": _ITEM_PRIOR,
    # SGD in 32-bit floats, ALS by conjugate gradient, SGD's loss seen during the epoch
    # (:mod:`cofiviz.models.regsvd`): float64, the Cholesky solves and a pass after the epoch are what it computed
    # before
    "regsvd": {"dtype": ("float64", ()), "als_solve": ("cholesky", ("cg_steps",)), "sgd_loss": ("after", ())},
    "svdpp": {"sgd_loss": ("after", ())},
    "wlt": _ITEM_PRIOR,
    # where the NDCG / ERU assignment starts (:mod:`cofiviz.models.cofirank`): "scores" is what it computed before
    "cofirank": {"assignment_start": ("scores", ()), "reg_users_max": (None, ())},
    # steps halved after a step that raised the objective (:class:`cofiviz.models._local.PairwiseFactorModel`):
    # fixed steps are what they computed before
    "gcr": {"step_control": ("fixed", ())},
    "lcr": {"step_control": ("fixed", ())},
}

#: model name -> ``{parameter: the value that computes what the model computed before the parameter existed}``
#: (CofiRank's ``reg_users`` scales λ with the number of users; ``None`` is the paper's unscaled λ; ``reg_scaled``
#: names the phases it scales, both before the user phase kept its λ)
KEY_NEUTRAL: dict[str, dict[str, Any]] = {
    "cofirank": {"reg_users": None, "reg_scaled": "both"},
    # the item-mean offset, off before these models' defaults turned it on (a late feature of theirs)
    "gapfm": {"item_prior": 0.0},
    "mmmf": {"item_prior": 0.0},
    "wlt": {"item_prior": 0.0},
    "bilinear": {"item_prior": 0.0},
    # hyper-parameters learned by evidence, GPOR's default; fixed is what it computed before
    "gpor": {"hyperparameters": "fixed"},
}

#: model name -> ``{parameter: its old default}``: the defaults that were changed so that each ranking model's
#: defaults are level with the damped item mean on MovieLens 100K's LCR-protocol splits (WLT's penalty: and above
#: it at Netflix size, where its unpenalised weights fall below it)
CHANGED_DEFAULTS: dict[str, dict[str, Any]] = {
    "gcr": {"item_prior": 0.0},
    "lcr": {"item_prior": 0.0},
    "wlt": {"reg": 0.0},
}

#: model name -> ``{parameter: the form its shipped cells were computed with}``: defaults that became a faster form
#: of the same model, which ranks as the slower one does (``benchmarks/bench_forms.py``); each is a
#: :data:`LATE_FEATURES` switch whose off value is that form
FASTER_DEFAULTS: dict[str, dict[str, Any]] = {
    "regsvd": {"dtype": "float64", "als_solve": "cholesky", "sgd_loss": "after"},
    "svdpp": {"sgd_loss": "after"},
    "cofirank": {"assignment_start": "scores"},
}

#: model name -> ``{parameter: the form its shipped cells were computed with}``: defaults that became a guarded form
#: of the same fit, the shipped form to the bit while the guard does not act (GCR's and LCR's steps halved after a
#: step that raised the objective, which their default, paper and monitor fits on MovieLens 100K never meet;
#: CofiRank's λ scaling capped at ``reg_users_max`` users, which no split of MovieLens 100K reaches); each is a
#: :data:`LATE_FEATURES` switch whose off value is that form
GUARDED_DEFAULTS: dict[str, dict[str, Any]] = {
    "gcr": {"step_control": "fixed"},
    "lcr": {"step_control": "fixed"},
    "cofirank": {"reg_users_max": None},
}



class _Set:
    """The value of a :data:`READ_ONLY_WHEN` rule that holds for any value but ``None``."""

    def __repr__(self) -> str:
        return "SET"


#: in a :data:`READ_ONLY_WHEN` rule: the parameter is read while the deciding one holds any value but ``None``
SET = _Set()

#: model name -> ``{parameter: (the parameter that decides, the value under which it is read)}``, or a list of such
#: pairs when any of them makes it read
READ_ONLY_WHEN: dict[str, dict[str, tuple[str, Any] | list[tuple[str, Any]]]] = {
    "regsvd": {"reg_weighting": ("solver", "als"), "als_solve": ("solver", "als"), "cg_steps": ("als_solve", "cg"),
               "sgd_loss": ("solver", "sgd"), "dtype": [("solver", "sgd"), ("als_solve", "cg")]},
    "gpor": {"evidence_users": ("hyperparameters", "evidence"), "evidence_iter": ("hyperparameters", "evidence")},
    "cofirank": {"assignment_start": [("loss", "ndcg"), ("loss", "eru")], "reg_scaled": ("reg_users", SET),
                 "reg_users_max": ("reg_users", SET)},
    "gcr": {"step_control": ("solver", "gd")},
    "lcr": {"step_control": ("solver", "gd")},
}


def unread_params(klass, params: dict) -> set:
    """The parameters of :data:`READ_ONLY_WHEN` that ``params`` (with the defaults) leaves unread: those for which
    every deciding parameter has another value or is unread itself (an option of an option)."""
    rules = {p: [rule] if isinstance(rule, tuple) else list(rule)
             for p, rule in READ_ONLY_WHEN.get(klass.model_name(), {}).items()}
    unread: set = set()
    while True:
        more = {p for p, alternatives in rules.items()
                if all(other in unread or not _holds(params.get(other, klass.param[other].default), value)
                       for other, value in alternatives)} - unread
        if not more:
            return unread
        unread |= more


def _holds(value, rule) -> bool:
    """Whether a deciding parameter's ``value`` makes a :data:`READ_ONLY_WHEN` rule's parameter read."""
    return value is not None if rule is SET else value == rule


def _same(value, neutral) -> bool:
    """Whether a parameter value is its neutral value (``None`` only by identity)."""
    return value is None if neutral is None else (value is not None and value == neutral)


def key_defaults(klass, params: dict) -> dict:
    """The defaults of the parameters ``params`` does not set, as a result's key records them.

    Every parameter's default counts, except those of a :data:`LATE_FEATURES` switch that is off and those
    :data:`READ_ONLY_WHEN` says are unread.

    Parameters
    ----------
    klass : type of :class:`cofiviz.models.Model`
    params : dict
        The parameters the cell sets.
    """
    out = {p: klass.param[p].default for p in klass.param_names() if p not in params}
    out.update({p: old for p, old in _changed(klass).items() if p in params and _same(params[p], old)})
    for switch, (off, others) in LATE_FEATURES.get(klass.model_name(), {}).items():
        if params.get(switch, klass.param[switch].default) == off:
            for p in (switch, *others):
                out.pop(p, None)
    for p in unread_params(klass, params):
        out.pop(p, None)
    return out


def key_params(klass, params: dict) -> dict:
    """``params`` as a result's key records them: without the :data:`KEY_NEUTRAL` ones at their neutral value
    and the :data:`CHANGED_DEFAULTS` ones at their old default (which :func:`key_defaults` records), and
    without those :data:`READ_ONLY_WHEN` says are unread."""
    neutral, unread = neutral_params(klass), unread_params(klass, params)
    return {k: v for k, v in params.items() if not (k in neutral and _same(v, neutral[k])) and k not in unread}


def _changed(klass) -> dict:
    """The old defaults of ``klass``'s parameters: :data:`CHANGED_DEFAULTS`, :data:`FASTER_DEFAULTS` and
    :data:`GUARDED_DEFAULTS`."""
    name = klass.model_name()
    return {**CHANGED_DEFAULTS.get(name, {}), **FASTER_DEFAULTS.get(name, {}), **GUARDED_DEFAULTS.get(name, {})}


def neutral_params(klass) -> dict:
    """The values that compute what a cell keyed without the parameter computed: the :data:`KEY_NEUTRAL` values
    and the old defaults (:data:`CHANGED_DEFAULTS`, :data:`FASTER_DEFAULTS`, :data:`GUARDED_DEFAULTS`) of ``klass``'s
    parameters (``{}`` when it has none)."""
    return {**KEY_NEUTRAL.get(klass.model_name(), {}), **_changed(klass)}


def shipped_forms(model: str) -> dict:
    """The forms the shipped results of ``model`` (a registry name) were computed with, where its defaults have since
    become faster or guarded forms of the same model (:data:`FASTER_DEFAULTS`, :data:`GUARDED_DEFAULTS`): what a
    reproduction sets unless its method sets the parameter itself."""
    return {**FASTER_DEFAULTS.get(model, {}), **GUARDED_DEFAULTS.get(model, {})}
