"""The fused sampler on the CPU (Numba): many reverse traversals share one frontier of bit masks.

Each worker (a ``prange`` iteration) runs one batch of B = 32 W traversals at a time over its own
masks, W 32-bit words per vertex of the traversal layout (``layout.py``):

- ``vis[x]``: the traversals that have reached x; a bit is set when x is *discovered* (root
  injection or a successful coin), never later, so a vertex is expanded at most once per traversal
  and no (in-arc, traversal) pair gets a second coin (spec pitfall 2);
- ``nxt[x]``: the traversals that reached x and have not yet been expanded from it; x is in a
  frontier list exactly while ``nxt[x]`` is not empty (pushed when it turns non-empty), so every
  level lists each vertex once and expanding x reads its in-row once for all its traversals;
- ``touched``: the words of ``vis`` that are not zero (one entry each), i.e. every (vertex, word)
  where some traversal of the batch stands.

A level takes each listed x, clears ``nxt[x]`` into ``fr`` and, for every in-arc a = (y -> x) and every
traversal b in ``fr`` that has not reached y, flips b's coin of a, ``bernoulli(step(mix(seed, COIN, s_b),
eid_a), p_a)``; the kept bits are set in ``vis[y]`` and ``nxt[y]``. At a skipping node x
(``gpucore.im.skipping``) each traversal b in ``fr`` walks its own geometric jumps over x's in-row
instead (keys ``mix(seed, SKIP, s_b, old_id(x), i)``), so the row is not read arc by arc. LT: each b in ``fr`` draws its own
in-arc of x, ``lt_draw(mix(seed, LT_CHOICE, s_b, old_id(x), 0))`` against the row's fixed-point prefix
sums, and moves there unless it was there before. A traversal has ended when no ``nxt`` word holds
its bit after a level (the OR of the ``nxt`` masks of the next list). Once the ended traversals
reach the tail threshold (all of them for tail "none", a quarter of the batch for "refill") the
worker writes their sets (a pass over ``touched``), clears their bits and gives the free slots the
next traversals of its range. The keyed draws make the reachable set of every traversal the one
the unfused sampler (``gpucore.im.cpu.one_set``) finds: sets are equal whatever the batching.

A worker writes sets into its slice of an output buffer; if the ended traversals do not fit it
stops, clears its masks, and its unfinished traversals run again with a larger slice.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpucore.backend import available_ram
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.cpu import CPUSampler, lt_pick, next_live
from gpucore.im.fused.batching import FusedOptions, dispatch_order, pieces, set_roots
from gpucore.im.fused.layout import traversal_graph
from gpucore.im.fused.stats import KERNEL_COUNTERS, Instrumented, SamplerStats
from gpucore.random import Stream
from gpucore.random.hashing import bernoulli, mix3, mix5, step
from gpucore.random.worlds import lt_draw

_COIN = np.uint64(int(Stream.COIN))
_LT = np.uint64(int(Stream.LT_CHOICE))
_SKIP = np.uint64(int(Stream.SKIP))
_DEBRUIJN = np.array([0, 1, 28, 2, 29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4, 8, 31, 27, 13, 23, 21, 19, 16, 7, 26,
                      12, 18, 6, 11, 5, 10, 9], dtype=np.int64)
(_C_ENTRIES, _C_BITS, _C_READS, _C_LEVELS, _C_PEAK, _C_EXTRACT, _C_TRAV, _C_UNFUSED,
 _C_JUMPS, _C_RING, _C_EVICT) = range(len(KERNEL_COUNTERS))  # _C_RING, _C_EVICT: CUDA only, always 0 here


@njit(inline="always", cache=True)
def _ctz(x):
    """Index of the lowest set bit of a non-zero 32-bit value (held in an int64)."""
    return _DEBRUIJN[(((x & -x) * 0x077CB531) & 0xFFFFFFFF) >> 27]


@njit(inline="always", cache=True)
def _popc(x):
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


@njit(inline="always", cache=True)
def _discover(vis, nxt, touched, ntouch, nlist, nn, y, W, w, old, kept):
    """Traversals ``kept`` (bits of word w, none of them in vis) reach y; returns (ntouch, nn)."""
    word = y * W + w
    if old == 0:
        touched[ntouch] = word
        ntouch += 1
    vis[word] = np.uint32(old | kept)
    empty = True
    for k in range(W):
        if nxt[y * W + k] != 0:
            empty = False
            break
    if empty:
        nlist[nn] = y
        nn += 1
    nxt[word] = np.uint32(np.int64(nxt[word]) | kept)
    return ntouch, nn


@njit(cache=True)
def run_worker(ind, src, eid, warc, qcum, skip, lt, n, W, seed, T, j_begin, old_of_new, roots, order, lo, hi, thr,
               vis, nxt, lists, touched, out, out_lo, out_cap, base, trav_start, trav_size, counters):
    """Traversals order[lo:hi] (ids i = set * T + t) in batches of 32 W; returns 0, or -1 if out filled.

    Sets go to out[out_lo : out_lo + out_cap]; traversal i gets trav_start[i] = base + position and
    trav_size[i]. ``vis``, ``nxt`` are all zero on entry and on return (also after -1).
    """
    B = 32 * W
    slot_tr = np.full(B, -1, dtype=np.int64)
    slot_key = np.zeros(B, dtype=np.uint64)
    slot_skey = np.zeros(B, dtype=np.uint64)  # IC: mix(seed, SKIP, s) of the slot's traversal
    slot_off = np.zeros(B, dtype=np.int64)
    fr = np.zeros(W, dtype=np.int64)
    fin = np.zeros(W, dtype=np.int64)
    cnt = np.zeros(B, dtype=np.int64)
    pos = np.zeros(B, dtype=np.int64)
    ntouch = 0
    p = 0
    nn = 0
    disp = lo
    out_pos = out_lo
    out_end = out_lo + out_cap
    while True:
        # ---- refill free slots from the range (the first time: all of them) into list p ^ 1 ----
        nxt_list = lists[p ^ 1]
        for b in range(B):
            if slot_tr[b] >= 0 or disp >= hi:
                continue
            i = order[disp]
            disp += 1
            t = i % T
            s = np.uint64(j_begin + i // T) * np.uint64(T) + np.uint64(t)
            slot_tr[b] = i
            slot_key[b] = s if lt else mix3(seed, _COIN, s)
            slot_skey[b] = mix3(seed, _SKIP, s)
            slot_off[b] = t * n
            x = roots[i // T]
            w = b >> 5
            ntouch, nn = _discover(vis, nxt, touched, ntouch, nxt_list, nn, x, W, w, np.int64(vis[x * W + w]),
                                   np.int64(1) << (b & 31))
        p ^= 1
        ncur = nn
        if ncur == 0:
            return 0
        # ---- one level: expand list p into list p ^ 1 ----
        cur = lists[p]
        nlist = lists[p ^ 1]
        nn = 0
        counters[_C_LEVELS] += 1
        if ncur > counters[_C_PEAK]:
            counters[_C_PEAK] = ncur
        for q in range(ncur):
            x = np.int64(cur[q])
            bits = 0
            for w in range(W):
                fr[w] = np.int64(nxt[x * W + w])
                nxt[x * W + w] = 0
                bits += _popc(fr[w])
            if bits == 0:
                continue
            counters[_C_ENTRIES] += 1
            counters[_C_BITS] += bits
            rlq = skip[x] if not lt else 0.0
            if rlq >= 0.0:  # a skipping node's row is not read: its jumps are counted instead
                counters[_C_READS] += ind[x + 1] - ind[x]
            if lt:
                vid = np.uint64(old_of_new[x])
                for w in range(W):
                    m = fr[w]
                    while m:
                        b = _ctz(m)
                        m &= m - 1
                        r = lt_draw(mix5(seed, _LT, slot_key[w * 32 + b], vid, np.uint64(0)))
                        a = lt_pick(ind, qcum, x, r)
                        if a < 0:
                            continue
                        y = np.int64(src[a])
                        old = np.int64(vis[y * W + w])
                        bit = np.int64(1) << b
                        if old & bit:
                            continue
                        ntouch, nn = _discover(vis, nxt, touched, ntouch, nlist, nn, y, W, w, old, bit)
            elif rlq < 0.0:  # a skipping node: each traversal jumps over the row on its own keys
                beg = ind[x]
                d = ind[x + 1] - beg
                vid = np.uint64(old_of_new[x])
                for w in range(W):
                    m = fr[w]
                    while m:
                        b = _ctz(m)
                        m &= m - 1
                        bit = np.int64(1) << b
                        hv = step(slot_skey[w * 32 + b], vid)
                        i = 0
                        at = next_live(hv, rlq, d, np.int64(-1), i)
                        while at < d:
                            y = np.int64(src[beg + at])
                            old = np.int64(vis[y * W + w])
                            if not old & bit:
                                ntouch, nn = _discover(vis, nxt, touched, ntouch, nlist, nn, y, W, w, old, bit)
                            i += 1
                            at = next_live(hv, rlq, d, at, i)
                        counters[_C_JUMPS] += i + 1
            else:
                for a in range(ind[x], ind[x + 1]):
                    y = np.int64(src[a])
                    e = np.uint64(eid[a])
                    pa = warc[a]
                    for w in range(W):
                        f = fr[w]
                        if f == 0:
                            continue
                        old = np.int64(vis[y * W + w])
                        cand = f & ~old
                        if cand == 0:
                            continue
                        if pa >= 1.0:
                            kept = cand
                        else:
                            kept = np.int64(0)
                            if pa > 0.0:
                                while cand:
                                    b = _ctz(cand)
                                    cand &= cand - 1
                                    if bernoulli(step(slot_key[w * 32 + b], e), pa):
                                        kept |= np.int64(1) << b
                        if kept:
                            ntouch, nn = _discover(vis, nxt, touched, ntouch, nlist, nn, y, W, w, old, kept)
        # ---- ended traversals: no next-list mask holds their bit ----
        for w in range(W):
            fin[w] = 0
        for b in range(B):
            if slot_tr[b] >= 0:
                fin[b >> 5] |= np.int64(1) << (b & 31)
        nocc = 0
        for w in range(W):
            nocc += _popc(fin[w])
        for q in range(nn):
            y = np.int64(nlist[q])
            for w in range(W):
                fin[w] &= ~np.int64(nxt[y * W + w])
        nfin = 0
        for w in range(W):
            nfin += _popc(fin[w])
        if nfin == 0 or (nfin < nocc and nfin < thr):
            continue
        # ---- write the ended traversals' sets, clear their bits ----
        for b in range(B):
            cnt[b] = 0
        unfused = 0
        for k in range(ntouch):
            word = touched[k]
            w = word % W
            m = np.int64(vis[word]) & fin[w]
            if m:
                x = word // W
                if lt or skip[x] >= 0.0:  # an unfused sampler reads no skipping node's row either
                    unfused += _popc(m) * (ind[x + 1] - ind[x])
            while m:
                b = _ctz(m)
                m &= m - 1
                cnt[w * 32 + b] += 1
        need = 0
        for b in range(B):
            if (fin[b >> 5] >> (b & 31)) & 1:
                need += cnt[b]
        if out_pos + need > out_end:  # out of room: clear everything, the caller re-runs the rest
            for k in range(ntouch):
                vis[touched[k]] = 0
                nxt[touched[k]] = 0
            return -1
        for b in range(B):
            if (fin[b >> 5] >> (b & 31)) & 1:
                pos[b] = out_pos
                trav_start[slot_tr[b]] = base + out_pos
                trav_size[slot_tr[b]] = cnt[b]
                out_pos += cnt[b]
                slot_tr[b] = -1
        keep = 0
        for k in range(ntouch):
            word = touched[k]
            w = word % W
            v = np.int64(vis[word])
            m = v & fin[w]
            if m:
                u = old_of_new[word // W]
                while m:
                    b = _ctz(m)
                    m &= m - 1
                    slot = w * 32 + b
                    out[pos[slot]] = u + slot_off[slot]
                    pos[slot] += 1
                v &= ~fin[w]
                vis[word] = np.uint32(v)
            if v != 0:
                touched[keep] = word
                keep += 1
        ntouch = keep
        counters[_C_EXTRACT] += 1
        counters[_C_TRAV] += nfin
        counters[_C_UNFUSED] += unfused


@njit(parallel=True, cache=True)
def run_workers(ind, src, eid, warc, qcum, skip, lt, n, W, seed, T, j_begin, old_of_new, roots, order, los, his, thr,
                vis, nxt, lists, touched, out, out_cap, base, trav_start, trav_size, counters, status):
    """Worker k runs order[los[k]:his[k]] with scratch row k and out[k*out_cap : (k+1)*out_cap]."""
    for k in prange(los.shape[0]):
        status[k] = run_worker(ind, src, eid, warc, qcum, skip, lt, n, W, seed, T, j_begin, old_of_new, roots, order,
                               los[k], his[k], thr, vis[k], nxt[k], lists[k], touched[k], out, k * out_cap, out_cap,
                               base, trav_start, trav_size, counters[k])


@njit(parallel=True, cache=True)
def gather_sets(buf, trav_start, trav_size, dest):
    """Traversal i's elements buf[trav_start[i]:+trav_size[i]] to out[dest[i]:], in order of i."""
    out = np.empty(dest[-1], dtype=np.int32)
    for i in prange(trav_start.shape[0]):
        s = trav_start[i]
        d = dest[i]
        for k in range(trav_size[i]):
            out[d + k] = buf[s + k]
    return out


