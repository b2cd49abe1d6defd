"""Saving a fitted model to a ``.npz`` and a ``.json``, and checking a save before loading it.

:meth:`cofiviz.models.Model.save` and :meth:`~cofiviz.models.Model.load` are the entry points; this
module holds the file format (:data:`FORMAT_VERSION`) and every check :meth:`~cofiviz.models.Model.load`
makes, so that a damaged, truncated or mismatched save is a :class:`~cofiviz.util.errors.DataError` naming
the file and the problem.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..util.errors import CofivizError, DataError, ParameterError
from ..util.jsonable import jsonable
from ..ratings import Ratings

__all__ = ["FORMAT_VERSION", "save", "read_meta", "restore"]

#: Version of the files :meth:`Model.save` writes and :meth:`Model.load` reads. 2: the JSON records the
#: SHA-256 of the ``.npz`` and the name, shape and dtype of every array in it. Saves of format 1, which
#: had no checksum to tie the two files together, are refused with a message to save the model again.
FORMAT_VERSION = 2
#: Keys every saved JSON holds.
_META_KEYS = ("format", "model", "class", "params", "scale", "checksum", "arrays")
#: Arrays of the training table in every ``.npz``.
_TRAIN_ARRAYS = ("train__users", "train__items", "train__ratings", "train__user_ids", "train__item_ids")


def save(model, path) -> Path:
    """Save fitted ``model`` to ``path`` with suffix ``.npz`` (arrays) and ``.json`` (parameters, ids, history).

    No pickle is used: learned arrays and the training table go into the ``.npz`` (numbers and
    fixed-width strings only, readable with ``np.load(..., allow_pickle=False)``); the model
    name, class, parameters and history into the JSON, with the SHA-256 of the ``.npz`` and the
    name, shape and dtype of each of its arrays (format :data:`FORMAT_VERSION`), which
    :meth:`Model.load` checks. Each file is written under a temporary name and then renamed, so an
    interrupted save leaves the previous files or a pair whose checksums disagree, never a
    half-written file under the final name. Returns the ``.npz`` path.
    """
    model._require_fitted()
    path = Path(path)
    npz = path.with_suffix(".npz")
    js = npz.with_suffix(".json")
    npz.parent.mkdir(parents=True, exist_ok=True)
    arrays = {f"state__{k}": np.asarray(v) for k, v in model._state().items()}
    for k, v in arrays.items():
        if v.dtype.kind == "O":
            raise TypeError(f"{type(model).__name__}._state()[{k[7:]!r}] is an object array; "
                            "save needs numeric or string arrays")  # pragma: no cover
    t = model.train_
    arrays.update(train__users=t.users, train__items=t.items, train__ratings=t.ratings,
                  train__user_ids=t.user_ids, train__item_ids=t.item_ids)
    tmp_npz, tmp_js = npz.with_name(npz.name + ".tmp"), js.with_name(js.name + ".tmp")
    try:
        with open(tmp_npz, "wb") as fh:
            np.savez(fh, **arrays)
        meta = {"format": FORMAT_VERSION, "model": model.model_name(), "class": type(model).__name__,
                "params": jsonable(model.get_params()), "scale": list(t.scale),
                "checksum": {"sha256": _sha256(tmp_npz), "bytes": tmp_npz.stat().st_size},
                "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str} for k, v in arrays.items()},
                "history": jsonable(model.history_), "fit_seconds": model.fit_seconds_,
                "stopped_reason": model.stopped_reason_, "extra": jsonable(model._extra_meta())}
        tmp_js.write_text(json.dumps(meta, indent=2, default=str))
        os.replace(tmp_npz, npz)
        os.replace(tmp_js, js)
    finally:
        for tmp in (tmp_npz, tmp_js):
            tmp.unlink(missing_ok=True)
    return npz


def read_meta(path) -> tuple[Path, Path, dict]:
    """``(npz, json, meta)`` of the save at ``path``: both files exist and the JSON is a model description
    of format :data:`FORMAT_VERSION` with every key :func:`save` writes.

    Raises
    ------
    DataError
        A missing file; a JSON that is not a model description, lacks a key or has another format.
    """
    path = Path(path)
    npz, js = path.with_suffix(".npz"), path.with_suffix(".json")
    missing = [str(f) for f in (npz, js) if not f.is_file()]
    if missing:
        raise DataError(f"expected {npz} and {js} written by Model.save; missing: {', '.join(missing)}")
    meta = _read_meta(js)
    return npz, js, meta


def restore(klass, npz: Path, js: Path, meta: dict):
    """The model of class ``klass`` a save holds, once its ``.npz`` is checked against ``meta``.

    The ``.npz`` has the SHA-256 the JSON records and opens; it holds every array the JSON lists
    with the recorded shape and dtype, the training table, and every array ``klass``'s
    ``_state_spec`` declares, shaped for the parameters and the training table.

    Raises
    ------
    DataError
        A ``.npz`` that is damaged or truncated, or from another save than the JSON (checksum
        mismatch); a missing array; parameters or arrays that do not make a ``klass``.
    """
    _verify_checksum(npz, js, meta["checksum"])
    data = _read_npz(npz)
    for name, info in meta["arrays"].items():
        if name not in data:
            raise DataError(f"{npz} has no array {name!r}, which {js} lists")
        if list(data[name].shape) != list(info.get("shape", [])) or data[name].dtype.str != info.get("dtype"):
            raise DataError(f"{npz}: array {name!r} is {data[name].dtype.str} of shape {list(data[name].shape)}, "
                            f"{js} records {info.get('dtype')} of shape {info.get('shape')}")
    absent = [k for k in _TRAIN_ARRAYS if k not in data]
    if absent:
        raise DataError(f"{npz} has no training-table array {absent[0]!r}; it was not written by Model.save")
    try:
        model = klass(**meta["params"])
    except ParameterError as exc:
        raise DataError(f"{js}: its parameters do not fit a {klass.__name__}: {_one_line(exc)}") from None
    try:
        train = Ratings(data["train__users"], data["train__items"], data["train__ratings"],
                        user_ids=data["train__user_ids"], item_ids=data["train__item_ids"],
                        scale=tuple(meta["scale"]), name="train")
    except (DataError, ValueError, TypeError, IndexError) as exc:
        raise DataError(f"{npz}: the training table is not valid: {_one_line(exc)}") from None
    state = {k[len("state__"):]: v for k, v in data.items() if k.startswith("state__")}
    spec = model._state_spec(train.n_users, train.n_items)
    for key, shape in (spec or {}).items():
        if key not in state:
            raise DataError(f"{npz} has no array 'state__{key}', which a {klass.__name__} needs")
        got = state[key].shape
        if len(got) != len(shape) or any(want is not None and g != want for g, want in zip(got, shape)):
            want = "(" + ", ".join("any" if w is None else str(w) for w in shape) + ")"
            raise DataError(f"{npz}: array 'state__{key}' has shape {got}, but a {klass.__name__} with the "
                            f"parameters of {js} and a training table of {train.n_users} users x "
                            f"{train.n_items} items needs {want}")
    try:
        model._set_extra_meta(meta.get("extra") or {})
        model._set_state(state)
    except KeyError as exc:
        raise DataError(f"{npz} has no array 'state__{exc.args[0]}', which a {klass.__name__} needs") from None
    except (CofivizError, ValueError, TypeError, IndexError, AttributeError) as exc:
        raise DataError(f"{npz}: the arrays do not make a {klass.__name__}: {_one_line(exc)}") from None
    model.train_ = train
    model.history_ = meta.get("history", [])
    model.fit_seconds_ = meta.get("fit_seconds", float("nan"))
    model.stopped_reason_ = meta.get("stopped_reason", "")
    return model


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _read_meta(js: Path) -> dict:
    """The JSON of a save, checked for the keys :meth:`Model.load` reads."""
    try:
        meta = json.loads(js.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{js}: not a model description written by Model.save (not JSON: {exc})") from None
    if not isinstance(meta, dict):
        raise DataError(f"{js}: not a model description written by Model.save (a JSON {type(meta).__name__}, "
                        "expected an object)")
    if "format" not in meta:
        raise DataError(f"{js}: the model description lacks the key 'format'")
    fmt = meta["format"]
    if fmt == 1 and not isinstance(fmt, bool):
        raise DataError(f"{js} is a format-1 save, written before saves carried a checksum of their .npz, so "
                        "its two files cannot be checked against each other; fit the model again and save it")
    if fmt != FORMAT_VERSION:
        raise DataError(f"{js}: format {fmt!r} is not one this cofiviz reads (it reads format {FORMAT_VERSION})")
    absent = [k for k in _META_KEYS if k not in meta]
    if absent:
        raise DataError(f"{js}: the model description lacks the key(s) {', '.join(map(repr, absent))}")
    for key, kind in (("model", str), ("class", str), ("params", dict), ("scale", list)):
        if not isinstance(meta[key], kind):
            raise DataError(f"{js}: {key!r} must be a JSON {'string' if kind is str else kind.__name__}, "
                            f"got {meta[key]!r}")
    if len(meta["scale"]) != 2:
        raise DataError(f"{js}: 'scale' must be [lowest, highest], got {meta['scale']!r}")
    if not isinstance(meta["checksum"], dict) or not isinstance(meta["checksum"].get("sha256"), str):
        raise DataError(f"{js}: 'checksum' must be an object with the 'sha256' of the .npz, got {meta['checksum']!r}")
    if not isinstance(meta["arrays"], dict) or not all(isinstance(v, dict) for v in meta["arrays"].values()):
        raise DataError(f"{js}: 'arrays' must map each array name to its shape and dtype")
    return meta


def _verify_checksum(npz: Path, js: Path, checksum: dict) -> None:
    """Compare the ``.npz`` with the SHA-256 its JSON records; tell a damaged file from another save's."""
    if _sha256(npz) == checksum["sha256"]:
        return
    try:
        with zipfile.ZipFile(npz) as zf:
            intact = zf.testzip() is None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, zlib.error):
        intact = False
    if intact:
        raise DataError(f"{js} and {npz} are not from the same save (checksum mismatch: {npz} is a readable "
                        f"archive, but not the one {js} describes)")
    size = checksum.get("bytes")
    got = npz.stat().st_size
    how = f"{got:,} bytes, the save wrote {size:,}" if isinstance(size, int) and size != got else "its bytes changed"
    raise DataError(f"{npz} is damaged or truncated (checksum mismatch with {js}; {how})")


def _read_npz(npz: Path) -> dict[str, np.ndarray]:
    """Every array of a ``.npz``, read into memory; an unreadable archive is a :class:`DataError`."""
    try:
        data = np.load(npz, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):  # a lone .npy array under the .npz name
            raise ValueError("it holds a single array, not an archive of named arrays")
        with data:
            return {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, zlib.error) as exc:
        raise DataError(f"{npz} is not a readable .npz archive ({type(exc).__name__}: {_one_line(exc)})") from None
