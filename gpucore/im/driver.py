"""IMM (Tang, Shi, Xiao 2015) with fresh final-phase RR sets (Chen 2018), and MRIM (CR-NAIMM).

``imm(graph, k, epsilon, model)`` runs three phases, each a function below (so that a distributed
run can replace one phase's sampling or selection and keep the rest):

1. ``estimate_lower_bound``: for i = 1 .. floor(log2 n) - 1, extend R (sets j = 0, 1, ...) to
   theta_i = ceil(lambda' / x_i) sets, greedy-select S_i, stop at the first i with
   n F_R(S_i) >= (1 + eps') x_i and set LB = n F_R(S_i) / (1 + eps'); LB = 1 if none passes;
2. ``sample_final``: theta = ceil(lambda* / LB); R is dropped and theta *fresh* sets
   j = FINAL_OFFSET, ... are drawn;
3. ``select_seeds``: greedy max-cover on the fresh sets gives the seeds; n F(S) on them is the
   estimated spread.

``rounds = T > 1`` is multi-round IM (CR-NAIMM port, spec section 3): each set draws one root and
runs T reverse traversals from it (round t with its own coins), elements are (node, round) pairs
``t * n + u``, and the cross-round greedy picks k seeds per round. Formulas: ``gpucore.im.theory``.
Samplers and selectors: ``gpucore.im.engine``. Seconds per phase: ``gpucore.timing.Phases``.

Before every extension the bytes needed for the target count are projected from the mean set size
seen so far; beyond the memory budget an ``OutOfMemoryError`` names the size needed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gpucore.backend import available_ram, get_backend
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.engine import make_engine
from gpucore.im.rrsets import FINAL_OFFSET, MAX_ROUNDS
from gpucore.im.theory import imm_parameters
from gpucore.progress import status
from gpucore.timing import Phases

MODELS = ("IC", "LT")
#: seconds_by_phase keys of every IMM result
PHASES = ("lb_sampling", "lb_selection", "final_sampling", "final_selection")
#: sets drawn first, before any mean size is known (then the memory projection starts)
PILOT_SETS = 2048
#: elements per sampling batch (bounds the temporary buffers)
BATCH_ELEMENTS = 1 << 26


def bytes_needed(engine, sets: int, elements: float) -> int:
    """Memory a collection of ``sets`` sets and ``elements`` elements needs, selection included."""
    universe = engine.n * engine.rounds
    if engine.backend.is_cuda:  # elements + offsets + covered flags + counts + sampling pool slack
        return int(4 * elements * 1.25 + 9 * sets + 8 * universe)
    # elements + inverted index + offsets + covered + counts/inverse pointers + sampling buffers
    return int(4 * elements * 2.3 + 9 * sets + 24 * universe)


def memory_budget(backend, limit: int | None) -> int:
    if limit is not None:
        return int(limit)
    if backend.is_cuda:
        return int(backend.free_memory() * 0.92)
    return int(available_ram() * 0.85)


def extend(engine, coll, target: int, memory_limit: int | None, mean_hint: float, phase: str) -> None:
    """Add sets to ``coll`` until it holds ``target``; raise OutOfMemoryError before overshooting."""
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
            if not checked:
                projected = coll.total + remaining * mean
                need = bytes_needed(engine, target, projected)
                budget = memory_budget(engine.backend, memory_limit) + coll.nbytes()
                if need > budget:
                    raise OutOfMemoryError(
                        f"IMM {phase} phase needs about {format_bytes(need)} for theta = {target:,} RR sets "
                        f"(mean {mean:.1f} elements each) but {format_bytes(budget)} is available on "
                        f"{engine.backend.name}; raise --eps, lower --k, or use more memory"
                    )
                coll.reserve(remaining, int(remaining * mean * 1.05) + 1024)
                checked = True
            batch = min(remaining, max(PILOT_SETS, int(BATCH_ELEMENTS / max(mean, 1.0))))
        engine.sample_into(coll, batch, mean)


def _check_model(model: str) -> str:
    model = str(model).upper()
    if model not in MODELS:
        raise GpucoreError(f"--model {model!r}: choose IC or LT")
    return model


@dataclass
class LowerBound:
    """Outcome of the lower-bound search: LB, the iteration that set it (None: the LB = 1 fallback),
    one record per iteration, and the sets R held at the end with their mean size."""

    value: float = 1.0
    iteration: int | None = None
    iterations: list = field(default_factory=list)
    sets: int = 0
    mean_size: float = 0.0


def estimate_lower_bound(engine, params, k: int, phases: Phases, memory_limit: int | None = None) -> LowerBound:
    """IMM's Algorithm 2 (Tang et al. 2015, section 4.1): the first i whose greedy S_i passes
    ``n F_R(S_i) >= (1 + eps') x_i`` on theta_i sets j = 0, 1, ... sets LB = n F_R(S_i) / (1 + eps').

    R grows across iterations (iteration i uses the first theta_i sets). The sets are dropped here.
    """
    out = LowerBound()
    coll = engine.collection(0)
    for i in range(1, params.max_iterations + 1):
        target = params.theta_i(i)
        status(f"IMM LB iteration {i}: {target:,} RR sets")
        with phases.phase("lb_sampling"):
            extend(engine, coll, target, memory_limit, 0.0, "lower-bound")
            engine.synchronize()
        with phases.phase("lb_selection"):
            _chosen, _gains, covered = engine.greedy(coll, k)
        frac = covered / coll.count
        out.iterations.append({"i": i, "x": params.x(i), "theta_i": target, "covered": covered,
                               "estimate": params.n * frac})
        passed = params.lb_test(i, frac)
        if passed is not None:
            out.value, out.iteration = passed, i
            break
    out.sets, out.mean_size = coll.count, coll.mean_size
    coll.release()
    return out


def sample_final(engine, theta: int, mean_hint: float, phases: Phases, memory_limit: int | None = None):
    """IMM's final phase: theta fresh RR sets j = FINAL_OFFSET, ... (never the estimation ones: Chen 2018)."""
    status(f"IMM final phase: {theta:,} RR sets")
    with phases.phase("final_sampling"):
        final = engine.collection(FINAL_OFFSET)
        extend(engine, final, theta, memory_limit, mean_hint, "final")
        engine.synchronize()
    return final


