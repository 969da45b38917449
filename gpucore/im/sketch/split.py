"""Which worlds each rank holds: the naive split and FASST (issue 17, ``docs/difuser.md``).

Göktürk & Kaya, "DiFuseR: a distributed sketch-based influence maximization algorithm for GPUs"
(arXiv 2410.14047), section 3 (worlds split over devices, each with its device-local graph) and
section 4.1 (fusing-aware sample-space tasking, FASST); measured in section 5.4, Tables 5 and 7.

A split deals the R global worlds to ``size`` ranks in an *order*, contiguous shares of that order
in multiples of 32 worlds (``WORLD_QUANTUM``: a warp's worth, the kernels' unit), the shares cut by
``gpucore.dist.partition`` over the R / 32 quanta (lengths differ by at most one quantum, the longer
ones first). A rank holds the worlds of its share in increasing world index, so its register
columns follow the global order. A split only decides *where* a world lives: every world keeps its
keys (``gpucore.im.sketch.hashing``), so the per-vertex score sums, the seeds and the spread do not
depend on the split nor on the number of ranks.

- ``naive``: the order in which the world numbers X'_i were drawn.
- ``fasst``: increasing X_r (ties by draw). Under xor sampling an arc is live in world r when
  ``X_r XOR h(e) < W_e``; for a small threshold this needs X_r to agree with h(e) on the high
  bits, so worlds with close X_r tend to keep the same arcs. A share of consecutive X_r then keeps
  fewer arcs in its local graph than a share of random worlds, and an arc is copied to fewer ranks.

With the default ``fasst=True`` worlds (world r takes the r-th smallest X'), the fasst order is the
world index itself (rank shares are index ranges) and the naive order follows the draws; with
``fasst=False`` worlds it is the other way round. Keyed sampling has no X_r (each arc and world
has its own coin): both splits deal the worlds in index order there, and the local graphs are the
same.
"""

from __future__ import annotations

import numpy as np

from gpucore.dist import partition
from gpucore.errors import GpucoreError
from gpucore.im.sketch.hashing import world_draws
from gpucore.im.sketch.layout import WORLD_QUANTUM, check_registers

SPLITS = ("fasst", "naive")
#: the split of ``difuser(world_split=None)`` and of the CLI
DEFAULT_SPLIT = "fasst"


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise GpucoreError(f"--world-split {split!r}: choose one of {', '.join(SPLITS)}")
    return split


def world_order(seed: int, registers: int, sampling: str, fasst: bool, split: str) -> np.ndarray:
    """The global worlds (int64 [R], a permutation of 0..R-1) in the order a split deals them out."""
    registers = check_registers(registers)
    check_split(split)
    if sampling == "keyed":
        return np.arange(registers, dtype=np.int64)
    by_value = np.argsort(world_draws(seed, registers), kind="stable")  # by_value[r]: the draw that the r-th smallest X came from
    if fasst:  # world r holds the r-th smallest draw: fasst = index order; naive = the world of each draw
        return np.arange(registers, dtype=np.int64) if split == "fasst" else np.argsort(by_value).astype(np.int64)
    return by_value.astype(np.int64) if split == "fasst" else np.arange(registers, dtype=np.int64)


def rank_worlds(order: np.ndarray, size: int, rank: int) -> np.ndarray:
    """The worlds (increasing int64) of ``rank``'s share of ``order`` among ``size`` ranks."""
    quanta = order.shape[0] // WORLD_QUANTUM
    if size > quanta:
        raise GpucoreError(f"--registers {order.shape[0]}: {size} ranks need at least {WORLD_QUANTUM * size} "
                           f"worlds ({WORLD_QUANTUM} per rank); use more registers or at most {quanta} ranks")
    begin, end = partition(quanta, size, rank)
    return np.sort(order[begin * WORLD_QUANTUM:end * WORLD_QUANTUM])
