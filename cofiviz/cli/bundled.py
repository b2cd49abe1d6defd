"""``cofiviz apps`` and ``cofiviz notebooks``: the app files and the course's notebooks that cofiviz carries.

``cofiviz apps`` lists the dashboards with their titles and files (``--paths``: the files alone, one a line, for
``panel serve $(cofiviz apps --paths)``); ``cofiviz notebooks DIR`` copies the course into ``DIR/notebooks`` (with
``DIR/experiments``, which notebook 06 reads) for a student to open in JupyterLab. Both read the files where
:func:`cofiviz.util.bundled.folder` says they are: the repository's folders in a clone, the package's after ``pip
install``.
"""

from __future__ import annotations

import sys

from ..util.bundled import app_files, copy_course
from ..dashboards.catalog import app
from ..util.errors import ParameterError

__all__ = ["add_parsers", "apps", "notebooks"]


def add_parsers(sub) -> None:
    a = sub.add_parser("apps", help="list the dashboards and their app files (--paths: the files alone, for panel "
                                    "serve)",
                       description="List the dashboards cofiviz carries: name, title and app file. With --paths, "
                                   "the files alone, one a line: `panel serve $(cofiviz apps --paths)` serves "
                                   "them without the cofiviz landing page.")
    a.add_argument("names", nargs="*", metavar="NAME", help="only these apps (e.g. monitor)")
    a.add_argument("--paths", action="store_true", help="print the app files alone, one a line")
    a.set_defaults(func=apps)
    n = sub.add_parser("notebooks", help="copy the course's notebooks into DIR/notebooks, for JupyterLab",
                       description="Copy the course's notebooks, and the files they read, into DIR/notebooks and "
                                   "DIR/experiments; then `jupyter lab DIR/notebooks`. Files already there with "
                                   "other content (a student's work) are not replaced without --force; other files "
                                   "of DIR are left alone.")
    n.add_argument("dir", metavar="DIR", help="the folder to copy into (created if missing)")
    n.add_argument("--force", action="store_true",
                   help="replace files of DIR/notebooks and DIR/experiments that differ from the course's")
    n.set_defaults(func=notebooks)


def apps(args) -> int:
    files = {p.stem: p for p in app_files()}
    unknown = [n for n in args.names if n not in files]
    if unknown:
        raise ParameterError(f"unknown app {unknown[0]!r}; valid: {', '.join(files)}")
    for name in dict.fromkeys(args.names or files):
        print(files[name] if args.paths else f"{name:16s} {app(name).title:20s} {files[name]}")
    return 0


def notebooks(args) -> int:
    where = copy_course(args.dir, overwrite=args.force)
    print(f"cofiviz: the course's notebooks are in {where}; open them with: jupyter lab {where}", file=sys.stderr)
    print(where)
    return 0
