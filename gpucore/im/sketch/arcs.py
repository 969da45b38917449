"""The arcs as DiFuseR reads them: fixed-point thresholds, Murmur3 hashes, merged parallel arcs.

- ``thresholds(prob)``: ``W_e = floor(p_e 2^31)`` (uint32; p = 1 gives 2^31, always live), the
  integer the 31-bit live test compares with (``gpucore.im.sketch.hashing``). Probabilities outside
  [0, 1] (or not finite) are refused with one line.
- ``arc_hashes(out_indptr, out_dst, seed32)``: ``h(u, v)`` of every arc in out-CSR order (xor sampling).
- ``merge_parallel_arcs(src, dst, prob)``: the paper's preprocessing of multigraphs (section 5): the
  arcs u -> v of one pair become one arc of probability ``1 - prod(1 - p_i)`` (two arcs of 0.1 give
  0.19), the probability that at least one of independent coins is live.

Where merging applies: a ``.gcsr`` never holds parallel arcs. ``gpucore preprocess`` drops duplicate
edge lines (``gpucore.graph.csr.build_csr``) *before* it draws the weights, so a repeated line of an
unweighted SNAP file is one arc with one weight (there is nothing to merge: the file gives no weight
per line). ``gpucore.graph.from_arcs`` refuses duplicates; callers that hold per-arc probabilities of a
multigraph pass them through ``merge_parallel_arcs`` first.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpucore.backend import scan_total
from gpucore.errors import GpucoreError
from gpucore.im.sketch.hashing import HASH_BITS, edge_hash

#: W_e of an arc of probability 1
THRESHOLD_ONE = 1 << HASH_BITS


def check_probabilities(prob, where: str) -> None:
    """One-line GpucoreError when an edge probability is not a number in [0, 1] (NumPy or CuPy array)."""
    bad_mask = ~((prob >= 0.0) & (prob <= 1.0))  # NaN fails both
    if scan_total(bad_mask):  # not ok.all(): a CuPy reduction compiles per size class
        bad = prob[bad_mask]
        raise GpucoreError(f"{where}: edge probability {float(bad[0])!r} outside [0, 1] "
                           f"({int(bad.size):,} arcs); DiFuseR needs IC weights in [0, 1]")


def thresholds(prob, where: str = "graph"):
    """W_e = floor(p_e 2^31) of every arc (uint32, on the array's device), after checking p in [0, 1]."""
    check_probabilities(prob, where)
    return (prob.astype(np.float64) * float(THRESHOLD_ONE)).astype(np.uint32)  # truncation = floor here


@njit(parallel=True, cache=True)
def arc_hashes(out_indptr, out_dst, seed32):
    """h(u, v) of every arc (out-CSR order), uint32 in [0, 2^31)."""
    n = out_indptr.shape[0] - 1
    out = np.empty(out_dst.shape[0], dtype=np.uint32)
    for u in prange(n):
        for e in range(out_indptr[u], out_indptr[u + 1]):
            out[e] = np.uint32(edge_hash(u, out_dst[e], seed32))
    return out


def merge_parallel_arcs(src, dst, prob) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, prob) with the arcs of each (src, dst) pair merged: p = 1 - prod(1 - p_i).

    Output arcs are sorted by (src, dst); probabilities float32 (the product is taken in float64).
    """
    src = np.asarray(src, dtype=np.int64).reshape(-1)
    dst = np.asarray(dst, dtype=np.int64).reshape(-1)
    prob = np.broadcast_to(np.asarray(prob, dtype=np.float64), src.shape)
    check_probabilities(prob, "merge_parallel_arcs")
    order = np.lexsort((dst, src))
    src, dst, prob = src[order], dst[order], prob[order]
    first = np.ones(src.size, dtype=bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    starts = np.flatnonzero(first)
    keep = np.multiply.reduceat(1.0 - prob, starts) if src.size else np.empty(0)
    return src[starts], dst[starts], (1.0 - keep).astype(np.float32)
