"""Opening a ratings text file: decompression by name, and refusing what is not text.

A name ending in ``.gz``, ``.bz2``, ``.xz`` (or ``.lzma``) or ``.zip`` (an archive of exactly one
file) is decompressed; any other name is read as it is. The header sniffing and the parser both read
through :func:`open_binary`, so a compressed file gives exactly the table of the plain one.

:func:`check_head` looks at the first 64 KiB (decompressed) before anything is parsed, so that a file
that is not a ratings table fails at once whatever its size: NUL bytes or many control characters
are binary data (UTF-16 text gets the advice to say so), and a file that starts like a compressed
archive or a Parquet table under another name gets the advice to rename it. :func:`text_lines`
reads lines with a length limit, so that one giant line is refused before it is held in memory.
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import gzip
import io
import lzma
import zipfile
import zlib
from pathlib import Path
from typing import IO, Iterator

from ..util.errors import DataError, ParameterError

__all__ = ["COMPRESSIONS", "compression", "open_binary", "check_head", "text_lines", "check_encoding",
           "HEAD_BYTES", "MAX_LINE_CHARS"]

#: Suffix → compression.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".lzma": "xz", ".zip": "zip"}
#: How much of a file is looked at before parsing.
HEAD_BYTES = 64 * 1024
#: The longest line a ratings file may have (a line is a few ids, a rating and maybe a timestamp).
MAX_LINE_CHARS = 1 << 20
#: Leading bytes of formats that are not text, with the suffix that names them.
_MAGIC = ((b"\x1f\x8b", "gzip-compressed data", ".gz"),
          (b"\xfd7zXZ\x00", "xz-compressed data", ".xz"),
          (b"PK\x03\x04", "a zip archive", ".zip"),
          (b"PAR1", "a Parquet table", ".parquet"))
_DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile)
#: Bytes that do not occur in text (C0 controls other than tab, line feed, vertical tab, form feed and
#: carriage return).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13))


def compression(path: Path) -> str | None:
    """The compression a file's name announces (``"gzip"``, ``"bzip2"``, ``"xz"``, ``"zip"``), else None."""
    return COMPRESSIONS.get(Path(path).suffix.lower())


def check_encoding(encoding: str) -> str:
    """The codec's canonical name; an unknown encoding is a :class:`ParameterError`."""
    try:
        return codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise ParameterError(f"encoding={encoding!r} is not a known text encoding (e.g. utf-8, latin-1, "
                             "utf-16, cp1252)") from None


def _wide(encoding: str) -> bool:
    """Whether the encoding writes NUL bytes in ordinary text (UTF-16 and UTF-32)."""
    return check_encoding(encoding).startswith(("utf-16", "utf-32"))


@contextlib.contextmanager
def open_binary(path: Path) -> Iterator[IO[bytes]]:
    """The file's bytes, decompressed when its name says so; decompression errors are :class:`DataError`."""
    path = Path(path)
    kind = compression(path)
    archive = None
    try:
        if kind is None:
            fh = open(path, "rb")
        elif kind == "gzip":
            fh = gzip.open(path, "rb")
        elif kind == "bzip2":
            fh = bz2.open(path, "rb")
        elif kind == "xz":
            fh = lzma.open(path, "rb")
        else:
            archive = zipfile.ZipFile(path)
            members = [m for m in archive.infolist() if not m.is_dir()]
            if len(members) != 1:
                names = [m.filename for m in members]
                raise DataError(f"{path}: a .zip ratings file must hold exactly one file, this one holds "
                                f"{len(members)}{': ' + str(names[:10]) if names else ''}")
            fh = archive.open(members[0])
    except zipfile.BadZipFile as exc:
        raise DataError(f"{path}: cannot be opened as a zip archive ({exc})") from None
    try:
        yield fh
    except _DECOMPRESSION_ERRORS as exc:
        if kind is None:
            raise
        raise DataError(f"{path}: cannot be decompressed as {kind} data ({exc}): the file is damaged, or is not "
                        f"{kind}-compressed although its name ends in {path.suffix}") from None
    finally:
        fh.close()
        if archive is not None:
            archive.close()


