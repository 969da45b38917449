"""The refinement's candidates and its lazy exact gains (our addition to DiFuseR, ``docs/difuser.md``).

Rule. With ``--refine L`` the candidates for seed i are the L vertices of best sketch score (ties to
the lowest id) **and every vertex that was a candidate for an earlier seed** and is not chosen yet;
the seed is the candidate of largest exact marginal gain on the worlds (the registers a cascade
from it would newly set to -1, summed over the ranks), ties to the lowest id. The history matters
where the sketch misranks: a vertex can drop out of the top L by the log score while its exact gain
is still the largest (at YouTube size, p = 0.1, keeping the earlier candidates raised the seeds'
coverage of the same worlds from 6,925 to 7,366, ``results/reference/difuser/README.md``).

Evaluation. On fixed worlds the exact gain is a coverage function of the seed set (a cascade from
v newly visits v's reach minus the seeds' reach, world by world), so it never grows as seeds are
added: a gain computed for an earlier seed bounds the gain now. This is the lazy greedy
evaluation of Minoux (1978) that Leskovec et al. use as CELF ("Cost-effective outbreak detection
in networks", KDD 2007, sec. 4.1): candidates never evaluated are probed; then the candidate of
largest bound is probed again while its bound is stale, until the largest bound is a gain computed
for this seed. That candidate is the seed: every other bound, hence every other gain, is smaller
(or equal with a larger id). So the seed is exactly the rule's, with far fewer probes than
recomputing every candidate's gain. The bounds are sums over the ranks, identical everywhere, so
every rank probes the same vertices in the same order (each probe is one collective) and the seeds
do not depend on the split.
"""

from __future__ import annotations

import heapq

import numpy as np

#: ``LazyGains.bound`` of a vertex whose gain was never computed, and of a chosen one
UNKNOWN, CHOSEN = -1, -2


class LazyGains:
    """Exact-gain bounds of every vertex that has been a candidate (module docstring).

    ``gains_of(vertices) -> int64 array``: the exact gains of ``vertices`` now (summed over the ranks);
    ``probes``: how many gains were computed in all."""

    def __init__(self, n: int, gains_of):
        self.bound = np.full(int(n), UNKNOWN, dtype=np.int64)
        self.gains_of = gains_of
        self.probes = 0

    def _probe(self, vertices: list[int], fresh: set[int]) -> None:
        self.bound[vertices] = np.asarray(self.gains_of(vertices), dtype=np.int64)
        self.probes += len(vertices)
        fresh.update(vertices)

    def choose(self, candidates: list[int]) -> int:
        """The seed among ``candidates`` (the sketch's best, not chosen) and every earlier candidate not
        chosen: the largest exact gain, ties to the lowest id. The seed is marked chosen."""
        fresh: set[int] = set()
        new = [int(v) for v in candidates if self.bound[v] == UNKNOWN]
        if new:
            self._probe(new, fresh)
        pool = np.flatnonzero(self.bound >= 0)
        heap = list(zip((-self.bound[pool]).tolist(), pool.tolist()))
        heapq.heapify(heap)
        while heap[0][1] not in fresh:  # the largest bound is stale: compute it for this seed
            _, v = heapq.heappop(heap)
            self._probe([v], fresh)
            heapq.heappush(heap, (-int(self.bound[v]), v))
        seed = heap[0][1]
        self.bound[seed] = CHOSEN
        return int(seed)
