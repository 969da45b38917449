"""Greedy max-cover over sets spread across ranks: one collective per pick.

The sets (IMM's RR sets, keyed by a global sample id) are split over the ranks, each rank holding
some of them; an element's coverage is the number of still-uncovered sets that hold it, summed over
the ranks. Every rank must take the same pick, the exact argmax of those global counts (ties to the
lowest id), and every rank then covers its own sets that hold it (local work); the gain of the pick
is the element's global count, known to all. Two ways to get the argmax, chosen by ``candidates``:

- dense (``candidates=0``): each pick all-reduces the whole count vector (4 bytes per element of
  the universe for int32 counts); every rank then holds the same exact integers and the same argmax,
  so no broadcast of the pick is needed;
- certified candidates (``candidates=c > 0``): counts only ever drop, so global counts reduced at
  some earlier pick are upper bounds of the current ones. After a dense all-reduce (a "refresh"),
  the c elements of the largest bounds are the candidates and ``tau`` is the largest bound among the
  other (not excluded) elements. A pick all-reduces only the candidates' local counts (4c bytes):
  their exact global counts. If the best allowed one, as the packed key ``count << 32 | (2^32 - 1 -
  e)`` (larger count first, then the lower id), exceeds ``tau``, no other element can beat it (its
  exact key is at most its bound): it is the exact argmax. Otherwise the pick refreshes (a dense
  all-reduce) and takes the argmax of the exact counts. The pick is the dense one's in every case;
  only the bytes differ. The candidates depend on the global counts alone, so every rank computes
  the same ones without communicating.

``counts``: global counts already reduced for the current state (the IMM driver reduces them for the
lower-bound test before the greedy), which saves the first refresh. At the end one more
``allreduce`` adds the sets each rank covered: it must equal the sum of the gains (a check of the
local structure's ``counts``/``cover``), and the fraction covered is taken over the GLOBAL number of
sets (the sum of what the ranks hold, which may differ from rank to rank), never over "ranks x local
sets". Over one rank this is exactly the sequential greedy of ``gpucore.im``: argmax, ties to the
lowest id, chosen elements excluded.

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

from gpucore.dist.comm import Communicator, is_device_array
from gpucore.dist.runtime import current
from gpucore.errors import GpucoreError

_LOW = 0xFFFFFFFF  # the id half of a packed key: 2^32 - 1 - e


class LocalCover(Protocol):
    def counts(self):
        """Per-element number of this rank's uncovered sets holding it (signed integers)."""

    def cover(self, element: int) -> int:
        """Cover this rank's sets holding ``element``; the number newly covered."""


@dataclass(frozen=True)
class CoverResult:
    """``chosen`` elements in pick order; ``gains[i]``: sets newly covered by pick i (all ranks);
    ``covered``: their sum; ``theta``: the number of sets over all ranks; ``refreshes``: dense
    all-reduces of the counts (the given ``counts`` not included)."""

    chosen: list[int]
    gains: list[int]
    covered: int
    theta: int
    refreshes: int = 0

    @property
    def fraction(self) -> float:
        """Covered share of all sets (0 when there are none)."""
        return self.covered / self.theta if self.theta else 0.0


def _int_sum(comm: Communicator, value: int) -> int:
    return int(comm.allreduce(np.array([value], dtype=np.int64), "sum")[0])


def _array_module(array):
    if is_device_array(array):
        import cupy

        return cupy
    return np


def _signed(counts):
    if counts.dtype.kind != "i":
        raise GpucoreError(f"greedy_max_cover: counts must be signed integers, got {counts.dtype}")
    return counts


