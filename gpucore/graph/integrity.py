"""What a ``.gcsr`` must satisfy before a solver or the oracle reads it: its shape, and its content digest.

Two checks, both raising a one-line ``GpucoreError`` naming the file:

- ``check_structure`` (every load; a few vectorized passes over the arrays): the arrays have the
  dtypes and lengths of format version 1, both ``indptr`` run from 0 to m without decreasing, every
  vertex id (``out_dst``, ``in_src``) lies in [0, n) and every arc id (``in_eid``) in [0, m).
  Kernels index memory with these values without bounds checks, so a file that fails here would
  otherwise read outside its arrays (a segmentation fault, or garbage).
- ``check_content`` (the SHA-256 of the array bytes against the header's): run once per version of
  the file. The sidecar (``graph.gcsr.json``) keeps a record ``content_check`` = {size, mtime_ns,
  sha256} of the last successful check (``write_sidecar`` for the writer, who hashed the arrays
  as it wrote them; the loader after a check). A load skips the digest when the file has the
  record's size and modification time and the sidecar itself is younger than that time (same file
  system, same clock; ``write_sidecar`` waits for the clock to move on): any write to the graph
  after the record then gives it another modification time, so an edit of the array bytes is
  always seen. What a size-and-time cache cannot see (bytes altered with the time set back, or
  silent disk corruption) ``gpucore info --verify`` / ``verify=True`` finds: they always hash.

Cost at LiveJournal size (4.85 M vertices, 69 M arcs, a 1.41 GiB file in the page cache, one core of
a shared AMD EPYC): the structure check 0.3 s, the digest 5.2 s (SHA-256 at 270-600 MB/s), so a load
that trusts the record costs 0.3 s and the first load of a copied file 5.5 s.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from gpucore.atomic import write_json
from gpucore.errors import GpucoreError
from gpucore.graph.gcsr import content_digest

#: sidecar key of the cached digest check
RECORD = "content_check"
#: (name, allowed dtypes, length: "n+1" | "m" | "n") of every array of format version 1
LAYOUT = (
    ("out_indptr", ("<i8",), "n+1"),
    ("out_dst", ("<i4",), "m"),
    ("out_prob", ("<f4",), "m"),
    ("in_indptr", ("<i8",), "n+1"),
    ("in_src", ("<i4",), "m"),
    ("in_eid", ("<i4", "<i8"), "m"),
    ("in_prob", ("<f4",), "m"),
    ("cost", ("<f4",), "n"),
    ("original_id", ("<i8",), "n"),
)
_MAX_N = np.iinfo(np.int32).max


def sidecar_path(gcsr_path) -> Path:
    """The statistics file beside a ``.gcsr``: ``graph.gcsr`` -> ``graph.gcsr.json``."""
    gcsr_path = Path(gcsr_path)
    return gcsr_path.with_name(gcsr_path.name + ".json")


# ---- structure ---------------------------------------------------------------------------------


def check_structure(path, n: int, m: int, arrays: dict[str, np.ndarray]) -> None:
    """Refuse arrays whose dtypes, lengths, offsets or ids would make a kernel read out of bounds."""
    if n > _MAX_N:
        raise GpucoreError(f"{path}: n = {n:,} vertices do not fit the int32 vertex ids of .gcsr version 1")
    lengths = {"n+1": n + 1, "m": m, "n": n}
    for name, dtypes, length in LAYOUT:
        arr = arrays[name]
        if arr.dtype.str not in dtypes:
            raise GpucoreError(f"{path}: corrupt .gcsr (array {name} has dtype {arr.dtype.str}, expected "
                               f"{' or '.join(dtypes)})")
        if arr.shape != (lengths[length],):
            raise GpucoreError(f"{path}: corrupt .gcsr (array {name} has {arr.size:,} entries, expected "
                               f"{length} = {lengths[length]:,})")
    for name in ("out_indptr", "in_indptr"):
        _check_offsets(path, name, arrays[name], m)
    for name, bound, what in (("out_dst", n, "vertex"), ("in_src", n, "vertex"), ("in_eid", m, "arc")):
        _check_ids(path, name, arrays[name], bound, what)


def _check_offsets(path, name: str, indptr: np.ndarray, m: int) -> None:
    if indptr[0] != 0 or indptr[-1] != m:
        raise GpucoreError(f"{path}: corrupt .gcsr (array {name} runs from {int(indptr[0])} to {int(indptr[-1])}, "
                           f"expected 0 to m = {m:,})")
    if indptr.size > 1 and bool(np.any(indptr[1:] < indptr[:-1])):
        v = int(np.argmax(indptr[1:] < indptr[:-1]))
        raise GpucoreError(f"{path}: corrupt .gcsr (array {name} decreases after vertex {v})")


def _check_ids(path, name: str, ids: np.ndarray, bound: int, what: str) -> None:
    if ids.size == 0:
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= bound:
        bad = low if low < 0 else high
        raise GpucoreError(f"{path}: corrupt .gcsr (array {name} holds {what} id {bad}, outside [0, {bound:,}))")


# ---- content digest ----------------------------------------------------------------------------


def check_content(path, header: dict, *, force: bool = False) -> bool:
    """Compare the SHA-256 of the array bytes with the header's, unless the sidecar's record says this
    version of the file (size, mtime) already passed (``force``: always compare). Returns whether the
    digest was computed. Records a successful computation in the sidecar when there is one."""
    path = Path(path)
    stat = path.stat()
    side = _read_sidecar(path)
    if not force and _trusted(side, stat, header["sha256"]):
        return False
    if content_digest(path, header) != header["sha256"]:
        raise GpucoreError(f"{path}: content checksum mismatch (the array bytes were altered: the file is corrupt; "
                           "preprocess the edge list again)")
    if side is not None:
        _store(path, side, stat, header["sha256"])
    return True


def write_sidecar(path, stats: dict) -> dict:
    """Write the sidecar of a graph just written, with the record that its content is ``stats["sha256"]``
    (the writer computed it from the arrays themselves), once the file system's clock has moved past
    the graph's modification time (so that a later edit of the graph changes that time). Returns what
    it wrote."""
    path = Path(path)
    stat = path.stat()
    data = _with_record(stats, stat, stats["sha256"])
    deadline = time.monotonic() + 5.0
    while True:
        write_json(sidecar_path(path), data)
        if sidecar_path(path).stat().st_mtime_ns > stat.st_mtime_ns or time.monotonic() > deadline:
            return data
        time.sleep(0.005)


def _trusted(side: dict | None, stat: os.stat_result, sha256: str) -> bool:
    record = side.get(RECORD) if side else None
    if not isinstance(record, dict):
        return False
    same = [record.get("size"), record.get("mtime_ns"), record.get("sha256")] == [stat.st_size, stat.st_mtime_ns,
                                                                                 sha256]
    return same and side["_mtime_ns"] > stat.st_mtime_ns


def _read_sidecar(path: Path) -> dict | None:
    """The sidecar as a dict (with its own ``_mtime_ns``), or None when absent or not ours."""
    side = sidecar_path(path)
    try:
        mtime = side.stat().st_mtime_ns
        data = json.loads(side.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    return dict(data, _mtime_ns=mtime)


def _with_record(side: dict, stat: os.stat_result, sha256: str) -> dict:
    data = {k: v for k, v in side.items() if k != "_mtime_ns"}
    data[RECORD] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}
    return data


def _store(path: Path, side: dict, stat: os.stat_result, sha256: str) -> None:
    try:
        write_json(sidecar_path(path), _with_record(side, stat, sha256))
    except (OSError, GpucoreError):  # a read-only folder: the digest is computed again next time
        pass
