"""The oracle's public functions: ``spread``, ``simulate_world(s)``, ``replay``.

Contracts (all ids are INTERNAL ids 0..n-1 of the ``Graph``; arc id = out-CSR position):

- A *world* is a 64-bit seed ``w``. IC: arc ``k`` is live iff ``ic_live(w, k, p_k)`` with ``p`` =
  ``graph.edge_probabilities("IC")``; LT: ``q_k = lt_fixed_weight(w_k)`` with the LT weights of
  ``graph.edge_probabilities("LT")`` (rescaled where in-sums exceed 1), threshold
  ``T_v = lt_threshold(w, v)``, ``v`` activates once the ``q`` of its active in-arcs sum to more
  than ``T_v``. See ``docs/oracle.md`` for the definition with test vectors.
- Monte-Carlo run ``s`` of ``spread(..., seed=S)`` is the world ``mix(S, Stream.ORACLE, s)``, so
  every run can be replayed on its own, and CPU and GPU give identical per-run sizes; under MPI the
  runs are split across the ranks by index (``gpucore.dist``, the one solver-neutral layer used
  here besides the backend), with the same worlds whatever the split.
- Timing: ``warm_up`` compiles and loads every kernel (Numba's JIT or its cache, the CUDA modules,
  the graph's device copy) before a timed region; ``spread`` calls it and reports its seconds as
  ``warm_up_seconds``, apart from ``seconds``. The runs go in batches (``gpucore.oracle.batches``):
  a progress bar (runs, rate, ETA) on a terminal, and a Ctrl-C acted on within a batch.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

import numpy as np

from gpucore.backend import get_backend
from gpucore.errors import GpucoreError
from gpucore.oracle.checks import (
    as_id_array,
    check_confidence,
    check_model,
    check_range,
    check_runs,
    check_seeds,
    check_u64,
)
from gpucore.oracle.batches import batches
from gpucore.oracle.cpu import Simulator, WorldState, choose_chunks, oracle_world_seeds
from gpucore.progress import progress
from gpucore.timing import Phases

__all__ = [
    "ReplayResult",
    "ReplayRound",
    "SpreadResult",
    "WorldResult",
    "mc_world_seeds",
    "replay",
    "simulate_world",
    "simulate_worlds",
    "spread",
    "warm_up",
]


# --------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class SpreadResult:
    """Monte-Carlo estimate of the expected spread sigma(seeds).

    ``mean`` is the average activated-set size over ``runs`` independent worlds (seeds included);
    ``stderr`` = sample standard deviation / sqrt(runs); ``ci_low``/``ci_high`` the two-sided
    normal-approximation confidence interval ``mean -/+ z * stderr`` at level ``confidence``.
    ``counts[s]`` is the activated-set size in run ``s`` (world ``mc_world_seeds(seed, runs)[s]``).
    ``ranks``: how many MPI ranks shared the runs (the result does not depend on it).
    ``seconds`` is the simulation alone; ``warm_up_seconds`` the compiling and loading before it.
    """

    model: str
    mean: float
    stderr: float
    ci_low: float
    ci_high: float
    confidence: float
    runs: int
    seed: int
    num_seeds: int
    backend: str
    seconds: float
    counts: np.ndarray = field(repr=False, compare=False)
    ranks: int = field(default=1, compare=False)
    warm_up_seconds: float = field(default=0.0, compare=False)

    @property
    def ci(self) -> tuple[float, float]:
        return (self.ci_low, self.ci_high)

    def covers(self, value: float) -> bool:
        return self.ci_low <= value <= self.ci_high

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("counts")
        return d


@dataclass(frozen=True)
class WorldResult:
    """The activated set of ``seeds`` in one world: sorted internal ids (seeds included)."""

    model: str
    world_seed: int
    active: np.ndarray = field(compare=False)

    @property
    def count(self) -> int:
        return int(self.active.size)

    def __eq__(self, other) -> bool:
        return (isinstance(other, WorldResult) and self.model == other.model and self.world_seed == other.world_seed
                and np.array_equal(self.active, other.active))


@dataclass(frozen=True)
class ReplayRound:
    """One replayed round: ``newly_active`` counts users activated in this round, its seeds included
    (never counting users active before it); ``logged_newly_active`` is the solver's figure (None if
    the log has none); ``problem`` says what disagrees (None when the round matches)."""

    index: int
    seeds: tuple[int, ...]
    newly_active: int
    logged_newly_active: int | None
    active_after: int
    problem: str | None = None


@dataclass(frozen=True)
class ReplayResult:
    """Adaptive replay of one world realization.

    ``matches``: every round agrees with the log (no seed already active, no duplicate or empty
    batch, no round after eta was reached, every logged ``newly_active`` equal to the replay);
    ``reached``: the replayed active count is >= eta after the last round; ``passed`` = both.
    ``first_mismatch`` is a one-line description of the first disagreement, or None.
    ``newly_active[i]`` is the replayed count of round i.
    """

    model: str
    world_seed: int
    eta: int
    rounds: tuple[ReplayRound, ...]
    total_active: int
    reached: bool
    first_mismatch: str | None

    @property
    def matches(self) -> bool:
        return self.first_mismatch is None

    @property
    def passed(self) -> bool:
        return self.matches and self.reached

    @property
    def newly_active(self) -> list[int]:
        return [r.newly_active for r in self.rounds]

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "world_seed": self.world_seed,
            "eta": self.eta,
            "passed": self.passed,
            "matches": self.matches,
            "reached": self.reached,
            "total_active": self.total_active,
            "first_mismatch": self.first_mismatch,
            "newly_active": self.newly_active,
            "rounds": [asdict(r) | {"seeds": list(r.seeds)} for r in self.rounds],
        }


# --------------------------------------------------------------------------------------------
# helpers


def mc_world_seeds(seed: int, runs: int, start: int = 0) -> np.ndarray:
    """World seeds of Monte-Carlo runs start..start+runs-1 of ``spread(seed=seed)``: mix(seed, ORACLE, s)."""
    seed = check_u64(seed, "seed")
    return oracle_world_seeds(np.uint64(seed), np.int64(start), np.int64(runs))


def spread_statistics(counts: np.ndarray, confidence: float) -> tuple[float, float, float, float]:
    """(mean, stderr, ci_low, ci_high) of per-run counts: sample std / sqrt(runs), two-sided normal CI."""
    mean = float(counts.mean())
    stderr = float(counts.std(ddof=1) / math.sqrt(counts.size))
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return mean, stderr, mean - z * stderr, mean + z * stderr


def _model_arrays(graph, model: str):
    """(out_indptr, out_dst, out-CSR weights) of ``model`` (LT weights rescaled where in-sums exceed 1)."""
    weights = graph.edge_probabilities(model)[1]
    return graph.out_indptr, graph.out_dst, np.ascontiguousarray(weights, dtype=np.float32)


def _resolve_backend(backend):
    if isinstance(backend, str):
        return get_backend(backend)
    return backend


def _engine(backend):
    from gpucore.oracle.cuda import Engine, cuda_engine

    if isinstance(backend, Engine):
        return backend
    return cuda_engine(backend)


def _counts(graph, seeds, model, worlds, backend, want_sets=False, gpu_variant=None):
    """Per-world activated-set sizes (and sets) on the resolved backend; returns (counts, sets, name).
    On the CPU this is the one-world-at-a-time path of ``simulate_worlds`` (it returns the sets
    whatever ``want_sets``); Monte-Carlo counts go through ``Simulator`` (``_simulate``)."""
    from gpucore.oracle.cuda import Engine

    out_indptr, out_dst, weights = _model_arrays(graph, model)
    if not isinstance(backend, Engine) and not _resolve_backend(backend).is_cuda:
        sets = np.zeros((worlds.size, graph.n), dtype=bool)
        counts = np.empty(worlds.size, dtype=np.int64)
        for i, w in enumerate(worlds):
            state = WorldState(out_indptr, out_dst, weights, model, int(w))
            state.activate(seeds)
            sets[i, state.activated()] = True
            counts[i] = state.tail
        return counts, sets, "cpu"
    backend = backend if isinstance(backend, Engine) else _resolve_backend(backend)
    engine = _engine(backend)
    from gpucore.oracle.cuda import ic_counts_gpu, lt_counts_gpu

    arrays = None
    if engine.name == "cuda":
        names = _device_names(model)
        d = graph.device_arrays(backend, names)
        arrays = tuple(d[name] for name in names)
        if d[names[2]].dtype != np.float32:
            arrays = None
    if model == "IC":
        counts, sets = ic_counts_gpu(engine, out_indptr, out_dst, weights, seeds, worlds, want_sets=want_sets,
                                     arrays=arrays, variant=gpu_variant)
    else:
        counts, sets = lt_counts_gpu(engine, out_indptr, out_dst, weights, seeds, worlds, want_sets=want_sets,
                                     arrays=arrays)
    return counts, sets, engine.name


def _device_names(model: str) -> tuple[str, str, str]:
    """The graph arrays the GPU kernels of ``model`` read (copied to the device once per graph)."""
    return ("out_indptr", "out_dst", "out_prob" if model == "IC" else "lt_out_weights")


def _cpu_simulator(graph, model: str, runs: int, threads) -> Simulator:
    """CPU workers for ``runs`` worlds: all threads for large work, one for tiny graphs."""
    import numba

    threads = int(threads) if threads else numba.get_num_threads()
    chunks = choose_chunks(threads, runs, graph.n, graph.m)
    _check_host_memory(graph.n, model, chunks)
    return Simulator(*_model_arrays(graph, model), model, chunks)


def _simulate(graph, seeds, model, worlds, backend, threads, gpu_variant) -> tuple[np.ndarray, str]:
    """Per-world sizes in batches (``gpucore.oracle.batches``) under a progress bar: (counts, backend name).
    CPU batches are multiples of the worker count, GPU batches of 64 (one word of simulations)."""
    from gpucore.oracle.cuda import Engine

    if not isinstance(backend, Engine):
        backend = _resolve_backend(backend)
    if not isinstance(backend, Engine) and not backend.is_cuda:
        sim = _cpu_simulator(graph, model, int(worlds.size), threads)
        name, first, step = "cpu", sim.chunks, sim.chunks

        def run(batch):
            return sim.counts(seeds, batch)
    else:
        name, first, step = backend.name, GPU_FIRST_BATCH, 64

        def run(batch):
            return _counts(graph, seeds, model, batch, backend, gpu_variant=gpu_variant)[0]
    counts = np.empty(worlds.size, dtype=np.int64)
    with progress(total=int(worlds.size), desc="oracle", unit="run") as bar:
        for lo, hi in batches(int(worlds.size), first, step):
            counts[lo:hi] = run(worlds[lo:hi])
            bar.update(hi - lo)
    return counts, name


#: runs of the first GPU batch (64 words; later batches follow the measured rate)
GPU_FIRST_BATCH = 4096


def warm_up(graph, model: str, backend="auto", *, sets: bool = False, gpu_variant: str | None = None) -> float:
    """Compile or load the kernels that ``spread`` (``sets``: ``simulate_worlds`` and ``replay``, which
    follow one world at a time and return the activated sets) runs on ``graph`` under ``model``
    (Numba's JIT or its on-disk cache; on a GPU the CUDA modules and the graph's device copy), by
    running them on a two-vertex graph whose arrays have the types of ``graph``'s: no timed region
    pays for compiling. Returns the seconds taken (close to zero once done in this process)."""
    from gpucore.oracle.cuda import Engine

    timer = Phases(("warm_up",))
    with timer.phase("warm_up"):
        model = check_model(model)
        tiny = _TinyGraph(graph, model)
        seeds, worlds = np.zeros(1, dtype=np.int64), mc_world_seeds(0, 2)
        if isinstance(backend, Engine) or _resolve_backend(backend).is_cuda:
            _counts(tiny, seeds, model, worlds, backend, want_sets=sets, gpu_variant=gpu_variant)
            if not isinstance(backend, Engine):
                graph.device_arrays(_resolve_backend(backend), _device_names(model))
        elif sets:
            WorldState(*_model_arrays(tiny, model), model, 0).activate(seeds)
        else:
            for chunks in (1, 2):  # one worker (also the last, short batch), and the parallel loop
                Simulator(*_model_arrays(tiny, model), model, chunks).counts(seeds, worlds)
    return timer.total


class _TinyGraph:
    """The graph 0 -> 1 with arrays of the dtypes and writability of ``like``'s (Numba compiles one
    version per array type, read-only memory maps included)."""

    n, m = 2, 1

    def __init__(self, like, model: str):
        in_w, out_w = like.edge_probabilities(model)
        self.out_indptr = _same_type([0, 1, 1], like.out_indptr)
        self.out_dst = _same_type([1], like.out_dst)
        self.in_weights = _same_type([0.5], in_w)
        self.out_prob = self.lt_out_weights = _same_type([0.5], out_w)

    def edge_probabilities(self, model: str):
        return self.in_weights, self.out_prob

    def device_arrays(self, backend, names):
        return {name: backend.asarray(getattr(self, name)) for name in names}


def _same_type(values, like) -> np.ndarray:
    arr = np.array(values, dtype=np.asarray(like).dtype)
    arr.flags.writeable = bool(np.asarray(like).flags.writeable)
    return arr


def _check_gpu_variant(variant) -> None:
    if variant is not None:
        from gpucore.oracle.cuda import check_variant

        check_variant(variant)


def _check_host_memory(n: int, model: str, chunks: int) -> None:
    from gpucore.backend import available_ram
    from gpucore.errors import OutOfMemoryError, format_bytes
    from gpucore.oracle.cpu import cpu_state_bytes

    need = cpu_state_bytes(n, model) * chunks
    free = available_ram()
    if need > free:
        raise OutOfMemoryError(f"oracle CPU simulation needs {format_bytes(need)} for {chunks} threads, "
                               f"{format_bytes(free)} available (use fewer threads)")


# --------------------------------------------------------------------------------------------
# public functions


def spread(graph, seeds, model: str = "IC", runs: int = 10000, seed: int = 0, *, backend="auto",
           confidence: float = 0.95, threads: int | None = None, gpu_variant: str | None = None,
           comm=None) -> SpreadResult:
    """Expected spread of ``seeds`` (internal ids) under ``model`` by forward Monte-Carlo.

    Run ``s`` (0 <= s < runs) is the world ``mix(seed, Stream.ORACLE, s)``; its activated-set size
    counts the seeds. Returns mean, standard error, a ``confidence`` normal-approximation CI and the
    per-run sizes. ``backend``: "auto" (GPU if CuPy sees one), "cpu", "cuda", a ``Backend``, or an
    oracle ``Engine`` (tests). The kernels are warmed up first (``warm_up``, its seconds apart); the
    runs go in batches of about ``BATCH_SECONDS`` under a progress bar, and a Ctrl-C stops them
    within a batch (``KeyboardInterrupt``). Per-run sizes do not depend on the backend. ``threads``: CPU workers
    (default: all Numba threads). ``gpu_variant``: the IC GPU kernel (``gpucore.oracle.cuda.IC_VARIANTS``,
    default ``gpu.IC_VARIANT``; ignored on the CPU and under LT).
    Over several ranks (``comm``, default ``gpucore.dist.current()``) this is collective: every rank
    calls it with the same arguments, rank r simulates its contiguous share of the run indices
    (``gpucore.dist.partition``), the per-run sizes are gathered in run order, and every rank returns
    the same result, identical to a one-rank run (``ranks`` records how many shared the work).
    Errors (``GpucoreError``): unknown model, empty/duplicated/out-of-range seeds, runs < 2,
    seed outside [0, 2^64), confidence outside (0, 1).
    """
    from gpucore.dist import current, partition

    model = check_model(model)
    seeds = check_seeds(seeds, graph.n)
    runs = check_runs(runs)
    _check_gpu_variant(gpu_variant)
    seed = check_u64(seed, "seed")
    confidence = check_confidence(confidence)
    comm = current() if comm is None else comm
    begin, end = partition(runs, comm.size, comm.rank)
    worlds = mc_world_seeds(seed, end - begin, start=begin)
    warm = warm_up(graph, model, backend, gpu_variant=gpu_variant)
    timer = Phases(("simulate",))
    with timer.phase("simulate"):
        local, name = np.empty(0, dtype=np.int64), None
        if worlds.size:
            local, name = _simulate(graph, seeds, model, worlds, backend, threads, gpu_variant)
        counts = comm.allgather_array(np.asarray(local, dtype=np.int64))
        name = next(n for n in comm.allgather(name) if n is not None)
    mean, stderr, low, high = spread_statistics(counts, confidence)
    return SpreadResult(model=model, mean=mean, stderr=stderr, ci_low=low, ci_high=high, confidence=confidence,
                        runs=runs, seed=seed, num_seeds=int(seeds.size), backend=name, seconds=timer.total,
                        counts=counts, ranks=comm.size, warm_up_seconds=warm)


def simulate_worlds(graph, seeds, model: str, world_seeds, *, backend="cpu",
                    gpu_variant: str | None = None) -> list[WorldResult]:
    """Activated sets of ``seeds`` in each of the given worlds (see ``simulate_world``; ``gpu_variant``
    as in ``spread``)."""
    model = check_model(model)
    seeds = check_seeds(seeds, graph.n)
    _check_gpu_variant(gpu_variant)
    ws = [check_u64(w, "world_seed") for w in np.asarray(world_seeds, dtype=object).reshape(-1)]
    if not ws:
        return []
    worlds = np.array(ws, dtype=np.uint64)
    _, sets, _ = _counts(graph, seeds, model, worlds, backend, want_sets=True, gpu_variant=gpu_variant)
    return [WorldResult(model, ws[i], np.flatnonzero(sets[i]).astype(np.int64)) for i in range(len(ws))]


def simulate_world(graph, seeds, model: str, world_seed: int, *, backend="cpu") -> WorldResult:
    """The activated set of ``seeds`` (internal ids, included in the set) in world ``world_seed``.

    Deterministic: the same (graph, seeds, model, world_seed) give the same set on every backend
    ("cpu" is the reference; "cuda"/"auto" or an oracle ``Engine`` run the GPU kernels).
    """
    return simulate_worlds(graph, seeds, model, [world_seed], backend=backend)[0]


def _round_seeds(entry, index: int):
    """(seed ids, logged newly_active or None) of one logged round."""
    if isinstance(entry, dict):
        if "seed_ids" not in entry:
            raise GpucoreError(f"round {index}: no 'seed_ids' (internal ids of the batch)")
        logged = entry.get("newly_active")
        if logged is not None and (isinstance(logged, bool) or not isinstance(logged, (int, np.integer))):
            raise GpucoreError(f"round {index}: 'newly_active' must be an integer, got {logged!r}")
        return as_id_array(entry["seed_ids"], f"round {index} seed_ids"), (None if logged is None else int(logged))
    return as_id_array(entry, f"round {index} seeds"), None


def replay(graph, rounds, model: str, world_seed: int, eta: int) -> ReplayResult:
    """Replay an adaptive run on world ``world_seed``: round by round, the users its seed batches activate.

    ``rounds``: the solver's log, a sequence of rounds, each a mapping with ``seed_ids`` (internal
    ids) and optionally ``newly_active`` (users activated in that round, its seeds included), or a
    plain sequence of internal ids. State carries across rounds: active users stay active and are
    never re-entered (the residual graph), and under LT the accumulated in-weight of still-inactive
    users carries over (thresholds never reset). Log disagreements are reported, not raised: a seed
    already active, a seed twice in a batch, an empty batch, a round after eta was reached, or a
    ``newly_active`` differing from the replay (the first is ``first_mismatch``).
    Raises ``GpucoreError`` for unreplayable input: unknown model, ids out of range, non-integer
    ids, world_seed outside [0, 2^64), eta < 1.
    """
    model = check_model(model)
    world_seed = check_u64(world_seed, "world_seed")
    if isinstance(eta, bool) or not isinstance(eta, (int, np.integer)) or eta < 1:
        raise GpucoreError(f"eta must be an integer >= 1, got {eta!r}")
    eta = int(eta)
    parsed = []
    for i, entry in enumerate(rounds):
        ids, logged = _round_seeds(entry, i)
        check_range(ids, graph.n, f"round {i} seed_ids")
        parsed.append((ids, logged))
    out_indptr, out_dst, weights = _model_arrays(graph, model)
    state = WorldState(out_indptr, out_dst, weights, model, world_seed)
    results, first = [], None
    for i, (ids, logged) in enumerate(parsed):
        problems = []
        if state.tail >= eta:
            problems.append(f"round {i}: eta={eta} was already reached ({state.tail} active) before this round")
        if ids.size == 0:
            problems.append(f"round {i}: empty seed batch")
        uniq, counts = np.unique(ids, return_counts=True)
        if uniq.size != ids.size:
            problems.append(f"round {i}: seed {int(uniq[counts > 1][0])} appears twice in the batch")
        already = ids[state.active[ids] != 0] if ids.size else ids
        if already.size:
            problems.append(f"round {i}: seed {int(already[0])} was already active")
        new = state.activate(ids) if ids.size else 0
        if logged is not None and logged != new:
            problems.append(f"round {i}: logged newly_active {logged}, replay activates {new}")
        problem = problems[0] if problems else None
        if first is None and problem is not None:
            first = problem
        results.append(ReplayRound(i, tuple(int(x) for x in ids), new, logged, int(state.tail), problem))
    return ReplayResult(model=model, world_seed=world_seed, eta=eta, rounds=tuple(results),
                        total_active=int(state.tail), reached=state.tail >= eta, first_mismatch=first)
