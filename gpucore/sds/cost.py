"""The cost model of structural diversity search over several GPUs: how long one device takes to
build and score an ego-network (spec section 2.8; J. Huang, X. Huang, J. Xu, B. Choi, Y. Peng,
"GPU-accelerated Structural Diversity Search in Graphs", Section 6.1).

c(v) = a x1(v) + b x2(v), in seconds, with the sizes of G_v (known from the edge supports before any
ego-network is built: ``Engine.ego_sizes``):

=========  ====================  ==========================================================
kind       x1, x2                why
=========  ====================  ==========================================================
comp       |V(G_v)|, |E(G_v)|    rows built per vertex, union-find per edge
core       |V(G_v)|, |E(G_v)|    H-index rounds over the rows
truss      |V(G_v)|, |E(G_v)|^1.5  truss decomposition is O(|E|^1.5) (the paper's model)
count      1                     every vertex alike: packing by count, the baseline
=========  ====================  ==========================================================

(The paper's comp model is a |E| alone; the rows of G_v cost per vertex too, so comp keeps the |V|
term, and the fit may set either coefficient to 0.)

**Sample** (``sample_batches``): the candidates (vertices with a positive bound) grouped by degree
stratum floor(log2 d(v)); in a stratum of N vertices, the ceil(rate N) of smallest key
``mix(0, Stream.SDS_SAMPLE, v)`` (a pure function of the vertex, so every rank draws the same
sample), at least one per stratum, so the rare hubs are timed too. The paper samples 1 % (its
Exp-1 finds 0.5 % and 1 % best). A stratum's sample is cut into up to ``BATCHES_PER_STRATUM``
batches; ``spread`` deals the batches to the ranks (``pack_greedy`` on integer sizes, ``work``:
|V| + |E|, or |V| + |E| floor(sqrt |E|) for truss: exact, so every rank computes the same
assignment and each batch is scored by exactly one rank).

**Fit** (``fit``): each batch is built and scored on its rank, device waited for, and timed: one
row (seconds, sum of x1, sum of x2). Least squares of the seconds on the sums plus an intercept (a
batch's launches, copies and host work, which a chunk of the search pays once, not per vertex),
with non-negative coefficients (the best of the column subsets whose solution is non-negative).
Then c(v) = a x1(v) + b x2(v) + ``FLOOR`` (no vertex costs nothing). When the timings resolve no
per-vertex cost (a = b = 0), every vertex costs the same and the record says so.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from gpucore.dist import pack_greedy
from gpucore.errors import GpucoreError
from gpucore.random import Stream, mix3

KINDS = ("fit", "count")
#: batches a stratum's sample is cut into (more rows for the fit than parameters)
BATCHES_PER_STRATUM = 2
#: the least estimated cost of a vertex (seconds)
FLOOR = 1e-9


def features(kind: str, degree: np.ndarray, ego_edges: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """(names, float64 [items, 1 or 2]) of the model ``kind`` (a model name, or "count")."""
    d = np.asarray(degree, dtype=np.float64)
    e = np.asarray(ego_edges, dtype=np.float64)
    if kind == "count":
        return ("1",), np.ones((d.size, 1))
    if kind == "truss":
        return ("|V|", "|E|^1.5"), np.stack([d, e ** 1.5], axis=1)
    return ("|V|", "|E|"), np.stack([d, e], axis=1)


_SAMPLE = np.uint64(int(Stream.SDS_SAMPLE))


@njit(cache=True)
def _keys(vertices):
    """mix(0, SDS_SAMPLE, v) of every vertex."""
    out = np.empty(vertices.shape[0], dtype=np.uint64)
    for i in range(vertices.shape[0]):
        out[i] = mix3(np.uint64(0), _SAMPLE, np.uint64(vertices[i]))
    return out


def check_rate(rate) -> float:
    rate = float(rate)
    if not 0 < rate <= 1:
        raise GpucoreError(f"--cost-sample {rate}: the share of candidates timed must be in (0, 1]")
    return rate


def sample_batches(candidates: np.ndarray, degree: np.ndarray, rate: float) -> list[np.ndarray]:
    """The keyed sample of the candidates by degree stratum, as batches (int32 vertex arrays),
    highest stratum first."""
    rate = check_rate(rate)
    cands = np.asarray(candidates, dtype=np.int32)
    if cands.size == 0:
        return []
    d = np.asarray(degree)[cands]
    if d.min() < 1:
        raise GpucoreError("sds cost model: a candidate has degree 0")
    stratum = np.frexp(d.astype(np.float64))[1] - 1  # floor(log2 d), exact
    order = np.lexsort((_keys(cands), -stratum))
    cands, stratum = cands[order], stratum[order]
    starts = np.flatnonzero(np.r_[True, stratum[1:] != stratum[:-1]])
    batches = []
    for lo, hi in zip(starts, np.r_[starts[1:], cands.size]):
        take = cands[lo:lo + max(1, math.ceil(rate * (hi - lo)))]
        parts = min(BATCHES_PER_STRATUM, take.size)
        batches += [np.ascontiguousarray(b) for b in np.array_split(take, parts)]
    return batches


def work(model: str, degree, ego_edges) -> np.ndarray:
    """An integer stand-in for c(v) that every rank computes exactly alike: |V| + |E|, or
    |V| + |E| floor(sqrt |E|) for truss (int64)."""
    d = np.asarray(degree).astype(np.int64)
    e = np.asarray(ego_edges).astype(np.int64)
    return d + (e * np.floor(np.sqrt(e)).astype(np.int64) if model == "truss" else e)


def spread(items: list[np.ndarray], model: str, degree, ego_edges, size: int) -> np.ndarray:
    """The rank of each group of vertices: list scheduling on their summed ``work`` (exact in
    float64 below 2^53, so every rank computes the same assignment without communicating)."""
    sizes = [float(int(work(model, np.asarray(degree)[b], np.asarray(ego_edges)[b]).sum())) for b in items]
    return pack_greedy(np.asarray(sizes, dtype=np.float64), size)[0]


@dataclass
class CostModel:
    """A fitted c(v) (module docstring) and how it was fitted."""

    model: str
    kind: str
    features: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float = 0.0
    batches: int = 0
    vertices: int = 0
    seconds: float = 0.0
    r2: float | None = None
    rate: float = 0.0
    notes: list[str] = field(default_factory=list)

    def costs(self, degree: np.ndarray, ego_edges: np.ndarray) -> np.ndarray:
        """c(v) of vertices with these sizes (float64 seconds)."""
        _names, x = features(self.model if self.kind == "fit" else "count", degree, ego_edges)
        return x @ np.asarray(self.coefficients, dtype=np.float64) + FLOOR

    def to_dict(self) -> dict:
        return {"kind": self.kind, "features": list(self.features),
                "coefficients": dict(zip(self.features, self.coefficients)), "intercept_per_batch": self.intercept,
                "sample_batches": self.batches, "sample_vertices": self.vertices, "sample_seconds": self.seconds,
                "r2": self.r2, "rate": self.rate, "notes": list(self.notes)}


def timing_row(kind: str, model: str, vertices: np.ndarray, degree, ego_edges, seconds: float) -> list[float]:
    """One row of the fit: [seconds, vertices, sum of each feature over the batch]."""
    _names, x = features(model if kind == "fit" else "count", np.asarray(degree)[vertices],
                         np.asarray(ego_edges)[vertices])
    return [float(seconds), float(len(vertices))] + [float(s) for s in x.sum(axis=0)]


def fit(kind: str, model: str, rows: list[list[float]], rate: float) -> CostModel:
    """Non-negative least squares of the batch seconds on an intercept and the feature sums."""
    names = features(model if kind == "fit" else "count", np.zeros(0), np.zeros(0))[0]
    base = CostModel(model, kind, names, (0.0,) * len(names), rate=rate)
    if not rows:
        base.notes.append("no candidates: nothing to time")
        return base
    data = np.asarray(rows, dtype=np.float64)
    y, x = data[:, 0], np.column_stack([np.ones(len(rows)), data[:, 2:]])
    best = None
    for r in range(1, x.shape[1] + 1):
        for cols in itertools.combinations(range(x.shape[1]), r):
            coef = np.linalg.lstsq(x[:, cols], y, rcond=None)[0]
            if np.all(coef >= 0):
                rss = float(np.sum((x[:, cols] @ coef - y) ** 2))
                if best is None or rss < best[0]:
                    best = (rss, cols, coef)
    full = np.zeros(x.shape[1])
    if best is not None:
        full[list(best[1])] = best[2]
    total = float(np.sum((y - y.mean()) ** 2))
    base.coefficients = tuple(float(c) for c in full[1:])
    base.intercept = float(full[0])
    base.batches, base.vertices, base.seconds = len(rows), int(data[:, 1].sum()), float(y.sum())
    base.r2 = 1.0 - best[0] / total if best is not None and total > 0 else None
    if not any(base.coefficients):
        base.notes.append("the timings resolved no per-vertex cost: every vertex costs the same (packing by count)")
    return base
