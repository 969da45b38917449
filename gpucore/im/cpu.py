"""The CPU backend of IM in Numba: gIM's keyed RR-set sampler and greedy max-cover (the reference twin).

Sampling (``CPUSampler``, the ``gim`` sampler of ``gpucore.im.engine``): ``prange`` over chunks of
consecutive set indices; each chunk writes its sets back to back into its own slice of a buffer (the
BFS queue *is* the set, so a set costs its size and no more) with a private byte array of visited
marks, cleared member by member after each round. A chunk that would overflow its slice stops at a
set boundary; the rest of that chunk runs again with a larger slice. The finished sets are copied in
order of j into the collection, so the result depends only on (run_seed, j, graph): never on thread
count or chunking. IC: the live in-arcs of a skipping node (``gpucore.im.skipping``) come from its
geometric jumps (``next_live``), of every other node from a keyed coin per arc.

Greedy max-cover (``CPUSelector``): an inverted index element -> sets, counts = uncovered sets per
element, then k * T steps, each taking the allowed element of largest count (ties to the lowest id)
and covering its sets (their members' counts drop). The argmax is a lazy max-heap of packed keys
``count << 32 | (2^32 - 1 - e)`` (the GPU's packing): counts only drop, so a stale top is
refreshed in place and the first fresh, allowed top is exactly the plain greedy's choice. Allowed:
not chosen yet, and (MRIM) its round holds fewer than k seeds.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpucore.im.skipping import ic_skip_table
from gpucore.random import Stream
from gpucore.random.geometric import skip_jump
from gpucore.random.hashing import bernoulli, index_below, mix3, mix5, step
from gpucore.random.worlds import lt_draw, lt_fixed_weight

_ROOT = np.uint64(int(Stream.ROOT))
_COIN = np.uint64(int(Stream.COIN))
_LT = np.uint64(int(Stream.LT_CHOICE))
_SKIP = np.uint64(int(Stream.SKIP))


@njit(parallel=True, cache=True)
def lt_prefix(in_indptr, lt_weight):
    """Inclusive per-node prefix sums Q of the fixed-point LT weights q = floor(w 2^40), in-CSR order."""
    n = in_indptr.shape[0] - 1
    out = np.empty(lt_weight.shape[0], dtype=np.int64)
    for v in prange(n):
        acc = np.int64(0)
        for a in range(in_indptr[v], in_indptr[v + 1]):
            acc += lt_fixed_weight(lt_weight[a])
            out[a] = acc
    return out


@njit(inline="always", cache=True)
def rr_root(seed, j, n):
    """Root of RR set j: index_below(mix(seed, ROOT, j, 0, 0), n)."""
    return index_below(mix5(np.uint64(seed), _ROOT, np.uint64(j), np.uint64(0), np.uint64(0)), n)


@njit(inline="always", cache=True)
def lt_pick(in_indptr, qcum, v, r):
    """The in-arc a of v with Q_{a-1} <= r < Q_a (binary search), or -1 when r >= Q_last."""
    lo = in_indptr[v]
    hi = in_indptr[v + 1]
    if lo == hi or qcum[hi - 1] <= r:
        return -1
    while lo < hi:  # first a with qcum[a] > r
        mid = (lo + hi) >> 1
        if qcum[mid] > r:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(inline="always", cache=True)
def next_live(hv, rlq, d, pos, i):
    """The position after ``pos`` of the next live in-arc of a skipping node (jump ``i`` of its key
    prefix ``hv = mix(seed, SKIP, s, v)``, ``gpucore.im.skipping``); >= d when there is none."""
    return pos + 1 + skip_jump(step(hv, np.uint64(i)), rlq, d)


@njit(cache=True)
def one_set(in_indptr, in_src, in_eid, in_prob, qcum, skip, lt, n, seed, rounds, j, buf, base, cap, visited):
    """Write RR set j (all rounds) to buf[base : base + size]; return size, or -1 if it exceeds cap.
    IC: the in-arcs of a node with ``skip[u] < 0`` are found by geometric jumps, of the others by coins."""
    seed = np.uint64(seed)
    root = rr_root(seed, j, n)
    size = 0
    for t in range(rounds):
        s = np.uint64(j) * np.uint64(rounds) + np.uint64(t)
        off = np.int64(t) * n
        start = size
        if size >= cap:
            return -1
        visited[root] = 1
        buf[base + size] = np.int32(root + off)
        size += 1
        failed = False
        if lt:
            v = root
            while True:
                r = lt_draw(mix5(seed, _LT, s, np.uint64(v), np.uint64(0)))
                a = lt_pick(in_indptr, qcum, v, r)
                if a < 0:
                    break
                u = in_src[a]
                if visited[u]:
                    break
                if size >= cap:
                    failed = True
                    break
                visited[u] = 1
                buf[base + size] = np.int32(u + off)
                size += 1
                v = u
        else:
            prefix = mix3(seed, _COIN, s)
            sprefix = mix3(seed, _SKIP, s)
            head = start
            while head < size and not failed:
                u = np.int64(buf[base + head]) - off
                head += 1
                beg = in_indptr[u]
                d = in_indptr[u + 1] - beg
                rlq = skip[u]  # < 0: a skipping node, whose positions ``at`` visit only its live arcs
                hv = step(sprefix, np.uint64(u)) if rlq < 0.0 else sprefix
                i = 0
                at = next_live(hv, rlq, d, np.int64(-1), i) if rlq < 0.0 else np.int64(0)
                while at < d:
                    a = beg + at
                    v = in_src[a]
                    if visited[v] == 0 and (rlq < 0.0 or bernoulli(step(prefix, np.uint64(in_eid[a])), in_prob[a])):
                        if size >= cap:
                            failed = True
                            break
                        visited[v] = 1
                        buf[base + size] = np.int32(v + off)
                        size += 1
                    i += 1
                    at = next_live(hv, rlq, d, at, i) if rlq < 0.0 else at + 1
        for q in range(start, size):  # reset only this round's marks
            visited[np.int64(buf[base + q]) - off] = 0
        if failed:
            return -1
    return size


@njit(parallel=True, cache=True)
def sample_chunks(in_indptr, in_src, in_eid, in_prob, qcum, skip, lt, n, seed, rounds, jobs_j, jobs_len, cap, buf,
                  sizes, done, used):
    """Chunk c generates sets jobs_j[c] .. jobs_j[c] + jobs_len[c] - 1 into buf[c*cap : (c+1)*cap].

    ``sizes`` gets each finished set's size (chunk c's sets at sizes[c*maxlen ...]); ``done[c]`` how
    many sets chunk c finished (it stops at the first that does not fit), ``used[c]`` elements used.
    """
    nchunks = jobs_j.shape[0]
    maxlen = sizes.shape[0] // nchunks
    for c in prange(nchunks):
        visited = np.zeros(n, dtype=np.uint8)
        base = np.int64(c) * cap
        pos = np.int64(0)
        finished = 0
        for i in range(jobs_len[c]):
            size = one_set(in_indptr, in_src, in_eid, in_prob, qcum, skip, lt, n, seed, rounds, jobs_j[c] + i, buf,
                           base + pos, cap - pos, visited)
            if size < 0:
                break
            sizes[np.int64(c) * maxlen + i] = size
            pos += size
            finished += 1
        done[c] = finished
        used[c] = pos


@njit(cache=True)
def build_inverse(offsets, nodes, universe):
    """Inverted index: element -> indices of the sets holding it (ascending), as (indptr, sets)."""
    num = offsets.shape[0] - 1
    counts = np.zeros(universe + 1, dtype=np.int64)
    for x in range(nodes.shape[0]):
        counts[nodes[x] + 1] += 1
    for e in range(universe):
        counts[e + 1] += counts[e]
    fill = counts[:-1].copy()
    sets = np.empty(nodes.shape[0], dtype=np.int32)  # set indices < 2^31 (checked by the driver)
    for i in range(num):
        for x in range(offsets[i], offsets[i + 1]):
            e = nodes[x]
            sets[fill[e]] = i
            fill[e] += 1
    return counts, sets


@njit(inline="always", cache=True)
def _key(count, e):
    """count << 32 | (2^32 - 1 - e): larger count first, then the lower id (the GPU's packing)."""
    return (np.int64(count) << 32) | (np.int64(0xFFFFFFFF) - np.int64(e))


@njit(cache=True)
def argmax_allowed(counts, taken, per_round, k, n):
    """(element, count) of the largest count among allowed elements, ties to the lowest id; (-1, -1) if none."""
    best = np.int64(-1)
    for t in range(per_round.shape[0]):
        if per_round[t] >= k:
            continue
        for u in range(n):
            e = t * n + u
            if taken[e] == 0:
                key = _key(counts[e], e)
                if key > best:
                    best = key
    if best < 0:
        return -1, -1
    return np.int64(0xFFFFFFFF) - (best & np.int64(0xFFFFFFFF)), best >> 32


@njit(cache=True)
def cover_element(offsets, nodes, inv_ptr, inv_sets, covered, counts, taken, per_round, n, e):
    """Cover the uncovered sets holding e (their members' counts drop), take e; returns the sets covered."""
    newly = 0
    for q in range(inv_ptr[e], inv_ptr[e + 1]):
        i = inv_sets[q]
        if covered[i] == 0:
            covered[i] = 1
            newly += 1
            for x in range(offsets[i], offsets[i + 1]):
                counts[nodes[x]] -= 1
    taken[e] = 1
    per_round[e // n] += 1
    return newly


@njit(cache=True)
def _sift_down(heap, size, pos):
    key = heap[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] > heap[child]:
            child += 1
        if heap[child] <= key:
            break
        heap[pos] = heap[child]
        pos = child
    heap[pos] = key


@njit(cache=True)
def greedy_steps(offsets, nodes, inv_ptr, inv_sets, covered, counts, taken, per_round, n, k, steps):
    """``steps`` greedy steps with a lazy max-heap of packed keys (counts only ever drop, so a stale
    top is refreshed and sifted; the first fresh allowed top is the plain greedy's argmax).
    Returns (chosen, gains, sets covered)."""
    universe = counts.shape[0]
    heap = np.empty(universe, dtype=np.int64)
    size = 0
    for e in range(universe):
        if taken[e] == 0 and per_round[e // n] < k:
            heap[size] = _key(counts[e], e)
            size += 1
    for pos in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, pos)
    chosen = np.full(steps, -1, dtype=np.int64)
    gains = np.full(steps, -1, dtype=np.int64)
    total = 0
    for it in range(steps):
        while size > 0:
            top = heap[0]
            e = np.int64(0xFFFFFFFF) - (top & np.int64(0xFFFFFFFF))
            if taken[e] != 0 or per_round[e // n] >= k:  # chosen, or its round is closed
                size -= 1
                heap[0] = heap[size]
                _sift_down(heap, size, 0)
                continue
            fresh = _key(counts[e], e)
            if fresh != top:  # stale: the count dropped since the key was pushed
                heap[0] = fresh
                _sift_down(heap, size, 0)
                continue
            chosen[it] = e
            gains[it] = counts[e]
            total += cover_element(offsets, nodes, inv_ptr, inv_sets, covered, counts, taken, per_round, n, e)
            break
        if chosen[it] < 0:
            break
    return chosen, gains, total


@njit(parallel=True, cache=True)
def count_hits(offsets, nodes, mark):
    """Sets holding at least one marked element."""
    num = offsets.shape[0] - 1
    hit = np.zeros(num, dtype=np.uint8)
    for i in prange(num):
        for x in range(offsets[i], offsets[i + 1]):
            if mark[nodes[x]]:
                hit[i] = 1
                break
    return hit.sum()


class CPUSampler:
    """gIM's keyed RR-set sampler on the CPU (NumPy + Numba): the ``gim`` sampler of ``gpucore.im.engine``."""

    name = "gim-cpu"

    def __init__(self, graph, model: str, rounds: int, seed: int, backend):
        import numba

        from gpucore.im.rrsets import RRCollection

        self._collection_cls = RRCollection
        self.backend = backend
        self.graph = graph
        self.model = model
        self.rounds = int(rounds)
        self.seed = np.uint64(int(seed) & ((1 << 64) - 1))
        self.n = graph.n
        self.threads = numba.get_num_threads()
        in_w, _ = graph.edge_probabilities(model)
        self.in_indptr = np.ascontiguousarray(graph.in_indptr, dtype=np.int64)
        self.in_src = np.ascontiguousarray(graph.in_src, dtype=np.int32)
        self.in_eid = np.ascontiguousarray(graph.in_eid)
        self.in_prob = np.ascontiguousarray(in_w, dtype=np.float32)
        self.lt = model == "LT"
        self.qcum = lt_prefix(self.in_indptr, self.in_prob) if self.lt else np.zeros(1, dtype=np.int64)
        self.skip = ic_skip_table(self.in_indptr, self.in_prob, model)

    def collection(self, j_begin: int):
        return self._collection_cls(np, self.backend, j_begin, self.n, self.rounds)

    def sample_batch(self, j_begin: int, count: int, mean_hint: float):
        """Sets j_begin .. j_begin+count-1: (sizes int64[count], [(first, elements), ...])."""
        sizes = np.empty(count, dtype=np.int64)
        chunks_out = []
        max_set = self.n * self.rounds
        parts = max(1, min(count, 4 * self.threads))
        jobs = [(count * c // parts, count * (c + 1) // parts) for c in range(parts)]
        jobs = [(lo, hi) for lo, hi in jobs if hi > lo]
        per_set = max(2.0, float(mean_hint)) * 1.3
        cap = 0
        while jobs:
            longest = max(hi - lo for lo, hi in jobs)
            want = int(per_set * longest) + 1024
            cap = min(max(want, 2 * cap), max_set * longest + 1)
            jobs_j = np.array([j_begin + lo for lo, _ in jobs], dtype=np.int64)
            jobs_len = np.array([hi - lo for lo, hi in jobs], dtype=np.int64)
            buf = np.empty(len(jobs) * cap, dtype=np.int32)
            chunk_sizes = np.zeros(len(jobs) * longest, dtype=np.int64)
            done = np.zeros(len(jobs), dtype=np.int64)
            used = np.zeros(len(jobs), dtype=np.int64)
            sample_chunks(self.in_indptr, self.in_src, self.in_eid, self.in_prob, self.qcum, self.skip, self.lt,
                          self.n, self.seed, self.rounds, jobs_j, jobs_len, cap, buf, chunk_sizes, done, used)
            pending = []
            for c, (lo, hi) in enumerate(jobs):
                d = int(done[c])
                if d:
                    sizes[lo : lo + d] = chunk_sizes[c * longest : c * longest + d]
                    chunks_out.append((lo, buf[c * cap : c * cap + int(used[c])]))
                if lo + d < hi:
                    pending.append((lo + d, hi))
            if pending and done.sum():
                per_set = max(per_set, float(used.sum()) / float(done.sum()) * 1.3)
            jobs = pending  # the rest of an overflowed chunk runs again with a larger slice
        return sizes, chunks_out

    def sample_into(self, coll, count: int, mean_hint: float) -> None:
        """Append the next ``count`` sets (j = coll.j_end, ...) to ``coll``."""
        sizes, chunks = self.sample_batch(coll.j_end, int(count), mean_hint)
        coll.append(sizes, chunks)

    def synchronize(self) -> None:
        pass


class CPUSelection:
    """One greedy max-cover in progress on a host collection (the ``Selection`` of ``gpucore.im.engine``)."""

    def __init__(self, coll, k: int, n: int, rounds: int):
        self.offsets = np.asarray(coll.offsets)
        self.nodes = np.asarray(coll.nodes)
        self.inv_ptr, self.inv_sets = build_inverse(self.offsets, self.nodes, n * rounds)
        self.counts = np.diff(self.inv_ptr).astype(np.int32)
        self.covered_flags = np.zeros(coll.count, dtype=np.uint8)
        self.taken = np.zeros(n * rounds, dtype=np.uint8)
        self.per_round = np.zeros(rounds, dtype=np.int64)
        self.k, self.n = int(k), int(n)
        self.covered = 0

    def argmax(self, counts):
        e, gain = argmax_allowed(np.asarray(counts), self.taken, self.per_round, self.k, self.n)
        if e < 0:
            raise RuntimeError("greedy: no element left to choose (internal error)")
        return int(e), int(gain)

    def cover(self, element: int) -> int:
        newly = int(cover_element(self.offsets, self.nodes, self.inv_ptr, self.inv_sets, self.covered_flags,
                                  self.counts, self.taken, self.per_round, self.n, np.int64(element)))
        self.covered += newly
        return newly


class CPUSelector:
    """Greedy max-cover on the CPU: inverted index element -> sets, lazy max-heap of counts."""

    name = "greedy-cpu"

    def __init__(self, n: int, rounds: int, backend):
        self.n, self.rounds, self.backend = int(n), int(rounds), backend

    def start(self, coll, k: int) -> CPUSelection:
        return CPUSelection(coll, k, self.n, self.rounds)

    def coverage(self, coll, elements) -> int:
        """Sets of ``coll`` holding at least one of ``elements``."""
        mark = np.zeros(self.n * self.rounds, dtype=np.uint8)
        mark[np.asarray(elements, dtype=np.int64)] = 1
        return int(count_hits(np.asarray(coll.offsets), np.asarray(coll.nodes), mark))

    def coverage_bound(self, coll, k: int) -> int:
        """Sum over rounds of the k largest element counts (``gpucore.im.rrsets.top_k_sum``)."""
        from gpucore.im.rrsets import top_k_sum

        return top_k_sum(np, self._occurrences(coll), self.n, self.rounds, int(k))

    def counts(self, coll) -> np.ndarray:
        """int32 array: the sets of ``coll`` holding each element."""
        return self._occurrences(coll).astype(np.int32)

    def _occurrences(self, coll) -> np.ndarray:
        return np.bincount(np.asarray(coll.nodes), minlength=self.n * self.rounds)

    def greedy(self, coll, k: int):
        sel = self.start(coll, k)
        steps = int(k) * self.rounds
        chosen, gains, covered = greedy_steps(sel.offsets, sel.nodes, sel.inv_ptr, sel.inv_sets, sel.covered_flags,
                                              sel.counts, sel.taken, sel.per_round, self.n, int(k), steps)
        if steps and chosen[-1] < 0:
            raise RuntimeError("greedy: no element left to choose (internal error)")
        return chosen, gains, int(covered)
