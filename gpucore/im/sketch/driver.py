"""DiFuseR's greedy loop (Algorithm 4 with the spec's corrections) and its result dict.

``difuser(graph, k, ...)``:

1. Fill-Sketches, then Simulate until no register changes;
2. for i = 1..k: scores = the per-vertex sums over the worlds (``layout.score_table``), summed over
   the ranks (``Reduction``); the seed is the argmax among vertices not chosen yet (ties to the
   lowest id). With ``refine = L > 1`` (our addition, docs/difuser.md) the L best of them and every
   earlier candidate are candidates, and the seed is the one of largest *exact* marginal gain on the
   worlds (the registers a cascade from it would newly set to -1, summed over the ranks; ties to the
   lowest id), evaluated lazily (``gpucore.im.sketch.refine``).
   Cascade from the seed (it becomes -1 in every world first, pitfall 3); the internal spread
   estimate is the number of -1 registers over the worlds, divided by the number of worlds;
3. rebuild (Fill-Sketches, which resets only non-visited registers, then Simulate) when
   ``(score - oldscore) / score > rebuild_threshold`` (the pseudocode's test, pitfall 2), and set
   oldscore = score. The rebuild after the k-th seed would not change the answer and is skipped.

Several ranks (issue 17, ``docs/multigpu.md``): ``comm`` (default ``gpucore.dist.current()``) and
``world_split`` (``gpucore.im.sketch.split``: naive or FASST) give each rank its worlds, in shares
of 32; each rank builds its engine on its local graph (the arcs live in one of its worlds,
``gpucore.im.sketch.local``). Per seed, the per-vertex int64 score parts (and the refinement's gains)
are all-reduced (NCCL on the device under ``NCCLComm``, MPI otherwise), every rank takes the same
argmax, so no broadcast is needed; the visited counts are all-reduced too. The score parts are
integers, so the sums, the seeds and the spread are the same for every split and every number of
ranks. The collectives run through a ``TimedComm``: their seconds are the ``communication`` phase.
"""

from __future__ import annotations

import numpy as np

from gpucore.backend import available_ram, get_backend
from gpucore.dist import current, same_everywhere
from gpucore.dist.timed import COMMUNICATION, NestedPhases, TimedComm
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.sketch.hashing import DEFAULT_SAMPLING, SAMPLINGS, world_keys
from gpucore.im.sketch.layout import ESTIMATORS, bytes_needed, check_registers, score_table
from gpucore.im.sketch.refine import LazyGains
from gpucore.im.sketch.split import DEFAULT_SPLIT, check_split, rank_worlds, world_order
from gpucore.progress import status
from gpucore.timing import Phases

PHASES = ("local_graph", "fill", "simulate", "cascade", "select", "refine")
#: the CUDA kernels' layouts of work (same registers and seeds): ours (default), the paper's
MAPPINGS = ("warp", "block")
#: most candidates whose exact gains are computed per seed
MAX_REFINE = 1024


class Reduction:
    """Sums over the ranks of a run (every method collective), timed as ``communication``."""

    def __init__(self, comm, phases):
        self.comm = TimedComm(comm, phases) if comm.size > 1 else None

    def sum_int(self, value: int) -> int:
        if self.comm is None:
            return int(value)
        return int(self.comm.allreduce(np.array([int(value)], dtype=np.int64))[0])

    def sum_array(self, array):
        """The element-wise sum over ranks of an int64 array (a device array stays on the device)."""
        return array if self.comm is None else self.comm.allreduce(array)

    def record(self) -> dict | None:
        return None if self.comm is None else {"collectives": self.comm.calls, "bytes": self.comm.bytes}


def make_engine(graph, keys, seed: int, backend, mapping: str = "warp", live_bits: bool = True):
    """The register engine of a backend: ``WarpEngine`` (with ``live_bits`` or not) or ``CUDAEngine``
    (``mapping`` "warp" or "block") or ``CPUEngine`` (one layout of work: the options do not apply)."""
    if backend.is_cuda:
        if mapping == "block":
            from gpucore.im.sketch.cuda import CUDAEngine

            return CUDAEngine(graph, keys, seed, backend)
        from gpucore.im.sketch.cuda_warp import WarpEngine

        return WarpEngine(graph, keys, seed, backend, live_bits=live_bits)
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


