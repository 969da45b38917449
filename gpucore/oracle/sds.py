"""Independent check of structural diversity results (``gpucore verify`` on results of kind ``sds``).

Written for the oracle alone: it shares no code with ``gpucore.sds`` (only the graph loader), and
where the solver uses binary-search intersections, union-find, the H-index iteration and PKT level
peeling, the oracle uses stamp arrays, breadth-first search, vertex peeling with a queue and
repeated whole-graph truss passes.

- ``OracleGraph(graph)``: the simple undirected graph (an arc in either direction is an edge;
  built with NumPy sorting, not the solver's merge), and its edge supports: for every edge the
  number of common neighbours, counted at its endpoint of larger (degree, id) with a stamp array
  of that endpoint's neighbours.
- ``contexts(v, model, k)``: the social contexts of v, recomputed from scratch: the ego-network by
  stamping N(v); comp: BFS components with >= k vertices; core: repeatedly delete vertices of
  degree < k, then BFS components; truss: repeat {count every remaining edge's triangles, delete
  every edge in fewer than k - 2} until nothing changes, then BFS components of the remaining edges.
- ``bound(model, k)``: an upper bound per vertex: a member of a context has at least T neighbours
  inside the ego-network (comp: T = 0 for k = 1, else 1; core: k; truss: max(1, k - 1)), a context
  has at least s vertices (comp: k; core: k + 1; truss: max(2, k)) and contexts are disjoint, so
  sc(v) <= #{u in N(v): common(v, u) >= T} // s.
- ``verify_sds(result, graph, source)``: every returned vertex's score and contexts equal the
  recomputed ones; the list is in rank order (score descending, id ascending); no other vertex
  beats the t-th score (exact scores wherever the bound does not decide); the reported t-th score
  and number of vertices tying with it are right.
"""

from __future__ import annotations

import numbers

import numba
import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError

MODELS = ("comp", "core", "truss")


# ---- the simple graph and its supports -----------------------------------------------------------
def _undirected(graph) -> tuple[np.ndarray, np.ndarray]:
    n = int(graph.n)
    deg = np.diff(np.asarray(graph.out_indptr))
    src = np.repeat(np.arange(n, dtype=np.int64), deg)
    dst = np.asarray(graph.out_dst, dtype=np.int64)
    keys = np.unique(np.concatenate([src * n + dst, dst * n + src]))
    rows = keys // n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, (keys % n).astype(np.int32), keys


@njit(parallel=True, cache=True)
def _common_counts(indptr, adj, chunks, common):
    """common[s] for slots s = (w, x) where (d(x), x) < (d(w), w); other slots are left as they are."""
    n = indptr.shape[0] - 1
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        stamp = np.full(n, -1, dtype=np.int64)
        for w in range(c * step, min(n, (c + 1) * step)):
            dw = indptr[w + 1] - indptr[w]
            for s in range(indptr[w], indptr[w + 1]):
                stamp[adj[s]] = w
            for s in range(indptr[w], indptr[w + 1]):
                x = adj[s]
                dx = indptr[x + 1] - indptr[x]
                if dx < dw or (dx == dw and x < w):
                    cnt = 0
                    for y in range(indptr[x], indptr[x + 1]):
                        if stamp[adj[y]] == w:
                            cnt += 1
                    common[s] = cnt


# ---- the contexts of one vertex ----------------------------------------------------------------------
@njit(cache=True)
def _ego(indptr, adj, v, stamp):
    """Ego-network of v: (members, local edge list li < lj). stamp: int64 [n] all -1 on entry and exit."""
    members = adj[indptr[v]:indptr[v + 1]]
    nv = members.shape[0]
    for i in range(nv):
        stamp[members[i]] = i
    cap = 16
    li = np.empty(cap, dtype=np.int64)
    lj = np.empty(cap, dtype=np.int64)
    ne = 0
    for i in range(nv):
        u = members[i]
        for s in range(indptr[u], indptr[u + 1]):
            j = stamp[adj[s]]
            if j > i:
                if ne == cap:
                    cap *= 2
                    li2 = np.empty(cap, dtype=np.int64)
                    lj2 = np.empty(cap, dtype=np.int64)
                    li2[:ne] = li[:ne]
                    lj2[:ne] = lj[:ne]
                    li, lj = li2, lj2
                li[ne] = i
                lj[ne] = j
                ne += 1
    for i in range(nv):
        stamp[members[i]] = -1
    return members, li[:ne], lj[:ne]


