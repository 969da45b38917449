"""CUDA backend of AMCSS: MERIT's kernels (``kernels/amcss/amcss_build.cu``, ``amcss_select.cu``,
``amcss_common.cuh``) over device arrays in the layout of ``gpucore.amcss.layout``.

``update=True`` in the driver gives MERIT on the GPU; ``update=False`` regenerates every round (the
GAMCSS stand-in: same kernels, no reuse). The sets, coverage counters, selected seeds and whole
adaptive runs equal the CPU backend's for the same keys (``tests/gpu/test_amcss_cuda.py``).

Design (see ``docs/amcss-gpu.md``)
---------------------------------
- S segments (default: the number of 32-thread Generate blocks the device keeps resident), B
  bitmaps (two bit planes per node: member, root) of which block b of any launch uses the b-th;
  grids are at most B blocks, and blocks loop over segments.
- Generate: one segment per block, 32 x w threads (w = 1 while every segment has work, more warps
  per set when there are fewer new sets than bitmaps); every set keyed by its id as on the CPU.
- Update: segments sorted by their number of polluted sets (descending) and cut into ``beta``
  groups, launched one after the other with 32 x beta threads per block (the paper's load
  balancing; by default beta follows the round's roots per set, ``auto_beta``); a segment whose rewrite would overrun its pending sets stops with a resumable state,
  the host enlarges the segments (relayout within the memory budget) and relaunches: no overwrite.
- Select: b x (argmax partial + final + Discover) on the device, one copy back per Select.
- Diffuse: the world diffusion runs on the host with the CPU backend's own Numba code
  (``kernels_cpu.diffuse_ic`` / ``diffuse_lt``); the newly active ids are copied to the device.
- Memory: every device array is allocated through the backend (out-of-memory names the bytes) and
  counted in the run's budget; peak pool usage is recorded (``device_memory()``).
"""

from __future__ import annotations

import functools

import numpy as np

from gpucore.amcss import kernels_cpu as K
from gpucore.amcss.layout import Collection, CollectionSizing, MemoryBudget, collection_bytes, collection_sets
from gpucore.amcss.primitives import Primitives
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.graph.model import Graph

ST_DONE = 0
ST_NEED_SPACE = 1
ST_PENDING = 2
#: errors[] slots of the kernels (amcss_common.cuh)
ERRORS = {
    0: "an LT reverse choice needed more than 2^24 attempts (every in-neighbour active: inconsistent active set)",
    1: "a build kernel was launched with a block size that is not a multiple of 32 or above 512",
    2: "a segment invariant failed (write position more than l after its source)",
}
MAX_BETA = 16
#: auto beta: one warp per set for every AUTO_BETA_ROOTS roots per set, a power of two up to AUTO_BETA_MAX
AUTO_BETA_ROOTS = 1024
AUTO_BETA_MAX = 8


def auto_beta(k: float) -> int:
    """The Update's beta for a round of k roots per set: the largest power of two <= k / 1024,
    within [1, 8]. A set's frontier is about as wide as its roots are many: small sets leave the
    warps of a wide block idle while the group launches keep only S / beta sets in flight.
    Measured on the H100 at LiveJournal size (results/reference/bench-merit-gpu.md, docs/amcss.md):
    IC eta 25,000 (k 200-1,250) updates in 3.73 s at beta 1 against 8.92 s at the paper's 8; with
    k in the thousands (IC eta 5,000, LT eta 2,500) beta 4 is best and beta 1 within 5-35 %."""
    beta = 1
    while beta * 2 <= AUTO_BETA_MAX and beta * 2 * AUTO_BETA_ROOTS <= k:
        beta *= 2
    return beta
#: Generate uses up to this many warps per block when few segments have new sets
GEN_WARPS_MAX = 8
#: share of the memory budget the bitmaps may take
BITMAP_SHARE = 0.2
REDUCE_THREADS = 256


def _i64(x) -> np.int64:
    return np.int64(int(x))


def _is_device_oom(exc) -> bool:
    try:
        import cupy
    except Exception:
        return False
    return isinstance(exc, cupy.cuda.memory.OutOfMemoryError)


