"""The CUDA header gc_random.cuh gives bit-identical words and draws to gpucore.random."""

import numpy as np
import pytest

from gpucore.random import mix_py, splitmix64_sequence

GOLDEN = 0x9E3779B97F4A7C15
SEED_1234567 = [6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821]


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def _mix_rows(cp, rows: np.ndarray) -> list[int]:
    from gpucore.kernels import get_kernel

    kernel = get_kernel("common/rng_vectors", "gc_mix_rows")
    words = cp.asarray(np.ascontiguousarray(rows, dtype=np.uint64))
    out = cp.zeros(rows.shape[0], dtype=cp.uint64)
    kernel(((rows.shape[0] + 127) // 128,), (128,), (words, np.int32(rows.shape[1]), np.int32(rows.shape[0]), out))
    return [int(x) for x in out.get()]


def test_published_splitmix64_vectors_on_gpu(cp):
    seeds = np.array([[(1234567 + k * GOLDEN) % 2**64] for k in range(5)], dtype=np.uint64)
    assert _mix_rows(cp, seeds) == SEED_1234567
    zero = np.array([[(k * GOLDEN) % 2**64] for k in range(5)], dtype=np.uint64)
    assert _mix_rows(cp, zero) == splitmix64_sequence(0, 5)


@pytest.mark.parametrize("arity", [1, 2, 3, 4, 5])
def test_gpu_chain_matches_python(cp, arity):
    rng = np.random.default_rng(100 + arity)
    rows = rng.integers(0, 2**64 - 1, size=(4096, arity), dtype=np.uint64, endpoint=True)
    got = _mix_rows(cp, rows)
    want = [mix_py(*[int(w) for w in row]) for row in rows]
    assert got == want


def test_gpu_derived_draws_match_numba(cp):
    from gpucore.kernels import get_kernel
    from gpucore.random import bernoulli, index_below, uniform

    rng = np.random.default_rng(5)
    rows = 10_000
    h = rng.integers(0, 2**64 - 1, size=rows, dtype=np.uint64, endpoint=True)
    p = rng.random(rows).astype(np.float32)
    p[:10] = [0, 1, 0.5, 1e-7, 0.999999, 0.25, 0.75, 1e-3, 0.1, 0.01]
    n = rng.integers(1, 2**40, size=rows, dtype=np.uint64)
    u = cp.empty(rows, dtype=cp.float64)
    coin = cp.empty(rows, dtype=cp.int32)
    idx = cp.empty(rows, dtype=cp.int64)
    kernel = get_kernel("common/rng_vectors", "gc_derived")
    kernel(((rows + 127) // 128,), (128,), (cp.asarray(h), cp.asarray(p), cp.asarray(n), np.int32(rows), u, coin, idx))
    want_u = np.array([uniform(x) for x in h])
    want_coin = np.array([bernoulli(x, y) for x, y in zip(h, p)], dtype=np.int32)
    want_idx = np.array([index_below(x, y) for x, y in zip(h, n)], dtype=np.int64)
    np.testing.assert_array_equal(u.get(), want_u)
    np.testing.assert_array_equal(coin.get(), want_coin)
    np.testing.assert_array_equal(idx.get(), want_idx)


def test_gpu_world_functions_match_numba(cp):
    from gpucore.kernels import get_kernel
    from gpucore.random import ic_live, lt_fixed_weight, lt_threshold

    rng = np.random.default_rng(9)
    rows = 10_000
    ids = rng.integers(0, 2**31, size=rows, dtype=np.uint64)
    w = rng.random(rows).astype(np.float32)
    w[:4] = [0.0, 1.0, 1 / 3, 1e-6]
    world = np.uint64(0xDEADBEEF12345678)
    live = cp.empty(rows, dtype=cp.int32)
    thr = cp.empty(rows, dtype=cp.int64)
    q = cp.empty(rows, dtype=cp.int64)
    kernel = get_kernel("common/rng_vectors", "gc_worlds")
    kernel(((rows + 127) // 128,), (128,), (world, cp.asarray(ids), cp.asarray(w), np.int32(rows), live, thr, q))
    np.testing.assert_array_equal(live.get(), [int(ic_live(world, i, x)) for i, x in zip(ids, w)])
    np.testing.assert_array_equal(thr.get(), [lt_threshold(world, i) for i in ids])
    np.testing.assert_array_equal(q.get(), [lt_fixed_weight(x) for x in w])


def test_gpu_geometric_jumps_match_numba(cp):
    """ln U, ln(1 + x) and the jumps of gc_random.cuh (explicit _rn operations) equal the Numba twin bit for bit."""
    from gpucore.kernels import get_kernel
    from gpucore.random.geometric import log1p_series, log_uniform, skip_jump
    from tests.test_random import _hash_cases

    h = _hash_cases(20_000, 12)
    rng = np.random.default_rng(13)
    rlq = 1.0 / np.array([log1p_series(-np.float64(p)) for p in rng.random(h.size).astype(np.float32) * 0.125])
    d = rng.integers(1, 2**31 - 1, size=h.size).astype(np.int64)
    d[::3] = rng.integers(1, 50, size=d[::3].size)
    log_u = cp.empty(h.size, dtype=cp.float64)
    jump = cp.empty(h.size, dtype=cp.int64)
    get_kernel("common/rng_vectors", "gc_skips")(((h.size + 127) // 128,), (128,), (
        cp.asarray(h), cp.asarray(rlq), cp.asarray(d), np.int32(h.size), log_u, jump))
    np.testing.assert_array_equal(log_u.get(), [log_uniform(x) for x in h])
    np.testing.assert_array_equal(jump.get(), [skip_jump(x, r, y) for x, r, y in zip(h, rlq, d)])
    x = np.linspace(-0.2929, 0.4142, 4001)
    out = cp.empty(x.size, dtype=cp.float64)
    get_kernel("common/rng_vectors", "gc_log1p_rows")(((x.size + 127) // 128,), (128,), (
        cp.asarray(x), np.int32(x.size), out))
    np.testing.assert_array_equal(out.get(), [log1p_series(v) for v in x])
