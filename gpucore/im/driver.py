"""IMM (Tang, Shi, Xiao 2015) whose final phase reuses the estimation sets under a union bound, and MRIM.

``imm(graph, k, epsilon, model)`` runs four phases, each a function below; given ``ranks`` (a
``Ranks``: this process's part of a run over several MPI ranks, ``docs/multigpu.md``) each phase
draws this rank's share of its keys and sums what it counts over the ranks, with the same answer:

1. ``estimate_lower_bound``: for i = 1 .. floor(log2 n) - 1, extend R (sets j = 0, 1, ...) to
   theta_i = ceil(lambda' / x_i) sets, greedy-select S_i, stop at the first i with
   n F_R(S_i) >= (1 + eps') x_i and set LB = n F_R(S_i) / (1 + eps'); LB = 1 if none passes;
2. ``sample_final``: extend the same R to theta = max(|R|, ceil(lambda* / L)) sets, L = LB rounded
   down to a fixed grid; theta is one of finitely many counts fixed in advance and lambda* pays
   for a union bound over them, which keeps IMM's guarantee although the sets are reused
   (``gpucore.im.theory``; the argument, with Chen 2018's objection it answers, in ``docs/im.md``);
3. ``select_seeds``: greedy max-cover on those theta sets gives the seeds (when theta is the
   search's own count, its last greedy already is that selection);
4. ``estimate_spread``: n times the fraction of *other* sets (j = ESTIMATE_OFFSET, ...) that the
   seeds cover: an unbiased estimate (the covered fraction of the sets that chose the seeds is
   biased upward), with its standard error.

``rounds = T > 1`` is multi-round IM (CR-NAIMM port, spec section 3): each set draws one root and
runs T reverse traversals from it (round t with its own coins), elements are (node, round) pairs
``t * n + u``, and the cross-round greedy picks k seeds per round. Formulas: ``gpucore.im.theory``.
Samplers and selectors: ``gpucore.im.engine``. Seconds per phase: ``gpucore.timing.Phases``.

Before an extension the peak bytes of the phase are projected from the mean set size seen so far
(``bytes_needed``, of this rank's share over several ranks); beyond the memory budget an
``OutOfMemoryError`` names the size needed.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from gpucore.backend import available_ram, get_backend
from gpucore.dist import current, greedy_max_cover, partition, same_everywhere
from gpucore.dist.timed import COMMUNICATION, NestedPhases, TimedComm
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.engine import make_engine
from gpucore.im.rrsets import ESTIMATE_OFFSET, MAX_ROUNDS, top_k_sum
from gpucore.im.theory import imm_parameters
from gpucore.progress import status
from gpucore.timing import Phases

MODELS = ("IC", "LT")
#: seconds_by_phase keys of every IMM result
PHASES = ("lb_sampling", "lb_selection", "final_sampling", "final_selection", "estimate")
#: sets drawn first, before any mean size is known (then the memory projection starts)
PILOT_SETS = 2048
#: elements per sampling batch (bounds the temporary buffers)
BATCH_ELEMENTS = 1 << 26
#: relative standard error the spread estimate aims at (its sets: at most theta)
ESTIMATE_RSE = 0.01
#: the distributed greedy's per-element arrays beside the selection's: the global counts (bounds, 4 B)
#: and excluded flags (1); at a refresh, the packed keys and their temporaries (4 x 8 at most)
DIST_BYTES_PER_ELEMENT = 37
#: candidates of the distributed greedy (``gpucore.dist.greedy_max_cover``; 0: dense all-reduce per pick)
CANDIDATES = 1024


def bytes_needed(engine, sets: int, elements: float, held: int = 0, batch_sets: int | None = None,
                 ranks: int = 1) -> int:
    """Peak bytes of growing a collection to ``sets`` sets holding ``elements`` elements and selecting
    on it: the new arrays, plus the larger of (the growth: the ``held`` bytes of the arrays being
    replaced and one sampling batch of ``batch_sets`` sets) and (the greedy's inverted index and its
    per-element and per-set arrays). Both backends keep the same arrays (``gpucore.im.cpu``/``cuda``).
    Over several ``ranks`` the arguments are this rank's share, and the greedy also holds the global
    counts of ``gpucore.dist.greedy_max_cover`` (``DIST_BYTES_PER_ELEMENT`` per element)."""
    universe = engine.n * engine.rounds
    mean = elements / max(1, sets)
    batch_sets = sets if batch_sets is None else batch_sets
    coll = 4.0 * elements * 1.05 + 8.0 * sets
    batch = 4.0 * 1.3 * batch_sets * mean + 24.0 * batch_sets + 16384.0  # buffer or pool, sizes, starts
    select = 4.0 * elements + 29.0 * universe + 2.0 * sets  # index, pointers, counts, heap/scan, flags
    if ranks > 1:
        select += DIST_BYTES_PER_ELEMENT * universe
    return int(coll + max(held + batch, select))


def memory_budget(backend, limit: int | None, held: int) -> int:
    """Bytes the collection may use in all: the limit, or what is free now plus what it ``held``."""
    if limit is not None:
        return int(limit)
    free = backend.free_memory() * 0.92 if backend.is_cuda else available_ram() * 0.85
    return int(free) + int(held)


def check_sets(engine, target: int, mean_hint: float, phase: str) -> None:
    """A phase holds fewer than 2^31 sets (int32 set indices and counts)."""
    if target >= 2**31 - 1:
        need = bytes_needed(engine, target, target * max(1.0, mean_hint or 1.0))
        raise OutOfMemoryError(
            f"{phase} phase needs theta = {target:,} RR sets (about {format_bytes(need)}), beyond the "
            f"2^31 sets one run can hold; raise --eps or lower --k"
        )


def extend(engine, coll, target: int, memory_limit: int | None, mean_hint: float, phase: str,
           ranks: int = 1) -> None:
    """Add sets to ``coll`` until it holds ``target``; raise OutOfMemoryError before overshooting.
    The projected peak is kept in ``coll.projected_bytes`` (the largest of its extensions). Over
    several ``ranks``, ``coll`` and ``target`` are this rank's share and the projection is its own."""
    check_sets(engine, target, mean_hint, phase)
    checked = False
    while coll.count < target:
        remaining = target - coll.count
        mean = coll.mean_size if coll.count >= min(PILOT_SETS, target) else (mean_hint or 0.0)
        if mean <= 0.0:
            batch = min(remaining, PILOT_SETS)
        else:
            batch = min(remaining, max(PILOT_SETS, int(BATCH_ELEMENTS / max(mean, 1.0))))
            if not checked:
                held = coll.nbytes()
                need = bytes_needed(engine, target, coll.total + remaining * mean, held, batch, ranks)
                budget = memory_budget(engine.backend, memory_limit, held)
                if need > budget:
                    share = f" (this rank's share of {ranks})" if ranks > 1 else ""
                    raise OutOfMemoryError(
                        f"IMM {phase} phase needs about {format_bytes(need)} for theta = {target:,} RR sets{share} "
                        f"(mean {mean:.1f} elements each) but {format_bytes(budget)} is available on "
                        f"{engine.backend.name}; raise --eps, lower --k, or use more memory"
                    )
                coll.projected_bytes = max(coll.projected_bytes, need)
                coll.reserve(remaining, int(remaining * mean * 1.05) + 1024)
                checked = True
        engine.sample_into(coll, batch, mean)


