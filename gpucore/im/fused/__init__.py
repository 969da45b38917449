"""Fused RR-set sampling (FuseIM, Neff et al., ICS '24): B traversals share one frontier of bit masks.

The ``fused`` sampler of the IM engine contract (``gpucore.im.engine.SAMPLERS``; ``gpucore im
--sampler fused``)::

    from gpucore.im.engine import make_sampler
    sampler = make_sampler(graph, "IC", rounds, seed, backend, "fused", batch_width=64, order="none",
                           sorted_sources=True, tail="refill")

It has the sampler interface (``collection``, ``sample_into``, ``synchronize``) plus ``stats()`` and
``reset_stats()`` (instrumentation, the result JSON's ``sampler_stats``); the engine pairs it with the
backend's own greedy selector. Its sets equal the ``gim`` sampler's set for set (same keys); see
``docs/fuseim.md``. Modules: ``batching`` (options, roots, dispatch order), ``layout`` (the reordered
in-CSR), ``cpu`` (Numba), ``cuda`` (CuPy + ``kernels/im/im_fused.cu``), ``emulated`` (the kernels on the
CPU), ``stats`` (counters).
"""

from gpucore.im.fused.batching import TAILS, WIDTHS, FusedOptions


def fused_sampler(graph, model: str, rounds: int, seed: int, backend, **options):
    """The fused sampler of ``backend`` (``options``: batch_width, order, sorted_sources, tail, and backend
    knobs: ``workers``/``memory_limit`` on the CPU, ``max_batches``/``levels_per_sync``/``mask_fraction``/
    ``expand_threads`` on CUDA)."""
    if backend.is_cuda:
        from gpucore.im.fused.cuda import FusedCUDASampler

        return FusedCUDASampler(graph, model, rounds, seed, backend, **options)
    from gpucore.im.fused.cpu import FusedCPUSampler

    return FusedCPUSampler(graph, model, rounds, seed, backend, **options)


__all__ = ["TAILS", "WIDTHS", "FusedOptions", "fused_sampler"]
