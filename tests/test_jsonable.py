"""One conversion to plain JSON types, with a keyword for NaN and infinities."""

import hashlib
import json
import math

import numpy as np
import pytest

from cofiviz import ParameterError
from cofiviz.engine.experiment import cell_key
from cofiviz.util.jsonable import jsonable


def test_numpy_values_tuples_and_keys_become_plain_json_types():
    out = jsonable({1: np.int64(3), "f": np.float32(0.5), "b": np.bool_(True), "t": (1, (2, np.int32(3))),
                    "a": np.array([[1.0, 2.0], [3.0, 4.0]]), "s": np.str_("x"), "n": None})
    assert out == {"1": 3, "f": 0.5, "b": True, "t": [1, [2, 3]], "a": [[1.0, 2.0], [3.0, 4.0]], "s": "x", "n": None}
    assert type(out["1"]) is int and type(out["f"]) is float and type(out["b"]) is bool
    assert type(out["a"][0][0]) is float and type(out["t"][1][1]) is int


def test_other_objects_are_left_for_json_default():
    class Thing:
        def __str__(self):
            return "thing"

    t = Thing()
    assert jsonable([t])[0] is t
    assert json.dumps(jsonable({"x": t}), default=str) == '{"x": "thing"}'


def test_nonfinite_floats_are_kept_or_become_none():
    values = [np.float64("nan"), float("inf"), -np.inf, np.array([1.0, np.nan])]
    kept = jsonable(values)
    assert math.isnan(kept[0]) and kept[1] == math.inf and kept[2] == -math.inf and math.isnan(kept[3][1])
    assert jsonable(values, nonfinite="none") == [None, None, None, [1.0, None]]
    assert json.dumps(jsonable({"v": np.nan}, nonfinite="none")) == '{"v": null}'


def test_an_unknown_nonfinite_policy_is_a_parameter_error():
    with pytest.raises(ParameterError, match="nonfinite must be one of"):
        jsonable(1.0, nonfinite="drop")


def test_store_keys_hash_the_canonical_json_of_a_cell():
    config = {"model": "poprec", "params": {"seed": np.int64(0), "damping": np.float64(2.5)}, "metrics": ("ap",),
              "data": {"name": "movielens-100k"}, "threshold": None}
    text = ('{"cell":{"data":{"name":"movielens-100k"},"metrics":["ap"],"model":"poprec",'
            '"params":{"damping":2.5,"seed":0},"threshold":null},"cofiviz":"9.9","data_version":"v1"}')
    assert cell_key(config, "v1", version="9.9") == hashlib.sha256(text.encode()).hexdigest()[:20]
