"""Synthetic generators: determinism, sizes, and a round trip through the text writer."""

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph import preprocess
from gpucore.graph.edgelist import read_edge_list
from gpucore.graph.generators import generate, write_edge_list


@pytest.mark.parametrize("kind", ["rmat", "pa"])
def test_same_seed_same_graph_other_seed_other_graph(kind):
    a = generate(kind, 2000, 20000, seed=1)
    b = generate(kind, 2000, 20000, seed=1)
    c = generate(kind, 2000, 20000, seed=2)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])


def test_rmat_ids_in_range_and_skewed():
    src, dst = generate("rmat", 5000, 100000, seed=3)
    assert src.size == 100000 and 0 <= min(src.min(), dst.min()) and max(src.max(), dst.max()) < 5000
    indeg = np.bincount(dst, minlength=5000)
    assert indeg.max() > 20 * indeg.mean()  # heavy-tailed, as R-MAT should be


def test_pa_uses_every_node_and_about_the_requested_arcs(tmp_path):
    src, dst = generate("pa", 3000, 30000, seed=4, reciprocity=0.3)
    assert set(np.unique(np.concatenate([src, dst])).tolist()) == set(range(3000))
    assert abs(src.size - 30000) < 0.02 * 30000
    path = tmp_path / "pa.txt.gz"
    write_edge_list(path, src, dst, "pa test")
    stats = preprocess(path, tmp_path / "pa.gcsr", show_progress=False)
    assert stats["n"] == 3000
    assert stats["m"] > 0.97 * 30000
    back = read_edge_list(path, show_progress=False)
    np.testing.assert_array_equal(back.src, src)
    np.testing.assert_array_equal(back.dst, dst)


@pytest.mark.parametrize(
    "kind, nodes, edges, opts, message",
    [
        ("rmat", 4, 10, {}, "--nodes"),
        ("rmat", 100, 0, {}, "--edges"),
        ("rmat", 100, 10, {"abcd": (0.5, 0.5, 0.5, 0.5)}, "--abcd"),
        ("pa", 100, 10, {}, "--edges >= 2"),
        ("pa", 100, 1000, {"reciprocity": 2.0}, "--reciprocity"),
        ("ws", 100, 1000, {}, "unknown generator"),
    ],
)
def test_bad_parameters(kind, nodes, edges, opts, message):
    with pytest.raises(GpucoreError, match=message):
        generate(kind, nodes, edges, **opts)