@njit(cache=True)
def _local_csr(nv, li, lj, alive):
    """Both directions of the alive local edges: (start [nv+1], neighbour, edge index)."""
    deg = np.zeros(nv + 1, dtype=np.int64)
    for e in range(li.shape[0]):
        if alive[e]:
            deg[li[e] + 1] += 1
            deg[lj[e] + 1] += 1
    for i in range(nv):
        deg[i + 1] += deg[i]
    fill = deg[:-1].copy()
    nb = np.empty(deg[nv], dtype=np.int64)
    ed = np.empty(deg[nv], dtype=np.int64)
    for e in range(li.shape[0]):
        if alive[e]:
            nb[fill[li[e]]] = lj[e]
            ed[fill[li[e]]] = e
            fill[li[e]] += 1
            nb[fill[lj[e]]] = li[e]
            ed[fill[lj[e]]] = e
            fill[lj[e]] += 1
    return deg, nb, ed


@njit(cache=True)
def _bfs_labels(nv, start, nb, keep):
    """Component label (smallest member) of every kept vertex, -1 elsewhere; edges are those of the CSR."""
    label = np.full(nv, -1, dtype=np.int64)
    queue = np.empty(nv, dtype=np.int64)
    for s in range(nv):
        if keep[s] and label[s] < 0:
            label[s] = s
            head, tail = 0, 1
            queue[0] = s
            while head < tail:
                x = queue[head]
                head += 1
                for p in range(start[x], start[x + 1]):
                    y = nb[p]
                    if keep[y] and label[y] < 0:
                        label[y] = s
                        queue[tail] = y
                        tail += 1
    return label


@njit(cache=True)
def _truss_edges(nv, li, lj, k):
    """alive[e]: edge e is in the k-truss of the local graph (repeated passes until stable)."""
    ne = li.shape[0]
    alive = np.ones(ne, dtype=np.bool_)
    mark = np.full(nv, -1, dtype=np.int64)
    changed = k > 2
    while changed:
        changed = False
        start, nb, _ed = _local_csr(nv, li, lj, alive)
        drop = np.zeros(ne, dtype=np.bool_)
        for e in range(ne):
            if not alive[e]:
                continue
            a, b = li[e], lj[e]
            for p in range(start[a], start[a + 1]):
                mark[nb[p]] = e
            cnt = 0
            for p in range(start[b], start[b + 1]):
                if mark[nb[p]] == e:
                    cnt += 1
            if cnt < k - 2:
                drop[e] = True
        for e in range(ne):
            if drop[e]:
                alive[e] = False
                changed = True
        mark[:] = -1
    return alive


