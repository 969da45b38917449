"""Verification of solver result files (the library side of ``gpucore verify`` and ``gpucore im --verify``).

- ``amcss``: every realization replayed round by round on its world (``replay``);
- ``im`` with one round: the Monte-Carlo spread of the seed set (``spread``);
- ``im`` with ``rounds`` T > 1 (multi-round IM): the Monte-Carlo influence of the T-round plan
  (``multi_round_spread``); in both IM cases the solver's ``estimated_spread`` must lie in the
  oracle's confidence interval widened by ``tolerance``.

``verify_result(result, graph, ...)`` returns a report dict with a top-level ``passed``. Structural
problems that make a check impossible (graph checksum mismatch, unknown kind or model, missing or
malformed fields, ids out of range) raise ``GpucoreError``; disagreements between the result and the
oracle are failures listed in the report (``failures``, one line each).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.oracle.api import replay, spread, warm_up
from gpucore.oracle.checks import MODELS, as_id_array, check_model, check_range, check_u64
from gpucore.oracle.multiround import multi_round_spread
from gpucore.timing import Phases

KINDS = ("amcss", "im", "sds")


def _field(obj: dict, key: str, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise GpucoreError(f"{where}: missing field {key!r}")
    return obj[key]


def _int(value, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise GpucoreError(f"{where} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise GpucoreError(f"{where} must be >= {minimum}, got {value}")
    return int(value)


def check_graph_matches(result: dict, graph, source: str) -> None:
    """Refuse a result computed on another graph (its ``graph.sha256`` must be the graph's digest)."""
    info = _field(result, "graph", source)
    digest = _field(info, "sha256", f"{source} graph")
    if not isinstance(digest, str) or digest.lower() != graph.sha256.lower():
        raise GpucoreError(f"{source}: graph checksum {str(digest)[:16]}... differs from {graph.path} "
                           f"({graph.sha256[:16]}...): the result was computed on another graph")


def _ids(graph, entry: dict, where: str) -> tuple[np.ndarray, list[str]]:
    """Internal seed ids of a round / IM result, and consistency failures between seed_ids and seeds."""
    failures = []
    if "seed_ids" in entry:
        ids = as_id_array(entry["seed_ids"], f"{where} seed_ids")
        check_range(ids, graph.n, f"{where} seed_ids")
        if "seeds" in entry:
            orig = as_id_array(entry["seeds"], f"{where} seeds")
            mapped = np.asarray(graph.original_id)[ids]
            if orig.shape != mapped.shape or not np.array_equal(orig, mapped):
                failures.append(f"{where}: seed_ids do not map to the logged original seeds")
    elif "seeds" in entry:
        ids = graph.internal_ids(as_id_array(entry["seeds"], f"{where} seeds"))
    else:
        raise GpucoreError(f"{where}: missing field 'seed_ids'")
    return ids, failures


def verify_amcss(result: dict, graph, source: str) -> dict:
    model = check_model(_field(result, "model", source))
    eta = _int(_field(result, "eta", source), f"{source} eta", 1)
    realizations = _field(result, "realizations", source)
    if not isinstance(realizations, list):
        raise GpucoreError(f"{source}: 'realizations' must be a list")
    failures, reports = [], []
    if not realizations:
        failures.append("the result has no realizations")
    for i, real in enumerate(realizations):
        where = f"{source} realization {i}"
        world = check_u64(_field(real, "world_seed", where), f"{where} world_seed")
        rounds = _field(real, "rounds", where)
        if not isinstance(rounds, list):
            raise GpucoreError(f"{where}: 'rounds' must be a list")
        logged_rounds, problems = [], []
        for j, rnd in enumerate(rounds):
            if not isinstance(rnd, dict):
                raise GpucoreError(f"{where} round {j}: expected an object")
            ids, bad = _ids(graph, rnd, f"{where} round {j}")
            problems += bad
            logged_rounds.append({"seed_ids": ids, "newly_active": rnd.get("newly_active")})
        rep = replay(graph, logged_rounds, model, world, eta)
        if rep.first_mismatch:
            problems.insert(0, rep.first_mismatch)
        if not rep.reached:
            problems.append(f"eta={eta} not reached: {rep.total_active} active after {len(rounds)} rounds")
        logged_active = real.get("active")
        if logged_active is not None and logged_active != rep.total_active:
            problems.append(f"logged active {logged_active}, replay {rep.total_active}")
        logged_reached = real.get("reached")
        if logged_reached is not None and bool(logged_reached) != rep.reached:
            problems.append(f"logged reached={bool(logged_reached)}, replay reached={rep.reached}")
        seeds_cost = float(sum(float(graph.cost[int(x)]) for r in logged_rounds for x in r["seed_ids"]))
        ok = not problems
        reports.append({
            "index": i,
            "world_seed": world,
            "passed": ok,
            "matches": rep.matches,
            "reached": rep.reached,
            "rounds": len(rounds),
            "total_active": rep.total_active,
            "logged_active": logged_active,
            "first_mismatch": problems[0] if problems else None,
            "problems": problems,
            "newly_active": rep.newly_active,
            "logged_newly_active": [r["newly_active"] for r in logged_rounds],
            "seed_cost_raw": seeds_cost,
            "logged_total_cost": real.get("total_cost"),
        })
        if problems:
            failures.append(f"realization {i} (world_seed {world}): {problems[0]}")
    return {"checked": "amcss", "model": model, "eta": eta, "realizations": reports, "failures": failures,
            "passed": not failures}


def _seed_set(graph, entry: dict, where: str, k) -> tuple[np.ndarray, list[str]]:
    """Internal ids of one seed set (an IM result or one MRIM round), as logged, and its problems:
    seed_ids not matching the logged original seeds, a seed twice, an empty set, a size other than k."""
    ids, failures = _ids(graph, entry, where)
    uniq, counts = np.unique(ids, return_counts=True)
    if uniq.size != ids.size:
        failures.append(f"{where}: seed {int(uniq[counts > 1][0])} (internal) appears more than once")
    if ids.size == 0:
        failures.append(f"{where}: empty seed set")
    if k is not None and k != ids.size:
        failures.append(f"{where}: k={k} but {ids.size} seeds")
    return ids, failures


def _rounds_of(result: dict, source: str) -> list[dict]:
    """The per-round entries ({'seed_ids', 'seeds'}) of a multi-round result (``rounds`` > 1)."""
    rounds = _int(result.get("rounds"), f"{source} rounds", 2)
    by_key = {}
    for key in ("seed_ids", "seeds"):
        if key in result:
            lists = result[key]
            if not isinstance(lists, list) or len(lists) != rounds or not all(isinstance(x, list) for x in lists):
                raise GpucoreError(f"{source}: '{key}' of a {rounds}-round result must be a list of {rounds} lists "
                                   "(one per round)")
            by_key[key] = lists
    if not by_key:
        raise GpucoreError(f"{source}: missing field 'seed_ids'")
    return [{key: lists[t] for key, lists in by_key.items()} for t in range(rounds)]


def verify_im(result: dict, graph, source: str, runs: int, seed: int, backend, tolerance: float,
              confidence: float, threads: int | None) -> dict:
    """IM (``rounds`` 1 or absent): Monte-Carlo spread of the seed set. Multi-round IM (``rounds`` T > 1,
    ``seed_ids`` one list per round): Monte-Carlo influence of the plan (``multi_round_spread``). Either
    way the solver's ``estimated_spread`` must lie in the oracle's CI widened by ``tolerance``."""
    model = check_model(_field(result, "model", source))
    k = result.get("k")
    k = None if k is None else _int(k, f"{source} k", 0)
    est = result.get("estimated_spread")
    if est is not None and (isinstance(est, bool) or not isinstance(est, numbers.Real) or not math.isfinite(est)):
        raise GpucoreError(f"{source}: estimated_spread must be a finite number, got {est!r}")
    report = {"checked": "im", "model": model, "k": k, "estimated_spread": est, "tolerance": tolerance}
    if result.get("rounds", 1) == 1:
        ids, failures = _seed_set(graph, result, source, k)
        report.update(k=int(ids.size) if k is None else k, seed_ids=[int(x) for x in ids])
        sp = spread(graph, np.unique(ids), model, runs=runs, seed=seed, backend=backend, confidence=confidence,
                    threads=threads) if ids.size else None
    else:
        plan, failures = [], []
        for t, entry in enumerate(_rounds_of(result, source)):
            ids, problems = _seed_set(graph, entry, f"{source} round {t}", k)
            plan.append(ids)
            failures += problems
        report.update(checked="mrim", rounds=len(plan), seed_ids=[[int(x) for x in ids] for ids in plan])
        sp = multi_round_spread(graph, [np.unique(ids) for ids in plan], model, runs=runs, seed=seed, backend=backend,
                                confidence=confidence) if all(ids.size for ids in plan) else None
    if sp is not None:
        report.update(spread=sp.to_dict(), mean=sp.mean, stderr=sp.stderr, ci_low=sp.ci_low, ci_high=sp.ci_high,
                      ci=[sp.ci_low, sp.ci_high], runs=sp.runs, backend=sp.backend)
        if est is None:
            failures.append("no estimated_spread in the result to compare with")
            report["ratio"] = None
        else:
            report["ratio"] = float(est) / sp.mean if sp.mean > 0 else None
            lo, hi = sp.ci_low * (1.0 - tolerance), sp.ci_high * (1.0 + tolerance)
            report["accepted_range"] = [lo, hi]
            if not lo <= float(est) <= hi:
                failures.append(f"estimated_spread {float(est):.6g} outside the oracle's CI "
                                f"[{sp.ci_low:.6g}, {sp.ci_high:.6g}] widened by {tolerance:.0%}")
    report.update(failures=failures, passed=not failures)
    return report


def verify_result(result: dict, graph, source: str = "result", *, runs: int = 10000, seed: int = 0,
                  backend="auto", tolerance: float = 0.1, confidence: float = 0.95,
                  threads: int | None = None) -> dict:
    """Check one result dict against ``graph`` with the oracle; returns the report (``passed`` bool)."""
    if not isinstance(result, dict):
        raise GpucoreError(f"{source}: expected a JSON object")
    kind = _field(result, "kind", source)
    if kind not in KINDS:
        raise GpucoreError(f"{source}: unknown result kind {kind!r}: verify handles {', '.join(KINDS)}")
    if not (isinstance(tolerance, numbers.Real) and 0 <= tolerance < 1):
        raise GpucoreError(f"--tolerance must lie in [0, 1), got {tolerance!r}")
    check_graph_matches(result, graph, source)
    # compile / load the kernels before the clock starts (replay runs on the CPU; MRIM follows sets)
    warm = 0.0
    if result.get("model") in MODELS:
        warm = warm_up(graph, result["model"], backend if kind == "im" else "cpu",
                       sets=kind == "amcss" or result.get("rounds", 1) != 1)
    timer = Phases(("verify",))
    with timer.phase("verify"):
        if kind == "amcss":
            body = verify_amcss(result, graph, source)
        elif kind == "sds":
            from gpucore.oracle.sds import verify_sds

            body = verify_sds(result, graph, source)
        else:
            body = verify_im(result, graph, source, runs, seed, backend, tolerance, confidence, threads)
    report = {"kind": "verify", "passed": body.pop("passed"), "result": source,
              "graph": {"path": str(graph.path), "sha256": graph.sha256, "n": graph.n, "m": graph.m}}
    report.update(body)
    report["seconds"] = timer.total
    report["warm_up_seconds"] = warm
    return report
