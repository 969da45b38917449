"""Numba kernels of the CPU backend, on the arrays of ``gpucore.sds.layout`` (the CUDA kernels'
twins: same inputs, same outputs; ``gpucore/kernels/sds/*.cu``).

Global: ``edge_supports`` (sup of every slot of the simple CSR: |N(u) & N(v)| by sorted-list
intersection, computed for u < v and written to both slots; over ranks, each its tiles of slots),
``ego_counts`` (per vertex: members above a threshold, |E(G_v)|). Per batch: ``gather_rows`` -> (host prefix sums) -> ``fill_rows`` (the
ego CSR: sorted local lists) -> for truss (prefix sums) ``edge_ids`` -> the heavy steps in
parallel over all rows or edges of the batch (``edge_supports_batch`` for truss, the H-index
rounds of ``coreness_batch`` for core), so one huge ego-network does not keep a single core busy
-> ``score_batch`` (the rest, one ego-network per task, largest first).

Within an ego-network the CPU runs the sequential form of the GPU's algorithms: union-find with
the smaller root as the representative (comp, and the final components of every model), the
H-index iteration to coreness updated in place (core; Sarıyüce et al.'s local algorithm), and
level peeling with one queue (truss: the GPU's PKT sub-rounds with one edge per sub-round). The
results are unique (components, coreness, the k-truss), so both backends agree exactly.

The parallel kernels release the GIL (``nogil``): over several ranks, rank 0's serving thread
(``gpucore.dist.service``) answers the other ranks while its own rank computes.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpucore.sds.layout import ALIVE, CURR, DEAD

COMP, CORE, TRUSS = 0, 1, 2


@njit(inline="always", cache=True)
def lower_bound(a, lo, hi, x):
    """First position p in [lo, hi) with a[p] >= x (hi if none); a[lo:hi] ascending."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


#: a sorted list this many times longer than the other is searched (galloping); otherwise both are merged
GALLOP = 16


@njit(inline="always", cache=True)
def intersect_count(a, a0, a1, b0, b1):
    """|a[a0:a1] & a[b0:b1]| for two ascending ranges of one array: a merge, or binary searches of
    the shorter range's entries in the longer one when it is GALLOP times longer."""
    if a1 - a0 > b1 - b0:
        a0, a1, b0, b1 = b0, b1, a0, a1
    c = 0
    if (b1 - b0) > GALLOP * (a1 - a0):
        lo = b0
        for x in range(a0, a1):
            lo = lower_bound(a, lo, b1, a[x])
            if lo == b1:
                break
            if a[lo] == a[x]:
                c += 1
                lo += 1
        return c
    x, y = a0, b0
    while x < a1 and y < b1:
        if a[x] < a[y]:
            x += 1
        elif a[x] > a[y]:
            y += 1
        else:
            c += 1
            x += 1
            y += 1
    return c


# ---- global: supports and per-vertex counts ------------------------------------------------------
#: slots per tile of the support computation (a warp's 32 slots in sds_graph.cu)
SUPPORT_TILE = 32


@njit(parallel=True, nogil=True, cache=True)
def edge_supports(indptr, adj, part, parts, sup, errors):
    """sup[s] = |N(u) & N(v)| for the slots s = (u, v), u < v, of the tiles t = part (mod parts) of
    ``SUPPORT_TILE`` consecutive slots, written to s and to its mirror (v, u); ``sup`` starts zeroed,
    so the sum over the parts is every slot's support (one part: all of them). errors[0] = 1 when
    a slot of these tiles has no mirror: the CSR is not symmetric."""
    n = indptr.shape[0] - 1
    slots = indptr[n]
    tiles = (slots + SUPPORT_TILE - 1) // SUPPORT_TILE
    mine = (tiles - part + parts - 1) // parts if tiles > part else 0
    for i in prange(mine):
        s0 = (i * parts + part) * SUPPORT_TILE
        s1 = min(s0 + SUPPORT_TILE, slots)
        u = np.searchsorted(indptr, s0, side="right") - 1
        for s in range(s0, s1):
            while indptr[u + 1] <= s:
                u += 1
            v = adj[s]
            p = lower_bound(adj, indptr[v], indptr[v + 1], u)
            if p >= indptr[v + 1] or adj[p] != u:
                errors[0] = 1
            elif v > u:
                c = intersect_count(adj, indptr[u], indptr[u + 1], indptr[v], indptr[v + 1])
                sup[s] = c
                sup[p] = c


