"""``benchmarks/bench_peers.py`` runs every pair on a small slice of MovieLens 100K: cofiviz's side always, a peer's
side where that peer is installed (the peers are an optional extra, ``.[peers]``). Behaviour only: nothing here is
timed against a bound."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_peers  # noqa: E402

#: the distribution each pair's peer imports
PEER_MODULE = {"regsvd-sgd/surprise-svd": "surprise", "regsvd-sgd64/surprise-svd": "surprise",
               "regsvd-sgd/cornac-svd": "cornac", "svdpp/surprise-svdpp": "surprise",
               "nmf/surprise-nmf": "surprise", "regsvd-als/lenskit-biasedmf": "lenskit"}


@pytest.fixture(scope="module")
def rows():
    return bench_peers.run("movielens-100k", repeats=1, epochs=2, users=80, log=lambda line: None)


def test_every_pair_has_a_row_and_cofiviz_measured(rows):
    assert [r["pair"] for r in rows] == list(PEER_MODULE) + ["cofirank/authors"]
    for r in rows[:-1]:
        assert r["cofiviz_s"] > 0 and 0.0 < r["cofiviz_ndcg"] <= 1.0, r
        assert r["versions"]["cofiviz"]
    assert "cofirank-binary" in rows[-1]["skipped"]


def test_a_peer_is_measured_where_installed_and_skipped_by_name_where_not(rows):
    for r in rows[:-1]:
        if importlib.util.find_spec(PEER_MODULE[r["pair"]]) is None:
            assert r["skipped"].startswith("not installed") and "peer_s" not in r
        else:
            assert "skipped" not in r
            assert r["peer_s"] > 0 and math.isclose(r["ratio"], r["peer_s"] / r["cofiviz_s"])
            assert 0.0 < r["peer_ndcg"] <= 1.0


def test_json_rows_carry_the_documented_keys(tmp_path):
    out = tmp_path / "peers.json"
    bench_peers.main(["--data", "movielens-100k", "--users", "60", "--epochs", "1", "--repeats", "1",
                      "--pairs", "nmf/surprise-nmf", "--json", str(out)])
    (row,) = json.loads(out.read_text())
    keys = {"pair", "cofiviz_s", "cofiviz_ndcg"} | ({"skipped"} if "skipped" in row else
                                                    {"peer_s", "ratio", "peer_ndcg"})
    assert keys <= set(row)


def test_an_unknown_pair_is_refused_by_name():
    with pytest.raises(SystemExit, match="unknown pairs .*'nope'"):
        bench_peers.run("movielens-100k", names=["nope"], users=20)
