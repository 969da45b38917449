"""Seed-cost schemes c(u) > 0 (MERIT section 5: c(u) = 0.01 + 0.01 * outdeg(u)).

Schemes (``--cost``):

- ``degree[:C0,ALPHA]``: c(u) = C0 + ALPHA * outdeg(u), defaults C0 = ALPHA = 0.01;
- ``const:C``: every vertex C;
- ``uniform:A,B``: A + (B-A) * uniform(mix(seed, COST, vertex)), 0 < A <= B;
- ``file:PATH``: lines ``original_id cost`` (``#`` comments); every vertex needs a cost.

The ``.gcsr`` stores the raw costs (float32) and the normalising scale max(c); MERIT reports both
the raw total cost and the total divided by that scale.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit, prange

from gpucore.errors import GpucoreError
from gpucore.graph.schemes import parse_scheme
from gpucore.random import mix3, uniform

COST_SCHEMES = {"degree": (0, 2), "const": (1,), "uniform": (2,), "file": (-1,)}


def parse_cost(text: str) -> tuple[str, list]:
    name, params = parse_scheme(text, "--cost", COST_SCHEMES)
    if name == "degree" and not params:
        params = [0.01, 0.01]
    if name == "degree" and (params[0] <= 0 or params[1] < 0):
        raise GpucoreError(f"--cost {text!r}: need C0 > 0 and ALPHA >= 0 (costs must be positive)")
    if name == "const" and params[0] <= 0:
        raise GpucoreError(f"--cost {text!r}: costs must be positive, got {params[0]}")
    if name == "uniform" and not 0 < params[0] <= params[1]:
        raise GpucoreError(f"--cost {text!r}: need 0 < A <= B (costs must be positive)")
    return name, params


@njit(parallel=True, cache=True)
def _uniform_costs(n, seed, a, b, out):
    for v in prange(n):
        out[v] = np.float32(a + (b - a) * uniform(mix3(seed, np.uint64(17), v)))


def _costs_from_file(path: Path, original_ids: np.ndarray) -> np.ndarray:
    if not path.is_file():
        raise GpucoreError(f"{path}: cost file not found")
    ids, values = [], []
    with open(path) as fh:
        for line_no, line in enumerate(fh, 1):
            text = line.strip()
            if not text or text[0] in "#%":
                continue
            parts = text.split()
            try:
                ids.append(int(parts[0]))
                values.append(float(parts[1]))
            except (ValueError, IndexError):
                raise GpucoreError(f"{path}: line {line_no}: expected 'original_id cost', got {text[:80]!r}") from None
    ids = np.asarray(ids, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    pos = np.searchsorted(original_ids, ids)
    known = (pos < original_ids.size) & (original_ids[np.minimum(pos, original_ids.size - 1)] == ids)
    out = np.full(original_ids.size, np.nan, dtype=np.float64)
    out[pos[known]] = values[known]
    missing = np.flatnonzero(np.isnan(out))
    if missing.size:
        raise GpucoreError(
            f"{path}: no cost for {missing.size} vertices (first: original id {original_ids[missing[0]]})"
        )
    return out.astype(np.float32)


def vertex_costs(scheme: str, out_degree: np.ndarray, original_ids: np.ndarray, seed: int) -> np.ndarray:
    """c(u) for every vertex (internal order), float32, all finite and > 0."""
    name, params = parse_cost(scheme)
    n = int(out_degree.shape[0])
    if name == "degree":
        costs = (params[0] + params[1] * out_degree.astype(np.float64)).astype(np.float32)
    elif name == "const":
        costs = np.full(n, params[0], dtype=np.float32)
    elif name == "uniform":
        costs = np.empty(n, dtype=np.float32)
        _uniform_costs(n, np.uint64(seed), params[0], params[1], costs)
    else:
        costs = _costs_from_file(Path(params[0]), original_ids)
    check_costs(costs, f"--cost {scheme!r}")
    return costs


def check_costs(costs: np.ndarray, where: str) -> None:
    """Raise unless every cost is finite and strictly positive."""
    bad = np.flatnonzero(~(np.isfinite(costs) & (costs > 0)))
    if bad.size:
        raise GpucoreError(
            f"{where}: {bad.size} non-positive or non-finite costs (first: vertex {bad[0]}, cost {costs[bad[0]]})"
        )
