"""Graphs: edge-list readers, canonical CSR, weight and cost schemes, the ``.gcsr`` format.

Typical use::

    from gpucore.graph import load_graph, preprocess, from_arcs
    preprocess("soc-Epinions1.txt.gz", "epinions.gcsr", weights="wc", cost="degree")
    g = load_graph("epinions.gcsr")          # memory-mapped, read-only
    g.in_indptr, g.in_src, g.in_eid, g.in_prob   # reverse traversal (RR sets)
    g.out_indptr, g.out_dst, g.out_prob          # forward traversal (edge id = position)
"""

from gpucore.graph.build import from_arcs, save_graph
from gpucore.graph.model import Graph, load_graph
from gpucore.graph.integrity import sidecar_path
from gpucore.graph.preprocess import preprocess

__all__ = ["Graph", "from_arcs", "load_graph", "preprocess", "save_graph", "sidecar_path"]
