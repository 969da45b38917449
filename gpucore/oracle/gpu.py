"""Forward diffusion on the GPU: drives the kernels of ``gpucore/kernels/oracle_{ic,lt}.cu``.

Same contract as ``gpucore.oracle.cpu``: given seeds and a list of world seeds, the activated-set
size (and optionally the activated set) of every world. The per-world results are identical to the
CPU reference bit for bit, because each world is a pure function of its seed (tested on the GPU
machine by ``tests/gpu/test_oracle_cuda.py`` and, on any machine, by running these very kernels
through the sequential C++ emulator of ``gpucore.oracle.emulator``).

IC packs 64 simulations per 64-bit word and runs ``W`` words at once (``64 W`` simulations per
batch, ``W`` chosen from free device memory); LT runs ``S`` simulations at once with one 64-bit
accumulator per (simulation, node). Both are level-synchronous: the host launches
``LEVELS_PER_SYNC`` levels, then reads one counter to see whether the frontier is empty.

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


def ic_counts_gpu(engine: Engine, out_indptr, out_dst, out_prob, seeds: np.ndarray, worlds: np.ndarray,
                  want_sets: bool = False, max_words: int | None = None, arrays=None, light_max: int = LIGHT_MAX,
                  group: int = GROUP, stats: dict | None = None):
    """IC: activated-set size per world (int64), and the activated sets (bool [worlds, n]) if asked.

    ``arrays``: the graph arrays already on the device (out_indptr, out_dst, out_prob), optional.
    ``max_words`` caps the words (64 simulations each) per batch; ``light_max``/``group`` tune the
    work split (results do not depend on them); ``stats`` (a dict) receives batches, units (words
    per batch) and levels (launched, a multiple of ``LEVELS_PER_SYNC`` per batch).
    """
    _check_tuning(light_max, group, engine)
    _check_graph_arrays(out_indptr, out_dst, out_prob)
    xp = engine.xp
    n = int(out_indptr.shape[0] - 1)
    runs = int(worlds.shape[0])
    deg = np.diff(np.asarray(out_indptr))
    heavy_nodes = int(np.count_nonzero(deg > light_max))
    words_wanted = (runs + 63) // 64
    # per word: visited + 2 masks + 2 queues (8 bytes each per node) + heavy queue + counts/keys
    per_word = n * 8 * 5 + heavy_nodes * 8 + 64 * 16
    W = _plan(words_wanted, per_word, 0, engine, max_words, "IC simulation")
    d_indptr, d_dst, d_prob = arrays if arrays is not None else (xp.asarray(out_indptr), xp.asarray(out_dst),
                                                                 xp.asarray(out_prob))
    light = engine.kernel("oracle_ic", "oracle_ic_expand_light")
    heavy = engine.kernel("oracle_ic", "oracle_ic_expand_heavy")
    clear = engine.kernel("oracle_ic", "oracle_ic_clear")
    count_k = engine.kernel("oracle_ic", "oracle_ic_count")
    visited = _alloc(xp, W * n, np.uint64)
    masks = [_alloc(xp, W * n, np.uint64), _alloc(xp, W * n, np.uint64)]
    queues = [_alloc(xp, W * n, np.uint64, zero=False), _alloc(xp, W * n, np.uint64, zero=False)]
    hqueue = _alloc(xp, max(1, heavy_nodes * W), np.uint64, zero=False)
    grid, block = (engine.blocks,), (engine.block,)
    n64 = np.int64(n)
    counts = np.empty(runs, dtype=np.int64)
    sets = np.zeros((runs, n), dtype=bool) if want_sets else None
    h1_all = first_links(np.ascontiguousarray(worlds, dtype=np.uint64))
    seeds = np.asarray(seeds, dtype=np.int64)
    for start in range(0, runs, 64 * W):
        r = min(64 * W, runs - start)
        words = (r + 63) // 64
        if start:
            visited.fill(0)
            masks[0].fill(0)
            masks[1].fill(0)
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
        masks[0][d_index] = init
        queues[0][: entries.size] = xp.asarray(entries)

        def level(lv, cnt_in, cnt_out, hcnt):
            cur, nxt = masks[lv % 2], masks[(lv + 1) % 2]
            qin, qout = queues[lv % 2], queues[(lv + 1) % 2]
            light(grid, block, (d_indptr, d_dst, d_prob, n64, d_h1, qin, cnt_in, cur, nxt, visited, qout, cnt_out,
                                hqueue, hcnt, np.int64(light_max), np.int32(group)))
            heavy(grid, block, (d_indptr, d_dst, d_prob, n64, d_h1, hqueue, hcnt, cur, nxt, visited, qout, cnt_out))
            clear(grid, block, (qin, cnt_in, cur))

        levels = _level_loop(xp, level, entries.size)
        _note(stats, words, levels)
        d_counts = xp.zeros(words * 64, dtype=np.uint64)
        count_k(grid, block, (visited, n64, np.int64(words), np.int64(COUNT_PER_THREAD), d_counts))
        counts[start : start + r] = _to_host(d_counts)[:r].astype(np.int64)
        if want_sets:
            bits = _to_host(visited[: words * n]).reshape(words, n)
            for j in range(r):
                sets[start + j] = ((bits[j // 64] >> np.uint64(j % 64)) & np.uint64(1)).astype(bool)
    return counts, sets


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
    light = engine.kernel("oracle_lt", "oracle_lt_expand_light")
    heavy = engine.kernel("oracle_lt", "oracle_lt_expand_heavy")
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


def batch_geometry(n: int, runs: int, model: str) -> dict:
    """Bytes per batch unit, for reports."""
    if model == "IC":
        return {"unit": "word of 64 simulations", "bytes_per_unit": n * 40, "units": math.ceil(runs / 64)}
    return {"unit": "simulation", "bytes_per_unit": n * 25, "units": runs}
