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
- :data:`READ_ONLY_WHEN`: a parameter that only one value of another parameter reads (an option of one
  solver). While the other parameter has another value, the parameter stays out of the key.

A new parameter of a model whose results ship makes every shipped cell of that model stale unless it is
declared here (``tests/test_shipped.py`` says which reproductions to regenerate).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LATE_FEATURES", "KEY_NEUTRAL", "CHANGED_DEFAULTS", "READ_ONLY_WHEN", "key_defaults", "key_params",
           "neutral_params"]

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
    # SGD in 32-bit floats and ALS by conjugate gradient (:mod:`cofiviz.models.regsvd`): float64 and the Cholesky
    # solves are what it computed before
    "regsvd": {"dtype": ("float64", ()), "als_solve": ("cholesky", ("cg_steps",))},
    "wlt": _ITEM_PRIOR,
    # where the NDCG / ERU assignment starts (:mod:`cofiviz.models.cofirank`): "scores" is what it computed before
    "cofirank": {"assignment_start": ("scores", ())},
}

#: model name -> ``{parameter: the value that computes what the model computed before the parameter existed}``
#: (CofiRank's ``reg_users`` scales λ with the number of users; ``None`` is the paper's unscaled λ)
KEY_NEUTRAL: dict[str, dict[str, Any]] = {
    "cofirank": {"reg_users": None},
    # the item-mean offset, off before these models' defaults turned it on (a late feature of theirs)
    "gapfm": {"item_prior": 0.0},
    "mmmf": {"item_prior": 0.0},
    "wlt": {"item_prior": 0.0},
    "bilinear": {"item_prior": 0.0},
    # hyper-parameters learned by evidence, GPOR's default; fixed is what it computed before
    "gpor": {"hyperparameters": "fixed"},
}

#: model name -> ``{parameter: its old default}``: the defaults that were changed so that each ranking model's
#: defaults are level with the damped item mean on MovieLens 100K's LCR-protocol splits
CHANGED_DEFAULTS: dict[str, dict[str, Any]] = {
    "gcr": {"item_prior": 0.0},
    "lcr": {"item_prior": 0.0},
}


#: model name -> ``{parameter: (the parameter that decides, the value under which it is read)}``
READ_ONLY_WHEN: dict[str, dict[str, tuple[str, Any]]] = {
    "regsvd": {"reg_weighting": ("solver", "als"), "als_solve": ("solver", "als"), "cg_steps": ("als_solve", "cg")},
    "gpor": {"evidence_users": ("hyperparameters", "evidence"), "evidence_iter": ("hyperparameters", "evidence")},
}


def _unread(klass, params: dict) -> set:
    """The parameters of :data:`READ_ONLY_WHEN` that ``params`` (with the defaults) leaves unread: those whose
    deciding parameter has another value, or is unread itself (an option of an option)."""
    rules = READ_ONLY_WHEN.get(klass.model_name(), {})
    unread = {p for p, (other, value) in rules.items() if params.get(other, klass.param[other].default) != value}
    while True:
        more = {p for p, (other, _) in rules.items() if other in unread} - unread
        if not more:
            return unread
        unread |= more


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
    out.update({p: old for p, old in CHANGED_DEFAULTS.get(klass.model_name(), {}).items()
                if p in params and _same(params[p], old)})
    for switch, (off, others) in LATE_FEATURES.get(klass.model_name(), {}).items():
        if params.get(switch, klass.param[switch].default) == off:
            for p in (switch, *others):
                out.pop(p, None)
    for p in _unread(klass, params):
        out.pop(p, None)
    return out


def key_params(klass, params: dict) -> dict:
    """``params`` as a result's key records them: without the :data:`KEY_NEUTRAL` ones at their neutral value
    and the :data:`CHANGED_DEFAULTS` ones at their old default (which :func:`key_defaults` records), and
    without those :data:`READ_ONLY_WHEN` says are unread."""
    neutral, unread = neutral_params(klass), _unread(klass, params)
    return {k: v for k, v in params.items() if not (k in neutral and _same(v, neutral[k])) and k not in unread}


def neutral_params(klass) -> dict:
    """The values that compute what a cell keyed without the parameter computed: the :data:`KEY_NEUTRAL` values
    and the :data:`CHANGED_DEFAULTS` old defaults of ``klass``'s parameters (``{}`` when it has none)."""
    name = klass.model_name()
    return {**KEY_NEUTRAL.get(name, {}), **CHANGED_DEFAULTS.get(name, {})}
