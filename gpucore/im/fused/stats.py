"""Instrumentation of a fused sampler, summed over its calls (``engine.stats()`` in the result JSON).

Counters (both backends count the same things):

- ``entries``: frontier entries expanded, i.e. visited (vertex, level) pairs of a batch whose
  mask was not empty; ``mask_bits``: traversals those masks carried in total. **Batch occupancy**
  = mask_bits / (entries x batch width): the mean fraction of a batch's traversals that share one
  adjacency read (FuseIM, Neff et al., ICS '24, sec. 3.1 and Table 2);
- ``edge_reads``: in-arcs read by fused expansions (the row of every expanded entry, once for all
  its traversals); ``edge_reads_unfused``: what a one-traversal-at-a-time sampler reads for the same
  sets (the row of every member of every set); their ratio is the saving of fusing. Both leave out
  the skipping nodes of ``gpucore.im.skipping``, whose rows neither sampler reads: ``skip_jumps``
  counts the geometric jumps drawn there (one walk per traversal, fused or not);
- ``mapping``: how batches run (the CUDA sampler's ``mapping`` option: ``level``, ``resident`` or ``auto``;
  a CPU worker runs its batch's levels itself: ``resident``), ``resident_pieces``: pieces of a call the
  CUDA sampler ran in the resident mapping; ``ring_levels``: resident levels that found their pending
  vertices by scanning the batch's visited words, because the level's shared-memory frontier list had
  overflowed or was lost to a relaunch (0 elsewhere); ``sorted_pieces``: pieces whose traversals were
  dispatched in sorted order of their roots (``sorted_sources``, which the resident mapping does not apply:
  ``FusedOptions.sorts``);
- ``levels``: synchronous frontier steps (resident mapping: the most levels one batch ran in one
  launch); ``frontier_peak``: most entries in one global frontier list (level mapping; the resident
  mapping's lists are in shared memory, a fixed ``FZ_RESIDENT_LIST`` entries each);
  ``frontier_bytes_peak``: the bytes those lists held; ``mask_bytes``: visited + next-level masks
  (and the visited-word lists) allocated for the batches in flight;
- ``extractions``: times a batch wrote out the sets of ended traversals; ``traversals``: traversals
  run (written); ``evicted``: traversals a level-mapping batch evicted after they outlived its other slots,
  each then run again by the team pass (CUDA, IC; its rows count in both ``edge_reads`` and
  ``edge_reads_unfused``, the partial work of the evicted traversal in ``edge_reads`` only); ``regrowths``: output pools or frontier lists grown during a call; ``level_captures`` and
  ``level_replays``: blocks of levels captured and replayed as one launch (CUDA sampler with
  ``level_graphs``, level mapping; 0 elsewhere);
- ``seconds_by_phase``: roots (drawing and sorting), traverse, compact (sets in order of j).
"""

from __future__ import annotations

from gpucore.timing import Phases

COUNTERS = ("entries", "mask_bits", "edge_reads", "edge_reads_unfused", "skip_jumps", "levels", "frontier_peak",
            "extractions", "traversals", "regrowths", "level_captures", "level_replays", "resident_pieces",
            "sorted_pieces", "ring_levels", "evicted")
#: order of the counters the kernels fill (an int64 array of this length)
KERNEL_COUNTERS = ("entries", "mask_bits", "edge_reads", "levels", "frontier_peak", "extractions", "traversals",
                   "edge_reads_unfused", "skip_jumps", "ring_levels", "evicted")
MAX_COUNTERS = ("frontier_peak",)


class SamplerStats:
    def __init__(self, options, backend_name: str, batches: int, mask_bytes: int, list_entry_bytes: int,
                 sync=None, mapping: str = "resident"):
        self.options = options
        self.mapping = mapping
        self.backend_name = backend_name
        self.batches = int(batches)
        self.mask_bytes = int(mask_bytes)
        self.list_entry_bytes = int(list_entry_bytes)
        self._sync = sync
        self.reorder_seconds = 0.0
        self.reset()

    def reset(self) -> None:
        """Zero the counters and phase clocks (the reorder time of the engine's construction stays)."""
        self.counts = {name: 0 for name in COUNTERS}
        self.phases = Phases(("roots", "traverse", "compact"), sync=self._sync)

    def add_kernel_counters(self, values) -> None:
        for name, value in zip(KERNEL_COUNTERS, values):
            if name in MAX_COUNTERS:
                self.counts[name] = max(self.counts[name], int(value))
            else:
                self.counts[name] += int(value)

    def add(self, name: str, value: int) -> None:
        self.counts[name] += int(value)

    def to_dict(self) -> dict:
        c = self.counts
        width = self.options.batch_width
        return {
            "sampler": "fused",
            "backend": self.backend_name,
            **self.options.to_dict(),
            "mapping": self.mapping,
            "batches_in_flight": self.batches,
            **c,
            "occupancy": c["mask_bits"] / (c["entries"] * width) if c["entries"] else 0.0,
            "edge_read_ratio": c["edge_reads_unfused"] / c["edge_reads"] if c["edge_reads"] else 0.0,
            "mask_bytes": self.mask_bytes,
            "frontier_bytes_peak": c["frontier_peak"] * self.list_entry_bytes,
            "seconds_by_phase": {"reorder": self.reorder_seconds, **self.phases.seconds},
        }


class Instrumented:
    """Mixin of the fused engines: ``stats()`` and ``reset_stats()`` over their ``_stats``."""

    def stats(self) -> dict:
        """Instrumentation summed over every call since construction or ``reset_stats`` (module docstring)."""
        return self._stats.to_dict()

    def reset_stats(self) -> None:
        self._stats.reset()
