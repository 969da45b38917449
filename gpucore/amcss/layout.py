"""The segment/offset layout of an mRR-set collection (paper section 3.1), shared by all backends.

A collection of ``theta`` multi-root reverse-reachable sets lives in

=============  ===========  ===========================================================================
array          dtype/shape  meaning
=============  ===========  ===========================================================================
``mrr``        int32 [S*l]  node ids; segment ``s`` owns ``mrr[s*l : (s+1)*l]``, used *circularly*
``offset``     int64 [S*L]  ``offset[s*L + r]`` = logical start of the r-th set of segment s,
                            ``offset[s*L + count[s]]`` = logical end of its last set
``nroots``     int32 [S*L]  number of roots of the set in that slot: its first ``nroots`` entries
``set_id``     int64 [S*L]  the set's identity ``j`` (all its random keys derive from it)
``flag``       uint8 [S*L]  1 = covered by the candidate batch (Select) / polluted (after Discover(A))
``count``      int64 [S]    number of sets in segment s
``lo, hi``     int64 [S]    live logical range of segment s (``hi - lo <= l``); used to re-lay out
=============  ===========  ===========================================================================

*Logical positions*: offsets are int64 positions that only grow; entry ``p`` of segment ``s``
sits at ``mrr[s*l + p % l]``. The length of a set is ``offset[r+1] - offset[r]`` (never ambiguous,
unlike the paper's modulo form). Growing ``l`` copies each segment's live range ``[lo, hi)`` to the
same logical positions of the larger array, so no offset changes.

*Which set goes where*: sets are dealt round-robin: global index ``g`` lives in segment ``g % S``,
slot ``g // S``; so segment s holds ``theta // S + (theta % S > s)`` sets (the paper's formula).
The sets created by one Generate call from ``theta_prev`` to ``theta_new`` sets get the ids
``next_id + (g - theta_prev)``, hence the *set of ids* of a collection, and every set's content,
does not depend on S: CPU and GPU collections with different segment counts are equal as maps
``set_id -> (roots, members)`` (see ``collection_sets``).

Update keeps every set in its segment and slot (the sets of a segment are rewritten in slot order
after the segment's tail, circularly; see ``gpucore.amcss.cpu``), so counts keep the formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes

#: the arrays of a ``Collection``
COLLECTION_ARRAYS = ("mrr", "offset", "nroots", "set_id", "flag", "count", "lo", "hi", "status", "upd")
#: bytes per slot: offset (8) + set_id (8) + nroots (4) + flag (1)
SLOT_BYTES = 8 + 8 + 4 + 1
#: bytes per segment: count, lo, hi, status, update state (next, bw, src start/end/nroots)
SEGMENT_BYTES = 8 * 9


def sets_in_segment(theta: int, segments: int, s) -> int:
    """Number of sets of segment ``s`` when the collection holds ``theta`` sets."""
    return theta // segments + (np.asarray(s) < theta % segments)


def collection_bytes(segments: int, seg_len: int, slots: int) -> int:
    """Bytes of the collection arrays for S segments of l entries and L slots each."""
    return segments * (seg_len * 4 + slots * SLOT_BYTES + SEGMENT_BYTES)


@dataclass
class Collection:
    """The arrays of one collection on one backend (numpy or cupy arrays) and its bookkeeping."""

    S: int
    L: int
    l: int
    mrr: object
    offset: object
    nroots: object
    set_id: object
    flag: object
    count: object
    lo: object
    hi: object
    status: object
    upd: object  # int64 [S, 5]: next slot, write position, source start, source end, source nroots
    theta: int = 0
    next_id: int = 0
    entries: int = 0  # total entries of all sets (after the last generate/update)
    stats: dict = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return collection_bytes(self.S, self.l, self.L)


class MemoryBudget:
    """Bytes a run may hold: fixed arrays plus the collection; refuses growth beyond the budget."""

    def __init__(self, budget: int, what: str = "AMCSS"):
        self.budget = int(budget)
        self.fixed = 0
        self.what = what

    def reserve_fixed(self, nbytes: int, label: str) -> None:
        if self.fixed + nbytes > self.budget:
            raise OutOfMemoryError(
                f"{self.what}: {label} needs {format_bytes(self.fixed + nbytes)} "
                f"but the memory budget is {format_bytes(self.budget)}"
            )
        self.fixed += int(nbytes)

    def check_collection(self, current: int, new: int, label: str) -> None:
        """Raise unless the fixed arrays + the current and the new collection arrays fit."""
        need = self.fixed + current + new
        if need > self.budget:
            raise OutOfMemoryError(
                f"{self.what}: {label} needs {format_bytes(self.fixed + new)} "
                f"(plus {format_bytes(current)} while copying) but the memory budget is "
                f"{format_bytes(self.budget)}; lower eta/batch/eps or raise --memory-budget"
            )


def plan_segment_length(entries_needed: float, segments: int, slack: float = 1.3, minimum: int = 256) -> int:
    """Entries per segment for ``entries_needed`` entries in total (with slack for imbalance)."""
    per = entries_needed / max(1, segments)
    # imbalance between segments grows like sqrt(per); keep a margin beyond the slack factor
    return int(max(minimum, math.ceil(per * slack + 8.0 * math.sqrt(per) + 64)))


def collection_sets(coll: Collection, to_host=np.asarray) -> dict[int, tuple[frozenset, frozenset]]:
    """``set_id -> (roots, all members incl. roots)`` of every set (host copies; for tests and tools)."""
    mrr = to_host(coll.mrr)
    offset = to_host(coll.offset)
    nroots = to_host(coll.nroots)
    set_id = to_host(coll.set_id)
    count = to_host(coll.count)
    out = {}
    for s in range(coll.S):
        for r in range(int(count[s])):
            start, end = int(offset[s * coll.L + r]), int(offset[s * coll.L + r + 1])
            pos = np.arange(start, end, dtype=np.int64) % coll.l + s * coll.l
            entries = mrr[pos]
            k = int(nroots[s * coll.L + r])
            j = int(set_id[s * coll.L + r])
            if j in out:
                raise AssertionError(f"set id {j} appears twice in the collection")
            members = frozenset(int(v) for v in entries)
            if len(members) != entries.size:
                raise AssertionError(f"set {j} holds duplicate entries")
            out[j] = (frozenset(int(v) for v in entries[:k]), members)
    return out


class CollectionSizing:
    """How a backend's collection grows, shared by the CPU and CUDA primitives.

    The host class provides ``coll`` (a ``Collection``), ``cnt``, ``n_res``, ``S``, ``budget``
    (``MemoryBudget``), ``preplan``, ``k_last``, ``trim(theta_keep)``, ``stats``, ``_allocate(S, L, l, old)``
    (new arrays, raising ``GpucoreError`` over budget) and the copy kernels ``_relayout(old, new)``
    (each segment's live range into longer segments) and ``_reslot(old, new)`` (per-slot arrays into
    more slots); ``_host`` turns a backend array into a NumPy one; ``_copy_out(arr, nbytes)`` /
    ``_copy_in(arr)`` make and take back a snapshot copy of a backend array."""

    @property
    def n_residual(self) -> int:
        return int(self.n_res)

    @property
    def theta(self) -> int:
        return int(self.coll.theta)

    def _host(self, arr) -> np.ndarray:
        return np.asarray(arr)

    def _reshape(self, L: int | None = None, l: int | None = None) -> None:
        """Give the collection more slots per segment (L) and/or longer segments (l), same content."""
        old = self.coll
        L = max(L or old.L, old.L)
        l = max(l or old.l, old.l)
        if L == old.L and l == old.l:
            return
        if l > old.l:
            span = int(self._host(old.hi - old.lo).max()) if old.S else 0
            if span > old.l:
                raise GpucoreError(f"internal error: a segment's live range {span} exceeds its length {old.l}")
        new = self._allocate(old.S, L, l, old)
        if l != old.l:
            self._relayout(old, new)
            self.stats["relayouts"] += 1
        else:
            new.mrr = old.mrr
        if L != old.L:
            self._reslot(old, new)
        else:
            new.offset, new.nroots, new.set_id, new.flag = old.offset, old.nroots, old.set_id, old.flag
        new.count, new.lo, new.hi, new.status, new.upd = old.count, old.lo, old.hi, old.status, old.upd
        new.theta, new.next_id, new.entries, new.stats = old.theta, old.next_id, old.entries, old.stats
        self.coll = new

    def snapshot(self) -> dict:
        """A copy of the collection and the coverage counters (what ``trim``, ``update``, ``clear``,
        ``generate``, ``select`` and ``commit`` change), for ``restore``: the paired measurement
        of a round both ways (``gpucore.amcss.paired``). The node state (active users, V_i) is not
        copied: those steps leave it alone."""
        c = self.coll
        arrays = {name: self._copy_out(getattr(c, name), c.nbytes) for name in COLLECTION_ARRAYS}
        return {"shape": (c.S, c.L, c.l), "arrays": arrays, "cnt": self._copy_out(self.cnt, c.nbytes),
                "scalars": (c.theta, c.next_id, c.entries, dict(c.stats)), "k_last": self.k_last}

    def restore(self, state: dict) -> None:
        """Go back to a ``snapshot`` (once: the snapshot's arrays become the live ones)."""
        S, L, l = state["shape"]
        coll = Collection(S=S, L=L, l=l, **{name: self._copy_in(arr) for name, arr in state["arrays"].items()})
        coll.theta, coll.next_id, coll.entries, coll.stats = state["scalars"]
        self.coll = coll
        self.cnt = self._copy_in(state["cnt"])
        self.k_last = state["k_last"]

    def warm_up(self) -> None:
        """One small round trip through every primitive (the contract's ``warm_up``): Generate of
        4 sets per segment with 2 roots, a growth of both the slots and the segments (the copy
        kernels), Select, Diffuse, Discover(A), Update to more roots, trim, Generate again, Select
        without its last Discover, clear. Sample seed 0; the next ``start`` resets everything."""
        self.start(0, 0)
        theta = 4 * self.S
        k = min(2.0, float(self.n_residual))
        self.generate(theta, k, 1)
        self._reshape(L=self.coll.L + 1, l=self.coll.l + 1)
        seeds, _ = self.select(min(2, self.n_residual))
        self.commit()
        self.diffuse(seeds)
        if self.n_residual > 0:  # a tiny graph may be all active already
            self.discover_active()
            k = min(2.0 * k, float(self.n_residual))
            self.update(k, 2, min_keep=1)
            self.trim(theta // 2)
            self.generate(theta, k, 2)
            self.select(min(2, self.n_residual), last_discover=False)
        self.clear()

    def _ensure_slots(self, theta: int) -> None:
        need = -(-theta // self.S) + 1
        if need > self.coll.L:
            self._reshape(L=max(need, min(2 * self.coll.L, need + 1024)))

    def _ensure_entries(self, entries: float) -> None:
        l = plan_segment_length(entries, self.S)
        if l > self.coll.l:
            # grow geometrically (amortised copies), but never past the budget when the plan fits
            grown = max(l, int(self.coll.l * 1.25))
            try:
                self._reshape(l=grown)
            except GpucoreError:
                if grown == l:
                    raise
                self._reshape(l=l)

    def _grow_after_overflow(self, measured_entries: float) -> None:
        c = self.coll
        l = int(math.ceil(c.l * 1.5))
        if self.preplan:
            l = max(l, plan_segment_length(measured_entries, self.S))
        span = int(self._host(c.hi - c.lo).max())
        self._reshape(l=max(l, span + 1))

    def _fits(self, entries: float) -> bool:
        c = self.coll
        l = plan_segment_length(entries, self.S)
        if l <= c.l:
            return True
        need = self.budget.fixed + c.nbytes + collection_bytes(c.S, max(l, int(c.l * 1.25)), c.L)
        return need <= self.budget.budget

    def _make_room(self, theta_new: int, k: float) -> tuple[int, float] | None:
        """Before a Generate up to ``theta_new`` sets of about k roots: slots, and (preplanned)
        entries at the collection's mean set size. Returns (current theta, expected entries per
        new set), or None when ``theta_new`` adds nothing."""
        c = self.coll
        theta_prev = c.theta
        if theta_new <= theta_prev:
            return None
        if theta_new >= 2**31 - 1:
            raise GpucoreError(f"amcss: {theta_new:,} mRR-sets exceed the int32 coverage counters")
        self._ensure_slots(theta_new)
        avg = c.entries / theta_prev if theta_prev else max(1.0, k) * 4.0 + 4.0
        if self.preplan:
            self._ensure_entries(c.entries + (theta_new - theta_prev) * avg)
        return theta_prev, avg

    def _begin_update(self, k: float, min_keep: int | None, flag_stats) -> tuple[float, dict]:
        """The backends' common Update prologue: growth k / k_last, trim to fit the budget, the
        round's record (sets, polluted and the clean sets' entries = ``flag_stats()``, clean,
        entries_before, entries_clean, trimmed) and, preplanned, room for the grown sets.
        Returns (growth, record)."""
        growth = max(1.0, k / max(self.k_last, 1e-300))
        trimmed = self._trim_to_fit(growth, min_keep)
        c = self.coll
        polluted, clean_entries = flag_stats()
        stats = {"sets": c.theta, "polluted": polluted, "clean": c.theta - polluted, "entries_before": c.entries,
                 "entries_clean": clean_entries}
        if trimmed:
            stats["trimmed"] = trimmed
        if c.theta and self.preplan:
            self._ensure_entries(c.entries * growth * 1.05)
        return growth, stats

    def _trim_to_fit(self, growth: float, min_keep: int | None) -> int:
        """Before an Update that grows the sets by ``growth``: drop the newest sets (never below
        ``min_keep``) while the grown collection would not fit the budget, rather than fail.
        Returns how many sets were dropped."""
        trimmed = 0
        if min_keep is not None:
            c = self.coll
            while c.theta > min_keep and not self._fits(c.entries * growth * 1.05):
                before = c.theta
                self.trim(max(int(min_keep), c.theta // 2))
                trimmed += before - c.theta
        return trimmed
