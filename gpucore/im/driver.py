"""IMM (Tang, Shi, Xiao 2015) with fresh final-phase RR sets (Chen 2018), and MRIM (CR-NAIMM).

``imm(graph, k, epsilon, model)`` runs:

1. lower-bound search: for i = 1 .. floor(log2 n) - 1, extend R (sets j = 0, 1, ...) to
   theta_i = ceil(lambda' / x_i) sets, greedy-select S_i, stop at the first i with
   n F_R(S_i) >= (1 + eps') x_i and set LB = n F_R(S_i) / (1 + eps'); LB = 1 if none passes;
2. theta = ceil(lambda* / LB); R is dropped and theta *fresh* sets j = FINAL_OFFSET, ... are drawn;
3. greedy max-cover on the fresh sets gives the seeds; n F(S) on them is the estimated spread.

``rounds = T > 1`` is multi-round IM (CR-NAIMM port, spec section 3): each set draws one root and
runs T reverse traversals from it (round t with its own coins), elements are (node, round) pairs
``t * n + u``, and the cross-round greedy picks k seeds per round. Formulas: ``gpucore.im.theory``.

Before every extension the bytes needed for the target count are projected from the mean set size
seen so far; beyond the memory budget an ``OutOfMemoryError`` names the size needed.
"""

from __future__ import annotations

import time

import numpy as np

from gpucore.backend import available_ram, get_backend
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.im.rrsets import FINAL_OFFSET, MAX_ROUNDS
from gpucore.im.theory import imm_parameters
from gpucore.progress import status

MODELS = ("IC", "LT")
#: sets drawn first, before any mean size is known (then the memory projection starts)
PILOT_SETS = 2048
#: elements per sampling batch (bounds the temporary buffers)
BATCH_ELEMENTS = 1 << 26


def make_engine(graph, model: str, rounds: int, seed: int, backend):
    """The sampler + selector of a backend (the fused and sketch samplers plug in here)."""
    if backend.is_cuda:
        from gpucore.im.cuda import CUDAEngine

        return CUDAEngine(graph, model, rounds, seed, backend)
    from gpucore.im.cpu import CPUEngine

    return CPUEngine(graph, model, rounds, seed, backend)


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
    engine = make_engine(graph, model, int(rounds), int(seed), be)
    n = graph.n
    timing = {"lb_sampling": 0.0, "lb_selection": 0.0, "final_sampling": 0.0, "final_selection": 0.0}

    # 1. lower bound of OPT
    coll = engine.collection(0)
    lb, lb_iteration, iterations = 1.0, None, []
    for i in range(1, params.max_iterations + 1):
        target = params.theta_i(i)
        status(f"IMM LB iteration {i}: {target:,} RR sets")
        t = time.perf_counter()
        extend(engine, coll, target, memory_limit, 0.0, "lower-bound")
        engine.synchronize()
        timing["lb_sampling"] += time.perf_counter() - t
        t = time.perf_counter()
        _chosen, _gains, covered = engine.greedy(coll, k)
        timing["lb_selection"] += time.perf_counter() - t
        frac = covered / coll.count
        iterations.append({"i": i, "x": params.x(i), "theta_i": target, "covered": covered,
                           "estimate": n * frac})
        passed = params.lb_test(i, frac)
        if passed is not None:
            lb, lb_iteration = passed, i
            break
    lb_sets, lb_mean = coll.count, coll.mean_size
    coll.release()
    del coll

    # 2. theta fresh sets (never the estimation ones: Chen 2018)
    theta = params.theta(lb)
    status(f"IMM final phase: {theta:,} RR sets")
    t = time.perf_counter()
    final = engine.collection(FINAL_OFFSET)
    extend(engine, final, theta, memory_limit, lb_mean, "final")
    engine.synchronize()
    timing["final_sampling"] = time.perf_counter() - t
    t = time.perf_counter()
    chosen, gains, covered = engine.greedy(final, k)
    timing["final_selection"] = time.perf_counter() - t
    chosen = np.asarray(chosen, dtype=np.int64)
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
        "theta": int(theta),
        "lower_bound": float(lb),
        "lb_iteration": lb_iteration,
        "lb_sets": int(lb_sets),
        "lb_iterations": iterations,
        "covered": int(covered),
        "estimated_spread": float(n * covered / theta),
        "rr_elements": elements,
        "rr_mean_size": elements / theta,
        "lb_mean_size": float(lb_mean),
        "parameters": params.to_dict(),
        "seconds": seconds,
        "seconds_by_phase": timing,
        "peak_device_memory": int(peak),
        "backend": be.device_info(),
    }
    if rounds == 1:
        result["seed_ids"] = [int(x) for x in chosen]
        result["seeds"] = [int(orig[x]) for x in chosen]
        result["marginal_coverage"] = [int(x) for x in gains]
    else:  # order of choice, then grouped by round
        by_round = [[] for _ in range(rounds)]
        for e in chosen:
            by_round[int(e) // n].append(int(e) % n)
        result["seed_ids"] = by_round
        result["seeds"] = [[int(orig[x]) for x in r] for r in by_round]
        result["selection_order"] = [[int(e) // n, int(e) % n] for e in chosen]
        result["marginal_coverage"] = [int(x) for x in gains]
    return result

