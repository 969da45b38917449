"""Who owns which keys: contiguous key ranges, and greedy packing of weighted items.

- ``partition(total, size, rank, start=0)``: the keys ``start .. start+total-1`` (sample ids,
  world ids, Monte-Carlo run indices) cut into ``size`` contiguous ranges whose lengths differ by at
  most one, the longer ones first; rank ``rank`` owns ``[begin, end)``. The ranges depend only on
  (total, size, start), so every rank computes every range without communicating, and the union over
  ranks is exactly the keys of a one-rank run: the answer never depends on the rank count.
- ``pack_greedy(costs, size)``: list scheduling of weighted items, the work packing of structural
  diversity search (J. Huang, X. Huang, J. Xu, B. Choi, Y. Peng, "GPU-accelerated Structural
  Diversity Search in Graphs", Section 6.1, Algorithm 8): items taken in the order given (not
  sorted by cost first), each to the bin with the least load so far (ties to the lowest bin), its
  cost added to that load.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpucore.errors import GpucoreError


def _check_world(size: int, rank: int | None = None) -> None:
    if int(size) < 1:
        raise GpucoreError(f"world size must be >= 1, got {size}")
    if rank is not None and not 0 <= int(rank) < int(size):
        raise GpucoreError(f"rank {rank} outside a world of {size} rank(s)")


def partition(total: int, size: int, rank: int, start: int = 0) -> tuple[int, int]:
    """[begin, end) of the keys that ``rank`` owns among ``start .. start+total-1`` (see the module)."""
    _check_world(size, rank)
    total, size, rank, start = int(total), int(size), int(rank), int(start)
    if total < 0:
        raise GpucoreError(f"cannot partition {total} keys")
    base, extra = divmod(total, size)
    begin = start + rank * base + min(rank, extra)
    return begin, begin + base + (1 if rank < extra else 0)


@njit(cache=True)
def _pack(costs, size):
    owner = np.empty(costs.shape[0], dtype=np.int64)
    loads = np.zeros(size, dtype=np.float64)
    for i in range(costs.shape[0]):
        best = 0
        for b in range(1, size):  # ties to the lowest bin: strict <
            if loads[b] < loads[best]:
                best = b
        owner[i] = best
        loads[best] += costs[i]
    return owner, loads


def pack_greedy(costs, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(owner bin of each item, load of each bin): greedy list scheduling in the given order.

    ``costs``: non-negative finite estimated costs, one per item. Deterministic: the same costs in
    the same order give the same packing on every rank (so each rank can compute it alone).
    """
    _check_world(size)
    costs = np.ascontiguousarray(costs, dtype=np.float64)
    if costs.ndim != 1:
        raise GpucoreError(f"pack_greedy: costs must be one-dimensional, got shape {costs.shape}")
    if costs.size and not (np.all(np.isfinite(costs)) and costs.min() >= 0):
        raise GpucoreError("pack_greedy: costs must be finite and >= 0")
    return _pack(costs, int(size))
