"""IMM (Tang, Shi, Xiao 2015) whose final phase reuses the estimation sets under a union bound, and MRIM.

``imm(graph, k, epsilon, model)`` runs four phases, each a function below (a distributed run can
replace one phase's sampling or selection and keep the rest):

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
(``bytes_needed``); beyond the memory budget an ``OutOfMemoryError`` names the size needed.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from gpucore.backend import available_ram, get_backend
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.engine import make_engine
from gpucore.im.rrsets import ESTIMATE_OFFSET, MAX_ROUNDS
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


def bytes_needed(engine, sets: int, elements: float, held: int = 0, batch_sets: int | None = None) -> int:
    """Peak bytes of growing a collection to ``sets`` sets holding ``elements`` elements and selecting
    on it: the new arrays, plus the larger of (the growth: the ``held`` bytes of the arrays being
    replaced and one sampling batch of ``batch_sets`` sets) and (the greedy's inverted index and its
    per-element and per-set arrays). Both backends keep the same arrays (``gpucore.im.cpu``/``cuda``)."""
    universe = engine.n * engine.rounds
    mean = elements / max(1, sets)
    batch_sets = sets if batch_sets is None else batch_sets
    coll = 4.0 * elements * 1.05 + 8.0 * sets
    batch = 4.0 * 1.3 * batch_sets * mean + 24.0 * batch_sets + 16384.0  # buffer or pool, sizes, starts
    select = 4.0 * elements + 29.0 * universe + 2.0 * sets  # index, pointers, counts, heap/scan, flags
    return int(coll + max(held + batch, select))


def memory_budget(backend, limit: int | None, held: int) -> int:
    """Bytes the collection may use in all: the limit, or what is free now plus what it ``held``."""
    if limit is not None:
        return int(limit)
    free = backend.free_memory() * 0.92 if backend.is_cuda else available_ram() * 0.85
    return int(free) + int(held)


def extend(engine, coll, target: int, memory_limit: int | None, mean_hint: float, phase: str) -> None:
    """Add sets to ``coll`` until it holds ``target``; raise OutOfMemoryError before overshooting.
    The projected peak is kept in ``coll.projected_bytes`` (the largest of its extensions)."""
    if target >= 2**31 - 1:
        need = bytes_needed(engine, target, target * max(1.0, mean_hint or 1.0))
        raise OutOfMemoryError(
            f"{phase} phase needs theta = {target:,} RR sets (about {format_bytes(need)}), beyond the "
            f"2^31 sets one run can hold; raise --eps or lower --k"
        )
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
                need = bytes_needed(engine, target, coll.total + remaining * mean, held, batch)
                budget = memory_budget(engine.backend, memory_limit, held)
                if need > budget:
                    raise OutOfMemoryError(
                        f"IMM {phase} phase needs about {format_bytes(need)} for theta = {target:,} RR sets "
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


def estimate_lower_bound(engine, coll, params, k: int, phases: Phases, memory_limit: int | None = None) -> LowerBound:
    """IMM's Algorithm 2 (Tang et al. 2015, section 4.1) on ``coll`` (sets j = 0, 1, ...): the first i
    whose greedy S_i passes ``n F_R(S_i) >= (1 + eps') x_i`` on the first theta_i sets sets
    LB = n F_R(S_i) / (1 + eps'). ``coll`` keeps its sets for the final phase.

    An iteration whose ``coverage_bound`` (the k largest counts per round; no k seeds cover more
    sets) already fails the test skips its greedy: the outcome is the same, decided for less."""
    out = LowerBound()
    for i in range(1, params.max_iterations + 1):
        target = params.theta_i(i)
        status(f"IMM LB iteration {i}: {target:,} RR sets")
        with phases.phase("lb_sampling"):
            extend(engine, coll, target, memory_limit, 0.0, "lower-bound")
        record = {"i": i, "x": params.x(i), "theta_i": target}
        out.iterations.append(record)
        with phases.phase("lb_selection"):
            record["bound"] = engine.coverage_bound(coll, k)
            if params.lb_test(i, record["bound"] / target) is None:
                continue  # no k seeds cover enough sets: the greedy cannot pass
            out.last_greedy = engine.greedy(coll, k)
        out.last_sets = coll.count
        record["covered"] = covered = int(out.last_greedy[2])
        frac = covered / target  # over the theta_i sets of the whole run (a rank holds a share of them)
        record["estimate"] = params.n * frac
        passed = params.lb_test(i, frac)
        if passed is not None:
            out.value, out.iteration = passed, i
            break
    return out


def sample_final(engine, coll, theta: int, phases: Phases, memory_limit: int | None = None) -> None:
    """IMM's final sampling: extend ``coll`` (the lower-bound search's sets) to its first ``theta`` sets."""
    status(f"IMM final phase: {theta:,} RR sets ({coll.count:,} from the lower-bound search)")
    with phases.phase("final_sampling"):
        extend(engine, coll, theta, memory_limit, coll.mean_size, "final")


def select_seeds(engine, coll, k: int, phases: Phases, done=None):
    """Greedy max-cover of ``coll`` with k seeds per round: (chosen elements, marginal gains, covered).
    ``done``: the greedy already run on exactly these sets (the last lower-bound iteration's), reused."""
    with phases.phase("final_selection"):
        chosen, gains, covered = done if done is not None else engine.greedy(coll, k)
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


def estimate_spread(engine, chosen, sets: int, phases: Phases, memory_limit: int | None = None,
                    mean_hint: float = 0.0) -> SpreadEstimate:
    """Score the seeds on ``sets`` RR sets that did not choose them (j = ESTIMATE_OFFSET, ...):
    n F is then an unbiased estimate of the expected spread (of the union over rounds in MRIM)."""
    n = engine.n
    with phases.phase("estimate"):
        coll = engine.collection(ESTIMATE_OFFSET)
        extend(engine, coll, sets, memory_limit, mean_hint, "estimate")
        hits = int(engine.coverage(coll, chosen))
        projected = coll.projected_bytes
        coll.release()
    frac = hits / sets
    return SpreadEstimate(value=n * frac, stderr=n * math.sqrt(frac * (1.0 - frac) / sets), sets=sets, hits=hits,
                          j_begin=ESTIMATE_OFFSET, projected_bytes=projected)


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
) -> dict:
    """Run IMM (rounds = 1) or CR-NAIMM (rounds = T); returns a result dict (see ``docs/im.md``).
    ``sampler``/``sampler_options``: the RR-set sampler (``gpucore.im.engine.SAMPLERS``) and its options."""
    t_start = time.perf_counter()
    model = _check_model(model)
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or not 1 <= rounds <= MAX_ROUNDS:
        raise GpucoreError(f"--rounds {rounds}: must be an integer in [1, {MAX_ROUNDS}]")
    if isinstance(k, (np.integer,)):
        k = int(k)
    params = imm_parameters(graph.n, k, epsilon, ell, int(rounds))
    be = get_backend(backend) if isinstance(backend, str) else backend
    rescaled = lt_rescaled_nodes(graph) if model == "LT" else 0
    be.reset_peak()
    engine = make_engine(graph, model, int(rounds), int(seed), be, sampler, **(sampler_options or {}))
    t_warm = time.perf_counter()
    engine.warm_up()
    warm_up = time.perf_counter() - t_warm
    phases = Phases(PHASES, sync=be.synchronize)
    n = graph.n

    coll = engine.collection(0)
    lb = estimate_lower_bound(engine, coll, params, k, phases, memory_limit)
    lb_sets, lb_mean = coll.count, coll.mean_size
    theta = params.theta(lb.value, lb_sets)
    sample_final(engine, coll, theta, phases, memory_limit)
    same = lb.last_greedy if coll.count == lb.last_sets else None
    chosen, gains, covered = select_seeds(engine, coll, k, phases, same)
    elements, mean, projected = int(coll.total), coll.mean_size, coll.projected_bytes
    coll.release()
    spread = estimate_spread(engine, chosen, estimate_sets(theta, covered / theta), phases, memory_limit, mean)
    peak = be.peak_memory()

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
        "rr_mean_size": mean,
        "lb_mean_size": float(lb_mean),
        "parameters": params.to_dict(),
        "seconds": seconds,
        "seconds_by_phase": phases.seconds,
        "warm_up_seconds": warm_up,
        "peak_device_memory": int(peak),
        "memory_projected": int(max(projected, spread.projected_bytes)),
        "backend": be.device_info(),
    }
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
