"""Structural diversity search on the CPU, exactly: every vertex's score and contexts against
networkx (ego graph, connected components, k_core, k_truss), the bounds, the top-t answer against
a brute-force ranking whatever the batches and bounds, symmetrisation, graphs without triangles,
the thread count, and tau*_ego = tau*_G - 1 on the real graphs (the paper's Table 1)."""

from __future__ import annotations

import numba
import networkx as nx
import numpy as np
import pytest

from gpucore.errors import GpucoreError, OutOfMemoryError
from gpucore.oracle.sds import OracleGraph, _truss_edges
from gpucore.sds import make_engine, run_sds, simple_graph
from gpucore.sds.bounds import MODELS
from tests.sds_graphs import brute_top, nx_contexts, small_graphs, to_graph

GRAPHS = small_graphs()


def engine(graph, budget=1 << 30):
    eng = make_engine(simple_graph(graph), "cpu", memory_budget=budget)
    eng.prepare()
    return eng


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_every_vertex_against_networkx(name):
    g = GRAPHS[name]
    eng = engine(to_graph(g))
    everyone = np.arange(g.number_of_nodes())
    for model in MODELS:
        for k in range(1, 7):
            scores, contexts = eng.score(everyone, model, k, contexts=True)
            for v in everyone:
                ref = nx_contexts(g, v, model, k)
                assert (scores[v], contexts[v]) == (len(ref), ref), (name, model, k, v)


def test_bounds_hold_and_support_is_tighter():
    for name in ("plc", "hub", "gnp40"):
        g = GRAPHS[name]
        eng = engine(to_graph(g))
        for model in MODELS:
            for k in range(1, 7):
                scores = eng.score(np.arange(g.number_of_nodes()), model, k)
                support, degree = eng.rank(model, k, "support").bound, eng.rank(model, k, "degree").bound
                assert (scores <= support).all() and (support <= degree).all(), (name, model, k)


def test_sizes_are_ego_networks():
    g = GRAPHS["plc"]
    nv, ne = engine(to_graph(g)).ego_sizes()
    for v in g:
        ego = g.subgraph(g[v])
        assert (nv[v], ne[v]) == (ego.number_of_nodes(), ego.number_of_edges())


@pytest.mark.parametrize("name", ["plc", "hub", "caveman"])
def test_top_t_is_the_brute_force_ranking(name):
    g = GRAPHS[name]
    graph = to_graph(g)
    n = graph.n
    for model in MODELS:
        for k in (2, 3, 4):
            ref = {v: nx_contexts(g, v, model, k) for v in g}
            scores = np.array([len(ref[v]) for v in range(n)], dtype=np.int64)
            for t in (1, 5, 17, n):
                want_v, want_s = brute_top(scores, t)
                for bound, first in (("support", 1), ("support", None), ("degree", 3)):
                    res = run_sds(graph, model, k, t, backend="cpu", bound=bound, first_batch=first)
                    got = [(e["vertex"], e["score"], e["contexts"]) for e in res["top"]]
                    assert got == [(v, s, ref[v]) for v, s in zip(want_v.tolist(), want_s.tolist())], \
                        (model, k, t, bound, first)
                    assert res["t_score"] == want_s[-1]
                    assert res["ties_at_t"] == int(np.count_nonzero(scores == want_s[-1]))
                    assert res["ties_in_top"] == int(np.count_nonzero(want_s == want_s[-1]))
                    assert res["scored"] + res["pruned"] == n


def cliques_at_hubs(hubs: int = 30, seed: int = 3) -> nx.Graph:
    """Hub h (h = 0 .. hubs-1) is joined to h + 1 disjoint 5-cliques; random edges between cliques
    of different hubs add noise outside the hubs' ego-networks. Hub h scores h + 1 under every
    model at k = 3."""
    rng = np.random.default_rng(seed)
    g = nx.Graph()
    owner = {}
    nxt = hubs
    for h in range(hubs):
        for _ in range(h + 1):
            members = list(range(nxt, nxt + 5))
            nxt += 5
            g.add_edges_from((a, b) for i, a in enumerate(members) for b in members[i + 1:])
            g.add_edges_from((h, x) for x in members)
            owner.update((x, h) for x in members)
    for _ in range(nxt):
        a, b = (int(x) for x in rng.integers(hubs, nxt, size=2))
        if owner[a] != owner[b]:
            g.add_edge(a, b)
    return g


def test_pruning_scores_fewer_vertices():
    g = cliques_at_hubs()
    graph = to_graph(g)
    for model in MODELS:
        res = run_sds(graph, model, 3, 10, backend="cpu", first_batch=4)
        assert [e["vertex"] for e in res["top"]] == list(range(29, 19, -1)), model
        assert [e["score"] for e in res["top"]] == list(range(30, 20, -1)), model
        assert res["stop"] == "bound" and res["scored"] < 60 < res["candidates"]
        assert res["pruned"] == graph.n - res["scored"]
        assert res["degree_bound_candidates"] >= res["scored"]


def test_directed_graph_is_symmetrised():
    g = GRAPHS["plc"]
    arcs = []
    for i, (a, b) in enumerate(sorted(g.edges())):  # one direction, the other, or both
        arcs += [(a, b)] if i % 3 == 0 else [(b, a)] if i % 3 == 1 else [(a, b), (b, a)]
    directed = to_graph(g, directed_arcs=arcs)
    res = run_sds(directed, "truss", 3, 12, backend="cpu")
    ref = run_sds(to_graph(g), "truss", 3, 12, backend="cpu")
    assert res["top"] == ref["top"]
    assert res["graph"]["symmetrised"] and not ref["graph"]["symmetrised"]
    assert "symmetrised" in res["notes"][0] and ref["notes"] == []
    assert res["graph"]["undirected_edges"] == g.number_of_edges()


