"""Edge-probability schemes p(u, v), and the LT in-weight normalisation.

Schemes (``--weights``), all reproducible from (scheme, seed) and the canonical edge ids:

- ``wc``: weighted cascade, p(u,v) = 1 / indeg(v) (MERIT section 5; gIM section 4);
- ``const:P``: every arc P;
- ``trivalency``: one of {0.1, 0.01, 0.001}, picked by mix(seed, WEIGHT, edge_id) mod 3;
- ``uniform:A,B``: A + (B-A) * uniform(mix(seed, WEIGHT, edge_id));
- ``normal:M,S``: M + S * z (Box-Muller from mix(seed, WEIGHT, edge_id, 0|1)), clipped to [0, 1].

Probabilities are stored as float32. For LT the in-weights of each node must sum to at most 1:
``lt_in_weights`` rescales exactly the nodes whose float64 sum exceeds 1 + ``LT_TOLERANCE``
(dividing their in-weights by that sum); ``count_lt_violations`` reports how many at preprocessing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError
from gpucore.graph.schemes import parse_scheme
from gpucore.random import Stream, mix3, mix4, uniform

WEIGHT_SCHEMES = {"wc": (0,), "const": (1,), "trivalency": (0,), "uniform": (2,), "normal": (2,)}
TRIVALENCY = np.array([0.1, 0.01, 0.001], dtype=np.float32)
LT_TOLERANCE = 1e-6


def parse_weights(text: str) -> tuple[str, list[float]]:
    """Validate a weight scheme string; parameters must describe probabilities in [0, 1]."""
    name, params = parse_scheme(text, "--weights", WEIGHT_SCHEMES)
    if name == "const" and not 0.0 <= params[0] <= 1.0:
        raise GpucoreError(f"--weights {text!r}: probability {params[0]} is outside [0, 1]")
    if name == "uniform":
        a, b = params
        if not (0.0 <= a <= b <= 1.0):
            raise GpucoreError(f"--weights {text!r}: need 0 <= A <= B <= 1 (weights outside [0, 1])")
    if name == "normal" and (params[1] < 0 or not math.isfinite(params[0])):
        raise GpucoreError(f"--weights {text!r}: need a finite mean and sigma >= 0")
    return name, params


@njit(parallel=True, cache=True)
def _wc(out_dst, in_indptr, out):
    for e in prange(out_dst.shape[0]):
        v = out_dst[e]
        out[e] = np.float32(1.0 / (in_indptr[v + 1] - in_indptr[v]))


@njit(parallel=True, cache=True)
def _trivalency(m, seed, values, out):
    for e in prange(m):
        out[e] = values[np.uint64(mix3(seed, np.uint64(16), e)) % np.uint64(3)]


@njit(parallel=True, cache=True)
def _uniform(m, seed, a, b, out):
    for e in prange(m):
        out[e] = np.float32(a + (b - a) * uniform(mix3(seed, np.uint64(16), e)))


@njit(parallel=True, cache=True)
def _normal(m, seed, mu, sigma, out):
    for e in prange(m):
        u1 = uniform(mix4(seed, np.uint64(16), e, 0))
        u2 = uniform(mix4(seed, np.uint64(16), e, 1))
        z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
        out[e] = np.float32(min(1.0, max(0.0, mu + sigma * z)))


def edge_probabilities(scheme: str, out_dst: np.ndarray, in_indptr: np.ndarray, seed: int) -> np.ndarray:
    """p of every arc, indexed by original edge id (out-CSR position), float32."""
    assert Stream.WEIGHT == 16  # the kernels above inline the stream value
    name, params = parse_weights(scheme)
    m = int(out_dst.shape[0])
    out = np.empty(m, dtype=np.float32)
    key = np.uint64(seed)
    if name == "wc":
        _wc(out_dst, in_indptr, out)
    elif name == "const":
        out.fill(np.float32(params[0]))
    elif name == "trivalency":
        _trivalency(m, key, TRIVALENCY, out)
    elif name == "uniform":
        _uniform(m, key, params[0], params[1], out)
    else:
        _normal(m, key, params[0], params[1], out)
    if m and not (np.isfinite(out).all() and out.min() >= 0.0 and out.max() <= 1.0):
        raise GpucoreError(f"--weights {scheme!r}: produced weights outside [0, 1]")
    return out


@njit(parallel=True, cache=True)
def _in_sums(in_indptr, in_prob, out):
    for v in prange(in_indptr.shape[0] - 1):
        s = 0.0
        for k in range(in_indptr[v], in_indptr[v + 1]):
            s += in_prob[k]
        out[v] = s


def in_weight_sums(in_indptr: np.ndarray, in_prob: np.ndarray) -> np.ndarray:
    """Sum of in-weights of every node, in float64."""
    out = np.empty(in_indptr.shape[0] - 1, dtype=np.float64)
    _in_sums(in_indptr, in_prob, out)
    return out


def count_lt_violations(in_indptr: np.ndarray, in_prob: np.ndarray) -> int:
    """Number of nodes whose in-weights sum above 1 + LT_TOLERANCE (rescaled for LT)."""
    return int(np.count_nonzero(in_weight_sums(in_indptr, in_prob) > 1.0 + LT_TOLERANCE))


def lt_in_weights(in_indptr: np.ndarray, in_prob: np.ndarray) -> np.ndarray:
    """LT in-weights: ``in_prob`` with the nodes summing above 1 + tolerance rescaled to sum 1."""
    sums = in_weight_sums(in_indptr, in_prob)
    over = sums > 1.0 + LT_TOLERANCE
    if not over.any():
        return in_prob
    scale = np.where(over, 1.0 / np.where(over, sums, 1.0), 1.0)
    per_arc = np.repeat(scale, np.diff(in_indptr))
    return (in_prob.astype(np.float64) * per_arc).astype(np.float32)
