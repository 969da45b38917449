"""The CUDA kernels of IM run in the CPU emulator (``gpucore.im.emulated``) against the CPU reference.

These execute the unmodified ``im_sample.cu`` / ``im_greedy.cu`` (warp primitives as barriers among
32 host threads) through the real CUDA driver code of ``gpucore.im.cuda`` on NumPy arrays: the
queue/reservoir, tier-2 and pool-retry paths, compaction in order of j, the greedy kernels and a
whole IMM run must equal the CPU backend exactly. Races between blocks are left to ``tests/gpu``.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpucore.im.driver as driver
from gpucore.backend import get_backend
from gpucore.graph import from_arcs
from gpucore.im import imm
from gpucore.im.cpu import CPUSampler
from gpucore.im.engine import make_engine, stepwise_greedy
from gpucore.im.emulated import available, emulated_engine
from gpucore.im.rrsets import ESTIMATE_OFFSET
from gpucore.im.sampling import canonical, engine_sets
from tests.im_graphs import hubs_graph, lt_hubs_graph, star_graph, wc_graph

pytestmark = pytest.mark.skipif(not available(), reason="g++ not available")


def cpu_sets(g, model, rounds, seed, j0, count):
    return engine_sets(CPUSampler(g, model, rounds, seed, get_backend("cpu")), j0, count)


def same_sets(a, b):
    ca, cb = canonical(*a), canonical(*b)
    np.testing.assert_array_equal(ca[0], cb[0])
    np.testing.assert_array_equal(ca[1], cb[1])


@pytest.mark.parametrize("model,rounds", [("IC", 1), ("LT", 1), ("IC", 2), ("LT", 2)])
def test_sets_equal_cpu(model, rounds):
    g = wc_graph()
    for j0 in (0, ESTIMATE_OFFSET):
        want = cpu_sets(g, model, rounds, 5, j0, 400)
        got = engine_sets(emulated_engine(g, model, rounds, 5), j0, 400, batch=150)
        same_sets(want, got)


@pytest.mark.parametrize("graph", ["lt_hubs", "hubs"])
def test_lt_long_rows_equal_cpu(graph):
    """The warp's LT choice in rows of 31 to 3,000 in-arcs: the interpolated probe (equal weights: hub 1 of
    lt_hubs, the hubs' rows of hubs_graph) and the 32-ary narrowing (unequal weights: hub 0, several rounds)."""
    g = lt_hubs_graph() if graph == "lt_hubs" else hubs_graph()
    want = cpu_sets(g, "LT", 1, 3, 0, 600)
    assert np.diff(want[0]).mean() > 3  # walks pass the hubs
    same_sets(want, engine_sets(emulated_engine(g, "LT", 1, 3), 0, 600, batch=256))


def hub_graph(h, leaves, p_back=0.6):
    """Nodes 1..h -> 0 (p = 1), 0 -> every leaf (p = 1), leaf i -> node 1 + i % h (p_back): every RR set
    holds the hub 0, whose h in-neighbours all join the frontier while node 0 is processed."""
    n = 1 + h + leaves
    src = list(range(1, h + 1)) + [0] * leaves + list(range(h + 1, n))
    dst = [0] * h + list(range(h + 1, n)) + [1 + i % h for i in range(leaves)]
    prob = [1.0] * (h + leaves) + [p_back] * leaves
    return from_arcs(n, src, dst, prob)


def test_reservoir_offload_and_reload():
    g = hub_graph(300, 600)  # frontiers of 300+ nodes in a 64-entry shared queue
    want = cpu_sets(g, "IC", 1, 3, 0, 40)
    assert np.mean(np.diff(want[0]) >= 301) > 0.5
    eng = emulated_engine(g, "IC", 1, 3, queue_size=64)
    same_sets(want, engine_sets(eng, 0, 40))
    same_sets(cpu_sets(g, "IC", 2, 3, 0, 20), engine_sets(emulated_engine(g, "IC", 2, 3, queue_size=64), 0, 20))


@pytest.mark.parametrize("rounds", [1, 2])
def test_skipping_hubs_equal_cpu(rounds):
    """The warp's 32 jumps per step and their prefix sum, one step or many per hub, with the queue reservoir
    and with sets abandoned half way through a hub for tier 2."""
    for g, kw in ((hubs_graph(), {}), (star_graph(), {"queue_size": 64}), (star_graph(), {"stage_cap": 50})):
        want = cpu_sets(g, "IC", rounds, 4, 0, 120)
        got = engine_sets(emulated_engine(g, "IC", rounds, 4, **kw), 0, 120, batch=50)
        same_sets(want, got)
    assert np.diff(want[0]).mean() > 100 * rounds  # the star: about 125 live in-arcs a hub expansion


