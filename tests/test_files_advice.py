"""Every piece of advice a data error gives can be followed on the command line, and then the command works.

Each case runs a real ``cofiviz`` process on files written here, reads the advice in its error message
(``--flag VALUE``), appends exactly that to the command line (filling placeholders such as ``SEP`` or
``NAME`` with the right value for the file) and runs again, until the command succeeds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import cofiviz
from cofiviz.cli import build_parser, main

SOURCES = ["datasets/files.py", "datasets/streams.py", "ratings/__init__.py", "split/__init__.py", "ratings/columns.py",
           "split/parts.py"]
ADVICE = re.compile(r"--(?P<flag>[a-z]+)[ =](?P<value>[^\s;()]+)")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cofiviz.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def _rows(sep: str = "\t", users=range(1, 9), items=range(1, 9), held=False) -> list[str]:
    """Ratings of a small grid; ``held`` selects the test pairs (u, u), else every other pair."""
    return [f"{u}{sep}{i}{sep}{1 + (u + i) % 5}" for u in users for i in items if (u == i) == held]


def follow(argv: list[str], cwd: Path, fill: dict[str, str], max_steps: int = 4) -> list[str]:
    """Run ``argv``, following each error's advice, until it succeeds; the flags followed, in order."""
    followed = []
    for _ in range(max_steps):
        proc = cli(*argv, cwd=cwd)
        if proc.returncode == 0:
            return followed
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith("cofiviz: error: ") and "Traceback" not in proc.stderr
        match = ADVICE.search(proc.stderr)
        assert match, f"no advice to follow in: {proc.stderr}"
        flag, value = match["flag"], match["value"].rstrip(",")
        if value.isupper():                                      # a placeholder: SEP, NAME, POSITION, ...
            value = fill[f"--{flag} {value}"]
        argv = [*argv, f"--{flag}", value] if not value.startswith("-") else [*argv, f"--{flag}={value}"]
        followed.append(f"--{flag} {value}")
    raise AssertionError(f"still failing after following {followed}: {proc.stderr}")


