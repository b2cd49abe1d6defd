"""Every number a user types on a page: a value below, at and above each bound, and what the page then draws.

A page refuses nothing silently: a typed value outside its parameter's bounds is set to the nearest bound, the
input shows that bound and a note beside it says what was typed and what is used (``BoundedInput``). The pages
are built here as a server builds them, and every typed number input found in them is tried.
"""

from __future__ import annotations

import holoviews as hv
import panel as pn
import pytest

from cofiviz.dashboards._shared import BoundedInput, clamp
from cofiviz.dashboards.losses import LossShapes
from cofiviz.dashboards.monitor import TrainingMonitor
from cofiviz.dashboards.overview import DatasetOverview
from cofiviz.dashboards.playground import MetricPlayground
from cofiviz.dashboards.recommendations import Recommendations
from cofiviz.background.recommenders import RecommenderPool

TYPED = (pn.widgets.IntInput, pn.widgets.FloatInput, pn.widgets.EditableFloatSlider, pn.widgets.EditableIntSlider,
         pn.widgets.Spinner)


def _typed_inputs(layout) -> list:
    """The number inputs of ``layout``, without the text box inside each editable slider (a part of the slider)."""
    found = [w for w in layout.select(pn.widgets.Widget) if isinstance(w, TYPED)]
    parts = {id(w._value_edit) for w in found if hasattr(w, "_value_edit")}
    return [w for w in found if id(w) not in parts]


def _page(name: str, tmp_path):
    if name == "recommendations":   # a pool of no model: the page's inputs need none trained
        return Recommendations(models=RecommenderPool(tmp_path, names=[], quick=True))
    return {"losses": LossShapes, "playground": MetricPlayground, "overview": DatasetOverview,
            "monitor": TrainingMonitor}[name]()


def test_clamp_says_what_it_did():
    assert clamp(2.5, (1, 3), "x") == (2.5, None)
    assert clamp(3, (1, 3), "x") == (3, None)
    assert clamp(99, (-2.0, 3.0), "γ") == (3.0, "γ = 99 is above its upper bound 3; set to 3.")
    assert clamp(-50, (-2.0, 3.0), "γ") == (-2.0, "γ = -50 is below its lower bound -2; set to -2.")
    assert clamp(0, (1, None), "User") == (1, "User = 0 is below its lower bound 1; set to 1.")
    assert clamp(10 ** 9, (1, None), "User") == (10 ** 9, None)


@pytest.mark.parametrize("page", ["losses", "playground", "overview", "recommendations", "monitor"])
def test_every_typed_number_of_a_page_is_bounded_and_says_so_beside_the_input(page, tmp_path):
    viewer = _page(page, tmp_path)
    layout = viewer.__panel__()
    typed = _typed_inputs(layout)
    if page == "monitor":   # the model's own form: a value its class refuses is an error in the page, and no Run
        form = {id(w) for w in viewer._form_widgets.values()}
        typed = [w for w in typed if id(w) not in form]
        assert len(typed) == 3
    assert all(BoundedInput.of(w) is not None for w in typed), [w.name for w in typed if BoundedInput.of(w) is None]
    for w in typed:
        b = BoundedInput.of(w)
        lo, hi = b.bounds
        inside = (lo + hi) / 2 if lo is not None and hi is not None else (lo + 1 if lo is not None else hi - 1)
        inside = int(inside) if isinstance(w, pn.widgets.IntInput) else inside
        cases = ([(lo - 1, lo), (lo, lo)] if lo is not None else []) + ([(hi, hi), (hi + 50, hi)] if hi is not None else [])
        for value, expected in cases:
            w.value = inside                         # a valid value first: a note is about the last input only
            assert b.value == inside and not b.note.visible, (b.label, inside, b.note.object)
            w.value = value
            assert b.value == expected and w.value == expected, (b.label, value)
            if value == expected:
                assert not b.note.visible, (b.label, value, b.note.object)
            else:
                assert b.note.visible and f"{b.term} = {value:g}" in b.note.object and \
                    f"set to {expected:g}" in b.note.object, b.note.object
    assert typed or page in ("playground", "overview")   # the pages whose numbers are all sliders


def test_the_losses_page_draws_what_its_inputs_show():
    v = LossShapes()
    layout = v.__panel__()
    by_label = {BoundedInput.of(w).label: BoundedInput.of(w) for w in _typed_inputs(layout)}
    assert set(by_label) == {"γ (margin)", "Scale c", "θ (Rao–Kupper)", "ν (Davidson)"}
    gamma = by_label["γ (margin)"]
    gamma.widget.value = 99
    assert v.gamma == 3.0
    first = v._fig4.objects[0][()]                                # the plot as the page draws it now
    assert hv.Store.lookup_options("bokeh", first, "plot").kwargs["title"].endswith("γ = 3")   # the plot's title
    assert 3.0486 in v._fig4_table.object.select_dtypes("number").round(4).to_numpy()  # Log[M] at Δf = 0: log(1 + e³)
    theta = by_label["θ (Rao–Kupper)"]
    theta.widget.value = 1                                        # the page's own words: θ = 1 is Bradley–Terry
    assert v.theta == 1.0 and not theta.note.visible
    rk = v._ties_table.object[v._ties_table.object["model"] == "Rao–Kupper θ=1"]
    assert rk["P(tie)"].tolist() == [0.0, 0.0, 0.0]
    rk_plot = v._ties.objects[0][()]
    assert "Bradley–Terry" in hv.Store.lookup_options("bokeh", rk_plot, "plot").kwargs["title"]
    nu = by_label["ν (Davidson)"]
    nu.widget.value = 0
    dav = v._ties_table.object[v._ties_table.object["model"] == "Davidson ν=0"]
    assert dav["P(tie)"].tolist() == [0.0, 0.0, 0.0]
    assert dav["P(win)"].iloc[0] == 0.5


def test_the_note_is_made_at_its_first_message_and_reaches_the_page_beside_its_input():
    """A served page sends every pane it holds, hidden or not: the note is made when it first has something to say,
    and appears then under the input of a page already drawn."""
    m = TrainingMonitor()
    n = m._bounded["n"]
    box = n.__panel__()
    assert list(box.objects) == [n.widget] and n._note is None
    n.widget.value = 30                           # within the bounds: still nothing to say
    assert n._note is None and list(box.objects) == [n.widget]
    n.widget.value = 500
    assert list(box.objects) == [n.widget, n.note] and n.note.visible
    assert n.note.object == "N = 500 is above its upper bound 100; set to 100."
    n.widget.value = 40
    assert not n.note.visible and list(box.objects) == [n.widget, n.note]
    assert n.__panel__() is box                   # drawn again: the same column, note included


def test_the_monitor_explains_only_the_inputs_whose_label_does_not_say_it_all():
    """A tooltip is two models more in every session: N, the tuning budget and Tune have one, the inputs whose
    label says what they are (Data, Protocol, Model, Max iter) none."""
    m = TrainingMonitor()
    said = {w.name: w.description for w in m.controls().select(pn.widgets.Widget) if w.description}
    assert set(said) == {"N [1 … 100]", "Tune budget (s) [5 … 3600]", "Tune"}, said
    assert "training ratings per user" in said["N [1 … 100]"]
