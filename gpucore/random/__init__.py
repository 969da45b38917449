"""Counter-based hash randomness shared by every backend.

Every random decision in gpucore is a pure function of a tuple of 64-bit words (a *key*), never of
a thread's position in a stream. Then a sampled set does not depend on traversal order, thread count
or backend, and CPU and GPU results can be compared for equality.

The function (documented in ``docs/randomness.md`` with test vectors)::

    fmix64(z)  = SplitMix64's output function (Steele, Lea, Flood 2014; Vigna's splitmix64.c)
    step(h, w) = fmix64(((h XOR w) + 0x9E3779B97F4A7C15) mod 2^64)
    mix(w0, ..., wr) = step(...step(step(0, w0), w1)..., wr)

``mix(x)`` equals the first output of the reference SplitMix64 generator seeded with ``x``, and
``mix(x + (k-1)*0x9E3779B97F4A7C15)`` its ``k``-th output: that ties the function to SplitMix64's
published test vectors. Derived draws:

    uniform(h)      = (h >> 11) * 2^-53                      in [0, 1), exact in float64
    bernoulli(h, p) = uniform(h) < float64(p)                exact for a float32 p on every backend
    index(h, n)     = h mod n                                 (bias below n / 2^64)

The same functions exist as Numba ``njit`` functions here and as CUDA device functions in
``gpucore/kernels/common/gc_random.cuh``; the test vectors are checked on both sides. So do the
geometric jumps of ``gpucore.random.geometric`` (a fixed sequence of rounded double operations).
"""

from gpucore.random.hashing import (
    GOLDEN,
    bernoulli,
    fmix64,
    index_below,
    mix,
    mix2,
    mix3,
    mix4,
    mix5,
    mix_py,
    splitmix64_sequence,
    step,
    uniform,
)
from gpucore.random.streams import Stream
from gpucore.random.worlds import (
    LT_FIXED_BITS,
    LT_FIXED_ONE,
    ic_live,
    lt_draw,
    lt_fixed_weight,
    lt_threshold,
    world_seed_of,
)

__all__ = [
    "GOLDEN",
    "LT_FIXED_BITS",
    "LT_FIXED_ONE",
    "ic_live",
    "lt_draw",
    "lt_fixed_weight",
    "lt_threshold",
    "world_seed_of",
    "Stream",
    "bernoulli",
    "fmix64",
    "index_below",
    "mix",
    "mix2",
    "mix3",
    "mix4",
    "mix5",
    "mix_py",
    "splitmix64_sequence",
    "step",
    "uniform",
]