CASES = {
    "encoding": dict(
        files={"train.csv": ("user,item,rating\n" + "\n".join(_rows(",")) + "\nrené,1,4\n", "latin-1"),
               "test.csv": ("user,item,rating\n" + "\n".join(_rows(",", held=True)) + "\n", "latin-1")},
        argv=["run", "poprec", "--train", "train.csv", "--test", "test.csv"], fill={},
        expect=["--encoding latin-1"]),
    "utf-16": dict(
        files={"all.txt": ("user\titem\trating\n" + "\n".join(_rows()) + "\n", "utf-16")},
        argv=["split", "fixed-ratio", "--data", "all.txt", "--out", "out"], fill={},
        expect=["--encoding utf-16"]),
    "separator": dict(
        files={"train.txt": ("\n".join(_rows(":")) + "\n", "utf-8"),
               "test.txt": ("\n".join(_rows(":", held=True)) + "\n", "utf-8")},
        argv=["run", "poprec", "--train", "train.txt", "--test", "test.txt"], fill={"--sep SEP": ":"},
        expect=["--sep :"]),
    "columns": dict(
        files={"all.csv": ("stars,who,what\n" + "\n".join(f"{r},{u},{i}" for u, i, r in
                                                           (row.split(",") for row in _rows(","))) + "\n", "utf-8")},
        argv=["split", "fixed-ratio", "--data", "all.csv", "--out", "out"],
        fill={"--user NAME": "who", "--item NAME": "what"}, expect=["--user who", "--item what"]),
    "rating-column": dict(
        files={"all.csv": ("when,what,user\n" + "\n".join(f"{r},{i},{u}" for u, i, r in
                                                           (row.split(",") for row in _rows(","))) + "\n", "utf-8")},
        argv=["split", "fixed-ratio", "--data", "all.csv", "--out", "out"],
        fill={"--rating NAME": "when"}, expect=["--rating when"]),
    "position": dict(
        files={"all.tsv": ("\n".join(_rows()) + "\n", "utf-8")},
        argv=["split", "fixed-ratio", "--data", "all.tsv", "--out", "out", "--user", "who"],
        fill={"--user POSITION": "0"}, expect=["--user 0"]),
    "duplicates": dict(
        files={"train.tsv": ("user\titem\trating\n" + "\n".join(_rows()) + "\n1\t2\t5\n", "utf-8"),
               "test.tsv": ("user\titem\trating\n" + "\n".join(_rows(held=True)) + "\n", "utf-8")},
        argv=["run", "poprec", "--train", "train.tsv", "--test", "test.tsv"], fill={},
        expect=["--duplicates last"]),
    "scale": dict(
        files={"all.tsv": ("user\titem\trating\n" + "\n".join(_rows()) + "\n9\t9\t1e308\n", "utf-8")},
        argv=["split", "fixed-ratio", "--data", "all.tsv", "--out", "out"], fill={},
        expect=["--scale 1,1e+308"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_following_the_advice_makes_the_command_work(tmp_path, case):
    spec = CASES[case]
    for name, (text, encoding) in spec["files"].items():
        (tmp_path / name).write_text(text, encoding=encoding)
    assert follow(list(spec["argv"]), tmp_path, spec["fill"]) == spec["expect"]


def _advised_flags() -> set[str]:
    """Every ``--flag`` the data errors' messages name (``--{role}`` stands for user, item and rating)."""
    root = Path(cofiviz.__file__).parent
    flags = set()
    for rel in SOURCES:
        text = (root / rel).read_text()
        flags |= set(re.findall(r"--([a-z]+)", text))
        if "--{role}" in text:
            flags |= {"user", "item", "rating"}
    return flags


def test_every_advised_flag_exists_on_run_and_split_and_is_followed_above():
    flags = _advised_flags()
    assert {"encoding", "sep", "user", "item", "rating", "duplicates", "scale"} <= flags
    sub = build_parser()._subparsers._group_actions[0].choices
    for command in ("run", "split"):
        options = {o.lstrip("-") for a in sub[command]._actions for o in a.option_strings}
        assert flags <= options, (command, flags - options)
    followed = {e.split()[0].lstrip("-") for spec in CASES.values() for e in spec["expect"]}
    assert flags <= followed


def test_bad_reading_flags_are_usage_errors_naming_the_flag(tmp_path, capsys):
    (tmp_path / "a.tsv").write_text("user\titem\trating\n1\t1\t4\n")
    proc = cli("split", "fixed-ratio", "--data", "a.tsv", "--out", "o", "--scale", "5,1", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == ("cofiviz: error: cofiviz split: argument --scale: expected LO,HI, two finite numbers with "
                           "LO < HI (e.g. 1,5), got '5,1'\n")
    base = ["run", "poprec", "--train", str(tmp_path / "a.tsv"), "--test", str(tmp_path / "a.tsv")]
    for args, expect in [(["--scale", "1"], "argument --scale: expected LO,HI"),
                         (["--scale", "a,b"], "argument --scale: expected LO,HI"),
                         (["--scale", "1,inf"], "argument --scale: expected LO,HI"),
                         (["--duplicates", "drop"], "argument --duplicates: invalid choice: 'drop'"),
                         (["--encoding", "klingon"], "argument --encoding: unknown text encoding 'klingon'"),
                         (["--sep", ""], "argument --sep: expected a separator")]:
        assert main([*base, *args]) == 2, args
        err = capsys.readouterr().err
        assert expect in err and err.count("\n") == 1, err
    # reading flags describe a file: with a dataset name they are a usage error too
    assert main(["split", "fixed-ratio", "--data", "movielens-100k", "--out", str(tmp_path / "o"),
                 "--encoding", "latin-1"]) == 2
    assert "--encoding only apply to a ratings file" in capsys.readouterr().err


def test_duplicates_first_and_the_flags_reach_the_reader(tmp_path, capsys):
    (tmp_path / "all.csv").write_text("who;what;stars\n" + "\n".join(_rows(";")) + "\n1;2;5\n")
    out = tmp_path / "out"
    assert main(["split", "fixed-ratio", "--data", str(tmp_path / "all.csv"), "--out", str(out), "--sep", ";",
                 "--duplicates", "first", "--user", "who", "--item", "1", "--rating", "stars", "--scale", "0,10"]) == 0
    back = cofiviz.Split.read(out)
    assert back.train.scale == (0.0, 10.0)
    both = pd.concat([back.train.to_dataframe(), back.test.to_dataframe()])
    assert both.query("user == 1 and item == 2")["rating"].tolist() == [4.0]      # the first of 4 and 5
