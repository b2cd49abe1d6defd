"""The train / validation / test split, and reading and writing it as files.

A :class:`Split` holds the parts a protocol (:mod:`cofiviz.protocols`) cuts from one
:class:`~cofiviz.Ratings` table, or that :meth:`Split.from_files` reads from separate files, all in one
index space. Parts read from files are checked against each other by :func:`cofiviz.split.parts.check_parts`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..ratings.columns import check_ids
from ..datasets.files import read_frame
from ..util.errors import DataError
from .parts import check_parts
from ..ratings import Ratings

__all__ = ["Split"]


@dataclass
class Split:
    """A train / validation / test split in one shared index space.

    Attributes
    ----------
    train, test : Ratings
    valid : Ratings or None
    negatives : Ratings or None
        Sampled unrated items (rating 0, counted irrelevant) added to each user's test candidates
        by the top-N protocol; ``None`` elsewhere.
    given : Ratings or None
        Strong generalization only: the N ratings of each *test* user that a model may use to fold
        that user in (fit the user's factors with the item factors frozen) before ranking the
        user's ``test`` items. ``train`` then holds only the training users. ``None`` elsewhere.
    protocol : dict
        The protocol's name, parameters and seed, and what its filters removed.
    report : dict
        What reading the parts found (:meth:`from_frames`): ``report["unseen"]["test"]`` (and
        ``["valid"]``) counts the users and items with no rating in train (nor in given). Empty for
        splits made in process.
    """

    train: Ratings
    test: Ratings
    valid: Ratings | None = None
    negatives: Ratings | None = None
    protocol: dict = field(default_factory=dict)
    given: Ratings | None = None
    report: dict = field(default_factory=dict)

    def candidates(self, part: str = "test") -> Ratings:
        """The lists a ranking is scored on: ``part``'s ratings, plus the sampled negatives for test."""
        base = {"train": self.train, "valid": self.valid, "test": self.test, "given": self.given}[part]
        if base is None:
            raise DataError(f"this split has no {part!r} part")
        if part != "test" or self.negatives is None or len(self.negatives) == 0:
            return base
        n = self.negatives
        return base.like(np.concatenate([base.users, n.users]), np.concatenate([base.items, n.items]),
                         np.concatenate([base.ratings, n.ratings]), name=f"{base.name or 'test'}+negatives",
                         allow_zero=True)

    def parts(self) -> Iterable[tuple[str, Ratings]]:
        for part in ("train", "valid", "test", "negatives", "given"):
            r = getattr(self, part)
            if r is not None:
                yield part, r

    def write(self, directory: str | os.PathLike, sep: str = "\t") -> Path:
        """Write ``train.tsv``, ``test.tsv`` (and ``valid.tsv``, ``negatives.tsv``, ``given.tsv``) and
        ``protocol.json``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        ext = "tsv" if sep == "\t" else "csv"
        for part, r in self.parts():
            r.write(directory / f"{part}.{ext}", sep=sep)
        meta = dict(self.protocol)
        meta["scale"] = list(self.train.scale)
        meta["unrated_parts"] = [part for part, r in self.parts() if r.allow_zero]
        (directory / "protocol.json").write_text(json.dumps(meta, indent=2, default=str))
        return directory

    @classmethod
    def read(cls, directory: str | os.PathLike) -> "Split":
        """Read a split written by :meth:`write`."""
        directory = Path(directory)
        files = {}
        for part in ("train", "valid", "test", "negatives", "given"):
            for ext in ("tsv", "csv"):
                if (directory / f"{part}.{ext}").exists():
                    files[part] = directory / f"{part}.{ext}"
        if "train" not in files or "test" not in files:
            raise DataError(f"{directory}: expected train.tsv and test.tsv (written by Split.write)")
        meta = {}
        if (directory / "protocol.json").exists():
            meta = json.loads((directory / "protocol.json").read_text())
        scale = tuple(meta.pop("scale")) if "scale" in meta else None
        unrated = meta.pop("unrated_parts", ())
        return cls.from_files(files["train"], files["test"], files.get("valid"), negatives=files.get("negatives"),
                              given=files.get("given"), scale=scale, protocol=meta, unrated=unrated)

    @classmethod
    def from_files(cls, train, test, valid=None, *, negatives=None, given=None, scale=None, protocol=None,
                   duplicates: str = "error", user=None, item=None, rating=None, sep=None,
                   encoding: str = "utf-8", unrated=()) -> "Split":
        """Read ``user item rating`` files (CSV, TSV or Parquet, maybe compressed) into one shared index space.

        ``user``, ``item``, ``rating``, ``sep`` and ``encoding`` apply to every file, as in
        :func:`cofiviz.datasets.read`; the parts are checked against each other by :meth:`from_frames`.
        ``unrated`` names the parts beside ``negatives`` that hold unrated candidates (rating 0).
        """
        files = {"train": train, "test": test, "valid": valid, "negatives": negatives, "given": given}
        frames = {part: read_frame(path, user=user, item=item, rating=rating, sep=sep, encoding=encoding)
                  for part, path in files.items() if path is not None}
        return cls.from_frames(frames, scale=scale, protocol=protocol, duplicates=duplicates, sources=files,
                               unrated=unrated)

    @classmethod
    def from_frames(cls, frames: dict[str, pd.DataFrame], *, scale=None, protocol=None,
                    duplicates: str = "error", sources: dict | None = None, unrated=()) -> "Split":
        """Validate each part's ``user item rating`` frame and put all parts in one index space.

        Each frame is validated by :meth:`Ratings.from_dataframe`; then the parts are checked against
        each other (:func:`cofiviz.split.parts.check_parts`): a test, validation or given part sharing no
        user or no item with train is an error (users of ``given`` count as known), and so is a
        (user, item) pair in two parts (a sampled negative included). Users and items of test and
        validation with no rating in train (nor given) are counted in ``split.report["unseen"]``.
        ``negatives`` and the parts named in ``unrated`` may hold unrated candidates (rating 0, outside the
        rating scale): the validation part of :func:`cofiviz.protocols.gapfm_top_n`, for one.

        Raises
        ------
        DataError
            Naming the file (``sources``) and line of the first problem.
        """
        sources = sources or {}
        unrated = {"negatives", *unrated}
        parts = {}
        labels = {}
        for part, df in frames.items():
            label = str(sources.get(part) or part)
            labels[part] = (f"{label}: line" if df.attrs.get("lines") else f"{label}: row", df.index.to_numpy())
            try:
                parts[part] = Ratings.from_dataframe(
                    df, scale=None if part in unrated else scale, duplicates=duplicates,
                    row_label=labels[part][0], name=part)
            except DataError as exc:
                raise DataError(str(exc)) from None
        if scale is None:
            lo = min(p.scale[0] for k, p in parts.items() if k not in unrated)
            hi = max(p.scale[1] for k, p in parts.items() if k not in unrated)
            scale = (lo, hi)
        user_ids = np.unique(np.concatenate([p.user_ids.astype(str) if _mixed(parts, "user_ids") else p.user_ids
                                             for p in parts.values()]))
        item_ids = np.unique(np.concatenate([p.item_ids.astype(str) if _mixed(parts, "item_ids") else p.item_ids
                                             for p in parts.values()]))
        out, maps = {}, {}
        for part, p in parts.items():
            uid = p.user_ids.astype(str) if _mixed(parts, "user_ids") else p.user_ids
            iid = p.item_ids.astype(str) if _mixed(parts, "item_ids") else p.item_ids
            maps[part] = (np.searchsorted(user_ids, uid), np.searchsorted(item_ids, iid))
            out[part] = Ratings(maps[part][0][p.users], maps[part][1][p.items], p.ratings, user_ids=user_ids,
                                item_ids=item_ids, scale=scale, name=part, allow_zero=part in unrated)

        def row_keys(part: str) -> np.ndarray:
            """``user * n_items + item`` in the shared index space of every row of ``part``'s frame."""
            df, (row_label, rows) = frames[part], labels[part]
            codes = [pd.factorize(check_ids(df[col], col, col, rows, row_label)[0], sort=True)[0]
                     for col in ("user", "item")]
            return maps[part][0][codes[0]].astype(np.int64) * len(item_ids) + maps[part][1][codes[1]]

        names = {part: str(sources.get(part) or part) for part in frames}
        unseen = check_parts(out, names, row_keys, labels)
        return cls(train=out["train"], test=out["test"], valid=out.get("valid"), negatives=out.get("negatives"),
                   protocol=dict(protocol or {}), given=out.get("given"), report={"unseen": unseen})


def _mixed(parts: dict, attr: str) -> bool:
    kinds = {getattr(p, attr).dtype.kind for p in parts.values()}
    return len(kinds) > 1
