"""DiFuseR's CUDA engine with a warp per (vertex, group of 32 worlds): ``kernels/sketch/sketch_warp.cu``.

The default mapping (``mapping="warp"``); ``mapping="block"`` is the paper's block per vertex
(``gpucore.im.sketch.cuda``). Fill, the score sums, Count and the argmax are the same kernels in both;
Simulate, Cascade and the exact-gain probes differ in how work is laid out, not in what they compute
(the fixpoint, the closure and the gains are unique), so both give the same registers and seeds:

- ``simulate``: the first sweep pulls every vertex; each later sweep pulls only the vertices with an
  out-neighbour that grew in the previous sweep (``sk_stale`` lists them through the in-CSR of the
  local arcs, built once per solve), so the sweeps of a rebuild's long tail, where a few hundred
  vertices still change, cost microseconds instead of a pass over every vertex.
- ``cascade`` and ``gains``: levels over queue entries (vertex, group) with the worlds newly reached
  in ``fresh``; a level's work is proportional to the (vertex, world) pairs it explores, not to
  1,024 worlds per queued vertex.
- ``live_bits``: the coins of every (arc, world) computed once per solve into m x J bits
  (``sk_live_bits``), so the kernels read one word per arc and group instead of hashing a keyed coin
  per world, and skip arcs live in none of a group's (active) worlds. Same coins, same answers; the
  driver turns it on when the bits fit the memory budget (result key ``live_bits``).

Extra memory against the block mapping: fresh bits, stamps and two queues of n x G 32-bit words
(G = J / 32: n x J / 2 bytes together), the in-CSR (4 bytes an arc), four int32 arrays of n, and the
live bits (m x J / 8 bytes) when used.
"""

from __future__ import annotations

import numpy as np

from gpucore.backend import scan_total
from gpucore.errors import GpucoreError
from gpucore.im.sketch.cuda import CUDAEngine, _i64

#: threads per block of the warp kernels
WARP_BLOCK = 256
#: the tags of stamps wrap here: stamps are cleared and counting starts over
TAG_LIMIT = 2**31 - 1
#: vertices per warp item of sk_world_counts (32 x SK_COUNT_RUN in sketch_warp.cu): sizes its grid
COUNT_SPAN = 2048


def in_csr(xp, n: int, indptr, dst):
    """The in-CSR (int64 offsets, int32 sources) of an out-CSR, with NumPy or CuPy (``xp``)."""
    m = int(dst.shape[0])
    src = xp.searchsorted(indptr[1:], xp.arange(m, dtype=xp.int64), side="right")
    order = xp.argsort(dst, kind="stable") if xp is np else xp.argsort(dst)
    in_src = src[order].astype(xp.int32)
    in_indptr = xp.searchsorted(dst[order], xp.arange(n + 1, dtype=dst.dtype), side="left").astype(xp.int64)
    return in_indptr, in_src


