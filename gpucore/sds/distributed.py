"""Structural diversity search over several ranks, one device each (J. Huang, X. Huang, J. Xu,
B. Choi, Y. Peng, "GPU-accelerated Structural Diversity Search in Graphs", Section 6: cost model,
Algorithm 8 packing, Algorithm 9 work stealing; ``docs/multigpu.md``).

``search(engine, ranking, model, k, t, comm, phases, ...)`` -> ``Found``: this rank's scored
(vertex, score) pairs and its record. Every rank holds the whole graph, every edge support
(``Engine.prepare(comm)``) and the same ranking (bounds, candidates in search order). Then:

1. ``cost_model``: the keyed sample of ``gpucore.sds.cost``; each rank times the sample batches
   assigned to it (build + score, device waited for) and keeps their scores (those vertices are
   scored: they are not packed again); the timings are gathered and rank 0 fits c(v), broadcast so
   every rank reports the same model.
2. ``packing`` (rank 0): the other candidates, in search order (bound descending, id ascending),
   list-scheduled by c(v) onto the ranks (``gpucore.dist.pack_greedy``, Algorithm 8): list r, still
   in bound order, is rank r's work. In bound order, every prefix of the candidates is itself
   list-scheduled, so the lists are balanced up to any stopping point; LPT (items by cost,
   largest first) would balance the whole candidate list better but break the bound order that
   the early stop walks down (most candidates are never scored).
3. search: rank 0 keeps the table (``gpucore.dist.WorkTable`` under the policy: dynamic, exhausted
   or none) and tau, the t-th best score reported so far (0 while fewer than t scores are known),
   in a ``gpucore.dist.Service``. A list's items whose bound is below tau are dropped (no vertex
   whose bound is below the t-th score can enter the answer, and tau only grows); each rank claims
   chunks (``chunk_seconds`` of estimated cost at most), scores them, and reports with its next
   claim the chunk's scores that reach tau (at most t of them), so tau lags by at most one chunk
   per rank and no rank scores far past the stopping point.
4. the rank's pairs go back to the driver, which merges every rank's (``gpucore.sds.driver``).

Why the answer is exact and independent of ranks and policy: a vertex is skipped only when its
bound is below some tau, which never exceeds the final t-th score; so every vertex not scored has a
score below the final t-th score, the top t of the scored pairs is the top t over all of V, and
``ranking.merge_top`` of the ranks' pairs is a pure function of the graph, model, k and t. Which
vertices beyond the stopping point get scored (``scored`` vs ``must_score``) depends on timing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gpucore.dist import Service, WorkTable, pack_greedy
from gpucore.sds import cost as cm


@dataclass
class Found:
    """This rank's scored pairs and its record; ``shared``: rank 0's facts, the same on every rank."""

    vertices: np.ndarray
    scores: np.ndarray
    record: dict
    shared: dict = field(default_factory=dict)


class SearchTable:
    """Rank 0's status table: the rank lists (vertices, bounds, costs), the work-stealing table and
    the t best scores reported so far. ``__call__(rank, report)`` is the service's handler."""

    def __init__(self, lists: list[np.ndarray], bounds: list[np.ndarray], costs: list[np.ndarray], t: int,
                 policy: str, chunk_seconds: float, known: np.ndarray):
        self.lists = lists
        self.neg_bounds = [-np.asarray(b, dtype=np.int64) for b in bounds]  # ascending: searchsorted
        self.t = int(t)
        self.best = np.zeros(0, dtype=np.int64)
        self._merge(known)
        self.table = WorkTable(costs, policy, chunk_seconds, live=self._live)

    def tau(self) -> int:
        """The t-th best score reported so far; 0 while fewer than t are known."""
        return int(self.best[self.t - 1]) if self.best.size >= self.t else 0

    def _merge(self, scores) -> None:
        both = np.concatenate([self.best, np.asarray(scores, dtype=np.int64)])
        self.best = -np.sort(-both)[: self.t]

    def _live(self, lst: int, begin: int, end: int) -> int:
        """End of the items of [begin, end) whose bound reaches tau (the bounds do not increase)."""
        tau = self.tau()
        if tau <= 1:  # every candidate has a bound >= 1
            return end
        return begin + int(np.searchsorted(self.neg_bounds[lst][begin:end], -tau, side="right"))

    def __call__(self, rank: int, report):
        if report is not None:
            self._merge(report)
        chunk = self.table.claim(rank)
        if chunk is None:
            return None
        lst, begin, end = chunk
        return {"vertices": self.lists[lst][begin:end], "cost": self.table.cost(lst, begin, end), "tau": self.tau()}


