"""The fused sampler on one CUDA device (CuPy driver of ``kernels/im/im_fused.cu``).

Mappings (FuseIM, Neff et al., ICS '24, sec. 4; see ``docs/fuseim.md`` for why). G batches of B
traversals are in flight together. In the ``level`` mapping every level runs over the frontier entries
of all of them at once, a warp per (batch, vertex) entry with edge-level parallelism inside the warp and
one 32-bit mask word per lane of a lane group (gIM-style warps inside a Ripples-style device-wide
level). In the ``resident`` mapping a block owns a batch for the whole piece and runs its levels
itself (``fz_resident_*``: the same expansion per vertex, the same decide and extract steps with one
block per batch; a level's frontier is a list in shared memory, found in the batch's visited-word ring
when that list overflowed), so
a piece is one launch instead of three per level; ``auto`` (the default) takes it for pieces expected
below ``RESIDENT_BELOW`` elements per traversal, where a level holds a few entries and its launches
cost more than its work. The sets are the same either way. A piece of a call in the level mapping
(``batching.py``):

1. roots: ``fz_keys`` draws every traversal's root; with sorted sources the keys (root << 32 | i)
   are sorted on the device, and batches take consecutive runs of them;
2. traverse: ``fz_decide`` + ``fz_extract`` load the first B traversals into every batch, then each
   level is ``fz_expand_ic``/``_lt`` (list c -> list c ^ 1, marking the slots that discovered a
   vertex), ``fz_decide`` (ended slots = occupied and unmarked; once the tail threshold is reached,
   count their members and reserve their sets' space in the pool) and ``fz_extract`` (write the sets,
   clear their bits, load the next traversals into the free slots); both run X blocks per batch so
   that the members of a large batch are written by many SMs. The host reads the control words every
   ``levels_per_sync`` levels: it grows the pool (copy) or the frontier lists (rebuilt from the masks
   by ``fz_rescan``) when a kernel flagged them full, and stops when every traversal has been
   written and no entry is left;
3. compact: ``im_compact`` (of ``im_sample.cu``) copies the traversals' sets in order of i, so the
   collection holds set j = its T rounds, in order of j, exactly as the unfused sampler's.

The selector is the CUDA backend's own (``gpucore.im.engine.make_engine`` pairs them).
Memory: each batch holds ``12 n W`` bytes (vis, nxt, touched ring) and G is the largest count within
``mask_fraction`` of free device memory, at most ``ceil(128 x SMs / W)`` batches (about 128 traversals
in flight per SM); a graph whose single batch does not fit is refused with the bytes it needs.
"""

from __future__ import annotations

import numpy as np

from gpucore.backend import scan_total
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.cuda import CUDASamplerBase
from gpucore.im.fused.batching import EVICTS, FusedOptions, pieces
from gpucore.im.fused.layout import traversal_graph
from gpucore.im.fused.stats import KERNEL_COUNTERS, Instrumented, SamplerStats

#: traversals in flight per SM that the batch count aims at (memory permitting)
INFLIGHT_PER_SM = 128
#: how a piece's traversals are laid out on the device: "level" (every level one device-wide pass over the
#: frontier lists of all batches), "resident" (a block per batch, running its levels itself in one launch),
#: or "auto" (resident below RESIDENT_BELOW expected elements per traversal, level from there)
MAPPINGS = ("auto", "level", "resident")
#: auto's threshold, in expected elements per traversal (benchmarks/bench_fuseim.py --mappings; docs/fuseim.md)
RESIDENT_BELOW = 64.0
#: blocks per batch of the extraction kernels aim at this many blocks in all, per SM
EXTRACT_BLOCKS_PER_SM = 4
# Eviction of long-running traversals from level-mapping batches to the team pass (IC; ``FzEvict`` and
# ``fz_team_ic`` in im_fused.cu; the ``evict`` option, batching.EVICTS): "auto" evicts in pieces expected below
# EVICT_BELOW x n elements per traversal, "always" in every level-mapping piece, "never" not at all.
#: a running traversal is old (and evicted) once this many levels of its batch have passed since it was loaded
#: (1, 2, 3 and 6 gave 3.8-4.0x, 3.6-3.8x, 3.6x and 2.9-3.1x gim at web-BerkStan size, p = 0.05, and 3.5-3.6x,
#: 3.3-3.4x, 3.1-3.3x and 2.6-2.8x at web-Google size, p = 0.1, on one H200: study-giants-evict-h200.md)
EVICT_AFTER = 1
#: auto's bound on the expected traversal, as a share of the vertices: where traversals are a sizable share
#: of the graph they overlap, and fusing them is what wins
EVICT_BELOW = 1.0 / 64
#: team-pass blocks per SM (fz_team_ic: 256 threads, 32 registers) and the share of free memory their
#: bitmaps and stages may take
TEAM_BLOCKS_PER_SM = 8
TEAM_MEMORY_FRACTION = 0.1
_TEAM_THREADS = 256  # FZ_TEAM_THREADS
#: ctl words and flags (im_fused.cu)
_DISPATCH, _POOL, _FLAGS, _WRITTEN, _TEAM_NEXT, _EVICTED = 2, 3, 4, 5, 6, 7
_LIST_OVERFLOW, _POOL_OVERFLOW = 1, 2
_BATCH_THREADS = 256  # FZ_THREADS


