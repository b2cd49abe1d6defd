"""A results store: one directory of Parquet files per finished experiment cell.

Layout::

    ROOT/
      cells/<key>/results.parquet     one row per (cell, part, metric)
      cells/<key>/traces.parquet      one row per (cell, iteration, part, metric)
      cells/<key>/per_user.parquet    (when the cell kept per-user rows)
      cells/<key>/manifest.json       written last: configuration, data and cofiviz versions,
                                      size and SHA-256 of every file
      tmp/                            cells being written (and leftovers of interrupted writes)

``<key>`` is :func:`cofiviz.engine.experiment.cell_key`: a stable hash of the cell's configuration, the data
version (a hash of the ratings' content) and the cofiviz version.

Atomicity: a cell is written into a fresh directory under ``tmp/`` (Parquet files first, the manifest
last), then moved to ``cells/<key>`` with one ``os.replace`` (atomic on one file system). A reader
trusts a cell only when its manifest parses and every file it lists has the recorded size and
SHA-256, so a truncated or stray file is never read as a result (:meth:`ResultsStore.done_keys`
ignores it, and the cell runs again). Writing a cell that is already complete is a no-op, so a
retried task (Dask retries, two workers racing on one cell) cannot duplicate it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..util._version import __version__
from ..util.errors import DataError
from .results import Results

__all__ = ["ResultsStore", "MANIFEST", "TABLES", "default_store"]

MANIFEST = "manifest.json"
TABLES = ("results", "traces", "per_user")
FORMAT = 1


def default_store() -> Path:
    """Where results go unless told otherwise: ``$COFIVIZ_STORE``, else ``cofiviz-results/store`` in the
    working directory (``cofiviz reproduce``, ``cofiviz sweep``, the comparisons page and the notebooks)."""
    return Path(os.environ.get("COFIVIZ_STORE") or Path("cofiviz-results") / "store")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


class ResultsStore:
    """A directory of finished experiment cells (see the module documentation).

    Parameters
    ----------
    root : path
        Created if missing. Workers of a Dask sweep write into it directly, so with a remote
        scheduler it must be on a file system every worker sees.
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.cells_dir = self.root / "cells"
        self.tmp_dir = self.root / "tmp"
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"<ResultsStore {str(self.root)!r}: {len(self.done_keys())} finished cells>"

    # -------------------------------------------------------------- reading
    def _manifest(self, key: str) -> dict | None:
        """The manifest of a complete, intact cell, else ``None``."""
        d = self.cells_dir / key
        try:
            manifest = json.loads((d / MANIFEST).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(manifest, dict) or manifest.get("key") != key or manifest.get("format") != FORMAT:
            return None
        for name, meta in (manifest.get("files") or {}).items():
            p = d / name
            try:
                if p.stat().st_size != meta["bytes"]:
                    return None
            except (OSError, KeyError, TypeError):
                return None
        return manifest

    def _verified(self, key: str) -> dict | None:
        manifest = self._manifest(key)
        if manifest is None:
            return None
        d = self.cells_dir / key
        for name, meta in manifest["files"].items():
            try:
                if _sha256(d / name) != meta["sha256"]:
                    return None
            except OSError:
                return None
        return manifest

    def is_done(self, key: str, verify: bool = True) -> bool:
        """Whether ``key`` is a complete cell (``verify``: also check every file's SHA-256)."""
        return (self._verified(key) if verify else self._manifest(key)) is not None

    def done_keys(self, verify: bool = True) -> list[str]:
        """Keys of the complete, intact cells (incomplete or corrupted ones are left out)."""
        out = []
        for d in sorted(self.cells_dir.iterdir()):
            if d.is_dir() and not d.name.startswith(".") and self.is_done(d.name, verify=verify):
                out.append(d.name)
        return out

    def manifest(self, key: str) -> dict:
        """The manifest of a complete cell (configuration, versions, files, when written)."""
        m = self._verified(key)
        if m is None:
            raise DataError(f"{self.root}: cell {key} is not in the store (or is incomplete)")
        return m

    def read(self, key: str):
        """The :class:`~cofiviz.engine.results.Results` of one complete cell.

        Raises
        ------
        DataError
            The cell is missing, incomplete or corrupted.
        """
        manifest = self.manifest(key)
        d = self.cells_dir / key
        tables = {}
        for t in TABLES:
            name = f"{t}.parquet"
            tables[t] = pd.read_parquet(d / name) if name in manifest["files"] else pd.DataFrame()
        return Results(tables["results"], tables["traces"], tables["per_user"])

    def read_many(self, keys: Iterable[str]):
        """The cells of ``keys``, in that order, as one :class:`~cofiviz.engine.results.Results` (each must be complete)."""
        return Results.concat(self.read(k) for k in keys)

    def load(self, keys: Iterable[str] | None = None):
        """Every complete cell (or those of ``keys`` that are complete) as one :class:`Results`."""
        done = self.done_keys()
        if keys is not None:
            wanted = set(keys)
            done = [k for k in done if k in wanted]
        return Results.concat(self.read(k) for k in done)

    # -------------------------------------------------------------- writing
    def write(self, key: str, results, config: dict, data_version: str, extra: dict | None = None) -> bool:
        """Write one cell atomically; returns ``False`` (writing nothing) when it is already complete.

        The Parquet files and then the manifest go into a fresh directory under ``tmp/``, which one
        ``os.replace`` moves to ``cells/<key>``. A corrupted or incomplete directory in the way is
        moved aside into ``tmp/`` first.
        """
        final = self.cells_dir / key
        if self.is_done(key):
            return False
        work = self.tmp_dir / f"{key}.{uuid.uuid4().hex}.partial"
        work.mkdir(parents=True)
        try:
            files = {}
            for t in TABLES:
                frame = getattr(results, t)
                if frame is None or (t == "per_user" and frame.empty):
                    continue
                name = f"{t}.parquet"
                frame.reset_index(drop=True).to_parquet(work / name, index=False)
                with open(work / name, "rb+") as fh:
                    os.fsync(fh.fileno())
                files[name] = {"bytes": (work / name).stat().st_size, "sha256": _sha256(work / name),
                               "rows": int(len(frame))}
            manifest = {"format": FORMAT, "key": key, "config": config, "data_version": data_version,
                        "cofiviz_version": __version__, "files": files, "written": time.time(),
                        "host": os.uname().nodename if hasattr(os, "uname") else "", "pid": os.getpid(),
                        **(extra or {})}
            tmp_manifest = work / (MANIFEST + ".tmp")
            with open(tmp_manifest, "w") as fh:
                json.dump(manifest, fh, indent=1, default=str)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp_manifest, work / MANIFEST)
            _fsync_dir(work)
            if final.exists():
                if self.is_done(key):        # another worker finished it meanwhile
                    shutil.rmtree(work, ignore_errors=True)
                    return False
                aside = self.tmp_dir / f"{key}.{uuid.uuid4().hex}.broken"
                try:
                    os.replace(final, aside)
                except OSError:
                    pass
            try:
                os.replace(work, final)
            except OSError:
                # lost a race: the directory appeared between the check and the move
                shutil.rmtree(work, ignore_errors=True)
                if self.is_done(key):
                    return False
                raise
            _fsync_dir(self.cells_dir)
            return True
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise

    def clean(self, older_than: float = 3600.0) -> int:
        """Remove leftovers in ``tmp/`` older than ``older_than`` seconds; returns how many."""
        n = 0
        now = time.time()
        for p in self.tmp_dir.iterdir():
            try:
                if now - p.stat().st_mtime > older_than:
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
                    n += 1
            except OSError:
                pass
        return n

    def delete(self, key: str) -> None:
        """Remove one cell (it will run again)."""
        d = self.cells_dir / key
        if d.exists():
            aside = self.tmp_dir / f"{key}.{uuid.uuid4().hex}.deleted"
            os.replace(d, aside)
            shutil.rmtree(aside, ignore_errors=True)
