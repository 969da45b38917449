"""The keyed hash: published SplitMix64 vectors, Numba == Python, derived draws, worlds."""

import math

import numpy as np
import pytest
from numba import njit

from gpucore.random import (
    Stream,
    bernoulli,
    index_below,
    lt_draw,
    lt_fixed_weight,
    lt_threshold,
    ic_live,
    mix,
    mix2,
    mix3,
    mix4,
    mix5,
    mix_py,
    splitmix64_sequence,
    uniform,
    world_seed_of,
)

GOLDEN = 0x9E3779B97F4A7C15
# Published reference outputs of SplitMix64 (Vigna's splitmix64.c; Rosetta Code "Splitmix64").
SEED_1234567 = [6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821]
SEED_0 = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC, 0x1B39896A51A8749B]
# Our chain on multi-word keys (docs/randomness.md); pinned so any change of definition shows.
CHAIN_VECTORS = {  # the table of docs/randomness.md
    (1, 2): 13608149317741381227,
    (1, 2, 3, 4): 15374388949593934587,
    (42, 1, 7, 100): 2653653922091150947,
    (42, 2, 7, 1, 0): 2394164044587598212,
    (42, 0): 6332618229526065668,
    (42, 20, 3): 16041242522317688296,
}


def test_reference_generator_matches_published_vectors():
    assert splitmix64_sequence(1234567, 5) == SEED_1234567
    assert splitmix64_sequence(0, 5) == SEED_0


def test_one_word_mix_is_the_kth_splitmix_output():
    for k, want in enumerate(SEED_1234567):
        assert mix_py(1234567 + k * GOLDEN) == want
        assert int(mix(np.uint64((1234567 + k * GOLDEN) % 2**64))) == want
    for k, want in enumerate(SEED_0):
        assert int(mix(np.uint64((k * GOLDEN) % 2**64))) == want


def test_pinned_chain_vectors():
    fns = {2: mix2, 3: mix3, 4: mix4, 5: mix5}
    for key, want in CHAIN_VECTORS.items():
        assert mix_py(*key) == want
        assert int(fns[len(key)](*[np.uint64(w) for w in key])) == want
    # the chain definition spelled out: mix(a, b) = splitmix_first_output(mix(a) ^ b)
    assert mix_py(1, 2) == splitmix64_sequence(mix_py(1) ^ 2, 1)[0]


@pytest.mark.parametrize("arity", [1, 2, 3, 4, 5])
def test_numba_matches_python_on_random_words(arity):
    rng = np.random.default_rng(arity)
    words = rng.integers(0, 2**63, size=(200, arity), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    fn = {1: mix, 2: mix2, 3: mix3, 4: mix4, 5: mix5}[arity]
    for row in words:
        assert int(fn(*[np.uint64(w) for w in row])) == mix_py(*[int(w) for w in row])


def test_negative_words_wrap_modulo_2_64():
    assert int(mix2(np.uint64(5), -1)) == mix_py(5, 2**64 - 1)


def test_uniform_is_top_53_bits():
    for h in [0, 1, 2**11 - 1, 2**11, 2**64 - 1, SEED_1234567[0]]:
        assert uniform(np.uint64(h)) == (h >> 11) / 2**53
    assert uniform(np.uint64(2**64 - 1)) < 1.0


def test_bernoulli_is_exact_against_float32_probability():
    p = np.float32(0.3)
    threshold = float(p) * 2**53  # exact: the boundary integer
    below = np.uint64(int(math.ceil(threshold) - 1) << 11)
    at = np.uint64(int(math.ceil(threshold)) << 11)
    assert bernoulli(below, p) and not bernoulli(at, p)
    assert not bernoulli(np.uint64(0), np.float32(0.0))
    assert bernoulli(np.uint64(2**64 - 1), np.float32(1.0))


@njit
def _index_counts(seed, n, draws):
    counts = np.zeros(n, dtype=np.int64)
    for i in range(draws):
        counts[index_below(mix2(seed, i), n)] += 1
    return counts


def test_index_below_is_uniform_chi_square():
    from scipy.stats import chisquare

    counts = _index_counts(np.uint64(7), 97, 200_000)
    # false alarm rate 1e-4 for a correct generator
    assert chisquare(counts).pvalue > 1e-4


@njit
def _coin_rate(seed, p, draws):
    hits = 0
    for i in range(draws):
        if bernoulli(mix3(seed, np.uint64(1), i), p):
            hits += 1
    return hits


def test_bernoulli_rate_within_binomial_bounds():
    for p in [0.5, 0.01, 0.9]:
        draws = 400_000
        hits = _coin_rate(np.uint64(11), np.float32(p), draws)
        sd = math.sqrt(draws * p * (1 - p))
        assert abs(hits - draws * p) < 5 * sd  # false alarm rate < 1e-6


def test_world_functions_follow_their_definitions():
    w = np.uint64(42)
    for e, p in [(0, 0.5), (7, 0.1), (123, 0.99)]:
        assert ic_live(w, e, np.float32(p)) == ((mix_py(42, e) >> 11) / 2**53 < float(np.float32(p)))
    for v in [0, 1, 99]:
        assert lt_threshold(w, v) == mix_py(42, v) >> 24
    assert lt_fixed_weight(np.float32(0.5)) == 2**39
    assert lt_fixed_weight(np.float32(1.0)) == 2**40
    assert lt_fixed_weight(np.float32(1 / 3)) == math.floor(float(np.float32(1 / 3)) * 2**40)
    assert lt_draw(np.uint64(2**64 - 1)) == 2**40 - 1
    assert world_seed_of(3, 4) == mix_py(3, int(Stream.WORLD), 4)


def test_stream_ids_are_distinct_and_stable():
    values = [int(s) for s in Stream]
    assert len(values) == len(set(values))
    assert (Stream.COIN, Stream.ROOT, Stream.LT_CHOICE, Stream.ROOT_COUNT) == (1, 2, 3, 4)


def test_cuda_header_mirrors_stream_ids():
    from gpucore.kernels import COMMON_DIR

    text = (COMMON_DIR / "gc_random.cuh").read_text()
    for stream in Stream:
        assert f"#define GC_STREAM_{stream.name} {int(stream)}ULL" in text
