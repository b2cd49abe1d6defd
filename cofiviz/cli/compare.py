"""``cofiviz compare A.json B.json --metric M``: two runs' per-user values, paired tests of their difference."""

from __future__ import annotations

import json
from pathlib import Path

from ..util.errors import DataError
from ..metrics.names import check_metrics
from ..evaluation.significance import PAIRED_FIELDS, paired_test
from .options import print_table, write_json

__all__ = ["add_parser", "compare", "read_per_user"]


def add_parser(sub) -> None:
    c = sub.add_parser("compare", help="paired t-test and Wilcoxon test of two runs' per-user values",
                       description="Pair the users present in both runs (JSON written by `cofiviz run --per-user "
                                   "--json`) and test the difference of their values of one metric: scipy's paired "
                                   "t-test and Wilcoxon signed-rank test. Users with a missing value on either side "
                                   "are left out and counted.")
    c.add_argument("a", metavar="A.json", help="the first run (cofiviz run --per-user --json A.json)")
    c.add_argument("b", metavar="B.json", help="the second run")
    c.add_argument("--metric", required=True, help="the metric to compare, one the runs computed (e.g. ndcg@10)")
    c.add_argument("--json", default=None, metavar="OUT", help="write the result as JSON")
    c.set_defaults(func=compare)


def read_per_user(path: str | Path, metric: str) -> dict:
    """``{user id: value}`` of ``metric`` from a run's JSON (``cofiviz run --per-user``)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise DataError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{p}: not a JSON file written by `cofiviz run --json` ({exc})") from None
    per_user = doc.get("per_user") if isinstance(doc, dict) else None
    if not isinstance(per_user, dict) or "user" not in per_user:
        raise DataError(f"{p} has no per-user values: write it with `cofiviz run ... --per-user --json {p.name}`")
    if metric not in per_user:
        have = ", ".join(k for k in per_user if k != "user")
        raise DataError(f"{p} has no per-user values of {metric}; it has: {have}")
    users, values = per_user["user"], per_user[metric]
    if not isinstance(users, list) or not isinstance(values, list) or len(users) != len(values):
        raise DataError(f"{p}: per_user.user and per_user.{metric} must be lists of the same length")
    if len(set(map(str, users))) != len(users):
        raise DataError(f"{p}: per_user.user lists a user more than once")
    return {str(u): (float("nan") if v is None else v) for u, v in zip(users, values)}


def compare(args) -> int:
    metric = check_metrics([args.metric])[0]
    a, b = read_per_user(args.a, metric), read_per_user(args.b, metric)
    result = paired_test(a, b, metric=metric)
    if result["n_users"] == 0:
        raise DataError(f"{args.a} and {args.b} share no user with a value of {metric} on both sides")
    print(f"{metric}: {Path(args.a).name} against {Path(args.b).name} on {result['n_users']} users"
          + (f" ({result['n_left_out']} left out: missing or skipped on one side)" if result["n_left_out"] else ""))
    print_table([result], [f for f in PAIRED_FIELDS if f != "metric"])
    if args.json:
        write_json(args.json, result)
        print(f"wrote {args.json}")
    return 0
