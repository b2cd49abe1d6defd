"""Are the defaults the fastest forms at the same quality? Each model's slower forms against its defaults.

    .venv/bin/python benchmarks/bench_forms.py [--data movielens-100k movielens-1m] [--seeds 0 1 2] [--n-train 50]
        [--models NAME ...] [--users U] [--json OUT] [--into SHIPPED.json]
    .venv/bin/python benchmarks/bench_forms.py --markdown OUT.json     # the README's table of a --json file

A model declares the slower forms a user can ask for (``Model.speed_forms``: parameter -> its slower values, such as
RegSVD's float64 SGD or CofiRank's assignment started on the scores) and the settings they are compared under
(``Model.speed_form_settings``: RegSVD's ALS forms under ``solver="als"``). For each setting, each form the setting
reads (:func:`cofiviz.engine.result_keys.unread_params`) is fitted beside the default on the same split: LCR's protocol
(``lcr-weak``: ``--n-train`` training ratings per user, 10 for validation, the rest tested; the validation part is
given to the fit where the model stops early on it, ``patience > 0``), on each data set and seed. A row gives both forms' NDCG@10 over the (seed,
test user) pairs, the mean difference (default − slower form), the two-sided p-values of the paired t-test and of
Wilcoxon's signed-rank test over those pairs (:func:`cofiviz.evaluation.significance.paired_test`), and both
forms' seconds (the quickest of ``--repeats`` alternated fits on each split, summed over the seeds) with their ratio,
slower / default.

The rule the defaults follow: a default is *level* with a slower form when the mean difference is above −0.002 and
not significantly below zero (a negative difference with t-test p < 0.05); a default is the fastest form when every
row of its model is level and the slower form took longer. ``tests/test_bench_forms.py`` checks that the shipped
``benchmarks/bench_forms.json`` lists exactly the forms the models declare, at their current defaults, that every row
is level and slower, and that the README shows its table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

import cofiviz
from cofiviz import datasets
from cofiviz.metrics.scorer import per_user_metrics
from cofiviz.models import available_models, get_model_class
from cofiviz.protocols import lcr_weak
from cofiviz.engine.result_keys import unread_params
from cofiviz.evaluation.significance import paired_test

METRIC = "ndcg@10"
#: a default is level with a slower form when their mean difference is above -TOLERANCE ...
TOLERANCE = 0.002
#: ... and not significantly below it (a negative difference with t-test p under ALPHA)
ALPHA = 0.05


def comparisons(model: str) -> list[tuple[dict, str, object]]:
    """The (setting, parameter, slower value) triples of ``model``: each declared form under each declared setting
    that reads it."""
    klass = get_model_class(model)
    out = []
    for setting in klass.speed_form_settings:
        unread = unread_params(klass, dict(setting))
        for p, values in klass.speed_forms.items():
            if p not in unread and p not in setting:
                out.extend((dict(setting), p, v) for v in values)
    return out


def level(row: dict) -> bool:
    """Whether the default is level with the slower form of ``row`` (:data:`TOLERANCE`, :data:`ALPHA`)."""
    return row["diff"] > -TOLERANCE and not (row["diff"] < 0 and row["t_test_p"] < ALPHA)


def _fit(klass, params: dict, split, seed: int):
    """Seconds of one fit of ``klass(**params)`` on ``split`` and its per-user test NDCG@10 keyed by (seed, user)."""
    model = klass(**params, seed=seed)
    valid = split.valid if model.patience > 0 else None   # scored after each iteration only where it stops the fit
    t0 = time.perf_counter()
    model.fit(split.train, valid=valid)
    seconds = time.perf_counter() - t0
    values = np.asarray(per_user_metrics(model, split.test, [METRIC])[METRIC], dtype=float)   # NaN: not tested
    return seconds, pd.Series(values, index=[(seed, u) for u in range(len(values))])


def compare(model: str, data: str, seeds, n_train: int, users: int | None = None, repeats: int = 3,
            log=print) -> list[dict]:
    """One row per comparison of ``model`` on ``data``: the default against each slower form, over ``seeds``.

    On each seed's split the two forms are fitted alternately ``repeats`` times (default, slower, default, ...), so
    that both see the same load; a form's seconds are its quickest fit on each split, summed over the seeds. A
    seeded fit is the same every time: its values are those of its first fit."""
    klass = get_model_class(model)
    ratings = datasets.load(data)
    if users is not None:
        ratings = ratings.take(ratings.users < users)
    warm = lcr_weak(ratings.take(ratings.users < 60), n_train=n_train, seed=0)   # compile, load caches: untimed
    rows = []
    for setting, p, slower in comparisons(model):
        forms = {"default": dict(setting), "slower": {**setting, p: slower}}
        seconds = {k: 0.0 for k in forms}
        values: dict[str, list] = {k: [] for k in forms}
        for params in forms.values():
            _fit(klass, params, warm, 0)
        for seed in seeds:
            split = lcr_weak(ratings, n_train=n_train, seed=seed)
            runs: dict[str, list] = {k: [] for k in forms}
            for _ in range(repeats):
                for k, params in forms.items():
                    s, v = _fit(klass, params, split, seed)
                    runs[k].append(s)
                    if len(runs[k]) == 1:
                        values[k].append(v)
            for k in forms:
                seconds[k] += min(runs[k])
        test = paired_test(pd.concat(values["default"]), pd.concat(values["slower"]), METRIC)
        row = {"model": model, "display": klass.display_name(), "data": data, "setting": setting,
               "param": p, "default": klass.param[p].default, "slower": slower, "seeds": list(seeds),
               "n_train": n_train, "repeats": repeats, "ndcg_default": test["mean_a"], "ndcg_slower": test["mean_b"],
               "diff": test["diff"], "t_test_p": test["t_test_p"], "wilcoxon_p": test["wilcoxon_p"],
               "pairs": test["n_users"], "seconds_default": seconds["default"], "seconds_slower": seconds["slower"],
               "ratio": seconds["slower"] / seconds["default"]}
        row["level"] = level(row)
        rows.append(row)
        log(_line(row))
    return rows


def run(data=("movielens-100k", "movielens-1m"), seeds=(0, 1, 2), n_train: int = 50, models=None,
        users: int | None = None, repeats: int = 3, log=print) -> dict:
    """Every comparison of ``models`` (default: every model with a slower form) on each data set."""
    with_forms = [m for m in available_models() if get_model_class(m).speed_forms]
    models = with_forms if models is None else list(models)
    rows = [row for d in data for m in models for row in compare(m, d, seeds, n_train, users, repeats, log)]
    return {"cofiviz": cofiviz.__version__, "models": available_models(), "with_forms": with_forms,
            "rows": rows}


def merged(earlier: dict, later: dict) -> dict:
    """``earlier`` (a shipped run) with the rows of ``later``'s models on ``later``'s data sets replaced by
    ``later``'s, in the order :func:`run` gives (data set, then model); the other rows are kept as they were."""
    redone = {(r["data"], r["model"]) for r in later["rows"]}
    rows = [r for r in earlier["rows"] if (r["data"], r["model"]) not in redone] + later["rows"]
    data = list(dict.fromkeys([r["data"] for r in earlier["rows"]] + [r["data"] for r in later["rows"]]))
    order = {m: i for i, m in enumerate(later["models"])}
    rows.sort(key=lambda r: (data.index(r["data"]), order.get(r["model"], len(order))))
    return {**later, "rows": rows}


