"""CPU backend of structural diversity search: the arena of ``gpucore.sds.layout`` in NumPy arrays,
the Numba kernels of ``gpucore.sds.kernels_cpu``, parallel over edges' owners, rows and ego-networks.

With ``threads=1`` the same code runs on one core: the "sequential CPU" of the benchmarks.
Loops over vertices and ego-networks hand out small chunks (``numba.parallel_chunksize``), so a
few huge ego-networks do not serialise a whole static share of the work, and the heavy steps
(build, truss supports, H-index rounds) run in parallel over rows or edges, across ego-networks.
"""

from __future__ import annotations

import numba
import numpy as np

from gpucore.errors import GpucoreError
from gpucore.sds import kernels_cpu as K
from gpucore.sds.bounds import MODEL_CODE
from gpucore.sds.layout import Batch, arena_fields, check_slots
from gpucore.sds.primitives import Engine

#: iterations handed to a thread at a time in the loops over vertices, rows and edges (the batch
#: is stored largest ego-network first, so equal static shares would be very unequal in work)
CHUNK = 16


class CpuEngine(Engine):
    name = "cpu"

    def __init__(self, sg, backend, budget: int):
        super().__init__(sg, backend, budget)
        self.indptr = np.ascontiguousarray(sg.indptr, dtype=np.int64)
        self.adj = np.ascontiguousarray(sg.adj, dtype=np.int32)
        self.sup = None
        self.arena: dict[str, np.ndarray] = {}
        self._scores = None

    def _supports(self, part: int = 0, parts: int = 1) -> None:
        self.sup = np.zeros(self.adj.shape[0], dtype=np.int32)
        errors = np.zeros(1, dtype=np.int32)
        with numba.parallel_chunksize(CHUNK):
            K.edge_supports(self.indptr, self.adj, int(part), int(parts), self.sup, errors)
        if errors[0]:
            raise GpucoreError("sds: an edge (u, v) has no slot (v, u): the graph's CSR is not symmetric")

    def _counts(self, threshold: int):
        count = np.empty(self.n, dtype=np.int64)
        edges = np.empty(self.n, dtype=np.int64)
        K.ego_counts(self.indptr, self.sup, int(threshold), count, edges)
        return count, edges

    def _build(self, batch: Batch, model: str) -> None:
        rows, slots, edges = arena_fields(model)
        a = {}
        for name, dt in rows:
            a[name] = np.empty(batch.rows, dtype=dt)
        for name, dt in slots:
            a[name] = np.empty(2 * batch.edges, dtype=dt)
        for name, dt in edges:
            a[name] = np.empty(batch.edges, dtype=dt)
        self.arena = a
        with numba.parallel_chunksize(CHUNK):
            K.gather_rows(self.indptr, self.sup, batch.vertices, batch.row_base, a["row_deg"], a["row_owner"])
            _exclusive_cumsum(a["row_deg"], a["row_start"])
            if batch.rows:
                check_slots(int(a["row_start"][-1] + a["row_deg"][-1]), batch)
            errors = np.zeros(1, dtype=np.int32)
            K.fill_rows(self.indptr, self.adj, batch.vertices, batch.row_base, a["row_owner"], a["row_start"],
                        a["row_deg"], a["nbr"], a["row_lower"], errors)
            if errors[0]:
                raise GpucoreError("sds: an ego-network row did not match its support "
                                   "(corrupt graph: rows not sorted?)")
            if model == "truss":
                _exclusive_cumsum(a["row_deg"] - a["row_lower"], a["row_edge"])
                K.edge_ids(a["row_owner"], batch.row_base, batch.edge_base, a["row_start"], a["row_deg"],
                           a["row_lower"], a["row_edge"], a["nbr"], a["eid"], a["el_i"], a["el_j"])

    def _score(self, model: str, k: int, stop_level: int) -> np.ndarray:
        a, batch = self.arena, self.batch
        score = np.zeros(batch.size, dtype=np.int32)
        truss = [a[name] if name in a else np.zeros(1, dtype=dt) for name, dt in (
            ("eid", np.int32), ("el_i", np.int32), ("el_j", np.int32), ("sup", np.int32), ("state", np.uint8),
            ("curr", np.int32))]
        if model == "truss" and stop_level > 0 and batch.edges:
            with numba.parallel_chunksize(CHUNK):
                K.edge_supports_batch(batch.row_base, batch.edge_base, a["row_start"], a["row_deg"], a["nbr"],
                                      a["el_i"], a["el_j"], a["sup"])
        if model == "core" and batch.rows:
            K.coreness_batch(batch.row_base, a["row_owner"], a["row_start"], a["row_deg"], a["nbr"], a["aux"],
                             8 * numba.get_num_threads())
        with numba.parallel_chunksize(1):
            K.score_batch(MODEL_CODE[model], int(k), int(stop_level), batch.row_base, batch.edge_base,
                          a["row_start"], a["row_deg"], a["nbr"], *truss, a["parent"], a["aux"], score)
        return score

    def _host(self, name: str) -> np.ndarray:
        return self.arena[name]


def _exclusive_cumsum(values: np.ndarray, out: np.ndarray) -> None:
    if out.size:
        out[0] = 0
        np.cumsum(values[:-1], dtype=np.int64, out=out[1:])
