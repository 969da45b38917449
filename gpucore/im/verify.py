"""Oracle verification of an IM result (``gpucore im --verify RUNS``): the oracle's forward Monte-Carlo.

- IM (rounds = 1): ``gpucore.oracle.verify.verify_result`` (the same check as ``gpucore verify``):
  spread of the seeds with a CI, and the solver's ``estimated_spread`` must lie in that CI widened
  by ``tolerance``.
- MRIM (rounds = T > 1): run ``r`` draws T independent oracle worlds (``mc_world_seeds(seed, runs,
  start=t*runs)[r]`` for round t), activates round t's seeds in world t, and counts the nodes
  active in at least one round; mean, stderr and a normal CI over the runs, same acceptance rule.
"""

from __future__ import annotations

import math
import statistics

import numpy as np


def verify_result(graph, result: dict, runs: int = 10000, seed: int = 1, backend="auto", tolerance: float = 0.1,
                  confidence: float = 0.95) -> dict:
    """The verification report of ``result`` (``passed`` says whether it holds)."""
    if int(result.get("rounds", 1)) == 1:
        from gpucore.oracle.verify import verify_result as oracle_verify

        return oracle_verify(result, graph, str(result.get("graph", {}).get("path", "result")), runs=runs,
                             seed=seed, backend=backend, tolerance=tolerance, confidence=confidence)
    return verify_mrim(graph, result, runs, seed, backend, tolerance, confidence)


def mrim_spread(graph, seeds_by_round, model: str, runs: int, seed: int, backend="auto", chunk: int = 256):
    """Per-run counts of nodes active in at least one of the independent rounds."""
    from gpucore.oracle import mc_world_seeds, simulate_worlds

    rounds = len(seeds_by_round)
    counts = np.zeros(runs, dtype=np.int64)
    mark = np.zeros(graph.n, dtype=np.int64)
    stamp = 0
    for lo in range(0, runs, chunk):
        hi = min(runs, lo + chunk)
        per_round = []
        for t in range(rounds):
            worlds = mc_world_seeds(seed, hi - lo, start=t * runs + lo)
            per_round.append(simulate_worlds(graph, np.asarray(seeds_by_round[t], dtype=np.int64), model, worlds,
                                             backend=backend))
        for r in range(hi - lo):
            stamp += 1
            for t in range(rounds):
                mark[per_round[t][r].active] = stamp
            counts[lo + r] = int(np.count_nonzero(mark == stamp))
    return counts


def verify_mrim(graph, result: dict, runs: int, seed: int, backend, tolerance: float, confidence: float) -> dict:
    seeds = [np.asarray(r, dtype=np.int64) for r in result["seed_ids"]]
    counts = mrim_spread(graph, seeds, result["model"], runs, seed, backend)
    mean = float(counts.mean())
    stderr = float(counts.std(ddof=1) / math.sqrt(runs)) if runs > 1 else float("inf")
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2.0)
    lo, hi = mean - z * stderr, mean + z * stderr
    est = float(result["estimated_spread"])
    failures = []
    if any(np.unique(s).size != s.size for s in seeds):
        failures.append("a round holds a seed twice")
    if not lo * (1 - tolerance) <= est <= hi * (1 + tolerance):
        failures.append(f"estimated_spread {est:.6g} outside the oracle's CI [{lo:.6g}, {hi:.6g}] widened by "
                        f"{tolerance:.0%}")
    return {"kind": "verify", "checked": "mrim", "rounds": len(seeds), "model": result["model"], "runs": runs,
            "seed": seed, "mean": mean, "stderr": stderr, "ci_low": lo, "ci_high": hi, "ci": [lo, hi],
            "confidence": confidence, "estimated_spread": est, "ratio": est / mean if mean > 0 else None,
            "tolerance": tolerance, "failures": failures, "passed": not failures}