def _i64(x):
    return np.int64(int(x))


def _launch(kernel, grid, block, args) -> None:
    kernel(grid, block, args)


class LevelCapture:
    """Kernel launches captured once and replayed as one unit.

    On a CUDA device: stream capture into a CUDA graph on a stream of its own, replayed on that stream
    (a blocking stream, so the legacy default stream on which everything else runs orders with it both
    ways). Elsewhere (the CPU emulator): the launches are recorded with their arguments and replayed in
    order. Either way a replay uses the arguments of the capture, which is what tests of regrowth need."""

    def __init__(self, backend):
        self.cuda = bool(backend.is_cuda)
        self.stream = backend.xp.cuda.Stream(non_blocking=False) if self.cuda else None

    def capture(self, run):
        """run(launch) issues the launches through ``launch``; returns the replay (a callable)."""
        if self.cuda:
            stream = self.stream
            with stream:
                stream.begin_capture()
                try:
                    run(_launch)
                finally:
                    graph = stream.end_capture()
            return lambda: graph.launch(stream)
        calls = []
        run(lambda kernel, grid, block, args: calls.append((kernel, grid, block, args)))

        def replay() -> None:
            for kernel, grid, block, args in calls:
                kernel(grid, block, args)

        return replay


def batch_bytes(n: int, words: int) -> int:
    """Device bytes of one batch: vis + nxt + touched (n W words each) + slot and control words."""
    return 12 * int(n) * words + 20 * 32 * words + 8 * words + 4


