"""Results store: atomic cells, skipping finished cells, never reading half-written results."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from cofiviz.util.errors import DataError
from cofiviz.engine.experiment import Experiment
from cofiviz.engine.store import ResultsStore

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 100, "n_items": 60, "density": 0.3}


def exp():
    return Experiment(models=["poprec", {"model": "itemmean", "params": {"damping": [1.0, 5.0]}}], data=DATA,
                      protocol={"name": "weak", "n_train": 4, "n_valid": 2, "min_test": 4}, seeds=[0, 1],
                      metrics=["ndcg@10", "ap"], per_user=True)


def test_round_trip_and_skip(tmp_path):
    store = ResultsStore(tmp_path / "s")
    e = exp()
    ran = []
    first = e.run(store=store, on_cell=lambda c, k, r: ran.append(k))
    assert len(ran) == len(e) == 6
    assert sorted(store.done_keys()) == sorted(k for _, k in e.keys())
    back = store.load()
    cols = ["cell", "part", "metric", "value"]
    key = lambda d: d[cols].sort_values(cols[:3]).reset_index(drop=True)
    pd.testing.assert_frame_equal(key(first.results), key(back.results))
    assert len(back.per_user) == len(first.per_user) and len(back.traces) == len(first.traces)
    ran.clear()
    again = e.run(store=store, on_cell=lambda c, k, r: ran.append(k))
    assert ran == []                                        # every cell skipped
    pd.testing.assert_frame_equal(key(again.results), key(first.results))
    m = store.manifest(store.done_keys()[0])
    assert m["config"]["protocol"] == "weak" and "data_version" in m and "cofiviz_version" in m


def test_write_is_idempotent(tmp_path):
    store = ResultsStore(tmp_path)
    e = exp()
    cell, key = e.keys()[0]
    res = e.run().results
    from cofiviz.engine.experiment import run_cell
    r = run_cell(cell, key)
    assert store.write(key, r, cell.config(), "v") is True
    mtime = (store.cells_dir / key / "manifest.json").stat().st_mtime_ns
    assert store.write(key, r, cell.config(), "v") is False
    assert (store.cells_dir / key / "manifest.json").stat().st_mtime_ns == mtime
    assert len(store.read(key).results) == len(r.results)
    assert res is not None


def test_half_written_cells_are_never_read(tmp_path):
    store = ResultsStore(tmp_path)
    e = exp()
    e.run(store=store)
    keys = store.done_keys()
    assert len(keys) == 6
    # 1. a stray temporary directory (an interrupted write) and stray temp files are ignored
    stray = store.tmp_dir / f"{keys[0]}.deadbeef.partial"
    stray.mkdir()
    (stray / "results.parquet").write_bytes(b"PAR1 garbage")
    (store.cells_dir / keys[1] / "results.parquet.tmp").write_bytes(b"junk")
    # 2. a truncated Parquet file in a finished cell
    victim = store.cells_dir / keys[2] / "results.parquet"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    # 3. a cell directory without a manifest (killed before the manifest was written)
    os.remove(store.cells_dir / keys[3] / "manifest.json")
    # 4. a manifest cut short
    mf = store.cells_dir / keys[4] / "manifest.json"
    mf.write_text(mf.read_text()[:40])
    # 5. same size, different bytes (bit rot): caught by the checksum
    victim2 = store.cells_dir / keys[5] / "traces.parquet"
    b = bytearray(victim2.read_bytes())
    b[len(b) // 2] ^= 0xFF
    victim2.write_bytes(bytes(b))

    done = store.done_keys()
    assert sorted(done) == [keys[0], keys[1]]
    for k in keys[2:]:
        with pytest.raises(DataError):
            store.read(k)
    assert set(store.load().results["cell"]) == {keys[0], keys[1]}
    # a repeated run recomputes exactly the damaged cells and repairs them
    ran = []
    e.run(store=store, on_cell=lambda c, k, r: ran.append(k))
    assert sorted(ran) == sorted(keys[2:])
    assert sorted(store.done_keys()) == sorted(keys)
    full = store.load().results
    assert full.groupby(["cell", "part", "metric"]).size().max() == 1
    assert full["cell"].nunique() == 6


def test_clean_and_delete(tmp_path):
    store = ResultsStore(tmp_path)
    (store.tmp_dir / "x.partial").mkdir()
    assert store.clean(older_than=-1) == 1
    e = exp()
    e.run(store=store)
    k = store.done_keys()[0]
    store.delete(k)
    assert k not in store.done_keys()
