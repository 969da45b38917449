"""Geometric skipping in IC RR sets: which nodes find their live in-arcs by jumps instead of coins.

A *skipping node* v has at least ``SKIP_MIN_DEGREE`` in-arcs that all carry the same float32
probability p with 0 < p <= ``SKIP_MAX_P`` (weighted cascade hubs, constant-p graphs). Each time an
IC traversal of sample key s expands v, the live in-arcs of v are the positions (in v's in-CSR
row, in its stored order)

    pos_0 = J_0,  pos_{i+1} = pos_i + 1 + J_{i+1},  while pos_i < d,
    J_i = skip_jump(mix(seed, SKIP, s, v, i), 1 / ln(1 - p), d)      (gpucore.random.geometric)

instead of a coin per arc: the positions of a run of d independent Bernoulli(p) coins have exactly
this law (the gaps are geometric), so the RR sets keep their distribution while an expansion of v
costs O(1 + d p) draws instead of O(d) (SUBSIM: Guo, Wang, Wei, Chen, "Influence Maximization
Revisited: Efficient Reverse Reachable Set Generation with Bound Tightened", SIGMOD 2020, sec. 4).
Every other node keeps the keyed coin per arc (``docs/im.md``). The rule depends only on the graph's
probabilities, never on the sampler or backend, so every IC sampler (gim and fused, CPU and CUDA)
draws the same sets for the same keys.

Why the two thresholds (a cost rule, fixed once so that sets never depend on a machine): a jump
costs about three coins (one hash plus a short series of double operations), so it pays when
1 + d p jumps are well below d coins. Rows shorter than a warp's 32 arcs cost one warp step of
coins on the GPU and a few coins on the CPU, and above p = 1/8 a jump per live arc saves too
little against coins that skip the arcs whose source a traversal has already reached.

``skip_table(in_indptr, in_prob)`` gives, per node, ``rlq = 1 / ln(1 - p)`` as
``1.0 / log1p_series(-p)`` (a double below 0) for a skipping node and 0.0 for a node that flips
coins; the samplers read it beside the in-CSR (8 bytes a node).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpucore.random.geometric import log1p_series

#: fewest in-arcs of a skipping node (one warp step of coins below it)
SKIP_MIN_DEGREE = 32
#: largest common in-arc probability of a skipping node
SKIP_MAX_P = 0.125


@njit(parallel=True, cache=True)
def skip_table(in_indptr, in_prob):
    """Per node: 1 / ln(1 - p) (``1.0 / log1p_series(-p)``, < 0) for a skipping node, else 0.0 (module docstring)."""
    n = in_indptr.shape[0] - 1
    out = np.zeros(n, dtype=np.float64)
    for v in prange(n):
        lo = in_indptr[v]
        hi = in_indptr[v + 1]
        if hi - lo < SKIP_MIN_DEGREE:
            continue
        p = in_prob[lo]
        if not (p > 0.0 and p <= SKIP_MAX_P):
            continue
        same = True
        for a in range(lo + 1, hi):
            if in_prob[a] != p:
                same = False
                break
        if same:
            out[v] = 1.0 / log1p_series(-np.float64(p))
    return out


def ic_skip_table(in_indptr, in_prob, model: str) -> np.ndarray:
    """The skip table of an IC in-CSR; LT never skips (a one-element dummy, as the kernels take an array)."""
    if model != "IC":
        return np.zeros(1, dtype=np.float64)
    return skip_table(np.ascontiguousarray(in_indptr, dtype=np.int64), np.ascontiguousarray(in_prob, dtype=np.float32))
