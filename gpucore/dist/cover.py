"""Greedy max-cover over sets spread across ranks: one collective per pick.

The sets (IMM's RR sets, keyed by a global sample id) are split over the ranks, each rank holding
some of them; an element's coverage is the number of still-uncovered sets that hold it, summed over
the ranks. Each pick:

1. every rank passes its local counts to ``allreduce(sum)`` (NCCL for device arrays): every rank
   then holds the same global counts, exactly, since they are integers;
2. every rank takes the argmax over the elements not excluded, ties to the lowest id: the same
   element everywhere, so no broadcast is needed (the reduction is the pick's one collective);
3. every rank covers its own sets that hold the element (local work, no communication); the gain
   of the pick is the element's global count, known to all.

At the end one more ``allreduce`` adds the sets each rank covered: it must equal the sum of the
gains (a check of the local structure's ``counts``/``cover``), and the fraction covered is taken
over the GLOBAL number of sets (the sum of what the ranks hold, which may differ from rank to rank),
never over "ranks x local sets". Over one rank this is exactly the sequential greedy of
``gpucore.im``: argmax, ties to the lowest id, chosen elements excluded.

The local structure (``LocalCover``) is the selector's business: CSR sets and an inverted index
on the CPU, device arrays on the GPU. It exposes two methods:

- ``counts()``: a signed-integer NumPy or CuPy array, one entry per element of the universe: how
  many of this rank's uncovered sets hold the element (it may be the live array; it is not written);
- ``cover(element)``: mark this rank's uncovered sets that hold ``element`` covered, update the
  counts, and return how many sets it newly covered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from gpucore.dist.comm import Communicator
from gpucore.dist.runtime import current
from gpucore.errors import GpucoreError


class LocalCover(Protocol):
    def counts(self):
        """Per-element number of this rank's uncovered sets holding it (signed integers)."""

    def cover(self, element: int) -> int:
        """Cover this rank's sets holding ``element``; the number newly covered."""


@dataclass(frozen=True)
class CoverResult:
    """``chosen`` elements in pick order; ``gains[i]``: sets newly covered by pick i (all ranks);
    ``covered``: their sum; ``theta``: the number of sets over all ranks."""

    chosen: list[int]
    gains: list[int]
    covered: int
    theta: int

    @property
    def fraction(self) -> float:
        """Covered share of all sets (0 when there are none)."""
        return self.covered / self.theta if self.theta else 0.0


def _int_sum(comm: Communicator, value: int) -> int:
    return int(comm.allreduce(np.array([value], dtype=np.int64), "sum")[0])


def greedy_max_cover(local: LocalCover, picks: int, local_sets: int, comm: Communicator | None = None, *,
                     block: Callable[[list[int]], object] | None = None) -> CoverResult:
    """``picks`` greedy picks over the sets of all ranks (collective; see the module docstring).

    ``local_sets``: the number of sets this rank holds (their global sum is theta). ``block``: called
    after each pick with the elements chosen so far; it returns an index (an id, a slice, an array
    of ids) of elements to exclude from later picks, or None (MRIM uses it to close a round that
    holds its k seeds). A chosen element is always excluded. Picks continue when every count is 0
    (the lowest-id element not excluded, gain 0), as the sequential greedy does.
    """
    comm = current() if comm is None else comm
    if int(picks) < 0 or int(local_sets) < 0:
        raise GpucoreError(f"greedy_max_cover: picks ({picks}) and local_sets ({local_sets}) must be >= 0")
    theta = _int_sum(comm, int(local_sets))
    chosen: list[int] = []
    gains: list[int] = []
    covered_here = 0
    excluded = None
    for _ in range(int(picks)):
        counts = comm.allreduce(local.counts(), "sum")
        if counts.dtype.kind != "i":
            raise GpucoreError(f"greedy_max_cover: counts must be signed integers, got {counts.dtype}")
        if excluded is None:
            excluded = np.zeros_like(counts, dtype=bool)  # a CuPy array for CuPy counts
        best = int(np.argmax(np.where(excluded, -1, counts)))
        if excluded[best]:
            raise GpucoreError(f"greedy_max_cover: every element is excluded after {len(chosen)} picks")
        chosen.append(best)
        gains.append(int(counts[best]))
        covered_here += int(local.cover(best))
        excluded[best] = True
        extra = block(chosen) if block is not None else None
        if extra is not None:
            excluded[extra] = True
    covered = _int_sum(comm, covered_here)
    if covered != sum(gains):
        raise RuntimeError(f"greedy_max_cover: the ranks covered {covered} sets but the counts promised "
                           f"{sum(gains)}: a LocalCover's counts() and cover() disagree")
    return CoverResult(chosen, gains, covered, theta)
