"""Every built-in metric family's per-position terms add up to the value its kernel computes, ties included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cofiviz import metrics as M
from cofiviz.util.errors import ParameterError
from cofiviz.metrics.family import Family
from cofiviz.metrics.table import family as family_of

NAMES = ["ndcg", "ndcg@3", "ap", "ap@3", "gap", "gap@3", "p@3", "mrr", "eru", "eru@3", "neru", "neru@3", "gp@3",
         "gr@3", "err", "err@3"]

lists = st.integers(0, 9).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 5), min_size=n, max_size=n),
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n, max_size=n)))   # few scores: many ties


@settings(max_examples=150, deadline=None)
@given(lists, st.sampled_from([1, 3, 4]))
def test_the_terms_add_up_to_the_kernels_value(pair, threshold):
    y, s = pair
    for name in NAMES:
        t = M.position_terms(y, s, name, threshold=threshold, ymax=5)
        assert len(t.terms) == len(y)
        assert t.order.tolist() == M.rank_order(y, s).tolist()
        expected = M.score_lists([0, len(y)], y, s, [name], threshold=threshold, ymax=5)[name][0]
        assert t.value == expected or (np.isnan(t.value) and np.isnan(expected))
        if np.isnan(expected):
            assert np.isnan(t.terms).all(), (name, t.terms)
        else:
            assert not np.isnan(t.terms).any(), (name, t.terms)
            assert np.isclose(t.terms.sum(), expected, rtol=1e-12, atol=1e-12), (name, y, s, t.terms, expected)


def test_a_worked_list():
    # ranked grades 3, 0, 1 (scores already in order): NDCG's terms are the gains over log2(1 + p), over IDCG
    t = M.position_terms([3, 0, 1], [0.9, 0.5, 0.1], "ndcg")
    idcg = 7.0 + 1.0 / np.log2(3.0)
    assert np.allclose(t.terms, [7.0 / idcg, 0.0, (1.0 / 2.0) / idcg])
    assert t.parts["idcg"] == pytest.approx(idcg)
    # AP at threshold 1: relevant at positions 1 and 3, P@1 = 1 and P@3 = 2/3, over 2 relevant
    ap = M.position_terms([3, 0, 1], [0.9, 0.5, 0.1], "ap", threshold=1)
    assert np.allclose(ap.terms, [0.5, 0.0, 1.0 / 3.0]) and ap.value == pytest.approx(5.0 / 6.0)


def test_a_family_without_terms_says_so():
    fam = Family("toyterms", "none", family_of("mrr").kernel, lambda bt, o: (o.threshold,))
    M.register(fam)
    try:
        with pytest.raises(ParameterError, match="toyterms.*no per-position terms"):
            M.position_terms([1, 0], [0.2, 0.1], "toyterms")
    finally:
        M.unregister("toyterms")
