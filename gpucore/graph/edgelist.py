"""Readers for SNAP edge lists and KONECT ``out.*`` files (plain, gzip or bz2).

Format accepted, per line: optional leading blanks; ``#`` or ``%`` starts a comment line; blank
lines are skipped; otherwise two non-negative integer ids separated by tabs or spaces, and
anything after a further blank (weights, timestamps) is ignored. Lines may end in LF or CRLF.
KONECT files carry a first line ``% sym|asym ...`` telling whether the graph is undirected.

A malformed line raises ``GpucoreError`` naming the file, the line number and the line; corrupt
or truncated compressed data, and a file with no edge line, raise one-line errors too.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError
from gpucore.progress import progress

CHUNK_BYTES = 64 << 20
_NL, _CR, _SP, _TAB, _HASH, _PCT = 10, 13, 32, 9, 35, 37


@dataclass
class EdgeList:
    """Parsed edge lines of one file: ``src[i] -> dst[i]`` with the file's own ids (int64)."""

    src: np.ndarray
    dst: np.ndarray
    sha256: str
    lines: int
    konect_kind: str | None  # "sym", "asym", "bip" for KONECT files, else None


class _HashingReader(io.RawIOBase):
    """Wraps a binary file: hashes and counts every byte read (the raw, compressed bytes)."""

    def __init__(self, fh):
        self._fh = fh
        self.digest = hashlib.sha256()
        self.consumed = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self._fh.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.digest.update(data)
        self.consumed += n
        return n


def _open_decompressed(raw: io.RawIOBase, head: bytes):
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=io.BufferedReader(raw, CHUNK_BYTES), mode="rb"), "gzip"
    if head.startswith(b"BZh"):
        return bz2.BZ2File(io.BufferedReader(raw, CHUNK_BYTES), mode="rb"), "bz2"
    return io.BufferedReader(raw, CHUNK_BYTES), "plain"


@njit(parallel=True, cache=True)
def _count_newlines_parallel(buf, starts, ends, counts):
    for t in prange(starts.shape[0]):
        c = 0
        for i in range(starts[t], ends[t]):
            if buf[i] == _NL:
                c += 1
        counts[t] = c


@njit(inline="always", cache=True)
def _parse_id(buf, i, end):
    """A non-negative decimal id of 1..18 digits at buf[i:]: (value, next position); value -1 if none."""
    value = 0
    digits = 0
    while i < end and buf[i] >= 48 and buf[i] <= 57:
        value = value * 10 + (buf[i] - 48)
        digits += 1
        i += 1
    if digits == 0 or digits > 18:
        return -1, i
    return value, i


@njit(cache=True)
def _parse_range(buf, start, end, src, dst, out):
    """Parse lines in buf[start:end]; write edges from index ``out``.

    Returns (next free index, error position or -1). The error position is the start of the
    first malformed line.
    """
    i = start
    k = out
    while i < end:
        line_start = i
        while i < end and (buf[i] == _SP or buf[i] == _TAB):
            i += 1
        if i >= end:
            break
        c = buf[i]
        if c == _NL:
            i += 1
            continue
        if c == _CR:
            if i + 1 < end and buf[i + 1] == _NL:
                i += 2
                continue
            return k, line_start
        if c == _HASH or c == _PCT:
            while i < end and buf[i] != _NL:
                i += 1
            i += 1
            continue
        a, i = _parse_id(buf, i, end)
        if a < 0 or i >= end or not (buf[i] == _SP or buf[i] == _TAB):
            return k, line_start
        while i < end and (buf[i] == _SP or buf[i] == _TAB):
            i += 1
        b, i = _parse_id(buf, i, end)
        if b < 0:
            return k, line_start
        if i < end:
            c = buf[i]
            if c == _CR:
                if not (i + 1 >= end or buf[i + 1] == _NL):
                    return k, line_start
            elif not (c == _NL or c == _SP or c == _TAB):
                return k, line_start
        while i < end and buf[i] != _NL:
            i += 1
        i += 1
        src[k] = a
        dst[k] = b
        k += 1
    return k, -1


@njit(parallel=True, cache=True)
def _parse_parts(buf, starts, ends, offsets, src, dst, used, errors):
    for t in prange(starts.shape[0]):
        used[t], errors[t] = _parse_range(buf, starts[t], ends[t], src, dst, offsets[t])


