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