def lt_rescaled_nodes(graph) -> int:
    """Nodes whose LT in-weights sum above 1 (``Graph.lt_in_weights`` rescales them to sum 1); warns."""
    from gpucore.graph.weights import count_lt_violations

    count = count_lt_violations(graph.in_indptr, graph.in_prob)
    if count:
        warnings.warn(f"{graph.path}: the LT in-weights of {count:,} nodes sum above 1; they are rescaled to sum "
                      f"to 1 (recorded as lt_rescaled_nodes)", stacklevel=3)
    return count


def _check_model(model: str) -> str:
    model = str(model).upper()
    if model not in MODELS:
        raise GpucoreError(f"--model {model!r}: choose IC or LT")
    return model


def grow(engine, coll, target: int, memory_limit: int | None, mean_hint: float, phase: str,
         ranks: Ranks | None = None) -> None:
    """Extend a phase's collection to ``target`` sets: all of them in one process (``extend``), this
    rank's share of the new ones over several (``Ranks.extend``)."""
    if ranks is None:
        extend(engine, coll, target, memory_limit, mean_hint, phase)
    else:
        ranks.extend(engine, coll, target, memory_limit, mean_hint, phase)


class SelectionCover:
    """An engine's ``Selection`` (``gpucore.im.engine``) as the ``LocalCover`` of ``gpucore.dist.greedy_max_cover``."""

    def __init__(self, selection):
        self.selection = selection

    def counts(self):
        return self.selection.counts

    def cover(self, element: int) -> int:
        return self.selection.cover(element)


