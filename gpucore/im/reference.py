"""Reference greedy for quality tests: CELF (Leskovec et al. 2007) with Monte-Carlo spread estimates.

Spreads are averages over a fixed sample of ``worlds`` hash-defined diffusion worlds (common random
numbers: every candidate is scored on the same worlds), so the estimated spread is a monotone
submodular function and CELF's lazy evaluation returns exactly the plain greedy on it. Worlds
follow ``gpucore.random.worlds`` and are simulated by the oracle's CPU code (the reference is a
different *algorithm*, greedy on Monte-Carlo estimates, checked against IMM). World r of the
sample is ``mix(seed, ORACLE, 1 << 32 | r)`` (disjoint from the oracle's own run seeds).

Only for small graphs: the first CELF pass simulates every node on every world.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit, prange

from gpucore.oracle.cpu import _ic_range, _lt_range
from gpucore.random import Stream, mix3


@njit(parallel=True, cache=True)
def _mean_spreads(out_indptr, out_dst, weights, lt, base, candidates, worlds):
    """Mean spread of base + {c} over the worlds, for every candidate c (-1: base alone).

    The diffusion of one world is the oracle's (``gpucore.oracle.cpu``), run per candidate.
    """
    n = out_indptr.shape[0] - 1
    runs = worlds.shape[0]
    out = np.zeros(candidates.shape[0], dtype=np.float64)
    for ci in prange(candidates.shape[0]):
        active = np.zeros(n, dtype=np.uint8)
        queue = np.empty(n, dtype=np.int32)
        counts = np.empty(runs, dtype=np.int64)
        seeds = np.empty(base.shape[0] + 1, dtype=np.int64)
        seeds[: base.shape[0]] = base
        m = base.shape[0]
        if candidates[ci] >= 0:
            seeds[m] = candidates[ci]
            m += 1
        if lt:
            acc = np.zeros(n, dtype=np.int64)
            touched = np.empty(n, dtype=np.int32)
            _lt_range(out_indptr, weights, out_dst, seeds[:m], worlds, active, acc, queue, touched, counts, 0, runs)
        else:
            _ic_range(out_indptr, out_dst, weights, seeds[:m], worlds, active, queue, counts, 0, runs)
        out[ci] = counts.sum() / runs
    return out


def world_sample(seed: int, worlds: int) -> np.ndarray:
    return np.array([mix3(np.uint64(seed), np.uint64(int(Stream.ORACLE)), np.uint64((1 << 32) | r))
                     for r in range(worlds)], dtype=np.uint64)


def celf(graph, k: int, model: str = "IC", worlds: int = 200, seed: int = 0) -> dict:
    """CELF greedy: ``{"seed_ids": [...], "spreads": [sample spread after each pick]}``."""
    model = model.upper()
    _in_w, out_w = graph.edge_probabilities(model)
    out_w = np.ascontiguousarray(out_w, dtype=np.float32)
    ws = world_sample(seed, worlds)
    args = (np.asarray(graph.out_indptr, dtype=np.int64), np.asarray(graph.out_dst), out_w, model == "LT")
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
