"""DiFuseR's hashes: Murmur3 edge hashes, per-world keys, register hashes (spec section 1.2-1.3).

Göktürk & Kaya, "DiFuseR: a distributed sketch-based influence maximization algorithm for GPUs"
(arXiv 2410.14047), section 2.2 (hash-based fused sampling, Eqs. 1-2) and 2.3 (sketches, Eq. 3).
Every value here is a pure function of the run seed and a global index, so a rank that holds the
worlds [w0, w1) of R computes exactly its share of the single-process values.

- Edge hash (Eq. 1): ``h(u, v) = Murmur3_x86_32(u || v, seed32) mod 2^31``, the key being the two
  internal ids as little-endian 32-bit words and ``seed32 = mix(seed, SKETCH_EDGE) mod 2^32``.
  Every arc has its own hash: the two arcs of an undirected edge are two independent coins.
- World numbers (xor sampling): ``X'_i = mix(seed, SKETCH_X, i) >> 33`` for i < R (31 bits, the
  edge hash's range). With FASST (``fasst=True``, section 4.1) world r takes the r-th smallest
  ``X'`` (sorting over all R worlds, so the split into ranks does not change any world), otherwise
  ``X_r = X'_r``.
- Live test, both samplings compare a 31-bit value with the arc's fixed-point threshold
  ``W_e = floor(p_e 2^31)`` (``gpucore.im.sketch.arcs``), so an arc is live with probability
  ``W_e / 2^31`` (within 2^-31 of p_e):
  ``xor``   (Eq. 2, the paper's): live in world r iff ``(X_r XOR h(e)) < W_e``;
  ``keyed`` (an independent coin per arc and world): iff ``(mix(seed, SKETCH_COIN, r, e) >> 33) < W_e``
  with e the original edge id. Kernels get one 64-bit *world key* per world: X_r, or the coin
  prefix ``mix(seed, SKETCH_COIN, r)`` whose ``step`` with e is that coin.
- Register hash (Eq. 3): ``h_r(u) = mix(seed, SKETCH_REGISTER, r, u)`` (64 bits); the register of u in
  world r starts at ``clz64(h_r(u))`` in 0..64. Kernels get the prefix ``mix(seed, SKETCH_REGISTER, r)``
  per world and compute ``step(prefix, u)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from gpucore.random import Stream, mix_py
from gpucore.random.hashing import mix3, step

SAMPLINGS = ("xor", "keyed")
#: the sampling of ``difuser(sampling=None)`` and of the CLI (docs/difuser.md says why)
DEFAULT_SAMPLING = "keyed"
#: edge hashes and world numbers live in [0, 2^31)
HASH_BITS = 31
_M32 = np.uint64(0xFFFFFFFF)
_C1 = np.uint64(0xCC9E2D51)
_C2 = np.uint64(0x1B873593)
_F1 = np.uint64(0x85EBCA6B)
_F2 = np.uint64(0xC2B2AE35)
_N1 = np.uint64(0xE6546B64)
_LOW31 = np.uint64(0x7FFFFFFF)
_S33 = np.uint64(33)


def murmur3_32_py(data: bytes, seed: int = 0) -> int:
    """Plain-Python MurmurHash3_x86_32 (Appleby's reference) of any byte string: the test reference."""

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    h = seed & 0xFFFFFFFF
    nblocks = len(data) // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = rotl((k * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = data[4 * nblocks :]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= rotl((k * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


@njit(inline="always", cache=True)
def _rotl32(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _M32


@njit(inline="always", cache=True)
def _murmur_block(h, k):
    k = _rotl32((k * _C1) & _M32, 15)
    k = (k * _C2) & _M32
    h = _rotl32(h ^ k, 13)
    return (h * np.uint64(5) + _N1) & _M32


@njit(inline="always", cache=True)
def edge_hash(u, v, seed32):
    """h(u, v) = Murmur3_x86_32(u || v, seed32) mod 2^31 (u, v as little-endian 32-bit words)."""
    h = _murmur_block(np.uint64(seed32) & _M32, np.uint64(u) & _M32)
    h = _murmur_block(h, np.uint64(v) & _M32)
    h ^= np.uint64(8)
    h ^= h >> np.uint64(16)
    h = (h * _F1) & _M32
    h ^= h >> np.uint64(13)
    h = (h * _F2) & _M32
    h ^= h >> np.uint64(16)
    return h & _LOW31


@njit(inline="always", cache=True)
def clz64(x):
    """Leading zero bits of a 64-bit word (64 for 0)."""
    x = np.uint64(x)
    if x == np.uint64(0):
        return 64
    n = 0
    for shift in (32, 16, 8, 4, 2, 1):
        if x >> np.uint64(64 - shift) == np.uint64(0):
            n += shift
            x = x << np.uint64(shift)
    return n


@njit(inline="always", cache=True)
def live(keyed, world_key, arc_hash, e, threshold):
    """Is arc ``e`` (hash ``arc_hash``, threshold ``W_e``) live in the world of ``world_key``?"""
    if keyed:
        return (step(world_key, np.uint64(e)) >> _S33) < np.uint64(threshold)
    return (world_key ^ np.uint64(arc_hash)) < np.uint64(threshold)


@njit(inline="always", cache=True)
def register_start(register_key, u):
    """The initial register of u in a world: clz64(step(mix(seed, SKETCH_REGISTER, r), u))."""
    return clz64(step(register_key, np.uint64(u)))


def murmur_seed(seed: int) -> int:
    """The Murmur3 seed of the edge hashes of run ``seed``."""
    return mix_py(seed, int(Stream.SKETCH_EDGE)) & 0xFFFFFFFF


@njit(cache=True)
def _mix_range(seed, stream, first, stop):
    """mix(seed, stream, r) for r in [first, stop) (uint64)."""
    out = np.empty(stop - first, dtype=np.uint64)
    for r in range(first, stop):
        out[r - first] = mix3(seed, np.uint64(stream), np.uint64(r))
    return out


def _stream_words(seed: int, stream: int, first: int, stop: int) -> np.ndarray:
    return _mix_range(np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF), int(stream), int(first), int(stop))


def world_numbers(seed: int, registers: int, fasst: bool) -> np.ndarray:
    """X_r of all R worlds (uint64 in [0, 2^31)): sorted with FASST, else in draw order."""
    x = _stream_words(seed, int(Stream.SKETCH_X), 0, registers) >> np.uint64(64 - HASH_BITS)
    return np.sort(x) if fasst else x


@dataclass(frozen=True)
class WorldKeys:
    """The per-world keys of worlds [first, stop): what every kernel reads once per thread.

    ``live`` (uint64): X_r (xor) or the coin prefix mix(seed, SKETCH_COIN, r) (keyed);
    ``register`` (uint64): the register-hash prefix mix(seed, SKETCH_REGISTER, r).
    """

    first: int
    stop: int
    keyed: bool
    live: np.ndarray
    register: np.ndarray


def world_keys(seed: int, registers: int, first: int, stop: int, sampling: str, fasst: bool) -> WorldKeys:
    """Keys of the global worlds [first, stop) of R = ``registers`` (see the module docstring)."""
    keyed = sampling == "keyed"
    if keyed:
        live_keys = _stream_words(seed, int(Stream.SKETCH_COIN), first, stop)
    else:
        live_keys = world_numbers(seed, registers, fasst)[first:stop].copy()
    register = _stream_words(seed, int(Stream.SKETCH_REGISTER), first, stop)
    return WorldKeys(first, stop, keyed, live_keys, register)
