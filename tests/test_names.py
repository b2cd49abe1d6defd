"""How a name a user types is read: one rule for models, losses, tie rules and reproductions."""

import pytest

from cofiviz.util.errors import ParameterError, named
from cofiviz.losses.listwise import pl_ties_code
from cofiviz.losses.partition import listwise_ties_code
from cofiviz.losses.surrogates import surrogate_code
from cofiviz.losses.ties import tie_code
from cofiviz.models.registry import get_model_class
from cofiviz.reproductions import get


def test_case_spaces_and_dashes_do_not_matter_and_aliases_are_read_the_same_way():
    names = ("rao_kupper", "davidson")
    assert named(" Rao-Kupper ", names, "tie model") == "rao_kupper"
    assert named("rao kupper", names, "tie model") == "rao_kupper"
    assert named("Log[M]", ("log_m",), "loss", aliases={"log[m]": "log_m"}) == "log_m"
    with pytest.raises(ParameterError, match=r"unknown tie model 'bradley'; valid: rao_kupper, davidson"):
        named("bradley", names, "tie model")
    with pytest.raises(ParameterError, match=r"unknown tie model 3; only these"):
        named(3, names, "tie model", valid="only these")


def test_every_reader_of_a_name_follows_the_rule():
    assert tie_code("Davidson") == 1 and pl_ties_code(" EFRON") == 1 and listwise_ties_code("Partition") == 2
    assert surrogate_code("Log[A]") == surrogate_code("log-a")
    assert get_model_class(" CofiRank ").__name__ == "CofiRank"
    assert get("LCR Figures").name == "lcr-figures"
    for call, what in ((tie_code, "tie model"), (pl_ties_code, "ties treatment of the Plackett-Luce loss"),
                       (listwise_ties_code, "listwise ties treatment"), (surrogate_code, "pairwise loss"),
                       (get_model_class, "model"), (get, "reproduction")):
        with pytest.raises(ParameterError, match=f"unknown {what} 'nope'; (valid|available)"):
            call("nope")
