"""``CUDAEngine`` on NumPy arrays with the DiFuseR CUDA kernels run by the CPU emulator.

For GPU-less tests of the kernels *and* of the driver code of ``gpucore.im.sketch.cuda`` and
``cuda_warp``: the unmodified ``sketch_build.cu`` / ``sketch_select.cu`` / ``sketch_warp.cu`` are compiled by ``gpucore.kernels.emulator``
(threads of a block as contexts, warp votes and ``__syncthreads_or`` as barriers, argument type
checks) and called with CuPy's convention. Blocks run one after another, so races between blocks
(benign by design here: registers only grow or become -1) are left to the GPU tests; with a
``schedule_seed`` the threads of a block interleave at random. ``slice_width`` below 1024 splits the
worlds into several launches, as more than 1024 worlds do on the GPU. Slow: small graphs only.
"""

from __future__ import annotations

from gpucore.im.sketch.cuda import CUDAEngine
from gpucore.im.sketch.cuda_warp import WarpEngine

MODULES = ("sketch/sketch_build", "sketch/sketch_select", "sketch/sketch_warp")


def emulated_engine(graph, keys, seed: int, *, mapping: str = "warp", slice_width: int = 1024, blocks: int = 4,
                    schedule_seed: int = 0, warp_block: int = 64, live_bits: bool = True) -> CUDAEngine:
    """A ``CUDAEngine`` (``mapping="block"``) or ``WarpEngine`` (``"warp"``) whose arrays are NumPy
    arrays and whose kernels run in the emulator."""
    from gpucore.backend import get_backend
    from gpucore.kernels import emulator as emu

    library = emu.compile_modules(MODULES)
    schedule = emu.Schedule(seed=schedule_seed) if schedule_seed else None

    class _Module:
        def get_function(self, name):
            return library.kernel(name, schedule) if schedule is not None else library.get_function(name)

    base = {"block": CUDAEngine, "warp": WarpEngine}[mapping]
    extra = {"warp_block": warp_block, "live_bits": live_bits} if mapping == "warp" else {}

    class EmulatedCUDAEngine(base):
        name = "cuda-emulator"

        def _load(self, name):
            return _Module()

    return EmulatedCUDAEngine(graph, keys, seed, get_backend("cpu"), slice_width=slice_width, blocks=blocks, **extra)
