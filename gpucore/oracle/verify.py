"""Verification of solver result files (the library side of ``gpucore verify`` and ``gpucore im --verify``).

- ``amcss``: every realization replayed round by round on its world (``replay``); the seed costs
  recomputed from the graph and compared with every logged cost (per round, per realization, the
  summary), the seed counts, and the completeness of the realizations (``check_amcss_books``);
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
from gpucore.random import Stream, mix3
from gpucore.timing import Phases

KINDS = ("amcss", "im", "sds")
#: relative tolerance of logged costs against the recomputed ones: costs are float32 on disk, and a
#: writer that sums them in float32 (or in another order) differs by a few units of 2^-24 per term
COST_RTOL = 1e-6


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
        round_costs = [float(np.asarray(graph.cost)[r["seed_ids"]].astype(np.float64).sum()) for r in logged_rounds]
        seeds_cost = float(sum(round_costs))
        problems += check_realization_books(real, rounds, logged_rounds, round_costs, graph, result)
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
    failures += check_amcss_books(result, realizations, [r["seed_cost_raw"] for r in reports])
    return {"checked": "amcss", "model": model, "eta": eta, "realizations": reports, "failures": failures,
            "passed": not failures}


def _differs(logged, want: float) -> bool:
    """A logged number that is missing, not a finite number, or not ``want`` within COST_RTOL."""
    if isinstance(logged, bool) or not isinstance(logged, numbers.Real) or not math.isfinite(logged):
        return True
    return not math.isclose(float(logged), want, rel_tol=COST_RTOL, abs_tol=1e-12)


def check_realization_books(real: dict, rounds: list, logged_rounds: list, round_costs: list, graph,
                            result: dict) -> list[str]:
    """The bookkeeping of one AMCSS realization against the seeds it logs: each round's ``cost``
    (the sum of its seeds' costs on the graph) and seed count (1..batch), the realization's
    ``total_cost``, ``total_cost_normalized`` (/ the graph's cost scale), ``seeds_count`` and, for
    ``realization`` r of a run with ``seed``, ``world_seed`` = mix(seed, WORLD, r). One line per
    problem, naming the field."""
    problems = []
    batch = result.get("batch")
    for j, (rnd, want) in enumerate(zip(rounds, round_costs)):
        if _differs(rnd.get("cost"), want):
            problems.append(f"round {j} cost: logged {rnd.get('cost')!r}, its seeds cost {want:.10g}")
        count = len(logged_rounds[j]["seed_ids"])
        if isinstance(batch, int) and not isinstance(batch, bool) and not 1 <= count <= batch:
            problems.append(f"round {j} seed_ids: {count} seeds in a batch of {batch}")
    total = float(sum(round_costs))
    if _differs(real.get("total_cost"), total):
        problems.append(f"total_cost: logged {real.get('total_cost')!r}, its seeds cost {total:.10g}")
    if "total_cost_normalized" in real:
        scale = float(graph.cost_scale) if graph.cost_scale else 1.0
        if _differs(real["total_cost_normalized"], total / scale):
            problems.append(f"total_cost_normalized: logged {real['total_cost_normalized']!r}, "
                            f"its seeds cost {total:.10g} / cost scale {scale:.10g} = {total / scale:.10g}")
    seeds = sum(len(r["seed_ids"]) for r in logged_rounds)
    if "seeds_count" in real and real["seeds_count"] != seeds:
        problems.append(f"seeds_count: logged {real['seeds_count']!r}, the rounds list {seeds} seeds")
    if "realization" in real and "seed" in result:
        r = _int(real["realization"], "realization", 0)
        want_world = int(mix3(np.uint64(check_u64(result["seed"], "seed")), np.uint64(int(Stream.WORLD)),
                              np.uint64(r)))
        if real.get("world_seed") != want_world:
            problems.append(f"world_seed {real.get('world_seed')!r} is not mix(seed, WORLD, {r}) = {want_world} "
                            f"for realization {r}")
    return problems


def check_amcss_books(result: dict, realizations: list, seed_costs: list[float]) -> list[str]:
    """Completeness and the summary of an AMCSS result: every realization of ``realization_ids``
    (the run's parameters) present exactly once and no other, no realization twice (same
    ``realization`` index or same ``world_seed``), and the summary's count and means recomputed
    from the seeds (``mean_total_cost``, ``mean_total_cost_normalized`` via the realizations' own
    normalisation, ``mean_seeds``, ``mean_rounds``). One line per problem, naming the field."""
    failures = []
    worlds, indices = {}, {}
    for i, real in enumerate(realizations):
        w = real.get("world_seed")
        if w in worlds:
            failures.append(f"realization {i} duplicates realization {worlds[w]} (world_seed {w})")
        worlds.setdefault(w, i)
        if "realization" in real:
            r = real["realization"]
            if r in indices:
                failures.append(f"realization {i} duplicates realization {indices[r]} (realization index {r!r})")
            indices.setdefault(r, i)
    if "realization_ids" in result:
        wanted = result["realization_ids"]
        if not isinstance(wanted, list):
            raise GpucoreError("realization_ids must be a list of realization indices")
        missing = [r for r in wanted if r not in indices]
        extra = [r for r in indices if r not in wanted]
        if missing:
            failures.append(f"realization_ids: realization {missing[0]!r} is missing from 'realizations'")
        if extra:
            failures.append(f"realizations: realization {extra[0]!r} is not in realization_ids {wanted}")
    summary = result.get("summary")
    if isinstance(summary, dict) and realizations:
        n = len(realizations)
        if summary.get("realizations", n) != n:
            failures.append(f"summary realizations: logged {summary['realizations']!r}, the result holds {n}")
        checks = {"mean_total_cost": float(np.mean(seed_costs)),
                  "mean_seeds": float(np.mean([sum(len(rd.get("seed_ids", rd.get("seeds", [])))
                                                   for rd in real["rounds"]) for real in realizations])),
                  "mean_rounds": float(np.mean([len(real["rounds"]) for real in realizations]))}
        norms = [real.get("total_cost_normalized") for real in realizations]
        if all(isinstance(x, numbers.Real) for x in norms):
            checks["mean_total_cost_normalized"] = float(np.mean(norms))
        for key, want in checks.items():
            if key in summary and _differs(summary[key], want):
                failures.append(f"summary {key}: logged {summary[key]!r}, recomputed {want:.10g}")
    return failures


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
