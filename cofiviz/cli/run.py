"""``cofiviz run MODEL --train FILE --test FILE``: train on a split given as files and score the rankings."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

from ..metrics.names import check_metrics
from ..metrics.scorer import default_threshold
from ..models import get_model_class
from ..search.searchers import SEARCHERS
from ..search.tuning import tune as tune_model
from ..protocols import carve_validation
from ..search.selection import grid_search
from ..split import Split
from ..engine.training import train_and_evaluate
from .options import (UsageError, add_reading_arguments, convert_model_sets, parse_sets, print_table, reading,
                      write_json)

__all__ = ["add_parser", "run"]

SEARCH_ON_VALID = "valid file"
SEARCH_ON_TRAIN = "10% of train"


def add_parser(sub) -> None:
    r = sub.add_parser("run", help="train a model on a split and score its rankings",
                       description="Train MODEL on --train, score its rankings of --test. A --set value "
                                   "with commas (reg=0.1,1,10) is searched on --valid, or on a seeded "
                                   "tenth of each user's training ratings when there is no --valid.")
    r.add_argument("model", metavar="MODEL", help="model name (see `cofiviz models`)")
    r.add_argument("--train", required=True, help="training ratings file (user item rating)")
    r.add_argument("--test", required=True, help="test ratings file")
    r.add_argument("--valid", default=None, help="validation ratings file (early stopping, searches)")
    r.add_argument("--negatives", default=None, help="sampled unrated items (rating 0) added to the test lists "
                   "(top-N protocol; found beside --train when `cofiviz split` wrote it)")
    r.add_argument("--given", default=None, help="test users' given ratings to fold in (strong generalization; "
                   "found beside --train when `cofiviz split` wrote it)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="model parameter; KEY=V1,V2,... searches the values")
    r.add_argument("--metrics", default="ndcg@10,ap,gap", help="comma-separated metrics (default ndcg@10,ap,gap)")
    r.add_argument("--seed", type=int, default=None, help="model seed and seed of the search carve-out")
    r.add_argument("--json", default=None, metavar="OUT", help="write the results as JSON")
    r.add_argument("--threshold", type=float, default=None,
                   help="relevance threshold of AP, P@k (default 4; a top-N protocol.json beside --train: its own)")
    r.add_argument("--ymax", type=float, default=None, help="GAP's highest grade (default: the scale's maximum)")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    r.add_argument("--per-user", action="store_true",
                   help="add each test user's values to the JSON (for `cofiviz compare`)")
    r.add_argument("--preset", default=None, metavar="NAME",
                   help="start from a named setting of the model (paper: the paper's own settings); --set overrides")
    r.add_argument("--tune", action="store_true",
                   help="search the model's search space on the validation part (--valid, else a seeded tenth of "
                        "train), then refit with the chosen setting (see cofiviz.search.tuning); --set values stay fixed")
    r.add_argument("--budget", type=float, default=60.0, metavar="SECONDS", help="time the --tune search may take")
    r.add_argument("--trials", type=int, default=None, metavar="N",
                   help="at most N --tune trials (a repeatable search)")
    r.add_argument("--searcher", choices=SEARCHERS, default="random",
                   help="where --tune's drawn settings come from: seeded random draws (default), or Optuna's TPE "
                        "with median pruning (pip install \"cofiviz[optuna]\")")
    r.add_argument("--study", default=None, metavar="FILE.db",
                   help="with --searcher optuna: keep the search in this SQLite file; a later run with the same "
                        "file, model, settings and data resumes it")
    add_reading_arguments(r, "every ratings file")
    r.set_defaults(func=run)


def _protocol_beside(train_file) -> dict | None:
    """The ``protocol.json`` that ``cofiviz split`` wrote next to the train file, if any."""
    meta = Path(train_file).parent / "protocol.json"
    if not meta.is_file():
        return None
    try:
        out = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(out, dict):
        out.pop("scale", None)
        return out
    return None


def _unrated_beside(protocol: dict | None) -> list:
    """The parts beside ``negatives`` that the split's ``protocol.json`` lists as holding unrated items."""
    return list((protocol or {}).pop("unrated_parts", []) or [])