@njit(parallel=True, nogil=True, cache=True)
def ego_counts(indptr, sup, threshold, count, edges):
    """count[v] = #{slots of v with sup >= threshold}; edges[v] = |E(G_v)| = sum of sup / 2."""
    n = indptr.shape[0] - 1
    for v in prange(n):
        c = 0
        e = 0
        for s in range(indptr[v], indptr[v + 1]):
            x = sup[s]
            e += x
            if x >= threshold:
                c += 1
        count[v] = c
        edges[v] = e // 2


# ---- per batch: the ego CSR build -----------------------------------------------------------------
@njit(parallel=True, nogil=True, cache=True)
def gather_rows(indptr, sup, vertices, row_base, row_deg, row_owner):
    """Ego degrees of every local vertex (the supports of v's slots) and the owner of every row."""
    for b in prange(vertices.shape[0]):
        s0 = indptr[vertices[b]]
        r0 = row_base[b]
        for i in range(row_base[b + 1] - r0):
            row_deg[r0 + i] = sup[s0 + i]
            row_owner[r0 + i] = b


@njit(inline="always", cache=True)
def _gallop_into(adj, s0, s1, t0, t1, v0, search_is_v, nbr, pos):
    """Search every entry of adj[s0:s1] in adj[t0:t1] (a moving lower bound); for each common
    entry write its local id (its position in N(v), which starts at v0: in the searched range when
    ``search_is_v``, else in the scanned one) at nbr[pos], pos += 1. Returns pos."""
    lo = t0
    for x in range(s0, s1):
        lo = lower_bound(adj, lo, t1, adj[x])
        if lo == t1:
            break
        if adj[lo] == adj[x]:
            nbr[pos] = (lo if search_is_v else x) - v0
            pos += 1
            lo += 1
    return pos


@njit(parallel=True, nogil=True, cache=True)
def fill_rows(indptr, adj, vertices, row_base, row_owner, row_start, row_deg, nbr, row_lower, errors):
    """Row r (local vertex i of ego b, global u): the local ids of N(u) & N(v_b), ascending, and
    how many are < i (merge, or galloping searches when one list is much longer)."""
    for r in prange(row_owner.shape[0]):
        b = row_owner[r]
        v = vertices[b]
        i = r - row_base[b]
        v0, v1 = indptr[v], indptr[v + 1]
        u = adj[v0 + i]
        u0, u1 = indptr[u], indptr[u + 1]
        pos = row_start[r]
        lower = 0
        du, dv = u1 - u0, v1 - v0
        if dv > GALLOP * du:  # search N(u)'s entries in N(v)
            pos = _gallop_into(adj, u0, u1, v0, v1, v0, True, nbr, pos)
        elif du > GALLOP * dv:  # search N(v)'s entries in N(u)
            pos = _gallop_into(adj, v0, v1, u0, u1, v0, False, nbr, pos)
        else:  # merge
            x, y = u0, v0
            while x < u1 and y < v1:
                if adj[x] < adj[y]:
                    x += 1
                elif adj[x] > adj[y]:
                    y += 1
                else:
                    nbr[pos] = y - v0
                    pos += 1
                    x += 1
                    y += 1
        for x in range(row_start[r], pos):
            if nbr[x] < i:
                lower += 1
            else:
                break
        row_lower[r] = lower
        if pos - row_start[r] != row_deg[r]:
            errors[0] = 1


