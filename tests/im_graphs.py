"""Small IM test graphs shared by the fused-sampler tests (hash-free: NumPy generators with fixed seeds)."""

from __future__ import annotations

import numpy as np

from gpucore.graph import from_arcs
from gpucore.graph.generators import preferential_attachment


def wc_graph(n=300, deg=6, seed=1):
    """Random arcs (about n deg), weighted cascade p = 1 / indegree."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, n * deg)
    dst = rng.integers(0, n, n * deg)
    key = np.unique(src[src != dst] * n + dst[src != dst])
    src, dst = key // n, key % n
    indeg = np.bincount(dst, minlength=n)
    return from_arcs(n, src, dst, 1.0 / indeg[dst])


def dense_graph(n=120, p=0.3, density=0.25, seed=2):
    """Every ordered pair with probability ``density``, constant p: large, overlapping RR sets."""
    rng = np.random.default_rng(seed)
    a = rng.random((n, n)) < density
    np.fill_diagonal(a, False)
    src, dst = np.nonzero(a)
    return from_arcs(n, src, dst, p)


def pa_graph(nodes=3000, edges=20000, seed=3, prob=None):
    """Preferential attachment with reciprocity 0.3; weighted cascade unless ``prob`` is given."""
    src, dst = preferential_attachment(nodes, edges, 0.3, seed)
    keep = src != dst
    key = np.unique(src[keep] * nodes + dst[keep])
    src, dst = key // nodes, key % nodes
    if prob is None:
        indeg = np.bincount(dst, minlength=nodes)
        prob = 1.0 / indeg[dst]
    return from_arcs(nodes, src, dst, prob)
