"""DiFuseR's hashes, keys, thresholds and parallel-arc merging (gpucore.im.sketch.hashing / arcs / layout)."""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.im.sketch.arcs import THRESHOLD_ONE, arc_hashes, merge_parallel_arcs, thresholds
from gpucore.im.sketch.hashing import (
    clz64,
    edge_hash,
    murmur3_32_py,
    murmur_seed,
    world_keys,
    world_numbers,
)
from gpucore.im.sketch.layout import score_table, worlds_of
from gpucore.random import mix_py


def test_murmur3_published_vectors():
    """MurmurHash3_x86_32 test vectors (Appleby's SMHasher; the strings' values are widely published)."""
    assert murmur3_32_py(b"", 0) == 0
    assert murmur3_32_py(b"", 1) == 0x514E28B7
    assert murmur3_32_py(b"", 0xFFFFFFFF) == 0x81F16F39
    assert murmur3_32_py(b"test", 0) == 0xBA6BD213
    assert murmur3_32_py(b"Hello, world!", 1234) == 0xFAF6CDB3
    assert murmur3_32_py(b"The quick brown fox jumps over the lazy dog", 0) == 0x2E4FF723
    assert murmur3_32_py(b"\x21\x43\x65\x87", 0) == 0xF55B516B
    assert murmur3_32_py(b"\x21\x43\x65", 0) == 0x7E4A8634


def test_edge_hash_is_murmur3_of_the_two_ids_mod_2_31():
    rng = np.random.default_rng(1)
    for u, v, seed in zip(rng.integers(0, 2**31, 200), rng.integers(0, 2**31, 200), rng.integers(0, 2**32, 200)):
        key = int(u).to_bytes(4, "little") + int(v).to_bytes(4, "little")
        assert int(edge_hash(np.int64(u), np.int64(v), np.uint64(seed))) == murmur3_32_py(key, int(seed)) & 0x7FFFFFFF


def test_arc_hashes_in_out_csr_order():
    indptr = np.array([0, 2, 2, 3], dtype=np.int64)
    dst = np.array([1, 2, 0], dtype=np.int32)
    got = arc_hashes(indptr, dst, np.uint64(77))
    want = [murmur3_32_py(u.to_bytes(4, "little") + v.to_bytes(4, "little"), 77) & 0x7FFFFFFF
            for u, v in ((0, 1), (0, 2), (2, 0))]
    assert got.dtype == np.uint32 and got.tolist() == want


def test_clz64():
    for x in [0, 1, 2, 3, 2**31, 2**32 - 1, 2**32, 2**63, 2**64 - 1] + [mix_py(i) for i in range(50)]:
        assert clz64(np.uint64(x)) == 64 - int(x).bit_length()


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_world_keys_are_a_slice_of_the_global_worlds(sampling):
    full = world_keys(9, 128, 0, 128, sampling, True)
    part = world_keys(9, 128, 32, 96, sampling, True)
    np.testing.assert_array_equal(part.live, full.live[32:96])
    np.testing.assert_array_equal(part.register, full.register[32:96])
    assert part.register.tolist() == [mix_py(9, 42, r) for r in range(32, 96)]
    if sampling == "keyed":
        assert part.live.tolist() == [mix_py(9, 43, r) for r in range(32, 96)]


def test_world_numbers_fasst_sorts_the_same_draws():
    raw = world_numbers(5, 256, fasst=False)
    assert raw.tolist() == [mix_py(5, 41, i) >> 33 for i in range(256)]
    assert int(raw.max()) < 2**31
    np.testing.assert_array_equal(world_numbers(5, 256, fasst=True), np.sort(raw))
    assert murmur_seed(5) == mix_py(5, 40) & 0xFFFFFFFF


def test_thresholds_fixed_point_and_bad_weights():
    p = np.array([0.0, 0.005, 0.1, 0.5, 1.0], dtype=np.float32)
    got = thresholds(p)
    assert got.dtype == np.uint32
    assert got.tolist() == [int(np.floor(float(x) * 2**31)) for x in p]
    assert got[-1] == THRESHOLD_ONE
    for bad in (-0.1, 1.5, np.nan):
        with pytest.raises(GpucoreError, match=r"g.gcsr: edge probability .* outside \[0, 1\]") as err:
            thresholds(np.array([0.2, bad], dtype=np.float32), "g.gcsr")
        assert "\n" not in str(err.value)


def test_merge_parallel_arcs():
    src, dst, p = merge_parallel_arcs([0, 1, 0, 0, 2], [1, 0, 1, 1, 0], [0.1, 0.3, 0.1, 1.0, 0.5])
    assert src.tolist() == [0, 1, 2] and dst.tolist() == [1, 0, 0]
    assert p[0] == np.float32(1.0) and p[2] == np.float32(0.5)
    src, dst, p = merge_parallel_arcs([3, 3], [4, 4], [0.1, 0.1])
    assert src.tolist() == [3] and dst.tolist() == [4] and abs(float(p[0]) - 0.19) < 1e-7
    with pytest.raises(GpucoreError, match="outside"):
        merge_parallel_arcs([0], [1], [1.2])