@njit(parallel=True, nogil=True, cache=True)
def edge_ids(row_owner, row_base, edge_base, row_start, row_deg, row_lower, row_edge, nbr, eid, el_i, el_j):
    """Local edge ids of every slot, and the endpoints of every edge (layout docstring)."""
    for r in prange(row_owner.shape[0]):
        b = row_owner[r]
        rb = row_base[b]
        e0 = edge_base[b]
        i = r - rb
        s0 = row_start[r]
        up0 = s0 + row_lower[r]
        for x in range(s0, s0 + row_deg[r]):
            j = nbr[x]
            if j > i:
                e = row_edge[r] - e0 + (x - up0)
                eid[x] = e
                el_i[e0 + e] = i
                el_j[e0 + e] = j
            else:
                rj = rb + j
                t0 = row_start[rj] + row_lower[rj]
                p = lower_bound(nbr, t0, row_start[rj] + row_deg[rj], i)
                eid[x] = row_edge[rj] - e0 + (p - t0)


# ---- per ego-network scoring ----------------------------------------------------------------------
@njit(inline="always", cache=True)
def _find(parent, x):
    while parent[x] != x:
        p = parent[x]
        parent[x] = parent[p]
        x = p
    return x


@njit(inline="always", cache=True)
def _union(parent, a, b):
    a = _find(parent, a)
    b = _find(parent, b)
    if a < b:
        parent[b] = a
    elif b < a:
        parent[a] = b


@njit(parallel=True, nogil=True, cache=True)
def edge_supports_batch(row_base, edge_base, row_start, row_deg, nbr, el_i, el_j, sup):
    """Support (common neighbours inside its ego-network) of every edge of the batch, parallel over edges."""
    for f in prange(edge_base[-1]):
        b = np.searchsorted(edge_base, f, side="right") - 1
        ri = row_base[b] + el_i[f]
        rj = row_base[b] + el_j[f]
        sup[f] = intersect_count(nbr, row_start[ri], row_start[ri] + row_deg[ri], row_start[rj],
                                 row_start[rj] + row_deg[rj])


@njit(inline="always", cache=True)
def _hindex(c, r0, r, row_start, row_deg, nbr, hist):
    """The largest h <= c[r] with at least h neighbours of c >= h (hist: scratch of c[r] + 1 counters)."""
    cr = c[r]
    for h in range(cr + 1):
        hist[h] = 0
    for x in range(row_start[r], row_start[r] + row_deg[r]):
        hist[min(c[r0 + nbr[x]], cr)] += 1
    acc = 0
    h = cr
    while h > 0:
        acc += hist[h]
        if acc >= h:
            break
        h -= 1
    return h


@njit(parallel=True, nogil=True, cache=True)
def coreness_batch(row_base, row_owner, row_start, row_deg, nbr, c, chunks):
    """c[r] = coreness of every local vertex of the batch: the H-index iteration from the degrees,
    rounds over the rows of the ego-networks that changed in the last round (parallel over rows,
    values updated in place), until no ego-network changes."""
    nb = row_base.shape[0] - 1
    top = 0
    for r in range(row_deg.shape[0]):
        c[r] = row_deg[r]
        top = max(top, row_deg[r])
    active = np.ones(nb, dtype=np.uint8)
    changed = np.zeros(nb, dtype=np.uint8)
    todo = np.empty(row_deg.shape[0], dtype=np.int64)
    while True:
        count = 0
        for b in range(nb):
            if active[b]:
                for r in range(row_base[b], row_base[b + 1]):
                    todo[count] = r
                    count += 1
        if count == 0:
            return
        for ch in prange(chunks):
            hist = np.empty(top + 2, dtype=np.int64)
            for x in range(ch, count, chunks):
                r = todo[x]
                if c[r] > 0:
                    b = row_owner[r]
                    h = _hindex(c, row_base[b], r, row_start, row_deg, nbr, hist)
                    if h < c[r]:
                        c[r] = h
                        changed[b] = 1
        for b in range(nb):
            active[b] = changed[b]
            changed[b] = 0


