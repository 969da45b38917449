"""Multi-round IM in the oracle: ``multi_round_spread`` and ``gpucore verify`` on multi-round results.

Exact first (every run is the union of replayable per-round worlds; on a tiny graph the exact
influence of a plan, enumerated over every live-arc world, lies in the CI at its stated rate), then
the verify command: a real multi-round result passes, tampered ones fail or are refused.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from gpucore.cli import main
from gpucore.errors import GpucoreError
from gpucore.graph import from_arcs, load_graph, save_graph
from gpucore.graph.generators import preferential_attachment
from gpucore.im import imm
from gpucore.oracle import multi_round_spread, simulate_world
from gpucore.random import Stream, mix_py
from tests.test_oracle_exact import IC_ARCS

PLAN = [[0], [3], [0, 5]]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    g = from_arcs(7, [a[0] for a in IC_ARCS], [a[1] for a in IC_ARCS], [a[2] for a in IC_ARCS], name="ic")
    return load_graph(save_graph(g, tmp_path_factory.mktemp("mr") / "ic.gcsr"))


def exact_ic_probabilities(n: int, arcs, seeds) -> list[float]:
    """P(v active) for every v, enumerating all 2^m live-arc worlds (P(live) = ceil(p 2^53) / 2^53)."""
    f32 = lambda p: float(np.float32(p))  # noqa: E731
    plive = [math.ceil(Fraction(f32(p)) * (1 << 53)) / float(1 << 53) for (_, _, p) in arcs]
    prob = [0.0] * n
    for live in range(1 << len(arcs)):
        weight, out = 1.0, [[] for _ in range(n)]
        for e, (u, v, _) in enumerate(arcs):
            weight *= plive[e] if live >> e & 1 else 1.0 - plive[e]
            if live >> e & 1:
                out[u].append(v)
        seen, stack = set(seeds), list(seeds)
        while stack:
            for v in out[stack.pop()]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        for v in seen:
            prob[v] += weight
    return prob


def exact_plan_influence(n: int, arcs, plan) -> float:
    """E|A_0 u ... u A_{T-1}| = sum_v 1 - prod_t (1 - P_t(v)) (the rounds' worlds are independent)."""
    per_round = [exact_ic_probabilities(n, arcs, seeds) for seeds in plan]
    return sum(1.0 - math.prod(1.0 - p[v] for p in per_round) for v in range(n))


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_every_run_is_the_union_of_its_replayable_round_worlds(tiny, model):
    res = multi_round_spread(tiny, PLAN, model, runs=40, seed=9, backend="cpu")
    for s in range(40):
        union = set()
        for t, seeds in enumerate(PLAN):
            world = mix_py(9, int(Stream.ORACLE), s, t)
            union |= set(simulate_world(tiny, seeds, model, world).active.tolist())
        assert res.counts[s] == len(union)
    assert res.num_seeds == 4 and res.runs == 40 and res.backend == "cpu"
    # a run does not depend on how many runs there are
    assert np.array_equal(multi_round_spread(tiny, PLAN, model, runs=10, seed=9, backend="cpu").counts, res.counts[:10])


def test_ci_covers_the_exact_influence_at_its_stated_rate(tiny):
    """40 independent 95% CIs (seeds 0..39, 1,000 runs each) must cover the exact influence of the plan
    at least 33 times: P(Binomial(40, 0.95) < 33) = 0.0003, the false-alarm rate of this test."""
    exact = exact_plan_influence(7, IC_ARCS, PLAN)
    single = exact_ic_probabilities(7, IC_ARCS, PLAN[0])
    assert exact > sum(single) + 0.5  # the later rounds add influence: the plan is not one round in disguise
    covered = sum(multi_round_spread(tiny, PLAN, "IC", runs=1000, seed=s, backend="cpu").covers(exact)
                  for s in range(40))
    assert stats.binom.cdf(32, 40, 0.95) < 0.001
    assert covered >= 33, covered


def test_bad_plans_are_refused(tiny):
    with pytest.raises(GpucoreError, match="round 1 seeds: internal id 3 appears more than once"):
        multi_round_spread(tiny, [[0], [3, 3]], "IC", runs=10)
    with pytest.raises(GpucoreError, match="round 0 seeds: empty seed set"):
        multi_round_spread(tiny, [[], [3]], "IC", runs=10)
    with pytest.raises(GpucoreError, match="out of range"):
        multi_round_spread(tiny, [[0], [7]], "IC", runs=10)
    with pytest.raises(GpucoreError, match="one per round"):
        multi_round_spread(tiny, [], "IC", runs=10)


# ---- gpucore verify on a multi-round result ------------------------------------------------------


@pytest.fixture(scope="module")
def mrim(tmp_path_factory):
    """A multi-round IM result of gpucore.im on a 300-node preferential-attachment graph (weighted
    cascade; IC, 3 rounds, k = 3)."""
    src, dst = preferential_attachment(300, 1500, 0.3, 4)
    key = np.unique(src.astype(np.int64) * 300 + dst)
    src, dst = key // 300, key % 300
    indeg = np.bincount(dst, minlength=300)
    folder = tmp_path_factory.mktemp("mrim")
    graph = load_graph(save_graph(from_arcs(300, src, dst, 1.0 / indeg[dst]), folder / "g.gcsr"))
    result = imm(graph, 3, 0.3, "IC", rounds=3, seed=1, backend="cpu")
    assert result["rounds"] == 3 and len(result["seed_ids"]) == 3
    return graph, result


def _verify(tmp_path, capsys, graph, result):
    path = tmp_path / "mrim.json"
    path.write_text(json.dumps(result))
    code = main(["verify", str(path), "--graph", str(graph.path), "--runs", "3000", "--backend", "cpu"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_verify_passes_a_multi_round_result(tmp_path, capsys, mrim):
    graph, result = mrim
    code, report, _ = _verify(tmp_path, capsys, graph, result)
    assert code == 0 and report["passed"], report["failures"]
    assert report["checked"] == "mrim" and report["rounds"] == 3 and report["runs"] == 3000
    assert report["seed_ids"] == result["seed_ids"]
    assert report["ci_low"] * 0.9 <= result["estimated_spread"] <= report["ci_high"] * 1.1
    # the plan is worth more than any of its rounds alone (the rounds' worlds are independent)
    one = multi_round_spread(graph, result["seed_ids"][:1], "IC", runs=3000, seed=0, backend="cpu")
    assert report["mean"] > one.ci_high


def _tampered(result, **changes):
    """A copy of ``result`` with ``changes`` applied (a change to None removes the field)."""
    bad = json.loads(json.dumps(result))
    bad.update(changes)
    return {key: value for key, value in bad.items() if value is not None}


def test_verify_fails_a_tampered_multi_round_result(tmp_path, capsys, mrim):
    graph, result = mrim
    code, report, _ = _verify(tmp_path, capsys, graph, _tampered(result, estimated_spread=result["estimated_spread"] * 1.5))
    assert code == 1 and "outside the oracle's CI" in report["failures"][0]
    ids = [list(r) for r in result["seed_ids"]]
    ids[1][1] = ids[1][0]
    code, report, _ = _verify(tmp_path, capsys, graph, _tampered(result, seed_ids=ids))
    assert code == 1 and any("round 1" in f and "appears more than once" in f for f in report["failures"])
    assert any("seed_ids do not map to the logged original seeds" in f for f in report["failures"])
    code, report, _ = _verify(tmp_path, capsys, graph, _tampered(result, seed_ids=[[0], [1], [2]], seeds=None))
    assert code == 1 and any("k=3 but 1 seeds" in f for f in report["failures"])


@pytest.mark.parametrize("changes,needle", [
    ({"seed_ids": [1, 2, 3], "seeds": None}, "must be a list of 3 lists"),
    ({"rounds": 2}, "must be a list of 2 lists"),
    ({"rounds": "three"}, "rounds must be an integer"),
])
def test_malformed_multi_round_results_are_refused(tmp_path, capsys, mrim, changes, needle):
    graph, result = mrim
    code, report, err = _verify(tmp_path, capsys, graph, _tampered(result, **changes))
    assert code == 2 and report is None and err.startswith("gpucore: error: ") and needle in err, err
