"""Compressed ratings files (.gz, .bz2, .xz, .zip) read exactly like the plain file, in Python and the CLI."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from cofiviz import DataError, Split
from cofiviz.datasets import read, read_frame

WITH_HEADER = "user,item,rating\n1,10,4\n1,11,5\n2,10,3\n2,12,1\n3,11,2\n"
NO_HEADER = "1\t10\t4\n1\t11\t5\n2\t10\t3\n2\t12\t1\n3\t11\t2\n"
LATIN1 = "user;item;rating\nrené;Misérables;4\nrené;Amélie;5\nzoë;Misérables;3\n"


def _compress(path: Path, data: bytes, kind: str, member: str = "ratings.csv") -> Path:
    if kind == "gz":
        path.write_bytes(gzip.compress(data))
    elif kind == "bz2":
        path.write_bytes(bz2.compress(data))
    elif kind == "xz":
        path.write_bytes(lzma.compress(data))
    else:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(member, data)
    return path


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cofiviz.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zip"])
@pytest.mark.parametrize("text,plain_name", [(WITH_HEADER, "r.csv"), (NO_HEADER, "r.tsv")],
                         ids=["header", "no-header"])
def test_compressed_file_equals_the_plain_file(tmp_path, kind, text, plain_name):
    plain = tmp_path / plain_name
    plain.write_text(text)
    expected = read(plain)
    packed = _compress(tmp_path / f"{plain_name}.{kind}", text.encode(), kind, member=plain_name)
    got = read(packed)
    assert got.equals(expected) and len(got) == 5          # not one rating lost to the header sniffing
    assert got.report["header"] == expected.report["header"]
    assert got.report["format"].startswith(expected.report["format"])
    assert "compressed" in got.report["format"]
    # line numbers are the decompressed text's, as in the plain file
    pd.testing.assert_index_equal(read_frame(packed).index, read_frame(plain).index)


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zip"])
def test_latin1_compressed_needs_and_takes_the_encoding(tmp_path, kind):
    plain = tmp_path / "l.csv"
    plain.write_bytes(LATIN1.encode("latin-1"))
    packed = _compress(tmp_path / f"l.csv.{kind}", LATIN1.encode("latin-1"), kind)
    with pytest.raises(DataError) as err:
        read(packed)
    assert "--encoding latin-1" in str(err.value) and "encoding='latin-1'" in str(err.value)
    got = read(packed, encoding="latin-1")
    assert got.equals(read(plain, encoding="latin-1"))
    assert sorted(got.item_ids.tolist()) == ["Amélie", "Misérables"] and len(got) == 3


def test_parquet_stays_parquet(tmp_path):
    df = pd.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rating": [4.0, 5.0, 3.0]})
    df.to_parquet(tmp_path / "r.parquet")
    r = read(tmp_path / "r.parquet")
    assert r.report["format"] == "parquet" and len(r) == 3


def test_bad_compressed_files_are_named(tmp_path):
    # a name that promises a compression the bytes do not have
    (tmp_path / "plain.csv.gz").write_text(WITH_HEADER)
    with pytest.raises(DataError, match=r"plain\.csv\.gz: cannot be decompressed as gzip data"):
        read(tmp_path / "plain.csv.gz")
    # a truncated archive
    data = gzip.compress(WITH_HEADER.encode() * 2000)
    (tmp_path / "cut.csv.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"cut\.csv\.gz: cannot be decompressed as gzip data .*damaged"):
        read(tmp_path / "cut.csv.gz")
    # compressed bytes under a plain name: the advice is the suffix
    (tmp_path / "hidden.csv").write_bytes(gzip.compress(WITH_HEADER.encode()))
    with pytest.raises(DataError, match=r"hidden\.csv: this is gzip-compressed data.*rename it to end in \.gz"):
        read(tmp_path / "hidden.csv")
    (tmp_path / "hidden2.csv").write_bytes(bz2.compress(WITH_HEADER.encode()))
    with pytest.raises(DataError, match=r"bzip2-compressed data.*\.bz2"):
        read(tmp_path / "hidden2.csv")
    df = pd.DataFrame({"user": [1], "item": [1], "rating": [1.0]})
    df.to_parquet(tmp_path / "table.csv")
    with pytest.raises(DataError, match=r"table\.csv: this is a Parquet table.*\.parquet"):
        read(tmp_path / "table.csv")
    # a zip archive must hold one file
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as zf:
        zf.writestr("a.csv", WITH_HEADER)
        zf.writestr("b.csv", WITH_HEADER)
    with pytest.raises(DataError, match=r"two\.zip: a \.zip ratings file must hold exactly one file, this one "
                                        r"holds 2: \['a.csv', 'b.csv'\]"):
        read(tmp_path / "two.zip")
    (tmp_path / "empty.csv.gz").write_bytes(gzip.compress(b""))
    with pytest.raises(DataError, match=r"the file is empty \(0 bytes after decompression\)"):
        read(tmp_path / "empty.csv.gz")


def test_split_from_compressed_files(tmp_path):
    train = _compress(tmp_path / "train.csv.xz", WITH_HEADER.encode(), "xz")
    test = _compress(tmp_path / "test.tsv.gz", b"1\t12\t3\n3\t10\t4\n", "gz")
    split = Split.from_files(train, test)
    assert len(split.train) == 5 and len(split.test) == 2
    assert split.report["unseen"]["test"] == {"users_unseen": 0, "users": 2, "items_unseen": 0, "items": 2}


def test_cli_run_and_split_read_compressed_files(tmp_path):
    pairs = [(u, i) for u in range(1, 21) for i in range(1, 16)]
    train = [f"{u}\t{i}\t{1 + (u * i) % 5}" for u, i in pairs if (u + i) % 3]
    test = [f"{u}\t{i}\t{1 + (u * i) % 5}" for u, i in pairs if (u + i) % 3 == 0]
    (tmp_path / "train.tsv").write_text("user\titem\trating\n" + "\n".join(train) + "\n")
    (tmp_path / "test.tsv").write_text("user\titem\trating\n" + "\n".join(test) + "\n")
    _compress(tmp_path / "train.tsv.gz", (tmp_path / "train.tsv").read_bytes(), "gz")
    _compress(tmp_path / "test.tsv.zip", (tmp_path / "test.tsv").read_bytes(), "zip", member="test.tsv")
    results = {}
    for name, (tr, te) in {"plain": ("train.tsv", "test.tsv"), "packed": ("train.tsv.gz", "test.tsv.zip")}.items():
        proc = cli("run", "itemmean", "--train", tr, "--test", te, "--json", f"{name}.json", "--quiet", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        results[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert results["packed"]["metrics"] == results["plain"]["metrics"]
    # a latin-1 file inside a .bz2 through `cofiviz split`: refused with advice, then read with --encoding
    films = ["Misérables", "Amélie", "Léon", "Délicatessen", "Séraphine", "Cléo"]
    lines = [f"{u};{f};{1 + (k * 7 + j) % 5}" for k, u in enumerate(["rené", "zoë", "anaïs", "jérôme"])
             for j, f in enumerate(films)]
    _compress(tmp_path / "l.csv.bz2", ("user;item;rating\n" + "\n".join(lines) + "\n").encode("latin-1"), "bz2")
    proc = cli("split", "fixed-ratio", "--data", "l.csv.bz2", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "l.csv.bz2: cannot be decoded as utf-8" in proc.stderr and "--encoding latin-1" in proc.stderr
    proc = cli("split", "fixed-ratio", "--data", "l.csv.bz2", "--out", "out", "--encoding", "latin-1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    back = Split.read(tmp_path / "out")
    assert set(back.train.item_ids.tolist()) == set(films) and len(back.train) + len(back.test) == 24
