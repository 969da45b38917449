"""DiFuseR's registers: layout, the worlds a process holds, the selection score, memory.

Registers (spec section 1.3, pitfall 1): one signed 8-bit register per (vertex, world), stored
vertex-major as an ``int8 [n, J]`` array (row u holds u's registers in increasing world order,
contiguous), J = the number of worlds this process holds. A register is ``VISITED = -1`` when u
is active in that world under the current seeds (cascade), else the largest ``clz64`` of the
register hashes of the vertices u reaches in that world through live arcs and non-visited vertices
(0..64). -1 is below every clz, so a max-merge never takes a visited neighbour's value.

Worlds: R worlds in all (``--registers``, the paper's J on one device), numbered 0..R-1 globally;
a process holds some of them, in increasing index (all of them on one process; the split over
ranks is ``gpucore.im.sketch.split``). Every key is derived from the global world index, so a rank
computes exactly the registers, counts and score parts its worlds have in a single-process run.

Selection score (our choice, documented in ``docs/difuser.md``): a per-vertex **sum over worlds** of
integer terms, so partial sums of ranks add up exactly (int64, any order) and the seed never depends
on the split; the seed is the argmax, ties to the lowest id. A table pair ``T = score_table(...)``
(int64 [2, 66]) defines the term of vertex u in world r with register M and own start
s = clz64(h_r(u)) (the value u's register starts from):
``T[0, 0]`` when M = -1 (visited), else ``T[0, M + 1] - T[1, s + 1]``. ``ESTIMATORS``:

- ``log`` (default): ``M - s + 2`` (0 when visited): the log2-scale excess of the reach over the
  vertex itself, plus 2. The register M is about log2 of the reach c; s carries no information
  about c, only noise (its spread over the worlds swamps the signal where reaches are small), so
  it is subtracted as a control variate; E[s + 1] = 2 keeps a visited world (0) below a reach-1
  world, as in the plain sum of M + 1. Bounded terms: the argmax is not won by one lucky register.
- ``linear``: ``round(256 E[c | M])`` (no own term), the posterior mean of the reach c given M under
  a log-uniform prior on [1, n] (about 1.44 2^M below log2 n, flat near n); 0 when visited.
  Targets the sum of the marginal reaches, but its terms are heavy-tailed (a 2^M).
- ``harmonic``: ``-2^(40 - rho)`` with rho = M + 1 (rho = 0 for a visited register; rho >= 41 gives
  0): minus HyperLogLog's harmonic denominator sum_r 2^-rho_r (scaled by 2^40) with the worlds as
  buckets and a visited register as an empty bucket; the argmax is the largest HyperLogLog estimate
  alpha R^2 / sum_r 2^-rho_r, our reading of the paper's harmonic mean of the registers (section 3.1).

Each term is at most 2^40 in size (linear: 256 n < 2^40 for n < 2^32), so sums stay exact for
R < 2^23 (``MAX_REGISTERS``). The table is computed once per solve on the host (NumPy float64).
"""

from __future__ import annotations

import numpy as np

from gpucore.errors import GpucoreError

VISITED = -1
REGISTER_DTYPE = np.int8
#: worlds are handed out to kernels (and ranks) in multiples of a warp
WORLD_QUANTUM = 32
MAX_REGISTERS = 1 << 22
ESTIMATORS = ("log", "linear", "harmonic")
_HARMONIC_SHIFT = 40


def reach_posterior(n: int) -> np.ndarray:
    """E[c | register = M] for M = 0..64 under a log-uniform prior of the reach c on [1, n].

    P(M = m | c) = P(M <= m) - P(M <= m - 1) = (1 - 2^-(m+1))^c - (1 - 2^-m)^c, computed as
    e^a (-expm1(b - a)) with a, b the logs of the two terms (no cancellation for large m)."""
    c = 2.0 ** np.linspace(0.0, np.log2(max(n, 2)), 4096)
    m = np.arange(65, dtype=np.float64)[:, None]
    a = c[None, :] * np.log1p(-(2.0 ** -(m + 1)))
    with np.errstate(divide="ignore"):
        b = c[None, :] * np.log1p(-(2.0 ** -m))  # -inf for m = 0
    like = np.exp(a) * -np.expm1(b - a)
    return (like * c).sum(axis=1) / like.sum(axis=1)


def score_table(estimator: str, n: int = 1) -> np.ndarray:
    """The term tables (int64 [2, 66]) of an estimator: row 0 indexed by register + 1 (-1..64), row 1
    by the own start + 1 (0..64); see the module docstring."""
    out = np.zeros((2, 66), dtype=np.int64)
    index = np.arange(66, dtype=np.int64)  # register + 1
    if estimator == "log":
        out[0, 1:] = index[1:] + 2
        out[1, 1:] = index[1:]
    elif estimator == "linear":
        out[0, 1:] = np.rint(reach_posterior(n) * 256.0).astype(np.int64)
    elif estimator == "harmonic":
        small = index <= _HARMONIC_SHIFT
        out[0, small] = -(np.int64(1) << (_HARMONIC_SHIFT - index[small]))
    else:
        raise GpucoreError(f"estimator {estimator!r}: choose one of {', '.join(ESTIMATORS)}")
    return out


def check_registers(registers) -> int:
    """R = --registers: a positive multiple of 32, at most MAX_REGISTERS."""
    if isinstance(registers, bool) or not isinstance(registers, (int, np.integer)) or registers < WORLD_QUANTUM \
            or registers % WORLD_QUANTUM or registers > MAX_REGISTERS:
        raise GpucoreError(f"--registers {registers}: must be a multiple of {WORLD_QUANTUM} in "
                           f"[{WORLD_QUANTUM}, {MAX_REGISTERS:,}]")
    return int(registers)


def bytes_needed(n: int, m: int, worlds: int, marks: bool, warp: bool = False, live_bits: bool = False) -> int:
    """Memory of one solve: registers n x J (and the refinement's marks, one bit each), per-vertex
    arrays, and the arcs at their peak, while the local graph is built (``gpucore.im.sketch.local``):
    the whole graph's targets, probabilities, thresholds and hashes (16 bytes an arc), a flag and a
    kept index (9), and the local graph's target, threshold and word (12), at most m of them.
    ``warp`` (``gpucore.im.sketch.cuda_warp``): plus fresh bits, stamps and two queues of n x J / 32
    words (n x J / 2 bytes), the in-CSR (4 bytes an arc and 8 a vertex; 20 an arc while it is
    sorted), four int32 lists and stamps per vertex, and with ``marks`` the anchor's marks (n x J
    bits); ``live_bits``: plus m x J bits."""
    registers = n * worlds + (n * worlds // 8 if marks else 0)
    arcs = 16 * (n + 1) + m * (16 + 9 + 12)
    per_vertex = n * (8 + 4 + 4 + 4 + 1 + 1)  # scores, two queues, stamps, chosen flags, touched flags
    if warp:
        registers += n * worlds // 2 + (n * worlds // 8 if marks else 0)
        arcs += 8 * (n + 1) + 24 * m
        per_vertex += 16 * n
        arcs += m * worlds // 8 if live_bits else 0
    return registers + arcs + per_vertex