def scratch_bytes(n: int, words: int) -> int:
    """Host bytes of one worker's masks and lists: vis + nxt + touched words + two frontier lists."""
    return int(n) * words * (4 + 4 + 8) + 2 * 4 * int(n)


class FusedCPUSampler(Instrumented, CPUSampler):
    """The fused sampler on the CPU (module docstring): the ``fused`` sampler of ``gpucore.im.engine`` for the
    CPU backend; ``CPUSampler`` holds its host graph arrays and collections (its own sampling is not used)."""

    name = "fused-cpu"

    def __init__(self, graph, model: str, rounds: int, seed: int, backend, batch_width: int = 64, order: str = "none",
                 sorted_sources: bool = True, tail: str = "refill", workers: int | None = None,
                 memory_limit: int | None = None, evict: str = "auto"):
        self.options = FusedOptions(batch_width, order, sorted_sources, tail)
        if evict not in ("auto", "never"):  # auto's rule never evicts here: there is no team pass on the CPU
            raise GpucoreError(f"--evict {evict!r}: the CPU fused sampler evicts nothing (auto or never); "
                               f"'always' needs the CUDA sampler's team pass")
        super().__init__(graph, model, rounds, seed, backend)
        W = self.options.words
        per_worker = scratch_bytes(self.n, W)
        budget = int(memory_limit) if memory_limit is not None else int(available_ram() * 0.5)
        if per_worker > budget:
            raise OutOfMemoryError(
                f"fused sampler: one batch of {batch_width} traversals needs {format_bytes(per_worker)} of masks "
                f"for {self.n:,} vertices, {format_bytes(budget)} available; lower --batch-width or use --sampler gim"
            )
        self.workers = int(max(1, min(workers or self.threads, budget // per_worker)))
        self.tg = traversal_graph(self.in_indptr, self.in_src, self.in_eid, self.in_prob, self.qcum, self.skip, self.lt,
                                  graph, order)
        self._scratch = None
        self._stats = SamplerStats(self.options, "cpu", self.workers, self.workers * per_worker, 4)
        self._stats.reorder_seconds = self.tg.seconds

    def _scratch_arrays(self):
        if self._scratch is None:
            n, W, k = self.n, self.options.words, self.workers
            self._scratch = (np.zeros((k, n * W), np.uint32), np.zeros((k, n * W), np.uint32),
                             np.zeros((k, 2, max(1, n)), np.int32), np.zeros((k, n * W), np.int64))
        return self._scratch

    def sample_into(self, coll, count: int, mean_hint: float) -> None:
        """Append sets j = coll.j_end .. coll.j_end + count - 1 to ``coll``, in order of j."""
        for _, sets in pieces(int(count), self.rounds):
            sizes, elements = self._piece(coll.j_end, sets, float(mean_hint or coll.mean_size))
            coll.append(sizes, [(0, elements)])

    def _piece(self, j_begin: int, sets: int, mean_hint: float):
        tg, T, W, st = self.tg, self.rounds, self.options.words, self._stats
        B = self.options.batch_width
        with st.phases.phase("roots"):
            roots = set_roots(self.seed, np.int64(j_begin), sets, np.int64(self.n), tg.new_of_old)
            order = dispatch_order(roots, T, self.options.sorts(False))
        st.add("sorted_pieces", int(self.options.sorts(False)))
        total = sets * T
        trav_start = np.full(total, -1, dtype=np.int64)
        trav_size = np.full(total, -1, dtype=np.int64)
        vis, nxt, lists, touched = self._scratch_arrays()
        per_trav = max(2.0, mean_hint / T) * 1.3
        bufs, base, cap = [], 0, 0
        pending = order
        with st.phases.phase("traverse"):
            while pending.shape[0]:
                nw = int(min(self.workers, -(-pending.shape[0] // B)))
                cuts = np.linspace(0, pending.shape[0], nw + 1).astype(np.int64)
                los, his = cuts[:-1].copy(), cuts[1:].copy()
                longest = int((his - los).max())
                cap = int(min(max(per_trav * longest + 4 * B, 2 * cap), longest * self.n + 1))
                buf = np.empty(nw * cap, dtype=np.int32)
                counters = np.zeros((nw, len(KERNEL_COUNTERS)), dtype=np.int64)
                status = np.zeros(nw, dtype=np.int64)
                run_workers(tg.in_indptr, tg.in_src, tg.in_eid, tg.in_w, tg.qcum, tg.skip, self.lt, np.int64(self.n),
                            np.int64(W), self.seed, np.int64(T), np.int64(j_begin), tg.old_of_new, roots, pending,
                            los, his, np.int64(self.options.refill_threshold), vis, nxt, lists, touched, buf,
                            np.int64(cap), np.int64(base), trav_start, trav_size, counters, status)
                for row in counters:
                    st.add_kernel_counters(row)
                bufs.append(buf)
                base += buf.shape[0]
                left = pending[trav_size[pending] < 0]
                done = pending.shape[0] - left.shape[0]
                if left.shape[0]:
                    st.add("regrowths", 1)
                    if done:
                        per_trav = max(per_trav, float(trav_size[pending][trav_size[pending] >= 0].mean()) * 1.3)
                pending = left
        with st.phases.phase("compact"):
            dest = np.zeros(total + 1, dtype=np.int64)
            np.cumsum(trav_size, out=dest[1:])
            elements = gather_sets(bufs[0] if len(bufs) == 1 else np.concatenate(bufs), trav_start, trav_size, dest)
            sizes = trav_size.reshape(sets, T).sum(axis=1)
        return sizes, elements
