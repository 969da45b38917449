"""Vertex orders (``gpucore.graph.reorder``), the relabelled in-CSR, and the fused sampler's dispatch order."""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph import from_arcs
from gpucore.graph.reorder import ORDERS, inverse_order, relabel_in_csr, vertex_order
from gpucore.im.cpu import lt_prefix
from gpucore.im.fused.batching import dispatch_order, pieces, set_roots
from gpucore.im.fused.layout import traversal_graph
from gpucore.im.skipping import ic_skip_table
from gpucore.random import Stream, mix_py


def shuffled_path(n=200, seed=3):
    perm = np.random.default_rng(seed).permutation(n)
    return from_arcs(n, perm[:-1], perm[1:], 0.5, directed=False), perm


def bandwidth(g, old_of_new):
    new = inverse_order(old_of_new)
    src = np.repeat(np.arange(g.n), np.diff(g.out_indptr))
    return int(np.abs(new[src] - new[g.out_dst]).max())


@pytest.mark.parametrize("method", ORDERS)
def test_orders_are_permutations(method):
    g, _ = shuffled_path()
    order = vertex_order(g, method)
    assert np.array_equal(np.sort(order), np.arange(g.n))


def test_rcm_recovers_a_path():
    g, _ = shuffled_path()
    assert bandwidth(g, vertex_order(g, "none")) > 50
    assert bandwidth(g, vertex_order(g, "rcm")) == 1


def test_community_order_groups_cliques():
    # three 10-cliques whose ids are interleaved, joined by single arcs
    n = 30
    member = np.arange(n) % 3
    src, dst = np.nonzero((member[:, None] == member[None, :]) & ~np.eye(n, dtype=bool))
    src = np.concatenate([src, [0, 1]])
    dst = np.concatenate([dst, [1, 2]])
    g = from_arcs(n, src, dst, 0.1)
    order = vertex_order(g, "community")
    blocks = member[order].reshape(3, 10)
    assert all(len(set(b)) == 1 for b in blocks) and len({b[0] for b in blocks}) == 3


def test_relabelled_rows_keep_arc_ids_weights_and_order():
    rng = np.random.default_rng(1)
    n = 60
    src, dst = rng.integers(0, n, 400), rng.integers(0, n, 400)
    key = np.unique(src[src != dst] * n + dst[src != dst])
    g = from_arcs(n, key // n, key % n, rng.random(key.size).astype(np.float32) * 0.3)
    old_of_new = vertex_order(g, "rcm")
    new_of_old = inverse_order(old_of_new)
    indptr, src2, eid2, w2 = relabel_in_csr(g.in_indptr, g.in_src, g.in_eid, g.in_prob, old_of_new)
    q_old = lt_prefix(np.asarray(g.in_indptr), g.in_prob)
    q_new = lt_prefix(indptr, w2)
    for x in range(n):
        v = old_of_new[x]
        a, b = g.in_indptr[v], g.in_indptr[v + 1]
        c, d = indptr[x], indptr[x + 1]
        np.testing.assert_array_equal(src2[c:d], new_of_old[g.in_src[a:b]])
        np.testing.assert_array_equal(eid2[c:d], g.in_eid[a:b])
        np.testing.assert_array_equal(w2[c:d], g.in_prob[a:b])
        np.testing.assert_array_equal(q_new[c:d], q_old[a:b])
    tg = traversal_graph(np.asarray(g.in_indptr), g.in_src, g.in_eid, g.in_prob, q_old, np.zeros(1), True, g, "rcm")
    np.testing.assert_array_equal(tg.old_of_new, old_of_new)
    np.testing.assert_array_equal(tg.new_of_old[tg.old_of_new], np.arange(n))


def test_relabelled_nodes_keep_their_skip_entries():
    # hubs 0..2 with 40 in-arcs each: weighted cascade (skipping), constant p 0.05 (skipping), mixed (coins)
    n = 130
    src = np.concatenate([np.arange(3, 43), np.arange(43, 83), np.arange(83, 123), np.arange(3, 130) // 2 + 3])
    dst = np.concatenate([np.zeros(40), np.ones(40), np.full(40, 2), np.arange(3, 130)]).astype(np.int64)
    prob = np.concatenate([np.full(40, 1 / 40), np.full(40, 0.05), np.linspace(0.01, 0.1, 40), np.full(127, 0.5)])
    keep = src != dst
    g = from_arcs(n, src[keep], dst[keep], prob[keep])
    skip = ic_skip_table(g.in_indptr, g.in_prob, "IC")
    assert (skip < 0).tolist()[:3] == [True, True, False] and not (skip[3:] < 0).any()
    tg = traversal_graph(np.asarray(g.in_indptr), g.in_src, g.in_eid, g.in_prob, np.zeros(1), skip, False, g, "rcm")
    np.testing.assert_array_equal(tg.skip, skip[tg.old_of_new])
    np.testing.assert_array_equal(tg.skip, ic_skip_table(tg.in_indptr, tg.in_w, "IC"))  # rows keep their weights


def test_unknown_order():
    g, _ = shuffled_path()
    with pytest.raises(GpucoreError, match="--order 'gorder'"):
        vertex_order(g, "gorder")


def test_dispatch_order_sorts_all_roots_of_a_piece():
    n, seed, j0, sets, rounds = 97, 5, 1000, 300, 2
    new_of_old = np.random.default_rng(0).permutation(n).astype(np.int64)
    roots = set_roots(np.uint64(seed), np.int64(j0), sets, np.int64(n), new_of_old)
    assert [int(r) for r in roots[:5]] == [int(new_of_old[mix_py(seed, Stream.ROOT, j0 + i, 0, 0) % n])
                                           for i in range(5)]
    order = dispatch_order(roots, rounds, True)
    assert np.array_equal(np.sort(order), np.arange(sets * rounds))  # every traversal, once
    keys = roots[order // rounds]
    assert np.all(np.diff(keys) >= 0)  # by root, ties by traversal id
    assert np.all(np.diff(order)[np.diff(keys) == 0] > 0)
    assert np.array_equal(dispatch_order(roots, rounds, False), np.arange(sets * rounds))


def test_pieces_are_whole_sets_in_order():
    assert pieces(10, 3) == [(0, 10)]
    import gpucore.im.fused.batching as b

    per = b.MAX_PIECE_TRAVERSALS // 3
    got = pieces(2 * per + 5, 3)
    assert got == [(0, per), (per, per), (2 * per, 5)]


def test_community_order_splits_a_preferential_attachment_graph():
    # label propagation ends in a single community here; Louvain's local moves must not
    from gpucore.graph.reorder import _undirected, louvain_communities
    from tests.im_graphs import pa_graph

    g = pa_graph(3000, 20000, seed=4)
    indptr, adj = _undirected(np.asarray(g.out_indptr), g.out_dst, np.asarray(g.in_indptr), g.in_src)
    sizes = np.unique(louvain_communities(indptr, adj), return_counts=True)[1]
    assert 3 <= sizes.size < g.n // 30 and sizes.max() < g.n // 2
    assert not np.array_equal(vertex_order(g, "community"), np.arange(g.n))
