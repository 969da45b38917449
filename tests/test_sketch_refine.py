"""DiFuseR's lazy refinement (gpucore.im.sketch.refine) against a brute-force greedy on coverage functions.

A coverage function (vertex v covers the items of its set; the gain of v is the number of its items
not covered yet) is what the exact gain on fixed worlds is, so the lazy choice must equal the
brute-force argmax over the candidates and every earlier candidate, ties to the lowest id."""

import numpy as np
import pytest

from gpucore.im.sketch.refine import LazyGains


class Coverage:
    def __init__(self, sets):
        self.sets = [set(s) for s in sets]
        self.covered = set()
        self.calls = []

    def gain(self, v):
        return len(self.sets[v] - self.covered)

    def gains_of(self, vertices):
        self.calls.append(list(vertices))
        return np.array([self.gain(v) for v in vertices], dtype=np.int64)

    def add(self, v):
        self.covered |= self.sets[v]


def random_coverage(seed, n=60, items=200):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 40, size=n)
    return Coverage([rng.choice(items, size=s, replace=False) for s in sizes])


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("width", [1, 3, 8])
def test_lazy_choice_equals_brute_force(seed, width):
    rng = np.random.default_rng(100 + seed)
    lazy_cov, brute_cov = random_coverage(seed), random_coverage(seed)
    lazy = LazyGains(60, lazy_cov.gains_of)
    earlier, chosen = set(), []
    for _ in range(15):
        free = [v for v in range(60) if v not in chosen]
        candidates = sorted(rng.choice(free, size=min(width, len(free)), replace=False).tolist())  # any filter
        earlier = (earlier | set(candidates)) - set(chosen)
        want = min(earlier, key=lambda v: (-brute_cov.gain(v), v))
        got = lazy.choose(candidates)
        assert got == want
        chosen.append(got)
        lazy_cov.add(got)
        brute_cov.add(want)
    assert lazy.probes == sum(len(c) for c in lazy_cov.calls)


def test_an_earlier_candidate_wins_over_the_current_ones():
    cov = Coverage([range(0, 50), range(40, 80), range(0, 5), range(100, 103)])
    lazy = LazyGains(4, cov.gains_of)
    assert lazy.choose([0, 1]) == 0
    cov.add(0)
    # the filter now offers only 2 and 3 (gains 0 and 3); 1 (gain 30 now) was a candidate before
    assert lazy.choose([2, 3]) == 1
    cov.add(1)
    assert lazy.choose([2, 3]) == 3


def test_stale_bounds_are_probed_only_while_they_could_win():
    # disjoint sets of sizes 20, 19, ...: gains never shrink, so each later seed re-probes only the top bound
    cov = Coverage([range(100 * v, 100 * v + 20 - v) for v in range(10)])
    lazy = LazyGains(10, cov.gains_of)
    assert lazy.choose(list(range(10))) == 0
    assert lazy.probes == 10
    for want in range(1, 10):
        assert lazy.choose([]) == want
    assert lazy.probes == 10 + 9  # one re-probe of the top bound per seed, then it is fresh


def test_ties_go_to_the_lowest_id():
    cov = Coverage([range(0, 5), range(10, 15), range(20, 25)])
    lazy = LazyGains(3, cov.gains_of)
    assert lazy.choose([2, 1]) == 1
    assert lazy.choose([0]) == 0  # 0 (gain 5) against the earlier candidate 2 (gain 5): the lower id
    assert lazy.choose([]) == 2
