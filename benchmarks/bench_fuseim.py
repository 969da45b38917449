#!/usr/bin/env python3
"""Benchmark of issue 14, item 6: fused vs unfused RR-set sampling on the GPU (FuseIM's Fig. 7 and Table 2).

    python3 benchmarks/bench_fuseim.py OUT [--graphs BS,Go,PR,TC,LJ] [--parts sweep,heuristics]
        [--probs 0.05,0.1,0.2,0.3,0.4,0.5,1.0,wc] [--widths 32,64,128,256] [--mappings auto] [--evicts auto]
        [--sets 20000]
        [--max-elements 1e8] [--min-sets 512] [--budget 540] [--cache /tmp/gpucore-bench-graphs]

Graphs: preferential-attachment stand-ins (``gpucore generate pa``, seed 1, reciprocity 0.3) with the
n and m of FuseIM's Table 1 (Neff et al., ICS '24): web-BerkStan (BS), web-Google (Go),
soc-pokec-relationships (PR), wiki-topcats (TC), soc-LiveJournal1 (LJ); com-Orkut is left out (its
117M arcs do not leave room for the RR sets of high p cells on one 80 GiB GPU). Edge probabilities:
a constant p on every arc, or weighted cascade ("wc", p = 1 / indegree). IC.

A cell (graph, p) samples the same RR sets j = 0 .. S-1 (run seed --seed) with the unfused gIM-style
sampler and with the fused one at every width (default options: no reordering, sorted sources, tail
refill), in each CUDA mapping of --mappings (``auto``, the sampler's own pick, by default; ``level,resident``
times both), with each eviction setting of --evicts (``auto``, the sampler's default; ``never``; a number: that
``evict_after``). S = --sets, lowered for cells with large sets so that one collection stays below
--max-elements elements (p = 1 makes every set the whole reachable part of the graph; the paper's
Fig. 7 has no point there for the same reason), and at least --min-sets (512). Each sampler is warmed
up (kernel compilation, a pilot of 256 sets that also gives the mean set size) and then timed on the S sets
(``sample_into`` + device synchronisation; sampler construction, i.e. mask allocation, is timed apart as
``setup_seconds``): --reps calls, or fewer where they would take more than --reps-seconds, and the median
is the cell's time (all of them are in the JSON as ``seconds_runs``; calls of a few milliseconds moved by
10-40 % from one call to the next on the H100). The two collections are compared by their offsets and a per-set
order-free fingerprint (``identical``); a mismatch is reported, never hidden.

Parts: ``sweep`` (every graph x p x width: speedup figure ``fig_speedup.png`` = Fig. 7; the width
with the least time is the auto pick, ``fig_occupancy.png`` and the Table 2 rows = occupancy and
frontier memory on the BS-size graph at width 32); ``heuristics`` (on the TC-size graph, or the last
of --graphs, at p in --heuristic-probs and width 64: sorted vs unsorted sources, tail refill vs
none, vertex order none / rcm / community: time, occupancy, edge reads, reorder seconds).

--unfused-once, for cells whose unfused calls are latency-bound (the LJ-size graph at p >= 0.2: one set of
4 million elements on one warp takes 85-105 s, whatever the number of sets in the call, so a pilot costs as much
as the run): the unfused sampler is warmed up on the graph's weighted-cascade probabilities (the same kernels,
tiny sets) and timed once on --min-sets sets, which also give the mean size.

--budget: a cell is started only if its unfused run, projected from the unfused pilot (under --unfused-once:
the previous cell's unfused time), fits in what is
left, and each fused run only if twice its own pilot's rate fits; the rest are skipped and marked so,
never cut. Writes OUT/bench_fuseim.json, OUT/bench_fuseim.md and the figures, with device, date and
commit (GPUCORE_COMMIT where there is no .git).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import GRAPH_CACHE, build_graph, cpu_facts, git_commit  # noqa: E402

# FuseIM Table 1 sizes; PR and LJ share their cache names with bench_im's PA graphs of the same size
GRAPHS = {
    "BS": {"cache": "fuseim-berkstan", "title": "web-BerkStan size", "nodes": 685_230, "edges": 7_600_595},
    "Go": {"cache": "fuseim-google", "title": "web-Google size", "nodes": 875_713, "edges": 5_105_039},
    "PR": {"cache": "pokec", "title": "soc-pokec size", "nodes": 1_632_803, "edges": 30_622_564},
    "TC": {"cache": "fuseim-topcats", "title": "wiki-topcats size", "nodes": 1_791_489, "edges": 28_511_807},
    "LJ": {"cache": "livejournal", "title": "soc-LiveJournal1 size", "nodes": 4_847_571, "edges": 68_993_773},
}
PILOT = 256  # default sets of a pilot
REORDER_SECONDS_PER_ARC = 3e-6  # sequential RCM / Louvain, for the budget projection


def log(msg: str) -> None:
    print(f"[bench_fuseim {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def with_probability(graph, prob: str):
    """The graph with every arc at probability p ('wc': the weighted-cascade weights it was built with)."""
    if prob == "wc":
        return graph
    p = np.full(graph.m, float(prob), dtype=np.float32)
    return dataclasses.replace(graph, in_prob=p, out_prob=p, meta={**graph.meta, "weights": f"const:{prob}"},
                               _device_cache={})


def fingerprint(coll):
    """(offsets, per-set sum of a hash of the elements mod 2^64) on the host: equal iff the sets are equal
    up to hash collisions; independent of the order of elements inside a set."""
    xp = coll.xp
    offsets = coll.offsets
    h = (coll.nodes.astype(xp.uint64) + xp.uint64(1)) * xp.uint64(0x9E3779B97F4A7C15)
    h ^= h >> xp.uint64(29)
    cs = xp.concatenate([xp.zeros(1, dtype=xp.uint64), xp.cumsum(h, dtype=xp.uint64)])
    del h
    sums = cs[offsets[1:]] - cs[offsets[:-1]]
    return coll.backend.to_host(offsets), coll.backend.to_host(sums)


def timed_sample(sampler, count: int, mean: float, j0: int = 0):
    """Sample sets j0 .. j0 + count - 1 once; returns (seconds, collection)."""
    coll = sampler.collection(j0)
    coll.reserve(count, int(count * max(mean, 1.0) * 1.05) + 1024)
    sampler.synchronize()
    t = time.perf_counter()
    sampler.sample_into(coll, count, mean)
    sampler.synchronize()
    return time.perf_counter() - t, coll


def timed_runs(sampler, count: int, mean: float, reps: int, cap: float):
    """Sample the same sets up to ``reps`` times, stopping once the calls have taken ``cap`` seconds (at least
    one call); the fused sampler's stats count the last call only. Returns (median seconds, all seconds, the
    last call's collection)."""
    runs = []
    while True:
        if hasattr(sampler, "reset_stats"):
            sampler.reset_stats()
        secs, coll = timed_sample(sampler, count, mean)
        runs.append(secs)
        if len(runs) >= reps or sum(runs) >= cap:
            return float(np.median(runs)), runs, coll
        coll.release()


