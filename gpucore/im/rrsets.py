"""A growing collection of RR sets: flat int32 elements + int64 offsets (a CSR of sets), ordered by j.

Set ``i`` of a collection is the RR set of key index ``j = j_begin + i``; its elements are
``nodes[offsets[i]:offsets[i+1]]``. An element is ``t * n + u`` for node ``u`` reached in round ``t``
(``t = 0`` always for plain IM, so elements are node ids). The same layout lives in NumPy (cpu) or
CuPy (cuda) arrays; storage grows geometrically so appends are amortised.

Key scheme (``docs/im.md``): the root of set j is ``index_below(mix(seed, ROOT, j, 0, 0), n)``; round
``t`` of set j uses the sample key ``s = j * T + t``: IC coin of original arc e
``bernoulli(step(mix(seed, COIN, s), e), p_e)``, LT choice at v ``lt_draw(mix(seed, LT_CHOICE, s, v, 0))``.
IMM's lower-bound search and final selection use ``j = 0, 1, ...`` (the final phase extends the
search's sets, ``docs/im.md``); the spread estimate scores the seeds on other sets,
``j = ESTIMATE_OFFSET, ESTIMATE_OFFSET + 1, ...``.

A collection's keys are one contiguous range in a single process. A rank of a distributed run holds
its share of each extension of a phase (``gpucore.dist.partition``): several ranges, one per
extension, recorded in ``blocks``; ``seek(j)`` starts the next one, and samplers append at
``j_end`` whatever the range (``docs/multigpu.md``).
"""

from __future__ import annotations

import numpy as np

#: first set index of the sets that score IMM's seeds (disjoint from the selection's, which stay below it)
ESTIMATE_OFFSET = 1 << 40
#: largest number of rounds (keeps j * T + t below 2^63 for every j below 2 * ESTIMATE_OFFSET)
MAX_ROUNDS = 1 << 16


class RRCollection:
    """RR sets of one phase, on one backend (``xp``): keys ``j_begin .. j_begin + count - 1``, or over
    several ranges after ``seek`` (``blocks``: (first key, first set index) of each range)."""

    def __init__(self, xp, backend, j_begin: int, n: int, rounds: int):
        self.xp = xp
        self.backend = backend
        self.j_begin = int(j_begin)
        self.n = int(n)
        self.rounds = int(rounds)
        self.universe = self.n * self.rounds
        self.count = 0
        self.total = 0
        self.projected_bytes = 0  # the IMM driver's memory projection for this collection (bytes)
        self.blocks = [(self.j_begin, 0)]
        self._offsets = backend.zeros((1024,), np.int64, what="RR-set offsets")
        self._nodes = backend.empty((1024,), np.int32, what="RR-set elements")

    @property
    def offsets(self):
        return self._offsets[: self.count + 1]

    @property
    def nodes(self):
        return self._nodes[: self.total]

    @property
    def j_end(self) -> int:
        """The key of the next set appended."""
        first_key, first_set = self.blocks[-1]
        return first_key + self.count - first_set

    def seek(self, j: int) -> None:
        """Make ``j`` the key of the next set appended (a new range, unless ``j`` already is ``j_end``)."""
        j = int(j)
        if j == self.j_end:
            return
        if self.blocks[-1][1] == self.count:  # the last range is still empty: move it
            self.blocks[-1] = (j, self.count)
        else:
            self.blocks.append((j, self.count))

    def keys(self) -> np.ndarray:
        """The key j of every set, in set order (host int64)."""
        ends = [first for _, first in self.blocks[1:]] + [self.count]
        return np.concatenate([np.arange(key, key + end - first, dtype=np.int64)
                               for (key, first), end in zip(self.blocks, ends)])

    @property
    def mean_size(self) -> float:
        return self.total / self.count if self.count else 0.0

    def nbytes(self) -> int:
        return int(self._offsets.nbytes + self._nodes.nbytes)

    def capacity(self) -> tuple[int, int]:
        """(sets, elements) the storage holds before it must grow."""
        return int(self._offsets.shape[0]) - 1, int(self._nodes.shape[0])

    def reserve(self, sets: int, elements: int) -> None:
        """Make room for ``sets`` more sets holding ``elements`` more elements (geometric growth)."""
        need_sets = self.count + 1 + sets
        if need_sets > self._offsets.shape[0]:
            cap = max(need_sets, int(self._offsets.shape[0] * 1.5))
            new = self.backend.empty((cap,), np.int64, what="RR-set offsets")
            new[: self.count + 1] = self._offsets[: self.count + 1]
            self._offsets = new
        need = self.total + elements
        if need > self._nodes.shape[0]:
            cap = max(need, int(self._nodes.shape[0] * 1.5))
            new = self.backend.empty((cap,), np.int32, what=f"RR-set elements ({cap:,} int32)")
            new[: self.total] = self._nodes[: self.total]
            self._nodes = new

    def append(self, sizes, chunks) -> None:
        """Append sets with the given sizes (host or device int64 array), elements from ``chunks``.

        ``chunks`` is a list of (first set index within ``sizes``, array of those sets' elements
        back to back); together they must cover every set exactly once.
        """
        xp = self.xp
        sizes = xp.asarray(sizes, dtype=np.int64)
        count = int(sizes.shape[0])
        added = int(sizes.sum()) if count else 0
        self.reserve(count, added)
        if count:
            ends = xp.cumsum(sizes) + self.total
            self._offsets[self.count + 1 : self.count + 1 + count] = ends
        for first, data in chunks:
            start = int(self._offsets[self.count + first])
            self._nodes[start : start + data.shape[0]] = data
        self.count += count
        self.total += added

    def host_sets(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, elements) as NumPy arrays (copies from the GPU)."""
        return self.backend.to_host(self.offsets), self.backend.to_host(self.nodes)

    def release(self) -> None:
        """Free the storage (fresh empty arrays: a slice would keep the old buffers alive)."""
        self.count = self.total = 0
        self.blocks = [(self.j_begin, 0)]
        self._offsets = self.backend.zeros((1,), np.int64, what="RR-set offsets")
        self._nodes = self.backend.empty((0,), np.int32, what="RR-set elements")


def top_k_sum(xp, counts, n: int, rounds: int, k: int) -> int:
    """Sum over rounds of the k largest of ``counts`` (length n * rounds) in that round: k seeds per
    round cover at most that many sets, however they overlap."""
    per_round = xp.sort(counts.reshape(rounds, n), axis=1)[:, n - k:]
    return int(per_round.sum(dtype=np.int64))