def test_no_triangles_is_an_answer():
    g = nx.grid_2d_graph(6, 7)  # bipartite: no triangle
    graph = to_graph(nx.convert_node_labels_to_integers(g))
    for model in MODELS:
        res = run_sds(graph, model, 2, 5, backend="cpu")
        assert [(e["vertex"], e["score"], e["contexts"]) for e in res["top"]] == [(v, 0, []) for v in range(5)]
        assert res["ties_at_t"] == graph.n and res["scored"] == 0 and res["graph"]["triangles"] == 0
    res = run_sds(graph, "comp", 1, 3, backend="cpu")  # k = 1: every isolated ego vertex is a context
    assert [e["score"] for e in res["top"]] == [4, 4, 4]


def test_bad_input_one_line():
    graph = to_graph(GRAPHS["karate"])
    cases = [({"k": 0}, "--k 0"), ({"t": 0}, "--t 0"), ({"t": 35}, "--t 35"), ({"model": "clique"}, "--model"),
             ({"bound": "x"}, "--bound"), ({"k": 2.5}, "--k 2.5"), ({"first_batch": 0}, "--batch")]
    for change, text in cases:
        kw = {"model": "core", "k": 2, "t": 3, **change}
        model, k, t = kw.pop("model"), kw.pop("k"), kw.pop("t")
        with pytest.raises(GpucoreError) as exc:
            run_sds(graph, model, k, t, backend="cpu", **kw)
        assert text in str(exc.value) and "\n" not in str(exc.value)


def test_memory_budget_names_the_bytes():
    graph = to_graph(GRAPHS["k7"])
    with pytest.raises(OutOfMemoryError, match="needs .* for the graph"):
        run_sds(graph, "comp", 2, 1, backend="cpu", memory_budget=100)
    sg = simple_graph(graph)
    eng = make_engine(sg, "cpu", memory_budget=make_engine(sg, "cpu").fixed_bytes(sg) + 300)
    with pytest.raises(OutOfMemoryError, match=r"ego-network of vertex 0 needs \d+ B of buffers"):
        run_sds(graph, "truss", 3, 1, engine=eng)


def test_parallel_equals_sequential():
    g = nx.powerlaw_cluster_graph(3000, 8, 0.5, seed=5)
    graph = to_graph(g)
    before = numba.get_num_threads()
    try:
        results = []
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            eng = engine(graph)
            everyone = np.arange(graph.n)
            results.append([eng.score(everyone, model, 3).tolist() for model in MODELS]
                           + [run_sds(graph, model, 4, 50, backend="cpu")["top"] for model in MODELS])
        assert results[0] == results[1]
    finally:
        numba.set_num_threads(before)


REAL = {"wiki-Vote.txt.gz": (False, 22), "email-Eu-core.txt.gz": (False, None), "ca-GrQc.txt.gz": (True, None),
        "nethept.txt.gz": (True, None),
        "facebook_combined.txt.gz": (True, None), "soc-Epinions1.txt.gz": (False, 32)}


@pytest.mark.parametrize("name", [pytest.param(f, marks=pytest.mark.slow) if f.startswith(("facebook", "soc-"))
                                  else f for f in REAL])
def test_tau_ego_is_tau_g_minus_one(shared_data, tmp_path, name):
    """max trussness over the ego-networks (the solver's full PKT peeling) + 1 is the largest k with a
    non-empty k-truss of G (the oracle's own repeated-pass truss); the paper's Table 1 gives
    tau*_ego = 22 for Wiki-Vote and 32 for Epinions."""
    from gpucore.graph import load_graph, preprocess

    undirected, paper = REAL[name]
    path = tmp_path / "g.gcsr"
    preprocess(shared_data / name, path, undirected=undirected, show_progress=False)
    graph = load_graph(path)
    tau_ego = int(engine(graph, 4 << 30).trussness(np.arange(graph.n)).max())
    og = OracleGraph(graph)
    rows = np.repeat(np.arange(og.n), np.diff(og.indptr))
    up = rows < og.adj
    li, lj = rows[up].astype(np.int64), og.adj[up].astype(np.int64)
    assert _truss_edges(og.n, li, lj, tau_ego + 1).any()
    assert not _truss_edges(og.n, li, lj, tau_ego + 2).any()
    if paper is not None:
        assert tau_ego == paper


def test_batches_respect_the_index_limits(monkeypatch):
    """Batches also stop before their rows or edges overflow the arena's int32 indices."""
    import gpucore.sds.layout as layout

    g = cliques_at_hubs(12)
    graph = to_graph(g)
    ref = run_sds(graph, "core", 3, 8, backend="cpu")
    monkeypatch.setattr(layout, "MAX_ROWS", 200)
    got = run_sds(graph, "core", 3, 8, backend="cpu", first_batch=1000)
    assert got["top"] == ref["top"] and got["batches"] > ref["batches"]
    with pytest.raises(OutOfMemoryError):
        layout.make_batch(np.arange(graph.n), *make_engine(simple_graph(graph), "cpu").ego_sizes())
