"""The IC kernel variants of oracle_icw.cu ("warp", "warp8", "async", "async8"), run by the emulator.

Every variant must give exactly the CPU reference's activated sets. The emulator runs the warps of
a block as interleaved contexts; with a schedule seed it draws the next thread at random and
preempts at every access of the async queue protocol, so the seeds below are different
interleavings of producers, consumers and the termination test. Graphs mix degree-0 nodes, hubs
(many 32-arc rounds of one warp), arcs with p = 0, p = 1 and tiny p, and cascades deeper than a
host synchronisation. The async queue is also run far too small (1, 7, 37 slots): bits then wait
in pend and the driver refills and relaunches, which must not change any set. A direct launch
checks the queue invariant: every activated (simulation, node) bit lies in exactly one queue entry
or in pend, and DONE == min(TAIL, capacity).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph import from_arcs
from gpucore.oracle import emulated as emulator, mc_world_seeds, simulate_worlds, spread
from gpucore.oracle.cpu import first_links
from gpucore.oracle.cuda import (
    CTL_DONE,
    CTL_FLAG,
    CTL_HEAD,
    CTL_TAIL,
    CTL_WORDS,
    IC_VARIANT,
    IC_VARIANTS,
    LEVELS_PER_SYNC,
    ic_counts_gpu,
)
from tests.test_oracle_emulated import graphs

pytestmark = pytest.mark.skipif(not emulator.available(), reason="g++ not available for the kernel emulator")

NEW = [v for v in IC_VARIANTS if v != "level"]
ASYNC = ("async", "async8")


def mixed_graph(seed: int, n: int = 120):
    """Random arcs with mixed degrees: a few hubs (40-150 out-arcs), degree-0 nodes, p in {0, 1e-9, 1, U}."""
    rng = np.random.default_rng(seed)
    pairs = set()
    hubs = rng.choice(n, 3, replace=False)
    for h in hubs:
        for v in rng.choice(n, int(rng.integers(40, 150 if n > 150 else n - 1)), replace=False):
            if v != h:
                pairs.add((int(h), int(v)))
    sinks = set(int(x) for x in rng.choice(n, n // 10, replace=False)) - set(int(h) for h in hubs)
    while len(pairs) < 4 * n:
        u, v = (int(x) for x in rng.integers(0, n, 2))
        if u != v and u not in sinks:
            pairs.add((u, v))
    src, dst = zip(*sorted(pairs))
    kind = rng.random(len(src))
    prob = np.where(kind < 0.05, 0.0, np.where(kind < 0.08, 1e-9, np.where(kind < 0.12, 1.0,
                                                                              rng.uniform(0.05, 0.5, len(src)))))
    return from_arcs(n, list(src), list(dst), [float(p) for p in prob])


@pytest.fixture(scope="module")
def eng():
    return emulator.emulator_engine(blocks=2, block=64)


@pytest.mark.parametrize("variant", NEW)
@pytest.mark.parametrize("name", ["random", "hub", "path"])
def test_variant_sets_equal_cpu(eng, name, variant):
    g = graphs()[name]
    seeds = [0, 5] if name != "path" else [0]
    worlds = [int(w) for w in mc_world_seeds(77, 130)]  # 3 words, the last one partial
    cpu = simulate_worlds(g, seeds, "IC", worlds)
    gpu = simulate_worlds(g, seeds, "IC", worlds, backend=eng, gpu_variant=variant)
    for a, b in zip(cpu, gpu):
        assert np.array_equal(a.active, b.active), (name, variant, a.world_seed)
    if name == "path":
        assert max(r.count for r in cpu) > LEVELS_PER_SYNC + 1


@pytest.mark.parametrize("case", range(6))
def test_random_schedules_many_graphs(case):
    """Six graphs x random interleavings: every variant, async with queues from 1 slot to plenty."""
    g = mixed_graph(300 + case)
    rng = np.random.default_rng(case)
    seeds = rng.choice(g.n, int(rng.integers(1, 6)), replace=False)
    runs = int(rng.integers(65, 200))
    ref = spread(g, seeds, "IC", runs=runs, seed=case, backend="cpu").counts
    assert ref.max() > 10
    blocks, block = [(1, 128), (2, 64), (3, 32), (1, 256), (2, 96), (1, 64)][case]
    e = emulator.emulator_engine(blocks=blocks, block=block, schedule_seed=1000 + case, preempt=0.3)
    worlds = mc_world_seeds(case, runs)
    settings = [{"variant": v} for v in NEW] + [
        {"variant": "async", "queue_capacity": [1, 7, 37, 200, 1, 7][case], "seed_bits": [1, 2, 4, 8, 16, 64][case]},
        {"variant": "async8", "max_words": 1, "queue_capacity": 64, "async_spin": (1, 1)},
        {"variant": "warp", "max_words": 2},
    ]
    for kw in settings:
        stats = {}
        got, _ = ic_counts_gpu(e, g.out_indptr, g.out_dst, g.out_prob, seeds, worlds, stats=stats, **kw)
        assert np.array_equal(got, ref), (case, kw, stats)
        if kw.get("queue_capacity", 10**9) < 40:
            assert stats["refills"] >= 1 and stats["launches"] == stats["refills"] + stats["batches"]


@pytest.mark.parametrize("schedule", [0, 7, 8, 9])
def test_async_hub_graph_schedules(schedule):
    g = graphs()["hub"]
    e = emulator.emulator_engine(blocks=2, block=64, schedule_seed=schedule, preempt=0.5)
    worlds = mc_world_seeds(schedule, 100)
    ref = spread(g, [0, 3], "IC", runs=100, seed=schedule, backend="cpu").counts
    for kw in ({"variant": "async"}, {"variant": "async8", "queue_capacity": 50, "seed_bits": 1}):
        stats = {}
        got, _ = ic_counts_gpu(e, g.out_indptr, g.out_dst, g.out_prob, np.array([0, 3]), worlds, stats=stats, **kw)
        assert np.array_equal(got, ref), (schedule, kw)
    assert stats["refills"] >= 1


def _async_launch(e, g, seeds, worlds, capacity, kernel="oracle_icw_async", seed_bits=64):
    """One launch of the async kernel from the seeds' entries (no driver): returns its state."""
    n = g.n
    words = (len(worlds) + 63) // 64
    h1 = np.zeros(64 * words, dtype=np.uint64)
    h1[: len(worlds)] = first_links(np.asarray(worlds, dtype=np.uint64))
    valid = np.full(words, np.uint64(2**64 - 1))
    if len(worlds) % 64:
        valid[-1] = np.uint64((1 << (len(worlds) % 64)) - 1)
    visited = np.zeros(words * n, dtype=np.uint64)
    pend = np.zeros(words * n, dtype=np.uint64)
    queue = np.zeros(2 * capacity, dtype=np.uint64)
    entries = []
    for w in range(words):
        for s in seeds:
            visited[w * n + s] = valid[w]
            for c in range(64 // seed_bits):
                m = int(valid[w]) & (((1 << seed_bits) - 1) << (c * seed_bits))
                if m:
                    entries.append(((w << 32) | int(s), m))
    placed = min(len(entries), capacity)
    for t, (k, m) in enumerate(entries[:placed]):
        queue[2 * t], queue[2 * t + 1] = k, m
    for k, m in entries[placed:]:
        pend[(k >> 32) * n + (k & 0xFFFFFFFF)] |= np.uint64(m)
    ctl = np.zeros(CTL_WORDS, dtype=np.uint64)
    ctl[CTL_TAIL] = placed
    e.kernel("oracle/oracle_icw", kernel)((e.blocks,), (e.block,), (
        g.out_indptr, g.out_dst, g.out_prob, np.int64(n), h1, visited, pend, queue, np.uint64(capacity), ctl))
    return visited, pend, queue, ctl, len(entries)


def _popcount(a: np.ndarray) -> int:
    return int(np.unpackbits(np.ascontiguousarray(a).view(np.uint8)).sum())


@pytest.mark.parametrize("capacity,schedule,kernel", [(100000, 0, "oracle_icw_async"), (100000, 3, "oracle_icw_async8"),
                                                      (300, 4, "oracle_icw_async"), (40, 5, "oracle_icw_async8")])
def test_async_queue_invariant(capacity, schedule, kernel):
    """Each activated bit is in exactly one entry (queue slot or pend); DONE == min(TAIL, capacity)."""
    g = mixed_graph(77)
    seeds = [1, 2, 3]
    worlds = [int(w) for w in mc_world_seeds(4, 150)]
    e = emulator.emulator_engine(blocks=2, block=64, schedule_seed=schedule, preempt=0.3)
    visited, pend, queue, ctl, initial = _async_launch(e, g, seeds, worlds, capacity, kernel)
    tail, done = int(ctl[CTL_TAIL]), int(ctl[CTL_DONE])
    slots = min(tail, capacity)
    assert done == slots and int(ctl[CTL_HEAD]) >= slots
    masks = queue[1 : 2 * slots : 2]
    assert np.all(masks != 0) and np.all(queue[2 * slots :] == 0)
    assert _popcount(masks) + _popcount(pend) == _popcount(visited)
    # every entry's bits are set in visited, entries of one (word, node) are disjoint
    keys = queue[0 : 2 * slots : 2]
    x = (keys >> np.uint64(32)) * np.uint64(g.n) + (keys & np.uint64(0xFFFFFFFF))
    assert np.all((visited[x.astype(np.int64)] & masks) == masks)
    acc = np.zeros_like(visited)
    for xi, m in zip(x.astype(np.int64), masks):
        assert (acc[xi] & m) == 0
        acc[xi] |= m
    assert np.all((acc & pend) == 0)
    if int(ctl[CTL_FLAG]) == 0:  # nothing left for a refill: the sets are final
        assert tail <= capacity and not pend.any()
        cpu = simulate_worlds(g, seeds, "IC", worlds)
        for j, r in enumerate(cpu):
            got = np.flatnonzero((visited.reshape(-1, g.n)[j // 64] >> np.uint64(j % 64)) & np.uint64(1))
            assert np.array_equal(got, r.active)
    else:
        assert tail > capacity and pend.any()


def test_async_empty_queue_terminates():
    g = graphs()["random"]
    e = emulator.emulator_engine(blocks=3, block=64, schedule_seed=2)
    ctl = np.zeros(CTL_WORDS, dtype=np.uint64)
    words, n = 1, g.n
    args = (g.out_indptr, g.out_dst, g.out_prob, np.int64(n), np.zeros(64, dtype=np.uint64),
            np.zeros(words * n, dtype=np.uint64), np.zeros(words * n, dtype=np.uint64), np.zeros(64, dtype=np.uint64),
            np.uint64(32), ctl)
    e.kernel("oracle/oracle_icw", "oracle_icw_async")((3,), (64,), args)
    assert int(ctl[CTL_DONE]) == 0 and int(ctl[CTL_TAIL]) == 0 and int(ctl[CTL_HEAD]) >= 32


def test_refill_moves_pend_into_queue():
    e = emulator.emulator_engine(blocks=2, block=32)
    n, words = 50, 3
    rng = np.random.default_rng(5)
    pend = np.zeros(words * n, dtype=np.uint64)
    hot = rng.choice(words * n, 40, replace=False)
    pend[hot] = rng.integers(1, 2**62, 40, dtype=np.int64).astype(np.uint64)
    before = pend.copy()
    queue = np.zeros(2 * 30, dtype=np.uint64)
    ctl = np.zeros(CTL_WORDS, dtype=np.uint64)
    e.kernel("oracle/oracle_icw", "oracle_icw_refill")((2,), (32,), (pend, np.int64(words * n), np.int64(n), queue,
                                                              np.uint64(30), ctl))
    assert int(ctl[CTL_TAIL]) == 40 and int(ctl[CTL_FLAG]) == 1
    keys, masks = queue[0::2], queue[1::2]
    x = ((keys >> np.uint64(32)) * np.uint64(n) + (keys & np.uint64(0xFFFFFFFF))).astype(np.int64)
    assert np.array_equal(before[x], masks) and np.all(pend[x] == 0)
    assert np.count_nonzero(pend) == 10 and np.array_equal(np.sort(np.concatenate([x, np.flatnonzero(pend)])),
                                                           np.sort(hot))


def test_spread_with_each_variant_and_default(eng):
    g = mixed_graph(9)
    ref = spread(g, [0, 1], "IC", runs=150, seed=3, backend="cpu")
    for v in IC_VARIANTS:
        got = spread(g, [0, 1], "IC", runs=150, seed=3, backend=eng, gpu_variant=v)
        assert np.array_equal(got.counts, ref.counts) and got.mean == ref.mean, v
    assert IC_VARIANT == "async8"  # the fastest variant measured on the GPU machine (bench-oracle.md)
    lt = spread(g, [0, 1], "LT", runs=70, seed=3, backend=eng, gpu_variant="async")  # LT ignores the IC variant
    assert np.array_equal(lt.counts, spread(g, [0, 1], "LT", runs=70, seed=3, backend="cpu").counts)


def test_bad_variant_arguments(eng):
    g = graphs()["random"]
    with pytest.raises(GpucoreError, match="unknown IC variant 'fast'"):
        spread(g, [0], "IC", runs=10, backend=eng, gpu_variant="fast")
    with pytest.raises(GpucoreError, match="unknown IC variant"):
        simulate_worlds(g, [0], "IC", [1], backend="cpu", gpu_variant="fast")
    small = emulator.emulator_engine(blocks=1, block=48)
    with pytest.raises(GpucoreError, match="multiple of 32"):
        spread(g, [0], "IC", runs=10, backend=small, gpu_variant="async")
    w = mc_world_seeds(1, 10)
    with pytest.raises(GpucoreError, match="seed_bits 3"):
        ic_counts_gpu(eng, g.out_indptr, g.out_dst, g.out_prob, np.array([0]), w, variant="async", seed_bits=3)
    with pytest.raises(GpucoreError, match="async_spin"):
        ic_counts_gpu(eng, g.out_indptr, g.out_dst, g.out_prob, np.array([0]), w, variant="async", async_spin=(5, 2))
    with pytest.raises(GpucoreError, match="queue_capacity must be >= 1"):
        ic_counts_gpu(eng, g.out_indptr, g.out_dst, g.out_prob, np.array([0]), w, variant="async", queue_capacity=0)


def test_several_batches_and_sets(eng):
    g = mixed_graph(21)
    worlds = mc_world_seeds(8, 150)
    seeds = np.array([4, 9])
    ref = spread(g, seeds, "IC", runs=150, seed=8, backend="cpu").counts
    for v in NEW:
        stats = {}
        got, sets = ic_counts_gpu(eng, g.out_indptr, g.out_dst, g.out_prob, seeds, worlds, max_words=1, stats=stats,
                                  variant=v, want_sets=True)
        assert np.array_equal(got, ref) and stats["batches"] == 3, v
        assert np.array_equal(sets.sum(axis=1), ref)
        assert sets[:, seeds].all()


def test_async_watchdog_ends_a_stuck_launch():
    """A slot counted in TAIL that is never written (a broken producer) must end the launch with
    the error word set, not hang it (the driver then raises)."""
    from gpucore.oracle.cuda import CTL_ERR, CTL_LIMIT

    g = graphs()["random"]
    n = g.n
    ctl = np.zeros(CTL_WORDS, dtype=np.uint64)
    ctl[CTL_TAIL], ctl[CTL_LIMIT] = 5, 2000  # emulator: polls
    e = emulator.emulator_engine(blocks=2, block=64, schedule_seed=5)
    e.kernel("oracle/oracle_icw", "oracle_icw_async")((2,), (64,), (
        g.out_indptr, g.out_dst, g.out_prob, np.int64(n), np.zeros(64, dtype=np.uint64), np.zeros(n, dtype=np.uint64),
        np.zeros(n, dtype=np.uint64), np.zeros(2 * 64, dtype=np.uint64), np.uint64(64), ctl))
    assert int(ctl[CTL_ERR]) == 1 and int(ctl[CTL_DONE]) == 0
