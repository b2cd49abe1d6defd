"""Shipped results: written from a store, shown without computing, overridden by the user's store, recomputed
bit for bit by --verify, and stale keys detected.

The shipped files here are made from the quick reproductions on a small synthetic set in a temporary directory
(``COFIVIZ_SHIPPED``); the package's own shipped files are checked the same way in ``test_shipped_package``.
"""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import cpu_kernels

import cofiviz.reproductions as R
from cofiviz.engine.experiment import resolve_model
from cofiviz.reproductions import shipped as S
from cofiviz.engine.results import Results
from cofiviz.engine.store import ResultsStore

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 150, "n_items": 100, "density": 0.4}


def _ship(name, tmp_path, directory):
    """Compute the quick reproduction on DATA into a store and ship it into ``directory``."""
    store = tmp_path / f"computed-{name}"
    rep = R.reproduce(name, quick=True, store=store, html_path=tmp_path / f"{name}.html", data=DATA,
                      log=lambda m: None, shipped=False)
    st = R.status(name, quick=True, store=store, data=DATA, shipped=False)
    assert not st.pending
    reproduction = R.get(name)
    chosen = ({k for _, k, _ in st.cells} if reproduction.is_figures else
              {k for text in rep.table["cells"] for k in str(text).split(",") if k})
    provenance = S.ship(name, [(c, k) for c, k, _ in st.cells], ResultsStore(store), chosen,
                        command="test", seconds=1.5, data_version=st.version, traces=reproduction.is_figures,
                        directory=directory)
    return rep, st, provenance


@pytest.fixture
def shipped_dir(tmp_path, monkeypatch):
    directory = tmp_path / "shipped"
    monkeypatch.setenv("COFIVIZ_SHIPPED", str(directory))
    yield directory
    S._load.cache_clear()


@pytest.mark.parametrize("name", ["cofirank-table3", "lcr-figures"])
def test_shipped_results_show_without_computing(name, tmp_path, shipped_dir):
    rep, computed, provenance = _ship(name, tmp_path, shipped_dir)
    assert provenance["n_cells"] == len(computed.cells) and provenance["cofiviz_version"]
    assert {"date", "command", "machine", "seconds", "data_version"} <= set(provenance)
    assert (shipped_dir / f"{name}.results.parquet").is_file() and (shipped_dir / f"{name}.json").is_file()
    # an empty store of the user's: every cell is there at once, marked shipped, and the table is the same
    st = R.status(name, quick=True, store=tmp_path / "empty", data=DATA)
    assert not st.pending and st.n_shipped == len(st.cells)
    pd.testing.assert_frame_equal(st.table, computed.table)
    if name == "lcr-figures":
        assert len(st.results.traces) == len(computed.results.traces) > 0
    else:
        per_user = st.results.per_user
        assert len(per_user) and set(per_user["cell"]) <= {k for t in rep.table["cells"] for k in t.split(",") if k}
        # a reproduction run computes nothing and says where the cells come from
        again = R.reproduce(name, quick=True, store=tmp_path / "empty2", html_path=tmp_path / "again.html",
                            data=DATA, log=lambda m: None)
        pd.testing.assert_frame_equal(again.table, rep.table)
        assert not (tmp_path / "empty2" / "cells").exists() or not any((tmp_path / "empty2" / "cells").iterdir())
        assert any("shipped with cofiviz" in n for n in again.notes)
        assert "shipped with cofiviz" in (tmp_path / "again.html").read_text()


def test_a_cell_of_the_users_store_takes_precedence(tmp_path, shipped_dir):
    _ship("cofirank-table3", tmp_path, shipped_dir)
    st = R.status("cofirank-table3", quick=True, store=tmp_path / "mine", data=DATA)
    cell, key, _ = st.cells[0]
    shipped = st.results.results[st.results.results["cell"] == key]
    mine = Results(shipped.assign(value=shipped["value"] * 0 + 0.123456))
    ResultsStore(tmp_path / "mine").write(key, mine, cell.config(), st.version)
    after = R.status("cofirank-table3", quick=True, store=tmp_path / "mine", data=DATA)
    assert after.sources[key] == "computed" and after.n_shipped == len(after.cells) - 1
    values = after.results.results.loc[after.results.results["cell"] == key, "value"]
    assert (values == 0.123456).all()
    # without the shipped results only the user's cell is there
    alone = R.status("cofirank-table3", quick=True, store=tmp_path / "mine", data=DATA, shipped=False)
    assert len(alone.pending) == len(alone.cells) - 1