class FusedCUDASampler(Instrumented, CUDASamplerBase):
    """The fused sampler on one CUDA device (module docstring): the ``fused`` sampler of ``gpucore.im.engine``
    for a CUDA backend; ``CUDASamplerBase`` holds its graph (in the traversal layout), device facts,
    collections and compaction."""

    name = "fused-cuda"

    def __init__(self, graph, model: str, rounds: int, seed: int, backend, batch_width: int = 64, order: str = "none",
                 sorted_sources: bool = True, tail: str = "refill", max_batches: int | None = None,
                 levels_per_sync: int = 4, mask_fraction: float = 0.2, expand_threads: int = 256,
                 level_graphs: bool = True, mapping: str = "auto", evict: str = "auto",
                 evict_after: int = EVICT_AFTER):
        self.options = opts = FusedOptions(batch_width, order, sorted_sources, tail)
        if mapping not in MAPPINGS:
            raise GpucoreError(f"mapping {mapping!r}: choose one of {', '.join(MAPPINGS)}")
        self.mapping = mapping
        if evict not in EVICTS:
            raise GpucoreError(f"--evict {evict!r}: choose one of {', '.join(EVICTS)}")
        if int(evict_after) < 1:
            raise GpucoreError(f"evict_after {evict_after}: must be >= 1")
        self.evict, self.evict_after = evict, int(evict_after)
        if not (0.0 < float(mask_fraction) <= 0.9):
            raise GpucoreError(f"mask_fraction {mask_fraction}: must lie in (0, 0.9]")
        if int(levels_per_sync) < 1:
            raise GpucoreError(f"levels_per_sync {levels_per_sync}: must be >= 1")
        if int(expand_threads) not in (32, 64, 128, 256):  # fz_expand_* are built for at most 256
            raise GpucoreError(f"expand_threads {expand_threads}: choose 32, 64, 128 or 256")
        W = opts.words
        if int(graph.n) * W >= 2**31:
            raise GpucoreError(f"{graph.path}: {graph.n:,} vertices x {W} mask words exceed 2^31; lower --batch-width")
        super().__init__(graph, model, rounds, seed, backend)  # uploads _graph_arrays: the traversal layout
        be, n = backend, self.n
        self.levels_per_sync = int(levels_per_sync)
        self.level_graphs = bool(level_graphs)
        self._capture = LevelCapture(backend)
        self.expand_threads = int(expand_threads)
        mod = self._load("im/im_fused")
        self.k_keys = mod.get_function("fz_keys")
        self.k_expand = mod.get_function("fz_expand_lt" if self.lt else "fz_expand_ic")
        self.k_decide = mod.get_function("fz_decide")
        self.k_extract = mod.get_function("fz_extract")
        self.k_rescan = mod.get_function("fz_rescan")
        self.k_resident = mod.get_function("fz_resident_lt" if self.lt else "fz_resident_ic")
        self.k_team = mod.get_function("fz_team_ic")

        per_batch = batch_bytes(n, W)
        free = self._free_memory()
        budget = int(float(mask_fraction) * free)
        if per_batch > budget:
            raise OutOfMemoryError(
                f"fused sampler: one batch of {batch_width} traversals needs {format_bytes(per_batch)} of masks for "
                f"{n:,} vertices, {format_bytes(budget)} ({float(mask_fraction):.0%} of free GPU memory) available; "
                f"lower --batch-width or use --sampler gim"
            )
        want = int(max_batches) if max_batches else -(-INFLIGHT_PER_SM * self.sms // opts.batch_width)
        G = self.batches = int(max(1, min(want, budget // per_batch)))
        B = opts.batch_width
        self.vis = be.zeros((G * n * W,), np.uint32, what="fused visited masks")
        self.nxt = be.zeros((G * n * W,), np.uint32, what="fused frontier masks")
        self.touched = be.empty((G * n * W,), np.int32, what="fused visited-word lists")
        small = {name: be.zeros((size,), dtype, what="fused batch state") for name, size, dtype in (
            ("tbase", G, np.int32), ("tcount", G, np.int32), ("occ", G * W, np.uint32), ("act", G * W, np.uint32),
            ("emode", G, np.int32), ("edense", G, np.int32), ("efin", G * W, np.uint32), ("gcnt", G * B, np.int32),
            ("cursor", G * B, np.int64), ("tnew", G, np.int32), ("done", 2 * G, np.int32),
            ("born", G * B, np.int32), ("blev", G, np.int32), ("eev", G * W, np.uint32))}
        self.__dict__.update(small)
        self.slot_tr = be.empty((G * B,), np.int64, what="fused slots")
        self.slot_key = be.empty((G * B,), np.uint64, what="fused slots")
        self.slot_skey = be.empty((G * B,), np.uint64, what="fused slots")  # IC: mix(seed, SKIP, s)
        self.slot_off = be.empty((G * B,), np.int32, what="fused slots")
        self.ctl = be.zeros((8,), np.uint64, what="fused control words")
        self.counters = be.zeros((len(KERNEL_COUNTERS),), np.uint64, what="fused counters")
        self.list_cap = int(min(G * n * W + G * B, max(1 << 20, 16 * G * B)))
        self.lists = [be.empty((self.list_cap,), np.uint64, what="fused frontier lists") for _ in range(2)]
        self.pool_factor = 1.3  # pool = traversals x mean size x factor + slack; tests shrink it to force growth
        self.team_blocks = 0  # team-pass buffers, made at first use (_team_buffers)
        self._clean = True  # the batch state is all zero (false while a piece runs, and after one failed)
        self._stats = SamplerStats(opts, "cuda", G, G * per_batch, 8, sync=be.synchronize, mapping=mapping)
        self._stats.reorder_seconds = self._reorder_seconds

    def _graph_arrays(self, graph, model: str) -> dict:
        """The in-CSR relabelled by the vertex order (``layout.py``), with both maps of the order."""
        host = super()._graph_arrays(graph, model)
        tg = traversal_graph(host["in_indptr"], host["in_src"], host["in_eid"], host["in_prob"], host["qcum"],
                             host["skip"], self.lt, graph, self.options.order)
        self._reorder_seconds = tg.seconds
        return {"in_indptr": tg.in_indptr, "in_src": tg.in_src, "in_eid": tg.in_eid, "in_prob": tg.in_w,
                "qcum": tg.qcum, "skip": tg.skip, "old_of_new": tg.old_of_new, "new_of_old": tg.new_of_old}

    def warm_up(self) -> None:
        """First uses a solve's phases make and a short call does not (``Engine.warm_up``): the sort of a
        piece's keys beyond one tile (CUB's multi-tile radix sort, other kernels than a small sort's),
        the frontier-list rebuild (``fz_rescan``; on the clean masks it lists nothing) and, under auto,
        a piece in each mapping (the phases' set sizes may take either)."""
        if self.options.sorted_sources:
            self.xp.sort(self.backend.asarray(np.arange(1 << 16, 0, -1, dtype=np.int64), what="warm-up keys"))
        self.ctl[0] = 0  # as _grow_lists before its rescan (a scalar store into a device array)
        self._rescan(0, self.batches)
        if self.mapping == "auto":  # the phases may run either mapping: a throw-away piece in each
            for hint in (0.0, RESIDENT_BELOW * self.rounds):  # resident (no hint), then level
                coll = self.collection(0)
                self._piece(coll, 2, hint)
                coll.release()

    # ---- sampling ---------------------------------------------------------------------------
    def sample_into(self, coll, count: int, mean_hint: float) -> None:
        """Append sets j = coll.j_end .. coll.j_end + count - 1 to ``coll`` (in order of j)."""
        for _, sets in pieces(int(count), self.rounds):
            self._piece(coll, sets, float(mean_hint or coll.mean_size))

    def _piece(self, coll, sets: int, mean_hint: float) -> None:
        be, xp, st, opts = self.backend, self.xp, self._stats, self.options
        T, n, W, B = self.rounds, self.n, opts.words, opts.batch_width
        j_begin = coll.j_end
        total = sets * T
        used = int(min(self.batches, -(-total // B)))
        per_trav = mean_hint / T if mean_hint > 0 else 16.0
        resident = self._resident(per_trav)
        sort = opts.sorts(resident)
        with st.phases.phase("roots"):
            if sort:
                keys = be.empty((total,), np.int64, what="fused dispatch keys")
                grid = int(max(1, min(-(-total // 256), self.sms * 32)))
                self.k_keys((grid,), (256,), (self.seed, _i64(j_begin), _i64(total), _i64(T), _i64(n),
                                              self.d["new_of_old"], keys))
                order = xp.sort(keys)
                del keys
            else:
                order = self.dummy
        trav_start = be.empty((total,), np.int64, what="fused set starts")
        trav_size = be.empty((total,), np.int32, what="fused set sizes")
        trav_size.fill(-1)
        pool_cap = int(max(1024, total * per_trav * self.pool_factor + 4 * used * B))
        self.pool = be.empty((pool_cap,), np.int32, what=f"fused RR-set pool ({pool_cap:,} int32)")
        if not self._clean:  # a piece failed half way (e.g. out of memory): start from empty batches
            for arr in (self.vis, self.nxt, self.tbase, self.tcount, self.occ, self.act, self.gcnt, self.done):
                arr.fill(0)
        self._clean = False
        self.ctl.fill(0)
        self.counters.fill(0)
        with st.phases.phase("traverse"):
            if resident:
                self._traverse_resident(used, j_begin, total, int(sort), order, trav_start, trav_size)
            else:
                self._traverse_levels(used, j_begin, total, int(sort), order, trav_start, trav_size,
                                      self._evict_after(per_trav))
        st.add("resident_pieces", int(resident))
        st.add("sorted_pieces", int(sort))
        if scan_total(trav_size < 0):  # not count_nonzero: a large piece compiled it inside the phase
            raise RuntimeError("fz_extract left traversals unfinished (internal error)")
        self._clean = True
        st.add_kernel_counters(be.to_host(self.counters))
        with st.phases.phase("compact"):
            ends = xp.cumsum(trav_size, dtype=np.int64) + coll.total
            added = int(ends[-1]) - coll.total
            coll.reserve(sets, added)
            first = coll.count
            coll._offsets[first + 1 : first + 1 + sets] = ends[T - 1 :: T]
            self.compact(self.pool, trav_start, trav_size, ends - trav_size, total, coll._nodes)
            coll.count += sets
            coll.total += added
        del self.pool

    def _evict_after(self, per_trav: float) -> int:
        """The level mapping's ``evict_after`` for a piece of ``per_trav`` expected elements per traversal (0: no
        eviction; the team pass is IC only)."""
        if self.lt or self.evict == "never":
            return 0
        if self.evict == "auto" and per_trav >= EVICT_BELOW * self.n:
            return 0
        return self.evict_after

    def _resident(self, per_trav: float) -> bool:
        """Does a piece of ``per_trav`` expected elements per traversal run in the resident mapping?"""
        if self.mapping == "auto":
            return per_trav < RESIDENT_BELOW
        return self.mapping == "resident"

    def _traverse_resident(self, used, j_begin, total, use_order, order, trav_start, trav_size) -> None:
        """The resident mapping: one launch of ``used`` blocks, a block per batch running all its levels
        (``fz_resident_*``); a launch whose blocks found the pool full is followed by a larger pool and a
        relaunch that resumes every batch where it stopped."""
        be, d, opts = self.backend, self.d, self.options
        first = 1
        while True:
            self.k_resident((used,), (_BATCH_THREADS,), (
                np.int32(first), _i64(self.n), np.int32(opts.words), self.seed, _i64(self.rounds), _i64(j_begin),
                _i64(total), np.int32(opts.resident_refill_threshold), np.int32(use_order), order, d["in_indptr"],
                d["in_src"], d["in_eid"], d["in_prob"], d["qcum"], d["skip"], d["old_of_new"], d["new_of_old"], self.vis,
                self.nxt, self.touched, self.tbase, self.tcount, self.occ, self.act, self.emode, self.edense,
                self.efin, self.gcnt, self.cursor, self.tnew, self.done, self.slot_tr, self.slot_key,
                self.slot_skey, self.slot_off, trav_start, trav_size, self.ctl, np.uint64(self.pool.shape[0]),
                self.pool, self.counters,
            ))
            first = 0
            ctl = be.to_host(self.ctl)
            flags, done = int(ctl[_FLAGS]), int(ctl[_WRITTEN])
            if flags == _POOL_OVERFLOW:
                self.ctl[_FLAGS] = 0
                self._grow_pool(int(ctl[_POOL]))
                self._stats.add("regrowths", 1)
                continue
            if flags or done != total:
                raise RuntimeError(f"fused sampler (resident): {done} of {total} traversals written, flags {flags} "
                                   f"(internal error)")
            return

    def _traverse_levels(self, used, j_begin, total, use_order, order, trav_start, trav_size,
                         evict_after: int = 0) -> None:
        """The level mapping: every level one device-wide pass over all batches' frontier lists (three
        launches, replayed as CUDA graphs in blocks of ``levels_per_sync``); with ``evict_after`` > 0 the
        batches evict long-running traversals (``FzEvict``), which the team pass then runs (``_team``)."""
        be, st = self.backend, self._stats
        X = int(max(1, -(-EXTRACT_BLOCKS_PER_SM * self.sms // used)))
        evicted = be.empty((total,), np.int64, what="evicted traversals") if evict_after else self.dummy
        step = self._level_launcher(used, X, j_begin, total, use_order, order, trav_start, trav_size,
                                    evict_after, evicted)
        step(None, 0)  # load every batch
        c, last = 0, None
        block = self._block_runner(step)
        while True:
            c = block(c)
            ctl = be.to_host(self.ctl)
            flags, done = int(ctl[_FLAGS]), int(ctl[_WRITTEN]) + int(ctl[_EVICTED])
            if not flags:
                if int(ctl[c]) == 0 and done == total:
                    break
                state = (done, int(ctl[c]), int(ctl[_DISPATCH]))
                if int(ctl[c]) == 0 and state == last:
                    raise RuntimeError("fused sampler made no progress (internal error)")
                last = state
                continue
            last = None
            self.ctl[_FLAGS] = 0  # before growing: a rescan that overflows again sets it again
            if flags & _POOL_OVERFLOW:
                self._grow_pool(int(ctl[_POOL]))
            if flags & _LIST_OVERFLOW:
                self._grow_lists(c, used)
            st.add("regrowths", 1)
            block = self._block_runner(step)  # the captured launches point at the old pool or lists
        if int(ctl[_EVICTED]):
            self._team(evicted[: int(ctl[_EVICTED])], j_begin, trav_start, trav_size)

    def _team(self, ids, j_begin, trav_start, trav_size) -> None:
        """The team pass: traversals ``ids`` (a device int64 array of the piece's traversal ids), each run again
        from its root by a block of its own (``fz_team_ic``), written to the pool with their starts and sizes.
        A launch whose blocks found the pool full is followed by a larger pool and a launch over the traversals
        not written yet."""
        be, d = self.backend, self.d
        while True:
            count = int(ids.shape[0])
            blocks = self._team_buffers(count)
            self.ctl[_TEAM_NEXT] = 0
            self.k_team((blocks,), (_TEAM_THREADS,), (
                d["in_indptr"], d["in_src"], d["in_eid"], d["in_prob"], d["skip"], d["old_of_new"], d["new_of_old"],
                _i64(self.n), self.seed, _i64(self.rounds), _i64(j_begin), ids, _i64(count), self.team_bitmaps,
                _i64(self.team_words), self.team_stages, self.pool, np.uint64(self.pool.shape[0]), trav_start,
                trav_size, self.ctl, self.counters,
            ))
            ctl = be.to_host(self.ctl)
            if not int(ctl[_FLAGS]) & _POOL_OVERFLOW:
                return
            self.ctl[_FLAGS] = 0
            self._grow_pool(int(ctl[_POOL]))
            self._stats.add("regrowths", 1)
            ids = ids[trav_size[ids] < 0]

    def _team_buffers(self, want: int) -> int:
        """Blocks of the team pass for ``want`` traversals: each has a bitmap of the vertices (kept clean between
        traversals) and a stage of n entries; made at first use, grown up to TEAM_BLOCKS_PER_SM a SM within
        TEAM_MEMORY_FRACTION of free memory (at least one block)."""
        be, n = self.backend, self.n
        self.team_words = (n + 31) // 32
        wanted = int(max(1, min(want, TEAM_BLOCKS_PER_SM * self.sms)))
        if wanted > self.team_blocks:
            per = 4 * (self.team_words + n)
            self.team_bitmaps = self.team_stages = None
            fit = int(TEAM_MEMORY_FRACTION * self._free_memory()) // per
            blocks = int(max(1, min(wanted, fit)))
            self.team_bitmaps = be.zeros((blocks * self.team_words,), np.uint32, what="team-pass bitmaps")
            self.team_stages = be.empty((blocks * n,), np.int32, what="team-pass stages")
            self.team_blocks = blocks
        return int(min(wanted, self.team_blocks))

    def _level_launcher(self, used, X, j_begin, total, use_order, order, trav_start, trav_size, evict_after=0,
                        evicted=None):
        """step(c, idx): expand list c into list idx (none for c = None), then decide and extract."""
        opts, d, n, W = self.options, self.d, self.n, self.options.words
        lt = np.int32(1 if self.lt else 0)
        evict = (np.int32(evict_after), self.born, self.blev, self.eev, self.dummy if evicted is None else evicted)
        expand_blocks = self.sms * max(1, 2048 // self.expand_threads)

        def step(c, idx: int, launch=None) -> None:
            launch = launch or _launch
            if c is not None:
                launch(self.k_expand, (expand_blocks,), (self.expand_threads,), (
                    d["in_indptr"], d["in_src"], d["in_eid"], d["in_prob"], d["qcum"], d["skip"], d["old_of_new"],
                    _i64(n), np.int32(W), self.seed, self.slot_key, self.slot_skey, self.vis, self.nxt, self.act,
                    self.touched, self.tbase, self.tcount, self.lists[c], self.lists[idx], np.uint64(self.list_cap),
                    self.ctl, np.int32(c), self.counters,
                ))
            launch(self.k_decide, (X, used), (_BATCH_THREADS,), (
                _i64(n), np.int32(W), _i64(total), np.int32(opts.refill_threshold), d["in_indptr"], self.vis,
                self.touched, self.tbase, self.tcount, self.occ, self.act, self.emode, self.edense, self.efin,
                self.gcnt, self.cursor, self.tnew, self.done, self.slot_tr, trav_start, trav_size, self.ctl,
                np.int32(idx), np.uint64(self.pool.shape[0]), *evict, self.counters,
            ))
            launch(self.k_extract, (X, used), (_BATCH_THREADS,), (
                lt, _i64(n), np.int32(W), self.seed, _i64(self.rounds), _i64(j_begin), _i64(total),
                np.int32(use_order), order, d["in_indptr"], d["old_of_new"], d["new_of_old"], self.vis, self.nxt,
                self.touched, self.tbase, self.tcount, self.occ, self.act, self.emode, self.edense, self.efin,
                self.gcnt, self.cursor, self.tnew, self.done, d["skip"], self.slot_tr, self.slot_key, self.slot_skey,
                self.slot_off, self.lists[idx], np.uint64(self.list_cap), self.ctl, np.int32(idx), self.pool, *evict,
                self.counters,
            ))

        return step

    def _block_runner(self, step):
        """block(c) -> list: ``levels_per_sync`` levels from frontier list c, ending on the list it returns.

        A level is three launches of kernels with about 30 arguments each, and CuPy spends tens of
        microseconds of Python per launch: where sets are tiny a level took 84 us at weighted cascade on
        an H100, 59-70 us with the graphs (results/reference/fuseim). With ``level_graphs`` the launches
        of a block are captured once per starting list (``LevelCapture``) and replayed as one unit. The
        first block of a piece, and the first after a regrowth, runs plainly (a piece that ends within one
        block never pays for a capture); the captured arguments are those of their capture, so a regrowth
        (new pool or lists) takes a new runner."""
        levels = self.levels_per_sync

        def run(c: int, launch=None) -> int:
            for _ in range(levels):
                step(c, c ^ 1, launch)
                c ^= 1
            return c

        if not self.level_graphs:
            return run
        captured: dict[int, object] = {}
        started = [False]

        def block(c: int) -> int:
            if not started[0]:
                started[0] = True
                return run(c)
            if c not in captured:
                captured[c] = self._capture.capture(lambda launch: run(c, launch))
                self._stats.add("level_captures", 1)
            captured[c]()
            self._stats.add("level_replays", 1)
            return c ^ (levels & 1)

        return block

    def _grow_pool(self, reserved: int) -> None:
        """Double the pool, at least past ``reserved`` (the reservation counter: a reservation that did not fit
        still moved it, so it may lie past the pool, and the space between the last set written and the pool's
        end stays a hole that the sets' starts and sizes skip); the sets written so far are copied."""
        old = int(self.pool.shape[0])
        cap = 2 * max(old, int(reserved))
        new = self.backend.empty((cap,), np.int32, what=f"fused RR-set pool ({cap:,} int32)")
        tail = min(old, int(reserved))
        new[:tail] = self.pool[:tail]
        self.pool = new

    def _grow_lists(self, c: int, used: int) -> None:
        """Double the frontier lists and rebuild list c from the masks (entries were dropped)."""
        be = self.backend
        self.list_cap = 2 * self.list_cap
        self.lists = [None, None]
        self.lists = [be.empty((self.list_cap,), np.uint64, what="fused frontier lists") for _ in range(2)]
        self.ctl[0] = 0
        self.ctl[1] = 0
        self._rescan(c, used)

    def _rescan(self, c: int, used: int) -> None:
        """fz_rescan: list c gets an entry per (batch < used, vertex) whose nxt mask is not empty."""
        self.k_rescan((self.sms * 8,), (256,), (self.nxt, _i64(used), _i64(self.n), np.int32(self.options.words),
                                               self.lists[c], np.uint64(self.list_cap), self.ctl, np.int32(c)))
