"""CPU backend of AMCSS: NumPy arrays in the segment/offset layout, Numba kernels over segments.

``update=True`` in the driver gives MERIT on the CPU; ``update=False`` gives PASTI (regenerate
every round, all cores) and with one thread ASTI (cost-aware). See ``kernels_cpu`` for the kernels.
"""

from __future__ import annotations


import numba
import numpy as np

from gpucore.amcss import kernels_cpu as K
from gpucore.amcss.layout import Collection, CollectionSizing, MemoryBudget, collection_bytes, collection_sets
from gpucore.amcss.primitives import Primitives
from gpucore.backend import set_cpu_threads
from gpucore.errors import GpucoreError
from gpucore.graph.model import Graph


#: below this much work (entries, nodes, sets) a kernel runs serially: a parallel launch costs more
PARALLEL_MIN_WORK = 1 << 15


class CpuPrimitives(CollectionSizing, Primitives):
    name = "cpu"

    def __init__(self, graph: Graph, model: str, budget: MemoryBudget, threads: int | None = None,
                 segments: int | None = None):
        set_cpu_threads(threads)
        self.graph = graph
        self.model = model
        self.is_lt = model == "LT"
        self.budget = budget
        n, m = graph.n, graph.m
        self.n = n
        self.T = int(numba.get_num_threads())
        self.S = int(segments) if segments else max(1, 8 * self.T)
        in_w, out_w = graph.edge_probabilities(model)
        self.in_indptr = np.ascontiguousarray(graph.in_indptr, dtype=np.int64)
        self.in_src = np.ascontiguousarray(graph.in_src, dtype=np.int32)
        self.in_eid = np.ascontiguousarray(graph.in_eid, dtype=np.int32)
        self.in_w = np.ascontiguousarray(in_w, dtype=np.float32)
        self.out_indptr = np.ascontiguousarray(graph.out_indptr, dtype=np.int64)
        self.out_dst = np.ascontiguousarray(graph.out_dst, dtype=np.int32)
        self.out_w = np.ascontiguousarray(out_w, dtype=np.float32)
        self.cost = np.ascontiguousarray(graph.cost, dtype=np.float32)
        budget.reserve_fixed(self.T * n * 12 + 8 * self.T, "per-thread scratch (marks, coverage deltas, work lists)")
        budget.reserve_fixed(n * (4 + 4 + 1 + 1 + 4 + 4 + 8), "per-node state")
        if self.is_lt:
            budget.reserve_fixed(16 * m, "fixed-point LT weights")
            q_in = np.empty(m, dtype=np.int64)
            K.fixed_weights(self.in_w, q_in)
            self.lt_cum = np.empty(m, dtype=np.int64)
            K.lt_prefix(self.in_indptr, q_in, self.lt_cum)
            del q_in
            self.q_out = np.empty(m, dtype=np.int64)
            K.fixed_weights(self.out_w, self.q_out)
        else:
            self.lt_cum = np.zeros(1, dtype=np.int64)
            self.q_out = np.zeros(1, dtype=np.int64)
        self.mark = np.zeros((self.T, n), dtype=np.int32)
        self.buf = np.zeros((self.T, n), dtype=np.int32)
        self.delta = np.zeros((self.T, n), dtype=np.int32)
        self.stamps = np.zeros(self.T, dtype=np.int64)
        self.cnt = np.zeros(n, dtype=np.int32)
        self.cnt2 = np.zeros(n, dtype=np.int32)
        self.active = np.zeros(n, dtype=np.uint8)
        self.excluded = np.zeros(n, dtype=np.uint8)
        self.residual = np.arange(n, dtype=np.int32)
        self.n_res = n
        self.lt_acc = np.zeros(n, dtype=np.int64)
        self.queue = np.zeros(n, dtype=np.int32)
        self.errors = np.zeros(1, dtype=np.int64)
        self.newly = np.zeros(self.S, dtype=np.int64)
        self.world_seed = np.uint64(0)
        self.seed = np.uint64(0)
        self.coll: Collection | None = None
        self.k_last = 1.0
        self.stats = {"relayouts": 0}
        #: size the segments ahead of Generate/Update from the measured set sizes (tests turn it off
        #: to exercise the overflow -> grow -> resume path)
        self.preplan = True
        #: below this much work a kernel runs in its serial form (``_k``)
        self.parallel_min_work = PARALLEL_MIN_WORK

    # ---- realization -------------------------------------------------------------------------
    def warm_up(self) -> None:
        """The shared warm-up cycle (``CollectionSizing.warm_up``) once per kernel form: every
        kernel parallel, then every kernel serial (a run picks the form by the size of the work)."""
        forms = (0, 1 << 62) if self.T > 1 else (1 << 62,)
        try:
            for min_work in forms:
                self.parallel_min_work = min_work
                super().warm_up()
        finally:
            self.parallel_min_work = PARALLEL_MIN_WORK

    def start(self, world_seed: int, sample_seed: int) -> None:
        self.world_seed = np.uint64(world_seed)
        self.seed = np.uint64(sample_seed)
        self.cnt[:] = 0
        self.cnt2[:] = 0
        self.active[:] = 0
        self.excluded[:] = 0
        self.residual = np.arange(self.n, dtype=np.int32)
        self.n_res = self.n
        self.lt_acc[:] = 0
        self.delta[:] = 0
        if self.coll is None:
            self.coll = self._allocate(self.S, 2, 256, None)
        self._empty()
        self.coll.next_id = 0
        self.k_last = 1.0

    # ---- layout management -------------------------------------------------------------------
    def _allocate(self, S: int, L: int, l: int, old: Collection | None) -> Collection:
        current = old.nbytes if old is not None else 0
        self.budget.check_collection(current, collection_bytes(S, l, L), f"an mRR-set collection of {S} x {l:,} entries")
        return Collection(
            S=S, L=L, l=l,
            mrr=np.empty(S * l, dtype=np.int32),
            offset=np.zeros(S * L, dtype=np.int64),
            nroots=np.zeros(S * L, dtype=np.int32),
            set_id=np.zeros(S * L, dtype=np.int64),
            flag=np.zeros(S * L, dtype=np.uint8),
            count=np.zeros(S, dtype=np.int64),
            lo=np.zeros(S, dtype=np.int64),
            hi=np.zeros(S, dtype=np.int64),
            status=np.zeros(S, dtype=np.int8),
            upd=np.zeros((S, 5), dtype=np.int64),
        )

    def _empty(self) -> None:
        c = self.coll
        c.offset[:] = 0
        c.count[:] = 0
        c.lo[:] = 0
        c.hi[:] = 0
        c.flag[:] = 0
        c.theta = 0
        c.entries = 0

    def _relayout(self, old, new) -> None:
        self._k("relayout_kernel", old.entries)(old.S, old.l, old.mrr, new.l, new.mrr, old.lo, old.hi)

    def _reslot(self, old, new) -> None:
        self._k("reslot_kernel", old.theta)(old.S, old.L, new.L, old.offset, old.nroots, old.set_id, old.flag,
                                            new.offset, new.nroots, new.set_id, new.flag, old.count)

    def _k(self, name: str, work: float):
        """The parallel kernel ``name``, or its serial twin for small work or one thread."""
        if numba.get_num_threads() != self.T:  # another caller changed it: keep thread ids < T
            numba.set_num_threads(self.T)
        if self.T > 1 and work >= self.parallel_min_work:
            return getattr(K, name)
        return getattr(K, name + "_serial")

    def _fold(self, cnt) -> None:
        self._k("fold_delta", self.T * self.n)(cnt, self.delta)

    def _flag_stats(self) -> tuple[int, int]:
        c = self.coll
        polluted, clean = self._k("flag_stats", c.theta)(c.S, c.L, c.offset, c.flag, c.count)
        return int(polluted), int(clean)

    def _copy_out(self, arr, nbytes: int):
        return arr.copy()

    def _copy_in(self, arr):
        return arr

    def _check(self) -> None:
        if self.errors[0]:
            raise GpucoreError("internal error: a Numba worker thread id exceeded the thread count")

    def _graph_args(self):
        return (self.in_indptr, self.in_src, self.in_eid, self.in_w, self.lt_cum, self.active,
                self.residual, np.int64(self.n_res))

    # ---- collection --------------------------------------------------------------------------
    def generate(self, theta_new: int, k: float, rnd: int) -> None:
        room = self._make_room(theta_new, k)
        if room is None:
            return
        theta_prev, avg = room
        c = self.coll
        id_base = c.next_id
        while True:
            c = self.coll
            with numba.parallel_chunksize(1):
                self._k("generate_kernel", (theta_new - theta_prev) * avg)(
                    c.S, c.L, c.l, c.mrr, c.offset, c.nroots, c.set_id, c.flag, c.count, c.lo, c.hi, c.status,
                    np.int64(theta_prev), np.int64(theta_new), np.int64(id_base), np.float64(k), self.seed,
                    np.int64(rnd), self.is_lt, *self._graph_args(),
                    self.mark, self.stamps, self.buf, self.delta, self.errors,
                )
            self._check()
            if not (c.status == K.ST_NEED_SPACE).any():
                break
            done = int(c.count.sum())
            have = int(K.total_entries_serial(c.S, c.L, c.offset, c.count))
            per_set = have / max(1, done)
            self._grow_after_overflow(per_set * theta_new)
        self._fold(self.cnt)
        c = self.coll
        c.theta = theta_new
        c.next_id = id_base + (theta_new - theta_prev)
        c.entries = int(K.total_entries_serial(c.S, c.L, c.offset, c.count))
        self.k_last = k

    def trim(self, theta_keep: int) -> None:
        """Drop the sets of global index >= theta_keep (the newest ids): each set is an independent
        sample, so the rest is still a valid collection."""
        c = self.coll
        if theta_keep >= c.theta:
            return
        self._k("trim_kernel", c.entries)(c.S, c.L, c.l, c.mrr, c.offset, c.flag, c.count, c.hi,
                                          np.int64(theta_keep), self.delta)
        self._fold(self.cnt)
        c.theta = int(theta_keep)
        c.entries = int(K.total_entries_serial(c.S, c.L, c.offset, c.count))

    def update(self, k: float, rnd: int, min_keep: int | None = None) -> dict:
        growth, stats = self._begin_update(k, min_keep, self._flag_stats)
        c = self.coll
        if c.theta == 0:
            return stats
        K.update_init_kernel_serial(c.S, c.L, c.offset, c.nroots, c.count, c.status, c.upd)
        work = c.entries * growth
        while True:
            c = self.coll
            with numba.parallel_chunksize(1):
                self._k("update_kernel", work)(
                    c.S, c.L, c.l, c.mrr, c.offset, c.nroots, c.set_id, c.flag, c.count, c.lo, c.hi, c.status,
                    c.upd, np.float64(k), self.seed, np.int64(rnd), self.is_lt, *self._graph_args(),
                    self.mark, self.stamps, self.buf, self.delta, self.errors,
                )
            self._check()
            if not (c.status == K.ST_NEED_SPACE).any():
                break
            self._grow_after_overflow(c.entries * growth * 1.5)
        self._fold(self.cnt)
        c = self.coll
        c.entries = int(K.total_entries_serial(c.S, c.L, c.offset, c.count))
        stats["entries_after"] = c.entries
        self.k_last = k
        return stats

    def clear(self) -> None:
        self._empty()
        self.cnt[:] = 0

    # ---- selection ---------------------------------------------------------------------------
    def select(self, b: int, last_discover: bool = True) -> tuple[np.ndarray, int]:
        c = self.coll
        self.cnt2[:] = self.cnt
        self._k("clear_flags", c.theta)(c.S, c.L, c.flag, c.count)
        argmax = self._k("argmax_ratio", self.n_res)
        discover = self._k("discover_kernel", c.entries)
        seeds = []
        coverage = 0
        for q in range(b):
            u = int(argmax(self.cnt2, self.cost, self.residual, np.int64(self.n_res), self.excluded))
            if u < 0 or (q > 0 and self.cnt2[u] == 0):  # nothing left to cover: the batch ends
                break
            coverage += int(self.cnt2[u])
            seeds.append(u)
            self.excluded[u] = 1
            if q + 1 < b or last_discover:
                with numba.parallel_chunksize(1):
                    discover(c.S, c.L, c.l, c.mrr, c.offset, c.flag, c.count, np.int64(u),
                             self.excluded, self.delta, self.newly, self.errors)
                self._fold(self.cnt2)
        self._check()
        seeds = np.asarray(seeds, dtype=np.int64)
        self.excluded[seeds] = 0
        return seeds, coverage

    def commit(self) -> None:
        self.cnt, self.cnt2 = self.cnt2, self.cnt

    # ---- observation -------------------------------------------------------------------------
    def diffuse(self, seeds: np.ndarray) -> np.ndarray:
        seeds = np.asarray(seeds, dtype=np.int32)
        if self.is_lt:
            count = K.diffuse_lt(seeds, self.active, self.out_indptr, self.out_dst, self.q_out, self.lt_acc,
                                 self.world_seed, self.queue)
        else:
            count = K.diffuse_ic(seeds, self.active, self.out_indptr, self.out_dst, self.out_w,
                                 self.world_seed, self.queue)
        newly = self.queue[:count].astype(np.int64)
        self.residual = np.flatnonzero(self.active == 0).astype(np.int32)
        self.n_res = int(self.residual.size)
        return newly

    def discover_active(self) -> int:
        c = self.coll
        with numba.parallel_chunksize(1):
            self._k("discover_kernel", c.entries)(c.S, c.L, c.l, c.mrr, c.offset, c.flag, c.count, np.int64(-1),
                                                  self.active, self.delta, self.newly, self.errors)
        self._fold(self.cnt)
        self._check()
        return int(self.newly.sum())

    def mark_active(self, nodes) -> None:
        """Test hook: make ``nodes`` active without a diffusion (then call discover_active)."""
        self.active[np.asarray(nodes, dtype=np.int64)] = 1
        self.residual = np.flatnonzero(self.active == 0).astype(np.int32)
        self.n_res = int(self.residual.size)

    # ---- inspection --------------------------------------------------------------------------
    def collection_sets(self):
        return collection_sets(self.coll)

    def coverage(self) -> np.ndarray:
        return self.cnt.copy()

    def active_mask(self) -> np.ndarray:
        return self.active.copy()

    def flags(self) -> dict[int, int]:
        """set_id -> flag (tests)."""
        c = self.coll
        out = {}
        for s in range(c.S):
            for r in range(int(c.count[s])):
                out[int(c.set_id[s * c.L + r])] = int(c.flag[s * c.L + r])
        return out
