"""Input checks of the oracle: one-line ``GpucoreError`` messages naming the parameter."""

from __future__ import annotations

import numbers

import numpy as np

from gpucore.errors import GpucoreError

MODELS = ("IC", "LT")
_U64 = (1 << 64) - 1


def check_model(model) -> str:
    if model not in MODELS:
        raise GpucoreError(f"model {model!r} is unknown: choose IC or LT")
    return model


def check_u64(value, what: str) -> int:
    """An integer in [0, 2^64) (seeds and world seeds are unsigned 64-bit words)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise GpucoreError(f"{what} must be an integer in [0, 2^64), got {value!r}")
    value = int(value)
    if not 0 <= value <= _U64:
        raise GpucoreError(f"{what} must be an integer in [0, 2^64), got {value}")
    return value


def as_id_array(ids, what: str) -> np.ndarray:
    """Integer ids as int64 (no range check); non-integers raise."""
    arr = np.asarray(ids if not isinstance(ids, (set, frozenset)) else sorted(ids))
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise GpucoreError(f"{what}: expected a flat list of internal ids, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise GpucoreError(f"{what}: internal ids must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max:
        raise GpucoreError(f"{what}: internal id {int(arr.max())} out of range")
    return arr.astype(np.int64)


def check_seeds(seeds, n: int, what: str = "seeds") -> np.ndarray:
    """A non-empty set of distinct internal ids in [0, n), as int64 (order kept)."""
    arr = as_id_array(seeds, what)
    if arr.size == 0:
        raise GpucoreError(f"{what}: empty seed set")
    check_range(arr, n, what)
    uniq, counts = np.unique(arr, return_counts=True)
    if uniq.size != arr.size:
        raise GpucoreError(f"{what}: internal id {int(uniq[counts > 1][0])} appears more than once")
    return arr


def check_range(arr: np.ndarray, n: int, what: str) -> None:
    bad = (arr < 0) | (arr >= n)
    if bad.any():
        raise GpucoreError(f"{what}: internal id {int(arr[bad][0])} is out of range [0, {n})")


def check_runs(runs) -> int:
    if isinstance(runs, (bool, np.bool_)) or not isinstance(runs, (numbers.Integral, np.integer)) or runs < 2:
        raise GpucoreError(f"runs must be an integer >= 2, got {runs!r}")
    return int(runs)


def check_confidence(confidence) -> float:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise GpucoreError(f"confidence must lie in (0, 1), got {confidence!r}")
    return c
