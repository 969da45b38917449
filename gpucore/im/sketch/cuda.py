"""The CUDA backend of DiFuseR: ``kernels/sketch/sketch_build.cu`` and ``sketch_select.cu`` driven by CuPy.

The paper's mapping (section 3; ``mapping="block"``): one block per vertex, one thread per world; the worlds of a process
are launched in slices of at most ``SLICE`` = 1024 (the block-size limit), each slice a launch of its
own over the same arrays. Per solve: the graph's out-CSR, thresholds W_e (computed on the device),
arc hashes (``sk_arc_hashes``, xor sampling) and the per-world keys go to the device once; then
``sk_live_any`` flags the arcs live in one of the process's worlds, the local graph keeps those alone
(``gpucore.im.sketch.local``) and the whole graph's arrays are freed.

- ``fill``: ``sk_fill`` per slice;
- ``simulate``: sweeps of ``sk_simulate`` per slice until the global changed flag stays 0; from the
  second sweep on, only vertices with an out-neighbour that grew in the previous sweep pull (flags in
  two alternating byte arrays);
- ``cascade(s)``: row s set to -1, then levels of ``sk_cascade`` over a queue of distinct vertices
  (stamps hold the level that last queued a vertex, so nothing is cleared between levels) until the
  next queue is empty; each level reads its size back (the paper's host loop);
- ``gains(candidates)``: per candidate, ``sk_probe_start`` then levels of ``sk_probe`` (the cascade's
  traversal into a bitmask of marks instead of the registers);
- ``visited_count``: ``sk_count``; ``scores``: ``sk_score`` per slice (accumulated); ``argmax``:
  ``sk_argmax`` then the blocks' answers on the host (ties to the lowest id).
"""

from __future__ import annotations

import numpy as np

from gpucore.backend import scan_total
from gpucore.errors import GpucoreError
from gpucore.im.sketch.arcs import thresholds
from gpucore.im.sketch.hashing import murmur_seed
from gpucore.im.sketch.layout import VISITED
from gpucore.im.sketch.local import LocalArcs, compact
from gpucore.kernels import load_module

#: most worlds per launch (threads per block)
SLICE = 1024
#: blocks of the reductions (count, argmax)
REDUCE_BLOCKS = 1024


def _i64(x) -> np.int64:
    return np.int64(int(x))


