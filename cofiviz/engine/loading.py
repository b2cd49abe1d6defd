"""Data specs and the splits made of them, loaded once per process.

A data spec is ``{"name": DATASET, **loader_kwargs}`` (``{"name": "netflix-prize", "path": FOLDER}`` for a data set read
from your own files) or ``{"path": FILE}`` (a ratings file); its *data version* is a hash
of the loaded ratings' content, part of every store key. Experiments' cells, reproductions and the sweep's
workers load the same spec many times: :func:`load_data` and :func:`make_split` keep the last few in small
LRU caches.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

from .. import datasets, protocols
from ..util.errors import ParameterError
from ..util.jsonable import canonical_json
from ..ratings import Ratings
from ..split import Split

__all__ = ["load_data", "data_version", "make_split"]

_DATA_CACHE: "OrderedDict[str, tuple[Ratings, str]]" = OrderedDict()
_SPLIT_CACHE: "OrderedDict[str, Split]" = OrderedDict()
_DATA_CACHE_SIZE = 4
_SPLIT_CACHE_SIZE = 8


def _fingerprint(r: Ratings) -> str:
    h = hashlib.sha256()
    for arr in (r.users, r.items, r.ratings):
        h.update(np.ascontiguousarray(arr).tobytes())
    for ids in (r.user_ids, r.item_ids):
        h.update("\x1f".join(map(str, np.asarray(ids).tolist())).encode())
    h.update(repr(tuple(r.scale)).encode())
    probe = getattr(r, "probe", None)   # the Netflix Prize's probe set, which its protocol tests on
    if probe is not None:
        h.update(b"probe")
        h.update(np.packbits(np.asarray(probe, dtype=bool)).tobytes())
    return h.hexdigest()[:16]


def load_data(data: dict) -> tuple[Ratings, str]:
    """``(ratings, data_version)`` of a data spec ``{"name": ..., **loader_kwargs}`` or ``{"path": FILE}``.

    Loaded once per process (a small LRU cache). The data version is a hash of the ratings' content
    (triples, ids and scale, and the probe set of data that has one), so a changed file or generator gives new
    store keys.
    """
    key = canonical_json(data)
    if key in _DATA_CACHE:
        _DATA_CACHE.move_to_end(key)
        return _DATA_CACHE[key]
    spec = dict(data)
    if "path" in spec and "name" not in spec:
        path = spec.pop("path")
        ratings = datasets.read(path, **spec)
    else:
        name = spec.pop("name", None)
        if name is None:
            raise ParameterError("data needs a 'name' (a dataset: " + ", ".join(datasets.available())
                                 + ") or a 'path' (a ratings file)")
        ratings = datasets.load(name, **spec)
    out = (ratings, _fingerprint(ratings))
    _DATA_CACHE[key] = out
    while len(_DATA_CACHE) > _DATA_CACHE_SIZE:
        _DATA_CACHE.popitem(last=False)
    return out


def data_version(data: dict) -> str:
    """The content hash of a data spec (see :func:`load_data`)."""
    return load_data(data)[1]


def make_split(data: dict, protocol: str, params: dict, seed: int) -> Split:
    """The protocol's split of the data (cached per process)."""
    key = canonical_json([data, protocol, params, seed])
    if key in _SPLIT_CACHE:
        _SPLIT_CACHE.move_to_end(key)
        return _SPLIT_CACHE[key]
    ratings, _ = load_data(data)
    split = protocols.make(protocol, ratings, seed=seed, **params)
    _SPLIT_CACHE[key] = split
    while len(_SPLIT_CACHE) > _SPLIT_CACHE_SIZE:
        _SPLIT_CACHE.popitem(last=False)
    return split
