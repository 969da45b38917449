"""The CUDA backend of IM: gIM's sampler (``kernels/im/im_sample.cu``) and the greedy (``kernels/im/im_greedy.cu``).

``CUDASamplerBase`` is what every CUDA sampler shares (the graph on the device, device facts,
collections, ``im_compact``); the fused sampler (``gpucore.im.fused.cuda``) builds on it too.

``CUDASampler`` (the ``gim`` sampler of ``gpucore.im.engine``) samples a batch of sets
j_begin .. j_begin + count - 1:

1. tier 1: persistent warps (gIM's one-warp workers, ``warps_per_block`` to a block; SMs x
   max-resident-blocks x warps_per_block of them, gIM Eq. 5 counted in warps), each with its own
   bitmap (ceil(n/32) words), staging buffer and overflow reservoir; finished sets go to a pool
   (one atomicAdd each) with (start, size) recorded at index j - j_begin;
2. tier 2: the sets too large for a tier-1 staging buffer (their j listed in ``deferred``) run
   again with a staging buffer of T * n on as many blocks as the memory budget allows;
3. if the pool overflowed (its capacity is estimated from the mean set size seen so far), the
   batch is discarded and redone with twice the capacity: keys make the redo identical;
4. im_compact copies the sets in order of j into the collection (offsets from a prefix sum of the
   sizes), so the GPU collection equals the CPU one set by set.

``CUDASelector``: counts by atomics, an inverted index element -> sets (exclusive scan of the
counts, then a scatter), then k * T steps of ``im_argmax`` + ``im_take`` launched back to back:
the chosen element stays on the device and the host reads the k * T keys once at the end.
"""

from __future__ import annotations

import numpy as np

from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.kernels import load_module

#: shared-memory queue entries per block (gIM's |Q_shr|, re-derived for Hopper's shared memory)
QUEUE_SIZE = 1024
#: warps per block of im_sample (each warp an independent worker; more warps resident per SM)
WARPS_PER_BLOCK = 2
#: tier-1 staging entries per warp: at least this many, more when memory allows
MIN_STAGE = 4096
MAX_STAGE = 1 << 20
#: collections this small run the whole greedy in one launch of one block (im_greedy_block): a universe
#: (n x rounds) and a total of elements at most these; above, a step is two grid-wide launches
BLOCK_GREEDY_UNIVERSE = 1 << 17
BLOCK_GREEDY_ELEMENTS = 1 << 21
BLOCK_GREEDY_THREADS = 1024


def _i64(x):
    return np.int64(int(x))


def _host_int(backend, arr) -> int:
    """The first element of a (device) array as a Python int (a host sync on the GPU)."""
    return int(backend.to_host(arr).reshape(-1)[0])


class _Device:
    """Device facts and kernel loading shared by the sampler and the selector (the emulator overrides them)."""

    def _load(self, name, defines=()):
        return load_module(name, tuple(defines))

    def _device_facts(self) -> tuple[int, int]:
        """(SM count, most resident blocks per SM)."""
        cp = self.xp
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        return int(props["multiProcessorCount"]), int(props.get("maxBlocksPerMultiProcessor", 32) or 32)

    def _free_memory(self) -> int:
        return int(self.backend.free_memory())


def sample_defines(warps_per_block: int = WARPS_PER_BLOCK) -> tuple[tuple[str, str], ...]:
    """The -D pairs ``im_sample.cu`` is built with (its queue size and warps per block)."""
    return (("IM_QS", str(QUEUE_SIZE)), ("IM_WARPS", str(int(warps_per_block))))


