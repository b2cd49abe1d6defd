"""The files cofiviz carries for its users besides the library, and where they are: the dashboards' app files, the
course's notebooks and the experiment files the notebooks read.

The repository keeps them in ``apps/``, ``notebooks/`` and ``experiments/``, one copy each. ``cofiviz/_shipped/``
holds a symbolic link to each of these folders; setuptools follows the links when it builds a wheel, which carries
their files as package data (``[tool.setuptools.package-data]`` of ``pyproject.toml``). So in the repository, and
in an editable install of it, ``cofiviz/_shipped/apps`` is the repository's ``apps/``, and in an installed wheel it
is a folder of the package. :func:`folder` is the one function that says where each is; :func:`copy_course` copies
the course out of it for a student, since nothing is to be run or written inside an installed package.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import CofivizError

__all__ = ["KINDS", "COURSE_KINDS", "SHIPPED", "folder", "app_files", "notebook_files", "course_files", "copy_course",
           "CourseExists", "MissingFiles"]

#: the folders cofiviz carries, by the name of the repository's folder
KINDS = ("apps", "notebooks", "experiments")
#: the folder of the package that holds them (links to the repository's folders before a wheel is built)
SHIPPED = Path(__file__).resolve().parents[1] / "_shipped"
#: the folders of the course a copy holds, each beside the other as in the repository: notebook 06 reads
#: ``experiments/lcr_rank_local.yaml`` from the folder above its own
COURSE_KINDS = ("notebooks", "experiments")


class CourseExists(CofivizError, FileExistsError):
    """:func:`copy_course` would replace files that are already there with other content (a student's work)."""


class MissingFiles(CofivizError, FileNotFoundError):
    """The installation carries no folder of the kind asked for (a wheel built without its package data)."""


def folder(kind: str) -> Path:
    """The folder of ``kind`` (``"apps"``, ``"notebooks"`` or ``"experiments"``): the repository's own when
    cofiviz is imported from the repository, the installed package's otherwise.

    Raises
    ------
    ValueError
        ``kind`` is not one of :data:`KINDS`.
    MissingFiles
        The installation carries no such folder.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind of files {kind!r}: one of {', '.join(KINDS)}")
    path = (SHIPPED / kind).resolve()        # in the repository, the link's target
    if not path.is_dir():
        raise MissingFiles(f"cofiviz carries no {kind} folder (looked in {SHIPPED / kind}): reinstall cofiviz from "
                           f"a wheel built with its package data")
    return path


def app_files() -> list[Path]:
    """The dashboards' app files (``apps/*.py``), in file-name order; ``panel serve`` serves each."""
    return sorted(folder("apps").glob("*.py"))


def notebook_files() -> list[Path]:
    """The course's notebooks (``notebooks/*.ipynb``), in file-name order."""
    return sorted(folder("notebooks").glob("*.ipynb"))


def course_files() -> dict[str, list[Path]]:
    """What a copy of the course holds, by the folder it goes to (:data:`COURSE_KINDS`): every file of
    ``notebooks/`` (the notebooks and the files beside them they read, such as ``run-seconds.json``) and of
    ``experiments/``. Hidden files and subfolders are left out."""
    return {kind: sorted(p for p in folder(kind).iterdir() if p.is_file() and not p.name.startswith("."))
            for kind in COURSE_KINDS}


def copy_course(dest: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Copy the course into ``dest``: ``dest/notebooks/`` and ``dest/experiments/``, laid out as in the
    repository, for a student to open with ``jupyter lab dest/notebooks``.

    The notebooks keep their results store in the folder above their own (``dest/cofiviz-results/``), so what they
    write stays in ``dest``.

    Parameters
    ----------
    dest : path
        The folder to copy into; created if missing.
    overwrite : bool
        Replace files that are already there with other content. Without it, a copy that would replace such a
        file copies nothing and raises :class:`CourseExists`; files equal to the course's are left as they are,
        and other files in ``dest`` are never touched.

    Returns
    -------
    Path
        ``dest/notebooks``.

    Raises
    ------
    CourseExists
        Files of ``dest`` differ from the course's and ``overwrite`` is false; the message names them.
    CofivizError
        ``dest``, or a folder the copy needs inside it, is a file; or a file the course has is a folder there.
    """
    dest = Path(dest)
    for where in (dest, *(dest / kind for kind in COURSE_KINDS)):
        if where.exists() and not where.is_dir():
            raise CofivizError(f"cannot copy the course into {dest}: {where} is a file, not a folder")
    plan = [(src, dest / kind / src.name) for kind, files in course_files().items() for src in files]
    for _, out in plan:
        if out.is_dir():
            raise CofivizError(f"cannot copy the course into {dest}: {out} is a folder where the course has a file")
    changed = [out for src, out in plan if out.exists() and out.read_bytes() != src.read_bytes()]
    if changed and not overwrite:
        names = ", ".join(str(p) for p in changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        raise CourseExists(f"{names} already exist{'s' if len(changed) == 1 else ''} with other content (your "
                           f"work?): copy the course into another folder, or replace "
                           f"{'it' if len(changed) == 1 else 'them'} with --force")
    for src, out in plan:
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.exists() or out.read_bytes() != src.read_bytes():
            shutil.copyfile(src, out)
    return dest / "notebooks"
