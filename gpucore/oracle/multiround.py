"""Expected spread of a multi-round seed plan (multi-round influence maximization, MRIM).

A plan gives T seed sets S_0 .. S_{T-1}, one per round. The rounds diffuse independently (each in a
world of its own) and a user counts once however many rounds activate it: the influence of the
plan is E[|A_0 u A_1 u ... u A_{T-1}|], A_t the users that S_t activates in round t's world (the
objective of Sun et al., "Multi-Round Influence Maximization", KDD 2018, Section 2; see
``docs/references.md``).

Monte-Carlo run ``s`` of ``multi_round_spread(seed=S)`` uses, in round ``t``, the world
``mix(S, ORACLE, s, t)``: every run (and every round of it) can be replayed on its own with
``simulate_world``, and the per-run counts do not depend on the number of runs or on the backend.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpucore.backend import get_backend
from gpucore.errors import GpucoreError
from gpucore.oracle.api import SpreadResult, simulate_worlds, spread_statistics, warm_up
from gpucore.oracle.checks import check_confidence, check_model, check_runs, check_seeds, check_u64
from gpucore.progress import progress
from gpucore.random import Stream, mix4
from gpucore.timing import Phases

_ORACLE = np.uint64(int(Stream.ORACLE))
#: cells of the (worlds x n) activation matrix one simulate_worlds call may hold
_CHUNK_CELLS = 1 << 24


@njit(cache=True)
def round_world_seeds(seed, start, count, rnd):
    """World seeds of round ``rnd`` of runs ``start .. start+count-1``: mix(seed, ORACLE, run, rnd)."""
    out = np.empty(count, dtype=np.uint64)
    for i in range(count):
        out[i] = mix4(np.uint64(seed), _ORACLE, np.uint64(start + i), np.uint64(rnd))
    return out


def multi_round_spread(graph, seeds_by_round, model: str = "IC", runs: int = 10000, seed: int = 0, *,
                       backend="auto", confidence: float = 0.95) -> SpreadResult:
    """Influence of a T-round plan (internal ids per round) by forward Monte-Carlo.

    Round ``t`` of run ``s`` activates ``seeds_by_round[t]`` in world ``mix(seed, ORACLE, s, t)``;
    run ``s`` counts the users active in at least one round. Returns a ``SpreadResult`` (mean,
    stderr, normal CI, per-run counts; ``num_seeds`` = seeds over all rounds). A round may repeat a
    seed of another round, never one of its own. Errors (``GpucoreError``) as ``spread``, per round.
    """
    model = check_model(model)
    if isinstance(seeds_by_round, (str, bytes)) or not hasattr(seeds_by_round, "__len__") or not len(seeds_by_round):
        raise GpucoreError("seeds_by_round: expected a non-empty sequence of seed lists, one per round")
    rounds = [check_seeds(s, graph.n, f"round {t} seeds") for t, s in enumerate(seeds_by_round)]
    runs = check_runs(runs)
    seed = check_u64(seed, "seed")
    confidence = check_confidence(confidence)
    resolved = get_backend(backend) if isinstance(backend, str) else backend
    chunk = int(max(1, min(runs, _CHUNK_CELLS // max(graph.n, 1))))
    counts = np.empty(runs, dtype=np.int64)
    warm = warm_up(graph, model, resolved, sets=True)
    timer = Phases(("simulate",))
    with timer.phase("simulate"), progress(total=runs, desc=f"oracle ({len(rounds)} rounds)", unit="run") as bar:
        for lo in range(0, runs, chunk):
            hi = min(runs, lo + chunk)
            per_round = [simulate_worlds(graph, ids, model, round_world_seeds(seed, lo, hi - lo, t), backend=resolved)
                         for t, ids in enumerate(rounds)]
            for r in range(hi - lo):
                counts[lo + r] = np.unique(np.concatenate([worlds[r].active for worlds in per_round])).size
            bar.update(hi - lo)
    mean, stderr, low, high = spread_statistics(counts, confidence)
    return SpreadResult(model=model, mean=mean, stderr=stderr, ci_low=low, ci_high=high, confidence=confidence,
                        runs=runs, seed=seed, num_seeds=int(sum(s.size for s in rounds)),
                        backend=getattr(resolved, "name", "cpu"), seconds=timer.total, counts=counts,
                        warm_up_seconds=warm)
