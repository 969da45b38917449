"""The fused CUDA sampler (``im_fused.cu`` + ``gpucore.im.fused.cuda``) in the CPU emulator.

The unmodified kernels run through the real driver on NumPy arrays and must yield the sets of the
unfused sampler and of the CPU fused sampler set for set: every width, model, round count, order,
tail and dispatch order; the paths that grow the output pool and rebuild an overflowed frontier
list from the masks; random interleavings of the threads of a block; whole IMM runs through the
sampler registry (the emulated sampler registered beside ``gim`` and ``fused``). Both mappings
run: ``level`` (device-wide levels) and ``resident`` (a block per batch, its levels in one launch),
and ``auto`` picks between them by the expected set size. After every call the batch state must be
clean (no mask bit, slot or visited word left behind). Races between blocks are for
``tests/gpu/test_im_fused_cuda.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.backend import get_backend
from gpucore.errors import GpucoreError, OutOfMemoryError
from gpucore.im import imm
from gpucore.im.cpu import CPUSampler
from gpucore.im.engine import SAMPLERS
from gpucore.im.fused.cpu import FusedCPUSampler
from gpucore.im.fused.emulated import available, emulated_fused_sampler
from gpucore.im.rrsets import ESTIMATE_OFFSET
from gpucore.im.sampling import canonical, engine_sets
from tests.im_graphs import dense_graph, hubs_graph, pa_graph, star_graph, wc_graph
from tests.test_im_fused import same_imm

pytestmark = pytest.mark.skipif(not available(), reason="g++ not available")
CPU = get_backend("cpu")


@pytest.fixture(scope="module")
def graphs():
    return {"wc": wc_graph(n=150, deg=5), "dense": dense_graph(n=80, p=0.25, density=0.2)}


def same(a, b):
    a, b = canonical(*a), canonical(*b)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def assert_clean(eng):
    assert not eng.vis.any() and not eng.nxt.any() and not eng.occ.any() and not eng.tcount.any()
    assert not eng.gcnt.any() and not eng.done.any() and not eng.act.any()


@pytest.mark.parametrize("model,rounds", [("IC", 1), ("LT", 1), ("IC", 2), ("LT", 2)])
@pytest.mark.parametrize("width", [32, 64, 128, 256])
def test_equal_to_unfused_and_cpu_fused(graphs, model, rounds, width):
    for g in graphs.values():
        j0 = ESTIMATE_OFFSET if width == 64 else 0
        want = engine_sets(CPUSampler(g, model, rounds, 9, CPU), j0, 211)
        for order, tail, sorted_sources, mapping in (("none", "refill", True, "level"),
                                                     ("none", "refill", True, "resident"),
                                                     ("rcm", "none", False, "resident"),
                                                     ("community", "refill", False, "level")):
            eng = emulated_fused_sampler(g, model, rounds, 9, batch_width=width, order=order, tail=tail,
                                        sorted_sources=sorted_sources, max_batches=2, levels_per_sync=3,
                                        mapping=mapping)
            same(want, engine_sets(eng, j0, 211, batch=90))  # 90, 90, 31 sets: no multiple of the width
            assert_clean(eng)
            assert eng.stats()["traversals"] == 211 * rounds
        cpu = FusedCPUSampler(g, model, rounds, 9, CPU, batch_width=width)
        same(want, engine_sets(cpu, j0, 211))


@pytest.mark.parametrize("mapping", ["level", "resident"])
@pytest.mark.parametrize("width", [32, 256])
def test_skipping_hubs_equal_to_unfused_and_cpu_fused(width, mapping):
    """A lane per slot walks the hub's jumps (many walks of many jumps on the star): the unfused sets, and the
    counters of the CPU twin (the same jumps, the same rows read)."""
    for g, rounds in ((hubs_graph(), 2), (star_graph(300, 0.125), 1)):
        want = engine_sets(CPUSampler(g, "IC", rounds, 6, CPU), 0, 130)
        eng = emulated_fused_sampler(g, "IC", rounds, 6, batch_width=width, order="rcm", max_batches=2,
                                     levels_per_sync=2, poison=True, mapping=mapping)
        same(want, engine_sets(eng, 0, 130, batch=70))
        assert_clean(eng)
        cpu = FusedCPUSampler(g, "IC", rounds, 6, CPU, batch_width=width, order="rcm")
        cpu.sample_into(cpu.collection(0), 130, 2.0 * np.diff(want[0]).mean())  # no rerun: each jump counted once
        a, b = cpu.stats(), eng.stats()
        assert a["regrowths"] == 0
        assert a["skip_jumps"] == b["skip_jumps"] > 0 and a["edge_reads_unfused"] == b["edge_reads_unfused"]


# (max_batches, width, levels_per_sync, tail, model): every pair of the first four options' values
REUSE = [(1, 32, 1, "none", "IC", "level"), (1, 64, 4, "refill", "IC", "level"), (2, 32, 4, "refill", "LT", "level"),
         (2, 64, 1, "refill", "IC", "level"), (2, 64, 4, "none", "LT", "level"), (1, 32, 1, "none", "IC", "resident"),
         (2, 64, 1, "refill", "IC", "resident"), (2, 32, 1, "refill", "LT", "resident")]


@pytest.mark.parametrize("max_batches,width,levels,tail,model,mapping", REUSE)
def test_batches_reloaded_many_times(max_batches, width, levels, tail, model, mapping):
    """Fewer batches than a call needs: every batch is extracted and reloaded many times per call, on a
    PA graph at p = 0.1, calls of a few hundred sets, garbage in every uninitialised array. This path
    failed on the H100 through nvcc's optimiser (a load of tbase[g] kept across a __syncthreads), which
    g++ does not reproduce: tests/gpu/test_im_fused_cuda.py::test_batches_reloaded_many_times shows that."""
    g = pa_graph(2000, 20_000, seed=12, prob=0.1 if model == "IC" else None)
    want = engine_sets(CPUSampler(g, model, 1, 3, CPU), 5, 420)
    eng = emulated_fused_sampler(g, model, 1, 3, sms=4, poison=True, max_batches=max_batches, batch_width=width,
                                 levels_per_sync=levels, tail=tail, sorted_sources=width == 64, mapping=mapping)
    same(want, engine_sets(eng, 5, 420, batch=300))  # 300 and 120 sets: every batch loaded 2 to 10 times a call
    assert_clean(eng)
    s = eng.stats()
    assert s["traversals"] == 420 and s["extractions"] >= 420 // width
    assert s["resident_pieces"] == (2 if mapping == "resident" else 0)
    assert s["sorted_pieces"] == (2 if width == 64 and mapping == "level" else 0)  # FusedOptions.sorts


@pytest.mark.parametrize("mapping", ["level", "resident"])
def test_successive_calls_of_any_size(graphs, mapping):
    """Calls smaller than a batch, no multiple of the width, one set, then larger ones, on one sampler:
    the batch state, counters and pool start afresh each call and the sets continue at the next j."""
    g = graphs["wc"]
    want = engine_sets(CPUSampler(g, "IC", 2, 7, CPU), 0, 1 + 7 + 70 + 130 + 200)
    eng = emulated_fused_sampler(g, "IC", 2, 7, sms=2, poison=True, max_batches=2, batch_width=64,
                                 levels_per_sync=2, mapping=mapping)
    coll = eng.collection(0)
    for count in (1, 7, 70, 130, 200):
        eng.sample_into(coll, count, coll.mean_size)
        assert_clean(eng)
    same(want, coll.host_sets())
    assert eng.stats()["traversals"] == 2 * 408


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_pool_growth_and_list_rebuild(graphs, model):
    g = graphs["dense"]
    want = engine_sets(CPUSampler(g, model, 1, 4, CPU), 0, 300)
    eng = emulated_fused_sampler(g, model, 1, 4, batch_width=32, max_batches=3, levels_per_sync=1, mapping="level")
    eng.pool_factor = 0.01  # the first pool holds a fraction of the sets
    eng.list_cap = 4  # a frontier list of 4 entries overflows at once
    eng.lists = [np.empty(4, np.uint64), np.empty(4, np.uint64)]
    same(want, engine_sets(eng, 0, 300))
    assert_clean(eng)
    s = eng.stats()
    assert s["regrowths"] >= 2 and eng.list_cap > 4


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_resident_pool_growth_resumes_every_batch(graphs, model):
    """A pool far too small: resident blocks stop when their sets do not fit, and each relaunch on a larger
    pool resumes every batch where it stopped (a level first, then the extraction it could not do)."""
    g = graphs["dense"]
    want = engine_sets(CPUSampler(g, model, 1, 4, CPU), 0, 300)
    eng = emulated_fused_sampler(g, model, 1, 4, batch_width=32, max_batches=3, poison=True, mapping="resident")
    eng.pool_factor = 0.002
    launches = []
    kernel = eng.k_resident

    def spy(grid, block, args, kernel=kernel):
        launches.append(int(args[0]))  # first: 1 for the launch that loads, 0 for a resume
        return kernel(grid, block, args)

    eng.k_resident = spy
    same(want, engine_sets(eng, 0, 300))
    assert_clean(eng)
    s = eng.stats()
    assert s["regrowths"] >= 2 and launches.count(1) == 1 and launches.count(0) == s["regrowths"]
    assert s["frontier_peak"] == 0 and s["levels"] > 0 and s["ring_levels"] >= s["regrowths"]


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("entries", [2, 1024])
def test_resident_frontier_lists_and_their_overflow(graphs, model, entries):
    """The resident mapping expands the levels listed in its shared frontier lists; a list too small for a
    level makes the next level find its pending vertices in the ring, and the sets stay the same. (Rows of
    about 30 arcs: IC levels queue their entries for whole warps, a 2-entry queue overflowing in most levels.)"""
    g = graphs["dense"]
    want = engine_sets(CPUSampler(g, model, 1, 4, CPU), 0, 300)
    eng = emulated_fused_sampler(g, model, 1, 4, batch_width=32, max_batches=3, mapping="resident",
                                 resident_list=entries)
    eng.pool_factor = 50.0  # no pool growth: every launch is a first one
    same(want, engine_sets(eng, 0, 300))
    assert_clean(eng)
    s = eng.stats()
    assert s["resident_pieces"] == 1 and s["regrowths"] == 0
    if entries == 2:
        assert s["ring_levels"] > s["levels"] // 2  # a 2-entry list overflows in many levels of every batch
    else:
        assert s["ring_levels"] == 0  # a first launch loads its roots into a list: no level scans the ring


def test_auto_mapping_follows_the_expected_set_size(graphs):
    """auto: a piece expected below RESIDENT_BELOW elements per traversal runs resident, others level."""
    from gpucore.im.fused.cuda import RESIDENT_BELOW

    g = graphs["wc"]
    want = engine_sets(CPUSampler(g, "IC", 2, 7, CPU), 0, 200)
    eng = emulated_fused_sampler(g, "IC", 2, 7, max_batches=2, batch_width=32)
    assert eng.stats()["mapping"] == "auto"
    coll = eng.collection(0)
    eng.sample_into(coll, 100, 2 * RESIDENT_BELOW - 1)  # hint: elements per set of 2 rounds
    assert eng.stats()["resident_pieces"] == 1
    eng.sample_into(coll, 100, 2 * RESIDENT_BELOW)
    assert eng.stats()["resident_pieces"] == 1 and eng.stats()["levels"] > 0
    same(want, coll.host_sets())
    with pytest.raises(GpucoreError, match="mapping 'blocks': choose one of auto, level, resident"):
        emulated_fused_sampler(g, "IC", mapping="blocks")


def test_extraction_by_many_blocks_sparse_and_dense(graphs):
    """Several blocks per batch write the sets; small footprints walk the ring, large ones all words."""
    for name, g in (("sparse", wc_graph(n=3000, deg=2)), ("dense", graphs["dense"])):
        want = engine_sets(CPUSampler(g, "IC", 1, 8, CPU), 0, 300)
        eng = emulated_fused_sampler(g, "IC", 1, 8, batch_width=64, max_batches=2, sms=4, mapping="level")
        seen, grids = set(), set()
        extract = eng.k_extract

        def spy(grid, block, args, extract=extract, eng=eng, seen=seen, grids=grids):
            grids.add(grid)
            seen.update(int(d) for m, d in zip(eng.emode[: grid[1]], eng.edense[: grid[1]]) if m == 2)
            return extract(grid, block, args)

        eng.k_extract = spy
        same(want, engine_sets(eng, 0, 300))
        assert_clean(eng)
        assert min(x for x, _ in grids) == 8  # 4 blocks per SM over 2 batches
        assert (1 if name == "dense" else 0) in seen


@pytest.mark.parametrize("mapping", ["level", "resident"])
@pytest.mark.parametrize("schedule", [1, 2])
def test_random_interleavings(graphs, schedule, mapping):
    g = graphs["dense"]
    for model in ("IC", "LT"):
        want = engine_sets(CPUSampler(g, model, 1, 6, CPU), 0, 120)
        eng = emulated_fused_sampler(g, model, 1, 6, batch_width=64, max_batches=2, schedule=schedule,
                                     mapping=mapping)
        same(want, engine_sets(eng, 0, 120))
        assert_clean(eng)


@pytest.mark.parametrize("mapping", ["level", "resident"])
def test_counters_match_the_cpu_twin(graphs, mapping):
    g = graphs["dense"]
    cpu = FusedCPUSampler(g, "IC", 1, 3, CPU, batch_width=64, workers=1, sorted_sources=False)
    emu = emulated_fused_sampler(g, "IC", 1, 3, batch_width=64, max_batches=1, sorted_sources=False, mapping=mapping)
    engine_sets(cpu, 0, 64)
    _, members = engine_sets(emu, 0, 64)
    a, b = cpu.stats(), emu.stats()
    # one batch of exactly 64 traversals: the same sets, the same unfused cost, a fused cost below it
    assert a["edge_reads_unfused"] == b["edge_reads_unfused"] and a["traversals"] == b["traversals"] == 64
    assert b["edge_reads"] < b["edge_reads_unfused"] and b["entries"] > 0 and 0 < b["occupancy"] <= 1
    # every (vertex, traversal) pair is expanded once, by whichever entry (or lane group) takes its bit
    assert b["mask_bits"] == len(members)


@pytest.mark.parametrize("model,rounds,mapping", [("IC", 1, "level"), ("LT", 1, "level"), ("IC", 2, "level"),
                                                  ("IC", 1, "resident"), ("LT", 2, "auto")])
def test_imm_identical_cpu_and_emulated_cuda(graphs, model, rounds, mapping, monkeypatch):
    g = graphs["wc"]
    want = imm(g, 4, 0.5, model, rounds=rounds, seed=2, backend="cpu", sampler="gim")
    monkeypatch.setitem(SAMPLERS, "fused-emulated", ("gpucore.im.fused.emulated", "emulated_fused_sampler"))
    opts = {"batch_width": 128, "max_batches": 2, "levels_per_sync": 2, "mapping": mapping}
    got = imm(g, 4, 0.5, model, rounds=rounds, seed=2, backend="cpu", sampler="fused-emulated", sampler_options=opts)
    same_imm(want, got)
    cpu = imm(g, 4, 0.5, model, rounds=rounds, seed=2, backend="cpu", sampler="fused", sampler_options={"batch_width": 128})
    # the same sets, counted alike: every member's in-row is what the unfused sampler would read
    for key in ("traversals", "edge_reads_unfused"):
        assert got["sampler_stats"][key] == cpu["sampler_stats"][key], key
    assert got["sampler_stats"]["backend"] == "cuda"


@pytest.mark.parametrize("rounds", [1, 2])
@pytest.mark.parametrize("width", [32, 64, 256])
def test_evicted_traversals_rerun_by_the_team_pass(width, rounds):
    """Level-mapping batches evict their long-running traversals (every one still running a level after it was
    loaded) and the team pass runs each again from its root: the unfused sets, on a PA graph
    where a minority of the sets is large and on the hubs graph (skipping rows and rows too long for one
    thread, which the team pass hands to whole warps); garbage in every uninitialised array, the batches and
    the team's bitmaps clean afterwards."""
    for g, count in ((pa_graph(2000, 20_000, seed=12, prob=0.1), 420), (hubs_graph(), 300)):
        want = engine_sets(CPUSampler(g, "IC", rounds, 3, CPU), 5, count)
        eng = emulated_fused_sampler(g, "IC", rounds, 3, sms=4, poison=True, max_batches=1, batch_width=width,
                                     levels_per_sync=2, mapping="level", evict="always", evict_after=1)
        same(want, engine_sets(eng, 5, count, batch=count - 60))
        assert_clean(eng)
        s = eng.stats()
        assert s["traversals"] == count * rounds and s["evicted"] > 0 and not eng.team_bitmaps.any()


