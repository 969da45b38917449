"""The per-backend primitives the AMCSS driver calls (the interface a GPU backend implements).

One ``Primitives`` object serves one (graph, model) and is reused across realizations. It owns the
collection (``gpucore.amcss.layout.Collection``, arrays on its device), the coverage counters
``cnt`` (over the unflagged sets) and ``cnt'`` (the Select copy), and the realization's state:
``active`` (uint8 [n]), ``residual`` (sorted int32 ids of V_i), and for LT the accumulated
fixed-point in-weights of inactive nodes. The driver (``gpucore.amcss.driver``) only calls the
methods below, times them, and never touches arrays; every random decision uses the keys in
``gpucore.amcss`` (package docstring), so two backends produce the same collection.

This module is the contract only: it imports no implementation. ``gpucore.amcss.backends`` picks
and builds the implementation of a backend (``cpu.CpuPrimitives``, ``cuda.CudaPrimitives``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class Primitives(ABC):
    """Generate / Update / Select (+Discover) / Diffuse / Discover(A_i) on one backend."""

    #: backend name written to results ("cpu", "cuda")
    name: str = "?"

    # ---- realization -------------------------------------------------------------------------
    @abstractmethod
    def warm_up(self) -> None:
        """Compile / load every kernel this backend runs (each form of it), on this graph and its
        array types, before anything is timed: a few sets through Generate, the growth of the
        layout, Select, Diffuse, Discover, Update, trim and clear. Leaves nothing a later ``start``
        keeps (results do not depend on it)."""

    @abstractmethod
    def start(self, world_seed: int, sample_seed: int) -> None:
        """Begin a realization: nothing active, V_1 = V, empty collection, cnt = 0."""

    @property
    @abstractmethod
    def n_residual(self) -> int:
        """n_i = |V_i|."""

    @property
    @abstractmethod
    def theta(self) -> int:
        """Number of sets in the collection."""

    # ---- collection --------------------------------------------------------------------------
    @abstractmethod
    def generate(self, theta_new: int, k: float, rnd: int) -> None:
        """Add fresh sets (ids next_id, next_id+1, ...) until the collection holds ``theta_new``;
        each draws floor(k + u_j) roots from V_i with round ``rnd`` keys; cnt counts them."""

    @abstractmethod
    def update(self, k: float, rnd: int, min_keep: int | None = None) -> dict:
        """Update every set to round ``rnd`` with k_i = ``k``: clean sets (flag 0) keep their
        content and extend their roots (Lemma 3.4), polluted ones (flag 1) keep their inactive roots,
        draw the rest (Lemma 3.6) and are re-probed with their own keys; flags end at 0 and cnt
        counts every set. If the updated collection would not fit the memory budget, first drop
        the newest sets (``trim``), never below ``min_keep``. Returns statistics
        (``sets, clean, polluted, entries_before, entries_after``, ``trimmed`` if any)."""

    @abstractmethod
    def trim(self, theta_keep: int) -> None:
        """Keep only the sets of global index < theta_keep (segment s keeps its first
        theta_keep // S + (s < theta_keep % S) slots); dropped unflagged sets leave cnt."""

    @abstractmethod
    def clear(self) -> None:
        """Drop every set (PASTI/ASTI regenerate each round); ids keep increasing."""

    # ---- selection ---------------------------------------------------------------------------
    @abstractmethod
    def select(self, b: int, last_discover: bool = True) -> tuple[np.ndarray, int]:
        """Greedy batch on a copy cnt' of cnt with flags reset: b times argmax_{v in V_i}
        cnt'[v] / c(v) (float64 ratio, ties to the lowest id, chosen nodes excluded), then
        Discover({u}) flags the sets holding u and takes their members out of cnt' (the last pick's
        Discover may be skipped when ``last_discover`` is False: PASTI rebuilds cnt every round).
        The batch ends early at a pick after the first whose best cnt' is 0: every set is covered,
        a further seed would add cost and no estimated spread (docs/amcss.md, deviation 3).
        Returns (internal seed ids, fewer than b when it ended early; coverage Lambda = number of
        sets covered)."""

    @abstractmethod
    def commit(self) -> None:
        """Accept the last selection: cnt <- cnt' (covered sets stay flagged)."""

    # ---- observation -------------------------------------------------------------------------
    @abstractmethod
    def diffuse(self, seeds: np.ndarray) -> np.ndarray:
        """Observe the diffusion from ``seeds`` on the world realization; mark them and every
        newly activated node active, shrink V_i; return the newly active ids (seeds included)."""

    @abstractmethod
    def discover_active(self) -> int:
        """Discover(A_i): flag every unflagged set holding an active node and take it out of cnt.
        Returns the number of sets flagged now."""

    # ---- paired measurement (gpucore.amcss.paired) ---------------------------------------------
    @abstractmethod
    def snapshot(self) -> dict:
        """A copy of the collection and cnt (all that trim, update, clear, generate, select and
        commit change; on the device where it fits, else on the host)."""

    @abstractmethod
    def restore(self, state: dict) -> None:
        """Go back to a ``snapshot`` (once)."""

    # ---- inspection (tests, tools) -----------------------------------------------------------
    @abstractmethod
    def collection_sets(self) -> dict[int, tuple[frozenset, frozenset]]:
        """Host copy ``set_id -> (roots, members)``."""

    @abstractmethod
    def coverage(self) -> np.ndarray:
        """Host copy of cnt."""

    @abstractmethod
    def active_mask(self) -> np.ndarray:
        """Host copy of the active flags."""

    # ---- test hooks the shared tests use (tests/test_amcss_exact.py, test_amcss_stats.py) --------
    def mark_active(self, nodes) -> None:
        """Make ``nodes`` active without a diffusion (a fixed A_i for tests); then discover_active.

        The state must be one a diffusion can leave: under LT no inactive node may have its whole
        in-weight active (the reverse walk conditioned on "not yet active", correction 4, draws until
        it picks an inactive in-neighbour or none, and has neither to pick there)."""
        raise NotImplementedError

    def flags(self) -> dict[int, int]:
        """Host copy ``set_id -> flag``."""
        raise NotImplementedError

