"""Plain-Python references for the AMCSS tests (independent of the Numba kernels), and their tests.

``ref_set`` is the reverse-reachable set of given roots on the residual graph under set j's keys,
written from the documented key formulas (``gpucore/amcss/__init__.py``) with ``mix_py`` only.
"""

from __future__ import annotations

import math

import numpy as np

from gpucore.graph import from_arcs
from gpucore.random import mix_py

COIN, ROOT, LT_CHOICE, ROOT_COUNT = 1, 2, 3, 4
ONE = 1 << 40


def uniform_py(h: int) -> float:
    return (h >> 11) * 2.0**-53


def fixed_py(w) -> int:
    return int(math.floor(float(np.float32(w)) * float(ONE)))


def root_count_py(seed: int, j: int, k: float, n_res: int) -> int:
    c = int(math.floor(k + uniform_py(mix_py(seed, ROOT_COUNT, j))))
    return max(1, min(c, n_res))


def ref_set(graph, model: str, active, roots, seed: int, j: int) -> frozenset:
    """Nodes reachable backwards from ``roots`` in G_i (inactive nodes) through set j's live arcs."""
    in_w = graph.edge_probabilities(model)[0]
    ip, src, eid = graph.in_indptr, graph.in_src, graph.in_eid
    seen = set(int(r) for r in roots)
    queue = list(seen)
    while queue:
        v = queue.pop()
        lo, hi = int(ip[v]), int(ip[v + 1])
        if model == "IC":
            for k in range(lo, hi):
                u = int(src[k])
                if active[u] or u in seen:
                    continue
                if uniform_py(mix_py(seed, COIN, j, int(eid[k]))) < float(np.float32(in_w[k])):
                    seen.add(u)
                    queue.append(u)
        else:
            if hi == lo:
                continue
            cum = np.cumsum([fixed_py(w) for w in in_w[lo:hi]])
            a = 0
            while True:
                r = mix_py(seed, LT_CHOICE, j, v, a) >> 24
                a += 1
                if r >= cum[-1]:
                    break
                k = lo + int(np.searchsorted(cum, r, side="right"))
                u = int(src[k])
                if active[u]:
                    continue
                if u not in seen:
                    seen.add(u)
                    queue.append(u)
                break
    return frozenset(seen)


def ref_roots(seed: int, j: int, rnd: int, keep, target: int, residual) -> tuple[frozenset, list]:
    """Extend root set ``keep`` to ``target`` roots by the documented keyed draws on ``residual``.
    Returns (roots, new roots in the order they were taken)."""
    residual = [int(x) for x in residual]
    n_res = len(residual)
    roots = set(int(x) for x in keep)
    t = target - len(roots)
    m = n_res - len(roots)
    new = []
    d = 0
    if t <= 0:
        return frozenset(roots), new
    if 2 * t <= m:
        while len(new) < t:
            u = residual[mix_py(seed, ROOT, j, rnd, d) % n_res]
            d += 1
            if u in roots:
                continue
            roots.add(u)
            new.append(u)
    else:
        excluded = set()
        while len(excluded) < m - t:
            u = residual[mix_py(seed, ROOT, j, rnd, d) % n_res]
            d += 1
            if u in roots or u in excluded:
                continue
            excluded.add(u)
        new = [u for u in residual if u not in roots and u not in excluded]
        roots.update(new)
    return frozenset(roots), new


def dedup_graph(n: int, src, dst, prob=None, cost=None, name="test"):
    """from_arcs after dropping self-loops and duplicates; prob None = weighted cascade."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    keep = src != dst
    key, first = np.unique(src[keep] * n + dst[keep], return_index=True)
    if prob is not None:
        prob = np.broadcast_to(np.asarray(prob, dtype=np.float64), src.shape)[keep][first]
    src, dst = key // n, key % n
    if prob is None:
        indeg = np.bincount(dst, minlength=n)
        prob = 1.0 / indeg[dst]
    return from_arcs(n, src, dst, prob, cost=cost, name=name)


def random_graph(n: int, m: int, seed: int, prob=None, name="random"):
    rng = np.random.default_rng(seed)
    return dedup_graph(n, rng.integers(0, n, m), rng.integers(0, n, m), prob=prob, name=name)


def pa_graph(n: int, m: int, seed: int = 1, prob=None):
    from gpucore.graph.generators import generate

    src, dst = generate("pa", n, m, seed=seed)
    return dedup_graph(n, src, dst, prob=prob, name=f"pa{n}")


# ---- the references themselves ------------------------------------------------------------------

def test_uniform_and_fixed_match_the_library():
    from gpucore.random import lt_draw, lt_fixed_weight, uniform

    for h in (0, 1, 2**63 + 12345, 2**64 - 1):
        assert uniform_py(h) == uniform(np.uint64(h))
        assert (h >> 24) == lt_draw(np.uint64(h))
    for w in (0.0, 0.1, 1 / 3, 0.5, 1.0):
        assert fixed_py(w) == lt_fixed_weight(np.float32(w))


def test_ref_roots_draw_uniform_subsets():
    """The documented root draws give a uniform subset of V_i minus the kept roots (Lemmas 3.4 and
    3.6), in the rejection form and in the complement form, fresh and extending kept roots:
    chi-square over all possible root sets, 3,000 set ids each, false-alarm rate 1e-3 per case."""
    import itertools

    from scipy.stats import chisquare

    residual = [3, 5, 8, 10, 11, 14, 20]
    for target, keep in ((3, []), (5, []), (4, [8]), (6, [8, 14])):  # rejection / complement, fresh / kept
        free = [v for v in residual if v not in keep]
        cells = {frozenset(keep) | frozenset(c): 0 for c in itertools.combinations(free, target - len(keep))}
        for j in range(3000):
            roots, new = ref_roots(11, j, 2, keep, target, residual)
            assert len(new) == target - len(keep) and not set(new) & set(keep)
            cells[roots] += 1  # a KeyError here: not target roots of V_i holding the kept ones
        assert chisquare(list(cells.values())).pvalue > 1e-3, (target, keep)
