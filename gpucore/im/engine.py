"""IM's engine contract: a *sampler* fills collections of RR sets, a *selector* runs greedy max-cover.

An engine is one sampler and one selector on one backend (``make_engine``). The IMM driver
(``gpucore.im.driver``) only talks to these methods, so samplers are interchangeable: same keys,
same sets, same seeds.

Sampler contract (``gim``: ``CPUSampler`` / ``CUDASampler``; ``fused``: ``gpucore.im.fused``)
------------------------------------------------------------------------------------------------
Attributes ``n``, ``rounds``, ``backend``, ``name``.

``collection(j_begin) -> RRCollection``
    An empty collection on the sampler's backend whose first set will be set ``j_begin``.
``sample_into(coll, count, mean_hint)``
    Append sets ``j = coll.j_end, ..., coll.j_end + count - 1`` to ``coll``, in order of j. A rank of
    a distributed run moves ``j_end`` between extensions (``coll.seek``: its share of the next keys),
    so a sampler reads ``coll.j_end`` at every call and keeps no key position of its own.
    Set j is a pure function of (run seed, j, graph, model, rounds) under the key scheme of
    ``gpucore.im.rrsets`` (root, IC coins, LT choices): two samplers, backends, batchings or
    thread counts give the same set for the same j (the order of elements inside a set may
    differ). ``mean_hint`` is the mean set size seen so far (0.0 when unknown): a sizing hint only.
``synchronize()``
    Wait until the appended sets are in place (device work done).
``stats()``, ``reset_stats()`` (optional)
    Instrumentation of the sampler (a JSON-ready dict, summed over its calls since construction or
    the last reset; the fused sampler's, ``docs/fuseim.md``); the IMM driver resets it after its
    warm-up and probe, so an IMM result's ``sampler_stats`` covers the timed phases.
``warm_up()``, ``reserve_memory(nbytes)`` (optional)
    First uses of the sampler's own that a short call does not make (``Engine.warm_up`` calls it);
    have the device memory pool hold ``nbytes`` from now on (``Engine.reserve``; CUDA samplers).

Selector contract (``CPUSelector`` / ``CUDASelector``)
------------------------------------------------------
``greedy(coll, k) -> (chosen, gains, covered)``
    Greedy max-cover with k seeds per round (k * rounds steps): each step takes the element of
    largest marginal coverage among the allowed ones, ties to the lowest id; ``chosen`` and
    ``gains`` are host int64 arrays in the order of choice, ``covered`` the sets covered (an int).
    An element is allowed when not yet chosen and its round holds fewer than k seeds (MRIM).
``start(coll, k) -> Selection``
    The same greedy one step at a time, for selections spread over several collections (ranks):
    ``Selection.counts`` is the backend array (int32, length n * rounds) of uncovered sets of this
    collection holding each element; ``Selection.argmax(counts)`` -> (element, gain): the allowed
    element of largest ``counts`` (any array of that shape, e.g. the sum of every rank's counts),
    ties to the lowest id; ``Selection.cover(element)`` -> the sets of this collection the element
    newly covers (their members' counts drop; the element becomes chosen; its round is closed once
    it holds k); ``Selection.covered`` -> sets covered so far. ``stepwise_greedy`` below is the
    whole greedy on that interface; ``greedy`` is its fast path (identical results).
``counts(coll)``
    The backend array (int32, length n * rounds) of the sets of ``coll`` holding each element (a
    distributed run sums every rank's for the lower-bound test's bound and the greedy's first pick).
``coverage(coll, elements) -> int``
    The sets of ``coll`` holding at least one of ``elements`` (scoring seeds on other sets).
``coverage_bound(coll, k) -> int``
    An upper bound on the sets any feasible seed set covers (the greedy's included): the sum over
    rounds of the k largest counts (``gpucore.im.rrsets.top_k_sum``); the lower-bound search skips a greedy it
    shows cannot pass.

The sampler registry names implementations by module, imported on first use, so the project works
without the optional ones: ``SAMPLERS[name] = (module, factory)``; the factory is called as
``factory(graph, model, rounds, seed, backend, **options)``.
"""

from __future__ import annotations

import importlib

import numpy as np

from gpucore.errors import GpucoreError

#: sampler name -> (module, factory name); the factory builds the sampler for a backend. ``auto`` is not a
#: sampler: the IMM driver picks ``gim`` or ``fused`` by a probe (``gpucore.im.auto``).
SAMPLERS = {
    "gim": ("gpucore.im.engine", "gim_sampler"),
    "fused": ("gpucore.im.fused", "fused_sampler"),
}


def gim_sampler(graph, model: str, rounds: int, seed: int, backend, **options):
    """gIM's sampler (Shahrouz et al., TPDS 2021, sections 3.2-3.7) on the CPU or one GPU."""
    if backend.is_cuda:
        from gpucore.im.cuda import CUDASampler

        return CUDASampler(graph, model, rounds, seed, backend, **options)
    from gpucore.im.cpu import CPUSampler

    return CPUSampler(graph, model, rounds, seed, backend, **options)


def make_sampler(graph, model: str, rounds: int, seed: int, backend, sampler: str = "gim", **options):
    """The sampler called ``sampler`` (``SAMPLERS``) for ``backend``."""
    if sampler not in SAMPLERS:
        raise GpucoreError(f"--sampler {sampler!r}: choose one of auto, {', '.join(SAMPLERS)}")
    module, factory = SAMPLERS[sampler]
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and module.startswith(exc.name):
            raise GpucoreError(f"--sampler {sampler}: not available in this installation ({module} is missing)") from None
        raise
    return getattr(mod, factory)(graph, model, rounds, seed, backend, **options)