class _GlobalCounts:
    """The global counts the picks see: exact after a refresh, upper bounds later (module docstring)."""

    def __init__(self, comm: Communicator, local: LocalCover, counts, candidates: int):
        self.comm, self.local, self.candidates = comm, local, int(candidates)
        self.bounds = None if counts is None else _signed(counts)
        self.fresh = counts is not None  # bounds are the exact current counts
        self.refreshes = 0
        self.cand = None  # candidate elements (None: to choose from the bounds)
        self.tau = 0  # largest packed bound among the other allowed elements

    def refresh(self) -> None:
        self.bounds = _signed(self.comm.allreduce(self.local.counts(), "sum"))
        self.fresh, self.cand = True, None
        self.refreshes += 1

    def pick(self, excluded) -> tuple[int, int] | None:
        """(element, global count) of the exact argmax over the elements not excluded; None if none is left."""
        if not self.fresh and self.candidates:
            if self.cand is None:
                self._choose(excluded)
            exact = self.comm.allreduce(self.local.counts()[self.cand], "sum")
            if self.cand.shape[0]:
                xp = _array_module(exact)
                keys = xp.where(excluded[self.cand], -1, (exact.astype(np.int64) << 32) | (_LOW - self.cand))
                best = int(keys.max())
                if best > self.tau:  # also > 0: an allowed candidate, beyond every other element's bound
                    return _LOW - (best & _LOW), best >> 32
        if not self.fresh:
            self.refresh()
        self.fresh = False  # the caller covers the pick next
        return _argmax(self.bounds, excluded)

    def _choose(self, excluded) -> None:
        """Candidates: the ``candidates`` largest packed bounds, in increasing order (the same array on
        every rank, entry by entry); ``tau``: the largest packed bound of the others (0 if none)."""
        xp = _array_module(self.bounds)
        universe = self.bounds.shape[0]
        keys = (self.bounds.astype(np.int64) << 32) | (_LOW - xp.arange(universe, dtype=np.int64))
        keys[excluded] = 0  # below every allowed element's key (>= 2^32 - 1 - e > 0)
        if self.candidates < universe:
            top = _largest(xp, keys, self.candidates + 1)
            top, self.tau = top[1:], int(top[0])
        else:
            top, self.tau = xp.sort(keys), 0
        top = top[top > 0]
        self.cand = (_LOW - (top & _LOW)).astype(np.int64)


def _largest(xp, keys, count: int):
    """The ``count`` largest of ``keys``, in increasing order: a partition on the host, a sort on the
    device (CuPy's partition sorts per-thread slices as long as the rank asked for: slow for a rank
    of a thousand; its radix sort takes a few milliseconds for millions of keys)."""
    if xp is np:
        return np.sort(np.partition(keys, keys.shape[0] - count)[keys.shape[0] - count:])
    return xp.sort(keys)[keys.shape[0] - count:]


def _argmax(counts, excluded) -> tuple[int, int] | None:
    """(element, count) of the largest count not excluded, ties to the lowest id; None if all are excluded."""
    xp = _array_module(counts)
    best = int(xp.argmax(xp.where(excluded, -1, counts)))
    return None if excluded[best] else (best, int(counts[best]))


def greedy_max_cover(local: LocalCover, picks: int, local_sets: int, comm: Communicator | None = None, *,
                     block: Callable[[list[int]], object] | None = None, counts=None,
                     candidates: int = 0) -> CoverResult:
    """``picks`` greedy picks over the sets of all ranks (collective; see the module docstring).

    ``local_sets``: the number of sets this rank holds (their global sum is theta). ``block``: called
    after each pick with the elements chosen so far; it returns an index (an id, a slice, an array
    of ids) of elements to exclude from later picks, or None (MRIM uses it to close a round that
    holds its k seeds). A chosen element is always excluded. Picks continue when every count is 0
    (the lowest-id element not excluded, gain 0), as the sequential greedy does. ``counts``: the
    global counts of the current state, already reduced (or None); ``candidates``: 0 for a dense
    all-reduce per pick, c > 0 for the certified candidates.
    """
    comm = current() if comm is None else comm
    if int(picks) < 0 or int(local_sets) < 0 or int(candidates) < 0:
        raise GpucoreError(f"greedy_max_cover: picks ({picks}), local_sets ({local_sets}) and candidates "
                           f"({candidates}) must be >= 0")
    theta = _int_sum(comm, int(local_sets))
    state = _GlobalCounts(comm, local, counts, candidates)
    chosen: list[int] = []
    gains: list[int] = []
    covered_here = 0
    excluded = None
    for _ in range(int(picks)):
        if excluded is None:
            if state.bounds is None:
                state.refresh()
            excluded = _array_module(state.bounds).zeros(state.bounds.shape, dtype=bool)
        pick = state.pick(excluded)
        if pick is None:
            raise GpucoreError(f"greedy_max_cover: every element is excluded after {len(chosen)} picks")
        best, gain = pick
        chosen.append(best)
        gains.append(gain)
        covered_here += int(local.cover(best))
        excluded[best] = True
        extra = block(chosen) if block is not None else None
        if extra is not None:
            excluded[extra] = True
    covered = _int_sum(comm, covered_here)
    if covered != sum(gains):
        raise RuntimeError(f"greedy_max_cover: the ranks covered {covered} sets but the counts promised "
                           f"{sum(gains)}: a LocalCover's counts() and cover() disagree")
    return CoverResult(chosen, gains, covered, theta, state.refreshes)