def _read_split(args) -> tuple[Split, Any, Any]:
    """The split of the files given; the parts ``cofiviz split`` wrote beside the train file are found."""
    protocol = _protocol_beside(args.train)
    unrated = _unrated_beside(protocol)
    found = {"negatives": args.negatives, "given": args.given}
    if protocol is not None:  # a directory written by `cofiviz split`: its extra parts belong to the protocol
        here = Path(args.train).parent
        for part in found:
            if found[part] is None:
                files = [here / f"{part}.{ext}" for ext in ("tsv", "csv") if (here / f"{part}.{ext}").is_file()]
                if files:
                    found[part] = files[0]
                    if not args.quiet:
                        print(f"using {files[0]} (written with the split; pass --{part} to override)",
                              file=sys.stderr)
    split = Split.from_files(args.train, args.test, args.valid, negatives=found["negatives"], given=found["given"],
                             protocol=protocol, unrated=unrated, **reading(args))
    return split, found["negatives"], found["given"]


def run(args) -> int:
    klass = get_model_class(args.model)
    values = convert_model_sets(klass, parse_sets(args.set))
    metrics = check_metrics(args.metrics)
    base_params: dict[str, Any] = {}
    if args.preset is not None:
        if args.preset not in klass.presets:
            raise UsageError(f"--preset: {klass.model_name()} has no preset {args.preset!r}; its presets: "
                             f"{', '.join(klass.presets) or 'none'}")
        base_params.update(klass.presets[args.preset])
    if args.tune and any(len(v) > 1 for v in values.values()):
        raise UsageError("--tune searches the model's own space; give --set one value per parameter (it is then "
                         "fixed), or drop --tune to search a grid")
    if not args.budget > 0:
        raise UsageError(f"--budget must be a positive number of seconds, not {args.budget:g}")
    if args.trials is not None and args.trials < 1:
        raise UsageError(f"--trials must be at least 1, not {args.trials}")
    if args.study is not None and not (args.tune and args.searcher == "optuna"):
        raise UsageError("--study keeps an Optuna search: give it with --tune --searcher optuna")
    if args.seed is not None and "seed" in klass.param_names() and "seed" not in values:
        base_params["seed"] = args.seed
    seed = 0 if args.seed is None else args.seed
    keys = list(values)
    candidates = [{**base_params, **dict(zip(keys, combo))}
                  for combo in itertools.product(*(values[k] for k in keys))] or [dict(base_params)]
    for cand in candidates:       # every candidate is valid before any data is read or model trained
        klass(**cand)

    split, negatives, given = _read_split(args)
    unseen = split.report.get("unseen", {})
    if not args.quiet:
        for part, seen in unseen.items():
            if seen["users_unseen"] or seen["items_unseen"]:
                print(f"warning: {seen['users_unseen']:,} of the {seen['users']:,} {part} users and "
                      f"{seen['items_unseen']:,} of the {seen['items']:,} {part} items have no rating in "
                      f"{args.train}{' (nor in ' + str(given) + ')' if given is not None else ''}", file=sys.stderr)
    threshold = args.threshold if args.threshold is not None else default_threshold(split)
    first = metrics[0]

    search = None
    chosen = candidates[0]
    if len(candidates) > 1:
        if split.valid is not None:
            s_train, s_valid, on = split.train, split.valid, SEARCH_ON_VALID
        else:
            s_train, s_valid = carve_validation(split.train, seed)
            on = SEARCH_ON_TRAIN

        def log(cand, score):
            if not args.quiet:
                shown = ", ".join(f"{k}={v}" for k, v in cand.items() if k in values)
                print(f"search {shown}: {first} = {score:.4f}", file=sys.stderr)
        found = grid_search(klass, candidates, s_train, s_valid, first, threshold=threshold, ymax=args.ymax, log=log)
        chosen = found.best
        search = {"chosen": {k: chosen[k] for k in values},
                  "candidates": [{"params": c, "score": s} for c, s in zip(found.candidates, found.scores)],
                  "metric": first, "on": on}
        if on == SEARCH_ON_TRAIN:
            search["carve"] = ("max(2, round(n/10)) of each user's training ratings (users with n >= 5), "
                               f"seed {seed}; the chosen values were refit on the full train file")

    model = klass(**chosen)
    if args.tune:
        def log_trial(trial):
            if not args.quiet:
                shown = ", ".join(f"{k}={_short(v)}" for k, v in trial["params"].items())
                score = (f"pruned at iteration {trial['pruned']}" if trial.get("pruned") else
                         f"{trial['score']:.4f}" if trial["error"] == "" else "diverged")
                print(f"trial {trial['trial']}: {shown or 'as configured'}: {first} = {score} "
                      f"({trial['seconds']:.1f} s)", file=sys.stderr)
        tuning = tune_model(model, split.train, split.valid, budget=args.budget, trials=args.trials, metric=first,
                            seed=seed, fixed=set(values), refit=False, log=log_trial, searcher=args.searcher,
                            storage=args.study)
        search = {"tune": tuning.as_dict(), "on": SEARCH_ON_VALID if tuning.validation == "given" else SEARCH_ON_TRAIN,
                  "chosen": {k: tuning.best_params[k] for k in tuning.trials[tuning.chosen]["params"]},
                  "metric": first}
        if tuning.validation == "carved":
            search["carve"] = ("max(2, round(n/10)) of each user's training ratings (users with n >= 5), "
                               f"seed {seed}; the chosen values were refit on the full train file")
    run = train_and_evaluate(model, split, metrics=metrics, trace_metrics=metrics, threshold=threshold,
                             ymax=args.ymax)
    trace, fit_seconds, ev = run.trace, run.fit_seconds, run.evaluations["test"]

    summary_rows = ev.summary.to_dict("records")
    result = {
        "model": klass.model_name(),
        "params": model.get_params(),
        "metrics": ev.means,
        "n_users": ev.info["n_users"],
        "fit_seconds": fit_seconds,
        "iterations": trace.wide(prefix=False, fields=("iteration", "seconds", "loss")),
        "summary": summary_rows,
        "threshold": threshold,
        "ymax": ev.info["ymax"],
        "tie_rule": ev.info["tie_rule"],
        "seed": args.seed,
        "stopped_reason": model.stopped_reason_,
        "files": {"train": str(args.train), "test": str(args.test),
                  "valid": None if args.valid is None else str(args.valid),
                  "negatives": None if negatives is None else str(negatives),
                  "given": None if given is None else str(given)},
        "protocol": split.protocol.get("name", "custom"),
        "n_test_users_unseen": unseen.get("test", {}).get("users_unseen", 0),
        "n_test_items_unseen": unseen.get("test", {}).get("items_unseen", 0),
    }
    if search is not None:
        result["search"] = search
    if args.per_user:
        result["per_user"] = per_user_columns(ev.per_user, metrics)
    if args.json:
        write_json(args.json, result)
    if not args.quiet:
        print(f"{klass.model_name()}  ({len(split.train):,} training ratings, "
              f"{ev.info['n_users']:,} test users, fit {fit_seconds:.2f} s)")
        if search:
            tuned = search.get("tune")
            how = (f" after {len(tuned['trials'])} trials in {tuned['seconds']:.0f} s" if tuned else "")
            if tuned and tuned.get("resumed"):
                how += f" ({tuned['resumed']} of them from {args.study}, resumed)"
            print("chosen on " + search["on"] + how + ": "
                  + ", ".join(f"{k}={_short(v)}" for k, v in search["chosen"].items()))
            if tuned:
                print(tuned["summary"])
        print_table(summary_rows, ["metric", "mean", "std", "n_users", "n_skipped"])
        if args.json:
            print(f"wrote {args.json}")
    return 0


def per_user_columns(per_user, metrics) -> dict:
    """An evaluation's tidy per-user table as columns: ``{"user": [original ids], metric: [values], ...}``."""
    wide = per_user.pivot(index="user", columns="metric", values="value")
    first = per_user.drop_duplicates("user")["user"]  # the evaluation's user order
    wide = wide.loc[first]
    out = {"user": [u.item() if hasattr(u, "item") else u for u in wide.index]}
    for m in metrics:
        out[m] = wide[m].astype(float).tolist()
    return out


def _short(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
