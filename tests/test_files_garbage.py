"""Files that are not ratings tables fail fast with a clear message, before they are parsed or held in memory."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cofiviz import DataError
from cofiviz.datasets import read
from cofiviz.datasets.streams import MAX_LINE_CHARS

MiB = 1 << 20
GOOD = "user,item,rating\n1,10,4\n1,11,5\n2,10,3\n"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cofiviz.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def _fill(path: Path, chunk: bytes, size: int, opener=open) -> Path:
    with opener(path, "wb") as fh:
        for _ in range(size // len(chunk)):
            fh.write(chunk)
    return path


# ------------------------------------------------------------------------------------------ small files
def test_binary_data_is_refused_at_its_byte(tmp_path):
    p = tmp_path / "photo.csv"
    p.write_bytes(b"user,item,rating\n1,2,3\n" + bytes(range(256)) * 4)
    with pytest.raises(DataError) as err:
        read(p)
    assert str(err.value) == (f"{p}: does not look like a text ratings file (binary data at byte 23: a NUL byte); "
                              "expected lines of 'user item rating'")
    # control bytes without NULs (an old binary format)
    q = tmp_path / "ctl.txt"
    q.write_bytes(b"1 2 3\n" + bytes([1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16, 17]) * 40)
    with pytest.raises(DataError, match=r"ctl\.txt: does not look like a text ratings file \(binary data at byte 6: "
                                        r"480 control bytes in the first 486\)"):
        read(q)
    # inside a compressed file the offset is the decompressed one
    z = tmp_path / "bin.csv.gz"
    z.write_bytes(gzip.compress(b"1,2,3\n\x00\x00"))
    with pytest.raises(DataError, match=r"binary data at byte 6 after decompression"):
        read(z)


def test_utf16_text_gets_the_encoding_advice(tmp_path):
    p = tmp_path / "excel.txt"
    p.write_text(GOOD.replace(",", "\t"), encoding="utf-16")
    with pytest.raises(DataError, match=r"looks like UTF-16 text .*--encoding utf-16 \(encoding='utf-16' in Python\)"):
        read(p)
    assert len(read(p, encoding="utf-16")) == 3
    q = tmp_path / "nobom.txt"
    q.write_bytes(GOOD.encode("utf-16-le"))                       # no byte-order mark
    with pytest.raises(DataError, match="looks like UTF-16 text"):
        read(q)


def test_an_over_long_first_line_is_refused_without_reading_on(tmp_path):
    p = tmp_path / "one-line.csv"
    p.write_text("1,2," + "9" * (MAX_LINE_CHARS + 10))
    with pytest.raises(DataError, match=r"one-line\.csv: line 1 is longer than 1,048,576 characters"):
        read(p)
    # a long line after blank lines gets its own number
    q = tmp_path / "late.csv"
    q.write_text("\n\n" + "x" * (MAX_LINE_CHARS + 1) + "\n")
    with pytest.raises(DataError, match=r"late\.csv: line 3 is longer than"):
        read(q)


def test_no_number_in_the_rating_column_of_the_first_lines(tmp_path):
    words = "the quick brown fox jumps over the lazy dog\n"
    p = tmp_path / "novel.txt"
    p.write_text(words * 500)
    with pytest.raises(DataError) as err:
        read(p)
    assert str(err.value) == (f"{p}: line 2: column 'brown' holds 'brown', expected a number, and so does every one "
                              "of the first 100 data lines: this does not look like a ratings table (lines of "
                              "'user item rating', separator: whitespace)")
    # a short file is validated whole instead: the message counts every bad line
    q = tmp_path / "short.csv"
    q.write_text("user,item,rating\n" + "1,2,x\n" * 5)
    with pytest.raises(DataError, match=r"line 2: column 'rating' holds 'x', expected a number \(5 non-numeric"):
        read(q)
    # some numbers among the first lines: a ratings file with bad lines, reported by the validation
    r = tmp_path / "some.csv"
    r.write_text("user,item,rating\n" + "1,2,x\n" * 50 + "1,3,4\n" + "2,3,x\n" * 150)
    with pytest.raises(DataError, match=r"line 2: column 'rating' holds 'x', expected a number \(200 non-numeric"):
        read(r)


def test_cli_refuses_garbage_with_exit_1_and_no_traceback(tmp_path):
    (tmp_path / "junk.csv").write_bytes(os.urandom(4096) + b"\x00")
    (tmp_path / "test.csv").write_text(GOOD)
    proc = cli("run", "poprec", "--train", "junk.csv", "--test", "test.csv", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cofiviz: error: junk.csv: does not look like a text ratings file (binary data at "
                                  "byte ")
    proc = cli("split", "cofirank-weak", "--data", "junk.csv", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "binary data at byte" in proc.stderr


# ------------------------------------------------------------------------------------------ huge files
_PROBE = """
import json, resource, sys
from cofiviz.datasets import read
from cofiviz.util.errors import DataError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    read(sys.argv[1])
    error = None
except DataError as exc:
    error = str(exc)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"error": error, "grew_kib": after - before}))
"""


def _probe(path: Path) -> dict:
    """Read ``path`` in a fresh process; the error and how much its peak memory grew while reading."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name,make,message", [
    ("sparse.csv", lambda p: os.truncate(_touch(p), 2048 * MiB),
     "does not look like a text ratings file (binary data at byte 0: a NUL byte)"),
    ("noise.bin", lambda p: _fill(p, os.urandom(MiB), 256 * MiB), "does not look like a text ratings file"),
    ("giant-line.csv", lambda p: _fill(p, b"0123456789abcdef" * 65536, 256 * MiB),
     "line 1 is longer than 1,048,576 characters"),
    ("one-field.txt", lambda p: _fill(p, b"garbage\n" * 131072, 256 * MiB), "line 1 has 1 column(s)"),
    ("three-words.txt", lambda p: _fill(p, b"lorem ipsum dolor\n" * 58254, 256 * MiB),
     "and so does every one of the first 100 data lines"),
    ("bomb.csv.gz", lambda p: _fill(p, b"1,2," + b"3" * (MiB - 4), 512 * MiB,
                                    opener=lambda q, m: gzip.open(q, m, compresslevel=1)),
     "line 1 is longer than 1,048,576 characters"),
], ids=["sparse-2GiB", "noise", "giant-line", "one-field", "three-words", "gzip-bomb"])
def test_huge_garbage_fails_before_it_is_held_in_memory(tmp_path, name, make, message):
    """Hundreds of MB (or 2 GiB sparse, or 512 MiB inside a .gz): refused on their first bytes and lines.

    The peak memory of the reading process grows by a few MiB at most, far below the file's size.
    """
    path = tmp_path / name
    make(path)
    size = path.stat().st_size
    got = _probe(path)
    path.unlink()
    assert got["error"] is not None and message in got["error"], got
    assert got["error"].startswith(f"{path}: ")
    assert got["grew_kib"] < 64 * 1024, (got, size)


def _touch(path: Path) -> Path:
    path.touch()
    return path