def select_seeds(engine, coll, k: int, phases: Phases):
    """Greedy max-cover of ``coll`` with k seeds per round: (chosen elements, marginal gains, covered)."""
    with phases.phase("final_selection"):
        chosen, gains, covered = engine.greedy(coll, k)
    return np.asarray(chosen, dtype=np.int64), np.asarray(gains, dtype=np.int64), int(covered)


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
) -> dict:
    """Run IMM (rounds = 1) or CR-NAIMM (rounds = T); returns a result dict (see ``docs/im.md``)."""
    t_start = time.perf_counter()
    model = _check_model(model)
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or not 1 <= rounds <= MAX_ROUNDS:
        raise GpucoreError(f"--rounds {rounds}: must be an integer in [1, {MAX_ROUNDS}]")
    if isinstance(k, (np.integer,)):
        k = int(k)
    params = imm_parameters(graph.n, k, epsilon, ell, int(rounds))
    be = get_backend(backend) if isinstance(backend, str) else backend
    be.reset_peak()
    engine = make_engine(graph, model, int(rounds), int(seed), be, sampler)
    phases = Phases(PHASES, sync=be.synchronize)
    n = graph.n

    lb = estimate_lower_bound(engine, params, k, phases, memory_limit)
    theta = params.theta(lb.value)
    final = sample_final(engine, theta, lb.mean_size, phases, memory_limit)
    chosen, gains, covered = select_seeds(engine, final, k, phases)
    elements = int(final.total)
    peak = be.peak_memory()
    final.release()

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
        "theta": int(theta),
        "lower_bound": float(lb.value),
        "lb_iteration": lb.iteration,
        "lb_sets": int(lb.sets),
        "lb_iterations": lb.iterations,
        "covered": int(covered),
        "estimated_spread": float(n * covered / theta),
        "rr_elements": elements,
        "rr_mean_size": elements / theta,
        "lb_mean_size": float(lb.mean_size),
        "parameters": params.to_dict(),
        "seconds": seconds,
        "seconds_by_phase": phases.seconds,
        "peak_device_memory": int(peak),
        "backend": be.device_info(),
    }
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
