"""``CudaPrimitives`` on NumPy arrays with the AMCSS CUDA kernels run by the CPU emulator.

For GPU-less tests of the kernels *and* of the driver code of ``gpucore.amcss.cuda``: the unmodified
``amcss_build.cu`` / ``amcss_select.cu`` are compiled by ``gpucore.kernels.emulator`` (threads of a
block as contexts, warp collectives, argument type checks) and called with CuPy's convention.
Blocks run one after another, so races between blocks are left to the GPU tests; with a
``schedule_seed`` the threads of a block interleave at random (preemption at atomics), which
exercises the warp protocols of one block (shared reservations, levels, overflow).
"""

from __future__ import annotations

from gpucore.amcss.cuda import CudaPrimitives
from gpucore.amcss.layout import MemoryBudget

MODULES = ("amcss/amcss_build", "amcss/amcss_select")


def emulated_primitives(graph, model: str, *, segments: int | None = None, beta: int | None = None,
                        bitmaps: int = 3, sms: int = 1, budget: int = 1 << 30, schedule_seed: int = 0,
                        preempt: float = 0.25) -> CudaPrimitives:
    """A ``CudaPrimitives`` whose arrays are NumPy arrays and whose kernels run in the emulator."""
    from gpucore.backend import get_backend
    from gpucore.kernels import emulator as emu

    library = emu.compile_modules(MODULES)
    schedule = emu.Schedule(seed=schedule_seed, preempt=preempt) if schedule_seed else None

    class _Module:
        def get_function(self, name):
            return library.kernel(name, schedule) if schedule is not None else library.get_function(name)

    module = _Module()

    class EmulatedCudaPrimitives(CudaPrimitives):
        name = "cpu"  # the driver asks the backend of this name for device facts: the host here

        def _load(self, name):
            return module

        def _device_facts(self):
            return sms, bitmaps

    return EmulatedCudaPrimitives(graph, model, MemoryBudget(budget, what=f"amcss on {graph.path}"),
                                  segments=segments, beta=beta, backend=get_backend("cpu"))