class WarpEngine(CUDAEngine):
    """``CUDAEngine`` with Simulate, Cascade and the gains of ``sketch_warp.cu``."""

    mapping = "warp"

    def __init__(self, graph, keys, seed: int, backend, live_bits: bool = True, warp_block: int = WARP_BLOCK, **kw):
        super().__init__(graph, keys, seed, backend, **kw)
        self.groups = self.worlds // 32
        if self.n * self.groups >= 2**32:
            raise GpucoreError(f"{graph.path}: {self.n:,} vertices x {self.groups} groups of 32 worlds do not fit "
                               f"32-bit queue entries; lower --registers or use --mapping block")
        be = backend
        self.warp_block = int(warp_block)
        warp = self._load("sketch/sketch_warp")
        self.k_sweep = warp.get_function("sk_sweep")
        self.k_stale = warp.get_function("sk_stale")
        self.k_cascade_warp = warp.get_function("sk_cascade_warp")
        self.k_probe_warp = warp.get_function("sk_probe_warp")
        self.k_probe_start_warp = warp.get_function("sk_probe_start_warp")
        self.k_cascade_start_warp = warp.get_function("sk_cascade_start_warp")
        self.k_world_counts = warp.get_function("sk_world_counts")
        self.anchor_marks = None
        self.local_m = int(self.local.arcs)
        self.live_bits = bool(live_bits) and self.local_m > 0
        self.bits = be.empty((self.local_m * self.groups if self.live_bits else 1,), np.uint32, what="live bits")
        if self.live_bits:
            self.k_live_bits = warp.get_function("sk_live_bits")
            self.k_live_bits((self._grid(self.local_m * self.groups, 256),), (256,), (
                self.words, self.thr, self.live_keys, np.int32(self.keyed), _i64(self.local_m), _i64(self.groups),
                self.bits))
        self.in_indptr, self.in_src = in_csr(self.xp, self.n, self.indptr, self.dst)
        entries = self.n * self.groups
        self.fresh = be.zeros((entries,), np.uint32, what="fresh world bits")
        self.stamp = be.zeros((entries,), np.int32, what="queue stamps")
        self.queue = be.empty((entries,), np.uint32, what="cascade queue")
        self.next = be.empty((entries,), np.uint32, what="cascade queue")
        self.list = be.empty((self.n,), np.int32, what="sweep list")
        self.changed_list = be.empty((self.n,), np.int32, what="changed vertices")
        self.changed_stamp = be.zeros((self.n,), np.int32, what="sweep stamps")
        self.stale_stamp = be.zeros((self.n,), np.int32, what="sweep stamps")
        self.sizes = be.zeros((2,), np.int32, what="list sizes")  # [changed, list]
        self.tag = 0

    def _warp_grid(self, warps: int) -> tuple[int]:
        per_block = self.warp_block // 32
        return (int(max(1, min((warps + per_block - 1) // per_block, self.blocks * 4))),)

    def simulate(self) -> int:
        """Sweeps until one changes no register; returns the number of sweeps."""
        sweeps = 0
        while True:
            self.tag += 1
            if self.tag == TAG_LIMIT:
                self.changed_stamp.fill(0)
                self.stale_stamp.fill(0)
                self.tag = 1
            self.sizes[0:1].fill(0)
            # later sweeps: the list's size is on the device; idle warps of the full grid exit at once
            self.k_sweep(self._warp_grid(self.n * self.groups), (self.warp_block,), (
                *self._warp_arcs(), self._flat, _i64(self.n), _i64(self.worlds), self.list, self.sizes[1:2],
                np.int32(1 if sweeps == 0 else 0),
                self.changed_list, self.sizes[0:1], self.changed_stamp, np.int32(self.tag)))
            sweeps += 1
            changed = self._scalar(self.sizes[0:1])
            if not changed:
                return sweeps
            self.sizes[1:2].fill(0)
            self.k_stale(self._warp_grid(changed), (self.warp_block,), (
                self.in_indptr, self.in_src, self.changed_list, self.sizes[0:1], self.stale_stamp,
                np.int32(self.tag), self.list, self.sizes[1:2]))

    def _levels(self, queued: int, launch) -> None:
        """Levels of a traversal whose first ``queued`` entries are in ``self.queue``:
        ``launch(grid, queued, level)`` runs one level and appends to ``self.next``."""
        while queued:
            self.level += 1
            if self.level == TAG_LIMIT:  # stamps wrap: start over (nothing is queued at this point)
                self.stamp.fill(0)
                self.level = 1
            self.next_size.fill(0)
            launch(self._warp_grid(queued), queued, self.level)
            queued = self._scalar(self.next_size)
            self.queue, self.next = self.next, self.queue

    def _warp_arcs(self):
        return (self.indptr, self.dst, self.words, self.thr, self.live_keys, np.int32(self.keyed), self.bits,
                np.int32(1 if self.live_bits else 0), _i64(self.local_m))

    def cascade(self, seed: int) -> None:
        """Activate ``seed`` in every world and propagate until the queue is empty."""
        self.k_cascade_start_warp(self._warp_grid(self.groups), (self.warp_block,),
                                  (self._flat, _i64(self.worlds), _i64(seed), self.fresh, self.queue))
        self._levels(self.groups, lambda grid, queued, level: self.k_cascade_warp(grid, (self.warp_block,), (
            *self._warp_arcs(), self._flat, _i64(self.worlds), self.fresh, self.queue, _i64(queued), self.next,
            self.next_size, self.stamp, np.int32(level))))

    def gains(self, candidates):
        """Exact marginal gains of ``candidates`` (int64 on the device); no register changes. With two
        or more, the first is the batch's anchor: probed in full, its marks and per-world counts kept;
        each later one stops exploring a world once it is known to have the anchor's reach there
        (``sk_probe_warp``) and takes the anchor's count for that world."""
        xp, be = self.xp, self.backend
        if self.marks is None:
            self.marks = be.empty((self.n * self.groups,), np.uint32, what="refinement marks")
            self.done = be.zeros((self.groups,), np.uint32, what="done worlds")
            self.counts = be.zeros((self.worlds,), np.uint64, what="per-world gains")
        out = np.zeros(len(candidates), dtype=np.int64)
        anchored = len(candidates) > 1
        if anchored and self.anchor_marks is None:
            self.anchor_marks = be.empty((self.n * self.groups,), np.uint32, what="anchor marks")
        for i, v in enumerate(candidates):
            anchor = int(candidates[0]) if anchored and i else -1
            self._probe(int(v), anchor)
            if not anchored:
                out[i] = self._scalar(self.gain)
                continue
            self.counts.fill(0)
            self.k_world_counts(self._warp_grid(self.groups * max(1, self.n // COUNT_SPAN)), (self.warp_block,),
                                (self.marks, _i64(self.n), _i64(self.groups), self.counts))
            if i == 0:
                self.anchor_marks[...] = self.marks
                anchor_counts = self.counts.copy()
                out[i] = self._scalar(self.gain)
            else:
                done = ((self.done[:, None] >> xp.arange(32, dtype=xp.uint32)) & 1).reshape(-1).astype(bool)
                out[i] = scan_total(xp.where(done, anchor_counts, self.counts))
        return be.asarray(out, what="gains")

    def _probe(self, v: int, anchor: int) -> None:
        """One probe from ``v`` into ``self.marks`` and ``self.gain`` (anchored when ``anchor`` >= 0)."""
        self.marks.fill(0)
        self.gain.fill(0)
        self.done.fill(0)
        self.k_probe_start_warp(self._warp_grid(self.groups), (self.warp_block,), (
            self._flat, _i64(self.worlds), _i64(v), self.marks, self.fresh, self.queue, self.gain))
        self._levels(self.groups, lambda grid, queued, level: self.k_probe_warp(grid, (self.warp_block,), (
            *self._warp_arcs(), self._flat, _i64(self.worlds), self.marks, self.fresh, self.queue,
            _i64(queued), self.next, self.next_size, self.stamp, np.int32(level), self.gain, _i64(v), _i64(anchor),
            self.anchor_marks if anchor >= 0 else self.marks, self.done)))
