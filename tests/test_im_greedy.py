"""Greedy max-cover: ties to the lowest id, blocked elements, MRIM's per-round budget."""

import numpy as np
import pytest

from gpucore.graph import from_arcs
from gpucore.im.sampling import greedy


def graph(n):
    return from_arcs(n, [0], [1], 0.5)


def csr(sets):
    off = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
    el = np.array([x for s in sets for x in s], dtype=np.int32)
    return off, el


def brute_greedy(sets, universe, n, k, rounds):
    counts_sets = [set(s) for s in sets]
    covered = [False] * len(sets)
    chosen, gains, per_round, taken = [], [], [0] * rounds, set()
    for _ in range(k * rounds):
        best, best_gain = None, -1
        for e in range(universe):
            if e in taken or per_round[e // n] >= k:
                continue
            gain = sum(1 for i, s in enumerate(counts_sets) if not covered[i] and e in s)
            if gain > best_gain:
                best, best_gain = e, gain
        chosen.append(best)
        gains.append(best_gain)
        taken.add(best)
        per_round[best // n] += 1
        for i, s in enumerate(counts_sets):
            if best in s:
                covered[i] = True
    return chosen, gains, sum(covered)


def test_ties_go_to_the_lowest_id():
    off, el = csr([[3, 1], [2, 0], [5, 4]])
    chosen, gains, covered = greedy(graph(6), off, el, 3)
    assert chosen.tolist() == [0, 1, 4]
    assert gains.tolist() == [1, 1, 1] and covered == 3


def test_zero_gain_steps_pick_unchosen_lowest_ids():
    off, el = csr([[4], [4], [2]])
    chosen, gains, covered = greedy(graph(6), off, el, 4)
    assert chosen.tolist() == [4, 2, 0, 1]
    assert gains.tolist() == [2, 1, 0, 0] and covered == 3


@pytest.mark.parametrize("rounds,k", [(1, 1), (1, 4), (2, 2), (3, 3)])
def test_matches_brute_force(rounds, k):
    rng = np.random.default_rng(5 + rounds * 10 + k)
    n = 12
    for _ in range(20):
        sets = []
        for _ in range(rng.integers(1, 40)):
            size = rng.integers(1, 5)
            sets.append(sorted(set(rng.integers(0, n * rounds, size).tolist())))
        off, el = csr(sets)
        want = brute_greedy(sets, n * rounds, n, k, rounds)
        chosen, gains, covered = greedy(graph(n), off, el, k, rounds=rounds)
        assert chosen.tolist() == want[0]
        assert gains.tolist() == want[1]
        assert covered == want[2]


def test_mrim_respects_k_per_round():
    n, rounds, k = 5, 3, 2
    # element 0 (node 0, round 0) is in every set; round 0 fills first, then others
    sets = [[0, 1, 5 + 1], [0, 2, 10 + 2], [0, 3], [1, 5 + 3]]
    off, el = csr(sets)
    chosen, _gains, _cov = greedy(graph(n), off, el, k, rounds=rounds)
    per_round = np.bincount(chosen // n, minlength=rounds)
    assert per_round.tolist() == [k] * rounds
    assert chosen[0] == 0


def random_collection(rng, n, rounds, sets):
    from gpucore.backend import get_backend
    from gpucore.im.rrsets import RRCollection

    lists = [sorted(set(rng.integers(0, n * rounds, rng.integers(1, 6)).tolist())) for _ in range(sets)]
    off, el = csr(lists)
    be = get_backend("cpu")
    coll = RRCollection(np, be, 0, n, rounds)
    coll.reserve(len(lists), int(off[-1]))
    coll.append(np.diff(off), [(0, el)])
    return coll, lists


@pytest.mark.parametrize("rounds,k", [(1, 5), (2, 3)])
def test_stepwise_greedy_equals_the_fast_path(rounds, k):
    """The Selection interface (counts / argmax / cover, as a distributed run uses it) gives the greedy."""
    from gpucore.backend import get_backend
    from gpucore.im.engine import make_selector, stepwise_greedy

    rng = np.random.default_rng(11)
    n = 15
    coll, lists = random_collection(rng, n, rounds, 200)
    sel = make_selector(n, rounds, get_backend("cpu"))
    fast = sel.greedy(coll, k)
    slow = stepwise_greedy(sel.start(coll, k), k * rounds)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    assert fast[2] == slow[2] == brute_greedy(lists, n * rounds, n, k, rounds)[2]


def test_stepwise_greedy_over_two_collections_equals_one():
    """Counts combined over two halves (what an all-reduce over ranks does) give the greedy of the union."""
    from gpucore.backend import get_backend
    from gpucore.im.engine import make_selector, stepwise_greedy
    from gpucore.im.rrsets import RRCollection

    rng = np.random.default_rng(12)
    n, k = 20, 6
    whole, lists = random_collection(rng, n, 1, 300)
    halves = []
    for part in (lists[:170], lists[170:]):
        off, el = csr(part)
        c = RRCollection(np, get_backend("cpu"), 0, n, 1)
        c.append(np.diff(off), [(0, el)])
        halves.append(c)
    sel = make_selector(n, 1, get_backend("cpu"))
    a, b = sel.start(halves[0], k), sel.start(halves[1], k)
    chosen, gains = [], []
    for _ in range(k):  # what each rank's stepwise_greedy(.., combine=all-reduce) does, side by side
        total = a.counts + b.counts
        e, gain = a.argmax(total)
        assert b.argmax(total) == (e, gain)
        assert a.cover(e) + b.cover(e) == gain
        chosen.append(e)
        gains.append(gain)
    want = sel.greedy(whole, k)
    assert chosen == want[0].tolist() and gains == want[1].tolist()
    assert a.covered + b.covered == want[2]
    # one rank alone through stepwise_greedy with an identity combine is its own greedy
    alone = stepwise_greedy(sel.start(halves[0], k), k, combine=lambda counts: counts)
    np.testing.assert_array_equal(alone[0], sel.greedy(halves[0], k)[0])


def test_sampler_registry():
    from gpucore.backend import get_backend
    from gpucore.errors import GpucoreError
    from gpucore.im.engine import SAMPLERS, make_engine

    g = graph(5)
    eng = make_engine(g, "IC", 1, 0, get_backend("cpu"), "gim")
    assert eng.sampler.name == "gim-cpu" and eng.selector.name == "greedy-cpu"
    with pytest.raises(GpucoreError, match="--sampler 'nope'"):
        make_engine(g, "IC", 1, 0, get_backend("cpu"), "nope")
    assert set(SAMPLERS) >= {"gim", "fused"}
    import importlib.util

    if importlib.util.find_spec("gpucore.im.fused") is None:  # the fused sampler is optional: one clear line
        with pytest.raises(GpucoreError, match="--sampler fused: not available"):
            make_engine(g, "IC", 1, 0, get_backend("cpu"), "fused")
    else:
        assert make_engine(g, "IC", 1, 0, get_backend("cpu"), "fused").sampler.n == g.n
