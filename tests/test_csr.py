"""Canonical CSR: relabelling, self-loops, duplicates, symmetrisation, edge ids in both CSRs."""

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph.csr import build_csr, relabel


def _reference(src, dst, undirected):
    """Independent reference: sets of arcs with Python ints."""
    ids = sorted(set(src) | set(dst))
    new = {x: i for i, x in enumerate(ids)}
    arcs = set()
    for a, b in zip(src, dst):
        if a == b:
            continue
        arcs.add((new[a], new[b]))
        if undirected:
            arcs.add((new[b], new[a]))
    return ids, sorted(arcs)


def _arcs_of(csr):
    out = []
    for u in range(csr.n):
        for e in range(csr.out_indptr[u], csr.out_indptr[u + 1]):
            out.append((u, int(csr.out_dst[e])))
    return out


@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_matches_reference_on_random_multigraphs(seed, undirected):
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**6, size=40, replace=False)
    src = ids[rng.integers(0, 40, 300)]
    dst = ids[rng.integers(0, 40, 300)]
    s32, d32, original = relabel(src, dst)
    csr = build_csr(s32, d32, original.size, undirected)
    want_ids, want_arcs = _reference(src.tolist(), dst.tolist(), undirected)
    assert original.tolist() == want_ids
    assert _arcs_of(csr) == want_arcs  # sorted by (source, target): edge id = position
    assert csr.self_loops_dropped == int(np.sum(src == dst))
    raw = (len(src) - csr.self_loops_dropped) * (2 if undirected else 1)
    assert csr.duplicates_dropped == raw - csr.m


def test_in_csr_is_the_transpose_with_the_same_edge_ids():
    rng = np.random.default_rng(3)
    src = rng.integers(0, 50, 400)
    dst = rng.integers(0, 50, 400)
    s32, d32, original = relabel(src, dst)
    csr = build_csr(s32, d32, original.size, False)
    for v in range(csr.n):
        row = range(csr.in_indptr[v], csr.in_indptr[v + 1])
        sources = [int(csr.in_src[k]) for k in row]
        assert sources == sorted(sources)
        for k in row:
            e = int(csr.in_eid[k])
            assert int(csr.out_dst[e]) == v
            assert csr.out_indptr[csr.in_src[k]] <= e < csr.out_indptr[csr.in_src[k] + 1]
    assert sorted(csr.in_eid.tolist()) == list(range(csr.m))


def test_vertex_with_only_a_self_loop_is_a_vertex():
    s32, d32, original = relabel(np.array([5, 1]), np.array([5, 2]))
    csr = build_csr(s32, d32, original.size, False)
    assert original.tolist() == [1, 2, 5] and csr.n == 3 and csr.m == 1


def test_sparse_huge_ids_use_the_sort_path():
    src = np.array([10**15, 3, 10**12])
    dst = np.array([3, 10**12, 7])
    s32, d32, original = relabel(src, dst)
    assert original.tolist() == [3, 7, 10**12, 10**15]
    assert s32.tolist() == [3, 0, 2] and d32.tolist() == [0, 2, 1]


def test_only_self_loops_is_an_empty_graph():
    s32, d32, original = relabel(np.array([1, 2]), np.array([1, 2]))
    with pytest.raises(GpucoreError, match="empty graph"):
        build_csr(s32, d32, original.size, False)
