"""Vertex orders for locality, and a relabelled in-CSR that keeps every arc's identity.

A vertex order is a permutation ``old_of_new`` (new id x is old vertex ``old_of_new[x]``). It is
computed on the undirected view of the graph (out- and in-neighbours together):

- ``"rcm"``: reverse Cuthill-McKee (Cuthill & McKee 1969; George & Liu, *Computer Solution of
  Large Sparse Positive Definite Systems*, 1981, ch. 4): breadth-first search from a vertex of
  smallest degree in each component, neighbours visited in increasing degree, order reversed;
- ``"community"``: vertices grouped by community, communities found by Louvain (Blondel, Guillaume,
  Lambiotte & Lefebvre, *J. Stat. Mech.* 2008, P10008) on the undirected view with unit weights:
  local moving (each vertex in turn joins the neighbouring community of largest modularity gain,
  ties to the smallest id, in a fixed order, so the result is deterministic), then the communities
  become the vertices of the next level, up to ``LOUVAIN_LEVELS`` levels. Communities are ordered
  by first member, members by old id. It is a sequential
  stand-in for Grappolo (Lu, Halappanavar & Kalyanaraman, *Parallel Computing* 2015, a parallel
  Louvain), whose order FuseIM uses (Neff et al., ICS '24, sec. 5). Label propagation was tried
  first and rejected: on preferential-attachment graphs it ends in a single community;
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
#: local-moving sweeps per level at most (they stop once fewer than 0.1 % of vertices move), levels
LOUVAIN_SWEEPS = 10
LOUVAIN_LEVELS = 4


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
def _local_moves(indptr, nbr, wgt, loops, sweeps):
    """Louvain's local moving on a weighted graph (arcs both ways, ``loops`` the self-loop weights):
    each vertex in turn joins the neighbouring community of largest modularity gain (ties to the
    smallest id); returns communities numbered 0..c-1 in order of first member, and c."""
    n = indptr.shape[0] - 1
    k = np.empty(n, dtype=np.float64)
    for v in range(n):
        k[v] = loops[v]
        for a in range(indptr[v], indptr[v + 1]):
            k[v] += wgt[a]
    m2 = k.sum()
    comm = np.arange(n)
    tot = k.copy()
    links = np.zeros(n, dtype=np.float64)
    seen = np.empty(n, dtype=np.int64)
    for _ in range(sweeps if m2 > 0.0 else 0):
        moved = 0
        for v in range(n):
            cnt = 0
            for a in range(indptr[v], indptr[v + 1]):
                c = comm[nbr[a]]
                if links[c] == 0.0:
                    seen[cnt] = c
                    cnt += 1
                links[c] += wgt[a]
            old = comm[v]
            tot[old] -= k[v]
            best, best_gain = old, links[old] - tot[old] * k[v] / m2
            for i in range(cnt):
                c = seen[i]
                gain = links[c] - tot[c] * k[v] / m2
                if gain > best_gain + 1e-12 or (abs(gain - best_gain) <= 1e-12 and c < best):
                    best, best_gain = c, gain
            for i in range(cnt):
                links[seen[i]] = 0.0
            links[old] = 0.0
            tot[best] += k[v]
            if best != old:
                comm[v] = best
                moved += 1
        if moved * 1000 < n:
            break
    label = np.full(n, -1, dtype=np.int64)
    c = 0
    for v in range(n):
        if label[comm[v]] < 0:
            label[comm[v]] = c
            c += 1
        comm[v] = label[comm[v]]
    return comm, c


@njit(cache=True)
def _aggregate(indptr, nbr, wgt, loops, comm, c):
    """The community graph: one vertex per community, arc weights summed, inner weight as self-loop."""
    n = indptr.shape[0] - 1
    start = np.zeros(c + 1, dtype=np.int64)
    for v in range(n):
        start[comm[v] + 1] += 1
    for i in range(c):
        start[i + 1] += start[i]
    members = np.empty(n, dtype=np.int64)
    fill = start[:-1].copy()
    for v in range(n):
        members[fill[comm[v]]] = v
        fill[comm[v]] += 1
    new_loops = np.zeros(c, dtype=np.float64)
    acc = np.zeros(c, dtype=np.float64)
    seen = np.empty(c, dtype=np.int64)
    out_ptr = np.zeros(c + 1, dtype=np.int64)
    out_nbr = np.empty(nbr.shape[0], dtype=np.int64)
    out_w = np.empty(nbr.shape[0], dtype=np.float64)
    pos = 0
    for a_c in range(c):
        cnt = 0
        for q in range(start[a_c], start[a_c + 1]):
            v = members[q]
            new_loops[a_c] += loops[v]
            for a in range(indptr[v], indptr[v + 1]):
                b_c = comm[nbr[a]]
                if b_c == a_c:
                    new_loops[a_c] += wgt[a]
                    continue
                if acc[b_c] == 0.0:
                    seen[cnt] = b_c
                    cnt += 1
                acc[b_c] += wgt[a]
        for i in range(cnt):
            out_nbr[pos] = seen[i]
            out_w[pos] = acc[seen[i]]
            acc[seen[i]] = 0.0
            pos += 1
        out_ptr[a_c + 1] = pos
    return out_ptr, out_nbr[:pos].copy(), out_w[:pos].copy(), new_loops


def louvain_communities(indptr, adj, levels: int = LOUVAIN_LEVELS) -> np.ndarray:
    """Community of every vertex of an undirected CSR after up to ``levels`` Louvain levels."""
    n = indptr.shape[0] - 1
    member = np.arange(n, dtype=np.int64)
    graph = (indptr, adj.astype(np.int64), np.ones(adj.shape[0]), np.zeros(n))
    for _ in range(levels):
        comm, c = _local_moves(*graph, LOUVAIN_SWEEPS)
        if c == graph[0].shape[0] - 1:  # nobody moved
            break
        member = comm[member]
        graph = _aggregate(*graph, comm, c)
    return member


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
    return np.lexsort((np.arange(n), louvain_communities(indptr, adj))).astype(np.int64)


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
