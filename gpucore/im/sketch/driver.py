"""DiFuseR's greedy loop (Algorithm 4 with the spec's corrections) and its result dict.

``difuser(graph, k, ...)``:

1. Fill-Sketches, then Simulate until no register changes;
2. for i = 1..k: scores = the per-vertex sums over the worlds (``layout.score_table``), summed over
   the processes by ``reduction``; the seed is the argmax among vertices not chosen yet (ties to the
   lowest id). With ``refine = L > 1`` (our addition, docs/difuser.md) the L best of them are
   candidates and the seed is the one of largest *exact* marginal gain on the worlds (the registers
   a cascade from it would newly set to -1, summed over the processes; ties to the lowest id).
   Cascade from the seed (it becomes -1 in every world first, pitfall 3); the internal spread
   estimate is the number of -1 registers over the worlds, divided by the number of worlds;
3. rebuild (Fill-Sketches, which resets only non-visited registers, then Simulate) when
   ``(score - oldscore) / score > rebuild_threshold`` (the pseudocode's test, pitfall 2), and set
   oldscore = score. The rebuild after the k-th seed would not change the answer and is skipped.

Several processes (issue 17) pass ``world_range`` (the worlds this one holds) and a ``reduction``
with ``sum_int(int) -> int`` and ``sum_array(array) -> array`` (an all-reduce of per-vertex int64
score parts and of counts); every process then takes the same argmax, so no broadcast is needed.
``LocalReduction`` (the default) is one process. The score parts are integers, so the sums, and the
seeds, are the same for every split of the worlds.
"""

from __future__ import annotations

import time

import numpy as np

from gpucore.backend import available_ram, get_backend
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.sketch.hashing import DEFAULT_SAMPLING, SAMPLINGS, world_keys
from gpucore.im.sketch.layout import ESTIMATORS, bytes_needed, score_table, worlds_of
from gpucore.progress import status
from gpucore.timing import Phases

PHASES = ("fill", "simulate", "cascade", "select", "refine")
#: most candidates whose exact gains are computed per seed
MAX_REFINE = 1024


class LocalReduction:
    """The reduction of one process holding all its worlds: sums are the values themselves."""

    def sum_int(self, value: int) -> int:
        return int(value)

    def sum_array(self, array):
        return array


def make_engine(graph, keys, seed: int, backend):
    """The register engine of a backend: ``CUDAEngine`` or ``CPUEngine``."""
    if backend.is_cuda:
        from gpucore.im.sketch.cuda import CUDAEngine

        return CUDAEngine(graph, keys, seed, backend)
    from gpucore.im.sketch.cpu import CPUEngine

    return CPUEngine(graph, keys, seed, backend)


def top_candidates(engine, sums, chosen, count: int) -> list[int]:
    """The ``count`` vertices of largest score not chosen yet, best first (ties to the lowest id)."""
    picked = []
    for _ in range(count):
        s = engine.argmax(sums, chosen)
        if s < 0:
            break
        picked.append(s)
        chosen[s] = 1
    for s in picked:
        chosen[s] = 0
    return picked


def check_parameters(graph, k, rebuild_threshold, sampling: str, estimator: str, refine) -> int:
    """Validate the scalar parameters (one-line GpucoreError each); returns k as an int."""
    if isinstance(refine, bool) or not isinstance(refine, (int, np.integer)) or not 0 <= refine <= MAX_REFINE:
        raise GpucoreError(f"--refine {refine}: must be an integer in [0, {MAX_REFINE}] (0: the sketch score alone)")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= graph.n:
        raise GpucoreError(f"--k {k}: must be an integer in [1, {graph.n}] (the vertices of {graph.path})")
    if isinstance(rebuild_threshold, bool) or not isinstance(rebuild_threshold, (int, float, np.floating)) \
            or not 0.0 <= float(rebuild_threshold) < 1.0:
        raise GpucoreError(f"--rebuild-threshold {rebuild_threshold}: must lie in [0, 1)")
    if sampling not in SAMPLINGS:
        raise GpucoreError(f"--sampling {sampling!r}: choose one of {', '.join(SAMPLINGS)}")
    if estimator not in ESTIMATORS:
        raise GpucoreError(f"estimator {estimator!r}: choose one of {', '.join(ESTIMATORS)}")
    return int(k)


