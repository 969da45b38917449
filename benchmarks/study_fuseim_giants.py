"""Study (issue 14): where a small minority of the traversals is giant, what does each part of a call cost?

On the GPU only, from the repository root: ``PYTHONPATH=. python3 benchmarks/study_fuseim_giants.py
[--cells BS:0.05,Go:0.1] [--sets 200000] [--large 64] [--reps 3] [--evict-after 3]``. On PA stand-ins of the web-BerkStan and
web-Google sizes at a constant p where 1.6-2.1 % of the traversals reach a giant component (mean set 240-570
elements, median 1), a call of the unfused (gim) sampler is timed whole; its set sizes split the call's
traversals into short ones and long ones (at least ``--large`` elements). Then each part is timed alone, with
the fused sampler's own passes over an explicit dispatch order (its kernels take any list of traversal ids):
the short traversals (resident and level mappings), the long ones (level mapping, each width) and the long
ones again with gim's list mode. Every pass's set sizes are checked against the unfused ones. The question is
whether setting the long traversals aside, to run them apart from the short ones, can make the fused sampler
faster than the unfused one in such calls, and how it should run them: the team pass (a block per traversal,
``fz_team_ic``) times the long ones alone, and the whole fused call is timed with and without eviction (the
batches hand their long-running traversals to the team pass). Prints one line a measurement.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_common import GRAPH_CACHE, build_graph
from benchmarks.bench_fuseim import GRAPHS, with_probability
from gpucore.backend import get_backend
from gpucore.graph import load_graph
from gpucore.im.engine import make_sampler


def clock(be, fn, reps):
    """Median seconds of ``reps`` calls of fn() after one warm-up call; returns (seconds, last result)."""
    out, runs = fn(), []
    for _ in range(reps):
        be.synchronize()
        t = time.perf_counter()
        out = fn()
        be.synchronize()
        runs.append(time.perf_counter() - t)
    return float(np.median(runs)), out


def fused_pass(eng, count, ids, elements, resident):
    """The fused sampler's traversal of traversals ``ids`` (device int64, i = j with j0 = 0, T = 1) of a piece
    of ``count`` sets, into a pool of ``elements`` x 1.3; returns the set sizes of the piece (-1: not run)."""
    be = eng.backend
    total = int(ids.shape[0])
    used = int(min(eng.batches, -(-total // eng.options.batch_width)))
    trav_start = be.empty((count,), np.int64, what="starts")
    trav_size = be.empty((count,), np.int32, what="sizes")
    trav_size.fill(-1)
    eng.pool = be.empty((int(elements * 1.3) + 4096 * used,), np.int32, what="pool")
    eng.ctl.fill(0)
    eng.counters.fill(0)
    eng._clean = False
    run = eng._traverse_resident if resident else eng._traverse_levels
    run(used, 0, total, 1, ids, trav_start, trav_size)
    eng._clean = True
    return trav_size


def team_pass(eng, count, ids, elements):
    """The fused sampler's team pass (a block per traversal, ``fz_team_ic``) over traversals ``ids`` (device
    int64) of a piece of ``count`` sets; returns the set sizes of the piece (-1: not run)."""
    be = eng.backend
    trav_start = be.empty((count,), np.int64, what="starts")
    trav_size = be.empty((count,), np.int32, what="sizes")
    trav_size.fill(-1)
    eng.pool = be.empty((int(elements * 1.3) + 4096,), np.int32, what="pool")
    eng.ctl.fill(0)
    eng.counters.fill(0)
    eng._team(ids, 0, trav_start, trav_size)
    return trav_size


def gim_pass(gim, count, ids, elements):
    """gim's list mode over sets ``ids`` (device int64) of a call of ``count`` sets; returns the set sizes."""
    be = gim.backend
    total = int(ids.shape[0])
    starts = be.empty((count,), np.int64, what="starts")
    sizes = be.empty((count,), np.int32, what="sizes")
    sizes.fill(-1)
    deferred = be.empty((total,), np.int64, what="deferred")
    pool = be.empty((int(elements * 1.3) + gim.pool_slack,), np.int32, what="pool")
    c = gim._launch_sample(gim.warps, 0, total, 1, ids, gim.stages, gim.stage_cap, gim.reservoirs, gim.res_cap, pool,
                           starts, sizes, deferred)
    if c[4]:
        raise RuntimeError("pool overflow")
    if c[2]:
        gim._tier2(0, int(c[2]), deferred, pool, int(c[1]), starts, sizes)
    return sizes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="BS:0.05,Go:0.1")
    ap.add_argument("--sets", type=int, default=200_000)
    ap.add_argument("--large", type=int, default=64)
    ap.add_argument("--widths", default="32,64,128,256")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--evict-after", default="3", help="levels before eviction, a list (FusedCUDASampler)")
    args = ap.parse_args()
    be = get_backend("cuda")
    for cell in args.cells.split(","):
        name, prob = cell.split(":")
        spec = GRAPHS[name]
        g = with_probability(load_graph(build_graph(spec["cache"], spec, None, Path(GRAPH_CACHE))), prob)
        count = args.sets
        gim = make_sampler(g, "IC", 1, 0, be, "gim")

        def whole(eng, mean):
            coll = eng.collection(0)
            eng.sample_into(coll, count, mean)
            coll.release()

        coll = gim.collection(0)
        gim.sample_into(coll, count, 0.0)
        sizes = np.diff(be.to_host(coll.offsets))
        coll.release()
        secs, _ = clock(be, lambda: whole(gim, sizes.mean()), args.reps)
        large = sizes >= args.large
        short_ids = be.asarray(np.flatnonzero(~large).astype(np.int64), what="ids")
        long_ids = be.asarray(np.flatnonzero(large).astype(np.int64), what="ids")
        e_short, e_long = int(sizes[~large].sum()), int(sizes[large].sum())
        print(f"{name} p={prob} {count} sets: gim whole call {secs * 1e3:.1f} ms; mean {sizes.mean():.1f}, "
              f"median {np.median(sizes):.0f}; long (>= {args.large}): {int(large.sum())} traversals "
              f"({large.mean():.2%}), {e_long / max(1, e_short + e_long):.2%} of the elements, "
              f"mean {sizes[large].mean() if large.any() else 0:.0f}", flush=True)
        part, got = clock(be, lambda: gim_pass(gim, count, long_ids, e_long), args.reps)
        ok = np.array_equal(be.to_host(got)[large], sizes[large])
        print(f"  gim list mode, long only: {part * 1e3:.1f} ms (identical {ok})", flush=True)
        part, got = clock(be, lambda: gim_pass(gim, count, short_ids, e_short), args.reps)
        ok = np.array_equal(be.to_host(got)[~large], sizes[~large])
        print(f"  gim list mode, short only: {part * 1e3:.1f} ms (identical {ok})", flush=True)
        ids = np.flatnonzero(large)
        by_size = ids[np.argsort(-sizes[ids], kind="stable")]
        print(f"  long sizes: max {sizes[ids].max()}, p99 {np.percentile(sizes[ids], 99):.0f}, "
              f"median {np.median(sizes[ids]):.0f}", flush=True)
        top = max(1, len(ids) // 100)
        for label, sel in (("long, largest first", by_size), ("long, largest 1 % left out", by_size[top:]),
                           ("long, largest 1 % only", by_size[:top]), ("long, half of them", ids[::2])):
            dev = be.asarray(sel.astype(np.int64), what="ids")
            part, _ = clock(be, lambda: gim_pass(gim, count, dev, int(sizes[sel].sum())), args.reps)
            print(f"  gim list mode, {label} ({len(sel)} sets, {int(sizes[sel].sum()):,} elements): "
                  f"{part * 1e3:.1f} ms", flush=True)
        del gim
        top_sel = np.zeros(count, dtype=bool)
        top_sel[by_size[:top]] = True
        top_ids = be.asarray(by_size[:top].astype(np.int64), what="ids")
        e_top = int(sizes[top_sel].sum())
        for width in (int(w) for w in args.widths.split(",")):
            eng = make_sampler(g, "IC", 1, 0, be, "fused", batch_width=width, evict="never")
            secs_f, _ = clock(be, lambda: whole(eng, sizes.mean()), 1)
            del eng
            line = [f"  B={width}: fused whole call {secs_f * 1e3:.1f} ms without eviction"]
            for after in (int(a) for a in args.evict_after.split(",")):
                eng = make_sampler(g, "IC", 1, 0, be, "fused", batch_width=width, evict_after=after)  # evict="auto"
                secs_e, _ = clock(be, lambda: whole(eng, sizes.mean()), args.reps)
                eng.reset_stats()
                whole(eng, sizes.mean())
                st = eng.stats()
                line.append(f"evicting after {after} levels {secs_e * 1e3:.1f} ms ({st['evicted']} evicted, "
                            f"{secs / secs_e:.2f}x gim)")
            part, got = clock(be, lambda: team_pass(eng, count, long_ids, e_long), args.reps)
            ok = np.array_equal(be.to_host(got)[large], sizes[large])
            line.append(f"long team pass {part * 1e3:.1f} ms{'' if ok else ' (DIFFERENT)'}")
            for label, ids, e, sel, resident in (("short resident", short_ids, e_short, ~large, True),
                                                 ("short level", short_ids, e_short, ~large, False),
                                                 ("long level", long_ids, e_long, large, False),
                                                 ("largest 1 % level", top_ids, e_top, top_sel, False)):
                part, got = clock(be, lambda: fused_pass(eng, count, ids, e, resident), args.reps)
                ok = np.array_equal(be.to_host(got)[sel], sizes[sel])
                line.append(f"{label} {part * 1e3:.1f} ms{'' if ok else ' (DIFFERENT)'}")
            print("; ".join(line), flush=True)
            del eng


if __name__ == "__main__":
    main()
