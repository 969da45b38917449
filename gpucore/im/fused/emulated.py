"""The fused CUDA sampler with its kernels run in the CPU emulator (``gpucore.kernels.emulator``).

``emulated_fused_engine(graph, model, rounds, seed, **options)`` is a ``FusedCUDAEngine`` whose arrays
are NumPy arrays and whose kernels (``im_fused.cu``, and ``im_sample.cu`` / ``im_greedy.cu`` for
compaction and the selector) are the unmodified sources compiled by the emulator: the real driver
code of ``gpucore.im.fused.cuda`` runs, level loop, pool and list growth included. Device facts are
given (``sms``, ``blocks_per_sm``, ``free_bytes``); expansion blocks are ``expand_threads`` wide;
``schedule`` (a seed) runs the fused kernels on a random interleaving of their threads (preemption
at atomics), to shake out races inside a block.
Blocks run one after another, so races between blocks are left to ``tests/gpu``. Slow: keep graphs,
``max_batches`` and grids small.
"""

from __future__ import annotations

from gpucore.kernels import emulator as _emu

MODULES = ("im/im_fused", "im/im_sample", "im/im_greedy")

available = _emu.available


def emulated_fused_engine(graph, model: str, rounds: int = 1, seed: int = 0, *, sms: int = 1, blocks_per_sm: int = 2,
                          free_bytes: int = 1 << 28, expand_threads: int = 64, schedule: int = 0, **options):
    """A ``FusedCUDAEngine`` on NumPy arrays whose kernels run in the emulator (module docstring)."""
    from gpucore.backend import get_backend
    from gpucore.im.fused.cuda import FusedCUDAEngine

    class EmulatedFusedCUDAEngine(FusedCUDAEngine):
        name = "cuda-fused-emulator"

        def _load(self, name, defines=()):
            lib = _emu.load_module(name, tuple(defines))
            return _Scheduled(lib, _emu.Schedule(schedule)) if schedule and name == "im/im_fused" else lib

        def _device_facts(self):
            return sms, blocks_per_sm

        def _free_memory(self):
            return free_bytes

    return EmulatedFusedCUDAEngine(graph, model, rounds, seed, get_backend("cpu"), expand_threads=expand_threads,
                                   **options)


class _Scheduled:
    """A compiled module whose kernels run on a given schedule."""

    def __init__(self, library, schedule):
        self.library, self.schedule = library, schedule

    def get_function(self, name):
        return self.library.kernel(name, schedule=self.schedule)
