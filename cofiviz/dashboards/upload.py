"""Uploads of ratings files into a page: read with :func:`cofiviz.datasets.read`, sent in one message.

A file (CSV, TSV or Parquet with user, item, rating columns) travels from the browser through Panel's
``FileDropper`` (made by :func:`upload_widget`), up to :data:`UPLOAD_LIMIT_MB`; the browser refuses a
larger one with a message. The whole file is one chunk: a server with several threads (``--num-threads``)
may handle one session's events concurrently, and a file in several chunks could then be joined out of
order. :func:`read_upload` reads what arrived and names the visitor's file, never a temporary copy, in any
error.
"""

from __future__ import annotations

import os
import tempfile

import panel as pn

from ..datasets import read
from ..util.errors import DataError

__all__ = ["UPLOAD", "UPLOAD_LIMIT_MB", "UPLOAD_CHUNK", "upload_widget", "read_upload"]

UPLOAD = "Uploaded file"
#: the largest upload the browser sends, in MB of 1,000,000 bytes
UPLOAD_LIMIT_MB = 64
#: the chunk size given to the widget: the largest file allowed, so that every file is one chunk (one binary
#: websocket message; the server's limit, ``serving.WEBSOCKET_MAX_MESSAGE``, is above it)
UPLOAD_CHUNK = UPLOAD_LIMIT_MB * 1_000_000


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
    cofiviz.util.errors.DataError
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


def upload_widget(**params) -> pn.widgets.FileDropper:
    """Panel's ``FileDropper`` for one ratings file up to :data:`UPLOAD_LIMIT_MB`, sent as one chunk.

    Parameters
    ----------
    **params
        Further ``FileDropper`` parameters (layout, sizing, CSS classes).
    """
    return pn.widgets.FileDropper(multiple=False, max_file_size=f"{UPLOAD_LIMIT_MB}MB", chunk_size=UPLOAD_CHUNK,
                                  **params)
