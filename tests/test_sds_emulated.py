"""The sds CUDA backend in the CPU emulator against the CPU backend: identical supports, ego CSRs
(the whole arena), scores, contexts, trussness and top-t answers, under random interleavings of
the threads of a block and several block sizes.

These run the unmodified ``sds_graph.cu`` / ``sds_build.cu`` / ``sds_score.cu`` through the
driver code of ``gpucore.sds.cuda`` on NumPy arrays (``gpucore.sds.emulated``). Blocks run one
after another in the emulator: races between blocks are left to ``tests/gpu/test_sds_cuda.py``.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.kernels import emulator
from gpucore.sds import make_engine, run_sds, simple_graph
from gpucore.sds.bounds import MODELS
from gpucore.sds.emulated import emulated_engine
from gpucore.sds.layout import arena_fields
from gpucore.sds.simple import SimpleGraph
from tests.sds_graphs import small_graphs, to_graph
from tests.test_sds_exact import cliques_at_hubs

pytestmark = pytest.mark.skipif(not emulator.available(), reason="g++ not available")


def deep_graph():
    """Overlapping cliques of 8 .. 14 vertices plus random edges: ego trussness up to 13."""
    g = nx.relaxed_caveman_graph(5, 14, 0.15, seed=7)
    rng = np.random.default_rng(1)
    for size in (8, 10, 12):
        members = rng.choice(g.number_of_nodes(), size=size, replace=False).tolist()
        g.add_edges_from((a, b) for i, a in enumerate(members) for b in members[i + 1:])
    return g


GRAPHS = {**small_graphs(), "deep": deep_graph(), "gnp_dense": nx.gnp_random_graph(45, 0.5, seed=8)}


def pair(g, **kw):
    sg = simple_graph(to_graph(g))
    cpu = make_engine(sg, "cpu", memory_budget=1 << 30)
    emu = emulated_engine(sg, **kw)
    cpu.prepare()
    emu.prepare()
    return cpu, emu


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_scores_contexts_and_trussness_equal_cpu(name):
    cpu, emu = pair(GRAPHS[name])
    assert np.array_equal(cpu.sup, emu.sup)
    assert all(np.array_equal(a, b) for a, b in zip(cpu.ego_sizes(), emu.ego_sizes()))
    everyone = np.arange(cpu.n)
    for model in MODELS:
        for k in range(1, 7):
            a, ca = cpu.score(everyone, model, k, contexts=True)
            b, cb = emu.score(everyone, model, k, contexts=True)
            assert np.array_equal(a, b) and ca == cb, (model, k)
            for kind in ("support", "degree"):
                ra, rb = cpu.rank(model, k, kind), emu.rank(model, k, kind)
                assert np.array_equal(ra.bound, rb.bound) and np.array_equal(ra.candidates, rb.candidates)
    assert np.array_equal(cpu.trussness(everyone), emu.trussness(everyone))


def test_arena_equals_cpu():
    """After building the same batch, every arena array (the ego CSRs, edge ids, endpoints) is equal."""
    cpu, emu = pair(GRAPHS["deep"])
    vertices = np.arange(cpu.n)[::-1].copy()
    for model in MODELS:
        for eng in (cpu, emu):
            eng.load(eng.new_batch(vertices), model)
        rows, slots, edges = arena_fields(model)
        for name, _dt in rows + slots + edges:
            if name in ("parent", "aux", "sup", "state", "curr", "next"):
                continue  # scoring state, compared through the scores
            a, b = cpu._host(name), emu._host(name)
            assert np.array_equal(a, b[:a.size]), (model, name)


@pytest.mark.parametrize("threads, seed", [(32, 1), (64, 2), (96, 3), (256, 4)])
def test_random_interleavings(threads, seed):
    """Threads of a block interleave at random (preempted at atomics): union-find, H-index rounds and
    the PKT sub-rounds must give the CPU's answers whatever the order."""
    for name in ("deep", "gnp_dense", "hub"):
        cpu, emu = pair(GRAPHS[name], score_threads=threads, schedule_seed=seed, preempt=0.5)
        everyone = np.arange(cpu.n)
        for model, k in (("comp", 3), ("core", 4), ("truss", 4), ("truss", 6), ("core", 7)):
            assert np.array_equal(cpu.score(everyone, model, k), emu.score(everyone, model, k)), (name, model, k)
        assert np.array_equal(cpu.trussness(everyone), emu.trussness(everyone)), name


