"""Fused RR-set sampling (FuseIM, Neff et al., ICS '24): B traversals share one frontier of bit masks.

Entry point for the sampler registry::

    from gpucore.im.fused import make_fused
    engine = make_fused(graph, "IC", rounds, seed, backend, batch_width=64, order="none",
                        sorted_sources=True, tail="refill")

The engine has the interface of ``gpucore.im.cpu.CPUEngine`` / ``gpucore.im.cuda.CUDAEngine``
(``collection``, ``sample_into``, ``greedy``, ``synchronize``) and ``stats()`` (instrumentation for
the result JSON). Its sets equal the unfused sampler's set for set (same keys); see ``docs/fuseim.md``.
Modules: ``batching`` (options, roots, dispatch order), ``layout`` (the reordered in-CSR),
``cpu`` (Numba), ``cuda`` (CuPy + ``kernels/im/im_fused.cu``), ``emulated`` (the kernels on the CPU),
``stats`` (counters).
"""

from gpucore.im.fused.batching import TAILS, WIDTHS, FusedOptions


def make_fused(graph, model: str, rounds: int, seed: int, backend, **options):
    """The fused engine of ``backend`` (``options``: batch_width, order, sorted_sources, tail, and
    backend knobs: ``workers``/``memory_limit`` on the CPU, ``max_batches``/``levels_per_sync`` on CUDA)."""
    if backend.is_cuda:
        from gpucore.im.fused.cuda import FusedCUDAEngine

        return FusedCUDAEngine(graph, model, rounds, seed, backend, **options)
    from gpucore.im.fused.cpu import FusedCPUEngine

    return FusedCPUEngine(graph, model, rounds, seed, backend, **options)


__all__ = ["TAILS", "WIDTHS", "FusedOptions", "make_fused"]
