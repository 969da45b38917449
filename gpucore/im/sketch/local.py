"""A process's local graph: only the arcs live in at least one of its worlds (issue 17).

Göktürk & Kaya, "DiFuseR: a distributed sketch-based influence maximization algorithm for GPUs"
(arXiv 2410.14047), section 3: each device keeps the vertices and the arcs sampled in at least one
of its worlds. An arc live in none of them is never read by fill, simulate, cascade or the gains
(each tests the arc's live bit in a world first), so dropping it changes no register and no
answer; with few worlds per rank (and FASST, ``gpucore.im.sketch.split``) most arcs go.

``LocalArcs`` keeps every vertex (its id unchanged, so registers stay ``int8 [n, J]``) and, per kept
arc in out-CSR order: the target, the threshold W_e, and its *word*: the edge hash h(e) under xor
sampling, the arc's global id e (its position in the whole graph's out-CSR, which the keyed coin
hashes) under keyed sampling. ``compact`` builds it from the whole graph's arrays and a flag per arc
(``live_anywhere`` on the CPU, the ``sk_live_any`` kernel on the GPU), with NumPy or CuPy (``xp``).

Its size is reported per rank (``arcs``; ``vertices``: those with at least one local arc, in or
out), the paper's Tables 5 and 7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from gpucore.backend import scan_total
from gpucore.im.sketch.hashing import live


@dataclass
class LocalArcs:
    """The out-CSR of the arcs kept by a process: ``indptr`` (int64 [n + 1]), ``dst`` (int32),
    ``thr`` (uint32 W_e), ``words`` (uint32 hash, or the arc's global id), on one device."""

    indptr: object
    dst: object
    thr: object
    words: object
    arcs: int
    vertices: int

    def sizes(self) -> dict:
        return {"local_arcs": int(self.arcs), "local_vertices": int(self.vertices)}


@njit(parallel=True, cache=True)
def live_anywhere(hashes, thr, live_keys, keyed, flags):
    """flags[e] = 1 when arc e (global id e; ``hashes[e]`` its xor hash) is live in one of the worlds."""
    for e in prange(thr.shape[0]):
        word = np.uint64(e) if keyed else np.uint64(hashes[e])
        hit = 0
        for j in range(live_keys.shape[0]):
            if live(keyed, live_keys[j], word, thr[e]):
                hit = 1
                break
        flags[e] = hit


def flagged(xp, flags):
    """The indices of the non-zero ``flags``, in order (int64), by a scan and a scatter. Not ``flatnonzero``,
    whose CuPy version counts the flags with a CUB reduction that CuPy compiles per size class of the input:
    a warm-up on a small graph compiles another class, so a first solve in a fresh kernel cache compiled it
    inside its timed local-graph phase (on an H200 at LiveJournal size: one 89 ms compile, the phase 0.65 s
    against 0.54 s with this scan and 0.15 s in a second solve)."""
    mask = flags != 0
    pos = xp.cumsum(mask, dtype=xp.int64)
    total = int(pos[-1]) if pos.shape[0] else 0  # the scan's last element (gpucore.backend.scan_total)
    out = xp.empty(total + 1, dtype=xp.int64)  # slot `total` takes the unflagged indices
    out[xp.where(mask, pos - 1, total)] = xp.arange(flags.shape[0], dtype=xp.int64)
    return out[:total]


def compact(xp, n: int, indptr, dst, thr, hashes, keyed: bool, flags, id_dtype) -> LocalArcs:
    """The arcs with ``flags[e] != 0``, with their words: ``hashes[e]`` (xor) or ``e`` (keyed) as
    ``id_dtype``. ``xp``: NumPy or CuPy (the arrays' module)."""
    kept = flagged(xp, flags)
    local_indptr = xp.searchsorted(kept, indptr).astype(xp.int64)  # arc e of u -> its rank among kept
    local_dst = dst[kept]
    words = kept.astype(id_dtype) if keyed else hashes[kept]
    touched = xp.zeros(n, dtype=xp.bool_)
    touched[local_dst] = True
    touched |= local_indptr[1:] > local_indptr[:-1]
    # not touched.sum() (scan_total: a first solve at YouTube size compiled that reduction for about 10 s)
    vertices = scan_total(touched)
    return LocalArcs(local_indptr, local_dst, thr[kept], words, int(kept.shape[0]), vertices)
