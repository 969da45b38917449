"""Algorithm 1 (MERIT) and its regenerating baselines, backend-independent.

``run_amcss`` validates the input, builds the backend's ``Primitives`` once (``backends``) and
runs every world realization (``run_realization``). A round has three steps, one function each:

1. ``prepare_collection``: Update every set to the round (MERIT; shrinking it as k grows) or clear
   the collection (PASTI/ASTI, and MERIT after a round that left it too polluted);
2. ``select_batch``: generate sets while the greedy batch fails the acceptance test (theta
   doubling up to theta_max, accepted there anyway);
3. ``observe_batch``: commit the batch, observe its diffusion on the world, Discover(A_i) (MERIT);

then ``round_record`` logs it. Every phase is timed with ``gpucore.timing.Phases``; the result is
a JSON-ready dict.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np

from gpucore.amcss.backends import make_primitives
from gpucore.amcss.bounds import RoundBounds, round_bounds
from gpucore.amcss.primitives import Primitives
from gpucore.amcss.paired import arcs_probed, paired_record, reprobe_fraction, way_record
from gpucore.backend import get_backend
from gpucore.errors import GpucoreError
from gpucore.graph.costs import check_costs
from gpucore.graph.model import Graph
from gpucore.progress import progress
from gpucore.random import Stream, mix_py, world_seed_of
from gpucore.timing import Phases

MODELS = ("IC", "LT")
PHASES = ("generate", "update", "select", "diffuse", "discover")
#: MERIT regenerates a round whose collection is at least this polluted (see run_realization)
POLLUTION_LIMIT = 0.9


def sample_seed_of(run_seed: int, realization: int) -> int:
    """Key seed of the mRR-sets of realization r: mix(run_seed, WORLD, r, 1).

    (The world itself is ``world_seed_of(run_seed, r) = mix(run_seed, WORLD, r)``; the sampling
    chain is one step longer, so the sets never share a key with the world.)
    """
    return mix_py(run_seed, int(Stream.WORLD), realization, 1)


def algorithm_name(update: bool, backend: str, threads: int | None) -> str:
    if update:
        return "MERIT"
    if backend == "cuda":
        return "GAMCSS"
    return "ASTI" if threads == 1 else "PASTI"


def validate(graph: Graph, model: str, eta, batch, eps, realizations) -> None:
    """Raise GpucoreError (one line, naming the parameter) on bad input."""
    if model not in MODELS:
        raise GpucoreError(f"--model {model!r}: choose IC or LT")
    if isinstance(eta, bool) or not isinstance(eta, (int, np.integer)) or not 1 <= int(eta) <= graph.n:
        raise GpucoreError(f"--eta {eta!r}: must be an integer in [1, n={graph.n:,}] for {graph.path}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or int(batch) < 1:
        raise GpucoreError(f"--batch {batch!r}: must be an integer >= 1")
    if not isinstance(eps, (int, float, np.floating)) or not (0.0 < float(eps) < 1.0) or math.isnan(float(eps)):
        raise GpucoreError(f"--eps {eps!r}: must lie strictly between 0 and 1")
    if isinstance(realizations, bool) or not isinstance(realizations, (int, np.integer)) or int(realizations) < 1:
        raise GpucoreError(f"--realizations {realizations!r}: must be an integer >= 1")
    cost = getattr(graph, "cost", None)
    if cost is None or np.asarray(cost).shape != (graph.n,):
        raise GpucoreError(f"{graph.path}: the graph has no seed cost for every vertex (re-run preprocess with --cost)")
    check_costs(np.asarray(cost), f"{graph.path}: seed costs")


def coverage_forecast(coverage_fraction: float | None, k_prev: float, k: float) -> float | None:
    """The coverage fraction of this round's batch, forecast from the last round's: a set is covered
    when one of its roots is reached from the batch, each root about independently, so a fraction c
    at k_{i-1} roots per set becomes 1 - (1 - c)^(k_i / k_{i-1}) at k_i (docs/amcss.md, "What an
    Update can save"). None without a last round."""
    if not coverage_fraction or k_prev <= 0:
        return None
    return 1.0 - (1.0 - min(coverage_fraction, 1.0)) ** (k / k_prev)


def regeneration_theta(bounds: RoundBounds, coverage_fraction: float | None) -> int | None:
    """The number of sets a regeneration of this round would accept its batch at, for a batch that
    covers ``coverage_fraction`` of the sets (``coverage_forecast``): the first set count of its
    schedule theta_0, 2 theta_0, ... (capped at theta_max) that reaches the acceptance test's
    ``min_coverage``. None without a coverage fraction."""
    if not coverage_fraction:
        return None
    need = bounds.min_coverage / coverage_fraction
    theta = bounds.theta_0_int
    while theta < need and theta < bounds.theta_max_int:
        theta = min(2 * theta, bounds.theta_max_int)
    return theta


def sets_to_keep(bounds: RoundBounds, theta: int, k: float, k_prev: float, target: int | None) -> int:
    """How many of its ``theta`` sets MERIT keeps for round i (docs/amcss.md, "What an Update can
    save"): the ``target`` (``regeneration_theta``: MERIT then selects from as many sets as a
    regeneration would), or without one ceil(theta k_{i-1} / k_i) (sets grow about linearly with
    their roots: the collection keeps about its size in entries). Never below theta_0 nor above
    theta. Which sets go does not depend on their content (the newest ids), so the rest is still a
    collection of independent samples."""
    if target is not None:
        keep = target
    elif k > k_prev:
        keep = int(math.ceil(theta * k_prev / k))
    else:
        keep = theta
    return min(theta, max(bounds.theta_0_int, keep))


def other_way(prims: Primitives, bounds: RoundBounds, k: float, k_prev: float, rnd: int, regenerate: bool, sync,
              target: int | None, shrink: bool) -> dict:
    """From a snapshot of the collection, run the round's collection steps the other way (``regenerate``:
    the way MERIT did not choose; ``target``: its set count, ``update_target``), and restore
    the snapshot. Returns the way's ``way_record``."""
    state = prims.snapshot()
    phases = Phases(PHASES, sync=sync)
    arcs = arcs_probed(prims)
    stats = prepare_collection(prims, bounds, k, k_prev, rnd, True, shrink, regenerate, phases, target)
    seeds, coverage, trials, _accepted = select_batch(prims, bounds, k, rnd, True, phases, target)
    out = way_record(prims, phases, stats, trials, coverage, seeds, arcs)
    prims.restore(state)
    return out


def update_target(bounds: RoundBounds, update: bool, shrink: bool, regenerate: bool,
                  coverage_fraction: float | None, k_prev: float, k: float) -> int | None:
    """The set count MERIT's Update of this round aims at: what a regeneration would accept at
    (``regeneration_theta`` of the ``coverage_forecast`` from the last round's batch), or None: the
    regenerating baselines and MERIT's regenerated rounds follow the regeneration's own schedule
    from theta_0, and ``shrink=False`` (``--keep-all``) keeps every set (the paper's Algorithm 1)."""
    if not (update and shrink) or regenerate:
        return None
    return regeneration_theta(bounds, coverage_forecast(coverage_fraction, k_prev, k))


def prepare_collection(prims: Primitives, bounds: RoundBounds, k: float, k_prev: float, rnd: int, update: bool,
                       shrink: bool, regenerate: bool, phases: Phases, target: int | None = None) -> dict | None:
    """Step 1 of a round: bring the collection to round ``rnd`` before any set is drawn.

    PASTI/ASTI (``update=False``) drop every set. MERIT drops them too when ``regenerate`` (the
    Update would probe almost as much as a regeneration: ``run_realization``); otherwise, when sets
    exist, it keeps ``sets_to_keep`` of them (``shrink``; the newest go; ``target``: the sets a
    regeneration would accept at) and Updates every kept set to k_i = ``k`` (Lemmas 3.4 and 3.6),
    timed as phase "update". Returns Update's statistics (None when nothing was updated)."""
    if not update or regenerate:
        prims.clear()
    if not (update and prims.theta > 0):
        return None
    with phases.phase("update"):
        trimmed = 0
        if shrink:
            keep = sets_to_keep(bounds, prims.theta, k, k_prev, target)
            if keep < prims.theta:
                trimmed = prims.theta - keep
                prims.trim(keep)
        stats = prims.update(k, rnd, min_keep=bounds.theta_0_int)
    if trimmed:
        stats["shrunk"] = trimmed
    return stats


def select_batch(prims: Primitives, bounds: RoundBounds, k: float, rnd: int, update: bool,
                 phases: Phases, start: int | None = None) -> tuple[np.ndarray, int, int, bool]:
    """Step 2 of a round: draw sets until the greedy batch passes the acceptance test.

    Starting from theta = max(sets kept, theta_0, ``start``), generate fresh sets up to theta (phase
    "generate"), select a batch of b seeds (phase "select") and test its coverage
    (``RoundBounds.accept``); on failure double theta, up to theta_max, where the batch is accepted
    anyway (MERIT Algorithm 1, lines 5-12). Returns (seeds, coverage, trials, accepted by the test).
    """
    theta = max(prims.theta, bounds.theta_0_int, start or 0)
    trials = 0
    while True:
        if theta > prims.theta:
            with phases.phase("generate"):
                prims.generate(theta, k, rnd)
        with phases.phase("select"):
            seeds, coverage = prims.select(bounds.b, last_discover=update)
        trials += 1
        accepted = bounds.accept(coverage)
        if accepted or theta >= bounds.theta_max_int:
            return seeds, int(coverage), trials, accepted
        theta = min(2 * theta, bounds.theta_max_int)


def observe_batch(prims: Primitives, seeds: np.ndarray, update: bool, eta_i: int,
                  phases: Phases) -> tuple[np.ndarray, int | None]:
    """Step 3 of a round: accept the batch (cnt <- cnt', phase "select"), observe its diffusion on
    the world (phase "diffuse") and, for MERIT when users remain to activate (``eta_i`` minus the
    newly active > 0), Discover(A_i): flag the sets the newly active users pollute (phase
    "discover"). Returns (newly active ids, sets flagged by Discover or None)."""
    with phases.phase("select"):
        prims.commit()
    with phases.phase("diffuse"):
        newly = prims.diffuse(seeds)
    if not (update and eta_i - int(newly.size) > 0):
        return newly, None
    with phases.phase("discover"):
        polluted = prims.discover_active()
    return newly, int(polluted)


def round_record(graph: Graph, prims: Primitives, rnd: int, seeds: np.ndarray, newly: np.ndarray, eta_i: int,
                 n_i: int, k: float, bounds: RoundBounds, trials: int, coverage: int, accepted: bool,
                 phases: Phases, upd_stats: dict | None, regenerated: bool, polluted: int | None) -> dict:
    """The JSON record of round ``rnd`` (what the result file logs and the oracle replays): its seeds
    (original and internal ids), their cost, the newly active count, the collection and the bounds,
    the seconds per phase, and for MERIT the Update statistics and the pollution left behind
    (fraction of the sets flagged: covered by the batch or holding a newly active user)."""
    record = {
        "round": rnd,
        "seeds": [int(x) for x in np.asarray(graph.original_id)[seeds]],
        "seed_ids": [int(x) for x in seeds],
        "cost": float(np.asarray(graph.cost)[seeds].astype(np.float64).sum()),
        "newly_active": int(newly.size),
        "theta": int(prims.theta),
        "eta_before": int(eta_i),
        "n_residual": int(n_i),
        "k": k,
        "trials": trials,
        "theta_0": bounds.theta_0_int,
        "theta_max": bounds.theta_max_int,
        "coverage": int(coverage),
        "accepted_by": "test" if accepted else "theta_max",
        "seconds": dict(phases.seconds),
    }
    if upd_stats is not None:
        record["update"] = upd_stats
    if regenerated:
        record["regenerated"] = True
    if polluted is not None:
        record["polluted"] = int(polluted)
        record["pollution"] = (coverage + polluted) / prims.theta if prims.theta else None
    return record


def run_realization(prims: Primitives, graph: Graph, model: str, eta: int, batch: int, eps: float,
                    world_seed: int, sample_seed: int, update: bool = True, label: str = "",
                    on_round=None, shrink: bool = True, pollution_limit: float = POLLUTION_LIMIT,
                    paired: bool = False) -> dict:
    """One adaptive run on one world realization; returns its JSON-ready record.

    Each round i: the bounds of (n_i, b, eps) (``round_bounds``), ``prepare_collection``,
    ``select_batch``, ``observe_batch``, then the round's record; rounds go on until eta users are
    active. Every step is timed per phase (``PHASES``) with the backend's device waits.

    ``shrink`` (MERIT only): when k_i grows, keep ceil(theta k_{i-1} / k_i) sets (at least
    theta_0), dropping the newest ones, before the Update: sets grow about linearly with k, so the
    collection keeps about the same size, as the regenerating baselines' accepted theta falls. Any
    subset of independent sets is a valid collection and the acceptance test still decides; with
    ``shrink=False`` the collection never shrinks (the paper's Algorithm 1).

    ``pollution_limit`` (MERIT only): when at least this fraction of the sets ended round i-1
    polluted (covered by its batch, or holding a node it activated; the record's ``pollution``), the
    round regenerates its collection (as PASTI) instead of updating it: a polluted set is rebuilt
    from its inactive roots anyway (Lemma 3.6), at the cost of a fresh one, and the regeneration's
    theta doubling keeps only as many sets as the acceptance test needs. Measured at LiveJournal
    size (results/reference/bench-merit-gpu.md): 92-100 % of the sets polluted every round, where
    Update lost to regeneration; below 30 % on the other graphs. ``> 1`` never.

    ``paired`` (MERIT only): each round after the first also runs the way the rule did not choose
    from a snapshot of the collection, timed, then goes on the chosen way (``gpucore.amcss.paired``;
    the rounds gain ``paired``, the trajectory is unchanged)."""
    sync = get_backend(prims.name).synchronize
    timer = Phases(("realization",), sync=sync)
    rounds = []
    bar = progress(total=eta, desc=label, unit="user")
    with bar, timer.phase("realization"):
        prims.start(world_seed, sample_seed)
        eta_i, active, k_prev = int(eta), 0, 0.0
        pollution = None  # fraction of the sets polluted at the end of the last round (MERIT)
        while eta_i > 0:
            rnd = len(rounds) + 1
            phases = Phases(PHASES, sync=sync)
            n_i = prims.n_residual
            bounds = round_bounds(n_i, batch, eps)
            k = n_i / eta_i
            regenerate = bool(update and pollution is not None
                              and reprobe_fraction(pollution, k_prev, k) >= pollution_limit)
            coverage_fraction = rounds[-1]["coverage"] / rounds[-1]["theta"] if rounds else None
            other = None
            if paired and update and prims.theta > 0:
                other = other_way(prims, bounds, k, k_prev, rnd, not regenerate, sync,
                                  update_target(bounds, True, shrink, not regenerate, coverage_fraction, k_prev, k),
                                  shrink)
                arcs = arcs_probed(prims)
            target = update_target(bounds, update, shrink, regenerate, coverage_fraction, k_prev, k)
            upd_stats = prepare_collection(prims, bounds, k, k_prev, rnd, update, shrink, regenerate, phases, target)
            seeds, coverage, trials, accepted = select_batch(prims, bounds, k, rnd, update, phases, target)
            if other is not None:
                chosen = way_record(prims, phases, upd_stats, trials, coverage, seeds, arcs)
            newly, polluted = observe_batch(prims, seeds, update, eta_i, phases)
            k_prev = k
            record = round_record(graph, prims, rnd, seeds, newly, eta_i, n_i, k, bounds, trials, coverage, accepted,
                                  phases, upd_stats, regenerate, polluted)
            if other is not None:
                record["paired"] = paired_record(chosen, other, regenerate, rounds[-1]["seconds"]["discover"])
            eta_i -= int(newly.size)
            active += int(newly.size)
            if polluted is not None:
                pollution = record["pollution"]
            rounds.append(record)
            if on_round is not None:
                on_round(record)
            bar.update(min(int(newly.size), eta - bar.n))
            bar.set_postfix_str(f"round {rnd}, cost {sum(r['cost'] for r in rounds):.4g}, theta {prims.theta:,}")
    total_cost = float(sum(r["cost"] for r in rounds))
    return {
        "world_seed": int(world_seed),
        "sample_seed": int(sample_seed),
        "rounds": rounds,
        "total_cost": total_cost,
        "total_cost_normalized": total_cost / float(graph.cost_scale) if graph.cost_scale else total_cost,
        "seeds_count": int(sum(len(r["seed_ids"]) for r in rounds)),
        "active": active,
        "reached": active >= eta,
        "seconds": timer.total,
        "seconds_by_phase": {p: float(sum(r["seconds"][p] for r in rounds)) for p in PHASES},
    }


def run_amcss(graph: Graph, model: str = "IC", eta: int = 1000, batch: int = 4, eps: float = 0.5,
              realizations: int = 1, seed: int = 0, update: bool = True, threads: int | None = None,
              backend: str = "cpu", memory_budget: int | None = None, segments: int | None = None,
              primitives: Primitives | None = None, first_realization: int = 0, on_round=None,
              shrink: bool = True, beta: int | None = None, pollution_limit: float = POLLUTION_LIMIT,
              warm_up: bool = True, paired: bool = False) -> dict:
    """Run AMCSS (MERIT with ``update=True``; PASTI / ASTI (threads=1) / GAMCSS (cuda) without).

    Before the first realization the backend compiles and loads its kernels on this graph
    (``Primitives.warm_up``, unless ``warm_up`` is False), timed apart: the summary's
    ``warm_up_seconds``, never a realization's ``seconds``. ``paired`` (MERIT): measure every round
    both ways, Update and regeneration, on the same collection state (``run_realization``); the
    realizations' ``seconds`` then include the way not taken."""
    validate(graph, model, eta, batch, eps, realizations)
    eta, batch, eps, realizations = int(eta), int(batch), float(eps), int(realizations)
    setup = Phases(("setup",))
    with setup.phase("setup"):
        prims = primitives or make_primitives(graph, model, backend, threads, memory_budget, segments, beta)
    be = get_backend(prims.name)
    warm = Phases(("warm_up",), sync=be.synchronize)
    if warm_up:
        with warm.phase("warm_up"):
            prims.warm_up()
    out_real = []
    for r in range(first_realization, first_realization + realizations):
        ws = world_seed_of(seed, r)
        ss = sample_seed_of(seed, r)
        rec = run_realization(prims, graph, model, eta, batch, eps, ws, ss, update=update,
                              label=f"realization {r + 1}/{first_realization + realizations}", on_round=on_round,
                              shrink=shrink, pollution_limit=pollution_limit, paired=paired)
        rec = {"realization": r, **rec}
        out_real.append(rec)
    costs = [r["total_cost"] for r in out_real]
    result = {
        "kind": "amcss",
        "graph": {"path": str(graph.path), "sha256": graph.sha256, "n": int(graph.n), "m": int(graph.m),
                  "cost_scale": float(graph.cost_scale)},
        "model": model,
        "eta": eta,
        "batch": batch,
        "epsilon": eps,
        "algorithm": algorithm_name(update, prims.name, threads),
        "backend": prims.name,
        "update": bool(update),
        "shrink": bool(shrink and update),
        "pollution_limit": float(pollution_limit) if update else None,
        "paired": bool(paired and update),
        "seed": int(seed),
        "threads": getattr(prims, "T", None),
        "segments": getattr(prims, "S", None),
        "device": be.device_info(),
        "keys": {
            "world_seed": "mix(seed, WORLD=20, r)",
            "sample_seed": "mix(seed, WORLD=20, r, 1)",
            "ic_coin": "uniform(mix(sample_seed, COIN=1, j, edge_id)) < p",
            "root_draw": "residual[mix(sample_seed, ROOT=2, j, round, d) mod n_i]",
            "lt_choice": "lt_draw(mix(sample_seed, LT_CHOICE=3, j, v, attempt))",
            "root_count": "floor(n_i/eta_i + uniform(mix(sample_seed, ROOT_COUNT=4, j)))",
        },
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "realization_ids": list(range(first_realization, first_realization + realizations)),
        "realizations": out_real,
        "summary": {
            "realizations": len(out_real),
            "reached_all": all(r["reached"] for r in out_real),
            "mean_total_cost": float(np.mean(costs)),
            "mean_total_cost_normalized": float(np.mean([r["total_cost_normalized"] for r in out_real])),
            "mean_rounds": float(np.mean([len(r["rounds"]) for r in out_real])),
            "mean_seeds": float(np.mean([r["seeds_count"] for r in out_real])),
            "mean_active": float(np.mean([r["active"] for r in out_real])),
            "mean_seconds": float(np.mean([r["seconds"] for r in out_real])),
            "total_seconds": float(sum(r["seconds"] for r in out_real)),
            "setup_seconds": setup.total,
            "warm_up_seconds": warm.total,
            "seconds_by_phase": {p: float(sum(r["seconds_by_phase"][p] for r in out_real)) for p in PHASES},
            "max_theta": int(max(rd["theta"] for r in out_real for rd in r["rounds"])),
        },
    }
    if hasattr(prims, "device_memory"):  # CUDA backend: beta, segments, peak device memory
        result["device_memory"] = prims.device_memory()
        result["beta"] = getattr(prims, "beta_setting", None)
    return result