@dataclass
class Sample:
    """The cost-model step on one rank: the fit (the same on every rank), every rank's sampled
    vertices, the best scores among them (at most t per rank), and the pairs this rank scored."""

    fitted: cm.CostModel
    sampled: np.ndarray
    known: np.ndarray
    vertices: np.ndarray
    scores: np.ndarray
    seconds: float


def _cost_model(engine, ranking, model: str, k: int, t: int, comm, kind: str, rate: float) -> Sample:
    """Time this rank's sample batches, gather the timings, fit on rank 0, broadcast."""
    degree, ego_edges = engine.ego_sizes()
    batches = cm.sample_batches(ranking.candidates, degree, rate)
    owner = cm.spread(batches, model, degree, ego_edges, comm.size)
    mine = [b for b, r in zip(batches, owner) if r == comm.rank]
    if mine:  # untimed: the kernels' first launch, on one small ego-network
        engine.score(mine[-1][:1], model, k)
    rows, scores = [], []
    for batch in mine:
        engine.synchronize()
        start = time.perf_counter()
        scores.append(engine.score(batch, model, k))
        engine.synchronize()
        rows.append(cm.timing_row(kind, model, batch, degree, ego_edges, time.perf_counter() - start))
    vertices = np.concatenate(mine) if mine else np.zeros(0, np.int32)
    scores = np.concatenate(scores) if scores else np.zeros(0, np.int32)
    gathered = comm.allgather((rows, np.sort(scores)[-t:].astype(np.int64)))
    fitted = cm.fit(kind, model, [row for rank_rows, _ in gathered for row in rank_rows], rate) \
        if comm.is_root else None
    return Sample(comm.bcast(fitted), np.concatenate(batches) if batches else np.zeros(0, np.int32),
                  np.concatenate([best for _, best in gathered]), vertices, scores, sum(row[0] for row in rows))


def _pack(ranking, sampled: np.ndarray, fitted, engine, size: int):
    """Rank 0: the candidates not sampled, in search order, list-scheduled by c(v) onto the ranks."""
    keep = ~np.isin(ranking.candidates, sampled)
    cands, bounds = ranking.candidates[keep], ranking.candidate_bound[keep]
    degree, ego_edges = engine.ego_sizes()
    costs = fitted.costs(degree[cands], ego_edges[cands])
    owner = pack_greedy(costs, size)[0]
    pick = [owner == r for r in range(size)]
    return [cands[p] for p in pick], [bounds[p] for p in pick], [costs[p] for p in pick]


def search(engine, ranking, model: str, k: int, t: int, comm, phases, policy: str, cost_kind: str, rate: float,
           chunk_seconds: float) -> Found:
    """This rank's part of the search (module docstring). ``comm``: a ``TimedComm`` over the ranks."""
    with phases.phase("cost_model"):
        sample = _cost_model(engine, ranking, model, k, t, comm, cost_kind, rate)
    table = None
    if comm.is_root:
        with phases.phase("packing"):
            lists, bounds, costs = _pack(ranking, sample.sampled, sample.fitted, engine, comm.size)
            table = SearchTable(lists, bounds, costs, t, policy, chunk_seconds, sample.known)
    vertices, scores = [sample.vertices], [sample.scores]
    chunks, estimated, busy = 0, 0.0, 0.0
    with Service(comm.comm, table, worker_comm=comm) as service:
        report = None
        while (reply := service.ask(report)) is not None:
            before = phases.seconds.get("egonets", 0.0) + phases.seconds.get("scoring", 0.0)
            got = engine.score(reply["vertices"], model, k, phases=phases)
            busy += phases.seconds["egonets"] + phases.seconds["scoring"] - before
            vertices.append(reply["vertices"])
            scores.append(got)
            chunks += 1
            estimated += reply["cost"]
            report = np.sort(got[got >= reply["tau"]])[-t:].astype(np.int64)
        with phases.phase("idle"):
            service.finish()
    shared = None
    if comm.is_root:
        shared = {"cost_model": sample.fitted.to_dict(), "table": [r.to_dict() for r in table.table.records],
                  "service": {"requests": sum(r.chunks for r in table.table.records) + comm.size,
                              "handler_seconds": service.handler_seconds}}
    shared = comm.bcast(shared)
    vertices = np.concatenate(vertices)
    record = {"scored": int(vertices.size), "sample_vertices": int(sample.vertices.size),
              "sample_seconds": sample.seconds,
              "chunks": chunks, "estimated_cost": estimated, "busy_seconds": busy,
              "idle_seconds": phases.seconds.get("idle", 0.0),
              "service_messages": service.messages, "service_bytes": service.bytes}
    return Found(vertices, np.concatenate(scores), record, shared)