class CUDAEngine:
    """DiFuseR's registers and kernels on one CUDA device for the worlds of ``keys`` (a ``WorldKeys``)."""

    name = "cuda"
    mapping = "block"
    live_bits = False  # the warp mapping's table of coins (gpucore.im.sketch.cuda_warp)

    def __init__(self, graph, keys, seed: int, backend, slice_width: int = SLICE, blocks: int | None = None):
        xp = backend.xp
        self.xp = xp
        self.backend = backend
        self.n = int(graph.n)
        if graph.m >= 2**31:
            raise GpucoreError(f"{graph.path}: {graph.m:,} arcs; the DiFuseR CUDA kernels need fewer than 2^31")
        self.keyed = 1 if keys.keyed else 0
        self.worlds = keys.count
        self.slices = [(j0, min(slice_width, self.worlds - j0)) for j0 in range(0, self.worlds, slice_width)]
        build = self._load("sketch/sketch_build")
        select = self._load("sketch/sketch_select")
        self.k_hashes = build.get_function("sk_arc_hashes")
        self.k_live_any = build.get_function("sk_live_any")
        self.k_fill = build.get_function("sk_fill")
        self.k_simulate = build.get_function("sk_simulate")
        self.k_cascade = select.get_function("sk_cascade")
        self.k_probe_start = select.get_function("sk_probe_start")
        self.k_probe = select.get_function("sk_probe")
        self.k_count = select.get_function("sk_count")
        self.k_score = select.get_function("sk_score")
        self.k_argmax = select.get_function("sk_argmax")

        be = backend
        self.blocks = int(blocks or self._default_blocks())
        self.live_keys = be.asarray(keys.live, what="world keys")
        self.register_keys = be.asarray(keys.register, what="register keys")
        self.local = self._local_arcs(graph, seed)
        self.indptr, self.dst, self.thr, self.words = (self.local.indptr, self.local.dst, self.local.thr,
                                                       self.local.words)
        self.registers = be.zeros((self.n, self.worlds), np.int8, what=f"registers ({self.n:,} x {self.worlds})")
        self._flat = self.registers.reshape(-1)
        self.changed = be.zeros((2, self.n), np.uint8, what="changed flags")
        self.any = be.zeros((1,), np.int32, what="changed flag")
        self.queue = be.empty((self.n,), np.int32, what="cascade queue")
        self.next = be.empty((self.n,), np.int32, what="cascade queue")
        self.next_size = be.zeros((1,), np.int32, what="queue size")
        self.stamp = be.zeros((self.n,), np.int32, what="queue stamps")
        self.level = 0
        self.total = be.zeros((1,), np.uint64, what="visited count")
        self.gain = be.zeros((1,), np.uint64, what="gain")
        self.marks = None
        self.block_value = be.empty((REDUCE_BLOCKS,), np.int64, what="argmax values")
        self.block_vertex = be.empty((REDUCE_BLOCKS,), np.int64, what="argmax vertices")

    def _local_arcs(self, graph, seed: int) -> LocalArcs:
        """The arcs live in at least one of these worlds (``gpucore.im.sketch.local``), built on the
        device from the whole graph's arrays, which are freed afterwards."""
        be, n, m = self.backend, self.n, int(graph.m)
        indptr = be.asarray(np.ascontiguousarray(graph.out_indptr, dtype=np.int64), what="out-CSR offsets")
        dst = be.asarray(np.ascontiguousarray(graph.out_dst, dtype=np.int32), what="out-CSR targets")
        prob = be.asarray(np.ascontiguousarray(graph.out_prob, dtype=np.float32), what="edge probabilities")
        thr = thresholds(prob, str(graph.path))
        del prob
        hashes = be.zeros((max(1, m) if not self.keyed else 1,), np.uint32, what="arc hashes")
        if not self.keyed and m:
            self.k_hashes((self._grid(n * 32, 256),), (256,),
                          (indptr, dst, _i64(n), np.uint32(murmur_seed(seed)), hashes))
        flags = be.zeros((max(1, m),), np.uint8, what="local arc flags")[:m]
        if m:
            self.k_live_any((self._grid(m, 256),), (256,), (hashes, thr, self.live_keys, np.int32(self.keyed),
                                                            _i64(self.worlds), _i64(m), flags))
        return compact(self.xp, n, indptr, dst, thr, hashes, bool(self.keyed), flags, np.uint32)

    # ---- device facts (the emulator overrides these) ----------------------------------------
    def _load(self, name):
        return load_module(name)

    def _default_blocks(self) -> int:
        """Blocks of the per-vertex launches: 8 waves of resident 1024-thread blocks."""
        cp = self.xp
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        return int(props["multiProcessorCount"]) * 2 * 8

    def _grid(self, threads: int, block: int) -> int:
        return int(max(1, min((threads + block - 1) // block, self.blocks * 4)))

    def _scalar(self, arr) -> int:
        return int(self.backend.to_host(arr).reshape(-1)[0])

    def synchronize(self) -> None:
        self.backend.synchronize()

    # ---- the engine contract ----------------------------------------------------------------
    def fill(self) -> None:
        grid = (int(max(1, min(self.n, self.blocks))),)
        for j0, width in self.slices:
            self.k_fill(grid, (width,), (self._flat, _i64(self.n), _i64(self.worlds), _i64(j0), self.register_keys))

    def simulate(self) -> int:
        """Sweeps until the global changed flag stays 0; returns the number of sweeps."""
        grid = (int(max(1, min(self.n, self.blocks))),)
        sweeps = 0
        while True:
            cur, prev = self.changed[sweeps % 2], self.changed[(sweeps + 1) % 2]
            cur.fill(0)
            self.any.fill(0)
            for j0, width in self.slices:
                self.k_simulate(grid, (width,), (
                    self.indptr, self.dst, self.words, self.thr, self.live_keys, np.int32(self.keyed), self._flat,
                    _i64(self.n), _i64(self.worlds), _i64(j0), prev, np.int32(1 if sweeps else 0), cur, self.any))
            sweeps += 1
            if not self._scalar(self.any):
                return sweeps

    def _traverse(self, start: int, launch) -> None:
        """Levels of a merged multi-world BFS from ``start``: ``launch(grid, width, j0, queued, level)``
        runs one slice of one level over ``self.queue`` and appends to ``self.next``."""
        self.queue[0] = int(start)
        queued = 1
        while queued:
            self.level += 1
            if self.level == 2**31 - 1:  # stamps wrap: start over (nothing is queued at this point)
                self.stamp.fill(0)
                self.level = 1
            self.next_size.fill(0)
            grid = (int(min(queued, self.blocks)),)
            for j0, width in self.slices:
                launch(grid, (width,), j0, queued, self.level)
            queued = self._scalar(self.next_size)
            self.queue, self.next = self.next, self.queue

    def _arcs(self):
        return (self.indptr, self.dst, self.words, self.thr, self.live_keys, np.int32(self.keyed), self._flat,
                _i64(self.worlds))

    def cascade(self, seed: int) -> None:
        """Activate ``seed`` in every world and propagate until the queue is empty."""
        self.registers[int(seed)] = VISITED
        self._traverse(seed, lambda grid, block, j0, queued, level: self.k_cascade(grid, block, (
            *self._arcs(), _i64(j0), self.queue, _i64(queued), self.next, self.next_size, self.stamp,
            np.int32(level))))

    def gains(self, candidates):
        """Exact marginal gains (registers a cascade would newly set to -1) of ``candidates``, int64 on
        the device; no register changes (marks: one bit per register, allocated on first use)."""
        if self.marks is None:
            self.marks = self.backend.empty((self.n * self.worlds // 32,), np.uint32, what="refinement marks")
        out = np.zeros(len(candidates), dtype=np.int64)
        for i, v in enumerate(candidates):
            self.marks.fill(0)
            self.gain.fill(0)
            self.k_probe_start((self._grid(self.worlds, 256),), (256,),
                               (self._flat, _i64(self.worlds), _i64(v), self.marks, self.gain))
            self._traverse(v, lambda grid, block, j0, queued, level: self.k_probe(grid, block, (
                *self._arcs(), _i64(j0), self.marks, self.queue, _i64(queued), self.next, self.next_size,
                self.stamp, np.int32(level), self.gain)))
            out[i] = self._scalar(self.gain)
        return self.backend.asarray(out, what="gains")

    def visited_count(self) -> int:
        self.total.fill(0)
        words = self._flat.view(np.uint32)
        self.k_count((self._grid(words.size, 256),), (256,), (words, _i64(words.size), self.total))
        return self._scalar(self.total)

    def scores(self, table):
        out = self.backend.empty((self.n,), np.int64, what="vertex scores")
        own = np.int32(1 if scan_total(table[1] != 0) else 0)
        grid = (int(max(1, min(self.n, self.blocks))),)
        for i, (j0, width) in enumerate(self.slices):
            self.k_score(grid, (width,), (self._flat, _i64(self.n), _i64(self.worlds), _i64(j0), self.register_keys,
                                          table, own, out, np.int32(1 if i else 0)))
        return out

    def argmax(self, scores, chosen) -> int:
        blocks = int(max(1, min(REDUCE_BLOCKS, (self.n + 255) // 256)))
        self.k_argmax((blocks,), (256,), (scores, chosen, _i64(self.n), self.block_value, self.block_vertex))
        values = self.backend.to_host(self.block_value[:blocks])
        vertices = self.backend.to_host(self.block_vertex[:blocks])
        best, best_value = -1, 0
        for value, vertex in zip(values.tolist(), vertices.tolist()):
            if vertex >= 0 and (best < 0 or value > best_value or (value == best_value and vertex < best)):
                best, best_value = vertex, value
        return best

    def host_registers(self) -> np.ndarray:
        return self.backend.to_host(self.registers).copy()
