"""Reference greedy for quality tests: CELF (Leskovec et al. 2007) with Monte-Carlo spread estimates.

Spreads are averages over a fixed sample of ``worlds`` hash-defined diffusion worlds (common random
numbers: every candidate is scored on the same worlds), so the estimated spread is a monotone
submodular function and CELF's lazy evaluation returns exactly the plain greedy on it. Worlds
follow ``gpucore.random.worlds``: IC arc e live iff ``ic_live(w, e, p_e)``; LT node v active once
the fixed-point weights of its active in-arcs sum above ``lt_threshold(w, v)``. World r of the
sample is ``mix(seed, ORACLE, 1 << 32 | r)`` (disjoint from the oracle's own run seeds).

Only for small graphs: the first CELF pass simulates every node on every world.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit, prange

from gpucore.random import Stream, mix3
from gpucore.random.worlds import ic_live, lt_fixed_weight, lt_threshold


@njit(cache=True)
def _simulate(out_indptr, out_dst, prob, qfix, lt, seeds, ws, active, acc, queue):
    """Activated count of ``seeds`` in world ``ws`` (arrays are scratch, returned cleared)."""
    head = 0
    tail = 0
    for s in seeds:
        if not active[s]:
            active[s] = 1
            queue[tail] = s
            tail += 1
    while head < tail:
        u = queue[head]
        head += 1
        for e in range(out_indptr[u], out_indptr[u + 1]):
            v = out_dst[e]
            if active[v]:
                continue
            if lt:
                acc[v] += qfix[e]
                if acc[v] > lt_threshold(ws, np.uint64(v)):
                    active[v] = 1
                    queue[tail] = v
                    tail += 1
            elif ic_live(ws, np.uint64(e), prob[e]):
                active[v] = 1
                queue[tail] = v
                tail += 1
    for i in range(tail):
        u = queue[i]
        active[u] = 0
        if lt:
            for e in range(out_indptr[u], out_indptr[u + 1]):
                acc[out_dst[e]] = 0
    return tail


@njit(parallel=True, cache=True)
def _mean_spreads(out_indptr, out_dst, prob, qfix, lt, base, candidates, worlds):
    """Mean spread of base + {c} over the worlds, for every candidate c (-1: base alone)."""
    n = out_indptr.shape[0] - 1
    out = np.zeros(candidates.shape[0], dtype=np.float64)
    for ci in prange(candidates.shape[0]):
        active = np.zeros(n, dtype=np.uint8)
        acc = np.zeros(n, dtype=np.int64)
        queue = np.empty(n, dtype=np.int64)
        seeds = np.empty(base.shape[0] + 1, dtype=np.int64)
        seeds[: base.shape[0]] = base
        m = base.shape[0]
        if candidates[ci] >= 0:
            seeds[m] = candidates[ci]
            m += 1
        total = 0
        for r in range(worlds.shape[0]):
            total += _simulate(out_indptr, out_dst, prob, qfix, lt, seeds[:m], worlds[r], active, acc, queue)
        out[ci] = total / worlds.shape[0]
    return out


def world_sample(seed: int, worlds: int) -> np.ndarray:
    return np.array([mix3(np.uint64(seed), np.uint64(int(Stream.ORACLE)), np.uint64((1 << 32) | r))
                     for r in range(worlds)], dtype=np.uint64)


def celf(graph, k: int, model: str = "IC", worlds: int = 200, seed: int = 0) -> dict:
    """CELF greedy: ``{"seed_ids": [...], "spreads": [sample spread after each pick]}``."""
    model = model.upper()
    _in_w, out_w = graph.edge_probabilities(model)
    out_w = np.ascontiguousarray(out_w, dtype=np.float32)
    qfix = np.array([lt_fixed_weight(w) for w in out_w], dtype=np.int64) if model == "LT" else np.zeros(1, np.int64)
    lt = model == "LT"
    ws = world_sample(seed, worlds)
    args = (np.asarray(graph.out_indptr, dtype=np.int64), np.asarray(graph.out_dst, dtype=np.int64), out_w, qfix, lt)
    first = _mean_spreads(*args, np.zeros(0, np.int64), np.arange(graph.n, dtype=np.int64), ws)
    heap = [(-g, v, 0) for v, g in enumerate(first)]  # (-gain, node, round the gain was computed for)
    heapq.heapify(heap)
    chosen, spreads, current = [], [], 0.0
    while len(chosen) < k and heap:
        neg, v, when = heapq.heappop(heap)
        if when == len(chosen):
            chosen.append(v)
            current += -neg
            spreads.append(current)
            continue
        base = np.array(chosen, dtype=np.int64)
        gain = _mean_spreads(*args, base, np.array([v], dtype=np.int64), ws)[0] - current
        heapq.heappush(heap, (-gain, v, len(chosen)))
    return {"seed_ids": chosen, "spreads": spreads}
