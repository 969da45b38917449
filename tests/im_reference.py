"""Reference greedy for the IM quality tests: CELF (Leskovec et al., KDD 2007) on Monte-Carlo spreads.

The spread of a set is the oracle's public ``spread(graph, seeds, model, runs=worlds, seed=seed)``:
its run ``s`` is the world ``mix(seed, ORACLE, s)`` whatever the seed set, so every candidate is
scored on the same sample of worlds (common random numbers). On a fixed sample the estimate is a
monotone submodular function of the set, so CELF's lazy re-evaluation returns exactly the plain
greedy on it. The reference is a different *algorithm* (greedy on forward simulations) from IMM's
(greedy max-cover on reverse-reachable sets), so agreement between the two is evidence for both.

Only for small graphs: the first pass simulates every node on every world.
"""

from __future__ import annotations

import heapq

from gpucore.oracle import spread


def celf(graph, k: int, model: str = "IC", worlds: int = 200, seed: int = 0) -> dict:
    """CELF greedy: ``{"seed_ids": [...], "spreads": [sample spread after each pick]}``."""
    model = model.upper()

    def sample_spread(seeds) -> float:
        return spread(graph, seeds, model, runs=worlds, seed=seed, backend="cpu").mean

    heap = [(-sample_spread([v]), v, 0) for v in range(graph.n)]  # (-gain, node, picks when computed)
    heapq.heapify(heap)
    chosen, spreads, current = [], [], 0.0
    while len(chosen) < k and heap:
        neg, v, when = heapq.heappop(heap)
        if when == len(chosen):
            chosen.append(v)
            current += -neg
            spreads.append(current)
            continue
        heapq.heappush(heap, (-(sample_spread(chosen + [v]) - current), v, len(chosen)))
    return {"seed_ids": chosen, "spreads": spreads}
