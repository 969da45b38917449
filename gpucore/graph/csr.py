"""Relabelling and CSR construction (Numba, linear time).

Canonical form, so that a ``.gcsr`` file is a function of the edge *set* alone:
- vertices are the distinct ids on edge lines, relabelled 0..n-1 in increasing original id;
- arcs are sorted by (source, target); self-loops and duplicate arcs are dropped;
- the **original edge id** of an arc is its position in that order (its index in the out-CSR),
  and the in-CSR stores it beside every arc, so both CSRs name an arc the same way.

``arc_set_sha256`` is the digest of that canonical form: the same for every file that holds the
same graph, whatever its compression, line order, duplicate lines, comments or self-loops on
vertices that have other lines.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError

MAX_VERTICES = 2**31 - 1


@dataclass
class CSRGraph:
    """Both CSRs of a directed graph. ``in_eid[k]`` is the out-CSR position of in-arc ``k``."""

    n: int
    out_indptr: np.ndarray  # int64[n+1]
    out_dst: np.ndarray  # int32[m]
    in_indptr: np.ndarray  # int64[n+1]
    in_src: np.ndarray  # int32[m]
    in_eid: np.ndarray  # int32[m] (int64 when m >= 2^31)
    self_loops_dropped: int
    duplicates_dropped: int

    @property
    def m(self) -> int:
        return int(self.out_dst.shape[0])


def arc_set_sha256(original_id: np.ndarray, out_indptr: np.ndarray, out_dst: np.ndarray) -> str:
    """SHA-256 of a graph's vertices and arcs in canonical form: the bytes ``gpucore-arcs-1`` and a NUL,
    then ``original_id`` (int64), ``out_indptr`` (int64) and ``out_dst`` (int32), little-endian. Two edge
    lists with this digest preprocess (same direction, schemes and seed) to the same ``.gcsr``."""
    digest = hashlib.sha256(b"gpucore-arcs-1\0")
    for arr, dtype in ((original_id, "<i8"), (out_indptr, "<i8"), (out_dst, "<i4")):
        digest.update(np.ascontiguousarray(arr, dtype=dtype).view(np.uint8).data)
    return digest.hexdigest()


@njit(parallel=True, cache=True)
def _mark_present(ids, present):
    for i in prange(ids.shape[0]):
        present[ids[i]] = 1


@njit(parallel=True, cache=True)
def _gather32(table, ids, out):
    for i in prange(ids.shape[0]):
        out[i] = table[ids[i]]


def relabel(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map file ids to 0..n-1 in increasing order. Returns (src32, dst32, original_ids int64)."""
    if src.size == 0:
        raise GpucoreError("empty graph (no edges)")
    max_id = int(max(src.max(), dst.max()))
    if max_id <= 8 * src.size + (1 << 24):
        present = np.zeros(max_id + 1, dtype=np.uint8)
        _mark_present(src, present)
        _mark_present(dst, present)
        original = np.flatnonzero(present).astype(np.int64)
        if original.size > MAX_VERTICES:
            raise GpucoreError(f"too many vertices ({original.size}); at most {MAX_VERTICES}")
        table = np.full(max_id + 1, -1, dtype=np.int32)
        table[original] = np.arange(original.size, dtype=np.int32)
        del present
    else:  # sparse, huge ids: sort-based
        original, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
        if original.size > MAX_VERTICES:
            raise GpucoreError(f"too many vertices ({original.size}); at most {MAX_VERTICES}")
        inverse = inverse.astype(np.int32)
        return inverse[: src.size].copy(), inverse[src.size :].copy(), original.astype(np.int64)
    s32 = np.empty(src.size, dtype=np.int32)
    d32 = np.empty(dst.size, dtype=np.int32)
    _gather32(table, src, s32)
    _gather32(table, dst, d32)
    return s32, d32, original


