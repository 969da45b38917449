"""DiFuseR on the CPU against the plain-Python reference of tests/sketch_reference.py, exactly.

Tiny graphs, where every world, reach set and register can be rebuilt by definition: registers
after Fill + Simulate, after Cascade, scores, counts, the whole greedy run (seeds, spread after every
seed, rebuild rounds), for both samplings; the split of the worlds over processes (per-world
registers and score parts add up); ties and the rebuild rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.backend import get_backend
from gpucore.errors import GpucoreError
from gpucore.graph import from_arcs
from gpucore.im.sketch import difuser
from gpucore.im.sketch.cpu import CPUEngine
from gpucore.im.sketch.hashing import world_keys
from gpucore.im.sketch.layout import score_table
from tests.sketch_reference import ReferenceSketch, reference_difuser

CPU = get_backend("cpu")


def random_graph(n, arcs, seed, low=0.05, high=0.6):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, arcs), rng.integers(0, n, arcs)
    key = np.unique(src[src != dst] * n + dst[src != dst])
    return from_arcs(n, key // n, key % n, rng.uniform(low, high, key.size))


@pytest.fixture(scope="module")
def small():
    return random_graph(24, 90, 3)


def engine(graph, seed, worlds, sampling, first=0, stop=None, fasst=True):
    keys = world_keys(seed, worlds, first, worlds if stop is None else stop, sampling, fasst)
    return CPUEngine(graph, keys, seed, CPU)


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
@pytest.mark.parametrize("fasst", [True, False])
def test_registers_fill_simulate_cascade_equal_reference(small, sampling, fasst):
    ref = ReferenceSketch(small, 11, 64, sampling, fasst)
    eng = engine(small, 11, 64, sampling, fasst=fasst)
    table = score_table("log", small.n)
    ref.build()
    eng.fill()
    eng.simulate()
    np.testing.assert_array_equal(eng.host_registers(), ref.registers.T)
    for s in (5, 0, 5, 17):  # 5 twice: a seed visited everywhere changes nothing
        ref.cascade(s)
        eng.cascade(s)
        np.testing.assert_array_equal(eng.host_registers(), ref.registers.T)  # stale registers kept
        assert eng.visited_count() == int(ref.visited.sum())
        np.testing.assert_array_equal(eng.scores(table), ref.scores(table))
        ref.build()
        eng.fill()
        eng.simulate()
        np.testing.assert_array_equal(eng.host_registers(), ref.registers.T)


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
@pytest.mark.parametrize("estimator,threshold", [("linear", 0.01), ("harmonic", 0.0), ("log", 0.3)])
def test_whole_run_equals_reference(sampling, estimator, threshold):
    g = random_graph(30, 110, 7)
    res = difuser(g, 6, registers=64, rebuild_threshold=threshold, sampling=sampling, seed=4, backend="cpu",
                  estimator=estimator, refine=0)
    seeds, spreads, rebuilt = reference_difuser(g, 6, 4, 64, sampling, threshold, score_table(estimator, g.n))
    assert res["seed_ids"] == seeds
    assert res["spread_after_seed"] == spreads and res["estimated_spread"] == spreads[-1]
    assert [b["after_seed"] for b in res["builds"]] == rebuilt
    assert res["rebuild_rounds"] == len(rebuilt) - 1
    assert len(set(seeds)) == 6


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
@pytest.mark.parametrize("refine", [4, 30])
def test_refined_runs_equal_reference(sampling, refine):
    g = random_graph(30, 110, 5)
    res = difuser(g, 5, registers=64, sampling=sampling, seed=6, backend="cpu", refine=refine)
    seeds, spreads, rebuilt = reference_difuser(g, 5, 6, 64, sampling, 0.01, score_table("log", g.n), refine=refine)
    assert res["seed_ids"] == seeds and res["spread_after_seed"] == spreads
    assert [b["after_seed"] for b in res["builds"]] == rebuilt


def test_exact_gains_equal_reference(small):
    ref = ReferenceSketch(small, 3, 64, "keyed")
    eng = engine(small, 3, 64, "keyed")
    ref.build()
    eng.fill()
    eng.simulate()
    for s in (4, 12):
        ref.cascade(s)
        eng.cascade(s)
        want = [ref.gain(v) for v in range(small.n)]
        assert eng.gains(list(range(small.n))).tolist() == want
        before = eng.visited_count()
        eng.cascade(7)
        ref.cascade(7)
        assert eng.visited_count() - before == want[7]  # the gain is what the cascade adds


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_world_split_adds_up(small, sampling):
    """A process holding worlds [w0, w1) has exactly those columns, and its score parts add up."""
    table = score_table("log", small.n)
    full = engine(small, 2, 96, sampling)
    parts = [engine(small, 2, 96, sampling, a, b) for a, b in ((0, 32), (32, 64), (64, 96))]
    for e in [full, *parts]:
        e.fill()
        e.simulate()
    for s in (3, 9):
        for e in [full, *parts]:
            e.cascade(s)
        joined = np.concatenate([p.host_registers() for p in parts], axis=1)
        np.testing.assert_array_equal(joined, full.host_registers())
        np.testing.assert_array_equal(sum(p.scores(table) for p in parts), full.scores(table))
        assert sum(p.visited_count() for p in parts) == full.visited_count()


def test_world_range_alone_and_whole(small):
    whole = difuser(small, 4, registers=64, seed=8, backend="cpu")
    again = difuser(small, 4, registers=64, seed=8, backend="cpu", world_range=(0, 64))
    assert whole["seed_ids"] == again["seed_ids"] and whole["world_range"] == [0, 64]
    half = difuser(small, 4, registers=64, seed=8, backend="cpu", world_range=(32, 64), refine=0)
    assert half["world_range"] == [32, 64] and half["registers"] == 64
    ref = ReferenceSketch(small, 8, 64, "keyed")
    ref.live, ref.start = ref.live[32:], ref.start[32:]  # the reference restricted to worlds 32..63
    ref.visited, ref.registers, ref.worlds = ref.visited[32:], ref.registers[32:], 32
    ref.build()
    s = int(np.argmax(ref.scores(score_table("log", small.n))))
    assert half["seed_ids"][0] == s


def test_ties_go_to_the_lowest_id():
    """All-zero tables make every score 0: the lowest id not chosen wins; none left gives -1."""
    g = from_arcs(8, [0, 2, 4, 6], [1, 3, 5, 7], 1.0)
    eng = engine(g, 1, 32, "xor")
    eng.fill()
    eng.simulate()
    flat = np.zeros((2, 66), dtype=np.int64)
    chosen = np.zeros(8, dtype=np.uint8)
    assert eng.argmax(eng.scores(flat), chosen) == 0
    chosen[[0, 1]] = 1
    assert eng.argmax(eng.scores(flat), chosen) == 2
    chosen[:] = 1
    assert eng.argmax(eng.scores(flat), chosen) == -1


def test_rebuild_rule():
    g = random_graph(40, 160, 9, 0.2, 0.5)
    every = difuser(g, 5, registers=32, rebuild_threshold=0.0, seed=1, backend="cpu")
    gains = np.diff([0.0] + every["spread_after_seed"])
    want = [0] + [i + 1 for i in range(4) if gains[i] > 0]
    assert [b["after_seed"] for b in every["builds"]] == want  # no rebuild after the last seed
    once = difuser(g, 5, registers=32, rebuild_threshold=0.999, seed=1, backend="cpu")
    assert [b["after_seed"] for b in once["builds"]] == [0, 1]  # only (s1 - 0) / s1 = 1 > 0.999


def test_result_fields(small):
    res = difuser(small, 3, registers=32, seed=2, backend="cpu")
    assert res["kind"] == "im" and res["algorithm"] == "DiFuseR" and res["model"] == "IC" and res["k"] == 3
    assert res["graph"] == {"path": str(small.path), "sha256": small.sha256, "n": small.n, "m": small.m}
    assert res["seeds"] == res["seed_ids"]  # from_arcs keeps the ids
    assert set(res["seconds_by_phase"]) == {"fill", "simulate", "cascade", "select", "refine"}
    assert res["register_bytes"] == small.n * 32 and res["sampling"] == "keyed" and res["estimator"] == "log"
    assert res["spread_after_seed"] == sorted(res["spread_after_seed"]) and res["spread_after_seed"][0] >= 1.0


@pytest.mark.parametrize("kw,msg", [
    ({"k": 0}, "--k 0"), ({"k": 25}, "--k 25"), ({"registers": 48}, "--registers 48"),
    ({"rebuild_threshold": 1.0}, "--rebuild-threshold 1.0"), ({"rebuild_threshold": -0.1}, "--rebuild-threshold"),
    ({"sampling": "coin"}, "--sampling 'coin'"), ({"memory_limit": 1000}, "DiFuseR needs about"),
    ({"refine": -1}, "--refine -1"), ({"refine": 2.5}, "--refine 2.5"),
])
def test_bad_input(small, kw, msg):
    args = {"k": 2, **kw}
    with pytest.raises(GpucoreError, match=msg) as err:
        difuser(small, backend="cpu", **args)
    assert "\n" not in str(err.value)


def test_weights_outside_unit_interval_are_refused(small):
    bad = from_arcs(3, [0, 1], [1, 2], [0.5, 0.5])
    bad.out_prob[1] = 1.5
    with pytest.raises(GpucoreError, match=r"edge probability 1.5 outside \[0, 1\]"):
        difuser(bad, 1, registers=32, backend="cpu")