def _split_points(buf: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut buf into up to ``parts`` pieces, each ending just after a newline (or at the end)."""
    size = buf.shape[0]
    cuts = [0]
    for t in range(1, parts):
        pos = max(size * t // parts, cuts[-1])
        nl = np.flatnonzero(buf[pos : min(size, pos + (1 << 20))] == _NL)
        if nl.size == 0:
            continue
        cuts.append(pos + int(nl[0]) + 1)
    cuts.append(size)
    cuts = sorted(set(cuts))
    return np.array(cuts[:-1], dtype=np.int64), np.array(cuts[1:], dtype=np.int64)


def parse_buffer(buf: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Parse a buffer of whole lines. Returns (src, dst, error position or -1)."""
    if buf.shape[0] == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, -1
    starts, ends = _split_points(buf, parts)
    counts = np.empty(starts.shape[0], dtype=np.int64)
    _count_newlines_parallel(buf, starts, ends, counts)
    capacity = counts + 1
    offsets = np.zeros(starts.shape[0], dtype=np.int64)
    offsets[1:] = np.cumsum(capacity)[:-1]
    total = int(capacity.sum())
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)
    used = np.empty(starts.shape[0], dtype=np.int64)
    errors = np.empty(starts.shape[0], dtype=np.int64)
    _parse_parts(buf, starts, ends, offsets, src, dst, used, errors)
    bad = errors[errors >= 0]
    if bad.size:
        return src[:0], dst[:0], int(bad.min())
    if starts.shape[0] == 1:
        return src[: used[0]], dst[: used[0]], -1
    pieces = range(starts.shape[0])
    return (
        np.concatenate([src[offsets[t] : used[t]] for t in pieces]),
        np.concatenate([dst[offsets[t] : used[t]] for t in pieces]),
        -1,
    )


def _line_at(buf: np.ndarray, pos: int) -> str:
    end = pos
    size = buf.shape[0]
    while end < size and buf[end] != _NL and end - pos < 200:
        end += 1
    text = bytes(buf[pos:end]).decode("utf-8", errors="replace").rstrip("\r")
    return text + ("..." if end - pos >= 200 else "")


def _konect_kind(head: bytes) -> str | None:
    first = head.split(b"\n", 1)[0].strip()
    if first.startswith(b"%"):
        words = first[1:].split()
        if words and words[0] in (b"sym", b"asym", b"bip"):
            return words[0].decode()
    return None


def read_edge_list(path, threads: int | None = None, show_progress: bool = True) -> EdgeList:
    """Read every edge line of ``path`` (SNAP or KONECT text; plain, gzip or bz2).

    Compression is detected from the file's magic bytes, not its name. The SHA-256 returned is
    that of the file's bytes on disk.
    """
    path = Path(path)
    if not path.is_file():
        raise GpucoreError(f"{path}: no such file")
    import numba

    parts = max(1, int(threads or numba.get_num_threads()))
    file_size = os.path.getsize(path)
    srcs, dsts = [], []
    lines_before = 0
    konect = None
    with open(path, "rb", buffering=0) as fh:
        raw = _HashingReader(fh)
        head = fh.read(4)
        fh.seek(0)
        stream, compression = _open_decompressed(raw, head)
        bar = progress(total=file_size, desc=f"read {path.name}", unit="B", unit_scale=True) if show_progress else None
        carry = b""
        first = True
        try:
            while True:
                try:
                    block = stream.read(CHUNK_BYTES)
                except (OSError, EOFError, zlib.error) as exc:
                    raise GpucoreError(f"{path}: corrupt or truncated {compression} data ({exc})") from None
                final = not block
                data = carry + block
                if first and data:
                    konect = _konect_kind(data[:4096])
                    first = False
                if final:
                    cut = len(data)
                else:
                    cut = data.rfind(b"\n") + 1
                    if cut == 0:  # a single line longer than a chunk: keep reading
                        carry = data
                        continue
                buf = np.frombuffer(data, dtype=np.uint8, count=cut)
                src, dst, err = parse_buffer(buf, parts)
                if err >= 0:
                    line_no = lines_before + int(np.count_nonzero(buf[:err] == _NL)) + 1
                    raise GpucoreError(f"{path}: line {line_no}: malformed edge line {_line_at(buf, err)!r}")
                lines_before += int(np.count_nonzero(buf == _NL))
                if src.size:
                    srcs.append(src)
                    dsts.append(dst)
                carry = data[cut:]
                if bar is not None:
                    bar.update(raw.consumed - bar.n)
                if final:
                    break
        finally:
            if bar is not None:
                bar.close()
    if not srcs:
        raise GpucoreError(f"{path}: empty graph (no edge lines)")
    src = srcs[0] if len(srcs) == 1 else np.concatenate(srcs)
    dst = dsts[0] if len(dsts) == 1 else np.concatenate(dsts)
    return EdgeList(src=src, dst=dst, sha256=raw.digest.hexdigest(), lines=lines_before, konect_kind=konect)
