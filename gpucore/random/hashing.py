"""The keyed hash (SplitMix64 chain) in Numba and in plain Python.

See the package docstring for the definition. The ``njit`` functions take and return
``numpy.uint64``; pass keys as ``np.uint64`` (or cast with ``np.uint64(x)`` inside Numba code) so
that Numba never promotes the arithmetic to float64.
"""

import numpy as np
from numba import njit

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0
_MASK = (1 << 64) - 1


@njit(inline="always", cache=True)
def fmix64(z):
    """SplitMix64's output function (a bijection of 64-bit words)."""
    z = np.uint64(z)
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(inline="always", cache=True)
def step(h, w):
    """One link of the key chain: fmix64((h ^ w) + GOLDEN)."""
    return fmix64((np.uint64(h) ^ np.uint64(w)) + GOLDEN)


@njit(inline="always", cache=True)
def mix(a):
    """mix(a): the first SplitMix64 output for seed a."""
    return step(np.uint64(0), a)


@njit(inline="always", cache=True)
def mix2(a, b):
    return step(step(np.uint64(0), a), b)


@njit(inline="always", cache=True)
def mix3(a, b, c):
    return step(step(step(np.uint64(0), a), b), c)


@njit(inline="always", cache=True)
def mix4(a, b, c, d):
    return step(step(step(step(np.uint64(0), a), b), c), d)


@njit(inline="always", cache=True)
def mix5(a, b, c, d, e):
    return step(step(step(step(step(np.uint64(0), a), b), c), d), e)


@njit(inline="always", cache=True)
def uniform(h):
    """Uniform double in [0, 1) from the top 53 bits of h (exact on CPU and GPU)."""
    return float(np.uint64(h) >> _S11) * _TWO_M53


@njit(inline="always", cache=True)
def bernoulli(h, p):
    """True with probability p: uniform(h) < float64(p). p may be float32; the test is exact."""
    return uniform(h) < np.float64(p)


@njit(inline="always", cache=True)
def index_below(h, n):
    """Index in [0, n) from h: h mod n (bias below n / 2^64)."""
    return np.int64(np.uint64(h) % np.uint64(n))


def _fmix_py(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def mix_py(*words: int) -> int:
    """Plain-Python reference of ``mix`` for any number of words (ints, taken mod 2^64)."""
    h = 0
    for w in words:
        h = _fmix_py(((h ^ (int(w) & _MASK)) + 0x9E3779B97F4A7C15) & _MASK)
    return h


def splitmix64_sequence(seed: int, count: int) -> list[int]:
    """The first ``count`` outputs of the reference SplitMix64 generator (state += GOLDEN)."""
    out, state = [], int(seed) & _MASK
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        out.append(_fmix_py(state))
    return out
