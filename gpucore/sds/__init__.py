"""Structural diversity search: the top-t vertices by number of social contexts in their ego-network.

Paper: J. Huang, X. Huang, J. Xu, B. Choi, Y. Peng, "GPU-accelerated Structural Diversity Search in
Graphs" (``docs/references.md``); user docs: ``docs/sds.md``.

Use::

    from gpucore.sds import run_sds
    result = run_sds(graph, model="truss", k=4, t=100, backend="auto")   # JSON-ready dict, kind "sds"

Structure (the layout of ``gpucore.amcss``: math / data layout / backend contract / driver / backends)
------------------------------------------------------------------------------------------------------
- ``simple``      the simple undirected CSR (a directed graph symmetrised), sorted rows.
- ``bounds``      the models, the member thresholds and context sizes, the upper bounds.
- ``ranking``     the tie rule, ``top_t`` / ``merge_top`` (pure functions of (vertex, score) pairs),
                  the candidate order and the stopping test.
- ``layout``      the batch arena (ego CSRs side by side), its bytes, packing, context decoding.
- ``primitives``  ``Engine``: the contract a backend implements (supports, ego sizes, bounds, build,
                  score, labels; ``score(vertices, ...)`` scores any list of vertices).
- ``driver``      Algorithm 1: bounds, batches until the t-th score beats the next bound, contexts;
                  over several ranks (``comm``), the supports split and the ranks' pairs merged.
- ``cost``        the multi-GPU cost model: keyed sample by degree stratum, timed, least-squares fit.
- ``distributed`` the search over ranks: cost model, packing in bound order, chunks claimed from
                  rank 0's work-stealing table (``gpucore.dist.WorkTable`` / ``Service``).
- ``cpu`` / ``kernels_cpu``  NumPy + Numba; ``cuda`` (kernels ``gpucore/kernels/sds``); ``emulated``.

Over several GPUs (``mpiexec -n N``, ``docs/multigpu.md``) every rank calls ``run_sds`` with the
same arguments and gets the one-rank answer, whatever the rank count and the stealing policy.
"""

from gpucore.sds.driver import make_engine, run_sds, validate
from gpucore.sds.ranking import merge_top, top_t
from gpucore.sds.simple import SimpleGraph, simple_graph

__all__ = ["SimpleGraph", "make_engine", "merge_top", "run_sds", "simple_graph", "top_t", "validate"]
