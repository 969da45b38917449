"""The oracle's CUDA kernels and their Python driver, run by the sequential C++ emulator.

``gpucore.oracle.emulated`` compiles the unmodified ``oracle_*.cu`` with g++ and runs every launch
on the CPU (blocks in turn, the threads of a block as contexts; the kernels of oracle_ic.cu and
oracle_lt.cu use no barriers, so each thread simply runs to its end). These tests of the "level"
IC kernels and LT check, on a machine without a GPU, that the kernels and the driver give exactly the CPU
reference's activated sets: 64-simulation words with a partial last word, several batches, heavy
(block-per-entry) nodes, cascades deeper than one host synchronisation, LT crossings, grid-stride
loops with odd grids. The same comparisons run on a real GPU in tests/gpu/test_oracle_cuda.py; the
other IC variants (oracle_icw.cu) are tested in tests/test_oracle_variants.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph import from_arcs
from gpucore.oracle import emulated as emulator, mc_world_seeds, simulate_worlds, spread
from gpucore.oracle.cuda import LEVELS_PER_SYNC, LIGHT_MAX, ic_counts_gpu, lt_counts_gpu
from tests.test_oracle_exact import graph_of, random_arcs

pytestmark = pytest.mark.skipif(not emulator.available(), reason="g++ not available for the kernel emulator")


@pytest.fixture(scope="module")
def engine():
    return emulator.emulator_engine(blocks=3, block=32)


def hub_graph():
    """Node 0 has LIGHT_MAX + 40 out-arcs (heavy kernel); a sparse random part behind it."""
    rng = np.random.default_rng(21)
    n = LIGHT_MAX + 60
    src = [0] * (LIGHT_MAX + 40)
    dst = list(range(1, LIGHT_MAX + 41))
    prob = list(rng.uniform(0.01, 0.2, len(src)))
    pairs = set()
    while len(pairs) < 3 * n:
        u, v = (int(x) for x in rng.integers(1, n, 2))
        if u != v:
            pairs.add((u, v))
    for u, v in sorted(pairs):
        src.append(u)
        dst.append(v)
        prob.append(float(rng.uniform(0.01, 0.3)))
    return from_arcs(n, src, dst, prob)


def path_graph(n=3 * LEVELS_PER_SYNC + 5):
    return from_arcs(n, list(range(n - 1)), list(range(1, n)), [0.97] * (n - 1))


def graphs():
    rng = np.random.default_rng(4)
    return {
        "random": graph_of(40, random_arcs(40, 200, rng, 0.05, 0.6)),
        "hub": hub_graph(),
        "path": path_graph(),
    }


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("name", ["random", "hub", "path"])
def test_emulated_sets_equal_cpu(engine, name, model):
    g = graphs()[name]
    seeds = [0, 5] if name != "path" else [0]
    worlds = [int(w) for w in mc_world_seeds(77, 130)]  # 3 words, the last one partial (2 simulations)
    cpu = simulate_worlds(g, seeds, model, worlds)
    gpu = simulate_worlds(g, seeds, model, worlds, backend=engine)
    for a, b in zip(cpu, gpu):
        assert np.array_equal(a.active, b.active), (name, model, a.world_seed)
    if name == "path" and model == "IC":
        assert max(r.count for r in cpu) > LEVELS_PER_SYNC + 1  # deeper than one synchronisation chunk


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_emulated_spread_counts_equal_cpu(engine, model):
    g = graphs()["hub"]
    a = spread(g, [0, 3, 9], model, runs=200, seed=5, backend="cpu")
    b = spread(g, [0, 3, 9], model, runs=200, seed=5, backend=engine)
    assert np.array_equal(a.counts, b.counts) and a.mean == b.mean and b.backend == "emulator"


def test_several_batches(engine):
    g = graphs()["random"]
    worlds = mc_world_seeds(8, 150)
    seeds = np.array([1, 2])
    out_indptr, out_dst = g.out_indptr, g.out_dst
    ref = spread(g, seeds, "IC", runs=150, seed=8, backend="cpu").counts
    counts, _ = ic_counts_gpu(engine, out_indptr, out_dst, g.out_prob, seeds, worlds, max_words=1)  # 3 batches
    assert np.array_equal(counts, ref)
    w_lt = g.edge_probabilities("LT")[1]
    ref_lt = spread(g, seeds, "LT", runs=150, seed=8, backend="cpu").counts
    counts, _ = lt_counts_gpu(engine, out_indptr, out_dst, w_lt, seeds, worlds, max_sims=7)  # 22 batches
    assert np.array_equal(counts, ref_lt)


@pytest.mark.parametrize("blocks,block", [(1, 8), (5, 64)])
def test_other_grids(blocks, block):
    """The level-synchronous kernels on unusual grids (the warp/async variants need 32-lane blocks)."""
    eng = emulator.emulator_engine(blocks=blocks, block=block)
    g = graphs()["hub"]
    worlds = mc_world_seeds(3, 70)
    for model in ("IC", "LT"):
        assert [r.count for r in simulate_worlds(g, [0], model, worlds, backend=eng, gpu_variant="level")] == \
            [r.count for r in simulate_worlds(g, [0], model, worlds)]


def test_count_kernel_bit_sliced_counters(engine):
    rng = np.random.default_rng(9)
    n, words = 1000, 3
    visited = rng.integers(0, 2**63, n * words, dtype=np.int64).astype(np.uint64)
    visited[rng.random(n * words) < 0.5] = 0
    counts = np.zeros(64 * words, dtype=np.uint64)
    kernel = engine.kernel("oracle/oracle_ic", "oracle_ic_count")
    kernel((2,), (16,), (visited, np.int64(n), np.int64(words), np.int64(7), counts))  # tiles of 112 nodes
    bits = (visited.reshape(words, n)[:, :, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    assert np.array_equal(counts.reshape(words, 64), bits.sum(axis=1).astype(np.uint64))


def test_argument_types_are_checked(engine):
    kernel = engine.kernel("oracle/oracle_ic", "oracle_ic_clear")
    q = np.zeros(4, dtype=np.uint64)
    cnt = np.zeros(1, dtype=np.uint64)
    with pytest.raises(GpucoreError, match="argument 1 is a 4-byte pointer, the kernel wants a 8-byte pointer"):
        kernel((1,), (1,), (q, cnt.astype(np.uint32), q))
    light = engine.kernel("oracle/oracle_ic", "oracle_ic_expand_light")
    assert light.signature[3] == (1, 8) and light.signature[15] == (1, 4)  # n: int64, group: int
    with pytest.raises(GpucoreError, match="3 arguments given"):
        light((1,), (1,), (q, q, q))
    with pytest.raises(GpucoreError, match="typed scalars"):
        kernel((1,), (1,), (q, cnt, 5))


@pytest.mark.parametrize("kw", [{"group": 1}, {"group": 32}, {"light_max": 0}, {"light_max": 10**9}])
def test_tuning_does_not_change_results(engine, kw):
    g = graphs()["hub"]
    worlds = mc_world_seeds(6, 100)
    seeds = np.array([0, 7])
    ref = spread(g, seeds, "IC", runs=100, seed=6, backend="cpu").counts
    stats = {}
    got, _ = ic_counts_gpu(engine, g.out_indptr, g.out_dst, g.out_prob, seeds, worlds, stats=stats,
                           variant="level", **kw)
    assert np.array_equal(got, ref) and stats["batches"] == 1 and stats["units"] == 2 and stats["levels"] >= 8
    ref = spread(g, seeds, "LT", runs=100, seed=6, backend="cpu").counts
    got, _ = lt_counts_gpu(engine, g.out_indptr, g.out_dst, g.edge_probabilities("LT")[1], seeds, worlds, **kw)
    assert np.array_equal(got, ref)


def test_bad_tuning_is_refused(engine):
    g = graphs()["random"]
    with pytest.raises(GpucoreError, match="group 3 must be a power of two"):
        ic_counts_gpu(engine, g.out_indptr, g.out_dst, g.out_prob, np.array([0]), mc_world_seeds(1, 2), group=3,
                      variant="level")


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("module", emulator.MODULES)
def test_kernels_compile_with_nvcc_sm90(module, tmp_path):
    import subprocess

    from gpucore.kernels import include_dirs, source_path

    src = source_path(module)
    proc = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", *(f"-I{d}" for d in include_dirs(src)), "-c",
                           str(src), "-o", str(tmp_path / "module.o")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
