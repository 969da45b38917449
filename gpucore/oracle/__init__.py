"""The independent oracle: forward Monte-Carlo spread and adaptive replay.

Independent of the solvers by construction: it imports only the graph loader (``gpucore.graph``),
the backend selection (``gpucore.backend``) and the documented world-realization functions
(``gpucore.random``: ``ic_live``, ``lt_threshold``, ``lt_fixed_weight``, ``mix``), and has its own
traversal code (Numba in ``cpu.py``, CUDA in ``gpucore/kernels/oracle/*.cu``).

- ``spread(graph, seeds, model, runs=10000, seed=0)`` -> ``SpreadResult`` (mean, stderr, CI, runs)
- ``simulate_world(graph, seeds, model, world_seed)`` -> ``WorldResult`` (the activated set)
- ``replay(graph, rounds, model, world_seed, eta)`` -> ``ReplayResult`` (pass/fail, first mismatch)

World semantics and test vectors: ``docs/oracle.md``.
"""

from gpucore.oracle.api import (  # noqa: F401  (the public API, listed in api.__all__)
    ReplayResult,
    ReplayRound,
    SpreadResult,
    WorldResult,
    __all__,
    mc_world_seeds,
    replay,
    simulate_world,
    simulate_worlds,
    spread,
)