def test_verify_recomputes_to_the_last_bit_and_catches_a_changed_number(tmp_path, shipped_dir):
    _ship("cofirank-table3", tmp_path, shipped_dir)
    ok = R.verify_shipped("cofirank-table3", 2, seed=0)
    assert ok.ok and len(ok.keys) == 2, ok.mismatches
    # one number changed in the last bit: the verification names the cell and the column
    path = shipped_dir / "cofirank-table3.results.parquet"
    frame = pd.read_parquet(path)
    key = ok.keys[0]
    row = frame.index[(frame["cell"] == key) & (frame["part"] == "test")][0]
    frame.loc[row, "value"] = float(frame.loc[row, "value"]) + 2.0 ** -40
    frame.to_parquet(path, index=False)
    S._load.cache_clear()
    bad = R.verify_shipped("cofirank-table3", 1, seed=0)
    assert not bad.ok and key in bad.mismatches[0] and "results.value" in bad.mismatches[0]
    assert "DIFFERS" in bad.mismatches[0] and "part test" in bad.mismatches[0]


def test_cli_verify(tmp_path, shipped_dir):
    _ship("cofirank-table3", tmp_path, shipped_dir)
    cmd = [sys.executable, "-m", "cofiviz.cli", "reproduce", "cofirank-table3", "--verify", "2", "--seed", "1"]
    env = {**__import__("os").environ, "COFIVIZ_SHIPPED": str(shipped_dir)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "of 2 shipped cells recomputed, 2 agree to the last bit, 0 within tolerance, 0 differ" in out.stdout
    lines = [line for line in out.stdout.splitlines() if line.startswith("cell ")]
    assert len(lines) == 2 and all(line.endswith(": agrees to the last bit") for line in lines), out.stdout
    # one cell of each model, chosen without chance, and a JSON record of each cell
    each = subprocess.run([*cmd[:5], "--verify", "each-model", "--json", str(tmp_path / "v.json")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert each.returncode == 0, each.stderr
    record = __import__("json").loads((tmp_path / "v.json").read_text())
    models = {c["cell"].split("(")[0] for c in record["cells"]}
    assert record["ok"] and record["counts"]["exact"] == len(record["cells"]) == len(models) >= 2
    words = subprocess.run([*cmd[:5], "--verify", "some"], capture_output=True, text=True, env=env, timeout=600)
    assert words.returncode == 2 and "'each-model'" in words.stderr
    # nothing ships for this one in that directory: a clear error, exit 1
    none = subprocess.run([*cmd[:4], "lcr-figures", "--verify", "1"], capture_output=True, text=True, env=env,
                          timeout=600)
    assert none.returncode == 1 and "no shipped results of lcr-figures" in none.stderr
    usage = subprocess.run([*cmd[:5], "--verify", "0"], capture_output=True, text=True, env=env, timeout=600)
    assert usage.returncode == 2 and "--verify" in usage.stderr


def test_a_changed_default_leaves_the_shipped_cells_behind(tmp_path, shipped_dir, monkeypatch):
    _ship("cofirank-table3", tmp_path, shipped_dir)
    assert not R.status("cofirank-table3", quick=True, store=tmp_path / "u", data=DATA).pending
    # the code changes a default the cells rely on without regenerating: none of them is read as shipped
    assert S.stale(R.get("cofirank-table3"), quick=True, data=DATA) == ([], [])
    cofirank = resolve_model("cofirank")
    param = next(p for p in cofirank.param_names()
                 if isinstance(cofirank.param[p].default, float) and not isinstance(cofirank.param[p].default, bool)
                 and p not in R.get("cofirank-table3").methods[0].grids(True)[0])
    monkeypatch.setattr(cofirank.param[param], "default", cofirank.param[param].default + 0.5)
    st = R.status("cofirank-table3", quick=True, store=tmp_path / "u", data=DATA)
    assert st.pending and all(c.model == "cofirank" for c, _ in st.pending)
    missing, orphaned = S.stale(R.get("cofirank-table3"), quick=True, data=DATA)
    assert len(missing) == len(orphaned) == len(st.pending)


def test_comparisons_page_shows_shipped_cells_marked_as_such(tmp_path, shipped_dir):
    from cofiviz.dashboards.comparisons import Comparisons

    _ship("cofirank-table3", tmp_path, shipped_dir)
    c = Comparisons(store=str(tmp_path / "empty"), quick=True, data=DATA, reproduction="cofirank-table3")
    summary = c._summary.object
    assert "shipped with cofiviz" in summary and "Every cell is there" in summary, summary
    assert "cofirank-table3 --verify K" in c._notes.object
    assert not c._pending_select.options


@pytest.mark.browser
def test_comparisons_page_in_the_browser_with_nothing_computed(tmp_path, shipped_dir, chromium, page_errors):
    import json

    from conftest import PanelServer, screenshot, wait_for_canvases

    _ship("lcr-figures", tmp_path, shipped_dir)
    srv = PanelServer(["apps/comparisons.py"], env={"COFIVIZ_STORE": str(tmp_path / "empty"), "COFIVIZ_QUICK": "1",
                                                     "COFIVIZ_SHIPPED": str(shipped_dir),
                                                     "COFIVIZ_COMPARISONS_DATA": json.dumps(DATA)})
    try:
        page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1200}))
        page.goto(f"{srv.url}/comparisons", wait_until="domcontentloaded")
        page.get_by_text("shipped with cofiviz").first.wait_for(timeout=60_000)
        page.get_by_text("Every cell is there").first.wait_for(timeout=30_000)
        assert wait_for_canvases(page, 1) > 0
        screenshot(page, "comparisons-shipped")
        assert not any((tmp_path / "empty").rglob("manifest.json")), "the page computed a cell"
        assert page_errors.errors == [], page_errors.errors
        page.close()
    finally:
        srv.close()