def member_name(path: Path) -> str | None:
    """The name of the one file inside a ``.zip`` ratings file (None for other files)."""
    if compression(path) != "zip":
        return None
    with zipfile.ZipFile(path) as archive:
        return next(m.filename for m in archive.infolist() if not m.is_dir())


def _looks_utf16(head: bytes) -> bool:
    """A UTF-16 byte-order mark, or NUL bytes in nearly every other position (ASCII text in UTF-16)."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return True
    n = min(len(head) // 2, 256)
    if n < 2:
        return False
    even, odd = head[0:2 * n:2].count(0) / n, head[1:2 * n:2].count(0) / n
    return (even >= 0.9 and odd <= 0.1) or (odd >= 0.9 and even <= 0.1)


def check_head(path: Path, encoding: str) -> bytes:
    """The first :data:`HEAD_BYTES` bytes (decompressed), after checking that they look like text.

    Raises
    ------
    DataError
        Binary data (the byte offset of the first NUL or control byte), UTF-16 text read as
        another encoding, or a compressed archive or Parquet table whose name does not say so.
    """
    path = Path(path)
    kind = compression(path)
    with open_binary(path) as fh:
        head = fh.read(HEAD_BYTES)
    after = " after decompression" if kind else ""
    for magic, what, suffix in _MAGIC:
        if head.startswith(magic):
            inside = f" inside its {kind} compression" if kind else ""
            raise DataError(f"{path}: this is {what}{inside}, not a text ratings file; cofiviz recognises "
                            f"it by its name: rename it to end in {suffix}")
    if head[:3] == b"BZh" and head[4:10] == b"1AY&SY":
        raise DataError(f"{path}: this is bzip2-compressed data, not a text ratings file; cofiviz recognises it by "
                        "its name: rename it to end in .bz2")
    if _wide(encoding):
        text = head.decode(encoding, errors="replace")
        k = text.find("\x00")
        if k >= 0:
            raise DataError(f"{path}: does not look like a text ratings file (binary data at character {k}{after} "
                            f"when read as {encoding})")
        return head
    nul = head.find(b"\x00")
    if nul >= 0:
        if _looks_utf16(head):
            raise DataError(f"{path}: looks like UTF-16 text (NUL bytes between the characters); pass --encoding "
                            f"utf-16 (encoding='utf-16' in Python)")
        raise DataError(f"{path}: does not look like a text ratings file (binary data at byte {nul}{after}: a NUL "
                        "byte); expected lines of 'user item rating'")
    control = sum(head.count(bytes([b])) for b in _CONTROL)
    if control >= 8 and control >= 0.05 * len(head):
        first = min(k for k in (head.find(bytes([b])) for b in _CONTROL) if k >= 0)
        raise DataError(f"{path}: does not look like a text ratings file (binary data at byte {first}{after}: "
                        f"{control} control bytes in the first {len(head):,}); expected lines of 'user item rating'")
    return head


def text_lines(path: Path, encoding: str) -> Iterator[tuple[str, bool]]:
    """The file's lines as ``(line without its end, ended)``, each read with a length limit.

    ``ended`` is false for a last line without a line break. Decoding errors are left to the caller.

    Raises
    ------
    DataError
        A line longer than :data:`MAX_LINE_CHARS` characters (it is not read further).
    """
    with open_binary(path) as raw:
        text = io.TextIOWrapper(raw, encoding=encoding, newline="")
        number = 0
        while True:
            line = text.readline(MAX_LINE_CHARS + 1)
            if not line:
                return
            number += 1
            body = line.rstrip("\r\n")
            if len(body) > MAX_LINE_CHARS:
                raise DataError(f"{path}: line {number} is longer than {MAX_LINE_CHARS:,} characters (no line break "
                                f"in the first {MAX_LINE_CHARS:,}); this does not look like a ratings file "
                                "(lines of 'user item rating')")
            yield body, len(body) < len(line)