@njit(cache=True)
def _context_labels(indptr, adj, v, model, k, stamp):
    """(members of N(v), label per member: smallest local member of its context, or -1)."""
    members, li, lj = _ego(indptr, adj, v, stamp)
    nv = members.shape[0]
    keep = np.ones(nv, dtype=np.bool_)
    if model == 2:
        alive = _truss_edges(nv, li, lj, k)
        keep[:] = False
        for e in range(li.shape[0]):
            if alive[e]:
                keep[li[e]] = True
                keep[lj[e]] = True
    else:
        alive = np.ones(li.shape[0], dtype=np.bool_)
    start, nb, _ed = _local_csr(nv, li, lj, alive)
    if model == 1:  # delete vertices of degree < k until none is left
        deg = np.empty(nv, dtype=np.int64)
        queue = np.empty(nv, dtype=np.int64)
        tail = 0
        for i in range(nv):
            deg[i] = start[i + 1] - start[i]
            if deg[i] < k:
                keep[i] = False
                queue[tail] = i
                tail += 1
        head = 0
        while head < tail:
            x = queue[head]
            head += 1
            for p in range(start[x], start[x + 1]):
                y = nb[p]
                if keep[y]:
                    deg[y] -= 1
                    if deg[y] < k:
                        keep[y] = False
                        queue[tail] = y
                        tail += 1
    label = _bfs_labels(nv, start, nb, keep)
    if model == 0:
        size = np.zeros(nv, dtype=np.int64)
        for i in range(nv):
            size[label[i]] += 1
        for i in range(nv):
            if size[label[i]] < k:
                label[i] = -1
    return members, label


@njit(parallel=True, cache=True)
def _scores(indptr, adj, vertices, model, k, chunks, out):
    n = indptr.shape[0] - 1
    for c in prange(chunks):
        stamp = np.full(n, -1, dtype=np.int64)
        for x in range(c, vertices.shape[0], chunks):
            _m, label = _context_labels(indptr, adj, vertices[x], model, k, stamp)
            cnt = 0
            for i in range(label.shape[0]):
                if label[i] == i:
                    cnt += 1
            out[x] = cnt


class OracleGraph:
    """The oracle's view of a ``.gcsr``: simple undirected CSR, supports, exact contexts."""

    def __init__(self, graph):
        self.graph = graph
        self.n = int(graph.n)
        self.indptr, self.adj, keys = _undirected(graph)
        common = np.zeros(self.adj.shape[0], dtype=np.int64)
        _common_counts(self.indptr, self.adj, max(1, 2 * numba.get_num_threads()), common)
        rows = keys // self.n
        cols = keys % self.n
        rev = np.searchsorted(keys, cols * self.n + rows)
        d = np.diff(self.indptr)
        computed = (d[cols] < d[rows]) | ((d[cols] == d[rows]) & (cols < rows))
        self.common = np.where(computed, common, common[rev])
        self._stamp = np.full(self.n, -1, dtype=np.int64)

    def bound(self, model: str, k: int) -> np.ndarray:
        """Upper bound of every vertex's score (module docstring)."""
        if model == "comp":
            need, size = (0 if k <= 1 else 1), k
        elif model == "core":
            need, size = k, k + 1
        else:
            need, size = max(1, k - 1), max(2, k)
        rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
        return np.bincount(rows[self.common >= need], minlength=self.n) // size

    def contexts(self, v: int, model: str, k: int) -> list[list[int]]:
        """Contexts of internal vertex v: sorted lists of original ids, ordered by their first id."""
        members, label = _context_labels(self.indptr, self.adj, int(v), MODELS.index(model), int(k), self._stamp)
        orig = np.asarray(self.graph.original_id)[members]
        groups: dict[int, list[int]] = {}
        for i in range(members.shape[0]):
            if label[i] >= 0:
                groups.setdefault(int(label[i]), []).append(int(orig[i]))
        return [sorted(groups[root]) for root in sorted(groups)]

    def scores(self, vertices, model: str, k: int) -> np.ndarray:
        vertices = np.ascontiguousarray(vertices, dtype=np.int64)
        out = np.zeros(vertices.size, dtype=np.int64)
        if vertices.size:
            chunks = min(vertices.size, 4 * numba.get_num_threads())
            _scores(self.indptr, self.adj, vertices, MODELS.index(model), int(k), chunks, out)
        return out


