"""An independent pure-Python statement of the oracle's worlds, and checks of it.

Nothing here imports gpucore's hash or traversal code: the keyed hash, the world realizations
(IC live arcs, LT fixed-point weights and thresholds), one-world diffusion and the exact expected
spread by enumeration are written again from their definitions in ``docs/oracle.md``. The other
oracle tests compare gpucore against these functions; this file checks the functions themselves
against SplitMix64's published outputs and the test vectors printed in ``docs/oracle.md``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "oracle.md"
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
ORACLE_STREAM = 19
LT_BITS = 40


# ----------------------------------------------------------------------------------- the hash


def fmix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def keyed(*words: int) -> int:
    """mix(w0, ..., wr): h = 0; for each word h = fmix((h ^ w) + GOLDEN) (mod 2^64)."""
    h = 0
    for w in words:
        h = fmix(((h ^ (w & MASK)) + GOLDEN) & MASK)
    return h


def unit(h: int) -> Fraction:
    """uniform(h) = (h >> 11) / 2^53, exactly."""
    return Fraction(h >> 11, 1 << 53)


# ----------------------------------------------------------------------------------- worlds


def f32(x: float) -> float:
    return float(np.float32(x))


def ic_arc_live(world: int, eid: int, p: float) -> bool:
    return unit(keyed(world, eid)) < Fraction(f32(p))


def lt_q(w: float) -> int:
    """floor(w * 2^40) of the float32 weight w, exactly."""
    return math.floor(Fraction(f32(w)) * (1 << LT_BITS))


def lt_T(world: int, v: int) -> int:
    return keyed(world, v) >> (64 - LT_BITS)


def mc_world(seed: int, run: int) -> int:
    return keyed(seed, ORACLE_STREAM, run)


def lt_weights(n: int, arcs: list[tuple[int, int, float]]) -> list[float]:
    """LT weight of each arc (arc order): float32 p, nodes whose float64 in-sum exceeds 1 + 1e-6 rescaled.

    The in-sum is taken in in-CSR order (arcs into v sorted by source), as gpucore does.
    """
    sums = [0.0] * n
    for (u, v, p) in sorted(arcs, key=lambda a: (a[1], a[0])):
        sums[v] += f32(p)
    out = []
    for (u, v, p) in arcs:
        s = sums[v]
        out.append(f32(f32(p) * (1.0 / s)) if s > 1.0 + 1e-6 else f32(p))
    return out


def canonical(arcs):
    """Arcs in canonical order (sorted by source, then target): position = original edge id."""
    return sorted(arcs, key=lambda a: (a[0], a[1]))


def ic_world_set(n: int, arcs, seeds, world: int) -> set[int]:
    """Users reachable from seeds over the arcs live in IC world ``world`` (arcs in canonical order)."""
    out = [[] for _ in range(n)]
    for eid, (u, v, p) in enumerate(arcs):
        if ic_arc_live(world, eid, p):
            out[u].append(v)
    active, stack = set(seeds), list(seeds)
    while stack:
        u = stack.pop()
        for v in out[u]:
            if v not in active:
                active.add(v)
                stack.append(v)
    return active


def lt_world_set(n: int, arcs, seeds, world: int, active: set[int] | None = None) -> set[int]:
    """LT fixed point: v joins once the q of its active in-arcs sum to more than T_v (round-free)."""
    w = lt_weights(n, arcs)
    q = [lt_q(x) for x in w]
    active = set(active or ()) | set(seeds)
    changed = True
    while changed:
        changed = False
        for v in range(n):
            if v in active:
                continue
            total = sum(q[e] for e, (a, b, _) in enumerate(arcs) if b == v and a in active)
            if total > lt_T(world, v):
                active.add(v)
                changed = True
    return active


def replay_counts(n: int, arcs, rounds, model: str, world: int) -> list[int]:
    """Users newly active per round: the active set after round i is the diffusion of S_1 u ... u S_i
    in the world (IC: reachability; LT: the least fixed point), which is what carrying the state
    across rounds (active users, accumulated LT in-weights, fixed thresholds) must give."""
    counts, seeds, before = [], set(), 0
    for batch in rounds:
        seeds |= set(batch)
        after = ic_world_set(n, arcs, sorted(seeds), world) if model == "IC" else lt_world_set(n, arcs, sorted(seeds), world)
        counts.append(len(after) - before)
        before = len(after)
    return counts


# ----------------------------------------------------------------------------------- exact spread


def exact_ic_spread(n: int, arcs, seeds) -> float:
    """E|reach(seeds)| by enumerating all 2^m live-arc subsets (P(live) = ceil(p 2^53) / 2^53)."""
    m = len(arcs)
    assert m <= 16
    plive = [math.ceil(Fraction(f32(p)) * (1 << 53)) / float(1 << 53) for (_, _, p) in arcs]
    total = 0.0
    for live in range(1 << m):
        prob = 1.0
        out = [[] for _ in range(n)]
        for e in range(m):
            if live >> e & 1:
                prob *= plive[e]
                out[arcs[e][0]].append(arcs[e][1])
            else:
                prob *= 1.0 - plive[e]
        if prob == 0.0:
            continue
        seen, stack = set(seeds), list(seeds)
        while stack:
            u = stack.pop()
            for v in out[u]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        total += prob * len(seen)
    return total


def exact_lt_spread(n: int, arcs, seeds) -> float:
    """E|active| under LT by enumerating every in-arc choice: node v keeps in-arc e with probability
    q_e / 2^40 and none with the rest (the live-arc form of LT, exact for fixed-point thresholds)."""
    w = lt_weights(n, arcs)
    q = [lt_q(x) for x in w]
    one = 1 << LT_BITS
    choices = []
    for v in range(n):
        opts = [(e, Fraction(q[e], one)) for e, (a, b, _) in enumerate(arcs) if b == v]
        rest = 1 - sum(p for _, p in opts)
        assert rest >= 0
        choices.append(opts + [(None, rest)])
    total = Fraction(0)
    for combo in itertools.product(*choices):
        prob = Fraction(1)
        for _, p in combo:
            prob *= p
        if prob == 0:
            continue
        out = [[] for _ in range(n)]
        for v, (e, _) in enumerate(combo):
            if e is not None:
                out[arcs[e][0]].append(v)
        seen, stack = set(seeds), list(seeds)
        while stack:
            u = stack.pop()
            for x in out[u]:
                if x not in seen:
                    seen.add(x)
                    stack.append(x)
        total += prob * len(seen)
    return float(total)


def binomial_acceptance(trials: int, p: float, alpha: float) -> tuple[int, int]:
    """[lo, hi] with P(X < lo) <= alpha/2 and P(X > hi) <= alpha/2 for X ~ Binomial(trials, p)."""
    pmf = [math.comb(trials, k) * p**k * (1 - p) ** (trials - k) for k in range(trials + 1)]
    lo, acc = 0, 0.0
    while acc + pmf[lo] <= alpha / 2:
        acc += pmf[lo]
        lo += 1
    hi, acc = trials, 0.0
    while acc + pmf[hi] <= alpha / 2:
        acc += pmf[hi]
        hi -= 1
    return lo, hi


# ----------------------------------------------------------------------------------- doc vectors


def doc_vectors() -> dict:
    """The JSON block after the marker ``<!-- test-vectors -->`` in docs/oracle.md."""
    text = DOC.read_text()
    m = re.search(r"<!-- test-vectors -->\s*```json\n(.*?)```", text, re.S)
    assert m, "docs/oracle.md lacks the test-vector block"
    return json.loads(m.group(1))


def compute_vectors() -> dict:
    """Recompute every vector of docs/oracle.md from the definitions above."""
    v = doc_vectors()
    g = v["graph"]
    n, arcs = g["n"], [tuple(a) for a in g["arcs"]]
    assert arcs == canonical(arcs)
    world = v["world_seed"]
    lt_w = lt_weights(n, arcs)
    out = {
        "mix": [{"words": r["words"], "hex": f"{keyed(*r['words']):016x}"} for r in v["mix"]],
        "ic": [
            {"eid": e, "arc": [a, b], "p": p, "hash": f"{keyed(world, e):016x}",
             "uniform": float(unit(keyed(world, e))), "live": ic_arc_live(world, e, p)}
            for e, (a, b, p) in enumerate(arcs)
        ],
        "lt_weights": [{"eid": e, "w": lt_w[e], "q": lt_q(lt_w[e])} for e in range(len(arcs))],
        "lt_thresholds": [{"v": x, "T": lt_T(world, x), "lambda": lt_T(world, x) / 2**LT_BITS} for x in range(n)],
        "ic_activated": sorted(ic_world_set(n, arcs, v["seeds"], world)),
        "lt_activated": sorted(lt_world_set(n, arcs, v["seeds"], world)),
        "mc_world_seeds": [{"seed": r["seed"], "run": r["run"], "world_seed": mc_world(r["seed"], r["run"])}
                           for r in v["mc_world_seeds"]],
        "replay": [dict(r, newly_active=replay_counts(n, arcs, r["rounds"], r["model"], world)) for r in v["replay"]],
    }
    return out


# ----------------------------------------------------------------------------------- tests


def test_hash_matches_published_splitmix64():
    # Vigna's splitmix64.c seeded with 1234567: the k-th output is mix(seed + (k-1) * GOLDEN).
    published = [6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431,
                 16408922859458223821]
    assert [keyed((1234567 + k * GOLDEN) & MASK) for k in range(5)] == published


def test_doc_vectors_recomputed_independently():
    v = doc_vectors()
    got = compute_vectors()
    for key in ("mix", "ic", "lt_weights", "lt_thresholds", "ic_activated", "lt_activated", "mc_world_seeds",
                "replay"):
        assert got[key] == v[key], key


def test_doc_vectors_match_gpucore_functions():
    from gpucore.graph import from_arcs
    from gpucore.oracle import mc_world_seeds, replay, simulate_world
    from gpucore.random import ic_live, lt_fixed_weight, lt_threshold, mix2

    v = doc_vectors()
    n, arcs = v["graph"]["n"], [tuple(a) for a in v["graph"]["arcs"]]
    g = from_arcs(n, [a[0] for a in arcs], [a[1] for a in arcs], [a[2] for a in arcs])
    world = np.uint64(v["world_seed"])
    assert list(g.out_dst) == [a[1] for a in arcs]  # edge ids are the canonical positions
    for row in v["ic"]:
        e = row["eid"]
        assert f"{int(mix2(world, np.uint64(e))):016x}" == row["hash"]
        assert bool(ic_live(world, np.uint64(e), g.out_prob[e])) == row["live"]
    lt_out = g.edge_probabilities("LT")[1]
    for row in v["lt_weights"]:
        assert float(lt_out[row["eid"]]) == row["w"]
        assert int(lt_fixed_weight(lt_out[row["eid"]])) == row["q"]
    for row in v["lt_thresholds"]:
        assert int(lt_threshold(world, np.uint64(row["v"]))) == row["T"]
    assert list(simulate_world(g, v["seeds"], "IC", v["world_seed"]).active) == v["ic_activated"]
    assert list(simulate_world(g, v["seeds"], "LT", v["world_seed"]).active) == v["lt_activated"]
    for row in v["mc_world_seeds"]:
        assert int(mc_world_seeds(row["seed"], 1, start=row["run"])[0]) == row["world_seed"]
    for row in v["replay"]:
        got = replay(g, row["rounds"], row["model"], v["world_seed"], eta=1)
        assert got.newly_active == row["newly_active"]


def test_binomial_acceptance_is_exact():
    lo, hi = binomial_acceptance(400, 0.95, 1e-4)
    pmf = lambda k: math.comb(400, k) * 0.95**k * 0.05 ** (400 - k)  # noqa: E731
    assert sum(pmf(k) for k in range(lo)) <= 5e-5 < sum(pmf(k) for k in range(lo + 1))
    assert sum(pmf(k) for k in range(hi + 1, 401)) <= 5e-5 < sum(pmf(k) for k in range(hi, 401))


@pytest.mark.parametrize("seeds", [[0], [1, 3]])
def test_enumerations_agree_on_deterministic_graph(seeds):
    # p in {0, 1}: IC and LT (weights 1 on a chain) are deterministic; both enumerations must give the reach.
    arcs = canonical([(0, 1, 1.0), (1, 2, 1.0), (2, 3, 0.0), (3, 4, 1.0)])
    reach = ic_world_set(5, arcs, seeds, 99)
    assert exact_ic_spread(5, arcs, seeds) == pytest.approx(len(reach), abs=1e-12)
    assert exact_lt_spread(5, arcs, seeds) == pytest.approx(len(lt_world_set(5, arcs, seeds, 99)), abs=1e-9)


def test_doc_standalone_replay_snippet():
    """The stdlib-only IC replay printed in docs/oracle.md reproduces the documented replay vector."""
    text = DOC.read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[-1]
    assert "def ic_replay" in code
    scope: dict = {}
    exec(code, scope)  # noqa: S102 - our own documentation
    v = doc_vectors()
    arcs = [(a, b, f32(p)) for a, b, p in v["graph"]["arcs"]]
    for row in v["replay"]:
        if row["model"] == "IC":
            assert scope["ic_replay"](v["graph"]["n"], arcs, row["rounds"], v["world_seed"]) == row["newly_active"]