def test_score_tables():
    log = score_table("log")
    assert log.shape == (2, 66) and log[0, 0] == 0  # visited
    m, s = np.meshgrid(np.arange(65), np.arange(65), indexing="ij")
    np.testing.assert_array_equal(log[0][m + 1] - log[1][s + 1], m - s + 2)  # M - s + 2 otherwise
    lin = score_table("linear", 1000)
    assert lin[0, 0] == 0 and np.all(np.diff(lin[0, 1:]) >= 0) and lin[0, -1] <= 256 * 1000 and not lin[1].any()
    assert 1.2 * 256 < lin[0, 1] < 2 * 256  # E[c | M = 0] is a small reach
    har = score_table("harmonic")
    assert har[0, 0] == -(2**40) and har[0, 1] == -(2**39) and har[0, 41] == 0 and np.all(np.diff(har[0]) >= 0)
    with pytest.raises(GpucoreError, match="estimator"):
        score_table("mean")


@pytest.mark.parametrize("registers,world_range,msg", [
    (1000, None, "--registers 1000: must be a multiple of 32"), (0, None, "--registers 0"),
    (64, (0, 48), "world_range"), (64, (32, 32), "world_range"), (64, (32, 96), "world_range"),
    (64, "ab", "world_range"),
])
def test_bad_worlds(registers, world_range, msg):
    with pytest.raises(GpucoreError, match=msg):
        worlds_of(registers, world_range)
    assert worlds_of(64, (32, 64)).count == 32


def test_documented_vectors():
    """The vectors of docs/difuser.md (run seed 42), through the Numba functions the engines use."""
    from gpucore.im.sketch.arcs import thresholds as thr
    from gpucore.im.sketch.hashing import live, register_start
    from gpucore.random.hashing import step

    seed32 = murmur_seed(42)
    assert seed32 == 3497372
    assert int(edge_hash(0, 1, np.uint64(seed32))) == 1083292322
    assert int(edge_hash(5, 3, np.uint64(seed32))) == 1173934182
    assert world_numbers(42, 2, fasst=False).tolist() == [1016688817, 1183770064]
    keys = world_keys(42, 4, 0, 4, "keyed", True)
    assert int(keys.register[0]) == 2754490004554162788
    assert register_start(keys.register[0], 0) == 2 and register_start(keys.register[3], 7) == 1
    w = int(thr(np.array([0.1], dtype=np.float32))[0])
    assert w == 214748368
    assert int(step(keys.live[0], np.uint64(0)) >> np.uint64(33)) == 253339660  # keyed coin, arc 0, world 0
    assert int(step(keys.live[2], np.uint64(9)) >> np.uint64(33)) == 455567148
    for h in (1083292322, 1083292322 ^ 214748367, 1083292322 ^ 214748368):  # xor: live iff X ^ h < W
        assert live(False, np.uint64(1016688817), h, 0, w) == ((1016688817 ^ h) < w)
    assert not live(True, keys.live[0], 0, 0, w) and not live(True, keys.live[2], 0, 9, w)  # both coins >= W
    assert live(True, keys.live[0], 0, 0, THRESHOLD_ONE) and not live(True, keys.live[0], 0, 0, 0)


def test_paper_weight_settings():
    """The five IC settings of the paper's section 5 as `--weights` draws them (docs/difuser.md): exact
    constants; U(0, 0.1) and N(0.05, 0.025) clipped at 0 by their moments (4-sigma bands, false alarm
    below 1e-4 each; fixed seed)."""
    import statistics

    from gpucore.graph.weights import edge_probabilities

    m = 200_000
    dst = np.zeros(m, dtype=np.int32)
    indptr = np.array([0, m], dtype=np.int64)
    for p in (0.005, 0.01, 0.1):
        assert np.all(edge_probabilities(f"const:{p}", dst, indptr, 1) == np.float32(p))
    u = edge_probabilities("uniform:0,0.1", dst, indptr, 1).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 0.1
    assert abs(u.mean() - 0.05) < 4 * 0.1 / np.sqrt(12 * m)
    w = edge_probabilities("normal:0.05,0.025", dst, indptr, 1).astype(np.float64)
    nd = statistics.NormalDist()
    zero = nd.cdf(-2.0)  # P(N(0.05, 0.025) < 0)
    assert w.min() == 0.0 and w.max() < 0.2
    assert abs((w == 0).mean() - zero) < 4 * np.sqrt(zero * (1 - zero) / m)
    mean = 0.05 * nd.cdf(2.0) + 0.025 * nd.pdf(2.0)  # of max(0, N(0.05, 0.025))
    assert abs(w.mean() - mean) < 4 * 0.025 / np.sqrt(m)
    upper = w[w > 0.05] - 0.05  # the unclipped upper half: a half-normal of scale 0.025
    assert abs(upper.mean() - 0.025 * np.sqrt(2 / np.pi)) < 4 * 0.025 * np.sqrt(1 - 2 / np.pi) / np.sqrt(upper.size)
