"""The CPU backend of DiFuseR (NumPy + Numba): the reference the CUDA kernels are tested against.

Same registers, same keys, same fixpoints as the CUDA backend (``gpucore.im.sketch.cuda``); only the
order of work differs, and the results do not depend on it:

- ``local_arcs``: the engine's arcs are its local graph (``gpucore.im.sketch.local``): the arcs live in
  one of its worlds (``live_anywhere``), each with its word (xor hash, or global id for the keyed coin).
- ``fill``: Algorithm 1 with the pitfall-3 fix: every register that is not -1 restarts at
  ``clz64(h_r(u))``; ``prange`` over vertices.
- ``simulate``: Algorithm 2, pull-based sweeps in place (``prange`` over u, then its out-arcs, then
  the worlds, so a sweep reads u's and v's rows contiguously) until a sweep changes no register;
  after the first sweep only vertices with an out-neighbour that grew in the previous sweep pull.
  The result is the least fixpoint of ``M_u = max(M_u, M_v over arcs live in that world)`` over the
  non-visited registers: unique, so neither the sweep order nor in-place reads of values written in
  the same sweep change it.
- ``cascade``: Algorithm 3's result, the forward closure from the seed in every world (the seed is set
  to -1 in every world first): ``prange`` over chunks of worlds, a depth-first search per world
  that sets reached registers to -1. The GPU's merged queue of distinct vertices reaches the same
  closure.
- ``visited_count``, ``scores`` (sum over worlds of the estimator's terms), ``argmax`` (ties to the
  lowest id, chosen seeds excluded).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from gpucore.im.sketch.arcs import arc_hashes, thresholds
from gpucore.im.sketch.hashing import live, murmur_seed, register_start
from gpucore.im.sketch.layout import REGISTER_DTYPE, VISITED
from gpucore.im.sketch.local import LocalArcs, compact, live_anywhere


@njit(parallel=True, cache=True)
def fill(registers, register_keys):
    """Algorithm 1: every non-visited register restarts at clz64(h_r(u))."""
    n, worlds = registers.shape
    for u in prange(n):
        for j in range(worlds):
            if registers[u, j] != VISITED:
                registers[u, j] = register_start(register_keys[j], u)


@njit(parallel=True, cache=True)
def simulate_sweep(indptr, dst, words, thr, live_keys, keyed, registers, dirty, changed):
    """One pull sweep of Algorithm 2 in place over the vertices with an out-neighbour in ``dirty``
    (all of them when ``dirty`` is None); changed[u] = 1 when a register of u grew."""
    n, worlds = registers.shape
    for u in prange(n):
        changed[u] = 0
        if dirty is not None:
            stale = False
            for e in range(indptr[u], indptr[u + 1]):
                if dirty[dst[e]]:
                    stale = True
                    break
            if not stale:
                continue
        grew = False
        for e in range(indptr[u], indptr[u + 1]):
            v = dst[e]
            if keyed:  # the coin costs a hash: test it only where the neighbour's register is larger
                for j in range(worlds):
                    mu = registers[u, j]
                    mv = registers[v, j]
                    if mu != VISITED and mv > mu and live(keyed, live_keys[j], words[e], thr[e]):
                        registers[u, j] = mv
                        grew = True
            else:  # branch-free over the row (32-bit keys and hashes): the loop vectorises
                h = words[e]
                w = thr[e]
                for j in range(worlds):
                    mu = registers[u, j]
                    mv = registers[v, j]
                    take = ((live_keys[j] ^ h) < w) & (mv > mu) & (mu != VISITED)
                    registers[u, j] = mv if take else mu
                    grew |= take
        changed[u] = grew


@njit(inline="always", cache=True)
def world_search(indptr, dst, words, thr, live_keys, keyed, registers, j, start, stack, mark, stamp):
    """Depth-first search in world j from ``start`` over live arcs into vertices not visited there;
    returns how many it reaches (start included). ``stamp == 0``: sets their registers to -1 (a
    cascade); ``stamp > 0``: marks them with it in ``mark`` and changes no register (a probe)."""
    if stamp:
        mark[start] = stamp
    else:
        registers[start, j] = VISITED
    stack[0] = start
    top = 1
    count = 1
    while top:
        top -= 1
        u = stack[top]
        for e in range(indptr[u], indptr[u + 1]):
            w = dst[e]
            if registers[w, j] == VISITED or (stamp and mark[w] == stamp):
                continue
            if live(keyed, live_keys[j], words[e], thr[e]):
                if stamp:
                    mark[w] = stamp
                else:
                    registers[w, j] = VISITED
                count += 1
                stack[top] = w
                top += 1
    return count


@njit(parallel=True, cache=True)
def cascade_worlds(indptr, dst, words, thr, live_keys, keyed, registers, seed, chunks):
    """Set every (v, world) reachable from ``seed`` to -1; returns the number of registers newly set."""
    n, worlds = registers.shape
    newly = np.zeros(chunks, dtype=np.int64)
    for c in prange(chunks):
        stack = np.empty(n, dtype=np.int32)
        for j in range(worlds * c // chunks, worlds * (c + 1) // chunks):
            if registers[seed, j] != VISITED:  # visited sets are forward-closed: nothing new otherwise
                newly[c] += world_search(indptr, dst, words, thr, live_keys, keyed, registers, j, seed, stack,
                                         stack, 0)
    return newly.sum()


@njit(parallel=True, cache=True)
def exact_gains(indptr, dst, words, thr, live_keys, keyed, registers, candidates, chunks):
    """gains[i] = the registers a cascade from candidates[i] would newly set to -1 (nothing changes)."""
    n, worlds = registers.shape
    part = np.zeros((chunks, candidates.shape[0]), dtype=np.int64)
    for c in prange(chunks):
        stack = np.empty(n, dtype=np.int32)
        mark = np.zeros(n, dtype=np.int32)
        stamp = 0
        for j in range(worlds * c // chunks, worlds * (c + 1) // chunks):
            for i in range(candidates.shape[0]):
                if registers[candidates[i], j] != VISITED:
                    stamp += 1
                    part[c, i] += world_search(indptr, dst, words, thr, live_keys, keyed, registers, j,
                                               candidates[i], stack, mark, stamp)
    return part.sum(axis=0)


@njit(parallel=True, cache=True)
def vertex_scores(registers, register_keys, table, out):
    """out[u] = sum over the worlds of table[0, 0] (visited) or table[0, M + 1] - table[1, s + 1], with
    s = clz64(h_r(u)) (computed only when table[1] is not all zero)."""
    n, worlds = registers.shape
    own = np.any(table[1] != 0)
    for u in prange(n):
        s = np.int64(0)
        for j in range(worlds):
            m = registers[u, j]
            if m == VISITED:
                s += table[0, 0]
            else:
                s += table[0, m + 1]
                if own:
                    s -= table[1, register_start(register_keys[j], u) + 1]
        out[u] = s


@njit(cache=True)
def argmax_free(scores, chosen):
    """The vertex of largest score that is not chosen (ties to the lowest id); -1 if none."""
    best = -1
    for u in range(scores.shape[0]):
        if chosen[u] == 0 and (best < 0 or scores[u] > scores[best]):
            best = u
    return best


def local_arcs(graph, live_keys, keyed: bool, seed: int) -> LocalArcs:
    """The arcs of ``graph`` live in at least one of the worlds of ``live_keys`` (``gpucore.im.sketch.local``)."""
    indptr = np.ascontiguousarray(graph.out_indptr, dtype=np.int64)
    dst = np.ascontiguousarray(graph.out_dst, dtype=np.int32)
    thr = thresholds(np.asarray(graph.out_prob), str(graph.path))
    hashes = np.zeros(1, dtype=np.uint32) if keyed else arc_hashes(indptr, dst, np.uint64(murmur_seed(seed)))
    flags = np.empty(thr.shape[0], dtype=np.uint8)
    live_anywhere(hashes, thr, live_keys, keyed, flags)
    return compact(np, int(graph.n), indptr, dst, thr, hashes, keyed, flags, np.int64)


class CPUEngine:
    """DiFuseR's registers and kernels on the CPU for the worlds of ``keys`` (a ``WorldKeys``)."""

    name = "cpu"
    mapping = None  # one layout of work: the CUDA engines' mappings do not apply
    live_bits = False

    def __init__(self, graph, keys, seed: int, backend):
        self.backend = backend
        self.n = int(graph.n)
        self.keyed = keys.keyed
        # xor world numbers fit 32 bits (the hashes' range); keyed coin prefixes are 64-bit
        self.live_keys = keys.live if self.keyed else keys.live.astype(np.uint32)
        self.register_keys = keys.register
        self.local = local_arcs(graph, self.live_keys, self.keyed, seed)
        self.indptr, self.dst, self.thr, self.words = (self.local.indptr, self.local.dst, self.local.thr,
                                                       self.local.words)
        self.registers = np.zeros((self.n, keys.count), dtype=REGISTER_DTYPE)
        self._changed = np.zeros((2, self.n), dtype=np.uint8)
        self._chunks = int(min(keys.count, 4 * numba.get_num_threads()))
        self._visited = 0

    def synchronize(self) -> None:
        pass

    def fill(self) -> None:
        fill(self.registers, self.register_keys)

    def simulate(self) -> int:
        """Sweeps until one changes nothing; returns the number of sweeps (the last one included).

        Sweep t + 1 pulls only into the vertices with an out-neighbour that grew in sweep t: any
        other vertex already read the final values of its out-neighbours, so the fixpoint is the one
        of full sweeps (Algorithm 2 as printed), reached with less work."""
        sweeps = 0
        dirty = None
        while True:
            simulate_sweep(self.indptr, self.dst, self.words, self.thr, self.live_keys, self.keyed,
                           self.registers, dirty, self._changed[sweeps % 2])
            dirty = self._changed[sweeps % 2]
            sweeps += 1
            if not dirty.any():
                return sweeps

    def cascade(self, seed: int) -> int:
        """Activate ``seed`` in every world and propagate; returns the registers newly set to -1."""
        newly = int(cascade_worlds(self.indptr, self.dst, self.words, self.thr, self.live_keys, self.keyed,
                                   self.registers, np.int64(seed), self._chunks))
        self._visited += newly
        return newly

    def visited_count(self) -> int:
        return self._visited

    def gains(self, candidates) -> np.ndarray:
        """Exact marginal gains (newly visited registers) of ``candidates`` on these worlds, int64."""
        chunks = int(min(self.registers.shape[1], numba.get_num_threads()))
        return exact_gains(self.indptr, self.dst, self.words, self.thr, self.live_keys, self.keyed, self.registers,
                           np.asarray(candidates, dtype=np.int64), chunks)

    def scores(self, table: np.ndarray) -> np.ndarray:
        out = np.empty(self.n, dtype=np.int64)
        vertex_scores(self.registers, self.register_keys, table, out)
        return out

    def argmax(self, scores, chosen: np.ndarray) -> int:
        return int(argmax_free(np.asarray(scores), chosen))

    def host_registers(self) -> np.ndarray:
        return self.registers.copy()
