"""Weight and cost schemes: values, reproducibility, LT normalisation, bad parameters."""

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph import from_arcs
from gpucore.graph.costs import vertex_costs
from gpucore.graph.weights import count_lt_violations, edge_probabilities, lt_in_weights


@pytest.fixture
def graph():
    rng = np.random.default_rng(1)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, 30, size=(200, 2)) if a != b}
    src, dst = zip(*sorted(pairs))
    return from_arcs(30, src, dst, 0.5)


def test_weighted_cascade_is_one_over_indegree(graph):
    p = edge_probabilities("wc", graph.out_dst, graph.in_indptr, 0)
    indeg = np.diff(graph.in_indptr)
    np.testing.assert_array_equal(p, (1.0 / indeg[graph.out_dst]).astype(np.float32))
    assert count_lt_violations(graph.in_indptr, p[graph.in_eid]) == 0


def test_const(graph):
    assert set(edge_probabilities("const:0.2", graph.out_dst, graph.in_indptr, 0).tolist()) == {np.float32(0.2)}


def test_trivalency_values_and_reproducibility(graph):
    a = edge_probabilities("trivalency", graph.out_dst, graph.in_indptr, 7)
    b = edge_probabilities("trivalency", graph.out_dst, graph.in_indptr, 7)
    c = edge_probabilities("trivalency", graph.out_dst, graph.in_indptr, 8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert set(a.tolist()) <= {np.float32(0.1), np.float32(0.01), np.float32(0.001)}
    assert len(set(a.tolist())) == 3


def test_uniform_and_normal_ranges(graph):
    u = edge_probabilities("uniform:0.2,0.4", graph.out_dst, graph.in_indptr, 1)
    assert u.min() >= 0.2 and u.max() < 0.4 + 1e-7
    z = edge_probabilities("normal:0.5,2.0", graph.out_dst, graph.in_indptr, 1)
    assert z.min() == 0.0 and z.max() == 1.0  # wide normal: clipped on both sides


@pytest.mark.parametrize("scheme", ["const:1.5", "const:-0.1", "uniform:0.5,1.2", "uniform:-1,0.5", "uniform:0.6,0.2",
                                    "normal:0.1,-1", "bogus", "const", "wc:3", "uniform:a,b"])
def test_bad_weight_schemes(graph, scheme):
    with pytest.raises(GpucoreError, match="--weights"):
        edge_probabilities(scheme, graph.out_dst, graph.in_indptr, 0)


def test_lt_normalisation_rescales_only_violating_nodes():
    g = from_arcs(4, [0, 1, 2, 0], [3, 3, 3, 1], [0.5, 0.4, 0.3, 0.9])
    assert count_lt_violations(g.in_indptr, g.in_prob) == 1
    w = lt_in_weights(g.in_indptr, g.in_prob)
    sums = np.add.reduceat(w.astype(np.float64), g.in_indptr[:-1][np.diff(g.in_indptr) > 0])
    np.testing.assert_allclose(sorted(sums), [0.9, 1.0], rtol=1e-6)
    assert g.edge_probabilities("LT")[0] is not g.in_prob
    assert g.edge_probabilities("IC")[0] is g.in_prob


def test_degree_costs(graph):
    outdeg = np.diff(graph.out_indptr)
    c = vertex_costs("degree", outdeg, graph.original_id, 0)
    np.testing.assert_array_equal(c, (0.01 + 0.01 * outdeg).astype(np.float32))
    c2 = vertex_costs("degree:1,2", outdeg, graph.original_id, 0)
    np.testing.assert_array_equal(c2, (1 + 2 * outdeg).astype(np.float32))


def test_uniform_costs_reproducible(graph):
    outdeg = np.diff(graph.out_indptr)
    a = vertex_costs("uniform:1,2", outdeg, graph.original_id, 3)
    np.testing.assert_array_equal(a, vertex_costs("uniform:1,2", outdeg, graph.original_id, 3))
    assert a.min() >= 1 and a.max() <= 2


def test_costs_from_file(tmp_path, graph):
    path = tmp_path / "costs.txt"
    path.write_text("# id cost\n" + "".join(f"{v} {v + 1}.5\n" for v in range(30)))
    c = vertex_costs(f"file:{path}", np.diff(graph.out_indptr), graph.original_id, 0)
    np.testing.assert_array_equal(c, np.arange(30) + 1.5)


@pytest.mark.parametrize(
    "content, message",
    [
        ("".join(f"{v} 1\n" for v in range(29)), "no cost for 1 vertices"),
        ("".join(f"{v} {0 if v == 3 else 1}\n" for v in range(30)), "non-positive"),
        ("".join(f"{v} {-1 if v == 3 else 1}\n" for v in range(30)), "non-positive"),
        ("0 1\nzero one\n", "line 2"),
    ],
)
def test_bad_cost_files(tmp_path, graph, content, message):
    path = tmp_path / "costs.txt"
    path.write_text(content)
    with pytest.raises(GpucoreError, match=message):
        vertex_costs(f"file:{path}", np.diff(graph.out_indptr), graph.original_id, 0)


@pytest.mark.parametrize("scheme", ["const:0", "const:-2", "uniform:0,1", "degree:0,0.01", "degree:1", "file:",
                                    "nope"])
def test_bad_cost_schemes(graph, scheme):
    with pytest.raises(GpucoreError, match="--cost"):
        vertex_costs(scheme, np.diff(graph.out_indptr), graph.original_id, 0)