def _device_oom_guard(method):
    """Turn CuPy's out-of-memory inside a primitive into ``OutOfMemoryError`` (one line, sizes)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            if _is_device_oom(exc):
                raise OutOfMemoryError(
                    f"amcss on the GPU ({method.__name__}): {exc}; the run's fixed arrays take "
                    f"{format_bytes(self.budget.fixed)} and the collection "
                    f"{format_bytes(self.coll.nbytes if self.coll is not None else 0)}; lower eta/batch/eps, "
                    f"--segments or --memory-budget"
                ) from None
            raise
        finally:
            self._sample_peak()

    return wrapper


class CudaPrimitives(CollectionSizing, Primitives):
    name = "cuda"

    def __init__(self, graph: Graph, model: str, budget: MemoryBudget, threads: int | None = None,
                 segments: int | None = None, beta: int | None = None, backend=None, bitmaps: int | None = None):
        from gpucore.backend import get_backend

        self.backend = backend if backend is not None else get_backend("cuda")
        self.xp = self.backend.xp
        be = self.backend
        self.graph = graph
        self.model = model
        self.is_lt = model == "LT"
        self.budget = budget
        n, m = int(graph.n), int(graph.m)
        self.n, self.m = n, m
        if m >= 2**31 - 1 or n >= 2**31 - 1:
            raise GpucoreError(f"{graph.path}: {n:,} nodes / {m:,} arcs; the AMCSS CUDA kernels need fewer than 2^31")
        if beta is not None and (isinstance(beta, bool) or int(beta) != beta or not 1 <= int(beta) <= MAX_BETA):
            raise GpucoreError(f"--beta {beta!r}: must be an integer in [1, {MAX_BETA}]")
        #: fixed beta, or None: auto_beta(k) per Update
        self.beta = None if beta is None else int(beta)
        self._peak = 0
        self.coll: Collection | None = None
        self.threads = threads

        # ---- kernels
        self._build = self._load("amcss/amcss_build")
        self._select = self._load("amcss/amcss_select")
        self._kern = {}
        for name in ("amcss_generate", "amcss_update_init", "amcss_update", "amcss_relayout", "amcss_reslot"):
            self._kern[name] = self._build.get_function(name)
        for name in ("amcss_argmax_partial", "amcss_argmax_final", "amcss_discover", "amcss_trim_sets",
                     "amcss_trim_segments", "amcss_segment_stats"):
            self._kern[name] = self._select.get_function(name)
        self.sms, per_sm = self._device_facts()

        # ---- host side (diffusion with the CPU backend's code)
        in_w, out_w = graph.edge_probabilities(model)
        in_indptr = np.ascontiguousarray(graph.in_indptr, dtype=np.int64)
        in_src = np.ascontiguousarray(graph.in_src, dtype=np.int32)
        self.out_indptr = np.ascontiguousarray(graph.out_indptr, dtype=np.int64)
        self.out_dst = np.ascontiguousarray(graph.out_dst, dtype=np.int32)
        in_w = np.ascontiguousarray(in_w, dtype=np.float32)
        if self.is_lt:
            q_in = np.empty(m, dtype=np.int64)
            K.fixed_weights(in_w, q_in)
            lt_cum = np.empty(m, dtype=np.int64)
            K.lt_prefix(in_indptr, q_in, lt_cum)
            del q_in
            self.q_out = np.empty(m, dtype=np.int64)
            K.fixed_weights(np.ascontiguousarray(out_w, dtype=np.float32), self.q_out)
            self.out_w = None
        else:
            self.out_w = np.ascontiguousarray(out_w, dtype=np.float32)
            self.q_out = None
            lt_cum = None
        self.active_h = np.zeros(n, dtype=np.uint8)
        self.lt_acc = np.zeros(n, dtype=np.int64)
        self.queue = np.zeros(n, dtype=np.int32)
        self.cost_h = np.ascontiguousarray(graph.cost, dtype=np.float32)

        # ---- device: graph, per-node state
        graph_bytes = 8 * (n + 1) + 4 * m + (8 * m if self.is_lt else 8 * m)
        budget.reserve_fixed(graph_bytes, "the graph on the device (in-CSR, weights)")
        budget.reserve_fixed(n * (4 + 4 + 1 + 1 + 4 + 4) + (1 << 16), "per-node device state")
        self.d_in_indptr = be.asarray(in_indptr, what="in-CSR offsets")
        self.d_in_src = be.asarray(in_src, what="in-CSR sources")
        if self.is_lt:
            self.d_lt_cum = be.asarray(lt_cum, what="LT prefix weights")
            self.d_in_eid = be.zeros((1,), np.int32, what="dummy")
            self.d_in_w = be.zeros((1,), np.float32, what="dummy")
        else:
            self.d_in_eid = be.asarray(np.ascontiguousarray(graph.in_eid, dtype=np.int32), what="in-CSR edge ids")
            self.d_in_w = be.asarray(in_w, what="IC in-arc probabilities")
            self.d_lt_cum = be.zeros((1,), np.int64, what="dummy")
        del in_indptr, in_src, in_w, lt_cum
        self.cost = be.asarray(self.cost_h, what="seed costs")
        self.cnt = be.zeros((n,), np.int32, what="coverage cnt")
        self.cnt2 = be.zeros((n,), np.int32, what="coverage cnt'")
        self.active = be.zeros((n,), np.uint8, what="active flags")
        self.excluded = be.zeros((n,), np.uint8, what="selection exclusions")
        self.residual = be.asarray(np.arange(n, dtype=np.int32), what="residual ids")
        self.n_res = n
        self.errors = be.zeros((4,), np.int32, what="error counters")
        self.counters = be.zeros((4,), np.uint64, what="counters")  # coverage, newly flagged, arcs gen/upd
        self.seeds_d = be.zeros((64,), np.int64, what="seeds")
        self.part_blocks = int(max(1, min(self.sms * 8, (n + REDUCE_THREADS - 1) // REDUCE_THREADS)))
        self.part_r = be.zeros((self.part_blocks,), np.float64, what="argmax partials")
        self.part_v = be.zeros((self.part_blocks,), np.int32, what="argmax partials")

        # ---- bitmaps and segments
        self.bm_words = 2 * ((n + 31) // 32)
        per_bitmap = 4 * self.bm_words
        want = bitmaps if bitmaps is not None else self.sms * per_sm
        fit = int(BITMAP_SHARE * max(0, budget.budget - budget.fixed) // per_bitmap)
        self.nbm = int(max(1, min(want, fit)))
        budget.reserve_fixed(self.nbm * per_bitmap, f"{self.nbm} visited bitmaps of {format_bytes(per_bitmap)}")
        self.bitmaps = be.zeros((self.nbm * self.bm_words,), np.uint32, what="visited bitmaps")
        self.S = int(segments) if segments else self.nbm
        budget.reserve_fixed(self.S * (4 + 8 + 8), "per-segment scratch")
        self.seg_polluted = be.zeros((self.S,), np.int32, what="per-segment polluted counts")
        self.seg_entries = be.zeros((self.S,), np.int64, what="per-segment entries")
        self.seg_clean = be.zeros((self.S,), np.int64, what="per-segment clean entries")
        self.world_seed = np.uint64(0)
        self.seed = np.uint64(0)
        self.k_last = 1.0
        self.stats = {"relayouts": 0, "update_launches": 0, "generate_launches": 0, "generate_overflows": 0,
                      "update_overflows": 0}
        #: size the segments ahead of Generate/Update from the measured set sizes (tests turn it off
        #: to exercise the overflow -> grow -> resume path)
        self.preplan = True
        self._sample_peak()

    # ---- device facts (an emulator overrides these) ----------------------------------------------
    def _load(self, name):
        from gpucore.kernels import load_module

        return load_module(name)

    def _device_facts(self) -> tuple[int, int]:
        """(SM count, resident 32-thread Generate blocks per SM)."""
        cp = self.xp
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        sms = int(props["multiProcessorCount"])
        per_sm = int(props.get("maxBlocksPerMultiProcessor", 32) or 32)
        try:
            attrs = self._kern["amcss_generate"].attributes
            regs = max(1, int(attrs["num_regs"]))
            smem = int(attrs["shared_size_bytes"])
            regs_per_block = -(-regs * 32 // 256) * 256
            per_sm = min(per_sm, int(props["regsPerMultiprocessor"]) // regs_per_block)
            smem_sm = int(props.get("sharedMemPerMultiprocessor", 0) or 0)
            if smem_sm and smem:
                per_sm = min(per_sm, smem_sm // (smem + 1024))
            per_sm = min(per_sm, int(props["maxThreadsPerMultiProcessor"]) // 32)
        except Exception:
            per_sm = min(per_sm, 16)
        return sms, max(1, per_sm)

    def _sample_peak(self) -> None:
        if self.backend.is_cuda:
            pool = self.xp.get_default_memory_pool()
            self._peak = max(self._peak, int(pool.used_bytes()))

    def device_memory(self) -> dict:
        """Peak and current device memory of this run (CuPy pool), its budget and fixed part."""
        out = {"peak_bytes": int(self._peak), "budget_bytes": int(self.budget.budget),
               "fixed_bytes": int(self.budget.fixed),
               "collection_bytes": int(self.coll.nbytes) if self.coll is not None else 0,
               "segments": int(self.S), "bitmaps": int(self.nbm), "beta": self.beta_setting}
        if self.backend.is_cuda:
            pool = self.xp.get_default_memory_pool()
            out["pool_total_bytes"] = int(pool.total_bytes())
            out["peak_human"] = format_bytes(self._peak)
        return out

    def arcs_probed(self) -> dict:
        """Arcs probed since start() (IC: coins drawn, LT: choices drawn) by Generate and by Update."""
        c = self._host(self.counters[2:4])
        return {"generate": int(c[0]), "update": int(c[1])}

    def _host(self, arr) -> np.ndarray:
        return self.backend.to_host(arr)

    def _copy_out(self, arr, nbytes: int):
        """A snapshot copy: on the device when it fits beside the collection with room to spare,
        else on the host (``snapshot``)."""
        if not self.backend.is_cuda or self.backend.free_memory() > 2 * nbytes + (512 << 20):
            return arr.copy()
        return self._host(arr).copy()

    def _copy_in(self, arr):
        return arr if isinstance(arr, self.xp.ndarray) else self.backend.asarray(arr, what="restored collection")

    def _check(self) -> None:
        errs = self._host(self.errors)
        if errs.any():
            bad = [ERRORS.get(i, f"error {i}") for i in np.flatnonzero(errs)]
            raise GpucoreError("internal error in the AMCSS CUDA kernels: " + "; ".join(bad))

    # ---- realization -------------------------------------------------------------------------
    @_device_oom_guard
    def start(self, world_seed: int, sample_seed: int) -> None:
        xp = self.xp
        self.world_seed = np.uint64(world_seed)
        self.seed = np.uint64(sample_seed)
        self.cnt.fill(0)
        self.cnt2.fill(0)
        self.active.fill(0)
        self.excluded.fill(0)
        self.bitmaps.fill(0)
        self.errors.fill(0)
        self.counters.fill(0)
        self.active_h[:] = 0
        self.lt_acc[:] = 0
        self.residual = xp.arange(self.n, dtype=xp.int32)
        self.n_res = self.n
        if self.coll is None:
            self.coll = self._allocate(self.S, 2, 256, None)
        self._empty()
        self.coll.next_id = 0
        self.k_last = 1.0

    # ---- layout management -------------------------------------------------------------------
    def _allocate(self, S: int, L: int, l: int, old: Collection | None) -> Collection:
        be = self.backend
        current = old.nbytes if old is not None else 0
        self.budget.check_collection(current, collection_bytes(S, l, L), f"an mRR-set collection of {S} x {l:,} entries")
        what = f"mRR-set collection ({S} segments x {l:,} entries, {L:,} slots)"
        coll = Collection(
            S=S, L=L, l=l,
            mrr=be.empty((S * l,), np.int32, what=what),
            offset=be.zeros((S * L,), np.int64, what=what),
            nroots=be.zeros((S * L,), np.int32, what=what),
            set_id=be.zeros((S * L,), np.int64, what=what),
            flag=be.zeros((S * L,), np.uint8, what=what),
            count=be.zeros((S,), np.int64, what=what),
            lo=be.zeros((S,), np.int64, what=what),
            hi=be.zeros((S,), np.int64, what=what),
            status=be.zeros((S,), np.int8, what=what),
            upd=be.zeros((S * 5,), np.int64, what=what),
        )
        self._sample_peak()  # while the old collection (if any) is still held: the relayout peak
        return coll

    def _empty(self) -> None:
        c = self.coll
        c.offset.fill(0)
        c.count.fill(0)
        c.lo.fill(0)
        c.hi.fill(0)
        c.flag.fill(0)
        c.theta = 0
        c.entries = 0

    def _grid(self, items: int, per_block: int, cap: int) -> int:
        return int(max(1, min(cap, -(-int(items) // per_block))))

    def _relayout(self, old, new) -> None:
        self._kern["amcss_relayout"]((self._grid(old.S, 1, self.sms * 16),), (256,),
                                     (np.int32(old.S), _i64(old.l), old.mrr, _i64(new.l), new.mrr, old.lo, old.hi))

    def _reslot(self, old, new) -> None:
        self._kern["amcss_reslot"]((self._grid(old.S, 1, self.sms * 16),), (128,),
                                   (np.int32(old.S), _i64(old.L), _i64(new.L), old.offset, old.nroots, old.set_id,
                                    old.flag, new.offset, new.nroots, new.set_id, new.flag, old.count))

    def _segment_stats(self):
        """(polluted sets, entries, entries of clean sets) per segment, on the device."""
        c = self.coll
        self._kern["amcss_segment_stats"]((self._grid(c.S, 1, self.sms * 32),), (32,),
                                          (np.int32(c.S), _i64(c.L), c.offset, c.flag, c.count, self.seg_polluted,
                                           self.seg_entries, self.seg_clean))
        return self.seg_polluted, self.seg_entries, self.seg_clean

    def _flag_stats(self) -> tuple[int, int]:
        polluted, _entries, clean = self._segment_stats()
        return int(polluted.sum()), int(clean.sum())

    def _total_entries(self) -> int:
        return int(self._segment_stats()[1].sum())

    def _graph_args(self):
        return (np.int32(1 if self.is_lt else 0), self.d_in_indptr, self.d_in_src, self.d_in_eid, self.d_in_w,
                self.d_lt_cum, self.active, self.residual, _i64(self.n_res))

    def _collection_args(self, c: Collection):
        return (c.mrr, c.offset, c.nroots, c.set_id, c.flag, c.count, c.lo, c.hi, c.status)

    def _need_space(self) -> bool:
        return bool((self._host(self.coll.status) == ST_NEED_SPACE).any())

    # ---- collection --------------------------------------------------------------------------
    @_device_oom_guard
    def generate(self, theta_new: int, k: float, rnd: int) -> None:
        room = self._make_room(theta_new, k)
        if room is None:
            return
        theta_prev = room[0]
        c = self.coll
        id_base = c.next_id
        busy = min(self.S, theta_new - theta_prev)  # segments that get new sets
        warps = 1
        while warps * 2 <= GEN_WARPS_MAX and busy * warps * 2 <= self.nbm:
            warps *= 2
        while True:
            c = self.coll
            self._kern["amcss_generate"](
                (int(min(self.S, self.nbm)),), (32 * warps,),
                (np.int32(c.S), _i64(c.L), _i64(c.l), *self._collection_args(c), _i64(theta_prev), _i64(theta_new),
                 _i64(id_base), np.float64(k), np.uint64(self.seed), _i64(rnd), *self._graph_args(), self.bitmaps,
                 _i64(self.bm_words), self.cnt, self.errors, self.counters[2:3]),
            )
            self.stats["generate_launches"] += 1
            self._check()
            if not self._need_space():
                break
            self.stats["generate_overflows"] += 1
            done = int(self._host(c.count).sum())
            have = self._total_entries()
            per_set = have / max(1, done)
            self._grow_after_overflow(per_set * theta_new)
        c = self.coll
        c.theta = theta_new
        c.next_id = id_base + (theta_new - theta_prev)
        c.entries = self._total_entries()
        self.k_last = k

    @_device_oom_guard
    def trim(self, theta_keep: int) -> None:
        c = self.coll
        if theta_keep >= c.theta:
            return
        drop = c.theta - int(theta_keep)
        self._kern["amcss_trim_sets"]((self._grid(drop * 32, REDUCE_THREADS, self.sms * 32),), (REDUCE_THREADS,),
                                      (np.int32(c.S), _i64(c.L), _i64(c.l), c.mrr, c.offset, c.flag, c.count,
                                       _i64(theta_keep), _i64(c.theta), self.cnt))
        self._kern["amcss_trim_segments"]((self._grid(c.S, 128, self.sms * 4),), (128,),
                                          (np.int32(c.S), _i64(c.L), c.offset, c.count, c.hi, _i64(theta_keep)))
        c.theta = int(theta_keep)
        c.entries = self._total_entries()

    @property
    def beta_setting(self):
        """The fixed beta, or "auto" (``auto_beta`` per Update)."""
        return "auto" if self.beta is None else self.beta

    def _update_launches(self, k: float, rnd: int, order, beta: int) -> None:
        """The beta groups of segments (most polluted first), one launch each, 32 x beta threads."""
        c = self.coll
        size = -(-c.S // beta)
        for gidx in range(beta):
            group = order[gidx * size:(gidx + 1) * size]
            nseg = int(group.shape[0])
            if nseg == 0:
                continue
            self._kern["amcss_update"](
                (int(min(nseg, self.nbm)),), (32 * beta,),
                (group, np.int32(nseg), np.int32(c.S), _i64(c.L), _i64(c.l), *self._collection_args(c), c.upd,
                 np.float64(k), np.uint64(self.seed), _i64(rnd), *self._graph_args(), self.bitmaps,
                 _i64(self.bm_words), self.cnt, self.errors, self.counters[3:4]),
            )
            self.stats["update_launches"] += 1

    @_device_oom_guard
    def update(self, k: float, rnd: int, min_keep: int | None = None) -> dict:
        xp = self.xp
        growth, stats = self._begin_update(k, min_keep, self._flag_stats)
        polluted_seg = self.seg_polluted
        beta = auto_beta(k) if self.beta is None else self.beta
        stats["beta"] = beta
        c = self.coll
        if c.theta == 0:
            return stats
        self._kern["amcss_update_init"]((self._grid(c.S, 128, self.sms * 4),), (128,),
                                        (np.int32(c.S), _i64(c.L), c.offset, c.nroots, c.count, c.status, c.upd))
        # load balance: segments by decreasing number of polluted sets (stable: ties by segment id)
        keys = -polluted_seg.astype(xp.int64)
        order = (np.argsort(keys, kind="stable") if xp is np else xp.argsort(keys)).astype(xp.int32)
        while True:
            self._update_launches(k, rnd, order, beta)
            self._check()
            if not self._need_space():
                break
            self.stats["update_overflows"] += 1
            self._grow_after_overflow(self.coll.entries * growth * 1.5)
        c = self.coll
        c.entries = self._total_entries()
        stats["entries_after"] = c.entries
        self.k_last = k
        return stats

    @_device_oom_guard
    def clear(self) -> None:
        self._empty()
        self.cnt.fill(0)

    # ---- selection ---------------------------------------------------------------------------
    @_device_oom_guard
    def select(self, b: int, last_discover: bool = True) -> tuple[np.ndarray, int]:
        xp = self.xp
        c = self.coll
        b = int(b)
        if self.seeds_d.shape[0] < b:
            self.seeds_d = self.backend.zeros((b,), np.int64, what="seeds")
        self.cnt2[...] = self.cnt
        c.flag.fill(0)
        self.seeds_d.fill(-1)
        self.counters[0:2].fill(0)
        grid_a = self._grid(self.n_res, REDUCE_THREADS, self.part_blocks)
        grid_d = self._grid(c.theta * 32, REDUCE_THREADS, self.sms * 32)
        for q in range(b):
            self._kern["amcss_argmax_partial"]((grid_a,), (REDUCE_THREADS,),
                                               (self.cnt2, self.cost, self.residual, _i64(self.n_res), self.excluded,
                                                self.part_r, self.part_v))
            self._kern["amcss_argmax_final"]((1,), (REDUCE_THREADS,),
                                             (self.part_r, self.part_v, np.int32(grid_a), self.cnt2, self.excluded,
                                              self.seeds_d, np.int32(q), self.counters[0:1]))
            if (q + 1 < b or last_discover) and c.theta > 0:
                self._kern["amcss_discover"]((grid_d,), (REDUCE_THREADS,),
                                             (np.int32(c.S), _i64(c.L), _i64(c.l), c.mrr, c.offset, c.flag, c.count,
                                              _i64(c.theta), np.int32(1), self.seeds_d[q:q + 1], self.active,
                                              self.cnt2, self.counters[1:2]))
        seeds = self._host(self.seeds_d[:b]).astype(np.int64)
        coverage = int(self._host(self.counters[0:1])[0])
        cut = np.flatnonzero(seeds < 0)
        if cut.size:
            seeds = seeds[: int(cut[0])]
        if seeds.size:
            self.excluded[xp.asarray(seeds)] = 0
        return seeds, coverage

    def commit(self) -> None:
        self.cnt, self.cnt2 = self.cnt2, self.cnt

    # ---- observation -------------------------------------------------------------------------
    def _set_residual(self) -> None:
        xp = self.xp
        self.residual = xp.flatnonzero(self.active == 0).astype(xp.int32)
        self.n_res = int(self.residual.shape[0])

    @_device_oom_guard
    def diffuse(self, seeds: np.ndarray) -> np.ndarray:
        seeds = np.asarray(seeds, dtype=np.int32)
        if self.is_lt:
            count = K.diffuse_lt(seeds, self.active_h, self.out_indptr, self.out_dst, self.q_out, self.lt_acc,
                                 self.world_seed, self.queue)
        else:
            count = K.diffuse_ic(seeds, self.active_h, self.out_indptr, self.out_dst, self.out_w, self.world_seed,
                                 self.queue)
        newly = self.queue[:count].astype(np.int64)
        if newly.size:
            self.active[self.xp.asarray(newly)] = 1
        self._set_residual()
        return newly

    @_device_oom_guard
    def discover_active(self) -> int:
        c = self.coll
        self.counters[1:2].fill(0)
        if c.theta > 0:
            self._kern["amcss_discover"]((self._grid(c.theta * 32, REDUCE_THREADS, self.sms * 32),),
                                         (REDUCE_THREADS,),
                                         (np.int32(c.S), _i64(c.L), _i64(c.l), c.mrr, c.offset, c.flag, c.count,
                                          _i64(c.theta), np.int32(0), self.seeds_d[0:1], self.active, self.cnt,
                                          self.counters[1:2]))
        return int(self._host(self.counters[1:2])[0])

    def mark_active(self, nodes) -> None:
        """Test hook: make ``nodes`` active without a diffusion (then call discover_active)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        self.active_h[nodes] = 1
        self.active[self.xp.asarray(nodes)] = 1
        self._set_residual()

    # ---- inspection --------------------------------------------------------------------------
    def collection_sets(self):
        return collection_sets(self.coll, to_host=self._host)

    def coverage(self) -> np.ndarray:
        return self._host(self.cnt).copy()

    def active_mask(self) -> np.ndarray:
        return self.active_h.copy()

    def flags(self) -> dict[int, int]:
        """set_id -> flag (tests)."""
        c = self.coll
        count = self._host(c.count)
        set_id = self._host(c.set_id)
        flag = self._host(c.flag)
        out = {}
        for s in range(c.S):
            for r in range(int(count[s])):
                out[int(set_id[s * c.L + r])] = int(flag[s * c.L + r])
        return out
