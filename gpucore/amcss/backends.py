"""The factory of AMCSS backends: which ``Primitives`` implementation a backend name means, built.

The contract (``gpucore.amcss.primitives.Primitives``) imports no implementation; the
implementations (``cpu.CpuPrimitives``, ``cuda.CudaPrimitives``) import the contract; this module
imports the implementations (lazily: the CUDA one needs CuPy) and the driver imports this module.
So the imports run one way: driver -> backends -> {cpu, cuda} -> primitives.
"""

from __future__ import annotations

from gpucore.amcss.layout import MemoryBudget
from gpucore.amcss.primitives import Primitives
from gpucore.backend import available_ram, get_backend
from gpucore.errors import GpucoreError
from gpucore.graph.model import Graph

#: share of the free device memory (cuda) or available RAM (cpu) used as the default memory budget
DEFAULT_BUDGET_SHARE = 0.8


def load_primitives(backend_name: str) -> type[Primitives]:
    """The Primitives class of a backend (imported lazily: the CUDA one needs CuPy)."""
    if backend_name == "cpu":
        from gpucore.amcss.cpu import CpuPrimitives

        return CpuPrimitives
    if backend_name == "cuda":
        try:
            from gpucore.amcss.cuda import CudaPrimitives
        except ImportError as exc:
            raise GpucoreError(
                f"the AMCSS CUDA backend is not available in this build ({exc}); use --backend cpu"
            ) from None
        return CudaPrimitives
    raise GpucoreError(f"unknown backend {backend_name!r} for amcss")


def make_primitives(graph: Graph, model: str, backend: str = "cpu", threads: int | None = None,
                    memory_budget: int | None = None, segments: int | None = None,
                    beta: int | None = None) -> Primitives:
    """The backend's primitives for (graph, model) under a memory budget (bytes; default from RAM).
    ``beta``: the CUDA backend's Update load-balancing groups (default: per round from the roots per
    set, ``cuda.auto_beta``); the CPU ignores it."""
    be = get_backend(backend)
    if backend == "auto" and be.is_cuda:
        try:
            load_primitives("cuda")
        except GpucoreError:  # no CUDA primitives in this build yet: auto means "best available"
            be = get_backend("cpu")
    if memory_budget is None:
        memory_budget = int(be.free_memory() * DEFAULT_BUDGET_SHARE) if be.is_cuda else int(
            available_ram() * DEFAULT_BUDGET_SHARE)
    if memory_budget <= 0:
        raise GpucoreError(f"--memory-budget {memory_budget}: must be positive")
    budget = MemoryBudget(memory_budget, what=f"amcss on {graph.path}")
    cls = load_primitives(be.name)
    extra = {"beta": beta} if be.name == "cuda" else {}
    return cls(graph, model, budget=budget, threads=threads, segments=segments, **extra)