def test_team_pass_alone_with_pool_growth():
    """The team pass over every traversal of a call, into a pool of 16 entries: launches on ever larger pools
    until every set is written, each the unfused one; one team block and many."""
    g = pa_graph(2000, 20_000, seed=12, prob=0.1)
    want = canonical(*engine_sets(CPUSampler(g, "IC", 1, 3, CPU), 0, 200))
    for sms in (1, 4):
        eng = emulated_fused_sampler(g, "IC", 1, 3, sms=sms, max_batches=1, batch_width=32, poison=True)
        starts, sizes = np.empty(200, np.int64), np.full(200, -1, np.int32)
        eng.pool, eng.team_blocks = np.empty(16, np.int32), 0
        eng.ctl.fill(0)
        eng.counters.fill(0)
        eng._team(np.arange(200, dtype=np.int64), 0, starts, sizes)
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        nodes = np.concatenate([eng.pool[a : a + z] for a, z in zip(starts, sizes)])
        got = canonical(offsets, nodes)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert eng._stats.counts["regrowths"] >= 2 and not eng.team_bitmaps.any()


def test_eviction_auto_only_where_traversals_are_a_small_share():
    """auto evicts in level pieces whose expected traversal is below EVICT_BELOW x n; never for LT (the team
    pass is IC's); the option is checked."""
    from gpucore.im.fused.cuda import EVICT_AFTER, EVICT_BELOW

    g = pa_graph(2000, 20_000, seed=12, prob=0.1)
    eng = emulated_fused_sampler(g, "IC", 1, 3)
    assert eng._evict_after(0.5 * EVICT_BELOW * g.n) == EVICT_AFTER and eng._evict_after(EVICT_BELOW * g.n) == 0
    assert emulated_fused_sampler(g, "IC", 1, 3, evict="never")._evict_after(1.0) == 0
    assert emulated_fused_sampler(g, "IC", 1, 3, evict="always")._evict_after(float(g.n)) == EVICT_AFTER
    assert emulated_fused_sampler(g, "LT", 1, 3, evict="always")._evict_after(1.0) == 0
    with pytest.raises(GpucoreError, match="evict 'sometimes'"):
        emulated_fused_sampler(g, "IC", evict="sometimes")
    with pytest.raises(GpucoreError, match="evict_after 0"):
        emulated_fused_sampler(g, "IC", evict_after=0)


def test_masks_beyond_memory_name_the_bytes(graphs):
    with pytest.raises(OutOfMemoryError, match=r"one batch of 256 traversals needs [0-9.]+ KiB of masks for 150 "):
        emulated_fused_sampler(graphs["wc"], "IC", batch_width=256, free_bytes=50_000)
    with pytest.raises(GpucoreError, match="--batch-width 100"):
        emulated_fused_sampler(graphs["wc"], "IC", batch_width=100)
