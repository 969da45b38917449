"""Top-t structural diversity search (the paper's Algorithm 1 on one device), backend-independent.

``run_sds(graph, model, k, t)``:

1. ``graph``: the simple undirected CSR (a directed graph is symmetrised) on the device;
2. ``supports``: sup(v, u) of every edge by sorted-list intersection (the triangle listing);
3. ``bounds``: an upper bound per vertex (``gpucore.sds.bounds``), the vertices with a positive
   bound sorted by bound descending, id ascending;
4. ``egonets`` / ``scoring``: batches of consecutive candidates (the first holds at least t, each
   next twice as many, all within the arena budget, none with a bound below the current t-th
   score) are extracted and scored, and the top t kept (``gpucore.sds.ranking``), until the next
   bound is below the t-th score or zero;
5. ``contexts``: the contexts of the t answers (their ego-networks scored again with labels).

The answer is the first t vertices by (score descending, id ascending) over all of V, whatever the
batches; vertices with bound 0 score 0 and fill the answer when fewer than t score more.

Over several ranks (``comm``, default ``gpucore.dist.current()``: ``mpiexec -n N``), step 2 is
split between the ranks and step 4 is ``gpucore.sds.distributed.search`` (cost model, packing,
work stealing); the pairs of every rank are merged (``finish``) and step 5 is split too. Every
rank returns the same result, and it is the one-rank result: the same top t, scores, contexts and
ties (``docs/multigpu.md``).
"""

from __future__ import annotations

import numbers
import time

import numpy as np

from gpucore.backend import available_ram, get_backend, set_cpu_threads
from gpucore.dist import current, same_everywhere
from gpucore.dist.stealing import check_policy
from gpucore.dist.timed import COMMUNICATION, NestedPhases, TimedComm
from gpucore.errors import GpucoreError
from gpucore.progress import status
from gpucore.sds import cost as cm
from gpucore.sds.bounds import BOUNDS, check_model, degree_bound
from gpucore.sds.distributed import Found, search
from gpucore.sds.layout import pack
from gpucore.sds.primitives import MAX_BATCH, Engine
from gpucore.sds.ranking import can_stop, merge_top, top_t
from gpucore.sds.simple import SimpleGraph, simple_graph
from gpucore.timing import Phases

PHASES = ("graph", "supports", "bounds", "egonets", "scoring", "contexts")
#: over several ranks: the cost model, the packing (rank 0), the messages and collectives, the wait
#: for the other ranks at the end of the search
RANK_PHASES = PHASES[:3] + ("cost_model", "packing") + PHASES[3:] + (COMMUNICATION, "idle")
TIE_RULE = "score descending, then vertex id ascending"
#: default memory budget: share of the free device memory (cuda) / available RAM (cpu)
CUDA_BUDGET_SHARE = 0.8
CPU_BUDGET_SHARE = 0.5


def _int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise GpucoreError(f"--{name} {value!r}: must be an integer")
    return int(value)


def validate(n: int, model: str, k, t, bound: str = "support") -> tuple[str, int, int]:
    """(model, k, t) checked: one ``GpucoreError`` line per problem."""
    model = check_model(model)
    k, t = _int(k, "k"), _int(t, "t")
    if k < 1:
        raise GpucoreError(f"--k {k}: must be >= 1")
    if t < 1:
        raise GpucoreError(f"--t {t}: must be >= 1")
    if t > n:
        raise GpucoreError(f"--t {t}: larger than the graph's {n:,} vertices")
    if bound not in BOUNDS:
        raise GpucoreError(f"--bound {bound!r}: choose support or degree")
    return model, k, t


def make_engine(sg: SimpleGraph, backend="auto", threads: int | None = None,
                memory_budget: int | None = None) -> Engine:
    """The engine of a backend for a simple graph, under a memory budget (bytes)."""
    be = get_backend(backend) if isinstance(backend, str) else backend
    if memory_budget is None:
        memory_budget = int(be.free_memory() * CUDA_BUDGET_SHARE) if be.is_cuda else int(
            available_ram() * CPU_BUDGET_SHARE)
    if memory_budget <= 0:
        raise GpucoreError(f"--memory-budget {memory_budget}: must be positive")
    if be.is_cuda:
        from gpucore.sds.cuda import CudaEngine

        return CudaEngine(sg, be, memory_budget)
    from gpucore.sds.cpu import CpuEngine

    set_cpu_threads(threads)
    return CpuEngine(sg, be, memory_budget)


