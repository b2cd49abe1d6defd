"""The MovieLens 1M leaderboards: every registered model, its settings drawn reproducibly, chosen on validation."""

import json

import pandas as pd
import pytest

from cofiviz import reproductions as R
from cofiviz.models import available_models, baseline_models, get_model_class
from cofiviz.search.space import contains
from cofiviz.reproductions.leaderboard import N_SETTINGS, PATIENCE, settings

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 120, "n_items": 80, "density": 0.5}


def test_every_registered_model_is_a_row_with_the_baselines_last():
    for name in ("ml1m", "ml1m-weak"):
        rep = R.REPRODUCTIONS[name]
        assert rep.dataset == "movielens-1m" and rep.table is None and rep.ns == [10, 20, 50] and rep.seeds == [0, 1, 2]
        models = [m.model for m in rep.methods]
        assert sorted(models) == sorted(available_models())
        assert models[-2:] == baseline_models() == ["itemmean", "poprec"]
        assert len({m.label for m in rep.methods}) == len(models)
    assert R.REPRODUCTIONS["ml1m"].protocol == "lcr-weak"
    weak = R.REPRODUCTIONS["ml1m-weak"]
    assert weak.protocol == "weak" and weak.protocol_params == {"n_valid": 5, "min_test": 5}


def test_the_experiments_run_on_movielens_1m_unless_told_otherwise():
    exps, missing = R.REPRODUCTIONS["ml1m"].experiments()
    assert not missing and all(exp.data == {"name": "movielens-1m"} for _, exp in exps)
    exps, _ = R.REPRODUCTIONS["ml1m"].experiments(data=DATA)
    assert all(exp.data == DATA for _, exp in exps)
    # the papers' tables keep MovieLens 100K
    exps, _ = R.REPRODUCTIONS["cofirank-table2"].experiments()
    assert all(exp.data == {"name": "movielens-100k"} for _, exp in exps)


@pytest.mark.parametrize("model", available_models())
def test_settings_are_the_defaults_then_distinct_draws_from_the_search_space(model):
    got = settings(model)
    assert got[0] == {} and 1 <= len(got) <= N_SETTINGS
    assert got == settings(model)                     # seeded by the model's name: the same every time
    space = get_model_class(model).search_space
    defaults = {k: get_model_class(model).param[k].default for k in space}
    seen = [json.dumps(defaults, sort_keys=True, default=str)]
    for draw in got[1:]:
        assert set(draw) == set(space) and contains(space, draw), draw
        key = json.dumps(draw, sort_keys=True, default=str)
        assert key not in seen
        seen.append(key)
        for v in draw.values():                       # three significant digits, as a table shows them
            if isinstance(v, float) and v:
                assert float(f"{v:.3g}") == v
        get_model_class(model)(**draw)                # every draw is a valid setting


def test_the_collaborative_gps_run_their_defaults_for_a_few_em_iterations():
    for m in R.REPRODUCTIONS["ml1m"].methods:
        if m.model in ("cgpr", "cgpor"):
            assert m.grid == [{}] and m.fixed["max_iter"] == 5
        elif m.model not in ("poprec",):
            assert len(m.grid) == N_SETTINGS


def test_every_setting_holds_the_parameters_its_models_search_space_belongs_to():
    """GPOR learns its hyper-parameters by default, and its search space draws the fixed form's lengthscale and noise:
    every leaderboard setting of GPOR, its defaults included, is the fixed form; models without such parameters
    are held at nothing."""
    for name in ("ml1m", "ml1m-weak"):
        for m in R.REPRODUCTIONS[name].methods:
            holds = get_model_class(m.model).search_holds
            assert all(m.fixed[k] == v for k, v in holds.items()), (name, m.label)
            if m.model == "gpor":
                assert holds == {"hyperparameters": "fixed"} and m.grid[0] == {}
            elif m.model in ("gpr", "cgpr", "cgpor", "regsvd"):
                assert "hyperparameters" not in m.fixed


def test_a_finite_space_gives_what_it_has():
    poprec = settings("poprec", n=10)
    assert poprec == [{}, {"tie_break": "none"}]      # the default is "mean": one other setting exists
    assert len(settings("cofirank", n=6)) == 6


def test_quick_leaderboard_ranks_every_model_with_paired_tests(tmp_path):
    rep = R.reproduce("ml1m", quick=True, store=tmp_path / "s", html_path=tmp_path / "r.html", data=DATA,
                      log=lambda m: None)
    t = rep.table
    assert set(t["method"]) == {m.label for m in R.REPRODUCTIONS["ml1m"].methods}
    assert t["paper"].isna().all() and t["status"].eq("ok").all(), t[t["status"] != "ok"][["method", "status"]]
    assert set(t["metric"]) == {"ndcg@10", "ap", "err@10"} and set(t["N"]) == {10}
    for _, g in t.groupby("metric"):
        assert (g["vs_best"] == 0).sum() == 1
        assert g.loc[g["vs_best"] == 0, "cofiviz"].iloc[0] == g["cofiviz"].max()
        assert g.loc[g["vs_best"] != 0, "wilcoxon_p"].between(0, 1).all()
    used = t["setting"].map(json.loads)
    assert all(s.get("patience") == PATIENCE and s.get("valid_metric") == "ndcg@10" and s.get("max_iter") == 2
               for s in used)
    assert "ml1m" in (tmp_path / "r.html").read_text()
    # the comparisons page: one bar per model (no paper value to pair it with), one plot per row for so many
    import holoviews as hv

    from cofiviz.dashboards.comparisons import Comparisons

    page = Comparisons(store=str(tmp_path / "s"), quick=True, data=DATA, reproduction="ml1m")
    plots = page._table_plot(page._status.table[page._status.table["metric"] == "ndcg@10"])
    bars = [el for plot in plots for el in plot.traverse(lambda e: e, [hv.Bars])]
    assert len(bars) == 1 and [d.name for d in bars[0].kdims] == ["method"]
    assert len(bars[0]) == len(R.REPRODUCTIONS["ml1m"].methods)


def test_the_comparisons_page_reads_a_leaderboard(tmp_path):
    from cofiviz.dashboards.comparisons import Comparisons

    c = Comparisons(store=str(tmp_path / "empty"), quick=True, data=DATA, reproduction="ml1m")
    st = c._status
    assert st is not None and st.n_done == 0 and len(st.cells) == len(R.REPRODUCTIONS["ml1m"].methods)
    assert "0 of" in c._summary.object
    assert isinstance(st.table, pd.DataFrame) and st.table["status"].eq("not run").all()
