"""The ``.gcsr`` binary graph format (version 1): one memory-mappable file per graph.

Layout (little-endian)::

    offset  size  field
    0       8     magic  b"GCSR\\x00\\r\\n\\x1a"
    8       4     format version (uint32, = 1)
    12      4     header size H in bytes (uint32, a multiple of 64)
    16      8     n, vertices (uint64)
    24      8     m, arcs (uint64)
    32      8     flags (uint64; bit 0: the source graph was directed)
    40      8     cost scale = max raw cost (float64)
    48      4     number of arrays A (uint32)
    52      4     length J of the metadata JSON (uint32)
    56      32    SHA-256 of the array bytes, in table order (the graph's content digest)
    88      40    zero
    128     64*A  array table: name (24 bytes, NUL padded), numpy dtype string (8 bytes, e.g. '<i8'),
                  byte offset (uint64, a multiple of 64), element count (uint64), 16 zero bytes
    ...     J     metadata JSON (UTF-8): schemes and statistics (same content as the sidecar)
    H-4     4     CRC-32 of header bytes [0, H-4)
    then the arrays, each starting at a 64-byte aligned offset.

Arrays of version 1: ``out_indptr`` int64[n+1], ``out_dst`` int32[m], ``out_prob`` float32[m]
(indexed by original edge id = out-CSR position), ``in_indptr`` int64[n+1], ``in_src`` int32[m],
``in_eid`` int32|int64[m], ``in_prob`` float32[m], ``cost`` float32[n] (raw), ``original_id``
int64[n]. Loading maps the file read-only after the checks of ``gpucore.graph.integrity`` (the
structure on every load, the content digest once per version of the file).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from gpucore.atomic import atomic_path
from gpucore.errors import GpucoreError

MAGIC = b"GCSR\x00\r\n\x1a"
VERSION = 1
ALIGN = 64
_FIXED = struct.Struct("<8sIIQQQdII32s40x")
_ENTRY = struct.Struct("<24s8sQQ16x")
assert _FIXED.size == 128 and _ENTRY.size == 64
FLAG_DIRECTED = 1
ARRAY_ORDER = (
    "out_indptr",
    "out_dst",
    "out_prob",
    "in_indptr",
    "in_src",
    "in_eid",
    "in_prob",
    "cost",
    "original_id",
)


def _round_up(x: int, a: int = ALIGN) -> int:
    return (x + a - 1) // a * a


def write_gcsr(path, n: int, m: int, arrays: dict[str, np.ndarray], meta: dict, directed: bool, cost_scale: float) -> str:
    """Write a ``.gcsr`` atomically. Returns the content digest (hex SHA-256 of the arrays)."""
    missing = [name for name in ARRAY_ORDER if name not in arrays]
    if missing:
        raise ValueError(f"missing arrays {missing}")
    meta_bytes = json.dumps(meta, sort_keys=True).encode()
    header_size = _round_up(_FIXED.size + _ENTRY.size * len(ARRAY_ORDER) + len(meta_bytes) + 4)
    entries, offset = [], header_size
    for name in ARRAY_ORDER:
        arr = np.ascontiguousarray(arrays[name])
        entries.append((name, arr, offset))
        offset = _round_up(offset + arr.nbytes)
    digest = hashlib.sha256()
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(b"\0" * header_size)
        for name, arr, off in entries:
            fh.seek(off)
            view = memoryview(arr.reshape(-1).view(np.uint8))
            for start in range(0, len(view), 1 << 28):
                piece = view[start : start + (1 << 28)]
                digest.update(piece)
                fh.write(piece)
        end = entries[-1][2] + entries[-1][1].nbytes
        fh.truncate(_round_up(end))
        table = b"".join(
            _ENTRY.pack(name.encode(), arr.dtype.str.encode(), off, arr.size) for name, arr, off in entries
        )
        head = _FIXED.pack(
            MAGIC,
            VERSION,
            header_size,
            n,
            m,
            FLAG_DIRECTED if directed else 0,
            float(cost_scale),
            len(entries),
            len(meta_bytes),
            digest.digest(),
        )
        body = (head + table + meta_bytes).ljust(header_size - 4, b"\0")
        fh.seek(0)
        fh.write(body + struct.pack("<I", zlib.crc32(body)))
        fh.flush()
        os.fsync(fh.fileno())
    return digest.hexdigest()


def read_header(path) -> dict:
    """Parse and check the header of a ``.gcsr`` file (magic, version, CRC, size)."""
    path = Path(path)
    if path.is_dir():
        raise GpucoreError(f"{path}: is a directory, not a .gcsr file")
    if not path.is_file():
        raise GpucoreError(f"{path}: no such file")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fixed = fh.read(_FIXED.size)
        if len(fixed) < _FIXED.size or not fixed.startswith(MAGIC):
            raise GpucoreError(f"{path}: not a .gcsr file (bad magic)")
        magic, version, header_size, n, m, flags, cost_scale, count, meta_len, digest = _FIXED.unpack(fixed)
        if version != VERSION:
            raise GpucoreError(f"{path}: .gcsr format version {version} is not supported (this gpucore reads {VERSION})")
        if header_size > size or header_size < _FIXED.size + _ENTRY.size * count + meta_len + 4:
            raise GpucoreError(f"{path}: corrupt .gcsr header (size fields)")
        fh.seek(0)
        header = fh.read(header_size)
    (crc,) = struct.unpack("<I", header[-4:])
    if zlib.crc32(header[:-4]) != crc:
        raise GpucoreError(f"{path}: corrupt .gcsr header (CRC mismatch)")
    arrays = {}
    for i in range(count):
        raw_name, dtype, offset, length = _ENTRY.unpack_from(header, _FIXED.size + i * _ENTRY.size)
        name = raw_name.rstrip(b"\0").decode()
        dt = np.dtype(dtype.rstrip(b"\0").decode())
        if offset + length * dt.itemsize > size:
            raise GpucoreError(f"{path}: truncated .gcsr file (array {name} runs past the end)")
        arrays[name] = (dt, int(offset), int(length))
    meta_start = _FIXED.size + _ENTRY.size * count
    meta = json.loads(header[meta_start : meta_start + meta_len].decode())
    return {
        "version": version,
        "n": int(n),
        "m": int(m),
        "directed": bool(flags & FLAG_DIRECTED),
        "cost_scale": float(cost_scale),
        "sha256": digest.hex(),
        "arrays": arrays,
        "meta": meta,
    }


def map_arrays(path, header: dict) -> dict[str, np.ndarray]:
    """Read-only memory-mapped views of every array of a ``.gcsr`` file."""
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, (dt, offset, length) in header["arrays"].items():
        out[name] = np.ndarray((length,), dtype=dt, buffer=mm, offset=offset)
    return out


def content_digest(path, header: dict) -> str:
    """Recompute the SHA-256 of the array bytes (what the header's digest promises)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for name in ARRAY_ORDER:
            dt, offset, length = header["arrays"][name]
            fh.seek(offset)
            remaining = length * dt.itemsize
            while remaining:
                block = fh.read(min(remaining, 1 << 26))
                if not block:
                    raise GpucoreError(f"{path}: truncated .gcsr file")
                digest.update(block)
                remaining -= len(block)
    return digest.hexdigest()
