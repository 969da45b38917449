"""Run the IM CUDA kernels (``kernels/im/*.cu``) on the CPU, for GPU-less tests of kernels and driver.

The unmodified ``.cu`` sources run in the generic emulator ``gpucore.kernels.emulator`` (its module
docstring describes the execution model: blocks one after another, the threads of a block as
user-level contexts, warp primitives and ``__syncthreads`` as barriers at which a thread yields,
so warp-synchronous code runs as on a GPU; static shared memory; argument type checks).

``emulated_engine(graph, model, rounds, seed)`` is an ``Engine`` (``gpucore.im.engine``) of a
``CUDASampler`` and a ``CUDASelector`` whose arrays are NumPy arrays and whose kernels are these;
it exercises the driver code of ``gpucore.im.cuda`` too. The shared-memory queue of ``im_sample``
has ``queue_size`` entries (``IM_QS``). It cannot find races between blocks (the GPU tests do
that). Slow: keep graphs and grids small.
"""

from __future__ import annotations

from gpucore.kernels import emulator as _emu

MODULES = ("im/im_sample", "im/im_greedy")

available = _emu.available
kernel_names = _emu.kernel_names


def emulated_class(cls, sms: int, blocks_per_sm: int, free_bytes: int, queue_size: str | None = None):
    """``cls`` (a CUDA sampler or selector of IM) with the emulator's kernels and the given device facts;
    ``queue_size`` replaces ``im_sample``'s ``IM_QS`` (None: keep it)."""

    class Emulated(cls):
        name = cls.name + "-emulated"

        def _load(self, name, defines=()):
            if queue_size is not None:
                defines = tuple((k, queue_size if k == "IM_QS" else v) for k, v in defines)
            return _emu.load_module(name, tuple(defines))

        def _device_facts(self):
            return sms, blocks_per_sm

        def _free_memory(self):
            return free_bytes

    return Emulated


def emulated_engine(graph, model: str, rounds: int = 1, seed: int = 0, *, sms: int = 1, blocks_per_sm: int = 3,
                    free_bytes: int = 1 << 28, queue_size: int | None = None, backend=None, **kw):
    """An ``Engine`` of the CUDA sampler and selector on NumPy arrays, kernels in the emulator (``backend``:
    the cpu backend, or a test's stand-in for it; None: ``get_backend("cpu")``)."""
    from gpucore.backend import get_backend
    from gpucore.im import cuda as cuda_mod
    from gpucore.im.engine import Engine

    be = get_backend("cpu") if backend is None else backend
    facts = (sms, blocks_per_sm, free_bytes, str(int(queue_size or cuda_mod.QUEUE_SIZE)))
    sampler = emulated_class(cuda_mod.CUDASampler, *facts)(graph, model, rounds, seed, be, **kw)
    selector = emulated_class(cuda_mod.CUDASelector, *facts)(graph.n, rounds, be)
    return Engine(sampler, selector)
