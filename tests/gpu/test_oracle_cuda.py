"""The oracle on a real GPU (pytest -m gpu): CUDA kernels == CPU reference, world for world.

Exact first: for the same world keys the GPU's activated sets equal the CPU's (IC: 64 simulations
per word, partial words, several batches, heavy nodes, deep cascades; LT: threshold crossings with
64-bit atomics), and spread's per-run sizes are identical, for every IC kernel variant
(``IC_VARIANTS``: level-synchronous "level", "warp", "warp8"; persistent-queue "async", "async8",
also with queues far too small, which forces refills and relaunches). Repeated runs of the
persistent kernels at scale must agree exactly (a race would show as a run-to-run difference).
Then statistical: Monte-Carlo means of independent seeds agree within their CIs (two-sided
false-alarm rate 1e-4 per comparison).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucore.backend import get_backend
from gpucore.cli import main
from gpucore.graph import load_graph
from gpucore.oracle import mc_world_seeds, simulate_worlds, spread
from gpucore.oracle.cuda import IC_VARIANTS, cuda_engine, ic_counts_gpu, lt_counts_gpu
from tests.test_oracle_emulated import graphs
from tests.test_oracle_exact import IC_ARCS, graph_of
from tests.test_oracle_reference import exact_ic_spread

Z_1E4 = 3.8906  # two-sided normal quantile for a false-alarm rate of 1e-4
NEW_VARIANTS = [v for v in IC_VARIANTS if v != "level"]
ASYNC_VARIANTS = ("async", "async8")


@pytest.fixture(scope="module")
def cuda():
    return get_backend("cuda")


@pytest.fixture(scope="module")
def pa_graph(tmp_path_factory):
    """A generated social graph (20k users, ~300k arcs, weighted cascade), as the pipeline builds it."""
    path = tmp_path_factory.mktemp("oracle") / "pa20k.gcsr"
    assert main(["generate", "pa", "--nodes", "20000", "--edges", "300000", "--seed", "3", "-o", str(path)]) == 0
    return load_graph(path)


def test_kernels_compile_with_nvrtc(cuda):
    from gpucore.kernels import load_module

    for name in ("oracle/oracle_ic", "oracle/oracle_lt", "oracle/oracle_icw"):
        assert load_module(name) is not None


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("name", ["random", "hub", "path"])
def test_small_graphs_sets_equal_cpu(cuda, name, model):
    g = graphs()[name]
    seeds = [0, 5] if name != "path" else [0]
    worlds = [int(w) for w in mc_world_seeds(77, 130)]
    cpu = simulate_worlds(g, seeds, model, worlds)
    gpu = simulate_worlds(g, seeds, model, worlds, backend=cuda)
    for a, b in zip(cpu, gpu):
        assert np.array_equal(a.active, b.active), (name, model, a.world_seed)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_generated_graph_sets_equal_cpu(cuda, pa_graph, model):
    deg = np.diff(pa_graph.out_indptr)
    seeds = np.argsort(-deg, kind="stable")[:20]  # hubs: the heavy kernel and dense masks
    worlds = [int(w) for w in mc_world_seeds(2024, 200 if model == "IC" else 60)]
    cpu = simulate_worlds(pa_graph, seeds, model, worlds)
    gpu = simulate_worlds(pa_graph, seeds, model, worlds, backend=cuda)
    sizes = [r.count for r in cpu]
    assert max(sizes) > 100  # non-trivial cascades
    for a, b in zip(cpu, gpu):
        assert np.array_equal(a.active, b.active), (model, a.world_seed)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_spread_counts_identical(cuda, pa_graph, model):
    seeds = [0, 1, 2, 100, 1000]
    a = spread(pa_graph, seeds, model, runs=3000, seed=11, backend="cpu")
    b = spread(pa_graph, seeds, model, runs=3000, seed=11, backend=cuda)
    assert b.backend == "cuda"
    assert np.array_equal(a.counts, b.counts)


def test_batches_and_tuning_do_not_change_results(cuda, pa_graph):
    eng = cuda_engine(cuda)
    seeds = np.arange(10, dtype=np.int64)
    worlds = mc_world_seeds(5, 700)
    ref = spread(pa_graph, seeds, "IC", runs=700, seed=5, backend="cpu").counts
    for kw in ({"max_words": 1}, {"max_words": 3}, {"group": 1}, {"group": 32}, {"light_max": 0},
               {"light_max": 10**9}):
        stats = {}
        got, _ = ic_counts_gpu(eng, pa_graph.out_indptr, pa_graph.out_dst, pa_graph.out_prob, seeds, worlds,
                               stats=stats, **kw)
        assert np.array_equal(got, ref), kw
    w = pa_graph.edge_probabilities("LT")[1]
    ref = spread(pa_graph, seeds, "LT", runs=700, seed=5, backend="cpu").counts
    for kw in ({"max_sims": 64}, {"group": 4}, {"light_max": 0}):
        got, _ = lt_counts_gpu(eng, pa_graph.out_indptr, pa_graph.out_dst, w, seeds, worlds, **kw)
        assert np.array_equal(got, ref), kw


def test_auto_backend_uses_the_gpu(cuda, pa_graph):
    assert spread(pa_graph, [0, 1], "IC", runs=100, seed=1).backend == "cuda"


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_monte_carlo_means_agree_within_ci(cuda, pa_graph, model):
    seeds = [3, 30, 300]
    a = spread(pa_graph, seeds, model, runs=10000, seed=1, backend=cuda)
    b = spread(pa_graph, seeds, model, runs=4000, seed=2, backend="cpu")
    z = abs(a.mean - b.mean) / math.hypot(a.stderr, b.stderr)
    assert z < Z_1E4, (model, a.mean, a.stderr, b.mean, b.stderr)


def test_gpu_ci_covers_exact_spread(cuda):
    """A tiny graph: the GPU's 95% CI over 100 seeds covers the enumerated spread in >= 86 cases
    (P(Binomial(100, 0.95) < 86) < 1e-3)."""
    g = graph_of(7, IC_ARCS)
    exact = exact_ic_spread(7, IC_ARCS, [0])
    covered = sum(spread(g, [0], "IC", runs=2000, seed=s, backend=cuda).covers(exact) for s in range(100))
    assert covered >= 86


# ------------------------------------------------------------------------------------------
# IC kernel variants of oracle_icw.cu


@pytest.fixture(scope="module")
def pa_big(tmp_path_factory):
    """A larger generated graph (200k users, ~3M arcs, weighted cascade): long cascades, many warps busy."""
    path = tmp_path_factory.mktemp("oracle") / "pa200k.gcsr"
    assert main(["generate", "pa", "--nodes", "200000", "--edges", "3000000", "--seed", "5", "--weights", "wc",
                 "-o", str(path)]) == 0
    return load_graph(path)


@pytest.mark.parametrize("variant", NEW_VARIANTS)
@pytest.mark.parametrize("name", ["random", "hub", "path"])
def test_variant_small_graphs_sets_equal_cpu(cuda, name, variant):
    g = graphs()[name]
    seeds = [0, 5] if name != "path" else [0]
    worlds = [int(w) for w in mc_world_seeds(77, 130)]
    cpu = simulate_worlds(g, seeds, "IC", worlds)
    gpu = simulate_worlds(g, seeds, "IC", worlds, backend=cuda, gpu_variant=variant)
    for a, b in zip(cpu, gpu):
        assert np.array_equal(a.active, b.active), (name, variant, a.world_seed)


@pytest.mark.parametrize("variant", NEW_VARIANTS)
def test_variant_generated_graph_sets_equal_cpu(cuda, pa_graph, variant):
    deg = np.diff(pa_graph.out_indptr)
    seeds = np.argsort(-deg, kind="stable")[:20]
    worlds = [int(w) for w in mc_world_seeds(2024, 200)]
    cpu = simulate_worlds(pa_graph, seeds, "IC", worlds)
    gpu = simulate_worlds(pa_graph, seeds, "IC", worlds, backend=cuda, gpu_variant=variant)
    assert max(r.count for r in cpu) > 100
    for a, b in zip(cpu, gpu):
        assert np.array_equal(a.active, b.active), (variant, a.world_seed)


@pytest.mark.parametrize("variant", NEW_VARIANTS)
def test_variant_spread_counts_identical(cuda, pa_graph, variant):
    seeds = [0, 1, 2, 100, 1000]
    a = spread(pa_graph, seeds, "IC", runs=3000, seed=11, backend="cpu")
    b = spread(pa_graph, seeds, "IC", runs=3000, seed=11, backend=cuda, gpu_variant=variant)
    assert np.array_equal(a.counts, b.counts)


@pytest.mark.parametrize("variant", ASYNC_VARIANTS)
def test_async_small_queues_and_settings(cuda, pa_graph, variant):
    eng = cuda_engine(cuda)
    seeds = np.arange(10, dtype=np.int64)
    worlds = mc_world_seeds(5, 700)
    ref = spread(pa_graph, seeds, "IC", runs=700, seed=5, backend="cpu").counts
    for kw in ({"queue_capacity": 4096}, {"queue_capacity": 20_000, "seed_bits": 1}, {"seed_bits": 64},
               {"max_words": 1}, {"max_words": 3, "queue_capacity": 5000}):
        stats = {}
        got, _ = ic_counts_gpu(eng, pa_graph.out_indptr, pa_graph.out_dst, pa_graph.out_prob, seeds, worlds,
                               stats=stats, variant=variant, **kw)
        assert np.array_equal(got, ref), (variant, kw, stats)
        if kw.get("queue_capacity", 10**9) < stats["entries"]:
            assert stats["refills"] >= 1, stats


def test_variants_agree_and_repeat_at_scale(cuda, pa_big):
    """10,000 worlds from 50 hubs on 200k users: every variant gives the same sizes, the persistent
    kernels five times over (a race would show as a difference), and the first 500 equal the CPU's."""
    eng = cuda_engine(cuda)
    deg = np.diff(pa_big.out_indptr)
    seeds = np.argsort(-deg, kind="stable")[:50].astype(np.int64)
    worlds = mc_world_seeds(9, 10000)
    args = (eng, pa_big.out_indptr, pa_big.out_dst, pa_big.out_prob, seeds, worlds)
    ref, _ = ic_counts_gpu(*args, variant="level")
    assert ref.mean() > 200
    cpu = spread(pa_big, seeds, "IC", runs=500, seed=9, backend="cpu").counts
    assert np.array_equal(cpu, ref[:500])
    for variant in NEW_VARIANTS:
        for rep in range(5 if variant in ASYNC_VARIANTS else 1):
            stats = {}
            got, _ = ic_counts_gpu(*args, variant=variant, stats=stats)
            assert np.array_equal(got, ref), (variant, rep, stats, int(np.count_nonzero(got != ref)))
    got, _ = ic_counts_gpu(*args, variant="async", queue_capacity=1 << 18)  # refills at scale
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_multi_round_spread_counts_equal_cpu(cuda, pa_graph, model):
    """multi_round_spread on the GPU: the same per-run union sizes as the CPU (rounds in the worlds
    mix(seed, ORACLE, s, t) on both)."""
    from gpucore.oracle import multi_round_spread

    plan = [[0, 7, 19], [3, 100], [0, 2500, 9999]]
    gpu = multi_round_spread(pa_graph, plan, model, runs=300, seed=5, backend=cuda)
    cpu = multi_round_spread(pa_graph, plan, model, runs=300, seed=5, backend="cpu")
    assert gpu.backend == "cuda" and np.array_equal(gpu.counts, cpu.counts)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_spread_in_batches_after_warm_up(cuda, pa_graph, model, monkeypatch):
    """spread's GPU batches (forced to the smallest, 64 runs) give the CPU's per-run sizes; the warm-up
    (CUDA modules, the graph's device copy) is reported apart and costs nothing the second time."""
    from gpucore.oracle import api, batches

    monkeypatch.setattr(api, "GPU_FIRST_BATCH", 64)
    monkeypatch.setattr(batches, "BATCH_SECONDS", 1e-9)
    seeds = [0, 1, 2, 100, 1000]
    a = spread(pa_graph, seeds, model, runs=1000, seed=4, backend="cpu")
    b = spread(pa_graph, seeds, model, runs=1000, seed=4, backend=cuda)
    assert b.backend == "cuda" and np.array_equal(a.counts, b.counts)
    assert b.warm_up_seconds >= 0 and api.warm_up(pa_graph, model, cuda) < 0.5
    assert api.warm_up(pa_graph, model, cuda, sets=True) >= 0
