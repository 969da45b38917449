"""The simple undirected graph structural diversity is defined on (spec section 1, section 2.1).

``simple_graph(graph)`` -> ``SimpleGraph``: ``n``, ``indptr`` (int64 [n+1]) and ``adj`` (int32 [2m]),
every undirected edge stored in the rows of both endpoints, each row sorted ascending, without
self-loops or duplicates; the algorithms depend on the sorted rows (binary-search intersections,
local ids that keep the global order). An undirected ``.gcsr`` already stores exactly this (both
arcs of every edge, rows sorted), so its out-CSR is used as is (memory-mapped, no copy). A directed
``.gcsr`` is *symmetrised*: u and v are adjacent when an arc joins them in either direction (the
out- and in-list of every vertex merged), and ``symmetrised`` says so in the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError


@dataclass
class SimpleGraph:
    """Undirected simple CSR; ``original_id[v]`` is the id of internal vertex v in the input file."""

    n: int
    indptr: np.ndarray
    adj: np.ndarray
    original_id: np.ndarray
    symmetrised: bool

    @property
    def m(self) -> int:
        """Number of undirected edges."""
        return int(self.adj.shape[0]) // 2

    @property
    def degree(self) -> np.ndarray:
        return np.diff(self.indptr)


@njit(parallel=True, cache=True)
def _merged_lengths(out_indptr, out_dst, in_indptr, in_src, lengths):
    """|out-list(v) union in-list(v)| per vertex (both lists sorted, without duplicates)."""
    n = out_indptr.shape[0] - 1
    for v in prange(n):
        a, a1 = out_indptr[v], out_indptr[v + 1]
        b, b1 = in_indptr[v], in_indptr[v + 1]
        c = 0
        while a < a1 or b < b1:
            if b == b1 or (a < a1 and out_dst[a] < in_src[b]):
                a += 1
            elif a == a1 or in_src[b] < out_dst[a]:
                b += 1
            else:
                a += 1
                b += 1
            c += 1
        lengths[v] = c


@njit(parallel=True, cache=True)
def _merge_rows(out_indptr, out_dst, in_indptr, in_src, indptr, adj):
    n = out_indptr.shape[0] - 1
    for v in prange(n):
        a, a1 = out_indptr[v], out_indptr[v + 1]
        b, b1 = in_indptr[v], in_indptr[v + 1]
        k = indptr[v]
        while a < a1 or b < b1:
            if b == b1 or (a < a1 and out_dst[a] < in_src[b]):
                adj[k] = out_dst[a]
                a += 1
            elif a == a1 or in_src[b] < out_dst[a]:
                adj[k] = in_src[b]
                b += 1
            else:
                adj[k] = out_dst[a]
                a += 1
                b += 1
            k += 1


def simple_graph(graph) -> SimpleGraph:
    """The undirected simple CSR of a loaded ``Graph`` (symmetrised when the graph is directed)."""
    n = int(graph.n)
    if n < 1:
        raise GpucoreError(f"{graph.path}: the graph has no vertices")
    if not graph.directed:
        indptr = np.asarray(graph.out_indptr)
        if int(indptr[-1]) % 2:
            raise GpucoreError(f"{graph.path}: marked undirected but holds an odd number of arcs")
        return SimpleGraph(n, indptr, np.asarray(graph.out_dst), np.asarray(graph.original_id), False)
    out_indptr = np.ascontiguousarray(graph.out_indptr, dtype=np.int64)
    in_indptr = np.ascontiguousarray(graph.in_indptr, dtype=np.int64)
    out_dst = np.ascontiguousarray(graph.out_dst, dtype=np.int32)
    in_src = np.ascontiguousarray(graph.in_src, dtype=np.int32)
    lengths = np.empty(n, dtype=np.int64)
    _merged_lengths(out_indptr, out_dst, in_indptr, in_src, lengths)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    adj = np.empty(int(indptr[-1]), dtype=np.int32)
    _merge_rows(out_indptr, out_dst, in_indptr, in_src, indptr, adj)
    return SimpleGraph(n, indptr, adj, np.asarray(graph.original_id), True)
