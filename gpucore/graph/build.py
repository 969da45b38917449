"""Graphs from explicit arc lists (tests, generators, small examples) and saving them as ``.gcsr``.

``from_arcs`` keeps the given ids (0..n-1, isolated vertices allowed) and the given probability
of every arc; it applies the same canonical arc order and edge ids as preprocessing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.graph.csr import _indptr_from_counts, _transpose
from gpucore.graph.gcsr import ARRAY_ORDER, write_gcsr
from gpucore.graph.model import Graph
from gpucore.graph.weights import count_lt_violations


def _digest(arrays: dict) -> str:
    h = hashlib.sha256()
    for name in ARRAY_ORDER:
        h.update(np.ascontiguousarray(arrays[name]).view(np.uint8).tobytes())
    return h.hexdigest()


def from_arcs(n: int, src, dst, prob, cost=None, directed: bool = True, name: str = "from_arcs") -> Graph:
    """An in-memory ``Graph`` with vertices 0..n-1 and arcs ``src[i] -> dst[i]`` of probability ``prob[i]``.

    ``directed=False`` adds the reverse of every arc with the same probability. Self-loops,
    duplicate arcs and ids outside [0, n) raise GpucoreError. ``cost`` defaults to MERIT's
    0.01 + 0.01 * outdeg.
    """
    src = np.asarray(src, dtype=np.int64).reshape(-1)
    dst = np.asarray(dst, dtype=np.int64).reshape(-1)
    prob = np.broadcast_to(np.asarray(prob, dtype=np.float32), src.shape).copy()
    if not directed:
        src, dst, prob = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([prob, prob])
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise GpucoreError(f"{name}: vertex ids must lie in [0, {n})")
    if np.any(src == dst):
        raise GpucoreError(f"{name}: self-loops are not allowed")
    if not (np.isfinite(prob).all() and (prob >= 0).all() and (prob <= 1).all()):
        raise GpucoreError(f"{name}: probabilities outside [0, 1]")
    order = np.lexsort((dst, src))
    src, dst, prob = src[order], dst[order], prob[order]
    if src.size > 1 and np.any((src[1:] == src[:-1]) & (dst[1:] == dst[:-1])):
        raise GpucoreError(f"{name}: duplicate arcs")
    out_indptr = _indptr_from_counts(np.bincount(src, minlength=n).astype(np.int64))
    out_dst = dst.astype(np.int32)
    in_indptr = _indptr_from_counts(np.bincount(dst, minlength=n).astype(np.int64))
    in_src = np.empty(src.size, dtype=np.int32)
    in_eid = np.empty(src.size, dtype=np.int32)
    _transpose(out_indptr, out_dst, in_indptr, in_src, in_eid)
    if cost is None:
        cost = 0.01 + 0.01 * np.diff(out_indptr)
    cost = np.broadcast_to(np.asarray(cost, dtype=np.float32), (n,)).copy()
    arrays = {
        "out_indptr": out_indptr,
        "out_dst": out_dst,
        "out_prob": prob,
        "in_indptr": in_indptr,
        "in_src": in_src,
        "in_eid": in_eid,
        "in_prob": prob[in_eid],
        "cost": cost,
        "original_id": np.arange(n, dtype=np.int64),
    }
    meta = {
        "source": name,
        "n": n,
        "m": int(src.size),
        "weights": "given",
        "cost": "given",
        "lt_normalised_nodes": count_lt_violations(in_indptr, arrays["in_prob"]),
    }
    return Graph(
        path=Path(f"<{name}>"),
        n=n,
        m=int(src.size),
        directed=directed,
        cost_scale=float(cost.max()) if n else 1.0,
        sha256=_digest(arrays),
        meta=meta,
        **arrays,
    )


def save_graph(graph: Graph, path) -> Path:
    """Write a (for example in-memory) graph as a ``.gcsr`` file; returns the path."""
    path = Path(path)
    digest = write_gcsr(
        path,
        graph.n,
        graph.m,
        {name: getattr(graph, name) for name in ARRAY_ORDER},
        dict(graph.meta),
        directed=graph.directed,
        cost_scale=graph.cost_scale,
    )
    if digest != graph.sha256:
        raise GpucoreError(f"{path}: written content digest differs from the graph's ({digest} != {graph.sha256})")
    return path
