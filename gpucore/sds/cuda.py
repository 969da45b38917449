"""CUDA backend of structural diversity search: CuPy arrays in the layout of ``gpucore.sds.layout``
and the kernels of ``gpucore/kernels/sds`` (``sds_graph.cu``, ``sds_build.cu``, ``sds_score.cu``,
``sds_flat.cu``; the steps of one ego-network in ``sds_ego.cuh``).

Per run: the CSR goes to the device once; ``sds_supports`` (a warp per 32 slots, warp-cooperative
sorted-list intersections) gives every edge's support, ``sds_counts`` the per-vertex counts for the
bounds and sizes, and the candidates are ranked on the device (``ranking.candidate_order`` with
CuPy). Per batch: ``sds_gather_rows`` (a warp per ego-network), a CuPy prefix sum, ``sds_fill_rows``
(a warp per local vertex: the sorted local lists), for truss a second prefix sum and
``sds_edge_ids``, then ``sds_score`` (a block per ego-network, blocks pulling the next one from a
counter, largest first), except for the giant ego-networks (at least ``GIANT_EDGES`` edges, stored
first): those are scored by ``sds_flat.cu``, every step a whole-device launch, the host driving the
H-index rounds, truss levels and PKT sub-rounds. Only the batch's scores (and, for the answers,
the context labels) come back to the host. The scores equal the CPU backend's (``tests/gpu/test_sds_cuda.py``).
"""

from __future__ import annotations

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.sds.bounds import MODEL_CODE
from gpucore.sds.layout import Batch, arena_fields, check_slots
from gpucore.sds.primitives import Engine

ERRORS = {
    0: "an ego-network row did not hold as many entries as its support (corrupt graph: rows not sorted?)",
    1: "sds_score was launched with a block that is not a whole number of warps",
    2: "an edge (u, v) has no slot (v, u): the graph's CSR is not symmetric",
}
#: threads per block of the block-per-ego-network kernel (the paper's Fig. 1 shows a block per ego)
SCORE_THREADS = 256
#: ego-networks with at least this many edges are scored by whole-device launches (sds_flat.cu)
GIANT_EDGES = 1 << 16
#: threads per block of the warp-per-item kernels
WARP_KERNEL_THREADS = 256
#: resident blocks per SM the grids aim for
BLOCKS_PER_SM = 8


def _i64(x) -> np.int64:
    return np.int64(int(x))


def _i32(x) -> np.int32:
    return np.int32(int(x))


