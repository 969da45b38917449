"""DiFuseR on the GPU against the CPU engine: identical registers, counts, scores and seeds.

Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_sketch_cuda.py -v`` (well under
two minutes). Besides what the emulator checks (``tests/test_sketch_emulated.py``), these run many
blocks at once, so the benign races of the design are exercised: in-place pulls reading registers
that other blocks write in the same sweep, cascade blocks setting the same register to -1 and
queueing the same vertex (deduplicated by the level stamps), probes OR-ing the same mark words.
Both mappings of the kernels: the paper's block per vertex and our warp per (vertex, 32 worlds) with
work lists (``gpucore.im.sketch.cuda_warp``), whose lists and fresh bits are filled by many warps at once.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.backend import get_backend
from gpucore.errors import OutOfMemoryError
from gpucore.graph import from_arcs
from gpucore.graph.generators import preferential_attachment
from gpucore.im.sketch import difuser
from gpucore.im.sketch.cpu import CPUEngine
from gpucore.im.sketch.hashing import world_keys
from gpucore.im.sketch.layout import score_table


def cuda():
    return get_backend("cuda")


def pa_graph(nodes=4000, edges=30000, seed=3, low=0.0, high=0.2):
    src, dst = preferential_attachment(nodes, edges, 0.3, seed)
    key = np.unique(src[src != dst] * nodes + dst[src != dst])
    rng = np.random.default_rng(seed)
    return from_arcs(nodes, key // nodes, key % nodes, rng.uniform(low, high, key.size))


def star_graph(leaves=3000):
    """A hub 0 -> every leaf and every leaf -> the hub, p = 0.5: all blocks race on the hub's row."""
    n = leaves + 1
    src = np.concatenate([np.zeros(leaves, dtype=np.int64), np.arange(1, n)])
    dst = np.concatenate([np.arange(1, n), np.zeros(leaves, dtype=np.int64)])
    return from_arcs(n, src, dst, 0.5)


def engines(graph, sampling, worlds, seed=5, mapping="warp", live_bits=True):
    from gpucore.im.sketch.driver import make_engine

    keys = world_keys(seed, worlds, np.arange(worlds), sampling, True)
    return CPUEngine(graph, keys, seed, get_backend("cpu")), make_engine(graph, keys, seed, cuda(), mapping, live_bits)


@pytest.mark.parametrize("mapping,bits", [("warp", True), ("warp", False), ("block", False)])
@pytest.mark.parametrize("sampling", ["xor", "keyed"])
@pytest.mark.parametrize("make,worlds", [(pa_graph, 1024), (star_graph, 1024), (pa_graph, 1536)])
def test_every_operation_equals_cpu(sampling, make, worlds, mapping, bits):
    g = make()
    cpu, gpu = engines(g, sampling, worlds, mapping=mapping, live_bits=bits)
    assert (gpu.mapping, gpu.live_bits) == (mapping, bits)
    table = score_table("linear", g.n)
    table_dev = cuda().asarray(table)
    for e in (cpu, gpu):
        e.fill()
        e.simulate()
    np.testing.assert_array_equal(gpu.host_registers(), cpu.host_registers())
    chosen = np.zeros(g.n, dtype=np.uint8)
    for _ in range(3):
        sc = cpu.scores(table)
        sg = gpu.scores(table_dev)
        np.testing.assert_array_equal(cuda().to_host(sg), sc)
        s = cpu.argmax(sc, chosen)
        assert gpu.argmax(sg, cuda().asarray(chosen)) == s
        candidates = [int(x) for x in np.argsort(-sc, kind="stable")[:16]] + [1, 2, g.n - 1]
        np.testing.assert_array_equal(cuda().to_host(gpu.gains(candidates)), cpu.gains(candidates))
        chosen[s] = 1
        for e in (cpu, gpu):
            e.cascade(s)
        np.testing.assert_array_equal(gpu.host_registers(), cpu.host_registers())
        assert gpu.visited_count() == cpu.visited_count()
        for e in (cpu, gpu):
            e.fill()
            e.simulate()
        np.testing.assert_array_equal(gpu.host_registers(), cpu.host_registers())


@pytest.mark.parametrize("mapping", ["warp", "block"])
@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_whole_runs_equal_cpu(sampling, mapping):
    g = pa_graph(3000, 20000, seed=7, high=0.1)
    kw = dict(registers=1024, sampling=sampling, seed=2, rebuild_threshold=0.01)
    want = difuser(g, 20, backend="cpu", **kw)
    got = difuser(g, 20, backend="cuda", mapping=mapping, **kw)
    assert (got["mapping"], got["live_bits"]) == (mapping, mapping == "warp")
    for key in ("seed_ids", "spread_after_seed", "selection_scores", "rebuild_rounds", "refine", "refine_probes"):
        assert got[key] == want[key], key
    assert got["peak_device_memory"] >= got["register_bytes"]
    assert got["backend"]["backend"] == "cuda"


def test_world_ranges_add_up_on_the_gpu():
    g = pa_graph(2000, 12000, seed=4)
    table = cuda().asarray(score_table("linear", g.n))
    from gpucore.im.sketch.cuda_warp import WarpEngine

    parts = [WarpEngine(g, world_keys(6, 256, np.arange(a, a + 64), "xor", True), 6, cuda()) for a in range(0, 256, 64)]
    _cpu, full = engines(g, "xor", 256, seed=6)
    for e in [full, *parts]:
        e.fill()
        e.simulate()
        e.cascade(11)
    joined = np.concatenate([p.host_registers() for p in parts], axis=1)
    np.testing.assert_array_equal(joined, full.host_registers())
    total = sum(cuda().to_host(p.scores(table)) for p in parts)
    np.testing.assert_array_equal(total, cuda().to_host(full.scores(table)))


def test_registers_beyond_the_device_name_the_bytes():
    g = pa_graph(2000, 12000)
    with pytest.raises(OutOfMemoryError, match="DiFuseR needs about .* lower --registers"):
        difuser(g, 5, registers=1 << 22, backend="cuda", memory_limit=1 << 30)


def test_live_bits_only_when_they_fit():
    """The warp mapping's table of coins is used when it fits the budget, and skipped (same answer)
    when only the solve without it does."""
    from gpucore.im.sketch.layout import bytes_needed

    g = pa_graph(3000, 20000, seed=7, high=0.1)
    kw = dict(registers=1024, sampling="keyed", seed=2)
    full = difuser(g, 8, backend="cuda", **kw)
    without = bytes_needed(g.n, g.m, 1024, True, True)
    tight = difuser(g, 8, backend="cuda", memory_limit=without + 1, **kw)
    assert full["live_bits"] and not tight["live_bits"]
    assert tight["seed_ids"] == full["seed_ids"] and tight["spread_after_seed"] == full["spread_after_seed"]
    assert full["bytes_needed"] == bytes_needed(g.n, g.m, 1024, True, True, live_bits=True) > without