@njit(cache=True)
def _peel(e0, ne, stop_level, row_start, row_deg, nbr, eid, el_i, el_j, r0, sup, state, queue):
    """Level peeling of levels 0 .. stop_level-1 of one ego-network, from the supports in sup
    (levels without edges skipped): edges left ALIVE have trussness >= stop_level + 2; a DEAD
    edge's sup is its level (trussness - 2)."""
    for e in range(e0, e0 + ne):
        state[e] = ALIVE
    removed = 0
    level = 0
    while level < stop_level and removed < ne:
        head = 0
        tail = 0
        low = stop_level
        for e in range(e0, e0 + ne):
            if state[e] == ALIVE:
                if sup[e] == level:
                    state[e] = CURR
                    queue[e0 + tail] = e - e0
                    tail += 1
                else:
                    low = min(low, sup[e])
        if tail == 0:  # no edge at this level: go to the lowest support left
            level = low
            continue
        while head < tail:
            e1 = e0 + queue[e0 + head]
            head += 1
            state[e1] = DEAD
            removed += 1
            ri = r0 + el_i[e1]
            rj = r0 + el_j[e1]
            y = row_start[rj]
            y1 = y + row_deg[rj]
            for x in range(row_start[ri], row_start[ri] + row_deg[ri]):
                y = lower_bound(nbr, y, y1, nbr[x])
                if y == y1:
                    break
                if nbr[y] != nbr[x]:
                    continue
                e2 = e0 + eid[x]
                e3 = e0 + eid[y]
                y += 1
                if state[e2] == DEAD or state[e3] == DEAD:
                    continue
                for e in (e2, e3):
                    if sup[e] > level:
                        sup[e] -= 1
                        if sup[e] == level:
                            state[e] = CURR
                            queue[e0 + tail] = e - e0
                            tail += 1
        level += 1


@njit(cache=True)
def _score_ego(model, k, stop_level, b, row_base, edge_base, row_start, row_deg, nbr, eid, el_i, el_j, sup,
               state, queue, parent, aux):
    """Score of ego-network b; leaves the context labels in parent (layout docstring)."""
    r0, r1 = row_base[b], row_base[b + 1]
    for r in range(r0, r1):
        parent[r] = r
    if model == COMP:
        for r in range(r0, r1):
            i = r - r0
            for x in range(row_start[r], row_start[r] + row_deg[r]):
                if nbr[x] > i:
                    _union(parent, r, r0 + nbr[x])
    elif model == CORE:  # aux holds the coreness (coreness_batch)
        for r in range(r0, r1):
            i = r - r0
            if aux[r] >= k:
                for x in range(row_start[r], row_start[r] + row_deg[r]):
                    if nbr[x] > i and aux[r0 + nbr[x]] >= k:
                        _union(parent, r, r0 + nbr[x])
    else:
        e0, e1 = edge_base[b], edge_base[b + 1]
        _peel(e0, e1 - e0, stop_level, row_start, row_deg, nbr, eid, el_i, el_j, r0, sup, state, queue)
        for r in range(r0, r1):
            aux[r] = 0
        for e in range(e0, e1):
            if state[e] == ALIVE:
                aux[r0 + el_i[e]] = 1
                aux[r0 + el_j[e]] = 1
                _union(parent, r0 + el_i[e], r0 + el_j[e])
    for r in range(r0, r1):
        parent[r] = _find(parent, r)
    if model == COMP:
        for r in range(r0, r1):
            aux[r] = 0
        for r in range(r0, r1):
            aux[parent[r]] += 1
    score = 0
    for r in range(r0, r1):
        root = parent[r]
        if model == COMP:
            member = aux[root] >= k
        elif model == CORE:
            member = aux[r] >= k
        else:
            member = aux[r] == 1
        if member:
            if root == r:
                score += 1
        else:
            parent[r] = -1
    return score


@njit(parallel=True, nogil=True, cache=True)
def score_batch(model, k, stop_level, row_base, edge_base, row_start, row_deg, nbr, eid, el_i, el_j, sup, state,
                queue, parent, aux, score):
    """score[b] for every ego-network of the batch (largest first), in parallel over ego-networks.
    Truss needs the supports (edge_supports_batch) and core the coreness in aux (coreness_batch)."""
    for b in prange(score.shape[0]):
        score[b] = _score_ego(model, k, stop_level, b, row_base, edge_base, row_start, row_deg, nbr, eid, el_i,
                              el_j, sup, state, queue, parent, aux)
