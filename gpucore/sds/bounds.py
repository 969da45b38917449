"""The three models and the upper bounds of their scores (spec sections 1 and 2.0, Algorithm 1 phase 1).

Notation: G_v is the ego-network of v (the subgraph induced by N(v), v excluded); the *ego degree*
of a neighbour u in G_v is ``sup(v, u) = |N(u) & N(v)|``, the number of triangles on edge (v, u),
so the supports of v's edges are the degrees of G_v and ``|E(G_v)| = sum_u sup(v, u) / 2``.

A social context is a vertex set of G_v; the contexts of one vertex are pairwise disjoint:

=========  ==========================================  ===================  ==============
model      context                                     a member u has       size at least
=========  ==========================================  ===================  ==============
comp       connected component with >= k vertices      (k >= 2) sup >= 1    k
core       maximal connected k-core                    sup >= k             k + 1
truss      maximal connected k-truss (its vertices;    (k >= 3) sup >= k-1  k
           k <= 2: every component with an edge)       (k <= 2) sup >= 1    2
=========  ==========================================  ===================  ==============

(comp with k = 1 counts every component, isolated vertices included: threshold 0, size 1.) A
member's degree inside its context is at least its threshold, and its ego degree is at least that.
Hence, with ``c_T(v) = #{u in N(v): sup(v, u) >= T}``,

    sc(v) <= floor(c_T(v) / size)                  (the *support* bound, our default)
    sc(v) <= floor(d(v) / size)                    (the *degree* bound: the paper's |N(v)| / k for
                                                    comp, the "similar bounds" for core and truss)

The support bound is never larger than the degree bound and needs the edge supports (the global
triangle listing the ego-network extraction does anyway). A vertex whose bound is 0 has score 0.
"""

from __future__ import annotations

import numpy as np

from gpucore.errors import GpucoreError

MODELS = ("comp", "core", "truss")
BOUNDS = ("support", "degree")
#: model codes shared by the CPU kernels and the CUDA kernels (sds_common.cuh)
MODEL_CODE = {"comp": 0, "core": 1, "truss": 2}


def check_model(model) -> str:
    model = str(model).lower()
    aliases = {"comp-div": "comp", "core-div": "core", "truss-div": "truss"}
    model = aliases.get(model, model)
    if model not in MODELS:
        raise GpucoreError(f"--model {model!r}: choose comp, core or truss")
    return model


def member_threshold(model: str, k: int) -> int:
    """The least ego degree a member of a context can have (the table above)."""
    if model == "comp":
        return 0 if k <= 1 else 1
    if model == "core":
        return k
    return max(1, k - 1)


def min_context_size(model: str, k: int) -> int:
    """The least number of vertices of a context."""
    if model == "comp":
        return k
    if model == "core":
        return k + 1
    return max(2, k)


def truss_stop_level(k: int) -> int:
    """Support levels peeled for a k-truss: 0 .. k-3; the edges left have trussness >= k."""
    return max(0, k - 2)


def support_bound(model: str, k: int, count: np.ndarray) -> np.ndarray:
    """floor(c_T(v) / size) from ``count`` = c_T per vertex (T = ``member_threshold``)."""
    return np.asarray(count, dtype=np.int64) // min_context_size(model, k)


def degree_bound(model: str, k: int, degree: np.ndarray) -> np.ndarray:
    """floor(d(v) / size): the paper's bound."""
    return np.asarray(degree, dtype=np.int64) // min_context_size(model, k)
