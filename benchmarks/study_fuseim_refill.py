"""Study (issue 14): the tail threshold of the fused sampler's resident mapping at tiny sets.

On the GPU only, from the repository root: ``PYTHONPATH=. python3 benchmarks/study_fuseim_refill.py
[--graphs Go,BS] [--divisors 1,2,4,8,16,32] [--sets 200000] [--reps 4]``. With ``tail="refill"`` a batch reloads its ended
slots once ``B / d`` of its B traversals have ended (``FusedOptions.refill_threshold``; d = 4 is the default).
A lower threshold keeps slots busy (fewer levels) but extracts more often. For PA stand-ins of the web-Google
and web-BerkStan sizes at weighted cascade (``tests.im_graphs.pa_graph``) this times one ``sample_into`` of each
number of sets (the best of the calls after a warm-up; collection growth and compaction included on both
sides) with the unfused gim sampler, then with the fused sampler in the resident mapping at widths 32 and 64
for each d, and checks every fused collection equal to the unfused one. Prints one line a run; the
H100 figures are in ``results/reference/fuseim/resident-groups-h100.md``.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.study_fuseim_batches import timed
from gpucore.backend import get_backend
from gpucore.im.engine import make_sampler
from gpucore.im.fused import batching
from tests.im_graphs import pa_graph

GRAPHS = {"Go": (875_713, 5_105_039), "BS": (685_230, 7_600_595)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default="Go,BS")
    ap.add_argument("--divisors", default="1,2,4,8,16,32")
    ap.add_argument("--sets", default="200000", help="comma-separated set counts of a call")
    ap.add_argument("--reps", type=int, default=4, help="calls per run (the first is a warm-up)")
    args = ap.parse_args()
    be = get_backend("cuda")
    default = batching.FusedOptions.resident_refill_threshold
    for name in args.graphs.split(","):
        g = pa_graph(*GRAPHS[name], seed=1)
        for count in (int(c) for c in args.sets.split(",")):
            base, ref = timed(be, make_sampler(g, "IC", 1, 0, be, "gim"), args.reps, count)
            print(f"{name} {count} sets unfused (gim): {base:.2f} ms, mean size {np.diff(ref[0]).mean():.1f}",
                  flush=True)
            for width in (32, 64):
                for d in (int(v) for v in args.divisors.split(",")):
                    batching.FusedOptions.resident_refill_threshold = property(
                        lambda self, d=d: max(1, self.batch_width // d))
                    try:
                        eng = make_sampler(g, "IC", 1, 0, be, "fused", batch_width=width, mapping="resident")
                        ms, sets = timed(be, eng, args.reps, count)
                        s = eng.stats()
                    finally:
                        batching.FusedOptions.resident_refill_threshold = default
                    same = all(np.array_equal(a, b) for a, b in zip(ref, sets))
                    print(f"{name} {count} sets B={width} threshold B/{d} = {max(1, width // d)}: {ms:.2f} ms "
                          f"({base / ms:.2f}x) levels {s['levels']} extractions {s['extractions']} identical {same}",
                          flush=True)


if __name__ == "__main__":
    main()