def _setting(row: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in row["setting"].items()) or "defaults"


def markdown(result: dict) -> str:
    """The README's table of a ``--json`` file: one row per comparison, then the models with one form."""
    lines = ["| model | under | default | slower form | data | NDCG@10 default / slower | difference | t-test p | "
             "seconds default / slower | slower / default |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['display']} | {_setting(r)} | `{r['param']}={r['default']}` | `{r['slower']}` | "
                     f"{r['data']} | {r['ndcg_default']:.4f} / {r['ndcg_slower']:.4f} | {r['diff']:+.4f} | "
                     f"{r['t_test_p']:.2f} | {r['seconds_default']:.2f} / {r['seconds_slower']:.2f} | "
                     f"{r['ratio']:.2f} |")
    one = [get_model_class(m).display_name() for m in result["models"] if m not in result["with_forms"]]
    return "\n".join(lines) + f"\n\nOne form each: {', '.join(one)}.\n"


def _line(r: dict) -> str:
    return (f"{r['model']:9s} {_setting(r):12s} {r['param']}={r['default']!s:8s} vs {r['slower']!s:8s} {r['data']:15s} "
            f"NDCG@10 {r['ndcg_default']:.4f} / {r['ndcg_slower']:.4f} diff {r['diff']:+.4f} p {r['t_test_p']:.3f} "
            f"seconds {r['seconds_default']:.1f} / {r['seconds_slower']:.1f} ({r['ratio']:.2f}x)"
            f"{'' if r['level'] else '  NOT LEVEL'}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", nargs="+", default=["movielens-100k", "movielens-1m"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--n-train", type=int, default=50)
    p.add_argument("--models", nargs="+", default=None)
    p.add_argument("--users", type=int, default=None, help="keep the first U users only (a small slice)")
    p.add_argument("--repeats", type=int, default=3, help="fits of each form on each split; the quickest counts")
    p.add_argument("--json", default=None)
    p.add_argument("--into", default=None, metavar="RESULT_JSON",
                   help="replace the rows of the models run in this --json file, keep its other rows")
    p.add_argument("--markdown", default=None, metavar="RESULT_JSON",
                   help="print the table of a --json file (nothing is run)")
    args = p.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())), end="")
        return
    result = run(args.data, args.seeds, args.n_train, args.models, args.users, args.repeats)
    if args.into:
        result = merged(json.loads(Path(args.into).read_text()), result)
        Path(args.into).write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
