"""Forward diffusion on the GPU: drives the kernels of ``gpucore/kernels/oracle/oracle_{ic,icw,lt}.cu``.

Same contract as ``gpucore.oracle.cpu``: given seeds and a list of world seeds, the activated-set
size (and optionally the activated set) of every world. The per-world results are identical to the
CPU reference bit for bit, because each world is a pure function of its seed (tested on the GPU
machine by ``tests/gpu/test_oracle_cuda.py`` and, on any machine, by running these very kernels
through the sequential C++ emulator of ``gpucore.oracle.emulated``).

IC packs 64 simulations per 64-bit word and runs ``W`` words at once (``64 W`` simulations per
batch, ``W`` chosen from free device memory); LT runs ``S`` simulations at once with one 64-bit
accumulator per (simulation, node). IC has three interchangeable kernels (``IC_VARIANTS``, the
argument ``variant``; results are identical, only speed differs):

- ``"level"`` (``oracle_ic.cu``): level-synchronous; groups of ``group`` lanes per frontier entry,
  block-per-entry for entries above ``light_max`` arcs; the visited word is read before the coins.
- ``"warp"`` (``oracle_icw.cu``, ``oracle_icw_level``): level-synchronous; a warp expands 32
  entries over their concatenated arcs (balanced whatever the degrees), coins first and only live
  arcs touch ``visited``; pushes staged per warp; one launch per level.
- ``"async"`` (``oracle_icw.cu``, ``oracle_icw_async``): no levels: one persistent launch drains a
  work queue of (node, word, newly claimed bits) entries, the same warp expansion; a queue of
  ``queue_capacity`` slots, bits that find no slot wait in ``pend`` for a refill and relaunch.
- ``"warp8"``, ``"async8"``: the same kernels compiled with ``__launch_bounds__(256, 8)`` (32
  registers, full occupancy, a few spills) instead of 48 registers.

LT and the level-synchronous IC kernels: the host launches ``LEVELS_PER_SYNC`` levels, then reads
one counter to see whether the frontier is empty.

The driver only needs an *engine*: ``xp`` (cupy, or numpy for the emulator), ``kernel(module,
name)`` returning a callable ``f(grid, block, args)`` with CuPy's RawKernel signature, the grid
geometry and the free memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.oracle.cpu import first_links

LEVELS_PER_SYNC = 8
LIGHT_MAX = 256  # entries with more out-arcs go to the block-per-entry kernel
GROUP = 8  # lanes per light entry (divides the block size and 32)
COUNT_PER_THREAD = 2048  # nodes per thread in oracle_ic_count (< 2^16, the counters' planes)
MEMORY_FRACTION = 0.5  # share of the free device memory one batch may take
IC_VARIANTS = ("level", "warp", "warp8", "async", "async8")
_ICW_KERNEL = {"warp": "oracle_icw_level", "warp8": "oracle_icw_level8", "async": "oracle_icw_async",
               "async8": "oracle_icw_async8"}
IC_VARIANT = "async8"  # default IC kernel: fastest measured (results/reference/bench-oracle.md: 137.7x over 16 cores)
QUEUE_CAPACITY = 1 << 29  # "async": queue slots (16 bytes each) at most, fewer when fewer can be needed
SEED_BITS = 4  # "async": initial entries carry this many simulations of one word (spreads the seeds' work)
WARP_STAGE_MAX_BLOCK = 256  # oracle_icw.cu: OICW_MAX_WARPS * 32
# oracle_icw.cu control words (u64 indices)
CTL_HEAD, CTL_TAIL, CTL_DONE, CTL_FLAG, CTL_ERR, CTL_LIMIT, CTL_SPIN_BASE, CTL_SPIN_MAX, CTL_WORDS = (
    0, 16, 32, 48, 49, 50, 51, 52, 64)
#: "async": a warp waiting for a ticket sleeps SPIN[0] ns per batch of 32 tickets between it and
#: the queue's tail, at most SPIN[1] ns (the ``async_spin`` argument; results never depend on it)
ASYNC_SPIN = (128, 8192)
#: "async": a waiting warp gives up when neither TAIL nor DONE moved for this long (a broken protocol
#: then raises instead of hanging the device); nanoseconds on the GPU, polls in the emulator
ASYNC_WATCHDOG_NS = 20_000_000_000


@dataclass
class Engine:
    """Where the kernels run. ``kernel`` returns ``f(grid, block, args)`` (CuPy RawKernel style)."""

    name: str
    xp: object
    blocks: int  # grid size of the grid-stride kernels
    block: int  # threads per block
    _kernel: object
    _free: object
    info: dict

    def kernel(self, module: str, name: str):
        return self._kernel(module, name)

    def free_bytes(self) -> int:
        return int(self._free())


def cuda_engine(backend) -> Engine:
    """The engine of a ``cuda`` Backend (CuPy RawModule kernels)."""
    from gpucore.kernels import get_kernel

    cp = backend.xp
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    sms = int(props["multiProcessorCount"])
    return Engine(
        name="cuda",
        xp=cp,
        blocks=sms * 8,
        block=256,
        _kernel=lambda module, name: get_kernel(module, name),
        _free=backend.free_memory,
        info=backend.device_info(),
    )


def _check_graph_arrays(out_indptr, out_dst, weights) -> None:
    # The kernels take int64 offsets, int32 targets, float32 weights: refuse anything else.
    for arr, dt, what in ((out_indptr, np.int64, "out_indptr"), (out_dst, np.int32, "out_dst"),
                          (weights, np.float32, "edge weights")):
        if np.dtype(arr.dtype) != np.dtype(dt):
            raise GpucoreError(f"oracle GPU kernels need {what} as {np.dtype(dt).name}, got {arr.dtype}")


def _alloc(xp, shape, dtype, zero=True):
    from gpucore.backend import guard_oom

    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    make = (lambda: xp.zeros(shape, dtype=dtype)) if zero else (lambda: xp.empty(shape, dtype=dtype))
    return guard_oom(make, nbytes, "oracle GPU state")


def _plan(units_wanted: int, bytes_per_unit: int, fixed: int, engine: Engine, max_units: int | None, what: str) -> int:
    """How many units (IC words / LT simulations) of state fit in the memory budget at once."""
    budget = int(engine.free_bytes() * MEMORY_FRACTION) - fixed
    units = min(units_wanted, max(0, budget // max(1, bytes_per_unit)))
    if max_units is not None:
        units = min(units, int(max_units))
    if units < 1:
        need = bytes_per_unit + fixed
        raise OutOfMemoryError(f"oracle {what}: one batch needs {format_bytes(need)} of device memory, "
                               f"{format_bytes(engine.free_bytes())} free")
    return int(units)


def _level_loop(xp, launch_level, first_count: int) -> int:
    """Run levels until the frontier is empty. Returns the number of levels launched.

    ``launch_level(level, cnt_in, cnt_out, hcnt)`` launches one level: ``cnt_in`` holds the size of
    its frontier, ``cnt_out`` receives the size of the next one, ``hcnt`` the size of its heavy
    frontier (one-element device views of per-chunk counter arrays, zero-initialised). Levels are
    launched ``LEVELS_PER_SYNC`` at a time; levels after the frontier empties are no-ops.
    """
    levels = 0
    count = int(first_count)
    while count:
        cnt = xp.asarray(np.array([count] + [0] * LEVELS_PER_SYNC, dtype=np.uint64))
        hcnt = xp.zeros(LEVELS_PER_SYNC + 1, dtype=np.uint64)
        for i in range(LEVELS_PER_SYNC):
            launch_level(levels, cnt[i : i + 1], cnt[i + 1 : i + 2], hcnt[i : i + 1])
            levels += 1
        count = int(cnt[LEVELS_PER_SYNC])  # the one host synchronisation per chunk
    return levels


def _check_tuning(light_max: int, group: int, engine: Engine) -> None:
    if group not in (1, 2, 4, 8, 16, 32) or engine.block % group:
        raise GpucoreError(f"oracle GPU: group {group} must be a power of two <= 32 dividing the block size")
    if light_max < 0:
        raise GpucoreError(f"oracle GPU: light_max must be >= 0, got {light_max}")


def check_variant(variant) -> str:
    """The IC kernel variant (None: the module default ``IC_VARIANT``)."""
    v = IC_VARIANT if variant is None else variant
    if v not in IC_VARIANTS:
        raise GpucoreError(f"oracle GPU: unknown IC variant {v!r} (choose from {', '.join(IC_VARIANTS)})")
    return v


def _check_warp_engine(engine: Engine, variant: str) -> None:
    if engine.block % 32 or engine.block > WARP_STAGE_MAX_BLOCK:
        raise GpucoreError(f"oracle GPU: variant {variant!r} needs a block size that is a multiple of 32 and at "
                           f"most {WARP_STAGE_MAX_BLOCK}, the engine has {engine.block}")


def ic_counts_gpu(engine: Engine, out_indptr, out_dst, out_prob, seeds: np.ndarray, worlds: np.ndarray,
                  want_sets: bool = False, max_words: int | None = None, arrays=None, light_max: int = LIGHT_MAX,
                  group: int = GROUP, stats: dict | None = None, variant: str | None = None,
                  queue_capacity: int | None = None, seed_bits: int = SEED_BITS,
                  async_spin: tuple[int, int] | None = None):
    """IC: activated-set size per world (int64), and the activated sets (bool [worlds, n]) if asked.

    ``arrays``: the graph arrays already on the device (out_indptr, out_dst, out_prob), optional.
    ``max_words`` caps the words (64 simulations each) per batch; ``variant`` picks the kernel
    (``IC_VARIANTS``, default ``IC_VARIANT``); ``light_max``/``group`` tune the work split of
    "level", ``queue_capacity`` (slots) and ``seed_bits`` (simulations per initial entry, a power
    of two <= 64) and ``async_spin`` (wait backoff, ``ASYNC_SPIN``) that of "async" (results never
    depend on them). ``stats`` (a dict) receives
    variant, batches, units (words per batch), levels (level variants: launched, a multiple of
    ``LEVELS_PER_SYNC`` per batch), and for "async" launches, refills, entries, queue_capacity.
    """
    variant = check_variant(variant)
    if variant == "level":
        _check_tuning(light_max, group, engine)
    else:
        _check_warp_engine(engine, variant)
    if seed_bits not in (1, 2, 4, 8, 16, 32, 64):
        raise GpucoreError(f"oracle GPU: seed_bits {seed_bits} must be a power of two <= 64")
    if async_spin is not None and not (len(async_spin) == 2 and 1 <= async_spin[0] <= async_spin[1] <= 1_000_000):
        raise GpucoreError(f"oracle GPU: async_spin {async_spin} must be (base, max) ns with 1 <= base <= max <= 1e6")
    if queue_capacity is not None and int(queue_capacity) < 1:
        raise GpucoreError(f"oracle GPU: queue_capacity must be >= 1, got {queue_capacity}")
    _check_graph_arrays(out_indptr, out_dst, out_prob)
    xp = engine.xp
    n = int(out_indptr.shape[0] - 1)
    runs = int(worlds.shape[0])
    seeds = np.unique(np.asarray(seeds, dtype=np.int64))
    words_wanted = (runs + 63) // 64
    fixed, capacity = 0, 0
    if variant == "level":
        deg = np.diff(np.asarray(out_indptr))
        heavy_nodes = int(np.count_nonzero(deg > light_max))
        # per word: visited + 2 masks + 2 queues (8 bytes each per node) + heavy queue + counts/keys
        per_word = n * 8 * 5 + heavy_nodes * 8 + 64 * 16
    elif variant in ("warp", "warp8"):
        per_word = n * 8 * 5 + 64 * 16  # visited + 2 masks + 2 key queues
    else:
        per_word = n * 8 * 2 + 64 * 16  # visited + pend
        # every entry carries at least one (simulation, node) bit of its own: 64 W n entries at most
        capacity = int(min(int(queue_capacity or QUEUE_CAPACITY), 64 * words_wanted * max(n, 1)))
        if queue_capacity is None:  # by default the queue takes at most a quarter of the budget
            budget = int(engine.free_bytes() * MEMORY_FRACTION)
            capacity = max(1, min(capacity, max(1 << 16, budget // 4 // 16)))
        fixed = capacity * 16 + CTL_WORDS * 8
    W = _plan(words_wanted, per_word, fixed, engine, max_words, "IC simulation")
    is_async = variant in ("async", "async8")
    if is_async:
        capacity = int(min(capacity, 64 * W * max(n, 1)))
    d_indptr, d_dst, d_prob = arrays if arrays is not None else (xp.asarray(out_indptr), xp.asarray(out_dst),
                                                                 xp.asarray(out_prob))
    count_k = engine.kernel("oracle/oracle_ic", "oracle_ic_count")
    visited = _alloc(xp, W * n, np.uint64)
    if is_async:
        state = {"pend": _alloc(xp, W * n, np.uint64), "queue": _alloc(xp, 2 * capacity, np.uint64),
                 "capacity": capacity, "used": 0}
    else:
        state = {"masks": [_alloc(xp, W * n, np.uint64), _alloc(xp, W * n, np.uint64)],
                 "queues": [_alloc(xp, W * n, np.uint64, zero=False), _alloc(xp, W * n, np.uint64, zero=False)]}
        if variant == "level":
            state["hqueue"] = _alloc(xp, max(1, heavy_nodes * W), np.uint64, zero=False)
    grid, block = (engine.blocks,), (engine.block,)
    n64 = np.int64(n)
    counts = np.empty(runs, dtype=np.int64)
    sets = np.zeros((runs, n), dtype=bool) if want_sets else None
    h1_all = first_links(np.ascontiguousarray(worlds, dtype=np.uint64))
    graph = (d_indptr, d_dst, d_prob, n64)
    if stats is not None:
        stats["variant"] = variant
    for start in range(0, runs, 64 * W):
        r = min(64 * W, runs - start)
        words = (r + 63) // 64
        if start:
            visited.fill(0)
            for m in state.get("masks", ()):
                m.fill(0)
        h1 = np.zeros(words * 64, dtype=np.uint64)
        h1[:r] = h1_all[start : start + r]
        d_h1 = xp.asarray(h1)
        valid = np.full(words, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
        if r % 64:
            valid[-1] = np.uint64((1 << (r % 64)) - 1)
        entries = (np.arange(words, dtype=np.uint64)[:, None] * np.uint64(n) + seeds.astype(np.uint64)[None, :]).ravel()
        init = xp.asarray(np.repeat(valid, seeds.size))
        d_index = xp.asarray(entries.astype(np.int64))  # int64 positions for fancy indexing
        visited[d_index] = init
        if variant == "level":
            levels = _run_level(engine, state, graph, d_h1, visited, entries, d_index, init, light_max, group)
            _note(stats, words, levels)
        elif not is_async:
            levels = _run_warp(engine, _ICW_KERNEL[variant], state, graph, d_h1, visited, words, seeds, d_index, init)
            _note(stats, words, levels)
        else:
            _run_async(engine, _ICW_KERNEL[variant], state, graph, d_h1, visited, words, seeds, valid, seed_bits,
                       stats, spin=async_spin)
            _note(stats, words, 0)
        d_counts = xp.zeros(words * 64, dtype=np.uint64)
        count_k(grid, block, (visited, n64, np.int64(words), np.int64(COUNT_PER_THREAD), d_counts))
        counts[start : start + r] = _to_host(d_counts)[:r].astype(np.int64)
        if want_sets:
            bits = _to_host(visited[: words * n]).reshape(words, n)
            for j in range(r):
                sets[start + j] = ((bits[j // 64] >> np.uint64(j % 64)) & np.uint64(1)).astype(bool)
    return counts, sets


def _run_level(engine, state, graph, d_h1, visited, entries, d_index, init, light_max, group) -> int:
    """Variant "level" on one batch (visited already holds the seeds). Returns the levels launched."""
    light = engine.kernel("oracle/oracle_ic", "oracle_ic_expand_light")
    heavy = engine.kernel("oracle/oracle_ic", "oracle_ic_expand_heavy")
    clear = engine.kernel("oracle/oracle_ic", "oracle_ic_clear")
    masks, queues, hqueue = state["masks"], state["queues"], state["hqueue"]
    grid, block = (engine.blocks,), (engine.block,)
    masks[0][d_index] = init
    queues[0][: entries.size] = engine.xp.asarray(entries)

    def level(lv, cnt_in, cnt_out, hcnt):
        cur, nxt = masks[lv % 2], masks[(lv + 1) % 2]
        qin, qout = queues[lv % 2], queues[(lv + 1) % 2]
        light(grid, block, graph + (d_h1, qin, cnt_in, cur, nxt, visited, qout, cnt_out, hqueue, hcnt,
                                    np.int64(light_max), np.int32(group)))
        heavy(grid, block, graph + (d_h1, hqueue, hcnt, cur, nxt, visited, qout, cnt_out))
        clear(grid, block, (qin, cnt_in, cur))

    return _level_loop(engine.xp, level, entries.size)


def _seed_keys(words: int, seeds: np.ndarray) -> np.ndarray:
    """Keys (w << 32) | v of the seeds in every word, word-major."""
    return ((np.arange(words, dtype=np.uint64)[:, None] << np.uint64(32)) | seeds.astype(np.uint64)[None, :]).ravel()


def _run_warp(engine, name, state, graph, d_h1, visited, words, seeds, d_index, init) -> int:
    """Variant "warp"/"warp8" on one batch: one launch of kernel ``name`` per level. Returns the levels."""
    xp = engine.xp
    kernel = engine.kernel("oracle/oracle_icw", name)
    masks, queues = state["masks"], state["queues"]
    grid, block = (engine.blocks,), (engine.block,)
    keys = _seed_keys(words, seeds)
    masks[0][d_index] = init
    queues[0][: keys.size] = xp.asarray(keys)

    def level(lv, cnt_in, cnt_out, hcnt):
        kernel(grid, block, graph + (d_h1, visited, queues[lv % 2], cnt_in, masks[lv % 2], masks[(lv + 1) % 2],
                                     queues[(lv + 1) % 2], cnt_out))

    return _level_loop(xp, level, keys.size)


def _run_async(engine, name, state, graph, d_h1, visited, words, seeds, valid, seed_bits, stats,
               watchdog_ns: int | None = None, spin: tuple[int, int] | None = None) -> None:
    """Variant "async"/"async8" on one batch: persistent launches of ``name`` until no bits wait in ``pend``."""
    xp = engine.xp
    kernel = engine.kernel("oracle/oracle_icw", name)
    refill = engine.kernel("oracle/oracle_icw", "oracle_icw_refill")
    pend, queue, capacity = state["pend"], state["queue"], state["capacity"]
    grid, block = (engine.blocks,), (engine.block,)
    n = int(graph[3])
    # Initial entries: every seed in every word, its simulations split in chunks of seed_bits.
    chunks = 64 // seed_bits
    low = np.uint64((1 << seed_bits) - 1) if seed_bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    chunk_masks = np.array([int(low) << (c * seed_bits) for c in range(chunks)], dtype=np.uint64)
    shape = (words, seeds.size, chunks)
    m = np.broadcast_to(valid[:, None, None] & chunk_masks[None, None, :], shape)
    keys = np.broadcast_to(_seed_keys(words, seeds).reshape(words, seeds.size, 1), shape)
    keep = m != 0
    keys, m = keys[keep], m[keep]
    placed = min(keys.size, capacity)
    slots = np.empty(2 * placed, dtype=np.uint64)
    slots[0::2], slots[1::2] = keys[:placed], m[:placed]
    if state["used"]:
        queue[: 2 * state["used"]] = 0
    queue[: 2 * placed] = xp.asarray(slots)
    ctl = np.zeros(CTL_WORDS, dtype=np.uint64)
    ctl[CTL_TAIL] = placed
    if placed < keys.size:  # no slot: the bits wait in pend (zero here) for a refill
        x = (keys[placed:] >> np.uint64(32)) * np.uint64(n) + (keys[placed:] & np.uint64(0xFFFFFFFF))
        ux, inv = np.unique(x, return_inverse=True)
        agg = np.zeros(ux.size, dtype=np.uint64)
        np.bitwise_or.at(agg, inv, m[placed:])
        pend[xp.asarray(ux.astype(np.int64))] = xp.asarray(agg)
        ctl[CTL_FLAG] = 1
    used = placed
    launches = refills = expanded = 0
    while True:
        ctl[CTL_HEAD] = ctl[CTL_DONE] = ctl[CTL_ERR] = 0
        ctl[CTL_LIMIT] = ASYNC_WATCHDOG_NS if watchdog_ns is None else watchdog_ns
        ctl[CTL_SPIN_BASE], ctl[CTL_SPIN_MAX] = spin or ASYNC_SPIN
        d_ctl = xp.asarray(ctl)
        kernel(grid, block, graph + (d_h1, visited, pend, queue, np.uint64(capacity), d_ctl))
        ctl = _to_host(d_ctl).copy()
        launches += 1
        expanded += int(ctl[CTL_DONE])
        if ctl[CTL_ERR]:
            raise GpucoreError(f"oracle GPU async: a warp saw no progress for {int(ctl[CTL_LIMIT])} ns (watchdog); "
                               f"{int(ctl[CTL_DONE])} entries expanded of {min(int(ctl[CTL_TAIL]), capacity)} queued")
        if int(ctl[CTL_DONE]) != min(int(ctl[CTL_TAIL]), capacity):
            raise GpucoreError(f"oracle GPU async: {int(ctl[CTL_DONE])} entries expanded of "
                               f"{min(int(ctl[CTL_TAIL]), capacity)} queued (kernel protocol broken)")
        used = max(used, min(int(ctl[CTL_TAIL]), capacity))
        if not ctl[CTL_FLAG]:
            break
        queue[: 2 * used] = 0
        ctl = np.zeros(CTL_WORDS, dtype=np.uint64)
        d_ctl = xp.asarray(ctl)
        refill(grid, block, (pend, np.int64(words * n), np.int64(n), queue, np.uint64(capacity), d_ctl))
        ctl = _to_host(d_ctl).copy()
        refills += 1
        used = min(int(ctl[CTL_TAIL]), capacity)
    state["used"] = used
    if stats is not None:
        stats["launches"] = stats.get("launches", 0) + launches
        stats["refills"] = stats.get("refills", 0) + refills
        stats["entries"] = stats.get("entries", 0) + expanded
        stats["queue_capacity"] = capacity


def lt_counts_gpu(engine: Engine, out_indptr, out_dst, out_weight, seeds: np.ndarray, worlds: np.ndarray,
                  want_sets: bool = False, max_sims: int | None = None, arrays=None, light_max: int = LIGHT_MAX,
                  group: int = GROUP, stats: dict | None = None):
    """LT: activated-set size per world (int64), and the activated sets (bool [worlds, n]) if asked.

    Parameters as ``ic_counts_gpu``; ``max_sims`` caps the simulations per batch.
    """
    _check_tuning(light_max, group, engine)
    _check_graph_arrays(out_indptr, out_dst, out_weight)
    xp = engine.xp
    n = int(out_indptr.shape[0] - 1)
    runs = int(worlds.shape[0])
    deg = np.diff(np.asarray(out_indptr))
    heavy_nodes = int(np.count_nonzero(deg > light_max))
    # per simulation: acc (8) + active (1) + 2 queues (8 each) per node, heavy queue
    per_sim = n * (8 + 1 + 16) + heavy_nodes * 8 + 16
    S = _plan(runs, per_sim, 0, engine, max_sims, "LT simulation")
    d_indptr, d_dst, d_w = arrays if arrays is not None else (xp.asarray(out_indptr), xp.asarray(out_dst),
                                                              xp.asarray(out_weight))
    light = engine.kernel("oracle/oracle_lt", "oracle_lt_expand_light")
    heavy = engine.kernel("oracle/oracle_lt", "oracle_lt_expand_heavy")
    acc = _alloc(xp, S * n, np.uint64)
    active = _alloc(xp, S * n, np.uint8)
    queues = [_alloc(xp, S * n, np.uint64, zero=False), _alloc(xp, S * n, np.uint64, zero=False)]
    hqueue = _alloc(xp, max(1, heavy_nodes * S), np.uint64, zero=False)
    grid, block = (engine.blocks,), (engine.block,)
    n64 = np.int64(n)
    counts = np.empty(runs, dtype=np.int64)
    sets = np.zeros((runs, n), dtype=bool) if want_sets else None
    h1_all = first_links(np.ascontiguousarray(worlds, dtype=np.uint64))
    seeds = np.asarray(seeds, dtype=np.int64)
    for start in range(0, runs, S):
        r = min(S, runs - start)
        if start:
            acc.fill(0)
            active.fill(0)
        d_h1 = xp.asarray(np.ascontiguousarray(h1_all[start : start + r]))
        entries = (np.arange(r, dtype=np.uint64)[:, None] * np.uint64(n) + seeds.astype(np.uint64)[None, :]).ravel()
        active[xp.asarray(entries.astype(np.int64))] = 1
        queues[0][: entries.size] = xp.asarray(entries)

        def level(lv, cnt_in, cnt_out, hcnt):
            qin, qout = queues[lv % 2], queues[(lv + 1) % 2]
            light(grid, block, (d_indptr, d_dst, d_w, n64, d_h1, qin, cnt_in, acc, active, qout, cnt_out, hqueue, hcnt,
                                np.int64(light_max), np.int32(group)))
            heavy(grid, block, (d_indptr, d_dst, d_w, n64, d_h1, hqueue, hcnt, acc, active, qout, cnt_out))

        levels = _level_loop(xp, level, entries.size)
        _note(stats, r, levels)
        flags = active[: r * n].reshape(r, n)
        counts[start : start + r] = _to_host(flags.sum(axis=1, dtype=np.int64))
        if want_sets:
            sets[start : start + r] = _to_host(flags).astype(bool)
    return counts, sets


def _note(stats: dict | None, units: int, levels: int) -> None:
    if stats is not None:
        stats["batches"] = stats.get("batches", 0) + 1
        stats["units"] = max(stats.get("units", 0), units)
        stats["levels"] = stats.get("levels", 0) + levels


def _to_host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def batch_geometry(n: int, runs: int, model: str, variant: str | None = None) -> dict:
    """Bytes per batch unit, for reports (IC "async" also has its queue, up to 16 QUEUE_CAPACITY bytes)."""
    if model == "IC":
        per = n * 16 if check_variant(variant) in ("async", "async8") else n * 40
        return {"unit": "word of 64 simulations", "bytes_per_unit": per, "units": math.ceil(runs / 64)}
    return {"unit": "simulation", "bytes_per_unit": n * 25, "units": runs}