def run_cell(graph, prob: str, widths, args, be, remaining, variants=None, last=None) -> dict:
    """One (graph, p) cell: unfused + fused at each width (or each option variant at width 64). ``last`` (a dict)
    carries the previous cell's unfused seconds from one cell to the next under --unfused-once."""
    from gpucore.im.engine import make_sampler

    last = {} if last is None else last
    g = with_probability(graph, prob)
    cell = {"prob": prob}
    t = time.perf_counter()
    unfused = make_sampler(g, "IC", 1, args.seed, be, "gim")
    cell["unfused_setup_seconds"] = time.perf_counter() - t
    configs = variants or configurations(widths, args.mappings.split(","), args.evicts.split(","))
    if args.unfused_once:  # latency-bound cells: no pilot, one timed call (module docstring)
        warm = make_sampler(graph, "IC", 1, args.seed, be, "gim")  # the graph's weighted cascade: tiny sets
        timed_sample(warm, args.pilot, 0.0, j0=1 << 30)[1].release()
        del warm
        count, projected = args.min_sets, float(last.get("unfused_seconds", 0.0))
        cell.update({"sets": count, "projected_seconds": projected, "unfused_once": True})
    else:
        pilot_u, coll = timed_sample(unfused, args.pilot, 0.0, j0=1 << 30)
        mean, per_set = coll.mean_size, pilot_u / args.pilot
        coll.release()
        count = int(max(args.min_sets, min(args.sets, args.max_elements // max(mean, 1.0))))
        projected = per_set * count  # the unfused run; each fused run is projected from its own pilot below
        cell.update({"sets": count, "mean_size": mean, "projected_seconds": projected})
    if projected > remaining():
        cell["skipped"] = f"projected {projected:.0f}s exceeds the remaining budget {max(0.0, remaining()):.0f}s"
        del unfused
        return cell
    if args.unfused_once:
        secs, runs, coll = timed_runs(unfused, count, 0.0, 1, 0.0)
        mean = cell["mean_size"] = coll.mean_size
        last["unfused_seconds"] = secs
    else:
        secs, runs, coll = timed_runs(unfused, count, mean, args.reps, args.reps_seconds)
    want = fingerprint(coll)
    cell["unfused"] = {"seconds": secs, "seconds_runs": runs, "elements": int(coll.total),
                       "frontier_bytes": int(unfused.reservoirs.nbytes + unfused.stages.nbytes),
                       "sets_per_second": count / secs}
    coll.release()
    del coll, unfused
    cell["fused"] = {}
    for opts, label in configs:
        t = time.perf_counter()
        eng = make_sampler(g, "IC", 1, args.seed, be, "fused", **opts)
        setup = time.perf_counter() - t
        pilot_f, warm = timed_sample(eng, args.pilot, mean, j0=1 << 30)  # warm-up (kernels, pool sizes)
        warm.release()
        extra = REORDER_SECONDS_PER_ARC * g.m if opts.get("order", "none") != "none" else 0.0
        if 2.0 * pilot_f / args.pilot * count + extra > remaining():  # twice the pilot's rate: a margin
            cell["fused"][label] = {"options": opts, "skipped": f"projected {2.0 * pilot_f / args.pilot * count:.0f}s "
                                    f"exceeds the remaining budget {max(0.0, remaining()):.0f}s"}
            del eng
            continue
        secs, runs, coll = timed_runs(eng, count, mean, args.reps, args.reps_seconds)
        got = fingerprint(coll)
        identical = bool(np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1]))
        coll.release()
        stats = eng.stats()
        cell["fused"][label] = {"options": opts, "seconds": secs, "seconds_runs": runs, "setup_seconds": setup,
                                "speedup": cell["unfused"]["seconds"] / secs, "identical": identical,
                                "stats": stats}
        log(f"  p={prob} {label}: {secs:.3f}s vs unfused {cell['unfused']['seconds']:.3f}s "
            f"-> {cell['unfused']['seconds'] / secs:.2f}x, occupancy {stats['occupancy']:.2%}, identical={identical}")
        del eng, coll
    done = measured(cell)
    if done:
        best = min(done, key=lambda k: done[k]["seconds"])
        cell["best"] = {"config": best, "speedup": done[best]["speedup"]}
    return cell


def configurations(widths, mappings, evicts=("auto",)) -> list:
    """(sampler options, label) per width, mapping and eviction ("auto", "never", or a number: auto with that
    ``evict_after``); the label is the width alone for one mapping "auto" and one eviction "auto"."""
    out = []
    for w in widths:
        for m in mappings:
            for e in evicts:
                opts = {"batch_width": int(w), "mapping": m}
                opts.update({} if e == "auto" else {"evict": "never"} if e == "never" else {"evict_after": int(e)})
                label = str(w) if list(mappings) == ["auto"] else f"{w} {m}"
                out.append((opts, label if list(evicts) == ["auto"] else f"{label} ev={e}"))
    return out


def measured(cell) -> dict:
    """The fused runs of a cell that ran (label -> record), without those skipped for the budget."""
    return {label: f for label, f in cell.get("fused", {}).items() if "skipped" not in f}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder")
    p.add_argument("--graphs", default="BS,Go,PR,TC,LJ", help=f"among {','.join(GRAPHS)}")
    p.add_argument("--parts", default="sweep,heuristics")
    p.add_argument("--probs", default="0.05,0.1,0.2,0.3,0.4,0.5,1.0,wc")
    p.add_argument("--heuristic-probs", default="0.1,0.3,wc")
    p.add_argument("--widths", default="32,64,128,256")
    p.add_argument("--evicts", default="auto", help="eviction settings of the fused sampler to time at every width, "
                   "among auto, never and numbers (auto with that evict_after)")
    p.add_argument("--mappings", default="auto", help="CUDA fused mappings to time at every width, among "
                                                      "auto,level,resident (auto: the sampler's own pick)")
    p.add_argument("--sets", type=int, default=20_000, help="RR sets per cell (fewer when sets are large)")
    p.add_argument("--max-elements", type=float, default=1e8, help="elements one collection may hold")
    p.add_argument("--min-sets", type=int, default=512, help="fewest RR sets per cell, whatever --max-elements")
    p.add_argument("--pilot", type=int, default=PILOT, help="sets of each sampler's warm-up pilot (gives the mean "
                                                             "size and the time projections)")
    p.add_argument("--reps", type=int, default=5, help="timed calls per sampler and cell (the median counts)")
    p.add_argument("--reps-seconds", type=float, default=2.0, help="no further call once the calls took this long")
    p.add_argument("--unfused-once", action="store_true",
                   help="latency-bound cells: the unfused sampler warmed up on weighted cascade and timed in one call "
                        "of --min-sets sets (no pilot); the budget check uses the previous cell's unfused time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", type=float, default=540.0, help="seconds; cells that do not fit are skipped")
    p.add_argument("--cache", default=GRAPH_CACHE)
    args = p.parse_args(argv)
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GPUCORE_PROGRESS", "0")

    from gpucore.atomic import write_json
    from gpucore.backend import cuda_available, get_backend
    from gpucore.graph import load_graph

    if not cuda_available():
        log("no CUDA device: nothing to measure")
        return 2
    be = get_backend("cuda")
    widths = [int(w) for w in args.widths.split(",")]
    probs = [x.strip() for x in args.probs.split(",") if x.strip()]
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    keys = [k.strip() for k in args.graphs.split(",") if k.strip()]
    unknown = [k for k in keys if k not in GRAPHS]
    if unknown:
        log(f"unknown graphs {unknown}: choose among {list(GRAPHS)}")
        return 2
    report = {
        "benchmark": "bench_fuseim", "issue": 14, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": git_commit(), "device": be.device_info(), "host": cpu_facts(),
        "parameters": {k: v for k, v in vars(args).items() if k not in ("out", "cache")},
        "sweep": [], "heuristics": [],
    }

    def remaining():
        return args.budget - (time.perf_counter() - started)

    def save():
        report["total_seconds"] = time.perf_counter() - started
        write_json(out / "bench_fuseim.json", report)
        (out / "bench_fuseim.md").write_text(markdown(report))

    graphs = {}
    for key in keys:
        try:
            graphs[key] = load_graph(build_graph(GRAPHS[key]["cache"], GRAPHS[key], None, Path(args.cache), log))
        except Exception as exc:  # noqa: BLE001 - recorded; the other graphs still run
            log(f"{key}: cannot build ({exc})")
            report["sweep"].append({"graph": key, "error": str(exc)})
    if "sweep" in parts:
        last = {}
        for key, graph in graphs.items():
            for prob in probs:
                log(f"{key} p={prob}: {remaining():.0f}s of budget left")
                cell = run_cell(graph, prob, widths, args, be, remaining, last=last)
                cell.update({"graph": key, "title": GRAPHS[key]["title"], "n": graph.n, "m": graph.m})
                report["sweep"].append(cell)
                if "skipped" in cell:
                    log(f"{key} p={prob}: {cell['skipped']}")
                save()
    if "heuristics" in parts and graphs:
        key = "TC" if "TC" in graphs else list(graphs)[-1]
        variants = [({"batch_width": 64}, "default (none, sorted, refill)"),
                    ({"batch_width": 64, "sorted_sources": False}, "unsorted sources"),
                    ({"batch_width": 64, "tail": "none"}, "tail none"),
                    ({"batch_width": 64, "order": "rcm"}, "order rcm"),
                    ({"batch_width": 64, "order": "community"}, "order community")]
        for prob in [x.strip() for x in args.heuristic_probs.split(",") if x.strip()]:
            log(f"heuristics {key} p={prob}: {remaining():.0f}s of budget left")
            cell = run_cell(graphs[key], prob, widths, args, be, remaining, variants)
            cell.update({"graph": key, "title": GRAPHS[key]["title"], "n": graphs[key].n, "m": graphs[key].m})
            report["heuristics"].append(cell)
            save()
    save()
    try:
        plot_speedup(report, out / "fig_speedup.png")
        plot_occupancy(report, out / "fig_occupancy.png")
    except Exception as exc:  # noqa: BLE001 - the numbers are saved; a figure failure is reported
        log(f"figures failed: {exc}")
        report["figure_error"] = str(exc)
        save()
    log(f"wrote {out / 'bench_fuseim.json'} and .md ({report['total_seconds']:.0f}s)")
    mismatches = [c for c in report["sweep"] + report["heuristics"]
                  for f in measured(c).values() if not f["identical"]]
    return 1 if mismatches else 0


def rows(report, part="sweep"):
    out = []
    for c in report[part]:
        for label, f in measured(c).items():
            st = f["stats"]
            out.append({"graph": c["graph"], "p": c["prob"], "config": label, "seconds": f["seconds"],
                        "unfused_seconds": c["unfused"]["seconds"], "speedup": f["speedup"],
                        "occupancy": st["occupancy"], "frontier_mib": st["frontier_bytes_peak"] / 2**20,
                        "mask_mib": st["mask_bytes"] / 2**20, "unfused_frontier_mib": c["unfused"]["frontier_bytes"] / 2**20,
                        "edge_read_ratio": st["edge_read_ratio"], "identical": f["identical"], "sets": c["sets"],
                        "mean_size": c["mean_size"]})
    return out


def _save_fig(fig, path):
    import matplotlib.pyplot as plt

    with_tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(with_tmp, dpi=150, bbox_inches="tight")
    plt.close(fig)
    os.replace(with_tmp, path)


def plot_speedup(report, path):
    """Fig. 7: speedup of fused over unfused per graph, p on x, width as hue; 1x marked."""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd
    import seaborn as sns

    df = pd.DataFrame(rows(report))
    if df.empty:
        return
    sns.set_theme(style="whitegrid", context="paper")
    order = [p for p in dict.fromkeys(df["p"])]
    grid = sns.catplot(data=df, x="p", y="speedup", hue="config", col="graph", kind="point", order=order,
                       col_wrap=min(3, df["graph"].nunique()), height=2.8, aspect=1.2)
    grid.set(yscale="log")
    for ax in grid.axes.flat:
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    grid.set_axis_labels("edge probability p", "speedup (unfused / fused)")
    grid.legend.set_title("batch width")
    _save_fig(grid.figure, path)


def plot_occupancy(report, path):
    """Table 2 as a figure: occupancy and frontier memory vs p on the BS-size graph at width 32."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    df = pd.DataFrame(rows(report))
    if df.empty:
        return
    graph = "BS" if "BS" in set(df["graph"]) else df["graph"].iloc[0]
    df = df[(df["graph"] == graph) & (df["config"].str.split(" ").str[0] == "32")]
    df = df[df["config"] == df["config"].iloc[0]] if not df.empty else df
    if df.empty:
        return
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    sns.pointplot(data=df, x="p", y="occupancy", ax=axes[0])
    axes[0].set_ylabel("batch occupancy (fused, B = 32)")
    mem = pd.concat([df.assign(sampler="fused frontier lists", mib=df["frontier_mib"]),
                     df.assign(sampler="unfused reservoirs + staging", mib=df["unfused_frontier_mib"])])
    sns.pointplot(data=mem, x="p", y="mib", hue="sampler", ax=axes[1])
    axes[1].set_ylabel("frontier memory (MiB)")
    fig.suptitle(f"{df['graph'].iloc[0]}-size graph, IC")
    _save_fig(fig, path)


def _secs(x: float) -> str:
    return f"{x * 1e3:.2f} ms" if x < 0.1 else f"{x:.3f} s"


def _resident_mark(record) -> str:
    return " r" if record["stats"].get("resident_pieces") else ""


def markdown(rep: dict) -> str:
    dev, prm = rep.get("device") or {}, rep["parameters"]
    labels = [label for _, label in configurations(rep["parameters"]["widths"].split(","),
                                                   rep["parameters"].get("mappings", "auto").split(","),
                                                   rep["parameters"].get("evicts", "auto").split(","))]
    lines = [
        "# FuseIM benchmark: fused vs unfused RR-set sampling (issue 14, item 6)",
        "",
        f"- date: {rep['date']}; commit: {rep.get('commit')}",
        f"- GPU: {dev.get('device', 'none')} ({dev.get('sm_count', '?')} SMs), CUDA runtime "
        f"{dev.get('runtime_version')}, CuPy {dev.get('cupy')}; host {rep['host'].get('cpu_model')}",
        f"- IC, run seed {rep['parameters']['seed']}; same sets j = 0 .. S-1 for both samplers; time = "
        + (f"the median of up to {prm['reps']} calls (sample_into + sync; fewer once they took "
           f"{prm['reps_seconds']} s)" if "reps" in prm else "one sample_into + sync")
        + " after a warm-up; speedup = unfused / fused",
        "",
        "## Fig. 7: speedup per width and mapping (best = auto pick; r: the resident mapping ran)",
        "",
        "| graph | p | S | mean size | unfused | " + " | ".join(f"B={w}" for w in labels) + " | best | identical |",
        "|---|---|---|---|---|" + "---|" * len(labels) + "---|---|",
    ]
    for c in rep["sweep"]:
        if "error" in c:
            lines.append(f"| {c['graph']} | error: {c['error']} |")
            continue
        if "skipped" in c:
            mean = f"{c['mean_size']:.1f}" if "mean_size" in c else "-"  # --unfused-once learns it from the run
            lines.append(f"| {c['graph']} | {c['prob']} | {c['sets']:,} | {mean} | skipped: {c['skipped']} |")
            continue
        done = measured(c)
        cells = [f"{_secs(done[w]['seconds'])} ({done[w]['speedup']:.2f}x{_resident_mark(done[w])})" if w in done
                 else "skipped" if w in c["fused"] else "-" for w in labels]
        ident = all(f["identical"] for f in done.values())
        best = f"B={c['best']['config']}: {c['best']['speedup']:.2f}x" if "best" in c else "-"
        lines.append(f"| {c['graph']} | {c['prob']} | {c['sets']:,} | {c['mean_size']:.1f} | "
                     f"{_secs(c['unfused']['seconds'])} | " + " | ".join(cells)
                     + f" | {best} | {'yes' if ident else 'NO'} |")
    t2_label = next((label for label in labels if label.split(" ")[0] == "32"), None)
    t2 = [r for r in rows(rep) if r["config"] == t2_label and r["graph"] == "BS"]
    if t2:
        lines += ["", "## Table 2 (BS-size graph, B = 32)", "",
                  "| p | frontier MiB unfused (reservoirs + staging) | frontier MiB fused (lists, peak) | mask MiB fused "
                  "| occupancy fused | edge reads unfused / fused |", "|---|---|---|---|---|---|"]
        for r in t2:
            lines.append(f"| {r['p']} | {r['unfused_frontier_mib']:.1f} | {r['frontier_mib']:.1f} | {r['mask_mib']:.0f} | "
                         f"{r['occupancy']:.2%} | {r['edge_read_ratio']:.1f} |")
    if rep["heuristics"]:
        lines += ["", "## Heuristics (width 64)", "",
                  "| graph | p | variant | s | speedup vs unfused | occupancy | edge reads unfused / fused | reorder s "
                  "| identical |", "|---|---|---|---|---|---|---|---|---|"]
        for c in rep["heuristics"]:
            if "skipped" in c:
                lines.append(f"| {c['graph']} | {c['prob']} | skipped: {c['skipped']} |")
                continue
            for label, f in measured(c).items():
                st = f["stats"]
                lines.append(f"| {c['graph']} | {c['prob']} | {label} | {f['seconds']:.3f} | {f['speedup']:.1f}x | "
                             f"{st['occupancy']:.2%} | {st['edge_read_ratio']:.1f} | "
                             f"{st['seconds_by_phase']['reorder']:.1f} | {'yes' if f['identical'] else 'NO'} |")
    lines += ["", f"Total benchmark time: {rep.get('total_seconds', 0):.0f} s.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