# ------------------------------------------------------------------- what the package itself ships
#: the reproductions whose results ship inside the package
SHIPPING = sorted(p.name[:-len(".json")] for p in S.SHIPPED_DIR.glob("*.json"))
#: the suite recomputes, under each CPU kernel, each model's quickest shipped cell and the quickest cell of each
#: reproduction none of those is in (``shipped.covering_cells``), leaving out cells that took longer than this to
#: fit (the collaborative GPs' cells take 14 s and more; a model with no cell under it is fitted on small planted
#: data under each kernel instead, :func:`left_out_models`); ``cofiviz reproduce NAME --verify K`` checks any cell,
#: ``--verify each-model`` each model's quickest cell of one reproduction
VERIFY_FIT_SECONDS = 10.0


def test_the_package_ships_results_within_ten_megabytes():
    assert SHIPPING, f"nothing ships in {S.SHIPPED_DIR}"
    assert set(SHIPPING) <= set(R.REPRODUCTIONS)
    total = sum(p.stat().st_size for p in S.SHIPPED_DIR.iterdir())
    assert total <= 10 * 2 ** 20, f"{total / 2 ** 20:.1f} MB ship"


@pytest.mark.parametrize("name", SHIPPING)
def test_what_ships_is_current(name, monkeypatch):
    """Every cell key of the full reproduction ships and none other (a changed default, setting or version
    would leave them behind)."""
    monkeypatch.delenv("COFIVIZ_SHIPPED", raising=False)
    missing, orphaned = S.stale(R.get(name), directory=S.SHIPPED_DIR)
    assert missing == [] and orphaned == [], (f"{len(missing)} cells missing, {len(orphaned)} orphaned: run "
                                              f"`cofiviz reproduce {name} --ship`")
    shipped = S.load(name, S.SHIPPED_DIR)
    assert shipped.provenance["n_cells"] == len(shipped.keys)
    assert shipped.provenance["command"].startswith("cofiviz reproduce")


def _covering():
    return S.covering_cells({name: S.load(name, S.SHIPPED_DIR) for name in SHIPPING}, VERIFY_FIT_SECONDS)


