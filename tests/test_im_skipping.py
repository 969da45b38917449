"""Geometric skipping (``gpucore.im.skipping``): which nodes skip, and that skipping keeps the law.

Exact tests: the per-node rule (degree, one float32 p, the 1/8 bound), and the sets of every sampler
on a graph with skipping hubs (the plain-Python rebuild of the keys is in ``test_im_sampler.py``; the
samplers' equality in ``test_im_fused*.py``, ``test_im_emulated.py`` and the GPU tests).
Statistical tests (fixed seeds, false-alarm rate 1e-3 each): the live in-arcs a walk finds among d
arcs of probability p are an independent Bernoulli(p) subset (all 2^d subsets for a small d; the
Binomial count and uniform positions for WC-like and constant-p rows), and whole RR sets drawn with
skipping have the law of the sets drawn with a coin per arc (a two-sample test: the per-set identity
is lost by design, the law is not).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit
from scipy import stats

from gpucore.backend import get_backend
from gpucore.graph import from_arcs
from gpucore.im.cpu import CPUSampler, next_live
from gpucore.im.sampling import engine_sets
from gpucore.im.skipping import SKIP_MAX_P, SKIP_MIN_DEGREE, ic_skip_table, skip_table
from gpucore.random import Stream
from gpucore.random.geometric import log1p_series
from gpucore.random.hashing import mix4
from tests.im_graphs import hubs_graph

ALPHA = 1e-3
_SKIP = np.uint64(int(Stream.SKIP))


def rows_graph(rows):
    """Node i has the in-arcs of rows[i] = (degree, probabilities) from fresh source nodes."""
    src, dst, prob, n = [], [], [], len(rows)
    for v, (d, p) in enumerate(rows):
        src.append(np.arange(n, n + d))
        dst.append(np.full(d, v))
        prob.append(np.broadcast_to(np.asarray(p, dtype=np.float64), (d,)))
        n += d
    return from_arcs(n, np.concatenate(src), np.concatenate(dst), np.concatenate(prob))


def test_which_nodes_skip():
    rows = [(32, 1 / 32), (31, 1 / 31), (100, 0.125), (100, 0.12500001), (64, 0.0), (64, 1.0),
            (50, [0.05] * 49 + [0.0500001]), (40, 1e-30), (200, 0.1)]
    g = rows_graph(rows)
    table = ic_skip_table(g.in_indptr, g.in_prob, "IC")
    assert (table[: len(rows)] < 0).tolist() == [True, False, True, False, False, False, False, True, True]
    assert not (table[len(rows):] < 0).any()  # the sources have no in-arcs
    for v in (0, 2, 7, 8):
        p = float(np.float32(rows[v][1]))
        assert table[v] == 1.0 / log1p_series(-p)  # 1 / ln(1 - p), exactly as documented
    assert SKIP_MIN_DEGREE == 32 and SKIP_MAX_P == 0.125
    assert ic_skip_table(g.in_indptr, g.in_prob, "LT").tolist() == [0.0]  # LT never skips


@njit(cache=True)
def _walks(seed, d, rlq, walks, subsets, counts, hits):
    """Walk the live arcs of node 0 among d for samples 0 .. walks - 1, as the samplers do; tally the
    subset (bit mask, when d <= 20), the count of live arcs and the hits of each position."""
    for s in range(walks):
        hv = mix4(seed, _SKIP, np.uint64(s), np.uint64(0))
        mask = 0
        k = 0
        i = 0
        pos = next_live(hv, rlq, d, np.int64(-1), i)
        while pos < d:
            hits[pos] += 1
            k += 1
            if d <= 20:
                mask |= 1 << pos
            i += 1
            pos = next_live(hv, rlq, d, pos, i)
        counts[k] += 1
        if d <= 20:
            subsets[mask] += 1


def walk(d, p, walks, seed=3, bias=1.0):
    rlq = bias / log1p_series(-float(np.float32(p)))
    subsets = np.zeros(1 << d if d <= 20 else 1, dtype=np.int64)
    counts = np.zeros(d + 1, dtype=np.int64)
    hits = np.zeros(d, dtype=np.int64)
    _walks(np.uint64(seed), np.int64(d), rlq, walks, subsets, counts, hits)
    return subsets, counts, hits


def pooled_chisquare(observed, expected, low=5.0):
    """Chi-square p-value after pooling the cells expected below ``low`` into one."""
    keep = expected >= low
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def test_the_live_subset_has_the_bernoulli_law():
    """Every one of the 2^6 subsets of 6 arcs at p = 0.3 appears with probability p^k (1 - p)^(6 - k)."""
    d, p, walks = 6, float(np.float32(0.3)), 200_000
    subsets, _, _ = walk(d, p, walks)
    k = np.array([bin(m).count("1") for m in range(1 << d)])
    expected = walks * p**k * (1 - p) ** (d - k)
    assert stats.chisquare(subsets, expected).pvalue > ALPHA


@pytest.mark.parametrize("d,p", [(400, 1 / 400), (64, 0.1), (5000, 1 / 5000)])
def test_count_is_binomial_and_positions_uniform(d, p):
    walks = 100_000
    _, counts, hits = walk(d, p, walks, seed=d)
    p = float(np.float32(p))
    assert pooled_chisquare(counts, walks * stats.binom.pmf(np.arange(d + 1), d, p)) > ALPHA
    # each position is live with probability p: hits are uniform over the positions
    assert stats.chisquare(hits).pvalue > ALPHA
    # the test has power: jumps 5 % too long (p about 5 % too small) fail it
    _, counts, _ = walk(d, p, walks, seed=d, bias=1.05)
    assert pooled_chisquare(counts, walks * stats.binom.pmf(np.arange(d + 1), d, p)) < ALPHA


def _membership_and_sizes(offsets, elems, n):
    sizes = np.diff(offsets)
    member = np.bincount(elems, minlength=n)
    return sizes, member


def test_rr_sets_with_skipping_have_the_law_of_coins():
    """Two samples of RR sets on a graph with skipping hubs: by jumps (the rule) and by a coin per arc (the
    skip table emptied). Set sizes (chi-square of a 2 x K table) and every node's inclusion rate (two
    proportions, Bonferroni over the nodes) must agree: total false-alarm rate 2e-3."""
    g = hubs_graph()
    be = get_backend("cpu")
    count = 60_000
    jumps = CPUSampler(g, "IC", 1, 11, be)
    coins = CPUSampler(g, "IC", 1, 11, be)
    assert (jumps.skip < 0).sum() == 3
    coins.skip = np.zeros(g.n)  # every node flips a coin per arc
    a = _membership_and_sizes(*engine_sets(jumps, 0, count), g.n)
    b = _membership_and_sizes(*engine_sets(coins, 10**9, count), g.n)  # other keys: independent samples
    top = int(max(a[0].max(), b[0].max())) + 1
    table = np.array([np.bincount(a[0], minlength=top), np.bincount(b[0], minlength=top)])
    table = table[:, table.sum(axis=0) >= 10]
    assert stats.chi2_contingency(table).pvalue > ALPHA
    pa, pb = a[1] / count, b[1] / count
    pooled = (a[1] + b[1]) / (2 * count)
    z = np.abs(pa - pb) / np.sqrt(np.maximum(pooled * (1 - pooled) * 2 / count, 1e-300))
    assert np.all(2 * stats.norm.sf(z) > ALPHA / g.n), np.argmax(z)
    # and the hubs do skip: the walks are different draws, so the sets are not the same ones
    assert not np.array_equal(a[0], b[0])


def test_skip_table_is_deterministic_in_parallel():
    g = hubs_graph(leaves=500, seed=9)
    w = g.edge_probabilities("IC")[0]
    first = skip_table(np.asarray(g.in_indptr, dtype=np.int64), w)
    assert np.array_equal(first, skip_table(np.asarray(g.in_indptr, dtype=np.int64), w))
    assert math.isclose(first[0], 1.0 / math.log1p(-float(np.float32(1 / 500))), rel_tol=1e-14)
