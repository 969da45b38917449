"""A plain-Python DiFuseR from the documented definitions (docs/difuser.md), for the exact tests.

Independent of ``gpucore.im.sketch``'s code: worlds, live arcs, registers, cascades and the greedy
loop are rebuilt here from Murmur3 (``murmur3_32_py``, checked against published vectors), the
keyed hash ``mix_py`` and breadth-first searches over sets. Tiny graphs only.
"""

from __future__ import annotations

import math

import numpy as np

from gpucore.im.sketch.hashing import murmur3_32_py
from gpucore.random import mix_py

EDGE, X, REGISTER, COIN = 40, 41, 42, 43


def live_matrix(graph, seed: int, worlds: int, sampling: str, fasst: bool = True) -> np.ndarray:
    """live[r, e]: arc e (out-CSR position) is live in world r."""
    n, m = graph.n, graph.m
    src = np.repeat(np.arange(n), np.diff(graph.out_indptr))
    dst = np.asarray(graph.out_dst)
    w = [math.floor(float(p) * 2**31) for p in np.asarray(graph.out_prob, dtype=np.float64)]
    live = np.zeros((worlds, m), dtype=bool)
    if sampling == "keyed":
        for r in range(worlds):
            for e in range(m):
                live[r, e] = (mix_py(seed, COIN, r, e) >> 33) < w[e]
        return live
    murmur = mix_py(seed, EDGE) & 0xFFFFFFFF
    hashes = [murmur3_32_py(int(src[e]).to_bytes(4, "little") + int(dst[e]).to_bytes(4, "little"), murmur)
              & 0x7FFFFFFF for e in range(m)]
    xs = [mix_py(seed, X, i) >> 33 for i in range(worlds)]
    if fasst:
        xs = sorted(xs)
    for r in range(worlds):
        for e in range(m):
            live[r, e] = (xs[r] ^ hashes[e]) < w[e]
    return live


def register_hashes(seed: int, worlds: int, n: int) -> np.ndarray:
    """clz64(mix(seed, SKETCH_REGISTER, r, u)) for every world and vertex."""
    return np.array([[64 - mix_py(seed, REGISTER, r, u).bit_length() for u in range(n)] for r in range(worlds)])


def reach(graph, live_r, start: int, blocked) -> set:
    """Vertices reachable from ``start`` over live arcs, never entering ``blocked`` vertices."""
    seen, todo = {start}, [start]
    while todo:
        u = todo.pop()
        for e in range(graph.out_indptr[u], graph.out_indptr[u + 1]):
            v = int(graph.out_dst[e])
            if live_r[e] and v not in seen and not blocked[v]:
                seen.add(v)
                todo.append(v)
    return seen


class ReferenceSketch:
    """Registers [worlds, n] (-1 = visited) with build (fill + simulate) and cascade by definition."""

    def __init__(self, graph, seed: int, worlds: int, sampling: str, fasst: bool = True):
        self.graph, self.worlds = graph, worlds
        self.live = live_matrix(graph, seed, worlds, sampling, fasst)
        self.start = register_hashes(seed, worlds, graph.n)
        self.visited = np.zeros((worlds, graph.n), dtype=bool)
        self.registers = np.zeros((worlds, graph.n), dtype=np.int64)

    def build(self) -> None:
        for r in range(self.worlds):
            for u in range(self.graph.n):
                if not self.visited[r, u]:
                    got = reach(self.graph, self.live[r], u, self.visited[r])
                    self.registers[r, u] = max(self.start[r, w] for w in got)

    def cascade(self, s: int) -> None:
        for r in range(self.worlds):
            if not self.visited[r, s]:
                for v in reach(self.graph, self.live[r], s, self.visited[r]):
                    self.visited[r, v] = True
                    self.registers[r, v] = -1

    def scores(self, table) -> np.ndarray:
        """Per vertex: sum over the worlds of table[0][0] if visited else table[0][M + 1] - table[1][s + 1]."""
        table = np.asarray(table)
        terms = np.where(self.registers < 0, table[0, 0], table[0][self.registers + 1] - table[1][self.start + 1])
        return terms.sum(axis=0)

    def gain(self, v: int) -> int:
        """Registers a cascade from v would newly set to -1."""
        return sum(len(reach(self.graph, self.live[r], v, self.visited[r])) for r in range(self.worlds)
                   if not self.visited[r, v])


def reference_difuser(graph, k: int, seed: int, worlds: int, sampling: str, threshold: float, table,
                      fasst: bool = True, refine: int = 0) -> tuple[list[int], list[float], list[int]]:
    """Algorithm 4 with the spec's corrections: (seeds, spread after each seed, seeds after which it rebuilt).

    ``refine = L > 1``: among the L best scores (ties to the lowest id) and every earlier candidate not
    chosen, the largest exact gain wins (ties to the lowest id); every gain recomputed, nothing lazy."""
    sk = ReferenceSketch(graph, seed, worlds, sampling, fasst)
    sk.build()
    seeds, spreads, rebuilt, earlier = [], [], [0], set()
    old = 0.0
    for i in range(k):
        sc = sk.scores(table)
        free = [v for v in range(graph.n) if v not in seeds]
        top = sorted(free, key=lambda v: (-int(sc[v]), v))[: max(1, refine)]  # ties: lowest id
        if refine > 1:
            earlier = (earlier | set(top)) - set(seeds)
            s = min(earlier, key=lambda v: (-sk.gain(v), v))
        else:
            s = top[0]
        seeds.append(s)
        sk.cascade(s)
        score = sk.visited.sum() / worlds
        spreads.append(float(score))
        if i + 1 < k and (score - old) / score > threshold:
            sk.build()
            rebuilt.append(i + 1)
            old = score
    return seeds, spreads, rebuilt