# ---- verification of a result ------------------------------------------------------------------------
def _int(value, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise GpucoreError(f"{where} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _entry(entry, where: str) -> tuple[int, int, list[list[int]]]:
    if not isinstance(entry, dict) or "vertex" not in entry or "score" not in entry or "contexts" not in entry:
        raise GpucoreError(f"{where}: expected an object with vertex, score and contexts")
    ctx = entry["contexts"]
    if not isinstance(ctx, list) or not all(isinstance(c, list) for c in ctx):
        raise GpucoreError(f"{where} contexts: expected a list of vertex lists")
    for c in ctx:
        for x in c:
            _int(x, f"{where} context vertex", -(2**63))
    return _int(entry["vertex"], f"{where} vertex", -(2**63)), _int(entry["score"], f"{where} score", 0), ctx


def verify_sds(result: dict, graph, source: str) -> dict:
    """The report of one sds result (``passed``, ``failures`` one line each)."""
    model = str(result.get("model"))
    if model not in MODELS:
        raise GpucoreError(f"{source}: model {model!r} is unknown: expected comp, core or truss")
    k = _int(result.get("k"), f"{source} k", 1)
    t = _int(result.get("t"), f"{source} t", 1)
    top = result.get("top")
    if not isinstance(top, list):
        raise GpucoreError(f"{source}: 'top' must be a list")
    entries = [_entry(e, f"{source} top[{i}]") for i, e in enumerate(top)]
    failures = []
    if len(entries) != min(t, graph.n):
        failures.append(f"top holds {len(entries)} vertices, t = {t}")
    og = OracleGraph(graph)
    ids = graph.internal_ids([e[0] for e in entries]) if entries else np.zeros(0, np.int64)
    if np.unique(ids).size != ids.size:
        failures.append("a vertex appears more than once in top")
    for (vertex, score, ctx), v in zip(entries, ids):
        truth = og.contexts(int(v), model, k)
        if score != len(truth):
            failures.append(f"vertex {vertex}: score {score}, recomputed {len(truth)}")
        elif sorted(sorted(c) for c in ctx) != truth:
            failures.append(f"vertex {vertex}: its contexts differ from the recomputed ones")
    scores = np.array([e[1] for e in entries], dtype=np.int64)
    if entries and not np.array_equal(np.lexsort((ids, -scores)), np.arange(len(entries))):
        failures.append("top is not in rank order (score descending, then vertex id ascending)")
    report = {"checked": "sds", "model": model, "k": k, "t": t, "returned": len(entries)}
    if failures or not entries:
        report.update(failures=failures or ["empty top list"], passed=False)
        return report
    t_score = int(scores.min())
    last_tie = int(ids[scores == t_score].max())
    bound = og.bound(model, k)
    outside = np.ones(graph.n, dtype=bool)
    outside[ids] = False
    undecided = np.flatnonzero(outside & (bound >= max(t_score, 1)))
    exact = og.scores(undecided, model, k)
    beats = (exact > t_score) | ((exact == t_score) & (undecided < last_tie))
    if beats.any():
        u = int(undecided[np.flatnonzero(beats)[0]])
        failures.append(f"vertex {int(graph.original_id[u])} (score {int(exact[beats][0])}) beats the t-th score "
                        f"{t_score} under the tie rule but is not in top")
    if t_score == 0:
        zero_outside = np.flatnonzero(outside & (bound == 0))
        if zero_outside.size and int(zero_outside[0]) < last_tie:
            failures.append(f"vertex {int(graph.original_id[zero_outside[0]])} (score 0) precedes the last "
                            f"returned score-0 vertex by id but is not in top")
        ties = int(np.count_nonzero(scores == 0) + zero_outside.size + np.count_nonzero(exact == 0))
    else:
        ties = int(np.count_nonzero(scores == t_score) + np.count_nonzero(exact == t_score))
    for key, truth in (("t_score", t_score), ("ties_at_t", ties)):
        if key in result and result[key] != truth:
            failures.append(f"{key} {result[key]!r}, recomputed {truth}")
    report.update(t_score=t_score, ties_at_t=ties, rescored=int(undecided.size), failures=failures,
                  passed=not failures)
    return report
