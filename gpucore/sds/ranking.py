"""The top-t answer as a pure function of (vertex, score) pairs, and the search order over bounds.

Tie rule: vertices are ranked by score, higher first, and among equal scores by vertex id, lower
first (internal ids keep the order of the original ids, so "lower id" means the same in both). The
answer S* is the first t vertices of that total order over all of V. It does not depend on the
bounds, the batches, the backend or the number of GPUs: any set of scored pairs that contains S*
gives S* through ``top_t`` (merging partial answers is ``top_t`` of their union).

The paper keeps an incumbent on ties (Algorithm 1 line 19), which makes the answer depend on the
processing order; with ours, a vertex whose bound *equals* the t-th score can still enter (with a
lower id), so the search stops only when the next bound is *below* the t-th score
(``can_stop``), and every vertex that ties with the t-th score is scored: ``ties_at_t`` is exact.
Vertices with bound 0 have score 0 and are never scored; they fill the answer when fewer than t
vertices have a positive score.
"""

from __future__ import annotations

import numpy as np


def rank_order(vertices: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Positions of the pairs in rank order (score descending, vertex ascending)."""
    return np.lexsort((np.asarray(vertices), -np.asarray(scores, dtype=np.int64)))


def top_t(vertices, scores, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``t`` pairs in rank order (fewer if fewer pairs are given); duplicates must not occur."""
    vertices = np.asarray(vertices, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.int64)
    keep = rank_order(vertices, scores)[:t]
    return vertices[keep], scores[keep]


def merge_top(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], t: int):
    """``top_t`` of the union of two disjoint sets of pairs (for partial answers of batches or ranks)."""
    return top_t(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]), t)


def candidate_order(bound, xp=np):
    """Vertices with a positive bound, by bound descending then id ascending (int32); ``xp`` is the
    array module of ``bound`` (NumPy, or CuPy on the GPU)."""
    cand = xp.flatnonzero(bound > 0)
    if cand.size == 0:
        return cand.astype(xp.int32)
    top = int(bound.max())
    key = (top - bound[cand].astype(xp.int64)) * xp.int64(bound.shape[0]) + cand
    return cand[xp.argsort(key)].astype(xp.int32)


def can_stop(top_scores: np.ndarray, t: int, next_bound: int) -> bool:
    """True when no unscored vertex (bound <= ``next_bound``) can enter the top t."""
    if next_bound <= 0:
        return True
    return len(top_scores) >= t and next_bound < int(top_scores[t - 1])
