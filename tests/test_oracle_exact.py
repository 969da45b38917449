"""Exact tests of the oracle's forward simulation (CPU reference), then statistical ones.

1. One world at a time: gpucore's activated set equals the independent pure-Python one
   (tests/test_oracle_reference.py) for many worlds, graphs, seed sets, IC and LT.
2. Monte-Carlo run s of spread(seed=S) is exactly world mix(S, ORACLE, s).
3. Coverage: on tiny graphs the exact expected spread is enumerated (IC: all 2^m live-arc worlds,
   m <= 16; LT: every in-arc choice). Over R seeded repetitions the 95% CI must cover it a number
   of times inside the two-sided binomial acceptance region of Binomial(R, 0.95) at false-alarm
   rate 1e-4 (the normal CI's true coverage at 1000 runs is within 0.5% of nominal).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucore.graph import from_arcs
from gpucore.oracle import mc_world_seeds, simulate_world, simulate_worlds, spread
from tests.test_oracle_reference import (
    binomial_acceptance,
    canonical,
    exact_ic_spread,
    exact_lt_spread,
    ic_world_set,
    lt_world_set,
)

FALSE_ALARM = 1e-4


def random_arcs(n: int, m: int, rng, pmin=0.05, pmax=0.95):
    pairs = set()
    while len(pairs) < m:
        u, v = (int(x) for x in rng.integers(0, n, 2))
        if u != v:
            pairs.add((u, v))
    probs = rng.uniform(pmin, pmax, m).astype(np.float32)
    return canonical([(u, v, float(p)) for (u, v), p in zip(sorted(pairs), probs)])


def graph_of(n, arcs):
    return from_arcs(n, [a[0] for a in arcs], [a[1] for a in arcs], [a[2] for a in arcs])


# IC graph: 7 users, 15 arcs; LT graph: 6 users, 12 arcs (in-degree <= 4: 4^6 in-arc choices at most)
IC_ARCS = canonical([(0, 1, 0.6), (0, 2, 0.3), (1, 2, 0.5), (1, 3, 0.4), (2, 3, 0.7), (2, 4, 0.2), (3, 4, 0.9),
                     (3, 5, 0.35), (4, 5, 0.5), (4, 6, 0.15), (5, 6, 0.8), (6, 0, 0.25), (5, 1, 0.1), (4, 2, 0.45),
                     (6, 3, 0.55)])
LT_ARCS = canonical([(0, 1, 0.6), (0, 2, 0.3), (1, 2, 0.5), (1, 3, 0.4), (2, 3, 0.45), (2, 4, 0.2), (3, 4, 0.9),
                     (3, 5, 0.35), (4, 5, 0.5), (5, 0, 0.25), (4, 1, 0.3), (5, 2, 0.4)])


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("case", range(4))
def test_world_sets_equal_independent_reference(model, case):
    rng = np.random.default_rng(100 + case)
    n = int(rng.integers(5, 12))
    arcs = random_arcs(n, int(rng.integers(n, 3 * n)), rng)
    g = graph_of(n, arcs)
    seeds = [int(x) for x in rng.choice(n, int(rng.integers(1, 4)), replace=False)]
    worlds = [int(w) for w in rng.integers(0, 2**63, 40, dtype=np.int64)] + [0, 2**64 - 1]
    got = simulate_worlds(g, seeds, model, worlds)
    ref = ic_world_set if model == "IC" else lt_world_set
    for w, res in zip(worlds, got):
        assert set(res.active.tolist()) == ref(n, arcs, seeds, w), (model, case, w)
        assert res.count == len(res.active)


def test_lt_rescaled_weights_are_used():
    # in-weights 0.9 + 0.8 into node 2 exceed 1: rescaled to 0.529.., 0.470..; both seeds -> sum 1 > T always
    arcs = canonical([(0, 2, 0.9), (1, 2, 0.8)])
    g = graph_of(3, arcs)
    for w in range(50):
        assert set(simulate_world(g, [0, 1], "LT", w).active.tolist()) == {0, 1, 2}
        assert set(simulate_world(g, [0], "LT", w).active.tolist()) == lt_world_set(3, arcs, [0], w)


def test_spread_runs_are_the_documented_worlds():
    rng = np.random.default_rng(7)
    arcs = random_arcs(9, 20, rng)
    g = graph_of(9, arcs)
    for model in ("IC", "LT"):
        res = spread(g, [0, 4], model, runs=64, seed=12345, backend="cpu")
        worlds = mc_world_seeds(12345, 64)
        assert [len(r.active) for r in simulate_worlds(g, [0, 4], model, worlds)] == res.counts.tolist()
        assert res.runs == 64 and res.num_seeds == 2 and res.model == model
        assert res.mean == pytest.approx(res.counts.mean())
        assert res.stderr == pytest.approx(res.counts.std(ddof=1) / 8)
        assert res.ci_high - res.mean == pytest.approx(1.959963984540054 * res.stderr)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_counts_do_not_depend_on_worker_count(model):
    from gpucore.oracle.cpu import counts_cpu

    rng = np.random.default_rng(8)
    g = graph_of(30, random_arcs(30, 90, rng, 0.05, 0.5))
    weights = g.edge_probabilities(model)[1]
    worlds = mc_world_seeds(3, 501)
    seeds = np.array([1, 2])
    got = [counts_cpu(g.out_indptr, g.out_dst, weights, seeds, worlds, model, c) for c in (1, 2, 3, 7)]
    for other in got[1:]:
        assert np.array_equal(got[0], other)


def test_deterministic_graph_has_zero_variance():
    g = graph_of(4, canonical([(0, 1, 1.0), (1, 2, 1.0), (2, 3, 0.0)]))
    for model in ("IC", "LT"):
        r = spread(g, [0], model, runs=100, seed=1, backend="cpu")
        assert r.mean == 3 and r.stderr == 0 and r.ci == (3.0, 3.0) and r.covers(3)


def _coverage(n, arcs, seeds, model, exact, reps=400, runs=1000):
    g = graph_of(n, arcs)
    covered, pooled = 0, []
    for rep in range(reps):
        r = spread(g, seeds, model, runs=runs, seed=1000 + rep, backend="cpu")
        covered += r.covers(exact)
        pooled.append(r.counts)
    pooled = np.concatenate(pooled)
    return covered, pooled


@pytest.mark.parametrize("model,seeds", [("IC", [0]), ("IC", [2, 5]), ("LT", [0]), ("LT", [1, 4])])
def test_ci_covers_exact_spread_at_stated_rate(model, seeds):
    if model == "IC":
        n, arcs = 7, IC_ARCS
        exact = exact_ic_spread(n, arcs, seeds)
    else:
        n, arcs = 6, LT_ARCS
        exact = exact_lt_spread(n, arcs, seeds)
    assert len(seeds) < exact < n  # a non-degenerate case
    reps = 400
    covered, pooled = _coverage(n, arcs, seeds, model, exact, reps=reps)
    lo, hi = binomial_acceptance(reps, 0.95, FALSE_ALARM)
    assert lo <= covered <= hi, f"{model}: CI covered the exact {exact:.6f} in {covered}/{reps} runs, accept [{lo}, {hi}]"
    # the pooled mean of 400k runs is within 3.9 standard errors (two-sided 1e-4) of the exact value
    se = pooled.std(ddof=1) / math.sqrt(pooled.size)
    assert abs(pooled.mean() - exact) <= 3.8906 * se, (pooled.mean(), exact, se)


def test_independent_seeds_agree_within_ci():
    rng = np.random.default_rng(11)
    g = graph_of(200, random_arcs(200, 1000, rng, 0.01, 0.3))
    for model in ("IC", "LT"):
        a = spread(g, [0, 1, 2], model, runs=4000, seed=1, backend="cpu")
        b = spread(g, [0, 1, 2], model, runs=4000, seed=2, backend="cpu")
        z = abs(a.mean - b.mean) / math.hypot(a.stderr, b.stderr)
        assert z < 3.8906, (model, a.mean, b.mean)  # two-sided false alarm 1e-4
