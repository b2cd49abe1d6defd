"""``cofiviz serve``: every dashboard and the landing page, as ``make serve`` starts them.

The pages are the app files cofiviz carries (:func:`cofiviz.bundled.app_files`), so the command serves them from
any folder, in the repository or after ``pip install``.

The command starts the background warm-up of the numba kernels (:func:`cofiviz.background.kernels.start`, at a
lower priority, the quick pages' modules first) and then becomes the ``panel serve`` process (``exec``), which
answers at once: the warm-up process is the server's child and ends with it.
"""

from __future__ import annotations

import os
import sys

from ..background.kernels import start as start_kernels
from ..dashboards.catalog import first_kernels
from ..dashboards.serving import kernels_folder, serve_command

__all__ = ["add_parser", "serve"]


def add_parser(sub) -> None:
    s = sub.add_parser("serve", help="serve every dashboard with the cofiviz landing page",
                       description="Serve every dashboard cofiviz carries (`cofiviz apps`) with the landing page.")
    s.add_argument("--port", type=int, default=5006)
    s.add_argument("--address", default="localhost")
    s.add_argument("--threads", type=int, default=4, help="Panel's threads for the sessions' callbacks")
    s.set_defaults(func=serve)


def serve(args) -> int:
    cmd = serve_command(port=args.port, address=args.address, threads=args.threads)
    start_kernels(kernels_folder(args.port), first=first_kernels())
    print(f"cofiviz: serving the dashboards at http://{args.address}:{args.port}/ (numba kernels are prepared "
          "behind it)", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os.execv(cmd[0], cmd)
    return 0  # pragma: no cover - execv does not return
