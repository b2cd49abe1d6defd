"""``cofiviz serve``: every dashboard and the landing page, as ``make serve`` starts them.

The pages are the app files cofiviz carries (:func:`cofiviz.util.bundled.app_files`), so the command serves them from
any folder, in the repository or after ``pip install``. A class served from a teacher's machine listens on
``--address 0.0.0.0``: pages opened by the machine's names and LAN addresses may then open their websockets
(:func:`~cofiviz.dashboards.serving.allowed_origins`), and ``--allow-origin`` adds another name (an alias, a
proxy). ``--run-slots`` sets how many runs and tunes the server trains at once (default: its cores); the
others wait in the server's queue (:mod:`cofiviz.background.run_queue`), which the monitor shows.

The command starts the background warm-up of the numba kernels (:func:`cofiviz.background.kernels.start`, at a
lower priority, the quick pages' modules first) and then becomes the ``panel serve`` process (``exec``), which
answers at once: the warm-up process is the server's child and ends with it.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..background.kernels import start as start_kernels
from ..background.recommenders import models_from_environment
from ..background.run_queue import SLOTS_ENV, default_slots, usable_cores
from ..dashboards.catalog import first_kernels
from ..dashboards.serving import EVERY_INTERFACE, allowed_origins, kernels_folder, serve_command

__all__ = ["add_parser", "serve"]


def add_parser(sub) -> None:
    s = sub.add_parser("serve", help="serve every dashboard with the cofiviz landing page",
                       description="Serve every dashboard cofiviz carries (`cofiviz apps`) with the landing page. "
                                   "For a class, --address 0.0.0.0 listens on every interface and accepts the pages "
                                   "opened by this machine's host name or LAN address.")
    s.add_argument("--port", type=int, default=5006)
    s.add_argument("--address", default="localhost",
                   help="the address to listen on (default: localhost; 0.0.0.0: every interface, for a class)")
    s.add_argument("--threads", type=int, default=4, help="Panel's threads for the sessions' callbacks")
    s.add_argument("--allow-origin", action="append", default=[], metavar="HOST[:PORT]", dest="origins",
                   help="another origin whose pages may connect (a DNS alias, a proxy; '*' for any); repeatable")
    s.add_argument("--run-slots", type=_slots, default=None, metavar="N",
                   help="runs and tunes trained at once; the others wait in a queue the page shows "
                        f"(default: ${SLOTS_ENV}, else this machine's cores: {default_slots_or_cores()})")
    s.set_defaults(func=serve)


def default_slots_or_cores() -> int:
    """What the server's queue admits when ``--run-slots`` is not given (read for the help text)."""
    try:
        return default_slots()
    except ValueError:
        return usable_cores()


def _slots(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of runs (1 or more), not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of runs (1 or more), not {value}")
    return value


def serve(args) -> int:
    if args.run_slots is not None:               # the server process reads it when its queue is made
        os.environ[SLOTS_ENV] = str(args.run_slots)
    default_slots()                              # a malformed $COFIVIZ_RUN_SLOTS is said here, not at the first Run
    models_from_environment()                    # and an unknown model in $COFIVIZ_RECOMMENDERS_MODELS
    cmd = serve_command(port=args.port, address=args.address, threads=args.threads, origins=args.origins)
    start_kernels(kernels_folder(args.port), first=first_kernels())
    print(f"cofiviz: serving the dashboards at http://{args.address}:{args.port}/ (numba kernels are prepared "
          "behind it)", file=sys.stderr, flush=True)
    if args.address in EVERY_INTERFACE:          # what the students type
        hosts = [o.rsplit(":", 1)[0] for o in allowed_origins(args.address, args.port)][2:]
        print(f"cofiviz: on this machine's network: {', '.join(f'http://{h}:{args.port}/' for h in hosts)}",
              file=sys.stderr, flush=True)
    sys.stdout.flush()
    os.execv(cmd[0], cmd)
    return 0  # pragma: no cover - execv does not return
