"""The backend contract of structural diversity search: what the driver (and a multi-GPU driver)
calls, and what a backend implements.

An ``Engine`` serves one simple graph (``gpucore.sds.simple``) on one device. Its arrays (the CSR,
the edge supports, the batch arena of ``gpucore.sds.layout``) live on that device; everything it
returns is on the host. Calls, in order:

- ``prepare(comm=None)``: the edge supports sup(v, u) = |N(u) & N(v)| (the triangle listing every
  ego-network is built from), once; over the ranks of ``comm`` each computes the pairs of its
  tiles of slots (``_supports(part, parts)``: tile t of 32 slots goes to rank t mod ranks) and an
  all-reduce (NCCL between GPUs) sums them: every rank then holds every support, as the paper
  splits its triangle listing over the GPUs (spec section 2.2);
- ``ego_sizes()`` -> (|V(G_v)|, |E(G_v)|) per vertex: the cost model's inputs (spec section 2.8);
- ``rank(model, k, kind)`` -> ``Ranking``: bounds (``gpucore.sds.bounds``) and the vertices with a
  positive bound in search order (``gpucore.sds.ranking.candidate_order``);
- ``load(batch, model)``: build the ego CSRs of a ``layout.Batch`` in the arena;
- ``score_loaded(model, k)`` -> score per ego-network of the loaded batch;
- ``labels_loaded()`` -> context label per flat row (``layout`` docstring);
- ``score(vertices, model, k, contexts=False, phases=None)``: any list of vertices, packed into
  batches that fit the arena budget: scores (and contexts as lists of original ids); with
  ``phases`` (``gpucore.timing.Phases``) the builds are timed as ``egonets``, the scoring as
  ``scoring``. Scores depend only on (graph, vertex, model, k), so any split of the vertices over
  batches, engines or GPUs gives the same pairs.

A backend implements ``_supports(part, parts)``, ``_counts``, ``_build``, ``_score`` and ``_host``
over its array module ``xp`` (NumPy + Numba kernels, or CuPy + CUDA kernels).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes
from gpucore.sds.bounds import degree_bound, member_threshold, min_context_size, truss_stop_level
from gpucore.sds.layout import Batch, decode_contexts, ego_bytes, make_batch, pack
from gpucore.sds.ranking import candidate_order

#: the most ego-networks one batch of ``score`` holds
MAX_BATCH = 1 << 20


@dataclass
class Ranking:
    """Bounds of one (model, k, kind) and the search order."""

    bound: np.ndarray  # int64 [n]
    candidates: np.ndarray  # int32: vertices with bound > 0, bound descending, id ascending
    candidate_bound: np.ndarray  # int64: their bounds


class Engine(ABC):
    """Ego-network extraction and scoring on one device (module docstring)."""

    #: backend name written to results ("cpu", "cuda")
    name: str = "?"

    def __init__(self, sg, backend, budget: int):
        self.sg = sg
        self.backend = backend
        self.xp = backend.xp
        self.n = int(sg.n)
        self.budget = int(budget)
        self.fixed = self.fixed_bytes(sg)
        if self.fixed >= self.budget:
            raise OutOfMemoryError(
                f"structural diversity on {self.n:,} vertices / {sg.m:,} edges needs {format_bytes(self.fixed)} "
                f"for the graph, its edge supports and bounds, beyond the {format_bytes(self.budget)} available on "
                f"{backend.name}; raise --memory-budget or use a device with more memory")
        self._sizes = None
        self.batch: Batch | None = None

    @staticmethod
    def fixed_bytes(sg) -> int:
        """CSR (8 (n+1) + 4 * 2m), supports (4 * 2m), per-vertex counts and ranking (about 48 n)."""
        return 8 * (sg.n + 1) + 16 * sg.m + 48 * sg.n

    @property
    def arena_budget(self) -> int:
        return self.budget - self.fixed

    # ---- backend kernels ---------------------------------------------------------------------
    @abstractmethod
    def _supports(self, part: int = 0, parts: int = 1) -> None:
        """Compute (on the device) the supports of the slot pairs of tiles ``part`` (mod ``parts``),
        the other slots zero; one part: every slot."""

    @abstractmethod
    def _counts(self, threshold: int):
        """(count, edges) device arrays: #{slots of v with sup >= threshold}, |E(G_v)|."""

    @abstractmethod
    def _build(self, batch: Batch, model: str) -> None:
        """Allocate the arena of ``batch`` and build its ego CSRs (edge ids and endpoints for truss)."""

    @abstractmethod
    def _score(self, model: str, k: int, stop_level: int) -> np.ndarray:
        """Scores (int32, batch order) of the loaded batch; leaves the labels in the arena."""

    @abstractmethod
    def _host(self, name: str) -> np.ndarray:
        """Host copy of the arena array ``name`` of the loaded batch (``layout`` docstring)."""

    def synchronize(self) -> None:
        self.backend.synchronize()

    def device_info(self) -> dict:
        return self.backend.device_info()

    def peak_memory(self) -> int:
        return self.backend.peak_memory()

    # ---- the contract ------------------------------------------------------------------------
    def prepare(self, comm=None) -> None:
        if self._sizes is None:
            if comm is None or comm.size == 1:
                self._supports()
            else:
                self._supports(comm.rank, comm.size)
                self.sup = comm.allreduce(self.sup)
            _count, edges = self._counts(0)
            self._sizes = (np.diff(np.asarray(self.sg.indptr)).astype(np.int64),
                           self.backend.to_host(edges).astype(np.int64))

    def ego_sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """(|V(G_v)|, |E(G_v)|) per vertex (int64, host)."""
        self.prepare()
        return self._sizes

    def rank(self, model: str, k: int, kind: str = "support") -> Ranking:
        self.prepare()
        xp = self.xp
        if kind == "support":
            count, _edges = self._counts(member_threshold(model, k))
            bound = count // min_context_size(model, k)
        elif kind == "degree":
            bound = xp.asarray(degree_bound(model, k, self._sizes[0]))
        else:
            raise GpucoreError(f"--bound {kind!r}: choose support or degree")
        cand = candidate_order(bound, xp)
        host = self.backend.to_host
        return Ranking(host(bound).astype(np.int64), host(cand).astype(np.int32),
                       host(bound[cand]).astype(np.int64))

    def packing(self, model: str, vertices) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(arena bytes, |V(G_v)|, |E(G_v)|) of each of ``vertices``: the inputs of ``layout.pack``."""
        d, e = self.ego_sizes()
        d, e = d[vertices], e[vertices]
        return ego_bytes(model, d, e), d, e

    def load(self, batch: Batch, model: str) -> None:
        self.batch = None
        self._build(batch, model)
        self.batch = batch

    def score_loaded(self, model: str, k: int) -> np.ndarray:
        """Scores of the loaded batch's ego-networks, in batch order (``batch.vertices``)."""
        if self.batch is None:
            raise RuntimeError("score_loaded: no batch loaded")
        return self._score(model, k, truss_stop_level(k) if model == "truss" else 0)

    def labels_loaded(self) -> np.ndarray:
        """Context label per flat row: the flat row of its context's smallest member, or -1."""
        return self._host("parent")

    def trussness(self, vertices) -> np.ndarray:
        """The largest trussness of an edge of each ego-network (0 without edges): the full PKT
        decomposition (peeling to the last level), as tau_ego in the paper's Table 1."""
        vertices = np.ascontiguousarray(vertices, dtype=np.int32)
        sizes = self.packing("truss", vertices)
        out = np.zeros(vertices.size, dtype=np.int64)
        start = 0
        while start < vertices.size:
            end = pack(vertices, start, MAX_BATCH, sizes[0], self.arena_budget, "sds trussness", *sizes[1:])
            batch = self.new_batch(vertices[start:end])
            self.load(batch, "truss")
            self._score("truss", 2**30, 2**30)  # stop level beyond any support: every edge peeled
            level = self._host("sup")
            for b in range(batch.size):
                e0, e1 = int(batch.edge_base[b]), int(batch.edge_base[b + 1])
                out[start + batch.source[b]] = int(level[e0:e1].max()) + 2 if e1 > e0 else 0
            start = end
        return out

    def new_batch(self, vertices) -> Batch:
        d, e = self.ego_sizes()
        return make_batch(vertices, d, e)

    def contexts_loaded(self) -> list[list[list[int]]]:
        """Contexts (original ids) of every ego-network of the loaded batch, in batch order."""
        labels = self.labels_loaded()
        indptr, adj, orig = self.sg.indptr, self.sg.adj, self.sg.original_id
        out = []
        for b, v in enumerate(self.batch.vertices):
            members = np.asarray(orig)[np.asarray(adj[indptr[v]:indptr[v + 1]])]
            out.append(decode_contexts(self.batch, labels, b, members))
        return out

    def score(self, vertices, model: str, k: int, contexts: bool = False, phases=None):
        """Scores of ``vertices`` (int32, given order) and, with ``contexts``, their contexts."""
        vertices = np.ascontiguousarray(vertices, dtype=np.int32)
        sizes = self.packing(model, vertices)
        scores = np.zeros(vertices.size, dtype=np.int32)
        found = []
        start = 0
        timed = (lambda name: phases.phase(name)) if phases is not None else (lambda name: nullcontext())
        while start < vertices.size:
            end = pack(vertices, start, MAX_BATCH, sizes[0], self.arena_budget, f"sds {model} k={k}", *sizes[1:])
            batch = self.new_batch(vertices[start:end])
            with timed("egonets"):
                self.load(batch, model)
            with timed("scoring"):
                scores[start + batch.source] = self.score_loaded(model, k)
            if contexts:
                chunk = [None] * batch.size
                for b, ctx in enumerate(self.contexts_loaded()):
                    chunk[batch.source[b]] = ctx
                found += chunk
            start = end
        return (scores, found) if contexts else scores
