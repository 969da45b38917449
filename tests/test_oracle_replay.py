"""Adaptive replay: hand-computed rounds (IC residual graph, LT carry-over), then the reference.

The active set after round i must be the diffusion of S_1 u ... u S_i in the world: IC reachability,
LT least fixed point (tests/test_oracle_reference.py computes both from scratch per round, so any
reset of LT in-weights or thresholds between rounds would disagree).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.graph import from_arcs
from gpucore.oracle import ReplayResult, mc_world_seeds, replay, simulate_world, spread
from tests.test_oracle_exact import graph_of, random_arcs
from tests.test_oracle_reference import canonical, lt_T, replay_counts

# Deterministic IC graph (p in {0, 1}): 0->1->2 -/-> 3->4->5->1, 6->7
DET = canonical([(0, 1, 1.0), (1, 2, 1.0), (2, 3, 0.0), (3, 4, 1.0), (4, 5, 1.0), (5, 1, 1.0), (6, 7, 1.0)])


def det_graph():
    return graph_of(8, DET)


def test_ic_rounds_by_hand():
    g = det_graph()
    rounds = [{"seed_ids": [0], "newly_active": 3}, {"seed_ids": [3], "newly_active": 3},
              {"seed_ids": [6], "newly_active": 2}]
    for world in (0, 1, 2**64 - 1):
        r = replay(g, rounds, "IC", world, eta=8)
        assert isinstance(r, ReplayResult)
        assert r.newly_active == [3, 3, 2]  # round 2 does not re-enter 1 through 5->1
        assert [x.active_after for x in r.rounds] == [3, 6, 8]
        assert r.total_active == 8 and r.reached and r.matches and r.passed and r.first_mismatch is None


def _lt_carry_graph():
    # a=0 and b=1 each give v=2 weight 0.5; v gives x=3 weight 1.0
    return canonical([(0, 2, 0.5), (1, 2, 0.5), (2, 3, 1.0)])


def test_lt_carry_over_across_rounds_by_hand():
    arcs = _lt_carry_graph()
    g = graph_of(4, arcs)
    # a world where T_v >= 2^39: one in-arc (q = 2^39) is not enough, both (q = 2^40 > T_v) are
    world = next(w for w in range(1000) if lt_T(w, 2) >= 2**39)
    r = replay(g, [[0], [1]], "LT", world, eta=4)
    # round 0: a alone (acc_v = 2^39 <= T_v); round 1: b adds 2^39 to the carried 2^39 -> v, then x
    assert r.newly_active == [1, 3] and r.total_active == 4 and r.passed
    # without carry-over b alone would not activate v:
    assert simulate_world(g, [1], "LT", world).count == 1
    # a world where T_v < 2^39: a activates v (and x) in round 0, b adds one user in round 1
    world2 = next(w for w in range(1000) if lt_T(w, 2) < 2**39)
    assert replay(g, [[0], [1]], "LT", world2, eta=4).newly_active == [3, 1]


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("case", range(5))
def test_replay_equals_reference_rounds(model, case):
    rng = np.random.default_rng(500 + case)
    n = int(rng.integers(8, 16))
    arcs = random_arcs(n, int(rng.integers(n, 3 * n)), rng, 0.1, 0.7)
    g = graph_of(n, arcs)
    world = int(rng.integers(0, 2**63))
    order = [int(x) for x in rng.permutation(n)]
    rounds, i = [], 0
    while i < n and len(rounds) < 5:
        size = int(rng.integers(1, 3))
        rounds.append(order[i : i + size])
        i += size
    expect = replay_counts(n, arcs, rounds, model, world)
    r = replay(g, rounds, model, world, eta=1 + sum(expect))  # eta never reached: no "after eta" flag
    assert r.newly_active == expect
    # the only possible disagreement: a seed that an earlier round's diffusion activated
    for x in r.rounds:
        if x.problem:
            assert "was already active" in x.problem
    # the final active set is the diffusion of the union of all batches
    union = sorted({s for b in rounds for s in b})
    assert r.total_active == simulate_world(g, union, model, world).count


def test_logged_mismatch_is_reported_with_round():
    g = det_graph()
    rounds = [{"seed_ids": [0], "newly_active": 3}, {"seed_ids": [3], "newly_active": 4},
              {"seed_ids": [6], "newly_active": 1}]
    r = replay(g, rounds, "IC", 5, eta=8)
    assert not r.matches and not r.passed and r.reached
    assert r.first_mismatch == "round 1: logged newly_active 4, replay activates 3"
    assert r.newly_active == [3, 3, 2]  # the replay goes on after a mismatch
    assert r.rounds[2].problem == "round 2: logged newly_active 1, replay activates 2"
    assert r.to_dict()["first_mismatch"] == r.first_mismatch


def test_seed_already_active_is_a_mismatch():
    g = det_graph()
    r = replay(g, [[0], [2, 3]], "IC", 5, eta=8)
    assert r.first_mismatch == "round 1: seed 2 was already active"
    assert r.newly_active == [3, 3]  # 2 is not counted again


def test_duplicate_and_empty_batches_are_mismatches():
    g = det_graph()
    r = replay(g, [[6, 6]], "IC", 5, eta=2)
    assert r.first_mismatch == "round 0: seed 6 appears twice in the batch" and r.newly_active == [2]
    r = replay(g, [[0], []], "IC", 5, eta=10)
    assert r.first_mismatch == "round 1: empty seed batch"


def test_eta_not_reached_fails_without_mismatch():
    g = det_graph()
    r = replay(g, [{"seed_ids": [0], "newly_active": 3}], "IC", 5, eta=4)
    assert r.matches and not r.reached and not r.passed and r.total_active == 3


def test_round_after_eta_reached_is_a_mismatch():
    g = det_graph()
    r = replay(g, [[0], [6]], "IC", 5, eta=3)
    assert r.reached and r.first_mismatch.startswith("round 1: eta=3 was already reached")


def test_monte_carlo_runs_are_replayable_worlds():
    rng = np.random.default_rng(3)
    g = graph_of(40, random_arcs(40, 160, rng, 0.05, 0.4))
    for model in ("IC", "LT"):
        sp = spread(g, [0, 7], model, runs=20, seed=99, backend="cpu")
        worlds = mc_world_seeds(99, 20)
        for s in (0, 5, 19):
            assert replay(g, [[0, 7]], model, int(worlds[s]), eta=1).total_active == sp.counts[s]


def test_large_ids_and_int64_offsets_path():
    # a graph built with from_arcs has int64 out_indptr; replay takes numpy integer ids too
    g = from_arcs(3, [0, 1], [1, 2], [1.0, 1.0])
    r = replay(g, [np.array([0], dtype=np.uint32)], "IC", np.uint64(2**63 + 5), eta=3)
    assert r.passed and r.world_seed == 2**63 + 5
