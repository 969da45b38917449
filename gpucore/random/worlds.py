"""World realizations: the hash-defined "truth" of an adaptive run (the worlds of [MERIT] Section 2).

A *world* fixes every random outcome of one diffusion, as a pure function of ``world_seed``:

- IC: arc ``e`` (original edge id) is live iff ``uniform(mix(world_seed, e)) < p_e``
  (``p_e`` float32, compared in float64, exact on every backend).
- LT: weights and thresholds are fixed-point integers, so sums do not depend on the order in
  which in-neighbours activate (nor on the backend):
  ``q_e = floor(w_e * 2^40)`` for the LT weight ``w_e`` (float32) of arc e, and
  ``T_v = mix(world_seed, v) >> 24`` (uniform on [0, 2^40)). ``v`` becomes active once the
  ``q`` of its active in-arcs sum to **more than** ``T_v``. Then P(v active | active in-arcs A)
  = sum_{e in A} q_e / 2^40 exactly, i.e. the LT model with lambda_v = T_v / 2^40 ~ U[0, 1)
  up to the 2^-40 quantisation of the weights.

The same fixed-point weights serve LT *sampling* (a reverse random walk picks in-arc k of v when
``r = h >> 24`` lies in ``[Q_{k-1}, Q_k)``, Q the prefix sums of q in in-CSR order; no arc when
``r >= Q_last``), so forward and reverse LT agree exactly. The CUDA twins are in
``gpucore/kernels/common/gc_random.cuh`` (``gc_ic_live``, ``gc_lt_threshold``, ``gc_lt_fixed_weight``,
``gc_lt_draw``).
"""

import math

import numpy as np
from numba import njit

from gpucore.random.hashing import bernoulli, mix2, mix3

LT_FIXED_BITS = 40
LT_FIXED_ONE = np.int64(1) << np.int64(LT_FIXED_BITS)
_SHIFT = np.uint64(64 - LT_FIXED_BITS)
_SCALE = float(2**LT_FIXED_BITS)


@njit(inline="always", cache=True)
def ic_live(world_seed, eid, p):
    """Is arc ``eid`` live in IC world ``world_seed``?"""
    return bernoulli(mix2(world_seed, eid), p)


@njit(inline="always", cache=True)
def lt_threshold(world_seed, v):
    """Fixed-point LT threshold T_v in [0, 2^40) of node v in world ``world_seed``."""
    return np.int64(mix2(world_seed, v) >> _SHIFT)


@njit(inline="always", cache=True)
def lt_fixed_weight(w):
    """Fixed-point LT weight q = floor(w * 2^40) of a float32 weight w (exact)."""
    return np.int64(math.floor(np.float64(w) * _SCALE))


@njit(inline="always", cache=True)
def lt_draw(h):
    """Fixed-point uniform r in [0, 2^40) from a hash, for LT in-arc choices."""
    return np.int64(np.uint64(h) >> _SHIFT)


def world_seed_of(run_seed: int, realization: int) -> int:
    """Seed of world ``realization`` of an experiment: mix(run_seed, WORLD, realization)."""
    from gpucore.random.streams import Stream

    return int(mix3(np.uint64(run_seed), np.uint64(int(Stream.WORLD)), np.uint64(realization)))
