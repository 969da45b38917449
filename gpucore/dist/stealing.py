"""Lists of weighted items shared out in chunks, with work stealing: the status table of a
dynamic schedule over ranks (J. Huang, X. Huang, J. Xu, B. Choi, Y. Peng, "GPU-accelerated Structural
Diversity Search in Graphs", Section 6.2, Algorithm 9).

``WorkTable(costs, policy, chunk_cost)``: list r (``costs[r]``, one estimated cost per item, in the
order the items are to be done) starts as rank r's work. Every rank holds one *segment*, a range
``[begin, end)`` of one list: at first its own list whole. ``claim(rank)`` hands the rank its next
chunk, the items at the front of its segment up to an estimated cost of
``min(chunk_cost, R / (2 ranks))`` (R: the unclaimed cost of every rank; at least one item), so
chunks shrink as the work runs out (guided self-scheduling) and no rank is left holding a long
chunk at the end. When the rank's segment is empty, the policy decides:

- ``dynamic`` (the paper's Algorithm 9): the *victim* is the rank with the largest unclaimed cost
  (the top of the paper's max-heap; ties to the lowest rank); the thief takes items from the BACK of
  the victim's segment, one by one, while what it took costs less than what the victim keeps, so
  it ends with about half. The victim keeps the front; both stay in the table, so either can be
  robbed or rob again (Algorithm 9 never pushes them back into its heap: spec pitfall 2). With a
  handful of ranks the heap is this scan of the table;
- ``exhausted`` (the paper's MGPU-Div-E): the thief takes ALL of the victim's unclaimed items;
- ``none``: no stealing; the rank's work is over.

Work already claimed (a chunk in flight) is never stolen. ``live(list, begin, end)`` (optional)
returns the end of the items of ``[begin, end)`` that are still worth doing: it may only shrink as
the search goes (structural diversity search drops the tail whose bounds fall below the t-th
score); items past it are neither claimed nor stolen. ``claim`` returns ``(list, begin, end)`` or
None when the rank's work is over for good (under a stealing policy: no unclaimed item anywhere).

The table is plain data (no communication): ``gpucore.dist.service`` runs it on rank 0 and answers
every rank's claims. Per rank it records the chunks, items and estimated cost it claimed, its
initial load, the steals it made and suffered and the estimated cost they moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from gpucore.errors import GpucoreError

POLICIES = ("dynamic", "exhausted", "none")


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise GpucoreError(f"--stealing {policy!r}: choose dynamic, exhausted or none")
    return policy


@dataclass
class Segment:
    """The items ``begin .. end-1`` of list ``list`` (the rank's unclaimed work)."""

    list: int
    begin: int
    end: int


@dataclass
class RankRecord:
    """What one rank claimed and stole (estimated costs)."""

    initial_load: float = 0.0
    chunks: int = 0
    items: int = 0
    cost: float = 0.0
    steals_made: int = 0
    steals_suffered: int = 0
    cost_stolen: float = 0.0  # taken from others
    cost_lost: float = 0.0  # taken by others

    def to_dict(self) -> dict:
        return {"initial_load": self.initial_load, "chunks": self.chunks, "items": self.items,
                "estimated_cost": self.cost, "steals_made": self.steals_made,
                "steals_suffered": self.steals_suffered, "cost_stolen": self.cost_stolen,
                "cost_lost": self.cost_lost}


class WorkTable:
    """The status table (module docstring)."""

    def __init__(self, costs, policy: str, chunk_cost: float,
                 live: Callable[[int, int, int], int] | None = None):
        self.policy = check_policy(policy)
        if not chunk_cost > 0:
            raise GpucoreError(f"chunk cost {chunk_cost!r}: must be > 0")
        self.chunk_cost = float(chunk_cost)
        self.prefix = []
        for c in costs:
            c = np.asarray(c, dtype=np.float64)
            if c.size and not (np.all(np.isfinite(c)) and c.min() >= 0):
                raise GpucoreError("work table: item costs must be finite and >= 0")
            self.prefix.append(np.concatenate([[0.0], np.cumsum(c)]))
        self.size = len(self.prefix)
        self.segments = [Segment(r, 0, p.size - 1) for r, p in enumerate(self.prefix)]
        self.records = [RankRecord(initial_load=float(p[-1])) for p in self.prefix]
        self.live = live

    def cost(self, lst: int, begin: int, end: int) -> float:
        """Estimated cost of the items ``begin .. end-1`` of list ``lst``."""
        return float(self.prefix[lst][end] - self.prefix[lst][begin])

    def remaining(self, rank: int) -> float:
        """Estimated cost of the rank's unclaimed items still worth doing."""
        seg = self.segments[rank]
        if self.live is not None and seg.begin < seg.end:
            seg.end = max(seg.begin, min(seg.end, int(self.live(seg.list, seg.begin, seg.end))))
        return self.cost(seg.list, seg.begin, seg.end) if seg.begin < seg.end else 0.0

    def claim(self, rank: int) -> tuple[int, int, int] | None:
        """The rank's next chunk ``(list, begin, end)``, stealing when its segment is empty; None
        when its work is over."""
        left = [self.remaining(r) for r in range(self.size)]
        seg = self.segments[rank]
        if seg.begin >= seg.end and not self._steal(rank, left):
            return None
        seg = self.segments[rank]
        target = min(self.chunk_cost, sum(left) / (2 * self.size))
        prefix = self.prefix[seg.list]
        end = int(np.searchsorted(prefix, prefix[seg.begin] + target, side="right")) - 1
        end = min(max(end, seg.begin + 1), seg.end)
        chunk = (seg.list, seg.begin, end)
        seg.begin = end
        rec = self.records[rank]
        rec.chunks += 1
        rec.items += end - chunk[1]
        rec.cost += self.cost(*chunk)
        return chunk

    def _steal(self, thief: int, left: list[float]) -> bool:
        if self.policy == "none":
            return False
        victims = [r for r in range(self.size) if r != thief and self.segments[r].begin < self.segments[r].end]
        if not victims:
            return False
        victim = max(victims, key=lambda r: (left[r], -r))
        seg = self.segments[victim]
        if self.policy == "exhausted":
            cut = seg.begin
        else:
            # take items from the back while what was taken costs less than what the victim keeps:
            # the first cut (from the back) where taken >= kept, i.e. prefix[cut] <= (prefix[begin] + prefix[end]) / 2
            prefix = self.prefix[seg.list]
            mid = (prefix[seg.begin] + prefix[seg.end]) / 2
            cut = int(np.searchsorted(prefix[seg.begin:seg.end + 1], mid, side="right")) - 1 + seg.begin
            cut = min(max(cut, seg.begin), seg.end - 1)  # the thief takes one item at least
        taken = self.cost(seg.list, cut, seg.end)
        self.segments[thief] = Segment(seg.list, cut, seg.end)
        seg.end = cut
        t, v = self.records[thief], self.records[victim]
        t.steals_made += 1
        t.cost_stolen += taken
        v.steals_suffered += 1
        v.cost_lost += taken
        left[thief], left[victim] = taken, left[victim] - taken
        return True
