"""What a fused sampler call runs, and in which order: options, traversals, roots, dispatch order.

A call appends RR sets ``j = j0 .. j0 + count - 1``. With T rounds (MRIM) set j is the union of T
*traversals* ``(j, t)``, ``t < T``, all from the root of j, traversal ``(j, t)`` with sample key
``s = j * T + t`` (``docs/im.md``). Inside a call the traversals are numbered ``i = (j - j0) * T + t``
and a call of many sets is cut into *pieces* of at most ``MAX_PIECE_TRAVERSALS`` traversals
(whole sets, in order of j), each sampled to completion before the next starts.

Sorted sources (FuseIM, Neff et al., ICS '24, sec. 5): the roots of **every** traversal of a piece
are drawn first, then the traversals are dispatched to batches in order of (root in the traversal
layout, i), so that a batch's traversals start near each other. Every traversal of the piece is
run and its set stored at its own j, so the order changes which traversals share a batch and
nothing else (spec pitfall 5: a sorted *prefix* would be biased; a whole sorted piece is not).
Without sorting, traversals are dispatched in order of i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError
from gpucore.graph.reorder import ORDERS
from gpucore.im.cpu import rr_root

#: supported batch widths (traversals per batch, 32 per 32-bit mask word)
WIDTHS = (32, 64, 128, 256)
#: tail strategies: "none" (a batch reloads when all its traversals ended) or "refill" (a batch
#: reloads the bit slots of ended traversals once at least a quarter of them ended; half of them in the
#: CUDA resident mapping, FusedOptions.resident_refill_threshold)
TAILS = ("none", "refill")
#: eviction of long-running traversals to a team pass (the CUDA sampler, IC; ``docs/fuseim.md``): "auto" where
#: traversals are expected to be a small share of the graph, "never", or "always" (every level-mapping piece)
EVICTS = ("auto", "never", "always")
#: most traversals per piece of a call (bounds per-traversal arrays; pieces are whole sets)
MAX_PIECE_TRAVERSALS = 1 << 22


@dataclass(frozen=True)
class FusedOptions:
    """The switchable parts of the fused sampler (each one measurable on its own)."""

    batch_width: int = 64
    order: str = "none"
    sorted_sources: bool = True
    tail: str = "refill"

    def __post_init__(self):
        if isinstance(self.batch_width, bool) or self.batch_width not in WIDTHS:
            raise GpucoreError(f"--batch-width {self.batch_width!r}: choose one of {', '.join(map(str, WIDTHS))}")
        if self.order not in ORDERS:
            raise GpucoreError(f"--order {self.order!r}: choose one of {', '.join(ORDERS)}")
        if self.tail not in TAILS:
            raise GpucoreError(f"--tail {self.tail!r}: choose one of {', '.join(TAILS)}")
        if not isinstance(self.sorted_sources, (bool, np.bool_)):
            raise GpucoreError(f"sorted_sources {self.sorted_sources!r}: must be true or false")

    @property
    def words(self) -> int:
        """32-bit mask words per vertex."""
        return self.batch_width // 32

    @property
    def refill_threshold(self) -> int:
        """Ended traversals that make a batch reload its free slots (the whole batch for tail "none")."""
        return max(1, self.batch_width // 4) if self.tail == "refill" else self.batch_width

    @property
    def resident_refill_threshold(self) -> int:
        """``refill_threshold`` for the CUDA resident mapping: half the batch for tail "refill". A resident block
        extracts alone, so an extraction costs it a whole step; at weighted cascade on the H100 half the batch
        was 2-15 % faster than a quarter at widths 32 and 64, and the whole batch 5-25 % slower
        (``benchmarks/study_fuseim_refill.py``, ``results/reference/fuseim/resident-groups-h100.md``)."""
        return max(1, self.batch_width // 2) if self.tail == "refill" else self.batch_width

    def sorts(self, resident: bool) -> bool:
        """Is a piece's dispatch order sorted? ``sorted_sources`` for the level mapping and the CPU twin; never in
        the CUDA resident mapping, which runs pieces of tiny traversals (a few elements each) whose batches share
        almost no reads, so the order has little to group while the sort is a fixed cost of the piece. On the H100
        (web-Google- and web-BerkStan-size PA graphs, B = 32, 25 interleaved calls each) the sort took 0.27 ms of a
        2.8 ms call of 200,000 sets and 0.16 ms of a 1.3 ms call of 20,000, and the sorted calls were 3-30 %
        slower (``results/reference/fuseim/resident-order-h100.md``)."""
        return bool(self.sorted_sources) and not resident

    def to_dict(self) -> dict:
        return {"batch_width": self.batch_width, "order": self.order, "sorted_sources": bool(self.sorted_sources),
                "tail": self.tail}


def pieces(count: int, rounds: int) -> list[tuple[int, int]]:
    """(first set offset, sets) of the pieces of a call of ``count`` sets with ``rounds`` traversals each."""
    per = max(1, MAX_PIECE_TRAVERSALS // int(rounds))
    return [(lo, min(per, count - lo)) for lo in range(0, int(count), per)]


@njit(parallel=True, cache=True)
def set_roots(seed, j_begin, sets, n, new_of_old):
    """Root of set j_begin + i in the traversal layout (new ids), for i < sets."""
    out = np.empty(sets, dtype=np.int64)
    for i in prange(sets):
        out[i] = new_of_old[rr_root(seed, j_begin + i, n)]
    return out


def dispatch_order(roots: np.ndarray, rounds: int, sorted_sources: bool) -> np.ndarray:
    """Traversal ids ``i = set * rounds + t`` in the order batches take them (int64)."""
    total = roots.shape[0] * int(rounds)
    if not sorted_sources:
        return np.arange(total, dtype=np.int64)
    ids = np.arange(total, dtype=np.int64)
    key = (np.repeat(roots, rounds) << 32) | ids  # ids < 2^22, roots < 2^31: unique keys
    return np.sort(key) & np.int64(0xFFFFFFFF)
