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


def _with_leaf_arcs(rng, leaf, src, dst, prob, p):
    """The graph of the arc lists ``src``/``dst``/``prob`` (lists of arrays; nodes 0 .. leaf[-1]) plus two
    random leaf-to-leaf in-arcs of every leaf at ``p``; of parallel arcs the first listed is kept."""
    n = int(leaf[-1]) + 1
    for _ in range(2):
        other = rng.integers(int(leaf[0]), n, leaf.size)
        keep = other != leaf
        src.append(other[keep])
        dst.append(leaf[keep])
        prob.append(np.full(keep.sum(), p))
    src, dst, prob = np.concatenate(src), np.concatenate(dst), np.concatenate(prob)
    _, first = np.unique(src * n + dst, return_index=True)
    return from_arcs(n, src[first], dst[first], prob[first])


def hubs_graph(leaves=300, seed=5):
    """Hubs whose in-rows skip (``gpucore.im.skipping``) beside rows that keep coins, RR sets passing several.

    Hub 0: an in-arc from every leaf, weighted cascade p = 1/leaves (skips); hub 1: from the first 200
    leaves at p = 0.05 (skips); hub 2: from 150 leaves at p = 0.2 (coins: above 1/8); hub 3: from 150
    leaves at mixed p (coins); node 4: 32 in-arcs at 1/32 (skips: the shortest skipping row); node 5: 31
    at 1/31 (coins). Every leaf has in-arcs from the hubs and from 4 and 5 (p 0.3) and two random leaves
    (p 0.2): short rows, coins. Nodes 0..5 are the hubs, 6.. the leaves."""
    rng = np.random.default_rng(seed)
    leaf = np.arange(6, 6 + leaves)
    parts = [
        (leaf, 0, np.full(leaves, 1.0 / leaves)),
        (leaf[:200], 1, np.full(200, 0.05)),
        (leaf[50:200], 2, np.full(150, 0.2)),
        (leaf[100:250], 3, rng.uniform(0.01, 0.1, 150)),
        (leaf[:32], 4, np.full(32, 1 / 32)),
        (leaf[40:71], 5, np.full(31, 1 / 31)),
    ]
    src = [p[0] for p in parts]
    dst = [np.full(p[0].size, p[1]) for p in parts]
    prob = [p[2] for p in parts]
    for hub in range(6):
        src.append(np.full(leaves, hub))
        dst.append(leaf)
        prob.append(np.full(leaves, 0.3))
    return _with_leaf_arcs(rng, leaf, src, dst, prob, 0.2)


def hub_heavy_graph(nodes=60_000, edges=400_000, hubs=4, fans=15_000, seed=2):
    """Preferential attachment (both arcs of every edge) plus ``hubs`` hubs joined both ways to ``fans``
    nodes each, weighted cascade: hubs of about ``fans`` in-arcs at p = 1 / indegree, as the BA graphs of
    the gIM comparison (whose first nodes attach only to the r first ones) have, for the skipping tests."""
    src, dst = preferential_attachment(nodes, edges, 1.0, seed)
    rng = np.random.default_rng(seed)
    fan = np.concatenate([rng.choice(np.arange(hubs, nodes), fans, replace=False) for _ in range(hubs)])
    hub = np.repeat(np.arange(hubs), fans)
    src = np.concatenate([src, fan, hub])
    dst = np.concatenate([dst, hub, fan])
    keep = src != dst
    key = np.unique(src[keep] * nodes + dst[keep])
    src, dst = key // nodes, key % nodes
    indeg = np.bincount(dst, minlength=nodes)
    return from_arcs(nodes, src, dst, 1.0 / indeg[dst])


def lt_hubs_graph(leaves=3000, seed=7):
    """LT walks through long in-rows: hub 0 has an in-arc from every leaf with unequal weights summing to
    0.9 (walks may stop there; the first third 10x heavier, so an interpolated guess misses both ways), hub 1 from the first 2,000 leaves with equal weights (weighted cascade);
    every leaf has in-arcs from both hubs (0.4 each) and from two random leaves (0.1 each). Nodes 0, 1 are
    the hubs, 2.. the leaves."""
    rng = np.random.default_rng(seed)
    leaf = np.arange(2, 2 + leaves)
    w = rng.uniform(0.1, 1.0, leaves) * np.where(leaf < 2 + leaves // 3, 10.0, 1.0)  # the first third heavy
    src = [leaf, leaf[:2000], np.zeros(leaves, np.int64), np.ones(leaves, np.int64)]
    dst = [np.zeros(leaves, np.int64), np.ones(2000, np.int64), leaf, leaf]
    prob = [0.9 * w / w.sum(), np.full(2000, 1 / 2000), np.full(leaves, 0.4), np.full(leaves, 0.4)]
    return _with_leaf_arcs(rng, leaf, src, dst, prob, 0.1)


def star_graph(d=1000, p=0.125):
    """Hub 0 with d in-arcs at p (a skipping node with about d p live in-arcs: several 32-jump steps per
    expansion), and an arc 0 -> every leaf at p = 1, so that every RR set expands the hub."""
    return from_arcs(d + 1, list(range(1, d + 1)) + [0] * d, [0] * d + list(range(1, d + 1)), [p] * d + [1.0] * d)


def giant_minority_graph(n=200_000, core=4000):
    """A directed cycle through vertices 0 .. core - 1 at p = 1 and n - core vertices without in-arcs: an RR set
    from the cycle is the whole cycle, any other a single vertex. With the defaults 2 % of the sets hold
    4,000 elements, a mean of about 81 with a median of 1 (the shape of p = 0.05-0.1 on the PA stand-ins)."""
    ring = np.arange(core)
    return from_arcs(n, ring, (ring + 1) % core, 1.0)