@njit(cache=True)
def _scatter_by_row(rows, cols, indptr, out):
    """Counting-sort scatter: arcs grouped by row, stable (input order within a row)."""
    fill = indptr[:-1].copy()
    for i in range(rows.shape[0]):
        r = rows[i]
        out[fill[r]] = cols[i]
        fill[r] += 1


@njit(parallel=True, cache=True)
def _sort_dedup_rows(indptr, cols, new_len):
    """Sort each row in place and move its distinct values to the row's front."""
    n = indptr.shape[0] - 1
    for r in prange(n):
        a, b = indptr[r], indptr[r + 1]
        if b - a > 1:
            cols[a:b] = np.sort(cols[a:b])
        k = a
        for i in range(a, b):
            if i == a or cols[i] != cols[i - 1]:
                cols[k] = cols[i]
                k += 1
        new_len[r] = k - a


@njit(parallel=True, cache=True)
def _compact_rows(indptr, cols, new_indptr, out):
    n = indptr.shape[0] - 1
    for r in prange(n):
        a = indptr[r]
        s = new_indptr[r]
        for i in range(new_indptr[r + 1] - s):
            out[s + i] = cols[a + i]


@njit(cache=True)
def _transpose(out_indptr, out_dst, in_indptr, in_src, in_eid):
    fill = in_indptr[:-1].copy()
    n = out_indptr.shape[0] - 1
    for u in range(n):
        for e in range(out_indptr[u], out_indptr[u + 1]):
            v = out_dst[e]
            k = fill[v]
            in_src[k] = u
            in_eid[k] = e
            fill[v] = k + 1


@njit(parallel=True, cache=True)
def _count_self_loops(src, dst):
    c = 0
    for i in prange(src.shape[0]):
        if src[i] == dst[i]:
            c += 1
    return c


def _indptr_from_counts(counts: np.ndarray) -> np.ndarray:
    indptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr


def build_csr(src32: np.ndarray, dst32: np.ndarray, n: int, undirected: bool) -> CSRGraph:
    """Build the canonical out- and in-CSR from relabelled arcs.

    ``undirected`` stores both arcs of every line. Self-loops are dropped first, then duplicate
    arcs (after symmetrisation, so an undirected file that lists both directions loses the copies).
    """
    loops = int(_count_self_loops(src32, dst32))
    if loops:
        keep = src32 != dst32
        src32, dst32 = src32[keep], dst32[keep]
    if src32.size == 0:
        raise GpucoreError("empty graph (only self-loops)")
    if undirected:
        src32, dst32 = np.concatenate([src32, dst32]), np.concatenate([dst32, src32])
    raw_m = int(src32.size)
    indptr = _indptr_from_counts(np.bincount(src32, minlength=n).astype(np.int64))
    cols = np.empty(raw_m, dtype=np.int32)
    _scatter_by_row(src32, dst32, indptr, cols)
    del src32, dst32
    lengths = np.empty(n, dtype=np.int64)
    _sort_dedup_rows(indptr, cols, lengths)
    out_indptr = _indptr_from_counts(lengths)
    m = int(out_indptr[-1])
    if m == raw_m:
        out_dst = cols
    else:
        out_dst = np.empty(m, dtype=np.int32)
        _compact_rows(indptr, cols, out_indptr, out_dst)
    del cols
    in_indptr = _indptr_from_counts(np.bincount(out_dst, minlength=n).astype(np.int64))
    in_src = np.empty(m, dtype=np.int32)
    in_eid = np.empty(m, dtype=np.int32 if m < 2**31 else np.int64)
    _transpose(out_indptr, out_dst, in_indptr, in_src, in_eid)
    return CSRGraph(
        n=n,
        out_indptr=out_indptr,
        out_dst=out_dst,
        in_indptr=in_indptr,
        in_src=in_src,
        in_eid=in_eid,
        self_loops_dropped=loops,
        duplicates_dropped=raw_m - m,
    )