class CUDASamplerBase(_Device):
    """What every CUDA sampler holds: the model's in-CSR on the device, device facts, empty collections,
    and compaction of sets from a pool into a collection in order (``im_compact`` of ``im_sample.cu``).

    ``self.d``: device arrays ``in_indptr``, ``in_src``, ``in_eid`` (original arc ids), ``in_prob`` (the
    model's weights), ``qcum`` (LT prefix sums, a dummy for IC), ``skip`` (IC: the per-node table of
    ``gpucore.im.skipping``, a dummy for LT), and whatever ``_graph_arrays`` adds
    (a subclass that traverses another layout overrides it, so only that layout is uploaded).
    ``self.sample_module``: ``im_sample.cu`` built with ``defines`` (``sample_defines``).
    """

    def __init__(self, graph, model: str, rounds: int, seed: int, backend,
                 defines: tuple[tuple[str, str], ...] = sample_defines()):
        from gpucore.im.rrsets import RRCollection

        self.xp = backend.xp
        self._collection_cls = RRCollection
        self.backend = backend
        self.graph = graph
        self.model = model
        self.rounds = int(rounds)
        self.n = int(graph.n)
        self.seed = np.uint64(int(seed) & ((1 << 64) - 1))
        self.lt = model == "LT"
        if graph.m >= 2**31:
            raise GpucoreError(f"{graph.path}: {graph.m} arcs; the CUDA IM samplers need fewer than 2^31")
        self.d = {name: backend.asarray(arr, what=f"graph array {name}")
                  for name, arr in self._graph_arrays(graph, model).items()}
        self.sample_module = self._load("im/im_sample", defines)
        self.k_compact = self.sample_module.get_function("im_compact")
        self.sms, self.blocks_per_sm = self._device_facts()
        self.dummy = backend.zeros((1,), np.int64, what="dummy")

    def _graph_arrays(self, graph, model: str) -> dict:
        """Host arrays to upload: the in-CSR with the model's weights, the LT prefix sums, the IC skip table."""
        from gpucore.im.cpu import lt_prefix
        from gpucore.im.skipping import ic_skip_table

        in_w, _ = graph.edge_probabilities(model)
        host = {
            "in_indptr": np.ascontiguousarray(graph.in_indptr, dtype=np.int64),
            "in_src": np.ascontiguousarray(graph.in_src, dtype=np.int32),
            "in_eid": np.ascontiguousarray(graph.in_eid, dtype=np.int32),
            "in_prob": np.ascontiguousarray(in_w, dtype=np.float32),
        }
        host["qcum"] = lt_prefix(host["in_indptr"], host["in_prob"]) if self.lt else np.zeros(1, dtype=np.int64)
        host["skip"] = ic_skip_table(host["in_indptr"], host["in_prob"], model)
        return host

    def collection(self, j_begin: int):
        return self._collection_cls(self.xp, self.backend, j_begin, self.n, self.rounds)

    def synchronize(self) -> None:
        self.backend.synchronize()

    def reserve_memory(self, nbytes: int) -> None:
        """Let CuPy's memory pool take ``nbytes`` of device memory now (one block, returned to the pool at
        once): it carves later arrays out of it instead of calling the driver inside the timed phases.
        Not through ``backend.empty``, so the block never counts as used in ``peak_device_memory``."""
        if nbytes > 0 and self.backend.is_cuda:
            block = self.xp.empty((int(nbytes),), dtype=np.uint8)
            del block

    def compact(self, pool, starts, sizes, dst, count: int, nodes) -> None:
        """im_compact: item i of ``count`` (``sizes[i]`` elements at ``pool[starts[i]]``) to ``nodes[dst[i]]``."""
        threads = 256
        grid = int(min((count * 32 + threads - 1) // threads, self.sms * 64))
        self.k_compact((max(1, grid),), (threads,), (pool, starts, sizes, dst, _i64(count), nodes))


class CUDASampler(CUDASamplerBase):
    """gIM's keyed RR-set sampler on one CUDA device (CuPy + RawModule kernels)."""

    name = "gim-cuda"

    def __init__(self, graph, model: str, rounds: int, seed: int, backend, warps: int | None = None,
                 stage_cap: int | None = None, warps_per_block: int = WARPS_PER_BLOCK):
        self.warps_per_block = int(warps_per_block)
        if not 1 <= self.warps_per_block <= 32:
            raise GpucoreError(f"warps_per_block {warps_per_block}: must be in [1, 32]")
        super().__init__(graph, model, rounds, seed, backend, sample_defines(self.warps_per_block))
        self.k_sample = self.sample_module.get_function("im_sample")

        self.words = (self.n + 31) // 32
        free = self._free_memory()
        want = warps or self.sms * self.blocks_per_sm * self.warps_per_block  # gIM Eq. 5, in warps
        # bitmaps + staging + reservoir of all workers within ~15% of free memory
        max_set = self.n * self.rounds
        if stage_cap is None:
            stage_cap = min(max_set, MAX_STAGE, max(MIN_STAGE, int(0.10 * free / max(1, want) / 8)))
        self.stage_cap = int(max(1, min(stage_cap, max_set)))
        self.res_cap = ((min(self.stage_cap, self.n) + 31) // 32) * 32 + 32
        per_warp = 4 * self.words + 4 * self.stage_cap + 4 * self.res_cap
        fit = int(0.15 * free // per_warp)
        self.warps = int(max(1, min(want, fit)))
        self.bitmaps = backend.zeros((self.warps * self.words,), np.uint32, what="visited bitmaps")
        self.stages = backend.empty((self.warps * self.stage_cap,), np.int32, what="RR staging buffers")
        self.reservoirs = backend.empty((self.warps * self.res_cap,), np.int32, what="queue reservoirs")
        # next set, pool tail, deferred sets, sets finished, pool overflow: read back once per batch
        self.counters = backend.zeros((5,), np.uint64, what="sampler counters")
        self.pool_factor = 1.3  # pool = count * mean * factor + slack (tests shrink both to force retries)
        self.pool_slack = 32 * self.warps + 4096
        self.retries = 0

    # ---- sampling ---------------------------------------------------------------------------
    def _launch_sample(self, warps, j_begin, count, use_list, j_list, stages, stage_cap, reservoirs, res_cap, pool,
                       set_start, set_size, deferred, pool_tail: int = 0) -> np.ndarray:
        """One im_sample launch on ``warps`` workers, appending to ``pool`` at ``pool_tail``; returns the
        counters (one device-to-host copy)."""
        start = np.zeros(5, dtype=np.uint64)
        start[1] = pool_tail
        self.counters = self.backend.asarray(start, what="sampler counters")  # one copy, no fill kernel to load
        grid = (int(warps) + self.warps_per_block - 1) // self.warps_per_block
        self.k_sample(
            (grid,),
            (32 * self.warps_per_block,),
            (
                self.d["in_indptr"], self.d["in_src"], self.d["in_eid"], self.d["in_prob"], self.d["qcum"],
                self.d["skip"], np.int32(1 if self.lt else 0), _i64(self.n), self.seed, _i64(self.rounds),
                _i64(j_begin), _i64(count), np.int32(use_list), j_list,
                _i64(warps), self.bitmaps, _i64(self.words),
                stages, _i64(stage_cap), reservoirs, _i64(res_cap),
                pool, _i64(pool.shape[0]), set_start, set_size, deferred, self.counters,
            ),
        )
        return self.backend.to_host(self.counters)

    def sample_into(self, coll, count: int, mean_hint: float) -> None:
        """Append sets j = coll.j_end .. coll.j_end + count - 1 to ``coll`` (in order of j)."""
        xp, be = self.xp, self.backend
        count = int(count)
        if count <= 0:
            return
        j_begin = coll.j_end
        mean = float(mean_hint) if mean_hint and mean_hint > 0 else 16.0
        pool_cap = max(64, int(count * mean * self.pool_factor) + int(self.pool_slack))
        set_start = be.empty((count,), np.int64, what="RR-set starts")
        set_size = be.empty((count,), np.int32, what="RR-set sizes")
        deferred = be.empty((count,), np.int64, what="deferred RR sets")
        while True:
            pool = be.empty((pool_cap,), np.int32, what=f"RR-set pool ({pool_cap:,} int32)")
            c = self._launch_sample(self.warps, j_begin, count, 0, self.dummy, self.stages, self.stage_cap,
                                    self.reservoirs, self.res_cap, pool, set_start, set_size, deferred)
            total, finished, overflow = int(c[1]), int(c[3]), bool(c[4])
            if not overflow and c[2]:
                total, done2, overflow = self._tier2(j_begin, int(c[2]), deferred, pool, total, set_start, set_size)
                finished += done2
            if not overflow:
                break
            del pool
            self.retries += 1
            pool_cap *= 2  # estimates were short: redo the batch with a larger pool (same keys, same sets)
        if finished != count:
            raise RuntimeError(f"im_sample finished {finished} of {count} RR sets (internal error)")
        coll.reserve(count, total)
        first = coll.count
        coll._offsets[first + 1 : first + 1 + count] = xp.cumsum(set_size, dtype=xp.int64) + coll.total
        self.compact(pool, set_start, set_size, coll._offsets[first : first + count], count, coll._nodes)
        coll.count += count
        coll.total += total
        del pool

    def _tier2(self, j_begin, n_def, deferred, pool, pool_tail, set_start, set_size) -> tuple[int, int, bool]:
        """Re-run the deferred sets with staging for a whole set: (pool tail, sets finished, overflow)."""
        be = self.backend
        stage_cap = self.n * self.rounds
        res_cap = ((self.n + 31) // 32) * 32 + 32
        per_warp = 4 * (stage_cap + res_cap)
        fit = int(0.25 * self._free_memory() // per_warp)
        warps = max(1, min(n_def, self.warps, fit))
        if fit < 1:
            raise OutOfMemoryError(
                f"an RR set larger than {self.stage_cap:,} elements needs a {format_bytes(per_warp)} buffer; "
                f"only {format_bytes(self._free_memory())} is free on the GPU"
            )
        stages = be.empty((warps * stage_cap,), np.int32, what="tier-2 RR staging buffers")
        reservoirs = be.empty((warps * res_cap,), np.int32, what="tier-2 queue reservoirs")
        j_list = deferred[:n_def].copy()
        again = be.empty((n_def,), np.int64, what="deferred RR sets")
        c = self._launch_sample(warps, j_begin, n_def, 1, j_list, stages, stage_cap, reservoirs, res_cap, pool,
                                set_start, set_size, again, pool_tail)
        if not c[4] and c[2]:
            raise RuntimeError("im_sample deferred an RR set in tier 2 (internal error)")
        return int(c[1]), int(c[3]), bool(c[4])


class CUDASelection:
    """One greedy max-cover in progress on a device collection (the ``Selection`` of ``gpucore.im.engine``)."""

    def __init__(self, selector, coll, k: int):
        be = selector.backend
        self.xp, self.backend = selector.xp, be
        self.k_argmax, self.k_take = selector.k_argmax, selector.k_take
        self.sms = selector.sms
        self.n, self.rounds, self.k = selector.n, selector.rounds, int(k)
        universe = self.n * self.rounds
        num, total = int(coll.count), int(coll.total)
        self.offsets, self.nodes = coll.offsets, coll.nodes
        threads = 256
        self.counts = selector.counts(coll)
        self.inv_ptr = be.zeros((universe + 1,), np.int64, what="inverted index pointers")
        self.inv_ptr[1:] = self.xp.cumsum(self.counts, dtype=np.int64)
        fill = self.inv_ptr[:-1].astype(np.uint64)  # each list's next free slot (atomicAdd on uint64)
        self.inv_sets = be.empty((max(total, 1),), np.int32, what=f"inverted index ({total:,} int32)")
        if num:
            grid = int(max(1, min((num * 32 + threads - 1) // threads, self.sms * 32)))
            selector.k_index((grid,), (threads,), (self.offsets, self.nodes, _i64(num), fill, self.inv_sets))
        del fill
        self.covered_flags = be.zeros((max(num, 1),), np.uint8, what="covered flags")
        self.taken = be.zeros((universe,), np.uint8, what="chosen flags")
        self.per_round = be.zeros((self.rounds,), np.int32, what="seeds per round")
        self.newly = be.zeros((1,), np.uint64, what="covered counter")
        self.grid_arg = int(max(1, min((self.n + threads - 1) // threads, self.sms * 8)))
        self.grid_take = int(self.sms * 8)
        self.covered = 0

    def launch_step(self, keys, step: int) -> None:
        """im_argmax into keys[step] (keys[step] must be 0), then im_take of that key: no host sync."""
        self.launch_argmax(self.counts, keys, step)
        self.launch_take(keys, step)

    def launch_argmax(self, counts, keys, step: int) -> None:
        self.k_argmax((self.grid_arg,), (256,), (counts, self.taken, self.per_round, np.int32(self.k), _i64(self.n),
                                                _i64(self.rounds), keys, _i64(step)))

    def launch_take(self, keys, step: int) -> None:
        self.k_take((self.grid_take,), (256,), (self.inv_ptr, self.inv_sets, self.offsets, self.nodes, keys,
                                                _i64(step), _i64(self.n), self.covered_flags, self.counts,
                                                self.taken, self.per_round, self.newly))

    def argmax(self, counts):
        keys = self.backend.zeros((1,), np.uint64, what="argmax key")
        self.launch_argmax(self.xp.asarray(counts, dtype=np.int32), keys, 0)  # the kernel reads int32
        element, gain = decode_keys(self.backend.to_host(keys))
        return int(element[0]), int(gain[0])

    def cover(self, element: int) -> int:
        before = _host_int(self.backend, self.newly)
        key = np.array([0xFFFFFFFF - int(element)], dtype=np.uint64)  # count 0: only the element matters
        self.launch_take(self.backend.asarray(key, what="chosen key"), 0)
        newly = _host_int(self.backend, self.newly) - before
        self.covered += newly
        return newly


def decode_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(elements, counts) of packed keys count << 32 | (2^32 - 1 - e); a zero key means none was allowed."""
    keys = np.asarray(keys, dtype=np.uint64)
    if np.any(keys == 0):
        raise RuntimeError("greedy: no element left to choose (internal error)")
    elements = (np.uint64(0xFFFFFFFF) - (keys & np.uint64(0xFFFFFFFF))).astype(np.int64)
    return elements, (keys >> np.uint64(32)).astype(np.int64)


class CUDASelector(_Device):
    """Greedy max-cover on one CUDA device: inverted index, device-resident steps, one read-back."""

    name = "greedy-cuda"

    def __init__(self, n: int, rounds: int, backend):
        self.backend, self.xp = backend, backend.xp
        self.n, self.rounds = int(n), int(rounds)
        gmod = self._load("im/im_greedy")
        self.k_count = gmod.get_function("im_count")
        self.k_index = gmod.get_function("im_index")
        self.k_argmax = gmod.get_function("im_argmax")
        self.k_take = gmod.get_function("im_take")
        self.k_hits = gmod.get_function("im_hits")
        self.k_block = gmod.get_function("im_greedy_block")
        self.sms, _per_sm = self._device_facts()

    def start(self, coll, k: int) -> CUDASelection:
        return CUDASelection(self, coll, k)

    def coverage_bound(self, coll, k: int) -> int:
        """Sum over rounds of the k largest element counts (``gpucore.im.rrsets.top_k_sum``)."""
        from gpucore.im.rrsets import top_k_sum

        counts = self.counts(coll)
        return top_k_sum(self.xp, counts, self.n, self.rounds, int(k))

    def counts(self, coll):
        """Device int32 array: the sets of ``coll`` holding each element (im_count)."""
        counts = self.backend.zeros((self.n * self.rounds,), np.int32, what="greedy counts")
        total = int(coll.total)
        if total:
            grid = int(max(1, min((total + 255) // 256, self.sms * 32)))
            self.k_count((grid,), (256,), (coll.nodes, _i64(total), counts))
        return counts

    def coverage(self, coll, elements) -> int:
        """Sets of ``coll`` holding at least one of ``elements``."""
        be = self.backend
        mark = np.zeros(self.n * self.rounds, dtype=np.uint8)
        mark[np.asarray(elements, dtype=np.int64)] = 1
        hits = be.zeros((1,), np.uint64, what="hit counter")
        num = int(coll.count)
        if num:
            grid = int(max(1, min((num * 32 + 255) // 256, self.sms * 32)))
            self.k_hits((grid,), (256,), (coll.offsets, coll.nodes, _i64(num), be.asarray(mark, what="seed marks"),
                                          hits))
        return _host_int(be, hits)

    def warm_up(self, coll, k: int) -> None:
        """Both ways of ``greedy`` once (``Engine.warm_up``): a small warm-up collection alone would take
        only the one-block way, and a large run's phases the other."""
        self.greedy(coll, k, block=True)
        self.greedy(coll, k, block=False)

    def greedy(self, coll, k: int, block: bool | None = None):
        """k seeds per round: every step in one block (``im_greedy_block``) when the universe and the
        collection are at most ``BLOCK_GREEDY_UNIVERSE`` / ``BLOCK_GREEDY_ELEMENTS`` (or ``block`` says
        so), else two launches a step; the same choices either way (``tests/test_im_emulated.py``)."""
        sel = self.start(coll, k)
        steps = int(k) * self.rounds
        keys = self.backend.zeros((max(steps, 1),), np.uint64, what="greedy keys")
        if block is None:
            block = self.n * self.rounds <= BLOCK_GREEDY_UNIVERSE and int(coll.total) <= BLOCK_GREEDY_ELEMENTS
        if block:
            self.k_block((1,), (BLOCK_GREEDY_THREADS,), (
                sel.inv_ptr, sel.inv_sets, sel.offsets, sel.nodes, _i64(self.n), _i64(self.rounds), np.int32(k),
                _i64(steps), sel.covered_flags, sel.counts, sel.taken, sel.per_round, keys, sel.newly))
        else:
            for it in range(steps):
                sel.launch_step(keys, it)
        chosen, gains = decode_keys(self.backend.to_host(keys)[:steps])
        covered = _host_int(self.backend, sel.newly)
        if covered != int(gains.sum()):
            raise RuntimeError(f"greedy bookkeeping mismatch: {covered} covered, gains sum {int(gains.sum())}")
        return chosen, gains, covered
