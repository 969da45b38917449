"""The oracle on a real GPU (pytest -m gpu): CUDA kernels == CPU reference, world for world.

Exact first: for the same world keys the GPU's activated sets equal the CPU's (IC: 64 simulations
per word, partial words, several batches, heavy nodes, deep cascades; LT: threshold crossings with
64-bit atomics), and spread's per-run sizes are identical. Then statistical: Monte-Carlo means of
independent seeds agree within their CIs (two-sided false-alarm rate 1e-4 per comparison).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucore.backend import get_backend
from gpucore.cli import main
from gpucore.graph import load_graph
from gpucore.oracle import mc_world_seeds, simulate_worlds, spread
from gpucore.oracle.gpu import cuda_engine, ic_counts_gpu, lt_counts_gpu
from tests.test_oracle_emulated import graphs
from tests.test_oracle_exact import IC_ARCS, graph_of
from tests.test_oracle_reference import exact_ic_spread

Z_1E4 = 3.8906  # two-sided normal quantile for a false-alarm rate of 1e-4


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

    for name in ("oracle_ic", "oracle_lt"):
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