def close_full_round(n: int, k: int):
    """MRIM's rule as a ``block`` of ``greedy_max_cover``: a round (elements t n .. t n + n - 1) closes
    once it holds k seeds."""

    def block(chosen: list[int]):
        t = chosen[-1] // n
        return slice(t * n, (t + 1) * n) if sum(e // n == t for e in chosen) == k else None

    return block


class Ranks:
    """This rank's part of a distributed IMM (``docs/multigpu.md``, section 3). Every method is
    collective: all ranks call it, in the same order.

    Keys: each extension of a phase, from the ``have`` sets all ranks hold together to ``target``,
    is cut into contiguous shares (``gpucore.dist.partition(target - have, size, rank, start=j_begin
    + have)``); a rank's collection holds one key range per extension (``RRCollection.blocks``), and
    the union over ranks is exactly the one-process collection. Counts and covered sets are integer
    sums over ranks; the greedy is ``gpucore.dist.greedy_max_cover`` with ``candidates``. The
    collectives run through a ``TimedComm``: their seconds are the ``communication`` phase."""

    def __init__(self, comm, phases: Phases, candidates: int = CANDIDATES):
        self.comm = TimedComm(comm, phases)
        self.size, self.rank = comm.size, comm.rank
        self.candidates = int(candidates)
        self.picks = 0
        self.refreshes = 0

    def sum(self, value: int) -> int:
        """The sum over ranks of an integer."""
        return int(self.comm.allreduce(np.array([int(value)], dtype=np.int64))[0])

    def extend(self, engine, coll, target: int, memory_limit: int | None, mean_hint: float, phase: str) -> None:
        """Grow the phase to ``target`` sets over all ranks: this rank draws its share of the new keys."""
        check_sets(engine, target, mean_hint, phase)
        have = self.sum(coll.count)
        if target <= have:
            return
        begin, end = partition(target - have, self.size, self.rank, start=coll.j_begin + have)
        if end > begin:
            coll.seek(begin)
            extend(engine, coll, coll.count + end - begin, memory_limit, mean_hint, phase, self.size)

    def counts(self, engine, coll):
        """The element counts of every rank's sets (summed; NCCL for device arrays)."""
        self.refreshes += 1
        return self.comm.allreduce(engine.counts(coll))

    def greedy(self, engine, coll, k: int, counts=None):
        """The greedy over every rank's sets: (chosen, gains, covered), identical on every rank and to
        the one-process greedy. ``counts``: the summed counts of ``coll``, when already reduced."""
        steps = int(k) * engine.rounds
        block = close_full_round(engine.n, int(k)) if engine.rounds > 1 else None
        res = greedy_max_cover(SelectionCover(engine.start(coll, k)), steps, coll.count, self.comm, block=block,
                               counts=counts, candidates=self.candidates)
        self.picks += steps
        self.refreshes += res.refreshes
        return np.asarray(res.chosen, dtype=np.int64), np.asarray(res.gains, dtype=np.int64), int(res.covered)

    def warm_up(self, engine, sets: int = 64) -> None:
        """The distributed greedy once on throw-away sets, outside the timed phases and the counters:
        NCCL's communicator starts and the backend's kernels compile before the first phase."""
        coll = engine.collection(0)
        engine.sample_into(coll, sets, 0.0)
        picks = min(3, engine.n * engine.rounds)
        greedy_max_cover(SelectionCover(engine.start(coll, 1)), picks, coll.count, self.comm.comm,
                         candidates=self.candidates)
        coll.release()
        engine.synchronize()

    def communication(self) -> dict:
        """What this rank communicated in the timed phases: collectives, payload bytes, greedy picks and
        dense all-reduces of the counts among them, the candidates setting."""
        return {"collectives": self.comm.calls, "bytes": self.comm.bytes, "picks": self.picks,
                "dense_reductions": self.refreshes, "candidates": self.candidates}


@dataclass
class LowerBound:
    """Outcome of the lower-bound search: LB, the iteration that set it (None: the LB = 1 fallback),
    one record per iteration, and the last greedy (its set count and (chosen, gains, covered)):
    when the final phase keeps exactly those sets, that greedy is the final selection."""

    value: float = 1.0
    iteration: int | None = None
    iterations: list = field(default_factory=list)
    last_sets: int = 0
    last_greedy: tuple | None = None


def estimate_lower_bound(engine, coll, params, k: int, phases: Phases, memory_limit: int | None = None,
                         ranks: Ranks | None = None) -> LowerBound:
    """IMM's Algorithm 2 (Tang et al. 2015, section 4.1) on ``coll`` (sets j = 0, 1, ...): the first i
    whose greedy S_i passes ``n F_R(S_i) >= (1 + eps') x_i`` on the first theta_i sets sets
    LB = n F_R(S_i) / (1 + eps'). ``coll`` keeps its sets for the final phase.

    An iteration whose ``coverage_bound`` (the k largest counts per round; no k seeds cover more
    sets) already fails the test skips its greedy: the outcome is the same, decided for less.
    ``ranks``: this rank's share of a distributed run (the bound and the greedy over every rank's sets)."""
    out = LowerBound()
    for i in range(1, params.max_iterations + 1):
        target = params.theta_i(i)
        status(f"IMM LB iteration {i}: {target:,} RR sets")
        with phases.phase("lb_sampling"):
            grow(engine, coll, target, memory_limit, 0.0, "lower-bound", ranks)
        record = {"i": i, "x": params.x(i), "theta_i": target}
        out.iterations.append(record)
        with phases.phase("lb_selection"):
            if ranks is None:
                record["bound"] = engine.coverage_bound(coll, k)
            else:
                counts = ranks.counts(engine, coll)
                record["bound"] = top_k_sum(engine.backend.xp, counts, engine.n, engine.rounds, k)
            if params.lb_test(i, record["bound"] / target) is None:
                continue  # no k seeds cover enough sets: the greedy cannot pass
            out.last_greedy = engine.greedy(coll, k) if ranks is None else ranks.greedy(engine, coll, k, counts)
        out.last_sets = target
        record["covered"] = covered = int(out.last_greedy[2])
        frac = covered / target  # over the theta_i sets of the whole run (a rank holds a share of them)
        record["estimate"] = params.n * frac
        passed = params.lb_test(i, frac)
        if passed is not None:
            out.value, out.iteration = passed, i
            break
    return out


def sample_final(engine, coll, theta: int, phases: Phases, memory_limit: int | None = None,
                 ranks: Ranks | None = None) -> None:
    """IMM's final sampling: extend ``coll`` (the lower-bound search's sets) to its first ``theta`` sets."""
    status(f"IMM final phase: {theta:,} RR sets")
    with phases.phase("final_sampling"):
        grow(engine, coll, theta, memory_limit, coll.mean_size, "final", ranks)


def select_seeds(engine, coll, k: int, phases: Phases, done=None, ranks: Ranks | None = None):
    """Greedy max-cover of ``coll`` with k seeds per round: (chosen elements, marginal gains, covered).
    ``done``: the greedy already run on exactly these sets (the last lower-bound iteration's), reused."""
    with phases.phase("final_selection"):
        if done is not None:
            chosen, gains, covered = done
        else:
            chosen, gains, covered = engine.greedy(coll, k) if ranks is None else ranks.greedy(engine, coll, k)
    return np.asarray(chosen, dtype=np.int64), np.asarray(gains, dtype=np.int64), int(covered)


def estimate_sets(theta: int, covered_fraction: float) -> int:
    """Sets for the spread estimate: enough for a relative standard error of ESTIMATE_RSE at the
    selection's covered fraction F ((1 - F) / (F rse^2)), at most theta and at least min(theta, 1024)."""
    if covered_fraction <= 0.0:
        return theta
    want = math.ceil((1.0 - covered_fraction) / (covered_fraction * ESTIMATE_RSE**2))
    return int(min(theta, max(want, 1024)))


@dataclass
class SpreadEstimate:
    """n x the fraction of ``sets`` RR sets (j = ``j_begin`` ...) that hold a seed, and its standard error."""

    value: float
    stderr: float
    sets: int
    hits: int
    j_begin: int
    projected_bytes: int = 0
    local_sets: int = 0  # the sets this rank scored


def estimate_spread(engine, chosen, sets: int, phases: Phases, memory_limit: int | None = None,
                    mean_hint: float = 0.0, ranks: Ranks | None = None) -> SpreadEstimate:
    """Score the seeds on ``sets`` RR sets that did not choose them (j = ESTIMATE_OFFSET, ...):
    n F is then an unbiased estimate of the expected spread (of the union over rounds in MRIM).
    Over ``ranks`` each scores its share of the sets and the hits are summed."""
    n = engine.n
    with phases.phase("estimate"):
        coll = engine.collection(ESTIMATE_OFFSET)
        grow(engine, coll, sets, memory_limit, mean_hint, "estimate", ranks)
        hits = int(engine.coverage(coll, chosen))
        if ranks is not None:
            hits = ranks.sum(hits)
        projected, local = coll.projected_bytes, coll.count
        coll.release()
    frac = hits / sets
    return SpreadEstimate(value=n * frac, stderr=n * math.sqrt(frac * (1.0 - frac) / sets), sets=sets, hits=hits,
                          j_begin=ESTIMATE_OFFSET, projected_bytes=projected, local_sets=local)


def imm(
    graph,
    k: int,
    epsilon: float,
    model: str = "IC",
    *,
    rounds: int = 1,
    ell: float = 1.0,
    seed: int = 0,
    backend="auto",
    memory_limit: int | None = None,
    sampler: str = "gim",
    sampler_options: dict | None = None,
    comm=None,
    candidates: int = CANDIDATES,
) -> dict:
    """Run IMM (rounds = 1) or CR-NAIMM (rounds = T); returns a result dict (see ``docs/im.md``).
    ``sampler``/``sampler_options``: the RR-set sampler (``gpucore.im.engine.SAMPLERS``) and its options.
    ``comm``: the ranks that share the run (``gpucore.dist``; default ``current()``, one process unless
    started by ``mpiexec``/``srun``): every rank calls ``imm`` with the same arguments and gets the same
    result, identical to a one-process run. ``candidates``: the distributed greedy's certified
    candidates per pick (0: a dense all-reduce of the counts per pick; ``gpucore.dist.cover``)."""
    t_start = time.perf_counter()
    comm = current() if comm is None else comm
    if comm.size > 1:  # first: arguments that differ would fail on some ranks only
        same_everywhere(comm, "IMM", {"graph": graph.sha256, "model": model, "k": k, "epsilon": epsilon, "ell": ell,
                                      "rounds": rounds, "seed": seed, "sampler": sampler,
                                      "sampler_options": sampler_options, "backend": getattr(backend, "name", backend),
                                      "memory_limit": memory_limit, "candidates": candidates})
    model = _check_model(model)
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or not 1 <= rounds <= MAX_ROUNDS:
        raise GpucoreError(f"--rounds {rounds}: must be an integer in [1, {MAX_ROUNDS}]")
    if isinstance(k, (np.integer,)):
        k = int(k)
    if isinstance(candidates, bool) or not isinstance(candidates, (int, np.integer)) or candidates < 0:
        raise GpucoreError(f"candidates {candidates!r}: an integer >= 0 (0: a dense all-reduce per greedy pick)")
    params = imm_parameters(graph.n, k, epsilon, ell, int(rounds))
    be = get_backend(backend) if isinstance(backend, str) else backend
    if comm.size == 1:
        phases, ranks = Phases(PHASES, sync=be.synchronize), None
    else:
        same_everywhere(comm, "IMM", {"backend": be.name})  # "auto" must resolve alike: NCCL and MPI do not mix
        phases = NestedPhases(PHASES + (COMMUNICATION,), sync=be.synchronize)
        ranks = Ranks(comm, phases, int(candidates))
    rescaled = lt_rescaled_nodes(graph) if model == "LT" else 0
    be.reset_peak()
    engine = make_engine(graph, model, int(rounds), int(seed), be, sampler, **(sampler_options or {}))
    t_warm = time.perf_counter()
    engine.warm_up()
    if ranks is not None:
        ranks.warm_up(engine)
    warm_up = time.perf_counter() - t_warm
    n = graph.n

    coll = engine.collection(0)
    lb = estimate_lower_bound(engine, coll, params, k, phases, memory_limit, ranks)
    lb_sets = coll.count if ranks is None else ranks.sum(coll.count)
    lb_mean = (coll.total if ranks is None else ranks.sum(coll.total)) / lb_sets
    theta = params.theta(lb.value, lb_sets)
    sample_final(engine, coll, theta, phases, memory_limit, ranks)
    same = lb.last_greedy if theta == lb.last_sets else None
    chosen, gains, covered = select_seeds(engine, coll, k, phases, same, ranks)
    local_sets, projected = coll.count, coll.projected_bytes
    elements = int(coll.total) if ranks is None else ranks.sum(coll.total)
    mean_hint = coll.mean_size  # this rank's (sizes the estimate's buffers)
    coll.release()
    spread = estimate_spread(engine, chosen, estimate_sets(theta, covered / theta), phases, memory_limit, mean_hint,
                             ranks)
    peak = be.peak_memory()
    mine = {"selection_sets": int(local_sets), "estimate_sets": int(spread.local_sets),
            "seconds_by_phase": dict(phases.seconds), "peak_device_memory": int(peak),
            "memory_projected": int(max(projected, spread.projected_bytes))}
    everyone = [mine] if ranks is None else comm.allgather(mine)

    seconds = time.perf_counter() - t_start
    orig = np.asarray(graph.original_id)
    result = {
        "kind": "im",
        "graph": {"path": str(graph.path), "sha256": graph.sha256, "n": int(n), "m": int(graph.m)},
        "algorithm": "IMM" if rounds == 1 else "CR-NAIMM",
        "model": model,
        "k": int(k),
        "epsilon": float(epsilon),
        "ell": float(ell),
        "rounds": int(rounds),
        "run_seed": int(seed),
        "sampler": sampler,
        "sampler_options": dict(sampler_options or {}),
        "theta": int(theta),
        "lower_bound": float(lb.value),
        "lb_iteration": lb.iteration,
        "lb_sets": int(lb_sets),
        "lb_iterations": lb.iterations,
        "covered": int(covered),
        "selection_spread": float(n * covered / theta),
        "estimated_spread": spread.value,
        "estimated_spread_stderr": spread.stderr,
        "estimate_sets": {"j_begin": spread.j_begin, "count": spread.sets, "covered": spread.hits},
        "rr_elements": elements,
        "rr_mean_size": elements / theta,
        "lb_mean_size": float(lb_mean),
        "parameters": params.to_dict(),
        "seconds": seconds,
        "seconds_by_phase": phases.seconds,
        "warm_up_seconds": warm_up,
        "peak_device_memory": int(peak),
        "memory_projected": int(max(projected, spread.projected_bytes)),
        "backend": be.device_info(),
        "ranks": int(comm.size),
        "per_rank": {key: [r[key] for r in everyone] for key in mine},
    }
    if ranks is not None:
        result["communication"] = ranks.communication()
    sampler_stats = engine.sampler_stats()  # the sampler's instrumentation over the phases (fused)
    if sampler_stats is not None:
        result["sampler_stats"] = sampler_stats
    if model == "LT":
        result["lt_rescaled_nodes"] = rescaled
    if rounds == 1:
        result["seed_ids"] = [int(x) for x in chosen]
        result["seeds"] = [int(orig[x]) for x in chosen]
    else:  # order of choice, then grouped by round
        by_round = [[] for _ in range(rounds)]
        for e in chosen:
            by_round[int(e) // n].append(int(e) % n)
        result["seed_ids"] = by_round
        result["seeds"] = [[int(orig[x]) for x in r] for r in by_round]
        result["selection_order"] = [[int(e) // n, int(e) % n] for e in chosen]
    result["marginal_coverage"] = [int(x) for x in gains]
    return result
