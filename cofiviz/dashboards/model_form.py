"""A model's form: one widget per parameter, generated from its ``param`` declaration, and its checks."""

from __future__ import annotations

import panel as pn
import param

__all__ = ["bounded_label", "model_form_widgets", "check_param"]


def bounded_label(label: str, bounds) -> str:
    lo, hi = bounds
    return f"{label} [{'−∞' if lo is None else lo} … {'∞' if hi is None else hi}]"


def model_form_widgets(model_cls) -> dict:
    """One widget per model parameter, generated from its ``param`` declaration (type, default, bounds, doc).

    Numbers get free-entry inputs (so that an out-of-range value reaches the validation and its message
    instead of being silently clamped); the bounds are shown in the label.
    """
    widgets = {}
    for name in model_cls.param_names():
        p = model_cls.param[name]
        label = name
        bounds = getattr(p, "bounds", None)
        if bounds is not None and bounds != (None, None):
            label = bounded_label(name, bounds)
        desc = (p.doc or "").strip() or None
        if isinstance(p, param.Boolean):
            w = pn.widgets.Checkbox(label=label, value=bool(p.default))
        elif isinstance(p, param.Selector) and not isinstance(p, param.Boolean):
            objs = list(p.objects) if not isinstance(p.objects, dict) else list(p.objects.values())
            w = pn.widgets.Select(label=label, options=objs, value=p.default)
        elif isinstance(p, param.Integer):
            w = pn.widgets.IntInput(label=label, value=p.default)
        elif isinstance(p, param.Number):
            w = pn.widgets.FloatInput(label=label, value=p.default)
        else:
            w = pn.widgets.TextInput(label=label, value="" if p.default is None else str(p.default))
        w.description = desc
        widgets[name] = w
    return widgets


def check_param(model_cls, name: str, value) -> str | None:
    """A readable message when ``value`` is not valid for parameter ``name`` of ``model_cls``, else None."""
    p = model_cls.param[name]
    bounds = getattr(p, "bounds", None)
    if isinstance(p, param.Number) and value is None and not p.allow_None:
        return f"{name}: a number is required"
    if isinstance(p, param.Number) and bounds is not None and isinstance(value, (int, float)):
        lo, hi = bounds
        incl = getattr(p, "inclusive_bounds", (True, True))
        if lo is not None and (value < lo or (value == lo and not incl[0])):
            return f"{name} = {value} is below its lower bound {lo}"
        if hi is not None and (value > hi or (value == hi and not incl[1])):
            return f"{name} = {value} is above its upper bound {hi}"
    return None