def test_every_model_and_every_reproduction_is_recomputed():
    """The cells the suite recomputes are chosen without chance and cover every reproduction and every model
    that ships but those whose every cell fits for longer than the limit: each model in its quickest cell of all,
    and each reproduction in at least one cell."""
    chosen = _covering()
    assert chosen == _covering() and sorted(chosen) == SHIPPING
    assert all(chosen.values()), chosen
    models = {n: S.load(n).results.drop_duplicates("cell").set_index("cell")["model"] for n in SHIPPING}
    covered = {models[n][k] for n, keys in chosen.items() for k in keys}
    every = {m for n in SHIPPING for m in S.load(n).results["model"].unique()}
    left_out = set(left_out_models())          # fitted on small data instead
    assert covered == every - left_out and not covered & left_out, sorted(every - covered - left_out)
    fits = {n: S.load(n).results.groupby("cell")["fit_seconds"].max() for n in SHIPPING}
    for model in left_out:   # no cell of it fits within the limit
        assert min(fits[n][k] for n in SHIPPING for k in models[n][models[n] == model].index) > VERIFY_FIT_SECONDS
    for model in covered:    # the quickest cell of the model among all that ship is the one recomputed
        quickest = min(fits[n][k] for n in SHIPPING for k in models[n][models[n] == model].index)
        assert any(models[n][k] == model and fits[n][k] == quickest for n, keys in chosen.items() for k in keys)


@functools.cache
def left_out_models() -> list[str]:
    """The shipped models none of whose cells the covering recomputes (every one fits for longer than
    :data:`VERIFY_FIT_SECONDS`); read once, from the package's shipped results."""
    shipped = {n: S.load(n, S.SHIPPED_DIR) for n in SHIPPING}
    every = {m for sh in shipped.values() for m in sh.results["model"].unique()}
    chosen = S.covering_cells(shipped, VERIFY_FIT_SECONDS)
    covered = {m for n, keys in chosen.items() for m in shipped[n].results.set_index("cell").loc[keys, "model"]}
    return sorted(every - covered)


#: a left-out model fitted at its defaults on the contract's planted data: its scores of the test pairs, hashed
SMALL_FIT = """
import hashlib, sys
import numpy as np
sys.path.insert(0, {tests!r})
from contract import planted
from cofiviz.models import make_model
split = planted(seed=4)
for name in {names!r}:
    scores = make_model(name, seed=0).fit(split.train).score(split.test.users, split.test.items)
    print("SMALL", name, hashlib.sha1(np.ascontiguousarray(scores).tobytes()).hexdigest(), flush=True)
"""

VERIFY_EACH_MODEL = f"""
import json
from cofiviz.reproductions import shipped as S
names = {SHIPPING!r}
chosen = S.covering_cells({{name: S.load(name) for name in names}}, {VERIFY_FIT_SECONDS!r})
for name in names:
    result = S.verify(S.load(name), 0, keys=chosen[name])
    print(json.dumps({{"name": name, "ok": result.ok, "lines": [c.line() for c in result.cells],
                      "counts": result.counts()}}), flush=True)
"""


def test_the_models_left_out_of_the_covering_are_the_collaborative_gps():
    """Only the heavy models are fitted on small data instead of a shipped cell (a new model's quick cell is not)."""
    assert left_out_models() == ["cgpor", "cgpr"]


@pytest.fixture(scope="module")
def recomputed_under_each_kernel():
    """The covering cells of the shipped reproductions recomputed under each CPU switch this CPU can run, the
    switches side by side in single-threaded subprocesses: kernel -> reproduction -> its verification."""
    runnable = [n for n in cpu_kernels.SWITCHES if not cpu_kernels.missing_flags(n)]
    small = SMALL_FIT.format(tests=str(Path(__file__).resolve().parent), names=left_out_models())
    outputs = cpu_kernels.run_all(VERIFY_EACH_MODEL + small, runnable)
    found = {}
    for kernel, out in outputs.items():
        lines = out.splitlines()
        found[kernel] = {r["name"]: r for r in map(json.loads, (x for x in lines if not x.startswith("SMALL ")))}
        found[kernel]["small fits"] = dict(x.split()[1:] for x in lines if x.startswith("SMALL "))
    return found


@pytest.fixture(scope="module")
def small_fits_here() -> dict[str, str]:
    """:data:`SMALL_FIT` run under this CPU's own kernels, one thread as under the switches."""
    env = {**{k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")},
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", SMALL_FIT.format(tests=str(Path(__file__).resolve().parent),
                                                                 names=left_out_models())],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(x.split()[1:] for x in out.stdout.splitlines() if x.startswith("SMALL "))


