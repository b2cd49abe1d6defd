"""One registry of metric names (cofiviz.metrics.names) and the scorer's defaults (cofiviz.metrics.scorer)."""

import numpy as np
import pytest

from cofiviz import DataError, ParameterError, Ratings, protocols
from cofiviz.metrics import names, score_lists
from cofiviz.metrics.names import ZERO_ONE_ALIASES, check_metrics, lower_is_better, parse_metric
from cofiviz.metrics.scorer import default_threshold, mean_metrics, per_user_metrics, resolve_ymax


@pytest.mark.parametrize("alias", ["zero_one", "Zero-One", " zeroone ", "zero-one-error", "E01", "01"])
def test_every_zero_one_alias_is_the_canonical_lower_is_better_zero_one(alias):
    assert check_metrics([alias]) == ["zero_one"]
    assert lower_is_better(alias)
    with pytest.raises(ParameterError, match="zero_one_lists"):
        parse_metric(alias)


def test_list_metrics_are_higher_is_better_in_any_spelling():
    for form in names.METRIC_FORMS:
        name = form.replace("K", "3").upper()
        assert not lower_is_better(name)
        assert check_metrics([name]) == [parse_metric(name).name]
    assert not set(ZERO_ONE_ALIASES) & set(names.FAMILIES)


def test_score_lists_reports_each_metric_under_the_canonical_name_check_metrics_gives():
    forms = [f.replace("K", "2") for f in names.METRIC_FORMS]
    res = score_lists([0, 3, 5], [3.0, 0.0, 1.0, 5.0, 4.0], [0.9, 0.2, 0.4, 0.1, 0.3], [f.upper() for f in forms])
    assert list(res) == check_metrics(forms)


def test_an_unknown_name_lists_every_valid_form_and_zero_one():
    with pytest.raises(ParameterError, match=r"unknown metric 'accuracy'; valid forms: ndcg, .*gr@K.*; also zero_one"):
        check_metrics("ndcg@10,accuracy")
    with pytest.raises(ParameterError, match="no metric given; valid metrics: ndcg, .*zero_one"):
        check_metrics([])


class _ByRating:
    """Scores every (user, item) by a fixed per-item value."""

    def __init__(self, item_scores):
        self.item_scores = np.asarray(item_scores, dtype=float)

    def score(self, users, items):
        return self.item_scores[np.asarray(items)]


def test_per_user_metrics_take_any_spelling_and_need_train_for_zero_one():
    r = Ratings([0, 0, 0, 1, 1], [0, 1, 2, 0, 2], [5, 3, 1, 2, 4], user_ids=[0, 1], item_ids=[0, 1, 2])
    model = _ByRating([3.0, 2.0, 1.0])
    out = per_user_metrics(model, r, ["AP", "Zero-One"], train=r, threshold=4)
    assert list(out) == ["ap", "zero_one"]
    assert out["ap"].tolist() == [1.0, 0.5]
    with pytest.raises(DataError, match="zero_one needs the users' training ratings"):
        per_user_metrics(model, r, ["zero_one"])
    assert mean_metrics(model, r, "ap", threshold=4) == {"ap": 0.75}


def test_threshold_and_ymax_defaults():
    r = Ratings([0, 0, 1], [0, 1, 1], [5, 3, 4], user_ids=[0, 1], item_ids=[0, 1], scale=(1, 5))
    assert resolve_ymax(None, r) == 5 and resolve_ymax(3, r) == 3
    half = Ratings([0], [0], [1.5], user_ids=[0], item_ids=[0], scale=(0.5, 4.5))
    assert resolve_ymax(None, half) is None
    big = Ratings([0, 0, 1, 1, 2, 2] * 10, list(range(60)), np.arange(1, 61), user_ids=[0, 1, 2],
                  item_ids=range(60), scale=(1, 60))
    split = protocols.top_n(big, n_train=1, n_negatives=0, min_user_ratings=1, min_test=1, seed=0)
    assert default_threshold(split) == 5.0
    weak = protocols.weak_generalization(big, n_train=1, min_test=1, seed=0)
    assert default_threshold(weak) == 4.0
