"""The batch arena: the ego-networks of a batch of vertices side by side (one layout, both backends).

A batch holds B vertices v_0 .. v_{B-1}, largest ego-network first. Ego-network b has
``d_b = d(v_b)`` local vertices (the neighbours of v_b, local id i = position in v_b's sorted row,
so local ids keep the global order)
and ``E_b = |E(G_{v_b})|`` edges; both are known before the build from the edge supports. Its
rows are the flat rows ``row_base[b] .. row_base[b+1]-1`` (row r = row_base[b] + i), its local
edges are the flat edges ``edge_base[b] .. edge_base[b+1]-1``.

Per flat row r (``ROWS``; ``row_edge`` for truss only):

- ``row_deg``   ego degree of local vertex i (= the support of edge (v_b, u_i));
- ``row_start`` position of the row in ``nbr`` (exclusive prefix sum of ``row_deg`` over the batch);
- ``nbr[row_start[r] : row_start[r] + row_deg[r]]`` the local ids j of N(u_i) & N(v_b), ascending
  (the ego CSR: sorted local adjacency lists);
- ``row_lower`` how many of them are < i (the row's entries > i start at ``row_start + row_lower``);
- ``row_owner`` b;  ``parent`` / ``aux``: scoring state (union-find parent, coreness, sizes);
  after scoring, ``parent[r]`` is the label of row r: the flat row of the smallest member of its
  context, or -1 when r is in no context;
- ``row_edge``  (truss) the flat id of the row's first edge to a larger local id: an edge (i, j),
  i < j, has local id ``row_edge[r] - edge_base[b] + (x - row_start[r] - row_lower[r])`` where x is
  the position of j in row i: edges are numbered in (i, j) order.

Per slot x of ``nbr`` (truss): ``eid[x]`` the local id of the edge of the slot. Per flat edge
(truss): endpoints ``el_i < el_j`` (local ids), ``sup`` (support in G_v, then the peeling level),
``state`` (``ALIVE``/``CURR``/``NEXT``/``DEAD``) and the peeling queues ``curr``/``next`` (local ids).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes

ROWS = (("row_start", np.int64), ("row_deg", np.int32), ("row_lower", np.int32), ("row_owner", np.int32),
        ("parent", np.int32), ("aux", np.int32))
TRUSS_ROWS = (("row_edge", np.int64),)
SLOTS = (("nbr", np.int32),)
TRUSS_SLOTS = (("eid", np.int32),)
TRUSS_EDGES = (("el_i", np.int32), ("el_j", np.int32), ("sup", np.int32), ("state", np.uint8),
               ("curr", np.int32), ("next", np.int32))
#: per ego-network: vertex, row_base, edge_base, flags, score
PER_EGO_BYTES = 4 + 8 + 8 + 4 + 4
#: edge states of the truss peeling (sds_common.cuh uses the same values)
ALIVE, CURR, NEXT, DEAD = 0, 1, 2, 3
#: flat rows and edges are int32 (parent labels, queues)
MAX_ROWS = 2**31 - 1


def _width(fields) -> int:
    return sum(np.dtype(dt).itemsize for _name, dt in fields)


def arena_fields(model: str) -> tuple[tuple, tuple, tuple]:
    """(row fields, slot fields, edge fields) a model needs."""
    if model == "truss":
        return ROWS + TRUSS_ROWS, SLOTS + TRUSS_SLOTS, TRUSS_EDGES
    return ROWS, SLOTS, ()


def ego_bytes(model: str, degree, edges) -> np.ndarray:
    """Arena bytes of ego-networks with ``degree`` local vertices and ``edges`` edges (int64)."""
    rows, slots, per_edge = arena_fields(model)
    degree = np.asarray(degree, dtype=np.int64)
    edges = np.asarray(edges, dtype=np.int64)
    return PER_EGO_BYTES + _width(rows) * degree + (2 * _width(slots) + _width(per_edge)) * edges


@dataclass
class Batch:
    """The host description of one batch (the arena arrays live on the engine's device).

    Ego-networks are stored largest first (by d + |E|): the giant ones form a prefix of the arena
    that whole-device kernels can sweep. ``source[b]`` is the position of ego-network b's vertex in
    the list the batch was made from."""

    vertices: np.ndarray  # int32 [B], largest ego-network first
    row_base: np.ndarray  # int64 [B+1]
    edge_base: np.ndarray  # int64 [B+1]
    source: np.ndarray  # int64 [B]

    @property
    def size(self) -> int:
        return int(self.vertices.shape[0])

    @property
    def rows(self) -> int:
        return int(self.row_base[-1])

    @property
    def edges(self) -> int:
        return int(self.edge_base[-1])

    def giants(self, min_edges: int) -> int:
        """Number of leading ego-networks with at least ``min_edges`` edges."""
        return int(np.count_nonzero(np.diff(self.edge_base) >= min_edges))


def make_batch(vertices, degree: np.ndarray, ego_edges: np.ndarray) -> Batch:
    """The layout of the ego-networks of ``vertices`` (internal ids; ``degree``/``ego_edges`` per vertex)."""
    vertices = np.ascontiguousarray(vertices, dtype=np.int32)
    d = np.asarray(degree, dtype=np.int64)[vertices]
    e = np.asarray(ego_edges, dtype=np.int64)[vertices]
    source = np.argsort(-(e + d), kind="stable")
    vertices, d, e = vertices[source], d[source], e[source]
    row_base = np.zeros(vertices.size + 1, dtype=np.int64)
    np.cumsum(d, out=row_base[1:])
    edge_base = np.zeros(vertices.size + 1, dtype=np.int64)
    np.cumsum(e, out=edge_base[1:])
    if row_base[-1] > MAX_ROWS or edge_base[-1] > MAX_ROWS:
        raise OutOfMemoryError(f"a batch of {vertices.size:,} ego-networks has {int(row_base[-1]):,} rows and "
                               f"{int(edge_base[-1]):,} edges, above the {MAX_ROWS:,} one arena can index; use a "
                               f"smaller --memory-budget")
    return Batch(vertices, row_base, edge_base, source.astype(np.int64))


def pack(candidates: np.ndarray, start: int, count: int, sizes: np.ndarray, budget: int, where: str,
         degree: np.ndarray | None = None, ego_edges: np.ndarray | None = None) -> int:
    """End of the next batch: at most ``count`` candidates from ``start`` whose arena bytes
    (``sizes``, per candidate) fit ``budget`` and, given their ``degree`` and ``ego_edges`` (per
    candidate), whose rows and edges stay within ``MAX_ROWS``; at least one, else ``OutOfMemoryError``."""
    stop = min(len(candidates), start + max(1, int(count)))
    end = start + int(np.searchsorted(np.cumsum(sizes[start:stop]), budget, side="right"))
    for per in (degree, ego_edges):
        if per is not None:
            end = min(end, start + int(np.searchsorted(np.cumsum(per[start:stop]), MAX_ROWS, side="right")))
    if end == start:
        raise OutOfMemoryError(
            f"{where}: the ego-network of vertex {int(candidates[start])} needs {format_bytes(int(sizes[start]))} of "
            f"buffers but {format_bytes(budget)} is available for them; raise --memory-budget or use a device "
            f"with more memory")
    return end


def check_slots(total: int, batch: Batch) -> None:
    """The ego degrees of a batch must fill exactly its 2 |E| slots (else the supports are corrupt)."""
    if total != 2 * batch.edges:
        raise GpucoreError(f"sds: the ego degrees of a batch sum to {total:,}, not twice its {batch.edges:,} "
                           f"edges (inconsistent edge supports)")


def decode_contexts(batch: Batch, labels: np.ndarray, b: int, members: np.ndarray) -> list[list[int]]:
    """The contexts of ego-network ``b``: lists of ``members`` entries (``members[i]`` = the id to
    report for local vertex i), each list ascending, lists ordered by their first (smallest) entry."""
    r0, r1 = int(batch.row_base[b]), int(batch.row_base[b + 1])
    lab = np.asarray(labels[r0:r1])
    local = np.flatnonzero(lab >= 0)
    if local.size == 0:
        return []
    roots, group = np.unique(lab[local], return_inverse=True)
    order = np.lexsort((local, group))
    bounds = np.searchsorted(group[order], np.arange(roots.size + 1))
    ids = np.asarray(members)[local[order]]
    return [[int(x) for x in ids[bounds[g]:bounds[g + 1]]] for g in range(roots.size)]