def test_tier2_for_sets_beyond_the_staging_buffer():
    g = wc_graph(200, 10, seed=2)
    want = cpu_sets(g, "IC", 2, 8, 0, 300)
    eng = emulated_engine(g, "IC", 2, 8, stage_cap=6)
    assert eng.sampler.stage_cap == 6
    same_sets(want, engine_sets(eng, 0, 300))
    want = cpu_sets(g, "LT", 1, 8, 0, 300)
    same_sets(want, engine_sets(emulated_engine(g, "LT", 1, 8, stage_cap=2), 0, 300))


@pytest.mark.parametrize("kw", [{"warps_per_block": 1}, {"warps_per_block": 3, "warps": 7}])
def test_warps_per_block(kw):
    """Workers are warps: one per block, or several per block with a partial last block."""
    g = wc_graph(200, 8, seed=7)
    eng = emulated_engine(g, "IC", 1, 6, **kw)
    if "warps" in kw:
        assert eng.sampler.warps == 7
    same_sets(cpu_sets(g, "IC", 1, 6, 0, 200), engine_sets(eng, 0, 200, batch=90))


def test_pool_overflow_retry():
    g = wc_graph(200, 8, seed=3)
    want = cpu_sets(g, "IC", 1, 4, 0, 300)
    eng = emulated_engine(g, "IC", 1, 4)
    eng.sampler.pool_factor, eng.sampler.pool_slack = 0.02, 0
    got = engine_sets(eng, 0, 300)
    assert eng.sampler.retries >= 1
    same_sets(want, got)


@pytest.mark.parametrize("block", [True, False])
@pytest.mark.parametrize("rounds,k", [(1, 4), (2, 3)])
def test_greedy_kernels_equal_cpu(rounds, k, block):
    """The greedy of im_greedy.cu, every step in one block (im_greedy_block) or two launches a step."""
    g = wc_graph(150, 5, seed=4)
    cpu_eng = make_engine(g, "IC", rounds, 2, get_backend("cpu"))
    coll = cpu_eng.collection(0)
    cpu_eng.sample_into(coll, 500, 0.0)
    emu = emulated_engine(g, "IC", rounds, 2)
    a = cpu_eng.greedy(coll, k)
    b = emu.selector.greedy(coll, k, block=block)  # NumPy collection, kernels of im_greedy.cu
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert a[2] == b[2]
    if block:  # the rest is the same either way
        return
    assert emu.coverage_bound(coll, k) == cpu_eng.coverage_bound(coll, k)
    assert emu.coverage(coll, a[0][:2]) == cpu_eng.coverage(coll, a[0][:2])
    # the step interface of a distributed run (argmax of given counts, cover) on the kernels
    sel = emu.start(coll, k)
    np.testing.assert_array_equal(sel.counts, cpu_eng.start(coll, k).counts)
    c = stepwise_greedy(sel, k * rounds)
    np.testing.assert_array_equal(a[0], c[0])
    np.testing.assert_array_equal(a[1], c[1])
    assert a[2] == c[2]


def test_greedy_ties_and_zero_gain_steps():
    g = from_arcs(6, [0], [1], 0.5)
    from gpucore.im.rrsets import RRCollection

    be = get_backend("cpu")
    coll = RRCollection(np, be, 0, 6, 1)
    coll.append(np.array([2, 2, 2]), [(0, np.array([3, 1, 2, 0, 5, 4], dtype=np.int32))])
    for block in (True, False):
        chosen, gains, covered = emulated_engine(g, "IC").selector.greedy(coll, 5, block=block)
        assert chosen.tolist() == [0, 1, 4, 2, 3] and gains.tolist() == [1, 1, 1, 0, 0] and covered == 3


@pytest.mark.parametrize("model,rounds", [("IC", 1), ("LT", 1), ("IC", 2)])
def test_whole_imm_equal_cpu(monkeypatch, model, rounds):
    g = wc_graph(120, 4, seed=6)
    want = imm(g, 3, 0.6, model, rounds=rounds, seed=9, backend="cpu")
    monkeypatch.setattr(driver, "make_engine", lambda graph, m, r, s, be, *a, **kw: emulated_engine(graph, m, r, s))
    got = imm(g, 3, 0.6, model, rounds=rounds, seed=9, backend="cpu")
    for key in ("seed_ids", "theta", "lower_bound", "lb_sets", "covered", "estimated_spread", "rr_elements",
                "marginal_coverage"):
        assert want[key] == got[key], key
