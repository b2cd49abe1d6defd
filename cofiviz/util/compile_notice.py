"""One line on standard error when cofiviz's numba kernels are compiled rather than loaded from the cache.

numba compiles a ``cache=True`` kernel the first time it runs with a new signature and writes the
machine code to its on-disk cache; later processes load it from there. The compilation takes from
seconds to a few minutes on a fresh installation, so a command that seems to hang says why, once:

    cofiviz: compiling numba kernels (first run only; later runs load them from the cache) ...

numba announces every real compilation with a ``numba:compile`` event (a kernel loaded from the cache
emits none); :func:`announce_compilation` listens for the first one that belongs to cofiviz.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from numba.core import event

__all__ = ["MESSAGE", "announce_compilation"]

MESSAGE = "cofiviz: compiling numba kernels (first run only; later runs load them from the cache) ..."


class _FirstCompile(event.Listener):
    """Prints :data:`MESSAGE` when the first cofiviz kernel starts compiling, then stays quiet."""

    def __init__(self, stream: TextIO | None):
        self.stream = stream
        self.said = False
        self._lock = threading.Lock()

    def on_start(self, ev: event.Event) -> None:
        dispatcher = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if not module.startswith("cofiviz"):
            return
        with self._lock:
            if self.said:
                return
            self.said = True
        print(MESSAGE, file=self.stream or sys.stderr, flush=True)

    def on_end(self, ev: event.Event) -> None:
        pass


_listener: _FirstCompile | None = None


def announce_compilation(stream: TextIO | None = None) -> None:
    """From now on, print :data:`MESSAGE` to ``stream`` at the first kernel compilation.

    ``stream`` defaults to whatever ``sys.stderr`` is when the compilation starts. Idempotent: a second
    call changes nothing. The line is printed at most once per process.
    """
    global _listener
    if _listener is None:
        _listener = _FirstCompile(stream)
        event.register("numba:compile", _listener)
