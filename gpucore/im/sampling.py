"""RR sets of given keys on a backend, for tests and for other solvers that need plain RR sets.

``rr_sets(graph, "IC", j_begin=0, count=1000, seed=7, backend="cpu")`` returns host arrays
``(offsets int64[count+1], elements int32[offsets[-1]])``: set i is the RR set of key index
``j_begin + i``. The content of set j depends only on (seed, j, graph, model, rounds), so the cpu
and cuda backends must return identical sets (the order of elements inside a set may differ).
"""

from __future__ import annotations

import numpy as np

from gpucore.backend import get_backend
from gpucore.im.engine import make_sampler, make_selector


def rr_sets(graph, model: str = "IC", j_begin: int = 0, count: int = 1, seed: int = 0, rounds: int = 1,
            backend="cpu", batch: int | None = None, sampler: str = "gim", **options) -> tuple[np.ndarray, np.ndarray]:
    """RR sets j_begin .. j_begin + count - 1 as host (offsets, elements), drawn by the named sampler."""
    be = get_backend(backend) if isinstance(backend, str) else backend
    return engine_sets(make_sampler(graph, model.upper(), rounds, seed, be, sampler, **options), j_begin, count, batch)


def engine_sets(engine, j_begin: int, count: int, batch: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """RR sets j_begin .. j_begin + count - 1 drawn by a given sampler (or engine), as host (offsets, elements)."""
    coll = engine.collection(j_begin)
    step = count if batch is None else max(1, int(batch))
    while coll.count < count:
        engine.sample_into(coll, min(step, count - coll.count), coll.mean_size)
    engine.synchronize()
    return coll.host_sets()


def canonical(offsets: np.ndarray, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same sets with each set's elements sorted (to compare collections as sets per j)."""
    out = np.array(elements, copy=True)
    for i in range(offsets.shape[0] - 1):
        out[offsets[i] : offsets[i + 1]].sort()
    return np.asarray(offsets), out


def greedy(graph, offsets, elements, k: int, rounds: int = 1, backend="cpu"):
    """Greedy max-cover of given host sets on a backend: (chosen elements, marginal gains, covered)."""
    from gpucore.im.rrsets import RRCollection

    be = get_backend(backend) if isinstance(backend, str) else backend
    coll = RRCollection(be.xp, be, 0, graph.n, rounds)
    sizes = np.diff(np.asarray(offsets, dtype=np.int64))
    coll.reserve(sizes.shape[0], int(sizes.sum()))
    coll.append(sizes, [(0, be.asarray(np.asarray(elements, dtype=np.int32)))])
    chosen, gains, covered = make_selector(graph.n, rounds, be).greedy(coll, k)
    return np.asarray(chosen, dtype=np.int64), np.asarray(gains, dtype=np.int64), int(covered)
