"""The independent oracle: forward Monte-Carlo spread, adaptive replay, and the check of result files.

Independent of the solvers by construction: it imports only the graph loader (``gpucore.graph``),
the backend selection (``gpucore.backend``), the phase timer (``gpucore.timing``) and the documented
world-realization functions (``gpucore.random``: ``ic_live``, ``lt_threshold``, ``lt_fixed_weight``,
``mix``), and has its own traversal code (Numba in ``cpu.py``, CUDA in ``gpucore/kernels/oracle/``).
No solver imports it (``tests/test_oracle_independence.py``).

- ``spread(graph, seeds, model, runs=10000, seed=0)`` -> ``SpreadResult`` (mean, stderr, CI, runs)
- ``multi_round_spread(graph, seeds_by_round, model, runs, seed)`` -> ``SpreadResult`` of a T-round
  plan (rounds in independent worlds, a user counted once)
- ``simulate_world(graph, seeds, model, world_seed)`` -> ``WorldResult`` (the activated set)
- ``replay(graph, rounds, model, world_seed, eta)`` -> ``ReplayResult`` (pass/fail, first mismatch)
- ``verify_result(result, graph, ...)`` -> the report of ``gpucore verify`` on a result file
  (AMCSS, IM, multi-round IM)

World semantics and test vectors: ``docs/oracle.md``.
"""

from gpucore.oracle import api
from gpucore.oracle.api import (
    ReplayResult,
    ReplayRound,
    SpreadResult,
    WorldResult,
    mc_world_seeds,
    replay,
    simulate_world,
    simulate_worlds,
    spread,
)
from gpucore.oracle.multiround import multi_round_spread
from gpucore.oracle.verify import verify_result

__all__ = sorted([*api.__all__, "multi_round_spread", "verify_result"])
