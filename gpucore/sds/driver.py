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
"""

from __future__ import annotations

import numbers
import time

import numpy as np

from gpucore.backend import available_ram, get_backend, set_cpu_threads
from gpucore.errors import GpucoreError
from gpucore.progress import status
from gpucore.sds.bounds import BOUNDS, check_model, degree_bound
from gpucore.sds.layout import pack
from gpucore.sds.primitives import MAX_BATCH, Engine
from gpucore.sds.ranking import can_stop, merge_top
from gpucore.sds.simple import SimpleGraph, simple_graph
from gpucore.timing import Phases

PHASES = ("graph", "supports", "bounds", "egonets", "scoring", "contexts")
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


def run_sds(graph, model: str, k: int, t: int, *, backend="auto", threads: int | None = None,
            memory_budget: int | None = None, bound: str = "support", first_batch: int | None = None,
            engine: Engine | None = None) -> dict:
    """Top-t search; returns the JSON-ready result of kind ``sds`` (``docs/sds.md``). An ``engine``
    (``make_engine`` on this graph's simple graph) may be passed to reuse its supports."""
    t_start = time.perf_counter()
    model, k, t = validate(int(graph.n), model, k, t, bound)
    if first_batch is not None and _int(first_batch, "batch") < 1:
        raise GpucoreError(f"--batch {first_batch}: must be >= 1")
    if engine is None:
        engine = make_engine(simple_graph(graph), backend, threads, memory_budget)
    sg = engine.sg
    engine.backend.reset_peak()
    phases = Phases(PHASES, sync=engine.synchronize)
    phases.seconds["graph"] = time.perf_counter() - t_start
    n = sg.n
    with phases.phase("supports"):
        status(f"sds: edge supports of {sg.m:,} edges")
        engine.prepare()
    with phases.phase("bounds"):
        ranking = engine.rank(model, k, bound)
    degree, ego_edges = engine.ego_sizes()
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
                   f"sds {model} k={k} on {graph.path}", *sizes[1:])
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
    stop = "bound" if pos < cands.size else "exhausted"

    scored = np.concatenate(scored_v) if scored_v else np.zeros(0, np.int32)
    all_scores = np.concatenate(scored_s) if scored_s else np.zeros(0, np.int32)
    unscored = n - scored.size
    if stop == "exhausted" and (top[1].size < t or int(top[1][-1]) == 0):
        mask = np.ones(n, dtype=bool)
        mask[scored] = False
        zeros = np.flatnonzero(mask)[:t]
        top = merge_top(top, (zeros.astype(np.int64), np.zeros(zeros.size, np.int64)), t)
    top_v, top_s = top
    t_score = int(top_s[-1])
    ties = int(np.count_nonzero(all_scores == t_score)) + (unscored if t_score == 0 else 0)

    with phases.phase("contexts"):
        positive = top_v[top_s > 0]
        contexts = {}
        if positive.size:
            again, found = engine.score(positive, model, k, contexts=True)
            if not np.array_equal(again.astype(np.int64), top_s[top_s > 0]):
                raise RuntimeError("sds: the contexts pass scored the answers differently (internal error)")
            contexts = {int(v): c for v, c in zip(positive, found)}
    orig = np.asarray(sg.original_id)
    result = {
        "kind": "sds",
        "graph": {"path": str(graph.path), "sha256": graph.sha256, "n": int(n), "m": int(graph.m),
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
        "scored": int(scored.size),
        "pruned": int(unscored),
        "candidates": int(cands.size),
        "degree_bound_candidates": int(np.count_nonzero(degree_bound(model, k, degree) >= max(t_score, 1))),
        "batches": batches,
        "stop": stop,
        "seconds": time.perf_counter() - t_start,
        "seconds_by_phase": phases.seconds,
        "peak_device_memory": int(engine.peak_memory()),
        "memory_budget": int(engine.budget),
        "backend": engine.device_info(),
    }
    return result
