"""The graph a fused sampler traverses: the in-CSR under a vertex order, with original arc ids.

``traversal_graph(in_indptr, in_src, in_eid, in_w, qcum, skip, lt, graph, order)`` takes the host in-CSR an
engine already holds (weights of its model; ``qcum`` the LT prefix sums or a dummy; ``skip`` the IC skip
table of ``gpucore.im.skipping`` or a dummy) and returns it
relabelled by ``gpucore.graph.reorder`` (identity for ``order="none"``: the same arrays, no copy).
Rows keep their arc order, so the LT prefix sums of a row are the same numbers; every arc keeps its
original edge id, so IC coins are the same; a node keeps its skip entry and its jumps are keyed by
``old_of_new[x]`` over its row in the same order; LT draws are keyed by ``old_of_new[x]``; roots are drawn
as old ids and mapped with ``new_of_old``; sets are written back in old ids. Hence a set never
depends on the order (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpucore.graph.reorder import inverse_order, relabel_in_csr, vertex_order
from gpucore.im.cpu import lt_prefix
from gpucore.timing import Phases


@dataclass
class TraversalGraph:
    order: str
    n: int
    in_indptr: np.ndarray  # int64[n+1], rows in new ids
    in_src: np.ndarray  # int32[m], new ids
    in_eid: np.ndarray  # original arc ids
    in_w: np.ndarray  # float32[m], the model's weights
    qcum: np.ndarray  # int64[m] LT prefix sums (int64[1] dummy for IC)
    skip: np.ndarray  # float64[n] IC skip table, new ids (float64[1] dummy for LT)
    old_of_new: np.ndarray  # int32[n]
    new_of_old: np.ndarray  # int64[n]
    seconds: float  # time spent ordering and relabelling


def traversal_graph(in_indptr, in_src, in_eid, in_w, qcum, skip, lt: bool, graph, order: str) -> TraversalGraph:
    timer = Phases(("reorder",))  # the TraversalGraph's seconds
    with timer.phase("reorder"):
        n = int(graph.n)
        if order == "none":
            ident = np.arange(n, dtype=np.int64)
            arrays = (in_indptr, in_src, in_eid, in_w, qcum, skip, ident.astype(np.int32), ident)
        else:
            old_of_new = vertex_order(graph, order)
            indptr, src, eid, w = relabel_in_csr(in_indptr, in_src, in_eid, in_w, old_of_new)
            q = lt_prefix(indptr, w) if lt else qcum
            new_skip = skip if lt else np.ascontiguousarray(skip[old_of_new])
            arrays = (indptr, src, eid, w, q, new_skip, old_of_new.astype(np.int32), inverse_order(old_of_new))
    return TraversalGraph(order, n, *arrays, timer.seconds["reorder"])
