"""Study (issue 14): does the fused sampler's resident mapping gain from more batches in flight?

On the GPU only, from the repository root: ``PYTHONPATH=. python3 benchmarks/study_fuseim_batches.py``. For PA stand-ins of the
web-Google and web-BerkStan sizes at weighted cascade (``tests.im_graphs.pa_graph``), times one
``sample_into`` of 200,000 sets (best of two after a warm-up call; collection growth and compaction
included on both sides) with the unfused gim sampler, then with the fused sampler in the resident mapping
at widths 32, 64 and 128 and several batch counts (None: the sampler's own; a count above what memory
allows is capped), and checks every fused collection equal to the unfused one. Prints one line a run;
the H100 figures are in ``results/reference/fuseim/resident-lists-h100.md``.
"""

from __future__ import annotations

import time

import numpy as np

from gpucore.backend import get_backend
from gpucore.im.engine import make_sampler
from gpucore.im.sampling import canonical
from tests.im_graphs import pa_graph

GRAPHS = (("Go", 875_713, 5_105_039), ("BS", 685_230, 7_600_595))
#: (batch width, batches in flight; None: the sampler's own count)
RUNS = ((64, None), (64, 528), (64, 1056), (32, None), (32, 1056), (128, 264))
SETS = 200_000


def timed(be, eng, reps: int = 3, count: int = SETS):
    """Best time (ms) of ``reps`` calls of ``count`` sets after the first, and the last call's sets in canonical
    form (the fused sampler's stats are reset before each call, so they are the last call's)."""
    out = []
    for _ in range(reps):
        if hasattr(eng, "reset_stats"):
            eng.reset_stats()
        be.synchronize()
        t = time.perf_counter()
        coll = eng.collection(0)
        eng.sample_into(coll, count, 0.0)
        be.synchronize()
        out.append(1000 * (time.perf_counter() - t))
        sets = canonical(*coll.host_sets())
        coll.release()
    return min(out[1:]), sets


def main() -> None:
    be = get_backend("cuda")
    for name, n, m in GRAPHS:
        g = pa_graph(n, m, seed=1)
        base, ref = timed(be, make_sampler(g, "IC", 1, 0, be, "gim"))
        print(f"{name} unfused (gim): {base:.2f} ms, mean size {np.diff(ref[0]).mean():.1f}", flush=True)
        for width, batches in RUNS:
            eng = make_sampler(g, "IC", 1, 0, be, "fused", batch_width=width, mapping="resident", max_batches=batches)
            ms, sets = timed(be, eng)
            s = eng.stats()
            same = all(np.array_equal(a, b) for a, b in zip(ref, sets))
            print(f"{name} fused B={width} G={eng.batches}: {ms:.2f} ms ({base / ms:.2f}x) levels {s['levels']} "
                  f"ring_levels {s['ring_levels']} extractions {s['extractions']} identical {same}", flush=True)


if __name__ == "__main__":
    main()
