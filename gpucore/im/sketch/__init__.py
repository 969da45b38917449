"""DiFuseR: greedy Monte-Carlo influence maximization over fused, hash-sampled worlds with sketches.

Paper: Göktürk & Kaya, "DiFuseR: a distributed sketch-based influence maximization algorithm for
GPUs" (arXiv 2410.14047; ``docs/references.md``); user docs:
``docs/difuser.md``.

Use::

    from gpucore.im.sketch import difuser
    result = difuser(graph, k=50, registers=1024, rebuild_threshold=0.01, sampling="xor", seed=0,
                     backend="auto")            # dict of kind "im", see docs/difuser.md

Structure (the amcss model: math / layout / backend contract / driver / twin backends)
-------------------------------------------------------------------------------------
- ``hashing``  Murmur3 edge hashes, per-world keys (X_r with FASST sorting, keyed coins), register
               hashes: pure functions of (run seed, global index).
- ``arcs``     fixed-point thresholds W_e = floor(p 2^31), arc hashes, merging parallel arcs.
- ``layout``   the int8 register matrix (vertex-major, -1 = visited), the selection-score tables,
               memory needed.
- ``split``    which worlds each rank holds: the naive split or FASST, shares of 32 worlds.
- ``local``    a process's local graph: the arcs live in at least one of its worlds.
- ``refine``   the refinement's candidates and lazy exact gains (our addition).
- ``driver``   Algorithm 4 (greedy loop, rebuild rule, reductions over ranks), result dict.
- ``cpu``      the CPU engine (Numba): the reference.
- ``cuda``     the CUDA engine (CuPy + ``gpucore/kernels/sketch/*.cu``), ``emulated`` the same kernels
               run by the CPU emulator.

The engine contract (both backends), called by the driver
--------------------------------------------------------
``fill()`` (Algorithm 1), ``simulate() -> sweeps`` (Algorithm 2 until no register changes),
``cascade(seed) -> newly visited`` (Algorithm 3 until the queue is empty), ``visited_count()`` (the
-1 registers), ``scores(table) -> int64 [n]`` (sum over the worlds of the estimator's terms,
``layout.score_table``),
``argmax(scores, chosen) -> vertex`` (ties to the lowest id), ``host_registers()`` (tests),
``synchronize()``. Registers after every call are the same on both backends (fixpoints and closures
do not depend on the order of work), and so are the scores and seeds.
"""

from gpucore.im.sketch.driver import difuser

__all__ = ["difuser"]
