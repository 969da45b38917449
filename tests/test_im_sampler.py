"""RR-set sampler (CPU reference): exact key scheme, chunking independence, and distributions.

The exact tests rebuild sets in plain Python from the documented keys (``docs/im.md``). The
statistical tests compare the sampled distribution of whole RR sets with the exact one obtained by
enumerating every live-edge world (IC) or every in-arc choice (LT) of a tiny graph: a chi-square
test with fixed seeds at false-alarm rate 1e-3 per test.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from gpucore.graph import from_arcs
from gpucore.im.rrsets import ESTIMATE_OFFSET
from gpucore.im.sampling import canonical, rr_sets
from gpucore.random import Stream, mix_py
from tests.im_graphs import hubs_graph
from tests.test_random import py_log1p_series, py_skip_jump

TWO40 = 2**40


def small_graph():
    # 5 nodes, a cycle and a few chords; probabilities chosen so in-weights sum <= 1 (LT valid)
    src = [0, 1, 2, 3, 4, 0, 2, 1]
    dst = [1, 2, 3, 4, 0, 2, 0, 4]
    prob = [0.5, 0.4, 0.7, 0.3, 0.6, 0.45, 0.2, 0.25]
    return from_arcs(5, src, dst, prob)


def py_uniform(h):
    return (h >> 11) * 2.0**-53


def py_skip_rates(g, in_w):
    """1 / ln(1 - p) of every skipping node (docs/im.md: 32 or more in-arcs, one float32 p in (0, 1/8])."""
    out = {}
    for v in range(g.n):
        ps = {float(x) for x in in_w[g.in_indptr[v] : g.in_indptr[v + 1]]}
        if g.in_indptr[v + 1] - g.in_indptr[v] >= 32 and len(ps) == 1 and 0.0 < min(ps) <= 0.125:
            out[v] = 1.0 / py_log1p_series(-min(ps))
    return out


def py_rr_set(g, model, seed, j, rounds=1):
    """Independent plain-Python RR set of key j (all rounds), as a sorted list of elements."""
    n = g.n
    in_w = g.edge_probabilities(model)[0]
    skips = py_skip_rates(g, in_w) if model == "IC" else {}
    root = mix_py(seed, Stream.ROOT, j, 0, 0) % n
    out = []
    for t in range(rounds):
        s = j * rounds + t
        seen = {root}
        if model == "IC":
            queue = [root]
            while queue:
                u = queue.pop()
                if u in skips:  # live in-arcs by geometric jumps
                    beg, d = int(g.in_indptr[u]), int(g.in_indptr[u + 1] - g.in_indptr[u])
                    pos, i = -1, 0
                    while True:
                        pos += 1 + py_skip_jump(mix_py(seed, Stream.SKIP, s, u, i), skips[u], d)
                        i += 1
                        if pos >= d:
                            break
                        v = int(g.in_src[beg + pos])
                        if v not in seen:
                            seen.add(v)
                            queue.append(v)
                    continue
                for a in range(g.in_indptr[u], g.in_indptr[u + 1]):
                    v = int(g.in_src[a])
                    e = int(g.in_eid[a])
                    if v not in seen and py_uniform(mix_py(seed, Stream.COIN, s, e)) < float(in_w[a]):
                        seen.add(v)
                        queue.append(v)
        else:
            v = root
            while True:
                r = mix_py(seed, Stream.LT_CHOICE, s, v, 0) >> 24
                acc, pick = 0, None
                for a in range(g.in_indptr[v], g.in_indptr[v + 1]):
                    q = math.floor(float(in_w[a]) * TWO40)
                    if acc <= r < acc + q:
                        pick = a
                        break
                    acc += q
                if pick is None:
                    break
                u = int(g.in_src[pick])
                if u in seen:
                    break
                seen.add(u)
                v = u
        out.extend(t * n + x for x in seen)
    return sorted(out)


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("rounds", [1, 3])
def test_sets_follow_the_documented_keys(model, rounds):
    g = small_graph()
    seed = 12345
    for j_begin in (0, ESTIMATE_OFFSET):
        offsets, elems = canonical(*rr_sets(g, model, j_begin, 300, seed=seed, rounds=rounds))
        for i in range(300):
            got = elems[offsets[i] : offsets[i + 1]].tolist()
            assert got == py_rr_set(g, model, seed, j_begin + i, rounds), (model, rounds, i)
            # the root comes first and is in its set
            assert elems[offsets[i]] >= 0


@pytest.mark.parametrize("rounds", [1, 2])
def test_skipping_sets_follow_the_documented_keys(rounds):
    """Hubs whose live in-arcs come from geometric jumps, beside rows that keep coins (tests/im_graphs.py)."""
    g = hubs_graph()
    assert sorted(py_skip_rates(g, g.edge_probabilities("IC")[0])) == [0, 1, 4]
    for j_begin in (0, ESTIMATE_OFFSET):
        offsets, elems = canonical(*rr_sets(g, "IC", j_begin, 150, seed=77, rounds=rounds))
        for i in range(150):
            assert elems[offsets[i] : offsets[i + 1]].tolist() == py_rr_set(g, "IC", 77, j_begin + i, rounds), i


def test_root_is_first_and_counted():
    g = small_graph()
    offsets, elems = rr_sets(g, "IC", 0, 200, seed=3)
    for i in range(200):
        assert elems[offsets[i]] == mix_py(3, Stream.ROOT, i, 0, 0) % g.n


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_independent_of_batching_and_threads(model):
    import numba

    src, dst = np.meshgrid(np.arange(40), np.arange(40))
    keep = (src != dst) & ((src * 7 + dst * 3) % 5 == 0)
    g = from_arcs(40, src[keep], dst[keep], 0.3)
    whole = rr_sets(g, model, 100, 3000, seed=9)
    pieces = rr_sets(g, model, 100, 3000, seed=9, batch=37)
    np.testing.assert_array_equal(whole[0], pieces[0])
    np.testing.assert_array_equal(whole[1], pieces[1])
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        single = rr_sets(g, model, 100, 3000, seed=9)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(whole[1], single[1])
    # a different seed gives different sets
    other = rr_sets(g, model, 100, 3000, seed=10)
    assert not np.array_equal(whole[1][: other[1].size], other[1][: whole[1].size])


def test_large_sets_force_chunk_retries():
    # p = 1 on a long cycle: every RR set is the whole graph; slices start far too small
    n = 3000
    g = from_arcs(n, np.arange(n), (np.arange(n) + 1) % n, 1.0)
    offsets, elems = rr_sets(g, "IC", 0, 50, seed=1)
    assert np.all(np.diff(offsets) == n)
    c_off, c_el = canonical(offsets, elems)
    for i in range(50):
        np.testing.assert_array_equal(c_el[c_off[i] : c_off[i + 1]], np.arange(n))


def exact_ic_distribution(g):
    """P(RR set = S) for a uniform root, enumerating all 2^m live-edge worlds."""
    n, m = g.n, g.m
    p = g.out_prob.astype(np.float64)
    src = np.repeat(np.arange(n), np.diff(g.out_indptr))
    dst = g.out_dst
    dist = Counter()
    for live in itertools.product([0, 1], repeat=m):
        w = math.prod(p[e] if live[e] else 1 - p[e] for e in range(m))
        if w == 0:
            continue
        for root in range(n):
            seen, stack = {root}, [root]
            while stack:
                v = stack.pop()
                for e in range(m):
                    if live[e] and dst[e] == v and src[e] not in seen:
                        seen.add(int(src[e]))
                        stack.append(int(src[e]))
            dist[frozenset(seen)] += w / n
    return dist


def exact_lt_distribution(g):
    """P(RR set = S) under LT: every node picks one in-arc with its weight (or none)."""
    n = g.n
    w = g.edge_probabilities("LT")[0].astype(np.float64)
    options = []
    for v in range(n):
        arcs = list(range(g.in_indptr[v], g.in_indptr[v + 1]))
        opts = [(int(g.in_src[a]), w[a]) for a in arcs]
        rest = 1.0 - sum(x for _, x in opts)
        if rest > 1e-12:
            opts.append((None, rest))
        options.append(opts)
    dist = Counter()
    for choice in itertools.product(*options):
        prob = math.prod(c[1] for c in choice)
        for root in range(n):
            seen, v = {root}, root
            while True:
                u = choice[v][0]
                if u is None or u in seen:
                    break
                seen.add(u)
                v = u
            dist[frozenset(seen)] += prob / n
    return dist


def chi_square_pvalue(dist, offsets, elems):
    from scipy.stats import chisquare

    count = offsets.size - 1
    seen = Counter(frozenset(elems[offsets[i] : offsets[i + 1]].tolist()) for i in range(count))
    assert set(seen) <= set(dist), "sampled a set of probability zero"
    keys = sorted(dist, key=lambda s: sorted(s))
    expected = np.array([dist[s] * count for s in keys])
    observed = np.array([seen.get(s, 0) for s in keys], dtype=float)
    big = expected >= 5  # pool the rare cells
    exp = np.append(expected[big], expected[~big].sum())
    obs = np.append(observed[big], observed[~big].sum())
    if exp[-1] == 0:
        exp, obs = exp[:-1], obs[:-1]
    return chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_rr_set_distribution_matches_enumeration(model):
    g = small_graph()
    dist = exact_lt_distribution(g) if model == "LT" else exact_ic_distribution(g)
    assert sum(dist.values()) == pytest.approx(1.0)
    offsets, elems = rr_sets(g, model, 0, 40_000, seed=2024)
    assert chi_square_pvalue(dist, offsets, elems) > 1e-3


def test_mrim_sets_are_independent_rounds_from_one_root():
    g = small_graph()
    dist = exact_ic_distribution(g)
    n, T = g.n, 2
    offsets, elems = rr_sets(g, "IC", 0, 20_000, seed=77, rounds=T)
    # per round, the set restricted to that round is an RR set of the same root
    roots, per_round = [], [[], []]
    for i in range(offsets.size - 1):
        s = elems[offsets[i] : offsets[i + 1]]
        rounds = s // n
        assert set(rounds.tolist()) == {0, 1}
        r0 = s[0] % n
        roots.append(r0)
        for t in range(T):
            part = s[rounds == t] % n
            assert r0 in part
            per_round[t].append(part)
    for t in range(T):
        lens = np.array([len(x) for x in per_round[t]], dtype=np.int64)
        off = np.concatenate([[0], np.cumsum(lens)])
        assert chi_square_pvalue(dist, off, np.concatenate(per_round[t])) > 1e-3
    # rounds use distinct coins: the two rounds' sets are not always equal
    same = sum(np.array_equal(np.sort(a), np.sort(b)) for a, b in zip(per_round[0], per_round[1]))
    assert same < len(roots)
