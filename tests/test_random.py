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
    (42, 5, 7, 3, 0): 6977814218126609895,
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


# ---- geometric jumps (gpucore.random.geometric; docs/randomness.md, "Geometric jumps") ----------------

_SERIES = [1.0 / (2 * k + 1) for k in range(11)]  # the doubles nearest 1/(2k+1)


def py_log1p_series(x: float) -> float:
    """The documented ln(1 + x), in plain Python floats (IEEE doubles, every operation rounded, no FMA)."""
    y = 2.0 + x
    r = 0.5
    for _ in range(5):
        r = r * (2.0 - y * r)
    s = x * r
    z = s * s
    t = _SERIES[10]
    for k in range(9, -1, -1):
        t = t * z + _SERIES[k]
    return 2.0 * s * t


def py_log_uniform(h: int) -> float:
    k = (h >> 11) + 1
    m, e = math.frexp(float(k))
    if m < 0.7071067811865476:
        m, e = m * 2.0, e - 1
    return float(e - 53) * 0.6931471805599453 + py_log1p_series(m - 1.0)


def py_skip_jump(h: int, rlq: float, d: int) -> int:
    q = py_log_uniform(h) * rlq
    return d if q >= d else int(q)


def _hash_cases(count, seed):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 2**64 - 1, size=count, dtype=np.uint64, endpoint=True)
    # U = 1, the smallest U, powers of two of the integer (h >> 11) + 1, and both sides of SQRT_HALF
    edges = [2**64 - 1, 0, 2**11 - 1, 2**11, (2**52 - 1) << 11, (2**52) << 11,
             (int(0.7071067811865476 * 2**53) - 1) << 11, int(0.7071067811865476 * 2**53) << 11]
    return np.concatenate([np.array(edges, dtype=np.uint64), h])


def test_geometric_jumps_follow_their_definition_bit_for_bit():
    from gpucore.random.geometric import log1p_series, log_uniform, skip_jump

    hs = _hash_cases(5000, 21)
    for h in hs:
        assert log_uniform(h) == py_log_uniform(int(h))
    assert log_uniform(np.uint64(2**64 - 1)) == 0.0
    xs = np.concatenate([-np.float32(np.random.default_rng(2).random(500) * 0.125).astype(np.float64),
                         np.linspace(-0.2929, 0.4142, 500)])
    for x in xs:
        assert log1p_series(x) == py_log1p_series(float(x))
    for h, d in zip(hs[:2000], np.random.default_rng(3).integers(1, 10**6, 2000)):
        for p in (np.float32(1e-6), np.float32(1 / 37), np.float32(0.125)):
            rlq = 1.0 / py_log1p_series(-float(p))
            assert skip_jump(h, rlq, np.int64(d)) == py_skip_jump(int(h), rlq, int(d))


def test_geometric_logarithm_is_accurate():
    """Exactness comes from the fixed operations; accuracy (a few units in the last place) from the series."""
    for h in _hash_cases(3000, 4):
        u = ((int(h) >> 11) + 1) / 2**53
        assert abs(py_log_uniform(int(h)) - math.log(u)) <= 4e-16 * max(1.0, abs(math.log(u)))
    for x in np.linspace(-0.2929, 0.4142, 2001):
        assert abs(py_log1p_series(x) - math.log1p(x)) <= 1e-15 * abs(math.log1p(x)) + 1e-300


def test_skip_jump_bounds():
    from gpucore.random.geometric import skip_jump

    rlq = 1.0 / py_log1p_series(-1e-7)
    assert skip_jump(np.uint64(2**64 - 1), rlq, np.int64(10)) == 0  # U = 1: the next coin is live
    assert skip_jump(np.uint64(0), rlq, np.int64(10)) == 10  # a gap beyond the row is cut at d
    assert skip_jump(np.uint64(0), 1.0 / py_log1p_series(-0.125), np.int64(10**9)) == 275  # floor(ln 2^-53 / ln(7/8))


def test_geometric_jumps_in_the_kernel_emulator_equal_numba():
    """gc_random.cuh's twin (g++ through the emulator; tests/gpu/test_random_cuda.py runs it on the GPU)."""
    from gpucore.kernels import emulator
    from gpucore.random.geometric import log1p_series, log_uniform, skip_jump

    if not emulator.available():
        pytest.skip("the kernel emulator needs g++")
    h = _hash_cases(4000, 8)
    rng = np.random.default_rng(9)
    rlq = 1.0 / np.array([py_log1p_series(-float(p)) for p in rng.random(h.size).astype(np.float32) * 0.125])
    d = rng.integers(1, 2**31 - 1, size=h.size).astype(np.int64)
    d[::3] = rng.integers(1, 50, size=d[::3].size)
    log_u, jump = np.empty(h.size), np.empty(h.size, dtype=np.int64)
    lib = emulator.load_module("common/rng_vectors")
    lib.get_function("gc_skips")((h.size // 128 + 1,), (128,), (h, rlq, d, np.int32(h.size), log_u, jump))
    np.testing.assert_array_equal(log_u, [log_uniform(x) for x in h])
    np.testing.assert_array_equal(jump, [skip_jump(x, r, y) for x, r, y in zip(h, rlq, d)])
    x = np.linspace(-0.2929, 0.4142, 999)
    out = np.empty_like(x)
    lib.get_function("gc_log1p_rows")((8,), (128,), (x, np.int32(x.size), out))
    np.testing.assert_array_equal(out, [log1p_series(v) for v in x])


def test_pinned_geometric_vectors():
    """The worked example of docs/randomness.md: node 3 of sample 7 (run seed 42) with 40 in-arcs at p = 1/40."""
    from gpucore.random.geometric import log1p_series, log_uniform, skip_jump

    h = np.uint64(mix_py(42, int(Stream.SKIP), 7, 3, 0))
    assert log_uniform(h) == -0.9721521634763948
    p = np.float32(1 / 40)
    assert log1p_series(-np.float64(p)) == -0.02531780836637093
    rlq = 1.0 / log1p_series(-np.float64(p))
    assert rlq == -39.49788960912893
    jumps = [int(skip_jump(np.uint64(mix_py(42, int(Stream.SKIP), 7, 3, i)), rlq, np.int64(40))) for i in range(2)]
    assert jumps == [38, 40]  # one live in-arc, at position 38 (the next jump passes the row's end)
