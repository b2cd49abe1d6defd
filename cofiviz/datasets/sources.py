"""Obtaining a real data set from the first of its sources that gives it: a cached copy or hand-placed files, then
downloads, each result checked against the data set's official figures before it is used.

A data set describes its sources as a :class:`SourceChain` (how to read and write its cache, which hand-placed
files to try, how to fetch it, how to check it); :func:`obtain` walks the sources in the order asked, records every
failure with its time, and returns the first :class:`~cofiviz.Ratings` that passes the checks, with a ``report`` of
where it came from. A copy fetched from elsewhere is written to the cache (atomically; a cache that cannot be
written is only a warning).
"""

from __future__ import annotations

import logging
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..util.errors import DataError, DataSourceError, ParameterError
from ..ratings import Ratings

__all__ = ["SourceChain", "obtain"]

log = logging.getLogger("cofiviz.datasets")


@dataclass(frozen=True)
class SourceChain:
    """How one data set is obtained.

    Attributes
    ----------
    title : str
        The data set's name in messages ("MovieLens 100K").
    read_cache, write_cache : callable
        ``read_cache(cache_dir)`` gives the cached tables or None; ``write_cache(cache_dir, tables)`` stores them
        and returns the folder.
    cache_folder : callable
        ``cache_folder(cache_dir)``: the folder of the cached copy, for messages and reports.
    hand_placed : callable
        ``hand_placed(cache_dir)``: ``[(path, parse)]`` of the files placed by hand, in the order to try.
    nothing_placed : callable
        ``nothing_placed(cache_dir)``: the message when neither a cache nor a hand-placed file is there.
    fetchers : dict
        Source name → ``(describe, fetch)``: ``describe()`` says where the data comes from (read when it is
        fetched), ``fetch(cache_dir, write_cache, timeout, download_timeout)`` gives the tables.
    validate, to_ratings, howto : callable
        The check against the official figures (raises :class:`DataError`), the conversion to ratings, and the
        instructions for placing the files by hand (``howto(cache_dir)``).
    report : callable
        ``report(tables)``: extra fields of the ratings' ``report``.
    """

    title: str
    read_cache: Callable[[Path], Any]
    write_cache: Callable[[Path, Any], Path]
    cache_folder: Callable[[Path], Path]
    hand_placed: Callable[[Path], list]
    nothing_placed: Callable[[Path], str]
    fetchers: dict
    validate: Callable[[Any], None]
    to_ratings: Callable[[Any], Ratings]
    howto: Callable[[Path], str]
    report: Callable[[Any], dict] = field(default=lambda tables: {})

    @property
    def sources(self) -> tuple[str, ...]:
        return ("cache", *self.fetchers)


def _from_cache(chain: SourceChain, cache_dir: Path, attempts: list, t0: float):
    """``(ratings, None)`` from a valid cached copy, else ``(None, tables)`` from the first valid hand-placed file;
    raises when there is neither (a damaged cache is reported among the attempts and replaced)."""
    errors = []
    try:
        tables = chain.read_cache(cache_dir)
        if tables is not None:
            chain.validate(tables)
            r = chain.to_ratings(tables)
            r.report = {"source": "cache", "cache": str(chain.cache_folder(cache_dir)),
                        "fetched_from": getattr(tables, "fetched_from", None), **chain.report(tables),
                        "failed": attempts, "seconds": round(time.perf_counter() - t0, 3)}
            return r, None
    except Exception as exc:  # a damaged cache is reported and replaced
        errors.append(f"the cached copy in {chain.cache_folder(cache_dir)} is unusable ({type(exc).__name__}: {exc})")
    placed = chain.hand_placed(cache_dir)
    if not placed:
        errors.append(chain.nothing_placed(cache_dir))
        raise FileNotFoundError("; ".join(errors))
    for path, parse in placed:
        try:
            tables = parse()
            chain.validate(tables)
        except (DataError, OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            errors.append(f"{path}: {exc}")
            continue
        attempts.extend(f"cache ({cache_dir}): {e}" for e in errors)
        return None, tables
    raise DataError("; ".join(errors))


def obtain(chain: SourceChain, cache_dir: Path, sources: Iterable[str], write_cache: bool, timeout: float,
           download_timeout: float) -> Ratings:
    """The data set from the first of ``sources`` that gives data passing ``chain.validate``.

    Raises
    ------
    ParameterError
        An unknown source name, or none.
    DataSourceError
        No source gave the data: the message lists each source tried with its error and time, and how to place
        the files by hand.
    """
    sources = tuple(sources)
    unknown = [s for s in sources if s not in chain.sources]
    if unknown or not sources:
        raise ParameterError(f"unknown {chain.title} source(s) {unknown}; choose among {list(chain.sources)}")
    attempts: list[str] = []
    for source in sources:
        t0 = time.perf_counter()
        try:
            if source == "cache":
                ready, tables = _from_cache(chain, cache_dir, attempts, t0)
                if ready is not None:
                    return ready
            else:
                describe, fetch = chain.fetchers[source]
                log.info("%s: fetching from %s", chain.title, describe())
                tables = fetch(cache_dir, write_cache, timeout, download_timeout)
                chain.validate(tables)
        except Exception as exc:  # every failure is recorded and the next source is tried
            what = f"cache ({cache_dir})" if source == "cache" else f"{source} ({chain.fetchers[source][0]()})"
            attempts.append(f"{what}: {type(exc).__name__}: {exc} [{time.perf_counter() - t0:.1f} s]")
            log.info("%s: %s", chain.title, attempts[-1])
            continue
        r = chain.to_ratings(tables)
        r.report = {"source": source, "fetched_from": tables.origin, **chain.report(tables), "failed": attempts,
                    "seconds": round(time.perf_counter() - t0, 3)}
        if write_cache:
            try:
                r.report["cache"] = str(chain.write_cache(cache_dir, tables))
            except OSError as exc:
                log.warning("%s: could not write the cache in %s: %s", chain.title, cache_dir, exc)
                r.report["cache_error"] = str(exc)
        return r
    raise DataSourceError(f"{chain.title} could not be obtained from any source. Tried:\n"
                          + "\n".join(f"  - {a}" for a in attempts) + "\n" + chain.howto(cache_dir))
