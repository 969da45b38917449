"""Adaptive minimum-cost seed selection: MERIT (Algorithm 1 with Update) and PASTI / ASTI / GAMCSS.

Paper: [MERIT] Sections 2-3 (keys of ``docs/references.md``); user docs: ``docs/amcss.md``,
``docs/amcss-gpu.md``; where this package departs from the paper, ``docs/amcss.md`` says why.

Use::

    from gpucore.amcss import run_amcss
    result = run_amcss(graph, model="IC", eta=1000, batch=4, eps=0.5, realizations=10, seed=0)
    # update=False: PASTI (all cores) / ASTI (threads=1); backend="cpu" | "cuda" | "auto"

Structure (a Python driver over per-backend primitives)
-------------------------------------------------------
- ``bounds``      pure math of the acceptance test (theta_max, theta_0, H, a1, a2, Lambda_l/u).
- ``layout``      the collection arrays (segment/offset layout), sizing, memory budget, host export.
- ``primitives``  the ``Primitives`` interface a backend implements (below); the contract only.
- ``backends``    the factory: ``load_primitives(name)`` / ``make_primitives(graph, model, backend, ...)``.
- ``driver``      Algorithm 1: rounds, theta doubling, acceptance, timings, result JSON.
- ``cpu`` / ``kernels_cpu``  the CPU backend (NumPy + Numba, parallel over segments).
- a CUDA backend plugs in as ``gpucore/amcss/cuda.py`` defining ``CudaPrimitives`` (issue 5).

The layout (shared by every backend; ``layout.Collection``)
-----------------------------------------------------------
S segments of l entries in ``mrr`` (int32), L slots per segment in ``offset`` (int64 *logical*
positions: entry p of segment s is ``mrr[s*l + p % l]``; set r spans ``offset[s*L+r] ..
offset[s*L+r+1]``), ``nroots`` (int32, the set's first nroots entries are its roots), ``set_id``
(int64), ``flag`` (uint8), ``count`` [S], live range ``lo, hi`` [S], update state ``upd`` [S, 5].
Global set index g lives in segment g % S, slot g // S. Generate from theta_prev to theta_new
gives the new sets ids ``next_id + g - theta_prev``. Update rewrites the sets of a segment in slot
order after the segment's tail, circularly, never writing at or past (start of the oldest data
still needed) + l; a segment that would, stops with its state in ``upd`` and resumes after the
driver-side growth of l (the live range [lo, hi) is copied to the same logical positions).

The interface (``primitives.Primitives``), called by the driver in this order per round i
------------------------------------------------------------------------------------------
``start(world_seed, sample_seed)`` once per realization; then per round:
``trim(ceil(theta k_{i-1}/k_i))`` when k grew (MERIT's default shrink policy, never below
theta_0) and ``update(k_i, i, min_keep=theta_0)`` (MERIT, when sets exist; it may itself trim the
newest sets to stay within the memory budget), or ``clear()`` (regenerating baselines);
``generate(theta, k_i, i)`` while theta grows; ``select(b, last_discover)`` -> (seeds, Lambda);
``commit()`` (cnt <- cnt'); ``diffuse(seeds)`` -> newly active ids; ``discover_active()`` (MERIT).
Inspection: ``collection_sets()``, ``coverage()``, ``active_mask()``, ``n_residual``, ``theta``;
test hooks ``mark_active(nodes)``, ``flags()``. Per-node state: ``cnt``, ``cnt'`` int32 [n],
``active`` uint8 [n], ``residual`` int32 ascending ids of V_i, LT accumulated weights int64 [n].
Invariant between calls: ``cnt[v]`` = number of sets with flag 0 that contain v.
Select: argmax of ``float64(cnt'[v]) / float64(cost[v])`` (cost float32), ties to the lowest id.

Keys: what makes two backends produce the same collection
---------------------------------------------------------
``seed`` below is the realization's sampling seed ``mix(run_seed, WORLD, r, 1)``; j the set id.

- root count in round i: ``floor(k_i + u_j)``, ``u_j = uniform(mix(seed, ROOT_COUNT, j))``, k_i =
  n_i / eta_i in float64 (capped at n_i); monotone in i per set (correction 2).
- root draws in round i: d = 0, 1, ...: ``u = residual[mix(seed, ROOT, j, i, d) mod n_i]``
  (residual = ascending ids of V_i). To extend the current roots K to c roots: if
  2 (c - |K|) <= n_i - |K|, take draws in order, skipping u in K (rejection: uniform without
  replacement from V_i minus K); otherwise (complement form, for huge root counts) take draws in
  order to *exclude* n_i - c nodes of V_i minus K, and every other node of V_i minus K (in
  ascending order) becomes a root. A fresh set has K empty; a clean set keeps K; a polluted set
  keeps K1 = K minus the active nodes. For a clean set a drawn member of the set is *promoted*
  (no probe), others are fresh roots (probed): Lemma 3.4's split as the random outcome of uniform
  draws (the paper's fixed k_Delta = (k_i-k_{i-1})(n_i-|R|)/(n_i-k_{i-1}) is only its mean).
- IC: in-arc (u -> v) with original edge id e is live in set j iff
  ``uniform(step(mix(seed, COIN, j), e)) < p_e`` (float32 p compared in float64) (correction 3).
- LT: a node v of set j takes attempts a = 0, 1, ...: ``r = lt_draw(mix(seed, LT_CHOICE, j, v, a))``;
  r >= Q_last -> no in-arc; else in-arc k with Q_{k-1} <= r < Q_k (Q = prefix sums of
  ``lt_fixed_weight`` of the LT in-weights in in-CSR order); if its source is active, reject and
  take the next attempt (correction 4, derivation below).
- A set is the set of nodes reachable backwards from its roots in G_i through its live arcs /
  chosen arcs: independent of traversal order, thread, segment and backend. Roots first (any
  order), then members (any order); compare collections as ``set_id -> (roots, members)``.

Correction 4: LT on the residual graph conditions on "not yet active"
---------------------------------------------------------------------
Fixed point: T_v uniform on [0, 2^40), weights q_u <= 2^40 with sum Q <= 2^40; v is active once
the q of its active in-neighbours sum to more than T_v. After rounds 1..i-1, v in V_i with active
in-neighbours A (weight Q_A) is inactive, which tells exactly T_v >= Q_A: T_v is uniform on
[Q_A, 2^40). If further in-neighbours B become active later, v activates iff T_v < Q_A + Q_B, with
probability Q_B / (2^40 - Q_A). The live-arc form of that residual model: v picks in-arc u
(u not in A) with probability q_u / (2^40 - Q_A) and no arc with (2^40 - Q) / (2^40 - Q_A).
The rejection sequence gives exactly this: one attempt picks u w.p. q_u / 2^40, "none" w.p.
(2^40 - Q) / 2^40, an active source w.p. Q_A / 2^40; conditioned on not picking an active source
(attempts are independent keys), outcome o has probability P(o) / (1 - Q_A / 2^40), which is the
distribution above. It also keeps clean sets unchanged: if the first accepted attempt a* chose u
(or none) in round i-1 and u is still inactive, then in round i attempts 0..a*-1 still pick
active nodes (activation is permanent) and a* is accepted again: the same choice. If u became
active, u was in the set, so the set is polluted and is re-probed. Tests: ``tests/test_amcss_*``
enumerate the choice distribution exactly and compare updated and fresh sets.

Known limitation (as in the paper): an updated set keeps its own keys across rounds while the
batch that polluted other sets was chosen using the collection, so sets are exchangeable with
fresh ones only given A_i; PASTI (update=False) draws every round's sets with new ids.
"""

from gpucore.amcss.bounds import RoundBounds, round_bounds
from gpucore.amcss.backends import load_primitives, make_primitives
from gpucore.amcss.driver import run_amcss, run_realization, sample_seed_of, validate
from gpucore.amcss.layout import Collection, collection_sets
from gpucore.amcss.primitives import Primitives

__all__ = [
    "Collection",
    "Primitives",
    "RoundBounds",
    "collection_sets",
    "load_primitives",
    "make_primitives",
    "round_bounds",
    "run_amcss",
    "run_realization",
    "sample_seed_of",
    "validate",
]
