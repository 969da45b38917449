"""Geometric jumps over a run of equally likely coins, reproducible bit for bit on every backend.

Among d arcs that are each live with the same probability p, independently, the gap before the
next live arc is geometric: P(gap >= k) = (1 - p)^k. Drawing the gaps instead of d coins costs
O(1 + d p) draws instead of O(d) (the idea of SUBSIM's subset sampling: Guo, Wang, Wei, Chen,
"Influence Maximization Revisited: Efficient Reverse Reachable Set Generation with Bound
Tightened", SIGMOD 2020, sec. 4). The gap of a keyed uniform U in (0, 1] is
``floor(ln U / ln(1 - p))``.

A gap must come out the same on the CPU (Numba), in the CUDA kernels and in a third party's
replay, so no library logarithm is used (their last bits differ between libm, CUDA's libdevice
and others). ``ln`` is a fixed sequence of IEEE-754 double operations, each rounded to nearest
(no fused multiply-add; the CUDA twin in ``gc_random.cuh`` spells them ``__dadd_rn``,
``__dmul_rn``, ``__ddiv_rn``), so every conforming implementation gets the same bits
(``docs/randomness.md`` has the definition):

    recip(y)        = r_5, where r_0 = 1/2 and r_{i+1} = r_i (2 - y r_i)   (Newton; y in [1.7, 2.5])
    log1p_series(x) = 2 s (1 + z/3 + z^2/5 + ... + z^10/21),  s = x recip(2 + x),  z = s^2
                      (Horner from the z^10 coefficient down; coefficients the doubles nearest 1/(2k+1))
    log_uniform(h)  = ln U for U = ((h >> 11) + 1) 2^-53: frexp of the integer (h >> 11) + 1 gives
                      m 2^e (m in [1/2, 1)); m < SQRT_HALF: m = 2m, e = e - 1; then
                      (e - 53) LN2 + log1p_series(m - 1)
    skip_jump(h, rlq, d) = min(d, floor(log_uniform(h) rlq)) for rlq = 1 / log1p_series(-p) < 0

There is no division in a jump (the per-node ``rlq`` is divided once, on the host): a double
division is a long instruction sequence on the GPU whose registers cost the sampler resident
warps. The series is accurate to a few units in the last place for x in [-0.3, 0.42] (every use
here), far below what any statistical test of the gaps' law could see; what matters for
exactness is only that the operations are fixed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: the double nearest sqrt(1/2) and the double nearest ln 2 (repr of Python's values)
SQRT_HALF = 0.7071067811865476
LN2 = 0.6931471805599453
_S11 = np.uint64(11)
_ONE = np.uint64(1)


@njit(inline="always", cache=True)
def recip(y):
    """1 / y for y in [1.7, 2.5]: five Newton steps from 1/2 (no division)."""
    r = 0.5
    r = r * (2.0 - y * r)
    r = r * (2.0 - y * r)
    r = r * (2.0 - y * r)
    r = r * (2.0 - y * r)
    r = r * (2.0 - y * r)
    return r


@njit(inline="always", cache=True)
def log1p_series(x):
    """ln(1 + x) for x in [-0.3, 0.42] by the atanh series, as a fixed sequence of rounded double operations."""
    s = x * recip(2.0 + x)
    z = s * s
    t = 0.047619047619047616
    t = t * z + 0.05263157894736842
    t = t * z + 0.058823529411764705
    t = t * z + 0.06666666666666667
    t = t * z + 0.07692307692307693
    t = t * z + 0.09090909090909091
    t = t * z + 0.1111111111111111
    t = t * z + 0.14285714285714285
    t = t * z + 0.2
    t = t * z + 0.3333333333333333
    t = t * z + 1.0
    return 2.0 * s * t


@njit(inline="always", cache=True)
def log_uniform(h):
    """ln U of the keyed uniform U = ((h >> 11) + 1) 2^-53 in (0, 1] (0.0 exactly when U = 1)."""
    k = (np.uint64(h) >> _S11) + _ONE
    m, e = math.frexp(float(k))  # exact: k <= 2^53
    if m < SQRT_HALF:
        m = m * 2.0
        e -= 1
    return float(e - 53) * LN2 + log1p_series(m - 1.0)


@njit(inline="always", cache=True)
def skip_jump(h, rlq, d):
    """Coins skipped before the next live one, min(d, floor(ln U rlq)), for rlq = 1 / ln(1 - p) < 0."""
    q = log_uniform(h) * rlq
    if q >= float(d):
        return np.int64(d)
    return np.int64(q)
