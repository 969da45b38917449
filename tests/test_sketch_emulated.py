"""The DiFuseR CUDA kernels run in the CPU emulator (``gpucore.im.sketch.emulated``) against the CPU engine.

The unmodified ``sketch_build.cu`` / ``sketch_select.cu`` run through the real driver code of
``gpucore.im.sketch.cuda`` on NumPy arrays: arc hashes, Fill, Simulate sweeps (with and without the
dirty-vertex skip), Cascade levels with the merged queue and stamps, the exact-gain probes, Count, the score sums and
the argmax must give the CPU engine's registers, counts, scores and seeds exactly, with the worlds in
one launch or in slices of 32, and with random thread interleavings. Both mappings: the paper's block
per vertex (``sketch_build.cu``, ``sketch_select.cu``) and our warp per (vertex, 32 worlds) with work
lists (``sketch_warp.cu``). Races between blocks are left to ``tests/gpu``.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpucore.im.sketch.driver as driver
from gpucore.backend import get_backend
from gpucore.graph import from_arcs
from gpucore.im.sketch import difuser
from gpucore.im.sketch.arcs import arc_hashes
from gpucore.im.sketch.cpu import CPUEngine
from gpucore.im.sketch.emulated import emulated_engine
from gpucore.im.sketch.hashing import live, murmur_seed, world_keys
from gpucore.im.sketch.layout import score_table
from gpucore.kernels.emulator import available

pytestmark = pytest.mark.skipif(not available(), reason="g++ not available")


def graph(n=60, arcs=320, seed=0, high=0.5):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, arcs), rng.integers(0, n, arcs)
    key = np.unique(src[src != dst] * n + dst[src != dst])
    return from_arcs(n, key // n, key % n, rng.uniform(0.0, high, key.size))


def pair(g, sampling, worlds=96, seed=7, **kw):
    keys = world_keys(seed, worlds, np.arange(worlds), sampling, True)
    return CPUEngine(g, keys, seed, get_backend("cpu")), emulated_engine(g, keys, seed, **kw)


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_local_graph_and_hashes_equal_cpu(sampling):
    """sk_arc_hashes and sk_live_any, compacted on the device, give the CPU's local graph: the same
    arcs with the same words (xor: the hashes of the kept arcs, checked against the definition)."""
    g = graph(high=0.05)
    cpu, emu = pair(g, sampling, worlds=32)
    for name in ("indptr", "dst", "thr", "words"):
        np.testing.assert_array_equal(getattr(emu.local, name), getattr(cpu.local, name), name)
    assert emu.local.sizes() == cpu.local.sizes() and 0 < cpu.local.arcs < g.m  # some arcs dropped
    if sampling == "xor":
        full = arc_hashes(g.out_indptr, g.out_dst, np.uint64(murmur_seed(7)))
        assert set(cpu.local.words.tolist()) <= set(full.tolist())


def test_anchored_probes_stop_where_the_reach_is_the_anchors():
    """A cycle with p = 1: every vertex reaches every other in every world, so each probe after the
    batch's first (the anchor) stops in every world once it meets the anchor, and still counts the
    whole reach."""
    n = 40
    g = from_arcs(n, np.arange(n), (np.arange(n) + 1) % n, 1.0)
    cpu, emu = pair(g, "keyed", worlds=64, mapping="warp")
    for e in (cpu, emu):
        e.fill()
        e.simulate()
    batch = [5, 17, 30]
    np.testing.assert_array_equal(emu.gains(batch), [n * 64] * 3)
    np.testing.assert_array_equal(emu.done, [0xFFFFFFFF, 0xFFFFFFFF])  # the last probe: done everywhere
    assert int(emu.marks.astype(np.uint64).sum()) > 0 and int(np.unpackbits(emu.marks.view(np.uint8)).sum()) < n * 64


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_live_bits_are_the_coins(sampling):
    """sk_live_bits: bit l of word [g][e] is arc e's coin in world 32 g + l, as the CPU's ``live``."""
    g = graph(high=0.3)
    cpu, emu = pair(g, sampling, worlds=96, mapping="warp")
    keys = world_keys(7, 96, np.arange(96), sampling, True).live
    m = cpu.local.arcs
    table = emu.bits.reshape(3, m)
    for e in range(m):
        for j in range(96):
            coin = live(sampling == "keyed", keys[j], np.uint64(cpu.local.words[e]), cpu.local.thr[e])
            assert bool((table[j // 32, e] >> (j % 32)) & 1) == bool(coin), (e, j)


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
@pytest.mark.parametrize("kw", [{"mapping": "block", "slice_width": 32},
                                {"mapping": "block", "slice_width": 1024, "blocks": 3},
                                {"mapping": "block", "slice_width": 64, "schedule_seed": 5},
                                {"mapping": "warp"}, {"mapping": "warp", "blocks": 2, "warp_block": 32},
                                {"mapping": "warp", "slice_width": 32, "schedule_seed": 5},
                                {"mapping": "warp", "live_bits": False},
                                {"mapping": "warp", "live_bits": False, "schedule_seed": 7}])
def test_every_operation_equals_cpu(sampling, kw):
    g = graph()
    cpu, emu = pair(g, sampling, **kw)
    table = score_table("linear", g.n)
    for e in (cpu, emu):
        e.fill()
    np.testing.assert_array_equal(emu.host_registers(), cpu.host_registers())
    for e in (cpu, emu):
        e.simulate()
    np.testing.assert_array_equal(emu.host_registers(), cpu.host_registers())
    chosen = np.zeros(g.n, dtype=np.uint8)
    for s in (3, 17, 3):
        for e in (cpu, emu):
            e.cascade(s)
        np.testing.assert_array_equal(emu.host_registers(), cpu.host_registers())
        assert emu.visited_count() == cpu.visited_count() == int((cpu.registers == -1).sum())
        sc_cpu, sc_emu = cpu.scores(table), emu.scores(table)
        np.testing.assert_array_equal(sc_emu, sc_cpu)
        chosen[s] = 1
        assert emu.argmax(sc_emu, chosen) == cpu.argmax(sc_cpu, chosen)
        everyone = list(range(g.n))
        np.testing.assert_array_equal(emu.gains(everyone), cpu.gains(everyone))
        for e in (cpu, emu):
            e.fill()
            e.simulate()
        np.testing.assert_array_equal(emu.host_registers(), cpu.host_registers())


def test_argmax_ties_and_exclusion():
    g = graph(n=700, arcs=1400)  # more vertices than one argmax block covers
    _cpu, emu = pair(g, "xor", worlds=32)
    scores = np.zeros(g.n, dtype=np.int64)
    scores[[650, 300, 301]] = 5
    chosen = np.zeros(g.n, dtype=np.uint8)
    assert emu.argmax(scores, chosen) == 300
    chosen[300] = 1
    assert emu.argmax(scores, chosen) == 301
    chosen[301] = chosen[650] = 1
    assert emu.argmax(scores, chosen) == 0
    chosen[:] = 1
    assert emu.argmax(scores, chosen) == -1


@pytest.mark.parametrize("mapping", ["block", "warp"])
def test_long_chain_many_levels_and_sweeps(mapping):
    """A path 0 -> 1 -> ... -> 79 with p = 1: 79 cascade levels, 80 sweeps, every world alike."""
    n = 80
    g = from_arcs(n, np.arange(n - 1), np.arange(1, n), 1.0)
    cpu, emu = pair(g, "xor", worlds=32, mapping=mapping)
    for e in (cpu, emu):
        e.fill()
    assert emu.simulate() >= 2
    cpu.simulate()
    np.testing.assert_array_equal(emu.host_registers(), cpu.host_registers())
    emu.cascade(0)
    assert emu.visited_count() == n * 32
    assert emu.level == n  # one level per hop, and the last one finds nothing


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_whole_runs_equal_cpu(monkeypatch, sampling):
    g = graph(n=50, arcs=260, seed=4)
    want = difuser(g, 5, registers=64, sampling=sampling, seed=3, backend="cpu", rebuild_threshold=0.0)
    for mapping, bits in (("block", False), ("warp", False), ("warp", True)):
        monkeypatch.setattr(driver, "make_engine", lambda graph, keys, seed, be, mapping, live_bits: emulated_engine(
            graph, keys, seed, mapping=mapping, slice_width=32, live_bits=bits))
        got = difuser(g, 5, registers=64, sampling=sampling, seed=3, backend="cpu", rebuild_threshold=0.0,
                      mapping=mapping)
        for key in ("seed_ids", "spread_after_seed", "selection_scores", "rebuild_rounds", "refine", "refine_probes"):
            assert got[key] == want[key], (mapping, key)
        assert (got["mapping"], got["live_bits"]) == (mapping, bits)
    assert want["refine"] == 32


def test_warp_sweeps_pull_only_what_can_change(monkeypatch):
    """Our mapping's work lists: on the path 0 -> 1 -> ... -> 59 (p = 1, 64 worlds), the list of each
    sweep after the first is exactly the in-neighbours of the vertices that grew in the sweep before
    (each once), the lists shrink to nothing, and the fixpoint is the CPU's."""
    n = 60
    g = from_arcs(n, np.arange(n - 1), np.arange(1, n), 1.0)
    cpu, emu = pair(g, "keyed", worlds=64, mapping="warp")
    steps = []
    stale = emu.k_stale

    def recording(grid, block, args):
        stale(grid, block, args)
        changed, listed = (int(x) for x in emu.sizes)
        steps.append((emu.changed_list[:changed].tolist(), emu.list[:listed].tolist()))

    monkeypatch.setattr(emu, "k_stale", recording)
    for e in (cpu, emu):
        e.fill()
    sweeps = emu.simulate()
    cpu.simulate()
    np.testing.assert_array_equal(emu.host_registers(), cpu.host_registers())
    assert sweeps >= 3 and len(steps) == sweeps - 1
    for changed, listed in steps:
        assert len(set(changed)) == len(changed) and len(set(listed)) == len(listed)
        assert sorted(listed) == sorted(v - 1 for v in changed if v > 0)
    assert len(steps[0][1]) > len(steps[-1][1])


@pytest.mark.parametrize("mapping,bits", [("block", False), ("warp", False), ("warp", True)])
@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_full_blocks_of_1024_worlds(sampling, mapping, bits):
    """The GPU's shape: 1024 threads (32 warps) per block, reductions over 32 warp partials."""
    g = graph(n=14, arcs=50, seed=9, high=0.9)
    kw = {"live_bits": bits} if mapping == "warp" else {}
    cpu, emu = pair(g, sampling, worlds=1024, blocks=2, mapping=mapping, **kw)
    table = score_table("log", g.n)
    for e in (cpu, emu):
        e.fill()
        e.simulate()
        e.cascade(2)
    np.testing.assert_array_equal(emu.host_registers(), cpu.host_registers())
    assert emu.visited_count() == cpu.visited_count()
    np.testing.assert_array_equal(emu.scores(table), cpu.scores(table))
    np.testing.assert_array_equal(emu.gains([0, 5, 2]), cpu.gains([0, 5, 2]))