@pytest.mark.parametrize("giant_edges, seed", [(0, 0), (25, 0), (40, 6)])
def test_giant_egonets_on_the_whole_device(giant_edges, seed):
    """Ego-networks of at least ``giant_edges`` edges take the whole-device kernels (sds_flat.cu:
    host-driven H-index rounds, truss levels and PKT sub-rounds over flat queues): 0 sends every
    one there, 25 and 40 split the batches between both paths."""
    for name in ("deep", "gnp_dense", "hub", "karate"):
        cpu, emu = pair(GRAPHS[name], giant_edges=giant_edges, schedule_seed=seed, score_threads=64)
        everyone = np.arange(cpu.n)
        for model in MODELS:
            for k in range(1, 7):
                a, ca = cpu.score(everyone, model, k, contexts=True)
                b, cb = emu.score(everyone, model, k, contexts=True)
                assert np.array_equal(a, b) and ca == cb, (name, model, k)
        assert np.array_equal(cpu.trussness(everyone), emu.trussness(everyone)), name


def test_driver_on_the_emulator_equals_cpu():
    graph = to_graph(cliques_at_hubs())
    sg = simple_graph(graph)
    for model, k, t in (("comp", 3, 10), ("core", 2, 25), ("truss", 4, 40), ("truss", 3, 1)):
        ref = run_sds(graph, model, k, t, backend="cpu")
        # a small arena: many batches
        emu = emulated_engine(sg, budget=make_engine(sg, "cpu").fixed_bytes(sg) + 40_000, giant_edges=60)
        got = run_sds(graph, model, k, t, engine=emu, first_batch=2)
        assert got["top"] == ref["top"], (model, k, t)
        for key in ("t_score", "ties_at_t", "ties_in_top", "candidates"):
            assert got[key] == ref[key], key
        assert got["batches"] > 1


def test_real_graph_with_deep_egonets(shared_data, tmp_path):
    """email-Eu-core: ego-networks with trussness up to 22, hundreds of vertices."""
    from gpucore.graph import load_graph, preprocess

    path = tmp_path / "email.gcsr"
    preprocess(shared_data / "email-Eu-core.txt.gz", path, show_progress=False)
    sg = simple_graph(load_graph(path))
    cpu = make_engine(sg, "cpu", memory_budget=1 << 30)
    emu = emulated_engine(sg, score_threads=128, schedule_seed=9)
    cpu.prepare()
    emu.prepare()
    assert np.array_equal(cpu.sup, emu.sup)
    heavy = np.argsort(-cpu.ego_sizes()[1])[:60].astype(np.int32)
    assert np.array_equal(cpu.trussness(heavy), emu.trussness(heavy))
    for model, k in (("core", 5), ("truss", 5), ("truss", 9)):
        assert np.array_equal(cpu.score(heavy, model, k), emu.score(heavy, model, k)), (model, k)


def test_kernel_errors_are_reported():
    g = GRAPHS["karate"]
    sg = simple_graph(to_graph(g))
    rows = [list(sg.adj[sg.indptr[v]:sg.indptr[v + 1]]) for v in range(sg.n)]
    absent = [x for x in range(1, sg.n) if x not in rows[0]][:2]
    rows[absent[0]] = sorted(rows[absent[0]] + [0])  # (x, 0) without (0, x): the CPU's mirror misses
    rows[0] = sorted(rows[0] + [absent[1]])  # (0, y) without (y, 0): the GPU's mirror misses
    indptr = np.zeros(sg.n + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    lopsided = SimpleGraph(sg.n, indptr, np.concatenate(rows).astype(np.int32), sg.original_id, False)
    for eng in (emulated_engine(lopsided), make_engine(lopsided, "cpu", memory_budget=1 << 30)):
        with pytest.raises(GpucoreError, match="not symmetric"):
            eng.prepare()
    emu = emulated_engine(sg, score_threads=48)  # not whole warps
    emu.prepare()
    with pytest.raises(GpucoreError, match="whole number of warps"):
        emu.score(np.arange(5), "comp", 2)
    for eng in (emulated_engine(sg), make_engine(sg, "cpu", memory_budget=1 << 30)):
        eng.prepare()
        eng.sup[int(sg.indptr[0])] += 1  # odd: the degrees no longer fill the slots
        with pytest.raises(GpucoreError, match="inconsistent edge supports"):
            eng.score(np.arange(sg.n), "comp", 2)
    emu = emulated_engine(sg)
    emu.prepare()
    s0, s1 = int(sg.indptr[0]), int(sg.indptr[1])
    assert emu.sup[s0] > 0
    emu.sup[s1 - 1] += 1  # ego of 0: its last row claims one entry more, its first one less
    emu.sup[s0] -= 1
    with pytest.raises(GpucoreError, match="did not hold as many entries"):
        emu.score(np.array([0]), "comp", 2)
