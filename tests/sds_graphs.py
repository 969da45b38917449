"""Small graphs and networkx reference scores for the structural diversity tests."""

from __future__ import annotations

import networkx as nx
import numpy as np

from gpucore.graph import from_arcs


def to_graph(g: nx.Graph, directed_arcs=None, name="nx"):
    """A ``Graph`` with vertices 0..n-1 holding the edges of ``g`` (undirected), or the given arcs."""
    n = g.number_of_nodes()
    if directed_arcs is not None:
        src, dst = zip(*directed_arcs)
        return from_arcs(n, src, dst, 0.1, directed=True, name=name)
    edges = np.array(sorted(g.edges()), dtype=np.int64).reshape(-1, 2)
    return from_arcs(n, edges[:, 0], edges[:, 1], 0.1, directed=False, name=name)


def small_graphs() -> dict[str, nx.Graph]:
    """Graphs with many triangles and varied ego-networks (dense cores, cliques sharing vertices,
    sparse parts, isolated vertices)."""
    out = {
        "gnp40": nx.gnp_random_graph(40, 0.3, seed=1),
        "gnp60": nx.gnp_random_graph(60, 0.15, seed=2),
        "plc": nx.powerlaw_cluster_graph(80, 4, 0.7, seed=3),
        "caveman": nx.relaxed_caveman_graph(6, 6, 0.2, seed=4),
        "karate": nx.karate_club_graph(),
        "k7": nx.complete_graph(7),
    }
    # cliques of several sizes glued to one hub: many contexts of every model at the hub
    g = nx.Graph()
    base = 1
    for size in (3, 4, 5, 6, 7, 4, 5):
        members = list(range(base, base + size))
        g.add_edges_from((a, b) for i, a in enumerate(members) for b in members[i + 1:])
        g.add_edges_from((0, x) for x in members)
        base += size
    g.add_edges_from([(base - 1, base - 6), (base, 0), (base + 1, 0)])
    out["hub"] = nx.convert_node_labels_to_integers(g)
    # a hub of degree 120 over 40 triangles and a few chords: lists 16x longer than others, so the
    # intersections search (gallop) instead of merging
    g = nx.Graph()
    for c in range(40):
        a, b, x = 1 + 3 * c, 2 + 3 * c, 3 + 3 * c
        g.add_edges_from([(a, b), (b, x), (a, x), (0, a), (0, b), (0, x)])
    g.add_edges_from((1 + 3 * c, 4 + 3 * c) for c in range(0, 39, 3))
    out["star"] = g
    for name, h in out.items():
        out[name] = nx.convert_node_labels_to_integers(h)
    return out


def nx_contexts(g: nx.Graph, v, model: str, k: int) -> list[list[int]]:
    """The contexts of v by networkx: vertex sets, each sorted, ordered by their smallest vertex."""
    ego = g.subgraph(list(g[v])).copy()
    if model == "comp":
        comps = [c for c in nx.connected_components(ego) if len(c) >= k]
    elif model == "core":
        comps = list(nx.connected_components(nx.k_core(ego, k)))
    else:
        comps = list(nx.connected_components(nx.k_truss(ego, k)))
    return sorted(sorted(int(x) for x in c) for c in comps)


def brute_top(scores: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The first t vertices by (score descending, id ascending)."""
    order = np.lexsort((np.arange(scores.size), -scores))[:t]
    return order, scores[order]
