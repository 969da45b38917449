"""Forward diffusion on the CPU (Numba): the reference implementation of the oracle.

Everything here is written for the oracle alone (no solver code is shared). A *world* is given by
its 64-bit seed ``w``; the only functions shared with the rest of gpucore are the documented
world-realization functions of ``gpucore.random.worlds``:

- IC: arc ``k`` (original edge id = out-CSR position) is live iff ``ic_live(w, k, p_k)``;
  the activated set is everything reachable from the seeds over live arcs.
- LT: ``q_k = lt_fixed_weight(w_k)``, ``T_v = lt_threshold(w, v)``; ``v`` becomes active once the
  ``q`` of its active in-arcs sum to more than ``T_v`` (integer sums: order-independent).

``_ic_world`` / ``_lt_world`` extend an activated set in place (``active`` flags, ``queue`` of
activated ids): that is one Monte-Carlo run (from empty state) or one adaptive round (state kept).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpucore.random import Stream, ic_live, lt_fixed_weight, lt_threshold, mix, mix3

_ORACLE = np.uint64(int(Stream.ORACLE))


@njit(cache=True)
def oracle_world_seeds(seed, start, count):
    """World seeds of Monte-Carlo runs ``start .. start+count-1``: mix(seed, ORACLE, run)."""
    out = np.empty(count, dtype=np.uint64)
    s = np.uint64(seed)
    for i in range(count):
        out[i] = mix3(s, _ORACLE, np.uint64(start + i))
    return out


@njit(cache=True)
def first_links(worlds):
    """mix(w) of every world seed: the first link of the keys mix(w, x) (used by the GPU kernels)."""
    out = np.empty(worlds.shape[0], dtype=np.uint64)
    for i in range(worlds.shape[0]):
        out[i] = mix(worlds[i])
    return out


@njit(inline="always", cache=True)
def _activate_seeds(seeds, active, queue, tail):
    """Mark the seeds that are not yet active and append them to ``queue``; returns the new tail."""
    for i in range(seeds.shape[0]):
        s = seeds[i]
        if active[s] == 0:
            active[s] = 1
            queue[tail] = s
            tail += 1
    return tail


@njit(cache=True)
def _ic_world(out_indptr, out_dst, out_prob, world, seeds, active, queue, tail):
    """Activate ``seeds`` (those not yet active) and everything they reach over live IC arcs.

    ``queue[:tail]`` lists the already-active nodes; newly activated ids are appended. Returns the
    new tail. Already-active nodes are never entered again, so with the state of earlier rounds
    this is exactly the diffusion of one adaptive round on the residual graph.
    """
    w = np.uint64(world)
    head = tail
    tail = _activate_seeds(seeds, active, queue, tail)
    while head < tail:
        u = queue[head]
        head += 1
        for k in range(out_indptr[u], out_indptr[u + 1]):
            v = out_dst[k]
            if active[v] == 0 and ic_live(w, np.uint64(k), out_prob[k]):
                active[v] = 1
                queue[tail] = v
                tail += 1
    return tail


@njit(cache=True)
def _lt_world(out_indptr, out_weight, out_dst, world, seeds, active, acc, queue, tail, touched, ntouched):
    """LT twin of ``_ic_world``. ``acc[v]`` is the fixed-point in-weight of v's active in-arcs.

    ``acc`` carries over between calls (adaptive rounds: thresholds never reset). ``touched``
    records nodes whose ``acc`` became non-zero (so a Monte-Carlo loop can reset them cheaply).
    Returns (tail, ntouched).
    """
    w = np.uint64(world)
    head = tail
    tail = _activate_seeds(seeds, active, queue, tail)
    while head < tail:
        u = queue[head]
        head += 1
        for k in range(out_indptr[u], out_indptr[u + 1]):
            v = out_dst[k]
            if active[v] != 0:
                continue
            q = lt_fixed_weight(out_weight[k])
            if q <= 0:
                continue
            a = acc[v]
            if a == 0:
                touched[ntouched] = v
                ntouched += 1
            a += q
            acc[v] = a
            if a > lt_threshold(w, np.uint64(v)):
                active[v] = 1
                queue[tail] = v
                tail += 1
    return tail, ntouched


@njit(cache=True)
def _ic_range(out_indptr, out_dst, out_prob, seeds, worlds, act, q, counts, r0, r1):
    for r in range(r0, r1):
        tail = _ic_world(out_indptr, out_dst, out_prob, worlds[r], seeds, act, q, 0)
        counts[r] = tail
        for i in range(tail):
            act[q[i]] = 0


@njit(cache=True)
def _lt_range(out_indptr, out_weight, out_dst, seeds, worlds, act, a, q, t, counts, r0, r1):
    for r in range(r0, r1):
        tail, nt = _lt_world(out_indptr, out_weight, out_dst, worlds[r], seeds, act, a, q, 0, t, 0)
        counts[r] = tail
        for i in range(tail):
            act[q[i]] = 0
        for i in range(nt):
            a[t[i]] = 0


@njit(parallel=True, cache=True)
def _ic_counts(out_indptr, out_dst, out_prob, seeds, worlds, active, queue, counts):
    chunks = active.shape[0]
    runs = worlds.shape[0]
    for c in prange(chunks):
        _ic_range(out_indptr, out_dst, out_prob, seeds, worlds, active[c], queue[c], counts,
                  c * runs // chunks, (c + 1) * runs // chunks)


@njit(parallel=True, cache=True)
def _lt_counts(out_indptr, out_weight, out_dst, seeds, worlds, active, acc, queue, touched, counts):
    chunks = active.shape[0]
    runs = worlds.shape[0]
    for c in prange(chunks):
        _lt_range(out_indptr, out_weight, out_dst, seeds, worlds, active[c], acc[c], queue[c], touched[c], counts,
                  c * runs // chunks, (c + 1) * runs // chunks)


#: below this many (runs x (n + m)) a Monte-Carlo batch runs on one thread: waking a thread pool
#: costs more than the work (tens of milliseconds with some OpenMP runtimes)
PARALLEL_MIN_WORK = 4_000_000


def choose_chunks(threads: int, runs: int, n: int, m: int) -> int:
    """Workers for a Monte-Carlo batch: all threads for large work, one for tiny graphs."""
    return int(max(1, min(threads, runs, (runs * (n + m)) // PARALLEL_MIN_WORK)))


def cpu_state_bytes(n: int, model: str) -> int:
    """Host bytes of the per-thread state of one Monte-Carlo worker."""
    return n * (1 + 4) if model == "IC" else n * (1 + 8 + 4 + 4)


class Simulator:
    """Monte-Carlo workers for one graph and model: ``chunks`` rows of state (allocated once, left clean
    by every run) that successive batches of worlds reuse."""

    def __init__(self, out_indptr, out_dst, weights, model: str, chunks: int):
        self.out_indptr, self.out_dst, self.weights, self.model = out_indptr, out_dst, weights, model
        n = out_indptr.shape[0] - 1
        self.chunks = max(1, int(chunks))
        # Rows padded to whole cache lines so that workers never share one (no false sharing).
        self.active = _rows(self.chunks, n, np.uint8, zero=True)
        self.queue = _rows(self.chunks, n, np.int32)
        if model == "LT":
            self.acc = _rows(self.chunks, n, np.int64, zero=True)
            self.touched = _rows(self.chunks, n, np.int32)

    def counts(self, seeds, worlds) -> np.ndarray:
        """Activated-set size of ``seeds`` in each world of ``worlds`` (parallel over the workers)."""
        runs = worlds.shape[0]
        chunks = min(self.chunks, runs)
        counts = np.empty(runs, dtype=np.int64)
        g = (self.out_indptr, self.out_dst, self.weights)
        if self.model == "IC":
            if chunks == 1:
                _ic_range(*g, seeds, worlds, self.active[0], self.queue[0], counts, 0, runs)
            else:
                _ic_counts(*g, seeds, worlds, self.active[:chunks], self.queue[:chunks], counts)
        else:
            g = (self.out_indptr, self.weights, self.out_dst)
            if chunks == 1:
                _lt_range(*g, seeds, worlds, self.active[0], self.acc[0], self.queue[0], self.touched[0], counts,
                          0, runs)
            else:
                _lt_counts(*g, seeds, worlds, self.active[:chunks], self.acc[:chunks], self.queue[:chunks],
                           self.touched[:chunks], counts)
        return counts


def counts_cpu(out_indptr, out_dst, weights, seeds, worlds, model: str, chunks: int) -> np.ndarray:
    """Activated-set size of ``seeds`` in each world of ``worlds`` (parallel over ``chunks`` workers)."""
    chunks = max(1, min(int(chunks), worlds.shape[0]))
    return Simulator(out_indptr, out_dst, weights, model, chunks).counts(seeds, worlds)


def _rows(chunks: int, n: int, dtype, zero: bool = False) -> np.ndarray:
    """A (chunks, n) view whose rows start 128 bytes apart or more (cache-line padded)."""
    itemsize = np.dtype(dtype).itemsize
    pad = -(-(n * itemsize + 128) // 128) * 128 // itemsize
    full = (np.zeros if zero else np.empty)((chunks, pad), dtype=dtype)
    return full[:, :n]


class WorldState:
    """Activation state of one world across calls (adaptive replay, or a single simulation)."""

    def __init__(self, out_indptr, out_dst, weights, model: str, world_seed: int):
        self.out_indptr, self.out_dst, self.weights, self.model = out_indptr, out_dst, weights, model
        self.world = np.uint64(int(world_seed) & ((1 << 64) - 1))
        n = out_indptr.shape[0] - 1
        self.active = np.zeros(n, dtype=np.uint8)
        self.queue = np.empty(n, dtype=np.int32)
        self.tail = 0
        if model == "LT":
            self.acc = np.zeros(n, dtype=np.int64)
            self.touched = np.empty(n, dtype=np.int32)
            self.ntouched = 0

    def activate(self, seeds: np.ndarray) -> int:
        """Seed ``seeds`` (int64 internal ids) and diffuse; returns the number of newly active users."""
        before = self.tail
        if self.model == "IC":
            self.tail = _ic_world(self.out_indptr, self.out_dst, self.weights, self.world, seeds, self.active,
                                  self.queue, self.tail)
        else:
            self.tail, self.ntouched = _lt_world(self.out_indptr, self.weights, self.out_dst, self.world, seeds,
                                                 self.active, self.acc, self.queue, self.tail, self.touched,
                                                 self.ntouched)
        return int(self.tail - before)

    def activated(self) -> np.ndarray:
        """Sorted internal ids of every active user."""
        return np.sort(self.queue[: self.tail].astype(np.int64))
