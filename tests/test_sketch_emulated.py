"""The DiFuseR CUDA kernels run in the CPU emulator (``gpucore.im.sketch.emulated``) against the CPU engine.

The unmodified ``sketch_build.cu`` / ``sketch_select.cu`` run through the real driver code of
``gpucore.im.sketch.cuda`` on NumPy arrays: arc hashes, Fill, Simulate sweeps (with and without the
dirty-vertex skip), Cascade levels with the merged queue and stamps, the exact-gain probes, Count, the score sums and
the argmax must give the CPU engine's registers, counts, scores and seeds exactly, with the worlds in
one launch or in slices of 32, and with random thread interleavings. Races between blocks are left
to ``tests/gpu``.
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
from gpucore.im.sketch.hashing import murmur_seed, world_keys
from gpucore.im.sketch.layout import score_table
from gpucore.kernels.emulator import available

pytestmark = pytest.mark.skipif(not available(), reason="g++ not available")


def graph(n=60, arcs=320, seed=0, high=0.5):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, arcs), rng.integers(0, n, arcs)
    key = np.unique(src[src != dst] * n + dst[src != dst])
    return from_arcs(n, key // n, key % n, rng.uniform(0.0, high, key.size))


def pair(g, sampling, worlds=96, seed=7, **kw):
    keys = world_keys(seed, worlds, 0, worlds, sampling, True)
    return CPUEngine(g, keys, seed, get_backend("cpu")), emulated_engine(g, keys, seed, **kw)


def test_arc_hashes_equal_cpu():
    g = graph()
    _cpu, emu = pair(g, "xor")
    np.testing.assert_array_equal(emu.hashes, arc_hashes(g.out_indptr, g.out_dst, np.uint64(murmur_seed(7))))


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
@pytest.mark.parametrize("kw", [{"slice_width": 32}, {"slice_width": 1024, "blocks": 3},
                                {"slice_width": 64, "schedule_seed": 5}])
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


def test_long_chain_many_levels_and_sweeps():
    """A path 0 -> 1 -> ... -> 79 with p = 1: 79 cascade levels, 80 sweeps, every world alike."""
    n = 80
    g = from_arcs(n, np.arange(n - 1), np.arange(1, n), 1.0)
    cpu, emu = pair(g, "xor", worlds=32)
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
    monkeypatch.setattr(driver, "make_engine", lambda graph, keys, seed, be: emulated_engine(graph, keys, seed,
                                                                                            slice_width=32))
    got = difuser(g, 5, registers=64, sampling=sampling, seed=3, backend="cpu", rebuild_threshold=0.0)
    for key in ("seed_ids", "spread_after_seed", "selection_scores", "rebuild_rounds", "refine"):
        assert got[key] == want[key], key
    assert want["refine"] == 32


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_full_blocks_of_1024_worlds(sampling):
    """The GPU's shape: 1024 threads (32 warps) per block, reductions over 32 warp partials."""
    g = graph(n=14, arcs=50, seed=9, high=0.9)
    cpu, emu = pair(g, sampling, worlds=1024, blocks=2)
    table = score_table("log", g.n)
    for e in (cpu, emu):
        e.fill()
        e.simulate()
        e.cascade(2)
    np.testing.assert_array_equal(emu.host_registers(), cpu.host_registers())
    assert emu.visited_count() == cpu.visited_count()
    np.testing.assert_array_equal(emu.scores(table), cpu.scores(table))
    np.testing.assert_array_equal(emu.gains([0, 5, 2]), cpu.gains([0, 5, 2]))
