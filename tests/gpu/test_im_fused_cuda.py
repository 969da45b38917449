"""The fused sampler on the GPU: the unfused sampler's RR sets set for set, IMM's seeds, races between blocks.

Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_im_fused_cuda.py -v`` (one to two minutes,
most of it the CPU reference sets).
What the emulator cannot show is checked here: many batches in flight at once on every SM (atomics on
shared masks from different blocks, the device-wide frontier lists), large graphs and large sets, many
extraction blocks per batch, and what nvcc's optimiser does that g++'s does not (it kept a load of a
``__restrict__`` array across a ``__syncthreads``: ``test_batches_reloaded_many_times``).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.backend import get_backend
from gpucore.graph import from_arcs
from gpucore.im import imm
from gpucore.im.cpu import CPUSampler
from gpucore.im.engine import make_sampler
from gpucore.im.rrsets import ESTIMATE_OFFSET
from gpucore.im.sampling import canonical, engine_sets
from tests.im_graphs import giant_minority_graph, pa_graph
from tests.test_im_fused import same_imm


def cuda():
    return get_backend("cuda")


def cpu():
    return get_backend("cpu")


def fused(graph, model, rounds, seed, **options):
    """The fused sampler on the GPU, from the sampler registry."""
    return make_sampler(graph, model, rounds, seed, cuda(), "fused", **options)


def same_sets(a, b):
    ca, cb = canonical(*a), canonical(*b)
    np.testing.assert_array_equal(ca[0], cb[0])
    np.testing.assert_array_equal(ca[1], cb[1])


def assert_clean(eng):
    xp = eng.xp
    assert not bool(xp.any(eng.vis)) and not bool(xp.any(eng.nxt)) and not bool(xp.any(eng.occ))
    assert not bool(xp.any(eng.tcount)) and not bool(xp.any(eng.gcnt)) and not bool(xp.any(eng.done))


@pytest.fixture(scope="module")
def graphs():
    return {"wc": pa_graph(), "p03": pa_graph(3000, 30000, seed=4, prob=0.3), "giant": giant_minority_graph()}


@pytest.mark.parametrize("model,rounds", [("IC", 1), ("LT", 1), ("IC", 3), ("LT", 2)])
@pytest.mark.parametrize("width", [32, 64, 128, 256])
def test_sets_equal_unfused(graphs, model, rounds, width):
    names = ("wc", "p03") if (model, rounds) == ("IC", 1) else ("wc",)  # p = 0.3: large overlapping sets
    for name in names:
        g = graphs[name]
        j0 = ESTIMATE_OFFSET if width in (32, 256) else 0
        want = engine_sets(CPUSampler(g, model, rounds, 11, cpu()), j0, 3001)
        for order, tail, srt, mapping in (("none", "refill", True, "level"), ("none", "refill", True, "resident"),
                                          ("rcm", "none", False, "resident"), ("community", "refill", True, "level")):
            eng = fused(g, model, rounds, 11, batch_width=width, order=order, tail=tail, sorted_sources=srt,
                        mapping=mapping)
            same_sets(want, engine_sets(eng, j0, 3001, batch=1100))
            assert_clean(eng)
            assert eng.stats()["traversals"] == 3001 * rounds


@pytest.fixture(scope="module")
def midsize():
    """200k nodes, 2M arcs (IC at p = 0.05, LT weighted cascade), and a cache of their CPU reference sets."""
    graphs = {m: pa_graph(200_000, 2_000_000, seed=12, prob=0.05 if m == "IC" else None) for m in ("IC", "LT")}
    cache = {}

    def want(model, count):
        if (model, count) not in cache:
            cache[model, count] = engine_sets(CPUSampler(graphs[model], model, 1, 3, cpu()), 5, count)
        return cache[model, count]

    return graphs, want


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_midsize_many_batches_and_levels_per_sync(midsize, model):
    # hundreds of batches in flight on every SM
    graphs, reference = midsize
    g, want = graphs[model], reference(model, 40_000)
    for kw in ({}, {"levels_per_sync": 1, "max_batches": 7}, {"batch_width": 256, "levels_per_sync": 16},
               {"level_graphs": False}, {"levels_per_sync": 3, "max_batches": 5}):
        eng = fused(g, model, 1, 3, mapping="level", evict="never", **kw)  # evicting, a piece ends within a block
        same_sets(want, engine_sets(eng, 5, 40_000, batch=15_000))
        assert_clean(eng)
        s = eng.stats()  # blocks after the first of a piece replay a CUDA graph, unless turned off
        assert (s["level_replays"] > 0 and s["level_captures"] > 0) == kw.get("level_graphs", True)
    for kw in ({}, {"max_batches": 7}, {"batch_width": 256}, {"batch_width": 128, "tail": "none"}):
        eng = fused(g, model, 1, 3, mapping="resident", **kw)
        same_sets(want, engine_sets(eng, 5, 40_000, batch=15_000))
        assert_clean(eng)
        s = eng.stats()
        assert s["resident_pieces"] == 3 and s["level_replays"] == 0


# (model, max_batches, width, levels_per_sync, tail, sets per call): fewer batches than a call needs, so
# every batch is extracted and reloaded many times in one call. The first two are the probe's cases that
# failed on the H100 before the fz_load fix (thousands of sets lost their roots, most of them empty).
RELOADED = [("IC", 1, 64, 4, "refill", 5000, "level"), ("IC", 4, 64, 4, "refill", 5000, "level"),
            ("IC", 1, 32, 1, "none", 1700, "level"), ("IC", 2, 256, 16, "none", 1700, "level"),
            ("LT", 1, 64, 1, "refill", 1700, "level"), ("LT", 4, 128, 4, "none", 5000, "level"),
            ("IC", 1, 64, 1, "refill", 5000, "resident"), ("IC", 3, 32, 1, "none", 1700, "resident"),
            ("LT", 2, 128, 1, "refill", 1700, "resident")]


@pytest.mark.parametrize("model,max_batches,width,levels,tail,per_call,mapping", RELOADED)
def test_batches_reloaded_many_times(midsize, model, max_batches, width, levels, tail, per_call, mapping):
    graphs, reference = midsize
    eng = fused(graphs[model], model, 1, 3, max_batches=max_batches, batch_width=width, levels_per_sync=levels,
                tail=tail, mapping=mapping)
    assert eng.batches == max_batches
    same_sets(reference(model, 5000), engine_sets(eng, 5, 5000, batch=per_call))
    assert_clean(eng)
    s = eng.stats()
    assert s["traversals"] == 5000 and s["extractions"] >= 5000 // width


@pytest.mark.parametrize("mapping", ["level", "resident"])
@pytest.mark.parametrize("model", ["IC", "LT"])
def test_successive_calls_of_any_size(midsize, model, mapping):
    """One sampler, calls of 1 set, fewer sets than a batch, no multiple of the width, then large calls
    (the first ones use one batch, the last ones reload theirs): each continues at the next j."""
    graphs, reference = midsize
    eng = fused(graphs[model], model, 1, 3, max_batches=16, mapping=mapping)
    coll = eng.collection(5)
    for count in (1, 7, 70, 1300, 3622):
        eng.sample_into(coll, count, coll.mean_size)
        assert_clean(eng)
    eng.synchronize()
    same_sets(reference(model, 5000), coll.host_sets())
    assert eng.stats()["traversals"] == 5000


EVICTING = [({}, 40_000), ({"evict": "always", "evict_after": 1}, 40_000),
            ({"evict": "always", "evict_after": 2, "batch_width": 256, "max_batches": 9}, 40_000),
            ({"evict": "always", "evict_after": 1, "batch_width": 32, "max_batches": 3, "levels_per_sync": 1}, 5000)]


@pytest.mark.parametrize("options,count", EVICTING)
def test_evicted_traversals_and_the_team_pass(midsize, options, count):
    """Level-mapping batches on the midsize IC graph (p = 0.05: a minority of the sets is large) evict their
    long-running traversals, by auto's rule or at every extraction, and the team pass runs them on hundreds of
    blocks at once: the unfused sets; then the same with a pool far too small for the team pass."""
    graphs, reference = midsize
    g = graphs["IC"]
    eng = fused(g, "IC", 1, 3, mapping="level", **options)
    same_sets(reference("IC", count), engine_sets(eng, 5, count, batch=count // 2 + 7))
    assert_clean(eng)
    s = eng.stats()
    assert s["evicted"] > 0 and s["traversals"] == count and not bool(eng.xp.any(eng.team_bitmaps))
    eng.pool_factor = 0.0001
    eng.reset_stats()
    same_sets(reference("IC", count), engine_sets(eng, 5, count, batch=count))
    assert eng.stats()["regrowths"] >= 1 and eng.stats()["evicted"] > 0


def test_large_sets_pool_growth_and_list_rebuild():
    g = pa_graph(50_000, 500_000, seed=6, prob=0.4)  # every set holds most of the giant component
    want = engine_sets(CPUSampler(g, "IC", 1, 8, cpu()), 0, 600)
    assert np.diff(want[0]).mean() > 1000
    eng = fused(g, "IC", 1, 8, batch_width=64, mapping="level")
    eng.pool_factor = 0.001
    eng.list_cap = 64
    eng.lists = [eng.backend.empty((64,), np.uint64) for _ in range(2)]
    same_sets(want, engine_sets(eng, 0, 600))
    assert eng.stats()["regrowths"] >= 2 and eng.list_cap > 64
    assert_clean(eng)
    eng = fused(g, "IC", 1, 8, batch_width=64, mapping="resident")  # blocks stop at a full pool, then resume
    eng.pool_factor = 0.001
    same_sets(want, engine_sets(eng, 0, 600))
    assert eng.stats()["regrowths"] >= 2 and eng.stats()["resident_pieces"] == 1
    assert_clean(eng)
    eng = fused(g, "IC", 1, 8, batch_width=64, mapping="resident")  # levels overflow the shared lists
    coll = eng.collection(0)
    eng.sample_into(coll, 600, float(np.diff(want[0]).mean()))  # the exact mean: the first pool holds the sets
    eng.synchronize()
    same_sets(want, coll.host_sets())
    s = eng.stats()
    assert s["regrowths"] == 0 and s["ring_levels"] > 0  # no relaunch: every level found in the ring overflowed
    assert_clean(eng)


def test_full_graph_sets_p1():
    n = 5000
    g = from_arcs(n, np.arange(n), (np.arange(n) + 1) % n, 1.0)  # every RR set is the whole cycle
    for model in ("IC", "LT"):
        want = engine_sets(CPUSampler(g, model, 1, 0, cpu()), 0, 100)
        assert np.all(np.diff(want[0]) == n)
        for mapping in ("level", "resident"):
            eng = fused(g, model, 1, 0, batch_width=32, levels_per_sync=64, mapping=mapping)
            same_sets(want, engine_sets(eng, 0, 100))


@pytest.mark.parametrize("model,rounds", [("IC", 1), ("LT", 1), ("IC", 3)])
def test_imm_identical_to_cpu_gim(graphs, model, rounds):
    g = graphs["wc"]
    want = imm(g, 10, 0.3, model, rounds=rounds, seed=5, backend="cpu", sampler="gim")
    got = imm(g, 10, 0.3, model, rounds=rounds, seed=5, backend="cuda", sampler="fused",
              sampler_options={"batch_width": 64})
    same_imm(want, got)
    assert got["sampler_stats"]["backend"] == "cuda"
    assert got["sampler_stats"]["traversals"] == (got["theta"] + got["estimate_sets"]["count"]) * rounds


@pytest.fixture(scope="module")
def hub_graphs():
    from tests.im_graphs import hub_heavy_graph, star_graph

    return {"ba": hub_heavy_graph(), "star2k": star_graph(20_000, 0.1)}


@pytest.mark.parametrize("mapping", ["level", "resident"])
@pytest.mark.parametrize("width", [64, 256])
def test_skipping_hubs_equal_unfused(hub_graphs, width, mapping):
    """A lane per slot walks a hub's jumps: hubs of 15,000 in-arcs at weighted cascade (BA-like graph), and a
    star whose hub has about 2,000 live arcs among 20,000 at p = 0.1 for every traversal."""
    for name, rounds, count in (("ba", 1, 20_000), ("ba", 2, 4_000), ("star2k", 1, 1_000)):
        g = hub_graphs[name]
        want = engine_sets(CPUSampler(g, "IC", rounds, 13, cpu()), 0, count)
        eng = fused(g, "IC", rounds, 13, batch_width=width, order="rcm", mapping=mapping)
        same_sets(want, engine_sets(eng, 0, count, batch=count // 2 + 1))
        assert_clean(eng)
        assert eng.stats()["skip_jumps"] > 0


def test_fusing_reads_fewer_edges_at_high_p(graphs):
    eng = fused(graphs["p03"], "IC", 1, 2, batch_width=128, order="rcm")
    engine_sets(eng, 0, 20_000)
    s = eng.stats()
    assert s["edge_reads"] * 10 < s["edge_reads_unfused"] and s["occupancy"] > 0.1


@pytest.mark.parametrize("name,picked", [("wc", "gim"), ("p03", "fused"), ("giant", "fused")])
def test_auto_picks_and_answers_as_cpu_gim(graphs, name, picked):
    """--sampler auto on the GPU (the default): the gim engine probes, the pick (fused at width 256 on constant
    p = 0.3 and where 2 % of the sets are giant, its batches then evicting them to the team pass; gim on weighted
    cascade) runs the phases, the answer is the CPU gim run's and the result records the choice."""
    g = graphs[name]
    want = imm(g, 10, 0.5, "IC", seed=5, backend="cpu", sampler="gim")
    got = imm(g, 10, 0.5, "IC", seed=5, backend="cuda")
    same_imm(want, got)
    choice = got["sampler_choice"]
    assert got["sampler"] == picked and choice["mode"] == "auto" and "note" not in choice
    assert (choice["probe_traversal_mean"] >= choice["threshold"]) == (picked == "fused")
    if picked == "fused":
        assert got["sampler_options"] == {"batch_width": 256}
        assert got["sampler_stats"]["backend"] == "cuda" and got["sampler_stats"]["batch_width"] == 256
        assert got["sampler_stats"]["traversals"] == got["theta"] + got["estimate_sets"]["count"]
        assert (got["sampler_stats"]["evicted"] > 0) == (name == "giant")
    assert got["warm_up_seconds"] > 0 and sum(got["seconds_by_phase"].values()) <= got["seconds"]
