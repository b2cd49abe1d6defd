"""Uploads of ratings files into a page: read with :func:`cofiviz.datasets.read`, sent in chunks.

A file (CSV, TSV or Parquet with user, item, rating columns) travels from the browser in chunks of
:data:`UPLOAD_CHUNK` bytes through a :class:`ChunkedUpload`, up to :data:`UPLOAD_LIMIT_MB`; the browser
refuses a larger one with a message. :func:`read_upload` reads what arrived and names the visitor's file,
never a temporary copy, in any error.
"""

from __future__ import annotations

import os
import tempfile
import threading

import panel as pn

from ..datasets import read
from ..errors import DataError

__all__ = ["UPLOAD", "UPLOAD_LIMIT_MB", "UPLOAD_CHUNK", "ChunkedUpload", "read_upload"]

UPLOAD = "Uploaded file"
#: the largest upload the browser sends, in MB of 1,000,000 bytes
UPLOAD_LIMIT_MB = 64
#: an upload travels in chunks of this many bytes (binary websocket messages well under any size limit)
UPLOAD_CHUNK = 4_000_000


def read_upload(data: bytes | str, filename: str):
    """Read an uploaded ratings file with :func:`cofiviz.datasets.read` through a temporary file.

    Parameters
    ----------
    data : bytes or str
        The file's content (text files may arrive decoded).
    filename : str
        The visitor's name for the file (its extension tells the format).

    Raises
    ------
    cofiviz.errors.DataError
        The file is empty, larger than :data:`UPLOAD_LIMIT_MB`, or malformed (the message says which rows
        and why).
    """
    name = os.path.basename(filename or "upload.csv")
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not data:
        raise DataError(f"{name}: the file is empty")
    if len(data) > UPLOAD_LIMIT_MB * 1_000_000:
        raise DataError(f"{name}: {len(data) / 1e6:.1f} MB is more than the {UPLOAD_LIMIT_MB} MB an upload may have")
    suffix = os.path.splitext(name)[1].lower() or ".csv"
    with tempfile.TemporaryDirectory(prefix="cofiviz-upload-") as tmp:
        path = os.path.join(tmp, f"upload{suffix}")
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            return read(path, name=name)
        except Exception as exc:  # name the visitor's file, not our temporary copy
            raise DataError(str(exc).replace(path, name)) from None


class ChunkedUpload(pn.widgets.FileDropper):
    """A ``FileDropper`` whose chunks may be handled in any order, on any thread.

    A server with several threads (``--num-threads``) handles a file's chunk events concurrently, so
    they cannot be appended as they come: each chunk is kept by its number, under a lock, and the file
    is joined (as bytes) once every chunk is there.
    """

    def __init__(self, **params):
        super().__init__(**params)
        self._chunks: dict[str, dict[int, bytes]] = {}
        self._chunks_lock = threading.Lock()

    def _process_event(self, event):
        data = event.data
        if event.event_name != "upload_event":
            with self._chunks_lock:
                self._chunks.pop(data["name"], None)   # a removed file: drop what arrived of it
            return super()._process_event(event)
        name, total = data["name"], data["total_chunks"]
        with self._chunks_lock:
            parts = self._chunks.setdefault(name, {})
            parts[data["chunk"]] = data["data"]
            if len(parts) < total:
                return
            del self._chunks[name]
        self.value[name] = b"".join(bytes(parts[i]) for i in range(1, total + 1))
        self.mime_type[name] = data["type"]
        self.param.trigger("mime_type", "value")

