"""The oracle's own structural diversity code: its contexts against networkx, its bounds, and
``verify`` on sds results: a true result passes, every kind of tampering fails."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.oracle.sds import OracleGraph
from gpucore.oracle.verify import verify_result
from gpucore.sds import run_sds
from gpucore.sds.bounds import MODELS
from tests.sds_graphs import nx_contexts, small_graphs, to_graph
from tests.test_sds_exact import cliques_at_hubs

GRAPHS = small_graphs()


@pytest.mark.parametrize("name", ["gnp40", "plc", "hub", "caveman"])
def test_oracle_contexts_against_networkx(name):
    g = GRAPHS[name]
    og = OracleGraph(to_graph(g))
    for model in MODELS:
        for k in range(1, 7):
            scores = og.scores(np.arange(g.number_of_nodes()), model, k)
            bound = og.bound(model, k)
            for v in g:
                ref = nx_contexts(g, v, model, k)
                assert og.contexts(v, model, k) == ref and scores[v] == len(ref) <= bound[v], (model, k, v)


def test_oracle_symmetrises_like_the_definition():
    g = GRAPHS["karate"]
    arcs = [(a, b) if (a + b) % 2 else (b, a) for a, b in g.edges()]
    og = OracleGraph(to_graph(g, directed_arcs=arcs))
    assert all(og.contexts(v, "comp", 2) == nx_contexts(g, v, "comp", 2) for v in g)


@pytest.fixture(scope="module")
def hubs():
    return to_graph(cliques_at_hubs())


def solved(graph, model="core", k=3, t=10):
    return run_sds(graph, model, k, t, backend="cpu")


@pytest.mark.parametrize("model", MODELS)
def test_true_results_pass(hubs, model):
    for t in (1, 10, 40):
        report = verify_result(solved(hubs, model, 3, t), hubs, "r.json")
        assert report["passed"], report["failures"]
        assert report["checked"] == "sds" and report["returned"] == t


def test_ties_and_zero_scores_pass():
    graph = to_graph(GRAPHS["plc"])
    for model, k, t in (("truss", 4, 30), ("core", 5, 80), ("comp", 6, 80)):
        res = run_sds(graph, model, k, t, backend="cpu")
        report = verify_result(res, graph, "r.json")
        assert report["passed"], (model, report["failures"])
        assert report["ties_at_t"] == res["ties_at_t"]


def tampered(result, change):
    bad = copy.deepcopy(result)
    change(bad)
    return bad


def test_tampered_results_fail(hubs):
    res = solved(hubs)
    n = hubs.n
    assert res["top"][0]["vertex"] == 29 and res["top"][-1]["vertex"] == 20

    def swap_for_lower(r):  # vertex 20 (score 21) replaced by hub 10 (score 11), entry consistent
        og = OracleGraph(hubs)
        r["top"][-1] = {"vertex": 10, "score": 11, "contexts": og.contexts(10, "core", 3)}

    cases = {
        "score": lambda r: r["top"][3].update(score=r["top"][3]["score"] + 1),
        "dropped context": lambda r: r["top"][0]["contexts"].pop(),
        "changed context": lambda r: r["top"][2]["contexts"][0].__setitem__(0, n - 1),
        "lower vertex": swap_for_lower,
        "order": lambda r: r["top"].reverse(),
        "duplicate": lambda r: r["top"].__setitem__(1, r["top"][0]),
        "missing": lambda r: r["top"].pop(),
        "ties": lambda r: r.update(ties_at_t=r["ties_at_t"] + 1),
        "t_score": lambda r: r.update(t_score=r["t_score"] - 1),
    }
    for what, change in cases.items():
        report = verify_result(tampered(res, change), hubs, "r.json")
        assert not report["passed"] and report["failures"], what


def test_tie_rule_is_checked():
    """Two vertices tie at the t-th score: returning the higher id instead of the lower one fails."""
    graph = to_graph(GRAPHS["plc"])
    res = run_sds(graph, "core", 3, 5, backend="cpu")
    assert res["ties_at_t"] > res["ties_in_top"]  # a tie crosses the boundary
    og = OracleGraph(graph)
    scores = og.scores(np.arange(graph.n), "core", 3)
    inside = {e["vertex"] for e in res["top"]}
    later = max(v for v in range(graph.n) if scores[v] == res["t_score"] and v not in inside)
    bad = tampered(res, lambda r: r["top"].__setitem__(-1, {"vertex": later, "score": res["t_score"],
                                                            "contexts": og.contexts(later, "core", 3)}))
    report = verify_result(bad, graph, "r.json")
    assert not report["passed"] and "beats" in report["failures"][0]


def test_malformed_results_are_errors(hubs):
    res = solved(hubs)
    for change, text in ((lambda r: r.update(model="clique"), "model"), (lambda r: r.update(k=0), "k"),
                         (lambda r: r.update(top=3), "top"), (lambda r: r["top"][0].pop("contexts"), r"top\[0\]"),
                         (lambda r: r["top"][0].update(vertex=10**9), "unknown vertex")):
        with pytest.raises(GpucoreError, match=text):
            verify_result(tampered(res, change), hubs, "r.json")