class CudaEngine(Engine):
    name = "cuda"

    def __init__(self, sg, backend, budget: int, score_threads: int = SCORE_THREADS,
                 giant_edges: int = GIANT_EDGES):
        super().__init__(sg, backend, budget)
        be = self.backend
        self.indptr = be.asarray(np.asarray(sg.indptr), dtype=np.int64, what="CSR row pointers")
        self.adj = be.asarray(np.asarray(sg.adj), dtype=np.int32, what="CSR adjacency lists")
        self.sup = None
        self.arena: dict = {}
        self.ego: dict = {}
        self.errors = be.zeros(4, np.int32, what="error flags")
        self.sms = int(self._device_facts())
        self.score_threads = int(score_threads)
        self.giant_edges = int(giant_edges)
        self.modules = {name: self._load(f"sds/{name}")
                        for name in ("sds_graph", "sds_build", "sds_score", "sds_flat")}

    # ---- device facts and kernels (the emulator adapter overrides these two) ------------------------
    def _load(self, name: str):
        from gpucore.kernels import load_module

        return load_module(name)

    def _device_facts(self) -> int:
        props = self.xp.cuda.runtime.getDeviceProperties(self.xp.cuda.Device().id)
        return int(props["multiProcessorCount"])

    def _kernel(self, module: str, name: str):
        return self.modules[module].get_function(name)

    def _check_errors(self) -> None:
        errors = self.backend.to_host(self.errors)
        for slot, what in ERRORS.items():
            if errors[slot]:
                raise GpucoreError(f"sds on the GPU: {what}")

    # ---- global steps ------------------------------------------------------------------------
    def _supports(self, part: int = 0, parts: int = 1) -> None:
        slots = int(self.adj.shape[0])
        self.sup = self.backend.zeros(max(slots, 1), np.int32, what="edge supports")
        if slots:
            self._kernel("sds_graph", "sds_supports")(*self._grid(-(-slots // (32 * parts)), True),
                                                      (self.indptr, self.adj, _i64(self.n), _i64(slots), _i64(part),
                                                       _i64(parts), self.sup, self.errors))
            self._check_errors()

    def _counts(self, threshold: int):
        be = self.backend
        count = be.empty(self.n, np.int64, what="per-vertex counts")
        edges = be.empty(self.n, np.int64, what="per-vertex ego-network sizes")
        self._kernel("sds_graph", "sds_counts")(*self._grid(self.n, False), (self.indptr, self.sup, _i64(self.n),
                                                                              _i32(threshold), count, edges))
        return count, edges

    # ---- per batch -----------------------------------------------------------------------------
    def _build(self, batch: Batch, model: str) -> None:
        be, xp = self.backend, self.xp
        self.arena = {}
        rows, slots, edges = arena_fields(model)
        a = {}
        for name, dt in rows:
            a[name] = be.empty(max(batch.rows, 1), dt, what=f"ego-network arena ({name})")
        for name, dt in slots:
            a[name] = be.empty(max(2 * batch.edges, 1), dt, what=f"ego-network arena ({name})")
        for name, dt in edges:
            a[name] = be.empty(max(batch.edges, 1), dt, what=f"ego-network arena ({name})")
        self.ego = {name: be.asarray(getattr(batch, name), what=f"batch {name}")
                    for name in ("vertices", "row_base", "edge_base")}
        self.arena = a
        if batch.rows == 0:
            return
        self._kernel("sds_build", "sds_gather_rows")(
            *self._grid(batch.size, True),
            (self.indptr, self.sup, self.ego["vertices"], _i64(batch.size), self.ego["row_base"], a["row_deg"],
             a["row_owner"]))
        deg = a["row_deg"][:batch.rows]
        a["row_start"][:batch.rows] = xp.cumsum(deg, dtype=xp.int64) - deg
        check_slots(int(a["row_start"][batch.rows - 1] + deg[batch.rows - 1]), batch)
        self._kernel("sds_build", "sds_fill_rows")(
            *self._grid(batch.rows, True),
            (self.indptr, self.adj, self.ego["vertices"], self.ego["row_base"], a["row_owner"], a["row_start"],
             a["row_deg"], _i64(batch.rows), a["nbr"], a["row_lower"], self.errors))
        self._check_errors()
        if model == "truss":
            up = deg - a["row_lower"][:batch.rows]
            a["row_edge"][:batch.rows] = xp.cumsum(up, dtype=xp.int64) - up
            self._kernel("sds_build", "sds_edge_ids")(
                *self._grid(batch.rows, True),
                (a["row_owner"], self.ego["row_base"], self.ego["edge_base"], a["row_start"], a["row_deg"],
                 a["row_lower"], a["row_edge"], _i64(batch.rows), a["nbr"], a["eid"], a["el_i"], a["el_j"]))

    def _score(self, model: str, k: int, stop_level: int) -> np.ndarray:
        be, a, batch = self.backend, self.arena, self.batch
        score = be.zeros(max(batch.size, 1), np.int32, what="scores")
        extra = {name: a[name] if name in a else be.zeros(1, dt) for name, dt in (
            ("row_edge", np.int64), ("eid", np.int32), ("el_i", np.int32), ("el_j", np.int32), ("sup", np.int32),
            ("state", np.uint8), ("curr", np.int32), ("next", np.int32))}
        arena = (self.ego["row_base"], self.ego["edge_base"], a["row_start"], a["row_deg"], a["row_owner"], a["nbr"],
                 extra["eid"], extra["el_i"], extra["el_j"], extra["sup"], extra["state"], a["parent"], a["aux"])
        giants = batch.giants(self.giant_edges)
        if giants:
            self._score_giants(model, k, stop_level, giants, score, arena, extra)
        if giants < batch.size:
            work = be.zeros(1, np.int32, what="work counter")
            blocks = max(1, min(batch.size - giants, self.sms * max(1, 2048 // self.score_threads)))
            self._kernel("sds_score", "sds_score")(
                (blocks,), (self.score_threads,),
                (_i32(MODEL_CODE[model]), _i32(k), _i32(stop_level), _i64(giants), _i64(batch.size), work,
                 self.ego["row_base"], self.ego["edge_base"], a["row_start"], a["row_deg"], a["nbr"], extra["eid"],
                 extra["el_i"], extra["el_j"], extra["sup"], extra["state"], extra["curr"], extra["next"], a["parent"],
                 a["aux"], score, self.errors))
        self._check_errors()
        return be.to_host(score)[:batch.size].astype(np.int32)

    def _score_giants(self, model: str, k: int, stop_level: int, giants: int, score, arena: tuple, extra: dict):
        """The giant ego-networks 0 .. giants-1, every step a whole-device launch (sds_flat.cu)."""
        batch = self.batch
        rows, edges = int(batch.row_base[giants]), int(batch.edge_base[giants])
        counters = self.backend.zeros(4, np.int32, what="counters")
        code = _i32(MODEL_CODE[model])
        launch = lambda name, items, warp, *args: self._kernel("sds_flat", name)(  # noqa: E731
            *self._grid(items, warp), args)
        launch("sds_flat_init", rows, False, code, _i64(rows), *arena)
        if model == "core":
            while True:  # H-index rounds until none lowers a value
                counters[3] = 0
                launch("sds_flat_hindex", rows, True, _i64(rows), counters, *arena)
                if not int(counters[3]):
                    break
        if model == "truss":
            launch("sds_flat_supports", edges, True, _i32(stop_level), _i64(giants), _i64(edges), *arena)
            curr, nxt = extra["curr"], extra["next"]
            level = 0
            while level < stop_level:
                counters.fill(0)
                counters[2] = stop_level
                launch("sds_flat_file", edges, False, _i32(level), _i64(edges), curr, counters, *arena)
                ncurr, low = int(counters[0]), int(counters[2])
                if ncurr == 0:  # no edge at this level: go to the lowest support left (or stop)
                    level = low
                    continue
                while ncurr:  # PKT sub-rounds
                    counters[1] = 0
                    launch("sds_flat_peel", ncurr, True, _i32(level), _i64(giants), _i64(ncurr), curr, nxt, counters,
                           *arena)
                    nnext = int(counters[1])
                    launch("sds_flat_retire", ncurr + nnext, False, _i64(ncurr), curr, _i64(nnext), nxt,
                           extra["state"])
                    curr, nxt, ncurr = nxt, curr, nnext
                level += 1
            launch("sds_flat_union_alive", edges, False, _i64(giants), _i64(edges), *arena)
        else:
            launch("sds_flat_union", rows, True, code, _i32(k), _i64(rows), *arena)
        parent, aux = arena[-2], arena[-1]
        launch("sds_flat_roots", rows, False, _i64(rows), parent)
        if model == "comp":
            launch("sds_flat_sizes", rows, False, _i64(rows), parent, aux)
        launch("sds_flat_count", rows, False, code, _i32(k), _i64(rows), score, *arena)

    def _grid(self, items: int, warp: bool) -> tuple[tuple[int], tuple[int]]:
        """(grid, block) of a whole-device launch: a warp or a thread per item, grid-stride beyond
        BLOCKS_PER_SM * 4 blocks per SM."""
        per_block = WARP_KERNEL_THREADS // 32 if warp else WARP_KERNEL_THREADS
        blocks = max(1, min(-(-int(items) // per_block), self.sms * BLOCKS_PER_SM * 4))
        return (blocks,), (WARP_KERNEL_THREADS,)

    def _host(self, name: str) -> np.ndarray:
        return self.backend.to_host(self.arena[name])