def make_selector(n: int, rounds: int, backend):
    """The greedy max-cover selector of ``backend`` for elements ``t * n + u``."""
    if backend.is_cuda:
        from gpucore.im.cuda import CUDASelector

        return CUDASelector(n, rounds, backend)
    from gpucore.im.cpu import CPUSelector

    return CPUSelector(n, rounds, backend)


class Engine:
    """One sampler and one selector on one backend: the sampler's methods plus ``greedy``/``start``."""

    def __init__(self, sampler, selector):
        self.sampler = sampler
        self.selector = selector
        self.backend = sampler.backend
        self.n = int(sampler.n)
        self.rounds = int(sampler.rounds)
        self.name = f"{sampler.name}+{selector.name}"

    def collection(self, j_begin: int):
        return self.sampler.collection(j_begin)

    def sample_into(self, coll, count: int, mean_hint: float) -> None:
        self.sampler.sample_into(coll, count, mean_hint)

    def synchronize(self) -> None:
        self.sampler.synchronize()

    def greedy(self, coll, k: int):
        return self.selector.greedy(coll, k)

    def start(self, coll, k: int):
        return self.selector.start(coll, k)

    def counts(self, coll):
        return self.selector.counts(coll)

    def coverage(self, coll, elements) -> int:
        return self.selector.coverage(coll, elements)

    def coverage_bound(self, coll, k: int) -> int:
        return self.selector.coverage_bound(coll, k)

    def warm_up(self, k: int = 1, sets: int = 64) -> None:
        """Run, on throw-away sets, every operation the IMM phases run, with the dtypes and array shapes
        they use, so that no kernel is compiled, loaded or launched for the first time inside a timed
        phase (a fresh process loads each of CuPy's kernels on first use: a sort, a scan or a reduction
        per dtype and shape, besides the RawModule kernels):

        - sampling (every phase): ``sample_into`` on an empty and on a non-empty collection, and the
          collection growing both its arrays, empty and not (``reserve``: the copies of a growth, whose
          kernels CuPy compiles apart for one element and for a run);
        - the lower-bound search's test: ``coverage_bound`` with the run's k (counts, the sort of the
          (rounds, n) counts, a 64-bit sum), and ``counts`` (a distributed run's bound);
        - selection: ``greedy`` with k seeds per round (index, scan, argmax and take kernels; the one-block
          greedy too, through the selector's ``warm_up``);
        - the spread estimate: ``coverage``;
        - the sampler's own first uses (``sampler.warm_up()`` where it has one: the fused sampler's
          sort of more keys than one tile, its frontier-list rebuild).

        ``tests/test_im_warmup.py`` checks on the emulated engines that the phases launch no kernel
        and no array operation (name, dtypes, dimensions) that the warm-up did not. Instrumentation
        is reset at the end (``reset_stats``)."""
        k = max(1, min(int(k), self.n))
        coll = self.collection(0)
        sets_cap, elements_cap = coll.capacity()
        coll.reserve(sets_cap + 1, elements_cap + 1)  # an empty collection grows: its offsets copy is one element
        self.sample_into(coll, sets, 0.0)
        self.sample_into(coll, sets, coll.mean_size)  # appending to a non-empty collection
        coll.reserve(*coll.capacity())  # both arrays grow
        self.coverage_bound(coll, k)
        self.counts(coll)
        if hasattr(self.selector, "warm_up"):  # a selector with several ways to select warms up each
            self.selector.warm_up(coll, k)
        else:
            self.greedy(coll, k)
        self.coverage(coll, [0])
        coll.release()
        if hasattr(self.sampler, "warm_up"):
            self.sampler.warm_up()
        self.synchronize()
        self.reset_stats()

    def reserve(self, nbytes: int) -> None:
        """Have the backend's memory pool hold ``nbytes`` for the arrays of the phases (a CUDA sampler's
        ``reserve_memory``; nothing on the CPU): one allocation before the timed phases instead of one
        per growing array inside them, as gIM allocates its pool in its constructor."""
        if hasattr(self.sampler, "reserve_memory"):
            self.sampler.reserve_memory(int(nbytes))

    def reset_stats(self) -> None:
        """Zero the sampler's instrumentation, where it has some: the result's counts start here."""
        if hasattr(self.sampler, "reset_stats"):
            self.sampler.reset_stats()

    def sampler_stats(self) -> dict | None:
        """The sampler's ``stats()``, or None when it has no instrumentation."""
        return self.sampler.stats() if hasattr(self.sampler, "stats") else None


def make_engine(graph, model: str, rounds: int, seed: int, backend, sampler: str = "gim", **sampler_options) -> Engine:
    """The engine of ``backend`` with the named sampler (``SAMPLERS``) and the backend's selector."""
    return Engine(make_sampler(graph, model, rounds, seed, backend, sampler, **sampler_options),
                  make_selector(graph.n, rounds, backend))


def stepwise_greedy(selection, steps: int, combine=None):
    """Greedy max-cover through the ``Selection`` interface: (chosen, gains, covered of this collection).

    ``combine(counts) -> counts`` turns this collection's counts into the ones the argmax sees (a
    distributed run sums every rank's: one collective per step); ``None`` keeps them.
    """
    chosen = np.empty(steps, dtype=np.int64)
    gains = np.empty(steps, dtype=np.int64)
    for it in range(steps):
        counts = selection.counts if combine is None else combine(selection.counts)
        chosen[it], gains[it] = selection.argmax(counts)
        selection.cover(int(chosen[it]))
    return chosen, gains, selection.covered
