"""Deterministic synthetic graphs for tests and benchmarks (hash-seeded, Numba).

- ``rmat``: R-MAT / Kronecker (Chakrabarti et al. 2004). Each arc descends ``scale`` levels of the
  adjacency matrix picking quadrant a/b/c/d with mix(seed, GENERATOR, arc, level); ids are then
  scattered by a bijection of [0, 2^scale) and folded into [0, nodes) (id - nodes when >= nodes).
- ``pa``: a directed social graph by preferential attachment with reciprocity (Price's model
  with back-links). Nodes arrive in order; node v sends about ``edges / (nodes (1 + r))`` arcs
  (at least one); each target is, with probability 1/2, the head of a uniformly chosen earlier arc
  (so in-degree is preferential) and otherwise a uniform earlier node; with probability ``r`` the
  target links back. Every id appears, so n equals ``nodes``; the arc count is ``edges`` up to
  the duplicates dropped at preprocessing (a small fraction).

Both are pure functions of their parameters and seed: the same call gives the same graph on any
machine.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError
from gpucore.random import mix3, mix4, uniform

GENERATORS = ("rmat", "pa")
_GEN = np.uint64(18)  # Stream.GENERATOR


@njit(inline="always", cache=True)
def _scatter_id(x, bits, mask):
    """A bijection of [0, 2^bits): odd multiply and xor-shift, twice."""
    x = np.uint64(x)
    for _ in range(2):
        x = (x * np.uint64(0x9E3779B97F4A7C15 | 1)) & mask
        x = x ^ (x >> np.uint64((bits + 1) // 2))
    return x


@njit(parallel=True, cache=True)
def _rmat(m, scale, nodes, a, b, c, seed, src, dst):
    mask = np.uint64((1 << scale) - 1)
    for e in prange(m):
        u = np.uint64(0)
        v = np.uint64(0)
        for level in range(scale):
            r = uniform(mix4(seed, _GEN, e, level))
            u = u << np.uint64(1)
            v = v << np.uint64(1)
            if r < a:
                pass
            elif r < a + b:
                v |= np.uint64(1)
            elif r < a + b + c:
                u |= np.uint64(1)
            else:
                u |= np.uint64(1)
                v |= np.uint64(1)
        u = _scatter_id(u, scale, mask)
        v = _scatter_id(v, scale, mask)
        if u >= np.uint64(nodes):
            u -= np.uint64(nodes)
        if v >= np.uint64(nodes):
            v -= np.uint64(nodes)
        src[e] = np.int64(u)
        dst[e] = np.int64(v)


def rmat(nodes: int, edges: int, seed: int = 0, abcd=(0.57, 0.19, 0.19, 0.05)) -> tuple[np.ndarray, np.ndarray]:
    """R-MAT arcs (int64 src, dst) with ids in [0, nodes); duplicates and self-loops included."""
    a, b, c, d = abcd
    if min(abcd) < 0 or abs(a + b + c + d - 1.0) > 1e-9:
        raise GpucoreError(f"--abcd {abcd}: need four non-negative numbers summing to 1")
    _check_sizes(nodes, edges)
    scale = max(1, math.ceil(math.log2(nodes)))
    src = np.empty(edges, dtype=np.int64)
    dst = np.empty(edges, dtype=np.int64)
    _rmat(edges, scale, nodes, a, b, c, np.uint64(seed), src, dst)
    return src, dst


@njit(cache=True)
def _pa(nodes, edges, reciprocity, seed, src, dst):
    seed_nodes = 4
    k = 0
    # a small directed cycle to start from
    for v in range(seed_nodes):
        src[k] = v
        dst[k] = (v + 1) % seed_nodes
        k += 1
    per_node = (edges - k) / ((nodes - seed_nodes) * (1.0 + reciprocity))
    for v in range(seed_nodes, nodes):
        h = mix3(seed, _GEN, v)
        deg = int(per_node + uniform(h))
        if deg < 1:
            deg = 1
        for j in range(deg):
            if k >= src.shape[0] - 1:
                return k
            r = mix4(seed, _GEN, v, j + 1)
            if uniform(r) < 0.5:
                t = dst[np.int64(np.uint64(r) % np.uint64(k))]
            else:
                t = np.int64(np.uint64(r >> np.uint64(7)) % np.uint64(v))
            src[k] = v
            dst[k] = t
            k += 1
            if uniform(mix4(seed, _GEN, v, -(j + 1))) < reciprocity:
                src[k] = t
                dst[k] = v
                k += 1
    return k


def preferential_attachment(nodes: int, edges: int, reciprocity: float = 0.3, seed: int = 0):
    """Directed preferential-attachment arcs (int64 src, dst), every id in [0, nodes) used."""
    _check_sizes(nodes, edges)
    if not 0.0 <= reciprocity <= 1.0:
        raise GpucoreError(f"--reciprocity {reciprocity}: must be in [0, 1]")
    if edges < 2 * nodes:
        raise GpucoreError(f"pa needs --edges >= 2 * --nodes (got {edges} for {nodes} nodes)")
    capacity = int(edges * 1.02) + 4 * nodes + 16
    src = np.empty(capacity, dtype=np.int64)
    dst = np.empty(capacity, dtype=np.int64)
    k = _pa(nodes, edges, reciprocity, np.uint64(seed), src, dst)
    return src[:k].copy(), dst[:k].copy()


def _check_sizes(nodes: int, edges: int) -> None:
    if nodes < 8:
        raise GpucoreError(f"--nodes must be >= 8, got {nodes}")
    if nodes > 2**31 - 1:
        raise GpucoreError(f"--nodes must be below 2^31, got {nodes}")
    if edges < 1:
        raise GpucoreError(f"--edges must be >= 1, got {edges}")


def generate(kind: str, nodes: int, edges: int, seed: int = 0, **options) -> tuple[np.ndarray, np.ndarray]:
    """Dispatch to a generator by name (``rmat`` or ``pa``)."""
    if kind == "rmat":
        return rmat(nodes, edges, seed, options.get("abcd") or (0.57, 0.19, 0.19, 0.05))
    if kind == "pa":
        return preferential_attachment(nodes, edges, options.get("reciprocity", 0.3), seed)
    raise GpucoreError(f"unknown generator {kind!r}: choose one of {', '.join(GENERATORS)}")


@njit(cache=True)
def put_decimal(out, at, x, digits):
    """Write the non-negative integer x in decimal into the byte array ``out`` from position ``at``
    (``digits``: a scratch of at least 20 bytes); returns the position after it."""
    nd = 0
    while True:
        digits[nd] = 48 + x % 10
        x //= 10
        nd += 1
        if x == 0:
            break
    for j in range(nd - 1, -1, -1):
        out[at] = digits[j]
        at += 1
    return at


@njit(cache=True)
def put_pair(out, at, u, v, sep, digits):
    """``u``, the byte ``sep``, ``v`` in decimal into ``out`` from ``at`` (``put_decimal``); returns the
    position after v."""
    at = put_decimal(out, at, u, digits)
    out[at] = sep
    return put_decimal(out, at + 1, v, digits)


@njit(cache=True)
def _format_lines(src, dst, out):
    k = 0
    digits = np.empty(20, dtype=np.uint8)
    for i in range(src.shape[0]):
        k = put_pair(out, k, src[i], dst[i], 9, digits)
        out[k] = 10
        k += 1
    return k


def write_edge_list(path, src: np.ndarray, dst: np.ndarray, comment: str = "") -> None:
    """Write arcs as a SNAP text edge list (``.gz`` names are gzip-compressed, level 1)."""
    import gzip

    from gpucore.atomic import atomic_path

    block = 1 << 22
    with atomic_path(path) as tmp:
        opener = gzip.open(tmp, "wb", compresslevel=1) if str(path).endswith(".gz") else open(tmp, "wb")
        with opener as fh:
            for line in comment.splitlines():
                fh.write(f"# {line}\n".encode())
            buf = np.empty(block * 42, dtype=np.uint8)
            for start in range(0, src.shape[0], block):
                used = _format_lines(src[start : start + block], dst[start : start + block], buf)
                fh.write(buf[:used].tobytes())