def check_memory(graph, worlds, keyed: bool, marks: bool, backend, memory_limit: int | None) -> int:
    """Bytes the solve needs; OutOfMemoryError naming them when they exceed the budget."""
    need = bytes_needed(graph.n, graph.m, worlds.count, keyed, marks)
    if memory_limit is not None:
        budget = int(memory_limit)
    elif backend.is_cuda:
        budget = int(backend.free_memory() * 0.92)
    else:
        budget = int(available_ram() * 0.85)
    if need > budget:
        raise OutOfMemoryError(
            f"DiFuseR needs about {format_bytes(need)} ({graph.n:,} vertices x {worlds.count} registers = "
            f"{format_bytes(graph.n * worlds.count)} of registers, plus the arcs) but {format_bytes(budget)} is "
            f"available on {backend.name}; lower --registers")
    return need


def difuser(
    graph,
    k: int,
    registers: int = 1024,
    rebuild_threshold: float = 0.01,
    sampling: str | None = None,
    seed: int = 0,
    backend="auto",
    *,
    world_range=None,
    fasst: bool = True,
    estimator: str = "log",
    refine: int = 32,
    reduction=None,
    memory_limit: int | None = None,
) -> dict:
    """Run DiFuseR; returns a result dict of kind ``im`` (see ``docs/difuser.md``)."""
    t_start = time.perf_counter()
    sampling = DEFAULT_SAMPLING if sampling is None else sampling
    k = check_parameters(graph, k, rebuild_threshold, sampling, estimator, refine)
    refine = int(refine)
    worlds = worlds_of(registers, world_range)
    reduction = reduction or LocalReduction()
    be = get_backend(backend) if isinstance(backend, str) else backend
    need = check_memory(graph, worlds, sampling == "keyed", refine > 1, be, memory_limit)
    be.reset_peak()
    keys = world_keys(int(seed), worlds.total, worlds.first, worlds.stop, sampling, bool(fasst))
    engine = make_engine(graph, keys, int(seed), be)
    table = be.asarray(score_table(estimator, graph.n), what="score table")
    chosen = be.zeros((graph.n,), np.uint8, what="chosen flags")
    world_count = reduction.sum_int(worlds.count)
    phases = Phases(PHASES, sync=be.synchronize)

    def build(after: int) -> dict:
        with phases.phase("fill"):
            engine.fill()
        with phases.phase("simulate"):
            sweeps = engine.simulate()
        return {"after_seed": after, "sweeps": int(sweeps)}

    builds = [build(0)]
    seed_ids, spreads, picked_scores = [], [], []
    score = oldscore = 0.0
    for i in range(k):
        status(f"DiFuseR seed {i + 1}/{k}")
        with phases.phase("select"):
            sums = reduction.sum_array(engine.scores(table))
            candidates = top_candidates(engine, sums, chosen, max(1, refine))
        if refine > 1:
            with phases.phase("refine"):
                gains = np.asarray(be.to_host(reduction.sum_array(engine.gains(candidates))))
                candidates = [candidates[int(np.lexsort((candidates, -gains))[0])]]
        s = candidates[0]
        picked_scores.append(int(sums[s]))
        chosen[s] = 1
        with phases.phase("cascade"):
            engine.cascade(s)
            visited = reduction.sum_int(engine.visited_count())
        seed_ids.append(int(s))
        score = visited / world_count
        spreads.append(score)
        if i + 1 < k and (score - oldscore) / score > rebuild_threshold:
            builds.append(build(i + 1))
            oldscore = score
    peak = be.peak_memory()
    orig = np.asarray(graph.original_id)
    return {
        "kind": "im",
        "graph": {"path": str(graph.path), "sha256": graph.sha256, "n": int(graph.n), "m": int(graph.m)},
        "algorithm": "DiFuseR",
        "model": "IC",
        "k": k,
        "run_seed": int(seed),
        "registers": worlds.total,
        "world_range": worlds.to_list(),
        "sampling": sampling,
        "fasst": bool(fasst),
        "estimator": estimator,
        "rebuild_threshold": float(rebuild_threshold),
        "refine": refine,
        "seed_ids": seed_ids,
        "seeds": [int(orig[x]) for x in seed_ids],
        "estimated_spread": float(score),
        "spread_after_seed": spreads,
        "selection_scores": picked_scores,
        "builds": builds,
        "rebuild_rounds": len(builds) - 1,
        "simulate_sweeps": int(sum(b["sweeps"] for b in builds)),
        "seconds": time.perf_counter() - t_start,
        "seconds_by_phase": dict(phases.seconds),
        "bytes_needed": int(need),
        "register_bytes": int(graph.n) * worlds.count,
        "peak_device_memory": int(peak),
        "backend": be.device_info(),
    }