@pytest.mark.parametrize("kernel", list(cpu_kernels.SWITCHES))
def test_what_ships_recomputes_under_each_cpu_kernel(kernel, recomputed_under_each_kernel, small_fits_here):
    """Each model's quickest shipped cell and a cell of every shipped reproduction, recomputed as on an AVX2 machine
    (OpenBLAS's Haswell kernel, NumPy without AVX-512) and on an AVX-512 one (SkylakeX): every metric, per-user value
    and curve to the last bit, training losses within their stated ulp (``reproductions/agreement.py``); the models
    with no quick shipped cell fitted on small planted data, their scores the same bits as under this CPU's own."""
    lacking = cpu_kernels.missing_flags(kernel)
    if lacking:
        pytest.skip(f"this CPU cannot run the {kernel} switch (it lacks {', '.join(sorted(lacking))})")
    found = dict(recomputed_under_each_kernel[kernel])
    small = found.pop("small fits")
    assert sorted(found) == SHIPPING
    bad = [line for r in found.values() for line in r["lines"] if "DIFFERS" in line]
    assert bad == [], "\n".join(bad)
    assert all(sum(r["counts"].values()) == len(r["lines"]) > 0 for r in found.values())
    # the models left out of the covering: their small fits give the same bits as under this CPU's kernels
    assert sorted(small) == left_out_models() and small == small_fits_here


def test_a_cell_shipped_before_a_key_neutral_parameter_existed_recomputes_at_its_neutral_value(monkeypatch):
    """A configuration written before CofiRank's reg_users (default: λ scaled with the users) existed lacks it, and
    keeps its key (``result_keys.KEY_NEUTRAL``). Verification recomputes such a cell at λ fixed (reg_users=None), as
    the key says and as the reproduction sets, not at the new default: the configuration of a shipped lcr-table2
    CofiRank cell, written as it was before the parameter existed, gives back the shipped cell and its numbers."""
    monkeypatch.delenv("COFIVIZ_SHIPPED", raising=False)
    shipped = S.load("lcr-table2", S.SHIPPED_DIR)
    res = shipped.results[shipped.results["model"] == "cofirank"]
    key = res.groupby("cell")["fit_seconds"].max().idxmin()
    config = shipped.config(key)
    assert config["params"]["reg_users"] is None
    before = {**config, "params": {k: v for k, v in config["params"].items() if k != "reg_users"}}
    written = shipped.config
    monkeypatch.setattr(shipped, "config", lambda k: before if k == key else written(k))
    version = shipped.provenance["data_version"]
    assert S.Cell.from_config(before).key(version) != key          # read plainly, it is the new default's cell
    cell = S._shipped_cell(shipped, key, version)
    assert cell.params["reg_users"] is None and cell.key(version) == key
    assert S.verify(shipped, 1, keys=[key]).ok


def test_cofirank_defaults_beat_the_damped_item_mean_in_the_shipped_tuning_table(tmp_path, monkeypatch):
    """CofiRank's defaults are the setting chosen in cofirank-tuned: its shipped table (recomputed bit for bit
    above) ranks the row at the defaults above the damped item mean at every N."""
    monkeypatch.delenv("COFIVIZ_SHIPPED", raising=False)
    table = R.status("cofirank-tuned", store=tmp_path).table
    ndcg = table[table["metric"] == "ndcg@10"].set_index(["method", "N"])["cofiviz"]
    for n in (10, 20, 50):
        assert ndcg[("CofiRank-NDCG at cofiviz's defaults", n)] > ndcg[("ItemMean", n)], n

def test_every_shipped_file_is_package_data():
    """A wheel carries what ships: every file of the shipped folder matches the package-data patterns."""
    import fnmatch
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    mine = patterns.get("cofiviz.reproductions", [])
    for path in S.SHIPPED_DIR.iterdir():
        rel = f"shipped/{path.name}"
        assert any(fnmatch.fnmatch(rel, p) for p in mine), f"{rel} is not package data of cofiviz.reproductions"