def preferred_batch(engine: Engine) -> int:
    """Ego-networks of the first batch: enough for every SM (8 blocks each) or core (16 tasks each);
    the largest ego-networks come first, so a first batch far beyond the stopping point is costly."""
    info = engine.device_info()
    if engine.backend.is_cuda:
        return 8 * int(info.get("sm_count", 80))
    return 16 * int(info.get("numba_threads") or 1)


def _check_options(stealing: str, cost_model: str, cost_sample, chunk_seconds) -> tuple[str, str, float, float]:
    check_policy(stealing)
    if cost_model not in cm.KINDS:
        raise GpucoreError(f"--cost-model {cost_model!r}: choose fit or count")
    chunk_seconds = float(chunk_seconds)
    if not chunk_seconds > 0:
        raise GpucoreError(f"--chunk-seconds {chunk_seconds}: must be > 0")
    return stealing, cost_model, cm.check_rate(cost_sample), chunk_seconds


def run_sds(graph, model: str, k: int, t: int, *, backend="auto", threads: int | None = None,
            memory_budget: int | None = None, bound: str = "support", first_batch: int | None = None,
            engine: Engine | None = None, comm=None, stealing: str = "dynamic", cost_model: str = "fit",
            cost_sample: float = 0.01, chunk_seconds: float = 0.1) -> dict:
    """Top-t search; returns the JSON-ready result of kind ``sds`` (``docs/sds.md``). An ``engine``
    (``make_engine`` on this graph's simple graph) may be passed to reuse its supports.

    ``comm``: the ranks that share the search (``gpucore.dist``; default ``current()``, one process
    unless started by ``mpiexec``/``srun``); every rank calls ``run_sds`` with the same arguments and
    gets the same result. Over several ranks: ``stealing`` (dynamic, exhausted, none), ``cost_model``
    (fit: c(v) fitted on timed samples; count: every vertex alike), ``cost_sample`` (the share of
    candidates timed), ``chunk_seconds`` (the largest chunk a rank claims, in estimated seconds);
    ``first_batch`` applies to one rank only."""
    t_start = time.perf_counter()
    comm = current() if comm is None else comm
    if comm.size > 1:  # first: arguments that differ would fail on some ranks only
        same_everywhere(comm, "structural diversity", {
            "graph": graph.sha256, "model": model, "k": k, "t": t, "bound": bound, "stealing": stealing,
            "cost_model": cost_model, "cost_sample": cost_sample, "chunk_seconds": chunk_seconds,
            "backend": getattr(backend, "name", backend), "memory_budget": memory_budget})
    model, k, t = validate(int(graph.n), model, k, t, bound)
    stealing, cost_model, cost_sample, chunk_seconds = _check_options(stealing, cost_model, cost_sample,
                                                                      chunk_seconds)
    if first_batch is not None and _int(first_batch, "batch") < 1:
        raise GpucoreError(f"--batch {first_batch}: must be >= 1")
    if engine is None:
        engine = make_engine(simple_graph(graph), backend, threads, memory_budget)
    ranks = None
    if comm.size > 1:
        same_everywhere(comm, "structural diversity", {"backend": engine.name})  # NCCL and MPI do not mix
        phases = NestedPhases(RANK_PHASES, sync=engine.synchronize)
        ranks = TimedComm(comm, phases)
    else:
        phases = Phases(PHASES, sync=engine.synchronize)
    sg = engine.sg
    engine.backend.reset_peak()
    phases.seconds["graph"] = time.perf_counter() - t_start
    with phases.phase("supports"):
        status(f"sds: edge supports of {sg.m:,} edges")
        engine.prepare(ranks)
    with phases.phase("bounds"):
        ranking = engine.rank(model, k, bound)
    if ranks is None:
        found = _search_batches(engine, ranking, model, k, t, phases, first_batch, str(graph.path))
    else:
        found = search(engine, ranking, model, k, t, ranks, phases, stealing, cost_model, cost_sample,
                       chunk_seconds)
    top, scored, ties, stop = finish(found.vertices, found.scores, t, sg.n, ranking.candidates.size, ranks)
    top_v, top_s = top
    t_score = int(top_s[-1])
    with phases.phase("contexts"):
        contexts = answer_contexts(engine, top_v, top_s, model, k, ranks)

    degree, ego_edges = engine.ego_sizes()
    mine = {**found.record, "seconds_by_phase": dict(phases.seconds), "peak_device_memory": int(engine.peak_memory())}
    if ranks is not None:  # messages and bytes: this rank's requests and collectives, and its service's
        mine["communication"] = {"messages": ranks.messages + mine.pop("service_messages"),
                                 "bytes": ranks.bytes + mine.pop("service_bytes"), "collectives": ranks.calls}
    everyone = [mine] if ranks is None else ranks.allgather(mine)
    orig = np.asarray(sg.original_id)
    result = {
        "kind": "sds",
        "graph": {"path": str(graph.path), "sha256": graph.sha256, "n": int(sg.n), "m": int(graph.m),
                  "directed": bool(graph.directed), "symmetrised": bool(sg.symmetrised),
                  "undirected_edges": int(sg.m), "triangles": int(ego_edges.sum() // 3),
                  "max_degree": int(degree.max(initial=0)), "max_ego_edges": int(ego_edges.max(initial=0))},
        "notes": ([f"the directed graph was symmetrised: {sg.m:,} undirected edges from {int(graph.m):,} arcs "
                   f"(u and v adjacent when an arc joins them in either direction)"] if sg.symmetrised else []),
        "model": model,
        "k": k,
        "t": t,
        "bound": bound,
        "tie_rule": TIE_RULE,
        "top": [{"vertex": int(orig[v]), "score": int(s), "contexts": contexts.get(int(v), [])}
                for v, s in zip(top_v, top_s)],
        "t_score": t_score,
        "ties_at_t": ties,
        "ties_in_top": int(np.count_nonzero(top_s == t_score)),
        "scored": scored,
        "pruned": int(sg.n - scored),
        "candidates": int(ranking.candidates.size),
        "must_score": int(np.count_nonzero(ranking.candidate_bound >= max(t_score, 1))),
        "degree_bound_candidates": int(np.count_nonzero(degree_bound(model, k, degree) >= max(t_score, 1))),
        "batches": int(sum(r["chunks"] for r in everyone)),
        "stop": stop,
        "seconds": time.perf_counter() - t_start,
        "seconds_by_phase": phases.seconds,
        "peak_device_memory": int(engine.peak_memory()),
        "memory_budget": int(engine.budget),
        "backend": engine.device_info(),
        "ranks": int(comm.size),
        "per_rank": {key: [r[key] for r in everyone] for key in mine},
        "stealing": stealing if ranks is not None else None,
    }
    if ranks is not None:
        result.update(found.shared)
        table = result.pop("table")
        for key in ("steals_made", "steals_suffered", "cost_stolen", "cost_lost", "initial_load"):
            result["per_rank"][key] = [row[key] for row in table]
        if first_batch is not None:
            result["notes"].append("--batch sizes the first batch of a one-rank search; over ranks the chunks are "
                                   "sized by estimated cost (chunk_seconds)")
    return result


def _search_batches(engine: Engine, ranking, model: str, k: int, t: int, phases, first_batch, where: str):
    """One rank: consecutive candidates in batches (the first holds at least t, each next twice as
    many) until the next bound is below the t-th score."""
    cands, cand_bound = ranking.candidates, ranking.candidate_bound
    sizes = engine.packing(model, cands)
    top = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    scored_v, scored_s = [], []
    pos, batches = 0, 0
    count = max(t, int(first_batch or preferred_batch(engine)))
    while pos < cands.size and not can_stop(top[1], t, int(cand_bound[pos])):
        limit = cands.size
        if top[1].size >= t:  # only vertices whose bound reaches the t-th score can still enter
            limit = int(np.searchsorted(-cand_bound, -int(top[1][t - 1]), side="right"))
        end = pack(cands, pos, min(count, MAX_BATCH, limit - pos), sizes[0], engine.arena_budget,
                   f"sds {model} k={k} on {where}", *sizes[1:])
        batch = engine.new_batch(cands[pos:end])
        status(f"sds: batch {batches + 1}: {batch.size:,} ego-networks, {batch.edges:,} edges "
               f"(bound {cand_bound[pos]})")
        with phases.phase("egonets"):
            engine.load(batch, model)
        with phases.phase("scoring"):
            scores = engine.score_loaded(model, k)
        top = merge_top(top, (batch.vertices.astype(np.int64), scores.astype(np.int64)), t)
        scored_v.append(batch.vertices)
        scored_s.append(scores)
        pos, batches, count = end, batches + 1, count * 2
    vertices = np.concatenate(scored_v) if scored_v else np.zeros(0, np.int32)
    return Found(vertices, np.concatenate(scored_s) if scored_s else np.zeros(0, np.int32),
                 {"scored": int(vertices.size), "chunks": batches,
                  "busy_seconds": phases.seconds["egonets"] + phases.seconds["scoring"], "idle_seconds": 0.0})


def finish(vertices: np.ndarray, scores: np.ndarray, t: int, n: int, candidates: int, comm=None):
    """(top t pairs, vertices scored, ties at the t-th score, stop) from the scored pairs of this
    rank, merged over the ranks of ``comm`` (None: one rank). Vertices never scored score 0 and fill
    the answer (lowest ids first) when fewer than t score more; every candidate is then scored."""
    top = top_t(vertices, scores, t)
    scored = int(vertices.size)
    if comm is not None:
        tops = comm.allgather(top)
        top = top_t(np.concatenate([v for v, _s in tops]), np.concatenate([s for _v, s in tops]), t)
        scored = int(comm.allreduce(np.array([scored], dtype=np.int64))[0])
    stop = "bound" if scored < candidates else "exhausted"
    if stop == "exhausted" and (top[1].size < t or int(top[1][-1]) == 0):
        everyone = vertices if comm is None else comm.allgather_array(vertices)
        mask = np.ones(n, dtype=bool)
        mask[everyone] = False
        zeros = np.flatnonzero(mask)[:t]
        top = merge_top(top, (zeros.astype(np.int64), np.zeros(zeros.size, np.int64)), t)
    t_score = int(top[1][-1])
    ties = int(np.count_nonzero(scores == t_score))
    if comm is not None:
        ties = int(comm.allreduce(np.array([ties], dtype=np.int64))[0])
    return top, scored, ties + (n - scored if t_score == 0 else 0), stop


def answer_contexts(engine: Engine, top_v: np.ndarray, top_s: np.ndarray, model: str, k: int, comm=None) -> dict:
    """{vertex: contexts} of the answers with a positive score, their ego-networks scored again;
    over ranks each scores a share (``cost.spread`` of the answers one by one: the same on every
    rank) and the shares are gathered."""
    positive = top_v[top_s > 0]
    want = top_s[top_s > 0]
    if comm is not None and positive.size:
        owner = cm.spread([positive[i:i + 1] for i in range(positive.size)], model, *engine.ego_sizes(), comm.size)
        positive, want = positive[owner == comm.rank], want[owner == comm.rank]
    found = {}
    if positive.size:
        again, contexts = engine.score(positive, model, k, contexts=True)
        if not np.array_equal(again.astype(np.int64), want):
            raise RuntimeError("sds: the contexts pass scored the answers differently (internal error)")
        found = {int(v): c for v, c in zip(positive, contexts)}
    if comm is not None:
        found = {v: c for share in comm.allgather(found) for v, c in share.items()}
    return found
