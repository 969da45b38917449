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
import warnings
from dataclasses import dataclass, field

import numpy as np

from gpucore.backend import available_ram, get_backend
from gpucore.dist import current, greedy_max_cover, partition, same_everywhere
from gpucore.dist.timed import COMMUNICATION, NestedPhases, TimedComm
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.auto import AUTO_WIDTH, SamplerChoice, choose, probe
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


def pool_bytes(engine, seen, params, k: int, memory_limit: int | None, ranks: int = 1) -> int:
    """Device bytes to reserve before the phases (``Engine.reserve``): the projected peak (``bytes_needed``)
    of the final collection of this rank, its size estimated from the probe ``seen``: the greedy's covered
    fraction F of the probe's sets estimates OPT / n (from above: few sets), so LB ~ n F / (2 (1 + eps'))
    (half, for that bias) and theta = ``params.theta(LB)``; at most half the memory budget. A guess that
    only moves allocations out of the phases: too small, the phases allocate the rest as before."""
    covered = engine.greedy(seen.coll, k)[2]
    lb = max(1.0, params.n * covered / seen.sets / (2.0 * (1.0 + params.epsilon_prime)))
    sets = -(-params.theta(lb) // ranks)
    need = bytes_needed(engine, sets, sets * seen.mean_size, ranks=ranks)
    return int(min(need, memory_budget(engine.backend, memory_limit, 0) // 2))


def auto_fused_engine(graph, model: str, rounds: int, seed: int, backend):
    """The fused engine auto chose, at the widest batch width from ``AUTO_WIDTH`` down whose masks fit
    (the sampler refuses a width beyond its memory share); None when no width fits."""
    from gpucore.im.fused import WIDTHS

    for width in sorted((w for w in WIDTHS if w <= AUTO_WIDTH), reverse=True):
        try:
            return make_engine(graph, model, rounds, seed, backend, "fused", batch_width=width), width
        except OutOfMemoryError:
            continue
    return None, 0


def prepare_engine(graph, model: str, rounds: int, seed: int, backend, sampler: str, options: dict, params, k: int,
                   memory_limit: int | None = None, ranks: int = 1):
    """Everything before the timed phases (the result's ``warm_up_seconds``): the engine of ``sampler``
    with ``options`` and its warm-up (``Engine.warm_up``: every kernel and array operation of the phases
    once). With ``sampler="auto"`` or on a GPU, a probe of throw-away sets (``gpucore.im.auto.probe``)
    measures the mean set size; auto then chooses (``gpucore.im.auto.choose``: the gim engine probes;
    when the rule picks the fused sampler, its engine replaces the gim one and is warmed up in turn),
    and on a GPU the memory pool is reserved for the projected collection (``pool_bytes``).
    Returns (engine, ``SamplerChoice``)."""
    auto = sampler == "auto"
    if auto and options:
        raise GpucoreError("--sampler auto takes no sampler options: name the sampler (gim or fused) to give them")
    engine = make_engine(graph, model, rounds, seed, backend, "gim" if auto else sampler, **options)
    engine.warm_up(k)
    choice, pool = SamplerChoice("given", sampler, dict(options)), 0
    if auto or backend.is_cuda:
        seen = probe(engine)
        choice = choose(seen, model, backend.name) if auto else choice
        pool = pool_bytes(engine, seen, params, k, memory_limit, ranks) if backend.is_cuda else 0
        seen.coll.release()
    if choice.sampler == "fused" and auto:
        engine = None  # the gim engine's device buffers go back before the fused masks are sized
        engine, width = auto_fused_engine(graph, model, rounds, seed, backend)
        if engine is None:  # no width's masks fit: the gim sampler, and the choice says why
            choice.sampler, choice.options, choice.note = "gim", {}, "the fused sampler's masks do not fit"
            engine = make_engine(graph, model, rounds, seed, backend, "gim")
        else:
            choice.options = {"batch_width": width}
        engine.warm_up(k)
    engine.reserve(pool)
    engine.reset_stats()  # the probe's traversals are not the phases'
    return engine, choice


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


@dataclass
class Outcome:
    """What the four timed phases of ``run_phases`` found (this rank's counts where it says so)."""

    lb: LowerBound
    lb_sets: int
    lb_mean: float  # mean set size of the lower-bound search's sets
    theta: int
    chosen: np.ndarray
    gains: np.ndarray
    covered: int
    elements: int  # of the theta sets, over every rank
    local_sets: int  # of the theta sets, this rank's
    spread: SpreadEstimate
    projected: int  # the largest projected peak of this rank's collections


def run_phases(engine, params, k: int, phases: Phases, memory_limit: int | None = None,
               ranks: Ranks | None = None) -> Outcome:
    """IMM's four phases, each timed in ``phases`` (module docstring): the lower-bound search, the final
    sampling to theta sets, the selection on them, the spread estimate on other sets."""
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
    return Outcome(lb, int(lb_sets), float(lb_mean), int(theta), chosen, gains, int(covered), int(elements),
                   int(local_sets), spread, int(max(projected, spread.projected_bytes)))


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
    sampler: str = "auto",
    sampler_options: dict | None = None,
    comm=None,
    candidates: int = CANDIDATES,
) -> dict:
    """Run IMM (rounds = 1) or CR-NAIMM (rounds = T); returns a result dict (see ``docs/im.md``).
    ``sampler``/``sampler_options``: the RR-set sampler (``gpucore.im.engine.SAMPLERS``) and its options, or
    ``"auto"`` (no options): gim or fused by a probe of the mean set size (``gpucore.im.auto``).
    ``comm``: the ranks that share the run (``gpucore.dist``; default ``current()``, one process unless
    started by ``mpiexec``/``srun``): every rank calls ``imm`` with the same arguments and gets the same
    result, identical to a one-process run. ``candidates``: the distributed greedy's certified
    candidates per pick (0: a dense all-reduce of the counts per pick; ``gpucore.dist.cover``)."""
    clock = Phases(("run", "warm_up"))  # the whole call (the result's seconds), and the part before the phases
    with clock.phase("run"):
        comm = current() if comm is None else comm
        if comm.size > 1:  # first: arguments that differ would fail on some ranks only
            same_everywhere(comm, "IMM", {"graph": graph.sha256, "model": model, "k": k, "epsilon": epsilon,
                                          "ell": ell, "rounds": rounds, "seed": seed, "sampler": sampler,
                                          "sampler_options": sampler_options,
                                          "backend": getattr(backend, "name", backend),
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
        with clock.phase("warm_up"):
            engine, choice = prepare_engine(graph, model, int(rounds), int(seed), be, sampler,
                                            dict(sampler_options or {}), params, k, memory_limit, comm.size)
            if ranks is not None:  # the probe's keys are the same on every rank, so is the choice: checked
                same_everywhere(comm, "IMM sampler choice", {"sampler": choice.sampler, **choice.to_dict()})
                ranks.warm_up(engine)
        out = run_phases(engine, params, k, phases, memory_limit, ranks)
        peak = be.peak_memory()
        mine = {"selection_sets": out.local_sets, "estimate_sets": int(out.spread.local_sets),
                "seconds_by_phase": dict(phases.seconds), "peak_device_memory": int(peak),
                "memory_projected": out.projected}
        everyone = [mine] if ranks is None else comm.allgather(mine)
    n, lb, theta, spread, chosen, gains, covered = (graph.n, out.lb, out.theta, out.spread, out.chosen, out.gains,
                                                    out.covered)
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
        "sampler": choice.sampler,
        "sampler_options": dict(choice.options),
        "sampler_choice": choice.to_dict(),
        "theta": int(theta),
        "lower_bound": float(lb.value),
        "lb_iteration": lb.iteration,
        "lb_sets": out.lb_sets,
        "lb_iterations": lb.iterations,
        "covered": int(covered),
        "selection_spread": float(n * covered / theta),
        "estimated_spread": spread.value,
        "estimated_spread_stderr": spread.stderr,
        "estimate_sets": {"j_begin": spread.j_begin, "count": spread.sets, "covered": spread.hits},
        "rr_elements": out.elements,
        "rr_mean_size": out.elements / theta,
        "lb_mean_size": out.lb_mean,
        "parameters": params.to_dict(),
        "seconds": clock.seconds["run"],
        "seconds_by_phase": phases.seconds,
        "warm_up_seconds": clock.seconds["warm_up"],
        "peak_device_memory": int(peak),
        "memory_projected": out.projected,
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
