"""``CudaEngine`` on NumPy arrays with the sds CUDA kernels run by the CPU emulator.

For GPU-less tests of the kernels *and* of the driver code of ``gpucore.sds.cuda``: the unmodified
``sds_graph.cu`` / ``sds_build.cu`` / ``sds_score.cu`` / ``sds_flat.cu`` are compiled by ``gpucore.kernels.emulator``
and called with CuPy's convention. Blocks run one after another, so races between blocks are left
to ``tests/gpu/test_sds_cuda.py``; with a ``schedule_seed`` the threads of a block interleave at
random (preemption at atomics), which exercises the block-level protocols (concurrent union-find,
in-place H-index rounds, the PKT sub-rounds' shared queues and clamped support losses).
"""

from __future__ import annotations

from gpucore.sds.cuda import GIANT_EDGES, CudaEngine

MODULES = ("sds/sds_graph", "sds/sds_build", "sds/sds_score", "sds/sds_flat")


def emulated_engine(sg, budget: int = 1 << 30, *, sms: int = 1, score_threads: int = 64, schedule_seed: int = 0,
                    preempt: float = 0.25, giant_edges: int = GIANT_EDGES) -> CudaEngine:
    """A ``CudaEngine`` whose arrays are NumPy arrays and whose kernels run in the emulator;
    ego-networks of at least ``giant_edges`` edges take the whole-device path (``sds_flat.cu``)."""
    from gpucore.backend import get_backend
    from gpucore.kernels import emulator as emu

    library = emu.compile_modules(MODULES)
    schedule = emu.Schedule(seed=schedule_seed, preempt=preempt) if schedule_seed else None

    class _Module:
        def get_function(self, name):
            return library.kernel(name, schedule) if schedule is not None else library.get_function(name)

    class EmulatedCudaEngine(CudaEngine):
        name = "cpu"  # device facts come from the host backend

        def _load(self, name):
            return _Module()

        def _device_facts(self):
            return sms

    return EmulatedCudaEngine(sg, get_backend("cpu"), budget, score_threads=score_threads, giant_edges=giant_edges)
