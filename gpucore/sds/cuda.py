"""CUDA backend of structural diversity search: CuPy arrays in the layout of ``gpucore.sds.layout``
and the kernels of ``gpucore/kernels/sds`` (``sds_graph.cu``, ``sds_build.cu``, ``sds_score.cu``).

Per run: the CSR goes to the device once; ``sds_supports`` (a warp per 32 slots, warp-cooperative
sorted-list intersections) gives every edge's support, ``sds_counts`` the per-vertex counts for the
bounds and sizes, and the candidates are ranked on the device (``ranking.candidate_order`` with
CuPy). Per batch: ``sds_gather_rows`` (a warp per ego-network), a CuPy prefix sum, ``sds_fill_rows``
(a warp per local vertex: the sorted local lists), for truss a second prefix sum and
``sds_edge_ids``, then ``sds_score`` (a block per ego-network, blocks pulling the next one from a
counter, largest first). Only the batch's scores (and, for the answers, the context labels)
come back to the host. The scores equal the CPU backend's (``tests/gpu/test_sds_cuda.py``).
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
}
#: threads per block of the block-per-ego-network kernel (the paper's Fig. 1 shows a block per ego)
SCORE_THREADS = 256
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

    def __init__(self, sg, backend, budget: int, score_threads: int = SCORE_THREADS):
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
        self.modules = {name: self._load(f"sds/{name}") for name in ("sds_graph", "sds_build", "sds_score")}

    # ---- device facts and kernels (the emulator adapter overrides these two) ------------------------
    def _load(self, name: str):
        from gpucore.kernels import load_module

        return load_module(name)

    def _device_facts(self) -> int:
        props = self.xp.cuda.runtime.getDeviceProperties(self.xp.cuda.Device().id)
        return int(props["multiProcessorCount"])

    def _kernel(self, module: str, name: str):
        return self.modules[module].get_function(name)

    def _warp_grid(self, items: int) -> tuple[int, int]:
        """(blocks, threads) for a warp per item, grid-stride beyond BLOCKS_PER_SM blocks per SM."""
        warps = WARP_KERNEL_THREADS // 32
        return max(1, min(-(-int(items) // warps), self.sms * BLOCKS_PER_SM * 4)), WARP_KERNEL_THREADS

    def _check_errors(self) -> None:
        errors = self.backend.to_host(self.errors)
        for slot, what in ERRORS.items():
            if errors[slot]:
                raise GpucoreError(f"sds on the GPU: {what}")

    # ---- global steps ------------------------------------------------------------------------
    def _supports(self) -> None:
        slots = int(self.adj.shape[0])
        self.sup = self.backend.zeros(max(slots, 1), np.int32, what="edge supports")
        if slots:
            blocks, threads = self._warp_grid(-(-slots // 32))
            self._kernel("sds_graph", "sds_supports")((blocks,), (threads,),
                                                      (self.indptr, self.adj, _i64(self.n), _i64(slots), self.sup))

    def _counts(self, threshold: int):
        be = self.backend
        count = be.empty(self.n, np.int64, what="per-vertex counts")
        edges = be.empty(self.n, np.int64, what="per-vertex ego-network sizes")
        threads = 256
        blocks = max(1, min(-(-self.n // threads), self.sms * BLOCKS_PER_SM * 4))
        self._kernel("sds_graph", "sds_counts")((blocks,), (threads,), (self.indptr, self.sup, _i64(self.n),
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
                    for name in ("vertices", "row_base", "edge_base", "order")}
        self.arena = a
        if batch.rows == 0:
            return
        blocks, threads = self._warp_grid(batch.size)
        self._kernel("sds_build", "sds_gather_rows")(
            (blocks,), (threads,), (self.indptr, self.sup, self.ego["vertices"], _i64(batch.size),
                                    self.ego["row_base"], a["row_deg"], a["row_owner"]))
        deg = a["row_deg"][:batch.rows]
        a["row_start"][:batch.rows] = xp.cumsum(deg, dtype=xp.int64) - deg
        check_slots(int(a["row_start"][batch.rows - 1] + deg[batch.rows - 1]), batch)
        blocks, threads = self._warp_grid(batch.rows)
        self._kernel("sds_build", "sds_fill_rows")(
            (blocks,), (threads,), (self.indptr, self.adj, self.ego["vertices"], self.ego["row_base"],
                                    a["row_owner"], a["row_start"], a["row_deg"], _i64(batch.rows), a["nbr"],
                                    a["row_lower"], self.errors))
        self._check_errors()
        if model == "truss":
            up = deg - a["row_lower"][:batch.rows]
            a["row_edge"][:batch.rows] = xp.cumsum(up, dtype=xp.int64) - up
            self._kernel("sds_build", "sds_edge_ids")(
                (blocks,), (threads,), (a["row_owner"], self.ego["row_base"], self.ego["edge_base"], a["row_start"],
                                        a["row_deg"], a["row_lower"], a["row_edge"], _i64(batch.rows), a["nbr"],
                                        a["eid"], a["el_i"], a["el_j"]))

    def _score(self, model: str, k: int, stop_level: int) -> np.ndarray:
        be, a, batch = self.backend, self.arena, self.batch
        score = be.zeros(max(batch.size, 1), np.int32, what="scores")
        work = be.zeros(1, np.int32, what="work counter")
        dummy = {name: a.get(name) if name in a else be.zeros(1, dt) for name, dt in (
            ("eid", np.int32), ("el_i", np.int32), ("el_j", np.int32), ("sup", np.int32), ("state", np.uint8),
            ("curr", np.int32), ("next", np.int32))}
        blocks = max(1, min(batch.size, self.sms * max(1, 2048 // self.score_threads)))
        self._kernel("sds_score", "sds_score")(
            (blocks,), (self.score_threads,),
            (_i32(MODEL_CODE[model]), _i32(k), _i32(stop_level), self.ego["order"], _i64(batch.size), work,
             self.ego["row_base"], self.ego["edge_base"], a["row_start"], a["row_deg"], a["nbr"], dummy["eid"],
             dummy["el_i"], dummy["el_j"], dummy["sup"], dummy["state"], dummy["curr"], dummy["next"], a["parent"],
             a["aux"], score, self.errors))
        self._check_errors()
        return be.to_host(score)[:batch.size].astype(np.int32)

    def _host(self, name: str) -> np.ndarray:
        return self.backend.to_host(self.arena[name])