def check_parameters(graph, k, rebuild_threshold, sampling: str, estimator: str, refine, mapping: str) -> int:
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
    if mapping not in MAPPINGS:
        raise GpucoreError(f"--mapping {mapping!r}: choose one of {', '.join(MAPPINGS)}")
    if estimator not in ESTIMATORS:
        raise GpucoreError(f"estimator {estimator!r}: choose one of {', '.join(ESTIMATORS)}")
    return int(k)


def check_memory(graph, worlds: int, marks: bool, backend, memory_limit: int | None,
                 mapping: str) -> tuple[int, bool]:
    """Bytes the solve needs and whether the warp mapping's live bits fit too (they are used then);
    OutOfMemoryError naming the bytes when even the solve without them exceeds the budget."""
    warp = backend.is_cuda and mapping == "warp"
    need = bytes_needed(graph.n, graph.m, worlds, marks, warp)
    if memory_limit is not None:
        budget = int(memory_limit)
    elif backend.is_cuda:
        budget = int(backend.free_memory() * 0.92)
    else:
        budget = int(available_ram() * 0.85)
    if need > budget:
        raise OutOfMemoryError(
            f"DiFuseR needs about {format_bytes(need)} ({graph.n:,} vertices x {worlds} registers = "
            f"{format_bytes(graph.n * worlds)} of registers, plus the arcs) but {format_bytes(budget)} is "
            f"available on {backend.name}; lower --registers")
    with_bits = bytes_needed(graph.n, graph.m, worlds, marks, warp, live_bits=True)
    return (with_bits, True) if warp and with_bits <= budget else (need, False)


def difuser(
    graph,
    k: int,
    registers: int = 1024,
    rebuild_threshold: float = 0.01,
    sampling: str | None = None,
    seed: int = 0,
    backend="auto",
    *,
    fasst: bool = True,
    estimator: str = "log",
    refine: int = 32,
    mapping: str = "warp",
    world_split: str = DEFAULT_SPLIT,
    comm=None,
    memory_limit: int | None = None,
) -> dict:
    """Run DiFuseR; returns a result dict of kind ``im`` (see ``docs/difuser.md``). ``mapping``: the CUDA
    kernels' layout of work, "warp" (ours) or "block" (the paper's); both give the same result. ``comm``: the ranks
    that share the run (default ``current()``): every rank calls ``difuser`` with the same arguments
    and gets the same result, identical to a one-process run whatever ``world_split``."""
    clock = Phases(("call",))
    with clock.phase("call"):
        result = _difuser(graph, k, registers, rebuild_threshold, sampling, seed, backend, fasst, estimator, refine,
                          mapping, world_split, current() if comm is None else comm, memory_limit)
    result["seconds"] = clock.seconds["call"]
    return result


