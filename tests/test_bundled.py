"""What cofiviz carries besides the library, in a clone: the apps, the course's notebooks and its experiment files.

In the repository the package's folders are the repository's own (one copy of each file); ``cofiviz apps`` lists
them, ``cofiviz notebooks DIR`` copies the course for a student without replacing a student's work, ``cofiviz
course`` runs the course cofiviz carries from a folder without notebooks, and ``cofiviz serve --address 0.0.0.0``
accepts the pages a class opens by the machine's names. ``tests/test_wheel.py`` runs the same from an installed
wheel.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tornado.template import Template

from cofiviz.util import bundled
from cofiviz.cli import build_parser, main
from cofiviz.cli import course as course_cli
from cofiviz.dashboards.catalog import INDEX_TEMPLATE, notebooks
from cofiviz.dashboards.serving import allowed_origins, app_files, machine_names, serve_command
from conftest import ROOT


def test_the_package_folders_are_the_repositorys_own():
    for kind in bundled.KINDS:
        assert bundled.folder(kind) == (ROOT / kind).resolve()
        assert (ROOT / "cofiviz" / "_shipped" / kind).is_symlink()
    assert bundled.app_files() == app_files() == sorted((ROOT / "apps").resolve().glob("*.py"))
    assert [p.name for p in bundled.notebook_files()] == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    with pytest.raises(ValueError, match="one of apps, notebooks, experiments"):
        bundled.folder("thumbnails")


def test_cofiviz_apps_lists_the_files_and_paths_prints_them_alone(capsys):
    assert main(["apps", "--paths"]) == 0
    assert capsys.readouterr().out.split() == [str(p) for p in bundled.app_files()]
    assert main(["apps", "monitor"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("monitor") and "Training monitor" in out and out.strip().endswith("monitor.py")
    assert main(["apps", "monitr"]) == 2
    assert "unknown app 'monitr'; valid: comparisons" in capsys.readouterr().err


def test_cofiviz_notebooks_copies_the_course_and_keeps_a_students_work(tmp_path, capsys):
    assert main(["notebooks", str(tmp_path / "class")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "class" / "notebooks")
    for kind, files in bundled.course_files().items():
        assert sorted(p.name for p in (tmp_path / "class" / kind).iterdir()) == [p.name for p in files]
    assert (tmp_path / "class" / "experiments" / "lcr_rank_local.yaml").is_file()      # notebook 06 reads it
    assert main(["notebooks", str(tmp_path / "class")]) == 0                          # the same files: nothing to do
    capsys.readouterr()
    work = tmp_path / "class" / "notebooks" / "02-cofirank.ipynb"
    work.write_text("my answers")
    (tmp_path / "class" / "notebooks" / "mine.ipynb").write_text("{}")
    assert main(["notebooks", str(tmp_path / "class")]) == 1
    err = capsys.readouterr().err
    assert "02-cofirank.ipynb already exists with other content" in err and "--force" in err
    assert work.read_text() == "my answers"
    assert main(["notebooks", str(tmp_path / "class"), "--force"]) == 0
    assert work.read_bytes() == (ROOT / "notebooks" / "02-cofirank.ipynb").read_bytes()
    assert (tmp_path / "class" / "notebooks" / "mine.ipynb").read_text() == "{}"      # other files left alone


def test_cofiviz_notebooks_into_a_file_says_what_is_wrong(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    assert main(["notebooks", str(tmp_path / "taken")]) == 1
    assert f"{tmp_path / 'taken'} is a file, not a folder" in capsys.readouterr().err
    (tmp_path / "odd" / "notebooks" / "00-quickstart.ipynb").mkdir(parents=True)
    assert main(["notebooks", str(tmp_path / "odd")]) == 1
    assert "00-quickstart.ipynb is a folder where the course has a file" in capsys.readouterr().err


def test_the_course_command_reads_the_course_cofiviz_carries_where_no_notebooks_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = []
    books = course_cli.course_notebooks(None, log=said.append)
    assert books == Path(course_cli.COURSE_SOURCE) / "notebooks"
    assert sorted(p.name for p in books.glob("*.ipynb")) == [p.name for p in bundled.notebook_files()]
    assert (books.parent / "experiments" / "lcr_rank_local.yaml").is_file()
    assert "the course cofiviz carries" in said[0]
    (tmp_path / "notebooks").mkdir()                            # a folder with no notebook is not the course
    assert course_cli.course_notebooks(None) == Path(course_cli.COURSE_SOURCE) / "notebooks"
    (tmp_path / "notebooks" / "00-mine.ipynb").write_text("{}")  # one with notebooks is the one read
    assert course_cli.course_notebooks(None) == Path("notebooks")
    assert str(course_cli.course_notebooks("elsewhere")) == "elsewhere"
    assert build_parser().parse_args(["course"]).notebooks is None


def test_the_editions_carry_the_experiment_files_beside_them(tmp_path, capsys):
    assert main(["course", "--notebooks", str(ROOT / "notebooks"), "--editions", str(tmp_path / "out"),
                 "--no-html"]) == 0
    assert sorted(p.name for p in (tmp_path / "out" / "experiments").iterdir()) == \
        sorted(p.name for p in (ROOT / "experiments").iterdir() if not p.name.startswith("."))


def test_the_landing_page_lists_the_course_cofiviz_carries_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    listed = notebooks()
    assert [n.name for n in listed] == [p.name for p in bundled.notebook_files()]
    page = Template(INDEX_TEMPLATE.read_text()).generate(items=[]).decode()
    assert f"notebooks/{listed[0].name}" in page and "cofiviz notebooks DIR" in page


def test_a_class_server_accepts_the_machines_names_and_the_origins_given(monkeypatch):
    monkeypatch.setattr("cofiviz.dashboards.serving.machine_names", lambda: ["teacher-pc", "192.168.1.20"])
    assert allowed_origins("localhost", 5006) == ["localhost:5006"]
    assert allowed_origins("127.0.0.1", 80) == ["127.0.0.1:80"]
    assert allowed_origins("0.0.0.0", 5006, ["class.example.org", "proxy:443", "*"]) == [
        "localhost:5006", "127.0.0.1:5006", "teacher-pc:5006", "192.168.1.20:5006", "class.example.org:5006",
        "proxy:443", "*"]
    assert allowed_origins("192.168.1.20", 5006) == ["192.168.1.20:5006", "teacher-pc:5006"]
    args = build_parser().parse_args(["serve", "--address", "0.0.0.0", "--allow-origin", "alias",
                                      "--allow-origin", "other:1"])
    assert args.origins == ["alias", "other:1"]
    cmd = serve_command(bundled.app_files(), port=5006, address=args.address, origins=args.origins, setup=False)
    given = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--allow-websocket-origin"]
    assert given == ["localhost:5006", "127.0.0.1:5006", "teacher-pc:5006", "192.168.1.20:5006", "alias:5006",
                     "other:1"]


def test_the_machines_names_hold_no_loopback_address():
    names = machine_names()
    assert "localhost" not in names and not any(n.startswith("127.") for n in names)
