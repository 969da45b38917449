"""Vertex orders for locality, and a relabelled in-CSR that keeps every arc's identity.

A vertex order is a permutation ``old_of_new`` (new id x is old vertex ``old_of_new[x]``). It is
computed on the undirected view of the graph (out- and in-neighbours together):

- ``"rcm"``: reverse Cuthill-McKee (Cuthill & McKee 1969; George & Liu, *Computer Solution of
  Large Sparse Positive Definite Systems*, 1981, ch. 4): breadth-first search from a vertex of
  smallest degree in each component, neighbours visited in increasing degree, order reversed;
- ``"community"``: vertices grouped by community, communities found by label propagation
  (Raghavan, Albert & Kumara, *Phys. Rev. E* 76, 2007) in a fixed sweep order with ties to the
  smallest label, so the result is deterministic; communities ordered by their label, members by
  old id. It stands in for Grappolo's Louvain order, which FuseIM (Neff et al., ICS '24, sec. 5)
  uses; both put the members of a community next to each other;
- ``"none"``: the identity.

``relabel_in_csr`` applies an order to the in-CSR: row x of the result is the row of vertex
``old_of_new[x]`` **in its original arc order**, with sources renamed to new ids, and every arc keeps
its original edge id and weight. Keyed draws that depend on arc ids (IC coins) or on the order of a
row (LT prefix sums) are therefore unchanged by reordering; draws keyed by a vertex must use the
old id (``old_of_new``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError

ORDERS = ("none", "rcm", "community")
#: label-propagation sweeps at most; it stops earlier once fewer than 0.1 % of labels change
LPA_SWEEPS = 10


@njit(parallel=True, cache=True)
def _undirected(out_indptr, out_dst, in_indptr, in_src):
    """Neighbours of each vertex (out-row then in-row; a reciprocal pair appears twice) as a CSR."""
    n = out_indptr.shape[0] - 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        indptr[v + 1] = indptr[v] + out_indptr[v + 1] - out_indptr[v] + in_indptr[v + 1] - in_indptr[v]
    adj = np.empty(indptr[n], dtype=np.int32)
    for v in prange(n):
        k = indptr[v]
        for a in range(out_indptr[v], out_indptr[v + 1]):
            adj[k] = out_dst[a]
            k += 1
        for a in range(in_indptr[v], in_indptr[v + 1]):
            adj[k] = in_src[a]
            k += 1
    return indptr, adj


@njit(cache=True)
def _rcm(indptr, adj):
    n = indptr.shape[0] - 1
    deg = indptr[1:] - indptr[:-1]
    starts = np.argsort(deg * n + np.arange(n))  # smallest degree first, ties by id
    seen = np.zeros(n, dtype=np.uint8)
    order = np.empty(n, dtype=np.int64)
    fresh = np.empty(n, dtype=np.int64)
    tail = 0
    for s in starts:
        if seen[s]:
            continue
        seen[s] = 1
        order[tail] = s
        tail += 1
        head = tail - 1
        while head < tail:
            v = order[head]
            head += 1
            k = 0
            for a in range(indptr[v], indptr[v + 1]):
                u = adj[a]
                if not seen[u]:
                    seen[u] = 1
                    fresh[k] = deg[u] * n + u
                    k += 1
            if k:
                picked = np.sort(fresh[:k])
                for i in range(k):
                    order[tail] = picked[i] % n
                    tail += 1
    return order[::-1].copy()


@njit(cache=True)
def _label_propagation(indptr, adj, sweeps):
    n = indptr.shape[0] - 1
    label = np.arange(n)
    count = np.zeros(n, dtype=np.int64)
    seen = np.empty(n, dtype=np.int64)
    for _ in range(sweeps):
        changed = 0
        for v in range(n):
            k = 0
            for a in range(indptr[v], indptr[v + 1]):
                c = label[adj[a]]
                if count[c] == 0:
                    seen[k] = c
                    k += 1
                count[c] += 1
            if k == 0:
                continue
            best = label[v]
            best_count = count[best]  # 0 when no neighbour shares v's label
            for i in range(k):
                c = seen[i]
                if count[c] > best_count or (count[c] == best_count and c < best):
                    best, best_count = c, count[c]
            for i in range(k):
                count[seen[i]] = 0
            if best != label[v]:
                label[v] = best
                changed += 1
        if changed * 1000 < n:
            break
    return label


def vertex_order(graph, method: str) -> np.ndarray:
    """``old_of_new`` (int64[n]) of ``method`` in ``ORDERS`` for ``graph``."""
    if method not in ORDERS:
        raise GpucoreError(f"--order {method!r}: choose one of {', '.join(ORDERS)}")
    n = graph.n
    if method == "none":
        return np.arange(n, dtype=np.int64)
    indptr, adj = _undirected(np.asarray(graph.out_indptr, dtype=np.int64), np.asarray(graph.out_dst),
                              np.asarray(graph.in_indptr, dtype=np.int64), np.asarray(graph.in_src))
    if method == "rcm":
        return _rcm(indptr, adj)
    label = _label_propagation(indptr, adj, LPA_SWEEPS)
    return np.lexsort((np.arange(n), label)).astype(np.int64)


def inverse_order(old_of_new: np.ndarray) -> np.ndarray:
    """``new_of_old`` for a permutation ``old_of_new``."""
    inv = np.empty(old_of_new.shape[0], dtype=np.int64)
    inv[old_of_new] = np.arange(old_of_new.shape[0], dtype=np.int64)
    return inv


@njit(parallel=True, cache=True)
def _relabel_rows(in_indptr, in_src, in_eid, in_w, old_of_new, new_of_old, indptr, src, eid, w):
    n = old_of_new.shape[0]
    for x in prange(n):
        v = old_of_new[x]
        lo = in_indptr[v]
        base = indptr[x]
        for i in range(in_indptr[v + 1] - lo):
            src[base + i] = new_of_old[in_src[lo + i]]
            eid[base + i] = in_eid[lo + i]
            w[base + i] = in_w[lo + i]


def relabel_in_csr(in_indptr, in_src, in_eid, in_w, old_of_new):
    """The in-CSR under ``old_of_new``: (indptr int64, src int32 new ids, eid, weights), rows in arc order."""
    old_of_new = np.asarray(old_of_new, dtype=np.int64)
    new_of_old = inverse_order(old_of_new)
    degree = np.diff(np.asarray(in_indptr, dtype=np.int64))[old_of_new]
    indptr = np.zeros(old_of_new.shape[0] + 1, dtype=np.int64)
    np.cumsum(degree, out=indptr[1:])
    m = in_src.shape[0]
    src = np.empty(m, dtype=np.int32)
    eid = np.empty(m, dtype=in_eid.dtype)
    w = np.empty(m, dtype=in_w.dtype)
    _relabel_rows(np.asarray(in_indptr, dtype=np.int64), in_src, in_eid, in_w, old_of_new, new_of_old, indptr, src,
                  eid, w)
    return indptr, src, eid, w