def test_without_per_user_values_the_tables_paired_tests_ship(tmp_path, shipped_dir, monkeypatch):
    """A reproduction whose per-user values are too many to ship (the MovieLens 1M leaderboards) ships its table's
    paired tests instead; a row shows them only while its chosen cells are the shipped ones."""
    import dataclasses

    name = "test-table-tests"
    rep_def = dataclasses.replace(R.get("cofirank-table3"), name=name, ship_per_user=False)
    monkeypatch.setitem(R.REPRODUCTIONS, name, rep_def)
    assert not R.get("ml1m").ship_per_user and not R.get("ml1m-weak").ship_per_user
    store = tmp_path / "computed"
    rep = R.reproduce(name, quick=True, store=store, html_path=tmp_path / "r.html", data=DATA, log=lambda m: None,
                      shipped=False)
    st = R.status(name, quick=True, store=store, data=DATA, shipped=False)
    tested = rep.table["wilcoxon_p"].notna()
    assert tested.sum() >= 2
    S.ship(name, [(c, k) for c, k, _ in st.cells], ResultsStore(store), set(), command="test", seconds=1.0,
           data_version=st.version, directory=shipped_dir, table=rep.table)
    assert not (shipped_dir / f"{name}.per_user.parquet").exists()
    assert (shipped_dir / f"{name}.table.parquet").is_file()
    fresh = R.status(name, quick=True, store=tmp_path / "empty", data=DATA)
    assert fresh.n_shipped == len(fresh.cells) and not len(fresh.results.per_user)
    pd.testing.assert_frame_equal(fresh.table, rep.table)
    # the same through a reproduction run, which computes nothing
    again = R.reproduce(name, quick=True, store=tmp_path / "empty2", html_path=tmp_path / "r2.html", data=DATA,
                        log=lambda m: None)
    pd.testing.assert_frame_equal(again.table, rep.table)
    # a row whose chosen cells are not the shipped row's keeps no test
    table = pd.read_parquet(shipped_dir / f"{name}.table.parquet")
    row = table.index[table["wilcoxon_p"].notna()][0]
    table.loc[row, "cells"] = "0123456789abcdef0123"
    table.to_parquet(shipped_dir / f"{name}.table.parquet", index=False)
    S._load.cache_clear()
    changed = R.status(name, quick=True, store=tmp_path / "empty", data=DATA).table
    assert pd.isna(changed.loc[row, "wilcoxon_p"]) and changed["wilcoxon_p"].notna().sum() == tested.sum() - 1
    # nor does any row of a (metric, N) whose best method's chosen cells are not the shipped best's: its tests
    # were against another best
    table.loc[row, "cells"] = rep.table.loc[row, "cells"]
    group = (table["metric"] == table.loc[row, "metric"]) & (table["N"] == table.loc[row, "N"])
    best = table.index[group & (table["vs_best"] == 0)][0]
    table.loc[best, "cells"] = "0123456789abcdef0123"
    table.to_parquet(shipped_dir / f"{name}.table.parquet", index=False)
    S._load.cache_clear()
    changed = R.status(name, quick=True, store=tmp_path / "empty", data=DATA).table
    assert changed.loc[group[group].index, "wilcoxon_p"].isna().all()
    assert changed["wilcoxon_p"].notna().sum() == tested.sum() - tested[group].sum()
    # the cells still recompute to the last bit without per-user values to compare
    assert R.verify_shipped(name, 1, seed=0).ok


def test_a_parameter_column_of_values_of_several_kinds_ships_as_text():
    """Two models may name different parameters alike (GCR's numeric item_prior, CofiRank's named one): the
    column of the concatenated results ships as text, a column of one kind as it is."""
    frame = pd.DataFrame({"model.item_prior": [0.0, "damped_mean", float("nan"), 2.0],
                          "model.rank": [10.0, 20.0, float("nan"), 5.0], "label": ["a", "b", "c", "d"]})
    out = S._uniform_columns(frame)
    texts = out["model.item_prior"]
    assert texts.isna().tolist() == [False, False, True, False]
    assert texts.dropna().tolist() == ["0.0", "damped_mean", "2.0"]
    assert out["model.rank"].equals(frame["model.rank"]) and out["label"].equals(frame["label"])
    assert frame["model.item_prior"].tolist()[1] == "damped_mean" and frame["model.item_prior"].tolist()[0] == 0.0