def _difuser(graph, k, registers, rebuild_threshold, sampling, seed, backend, fasst, estimator, refine, mapping,
             world_split, comm, memory_limit) -> dict:
    """The body of ``difuser`` (its ``seconds`` are added by the caller)."""
    sampling = DEFAULT_SAMPLING if sampling is None else sampling
    if comm.size > 1:  # first: arguments that differ would fail on some ranks only
        same_everywhere(comm, "DiFuseR", {
            "graph": graph.sha256, "k": k, "registers": registers, "rebuild_threshold": rebuild_threshold,
            "sampling": sampling, "seed": seed, "backend": getattr(backend, "name", backend), "fasst": fasst,
            "estimator": estimator, "refine": refine, "mapping": mapping, "world_split": world_split,
            "memory_limit": memory_limit})
    k = check_parameters(graph, k, rebuild_threshold, sampling, estimator, refine, mapping)
    refine = int(refine)
    total = check_registers(registers)
    check_split(world_split)
    ids = rank_worlds(world_order(int(seed), total, sampling, bool(fasst), world_split), comm.size, comm.rank)
    be = get_backend(backend) if isinstance(backend, str) else backend
    if comm.size > 1:
        same_everywhere(comm, "DiFuseR", {"backend": be.name})  # "auto" must resolve alike: NCCL and MPI do not mix
        comm.allreduce(be.zeros((1,), np.int64, what="warm-up"))  # NCCL starts here, outside the timed phases
        phases = NestedPhases(PHASES + (COMMUNICATION,), sync=be.synchronize)
    else:
        phases = Phases(PHASES, sync=be.synchronize)
    reduction = Reduction(comm, phases)
    need, live_bits = check_memory(graph, ids.shape[0], refine > 1, be, memory_limit, mapping)
    be.reset_peak()
    keys = world_keys(int(seed), total, ids, sampling, bool(fasst))
    with phases.phase("local_graph"):
        engine = make_engine(graph, keys, int(seed), be, mapping, live_bits)
    table = be.asarray(score_table(estimator, graph.n), what="score table")
    chosen = be.zeros((graph.n,), np.uint8, what="chosen flags")

    def build(after: int) -> dict:
        with phases.phase("fill"):
            engine.fill()
        with phases.phase("simulate"):
            sweeps = engine.simulate()
        return {"after_seed": after, "sweeps": int(sweeps)}

    builds = [build(0)]
    lazy = LazyGains(graph.n, lambda vertices: be.to_host(reduction.sum_array(engine.gains(vertices))))
    seed_ids, spreads, picked_scores = [], [], []
    score = oldscore = 0.0
    for i in range(k):
        status(f"DiFuseR seed {i + 1}/{k}")
        with phases.phase("select"):
            sums = reduction.sum_array(engine.scores(table))
            candidates = top_candidates(engine, sums, chosen, max(1, refine))
        if refine > 1:
            with phases.phase("refine"):
                candidates = [lazy.choose(candidates)]
        s = candidates[0]
        picked_scores.append(int(sums[s]))
        chosen[s] = 1
        with phases.phase("cascade"):
            engine.cascade(s)
            visited = reduction.sum_int(engine.visited_count())
        seed_ids.append(int(s))
        score = visited / total
        spreads.append(score)
        if i + 1 < k and (score - oldscore) / score > rebuild_threshold:
            builds.append(build(i + 1))
            oldscore = score
    peak = be.peak_memory()
    mine = {"worlds": int(ids.shape[0]), **engine.local.sizes(), "live_bits": bool(engine.live_bits),
            "build_sweeps": [b["sweeps"] for b in builds],
            "seconds_by_phase": dict(phases.seconds), "peak_device_memory": int(peak)}
    everyone = [mine] if comm.size == 1 else comm.allgather(mine)
    for i, b in enumerate(builds):  # a rank sweeps until its own worlds settle: the slowest one counts
        b["sweeps"] = max(r["build_sweeps"][i] for r in everyone)
    orig = np.asarray(graph.original_id)
    result = {
        "kind": "im",
        "graph": {"path": str(graph.path), "sha256": graph.sha256, "n": int(graph.n), "m": int(graph.m)},
        "algorithm": "DiFuseR",
        "model": "IC",
        "k": k,
        "run_seed": int(seed),
        "registers": total,
        "sampling": sampling,
        "fasst": bool(fasst),
        "world_split": world_split,
        "estimator": estimator,
        "rebuild_threshold": float(rebuild_threshold),
        "refine": refine,
        "refine_probes": lazy.probes,
        "mapping": engine.mapping,
        "live_bits": all(r["live_bits"] for r in everyone),  # a rank's choice depends on its free memory
        "seed_ids": seed_ids,
        "seeds": [int(orig[x]) for x in seed_ids],
        "estimated_spread": float(score),
        "spread_after_seed": spreads,
        "selection_scores": picked_scores,
        "builds": builds,
        "rebuild_rounds": len(builds) - 1,
        "simulate_sweeps": int(sum(b["sweeps"] for b in builds)),
        "seconds": 0.0,
        "seconds_by_phase": dict(phases.seconds),
        "bytes_needed": int(need),
        "register_bytes": int(graph.n) * int(ids.shape[0]),
        "peak_device_memory": int(peak),
        "backend": be.device_info(),
        "ranks": int(comm.size),
        "per_rank": {key: [r[key] for r in everyone] for key in mine},
    }
    if comm.size > 1:
        result["communication"] = reduction.record()
    return result
