"""The fused CUDA sampler with its kernels run in the CPU emulator (``gpucore.kernels.emulator``).

``emulated_fused_sampler(graph, model, rounds, seed, backend, **options)`` is a ``FusedCUDASampler`` whose
arrays are NumPy arrays and whose kernels (``im_fused.cu``, and ``im_sample.cu`` for compaction) are the
unmodified sources compiled by the emulator: the real driver code of ``gpucore.im.fused.cuda`` runs,
level loop, pool and list growth included. It has the signature of a sampler factory of
``gpucore.im.engine.SAMPLERS`` (``backend``: the cpu backend, or None), so a test can register it
and run IMM through the registry. Device facts are given (``sms``, ``blocks_per_sm``, ``free_bytes``);
expansion blocks are ``expand_threads`` wide; ``schedule`` (a seed) runs the fused kernels on a random
interleaving of their threads (preemption at atomics), to shake out races inside a block;
``resident_list`` (entries) compiles the resident mapping's shared frontier lists that small
(``FZ_RESIDENT_LIST``) and its queue of whole-warp entries to 2 (``FZ_DEFER``), so that their overflow
paths run; ``poison`` fills every array the driver allocates with ``backend.empty`` (and the collections'
arrays) with garbage bytes, as uninitialised device memory may hold, so that reading one before writing
it shows. Blocks run one after another, so
races between blocks are left to ``tests/gpu``; so is what the device compiler may do that g++ does not
(e.g. keep a load of a ``__restrict__`` array across a ``__syncthreads``). Slow: keep graphs,
``max_batches`` and grids small.
"""

from __future__ import annotations

import numpy as np

from gpucore.backend import Backend, get_backend
from gpucore.kernels import emulator as _emu

MODULES = ("im/im_fused", "im/im_sample")

available = _emu.available


def emulated_fused_sampler(graph, model: str, rounds: int = 1, seed: int = 0, backend=None, *, sms: int = 1,
                           blocks_per_sm: int = 2, free_bytes: int = 1 << 28, expand_threads: int = 64,
                           schedule: int = 0, poison: bool = False, resident_list: int | None = None, **options):
    """A ``FusedCUDASampler`` on NumPy arrays whose kernels run in the emulator (module docstring)."""
    from gpucore.im.emulated import emulated_class
    from gpucore.im.fused.cuda import FusedCUDASampler

    be = get_backend("cpu") if backend is None else backend
    if be.is_cuda:
        raise ValueError("the emulated fused sampler runs on NumPy arrays: give it the cpu backend")
    if poison:
        be = PoisonedBackend(be.name, be.xp)
    cls = emulated_class(FusedCUDASampler, sms, blocks_per_sm, free_bytes)
    if resident_list is not None:

        class SmallLists(cls):
            def _load(self, name, defines=()):
                extra = ((("FZ_RESIDENT_LIST", str(int(resident_list))), ("FZ_DEFER", "2"))
                         if name == "im/im_fused" else ())
                return super()._load(name, tuple(defines) + extra)

        cls = SmallLists
    if schedule:

        class Scheduled(cls):
            def _load(self, name, defines=()):
                lib = super()._load(name, defines)
                return _Scheduled(lib, _emu.Schedule(schedule)) if name == "im/im_fused" else lib

        cls = Scheduled
    return cls(graph, model, rounds, seed, be, expand_threads=expand_threads, **options)


class _Scheduled:
    """A compiled module whose kernels run on a given schedule."""

    def __init__(self, library, schedule):
        self.library, self.schedule = library, schedule

    def get_function(self, name):
        return self.library.kernel(name, schedule=self.schedule)


class PoisonedBackend(Backend):
    """The cpu backend whose ``empty`` arrays hold garbage (every byte POISON), like fresh device memory."""

    POISON = 0xA7

    def empty(self, shape, dtype, what: str = "array"):
        out = super().empty(shape, dtype, what)
        out.view(np.uint8)[...] = self.POISON
        return out
