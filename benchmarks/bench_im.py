#!/usr/bin/env python3
"""Benchmark of issue 7, item 9: gIM-style IMM on the GPU vs our CPU IMM (1 and 16 threads), same run.

    python3 benchmarks/bench_im.py OUT --data .shared_data [--graphs epinions,pokec,livejournal]
        [--modes gpu,cpu16,cpu1] [--budget 540] [--eps 0.05] [--k 50] [--model IC] [--mrim]

Graphs (WC weights, as gIM's Table 2): soc-Epinions1 from the ``--data`` folder, and preferential-
attachment graphs of soc-Pokec's size (1,632,803 nodes / 30,622,564 arcs drawn) and
soc-LiveJournal1's size (4,847,571 / 68,993,773), made with ``gpucore generate pa`` and cached in
--cache (default /tmp/gpucore-bench-graphs, shared with the other benchmarks). Every cell runs IMM with the same run seed on each
backend; the seeds and theta must be identical across backends (recorded as ``identical``).

Timing: ``seconds`` is the whole ``imm()`` call (engine setup with the graph's host-to-device
copies and buffer allocation, every phase, results back), after a warm-up that compiles the
kernels. GPU cells are repeated (--repeats, default 3; median reported, all kept); CPU cells run
once. A CPU cell whose projected time (from the 16-thread time and the 1/16-thread ratio measured
on the first graph) exceeds the remaining --budget is skipped and marked so, never extrapolated
into a speedup. Writes OUT/bench_im.json and OUT/bench_im.md with device facts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import GRAPH_CACHE, build_graph, cpu_facts, git_commit  # noqa: E402

GRAPHS = {
    "epinions": {"title": "soc-Epinions1", "file": "soc-Epinions1.txt.gz", "gim_imm": 4.42, "gim_gpu": 0.131},
    "pokec": {"title": "Pokec-size PA (1,632,803 / 30,622,564)", "nodes": 1_632_803, "edges": 30_622_564,
              "gim_imm": 122.91, "gim_gpu": 1.084},
    "livejournal": {"title": "LiveJournal-size PA (4,847,571 / 68,993,773)", "nodes": 4_847_571,
                    "edges": 68_993_773, "gim_imm": 251.86, "gim_gpu": 2.276},
}


def log(msg: str) -> None:
    print(f"[bench_im {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_cell(graph, backend: str, threads: int | None, args, rounds: int = 1, k: int | None = None,
             eps: float | None = None) -> dict:
    import numba

    from gpucore.im import imm

    if threads is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    t = time.perf_counter()
    res = imm(graph, k or args.k, eps or args.eps, args.model, rounds=rounds, seed=args.seed, backend=backend)
    wall = time.perf_counter() - t
    keep = {key: res[key] for key in ("theta", "lower_bound", "lb_iteration", "lb_sets", "estimated_spread",
                                      "rr_elements", "rr_mean_size", "seconds", "seconds_by_phase",
                                      "peak_device_memory", "seed_ids")}
    keep["wall"] = wall
    keep["threads"] = numba.get_num_threads() if backend == "cpu" else None
    return keep


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder (bench_im.json, bench_im.md)")
    p.add_argument("--data", default=None,
                   help="folder with soc-Epinions1.txt.gz (the reference mirror of config/reference-gpu.yaml)")
    p.add_argument("--graphs", default="epinions,pokec,livejournal")
    p.add_argument("--modes", default="gpu,cpu16,cpu1")
    p.add_argument("--budget", type=float, default=540.0, help="seconds for the whole run (CPU cells beyond it are skipped)")
    p.add_argument("--eps", type=float, default=0.05)
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--model", default="IC")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cpu-threads", type=int, default=16)
    p.add_argument("--no-mrim", action="store_true", help="skip MRIM (k=10, T=5, eps=0.1) on the first graph")
    p.add_argument("--cache", default=GRAPH_CACHE, help="folder for the built .gcsr graphs")
    args = p.parse_args(argv)
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GPUCORE_PROGRESS", "0")

    from gpucore.backend import cuda_available, get_backend
    from gpucore.graph import from_arcs, load_graph
    from gpucore.im import imm

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    has_gpu = cuda_available()
    if "gpu" in modes and not has_gpu:
        log("no CUDA device: GPU cells skipped")
    device = get_backend("cuda").device_info() if has_gpu else None
    report = {
        "benchmark": "bench_im", "issue": 7, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": git_commit(), "device": device, "host": {**cpu_facts(), **get_backend("cpu").device_info()},
        "parameters": {"k": args.k, "eps": args.eps, "model": args.model, "weights": "wc", "seed": args.seed,
                       "cpu_threads": args.cpu_threads, "repeats": args.repeats, "budget": args.budget},
        "cells": [],
    }
    shared = Path(args.data) if args.data else None

    # warm-up: compile Numba and the kernels once, outside every timed cell
    tiny = from_arcs(64, list(range(63)), list(range(1, 64)), 0.5)
    for model in ("IC", "LT"):
        imm(tiny, 2, 0.5, model, backend="cpu")
        if has_gpu:
            imm(tiny, 2, 0.5, model, backend="cuda")
    ratio = None  # CPU 1-thread / 16-thread time, measured on the first graph

    def remaining():
        return args.budget - (time.perf_counter() - started)

    for key in [g.strip() for g in args.graphs.split(",") if g.strip()]:
        try:
            path = build_graph(key, GRAPHS[key], shared, Path(args.cache), log)
        except Exception as exc:  # noqa: BLE001 - recorded, the other graphs still run
            log(f"{key}: cannot build ({exc})")
            report["cells"].append({"graph": key, "error": str(exc)})
            continue
        graph = load_graph(path)
        cell = {"graph": key, "title": GRAPHS[key]["title"], "n": graph.n, "m": graph.m,
                "gim_paper": {"imm_1thread": GRAPHS[key]["gim_imm"], "gim": GRAPHS[key]["gim_gpu"],
                              "speedup": GRAPHS[key]["gim_imm"] / GRAPHS[key]["gim_gpu"]}}
        report["cells"].append(cell)  # filled in place; saved after every timed cell

        def save():
            report["total_seconds"] = time.perf_counter() - started
            (out / "bench_im.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
            (out / "bench_im.md").write_text(markdown(report))
        if "gpu" in modes and has_gpu:
            runs = []
            for r in range(max(1, args.repeats)):
                runs.append(run_cell(graph, "cuda", None, args))
                log(f"{key} gpu run {r}: {runs[-1]['seconds']:.3f}s theta={runs[-1]['theta']:,}")
            cell["gpu"] = runs[0] | {"seconds_all": [x["seconds"] for x in runs],
                                     "seconds": statistics.median(x["seconds"] for x in runs)}
            save()
        for mode, threads in (("cpu16", args.cpu_threads), ("cpu1", 1)):
            if mode not in modes:
                continue
            projected = None
            if mode == "cpu1" and "seconds" in cell.get("cpu16", {}) and ratio is not None:
                # never assume better than 75% parallel efficiency when projecting 1-thread time
                projected = cell["cpu16"]["seconds"] * max(ratio, 0.75 * args.cpu_threads)
            elif mode == "cpu16" and "gpu" in cell and key != "epinions":
                projected = cell["gpu"]["seconds"] * 10  # a cheap guard; the GPU is far faster
            if projected is not None and projected > remaining():
                cell[mode] = {"skipped": f"projected {projected:.0f}s exceeds the remaining budget "
                                         f"{max(0.0, remaining()):.0f}s"}
                log(f"{key} {mode}: {cell[mode]['skipped']}")
                continue
            log(f"{key} {mode}: started ({remaining():.0f}s of budget left)")
            cell[mode] = run_cell(graph, "cpu", threads, args)
            log(f"{key} {mode}: {cell[mode]['seconds']:.2f}s theta={cell[mode]['theta']:,}")
            cell["speedup_vs_" + mode] = (cell[mode]["seconds"] / cell["gpu"]["seconds"]) if "gpu" in cell else None
            save()
        if ratio is None and "seconds" in cell.get("cpu1", {}) and "seconds" in cell.get("cpu16", {}):
            ratio = cell["cpu1"]["seconds"] / cell["cpu16"]["seconds"]
        ref = cell.get("gpu")
        if ref:
            for mode in ("cpu16", "cpu1"):
                if "seconds" in cell.get(mode, {}):
                    cell[f"speedup_vs_{mode}"] = cell[mode]["seconds"] / ref["seconds"]
                    cell[f"identical_{mode}"] = (cell[mode]["seed_ids"] == ref["seed_ids"]
                                                 and cell[mode]["theta"] == ref["theta"])
        for mode in ("cpu16", "cpu1"):
            cell.get(mode, {}).pop("seed_ids", None)
        if not args.no_mrim and has_gpu and "mrim" not in report:
            mr = {"graph": key, "k": 10, "rounds": 5, "eps": 0.1,
                  "gim_paper_table3_epinions": {"gpu": 0.087, "cpu_serial": 2.4}}
            mr["gpu"] = run_cell(graph, "cuda", None, args, rounds=5, k=10, eps=0.1)
            mr["cpu16"] = run_cell(graph, "cpu", args.cpu_threads, args, rounds=5, k=10, eps=0.1)
            if remaining() > mr["cpu16"]["seconds"] * max(ratio or 0.0, 0.75 * args.cpu_threads) + 60:
                mr["cpu1"] = run_cell(graph, "cpu", 1, args, rounds=5, k=10, eps=0.1)
            mr["identical"] = all(mr[m]["seed_ids"] == mr["gpu"]["seed_ids"] for m in ("cpu16", "cpu1") if m in mr)
            report["mrim"] = mr
            log(f"{key} MRIM: gpu {mr['gpu']['seconds']:.3f}s cpu16 {mr['cpu16']['seconds']:.2f}s")
        save()

    report["total_seconds"] = time.perf_counter() - started
    (out / "bench_im.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (out / "bench_im.md").write_text(markdown(report))
    log(f"wrote {out / 'bench_im.json'} and {out / 'bench_im.md'} ({report['total_seconds']:.0f}s)")
    return 0


def markdown(rep: dict) -> str:
    dev = rep.get("device") or {}
    host = rep["host"]
    pr = rep["parameters"]
    lines = [
        "# IMM benchmark (issue 7, item 9)",
        "",
        f"- date: {rep['date']}; commit: {rep.get('commit')}",
        f"- GPU: {dev.get('device', 'none')} ({dev.get('sm_count', '?')} SMs, "
        f"{dev.get('device_memory_bytes', 0) / 2**30:.0f} GiB), CUDA runtime {dev.get('runtime_version')}, "
        f"CuPy {dev.get('cupy')}",
        f"- CPU: {host.get('cpu_model')} ({host.get('cpu_count')} cores), Numba {host.get('numba')}",
        f"- IMM: k = {pr['k']}, eps = {pr['eps']}, {pr['model']}, WC weights, run seed {pr['seed']}; GPU time = "
        f"median of {pr['repeats']} runs; whole imm() call incl. host-to-device copies and allocation",
        "",
        "| graph | n | m | theta | GPU s | CPU 16T s | CPU 1T s | speedup vs 1T | vs 16T | identical | gIM paper (IMM 1T / gIM) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def sec(cell, mode):
        c = cell.get(mode)
        if not c:
            return "-"
        return "skipped" if "skipped" in c else f"{c['seconds']:.2f}"

    for c in rep["cells"]:
        if "error" in c:
            lines.append(f"| {c['graph']} | error: {c['error']} |")
            continue
        theta = (c.get("gpu") or c.get("cpu16") or c.get("cpu1") or {}).get("theta", "-")
        s1 = c.get("speedup_vs_cpu1")
        s16 = c.get("speedup_vs_cpu16")
        ident = all(c.get(f"identical_{m}", True) for m in ("cpu16", "cpu1"))
        gp = c["gim_paper"]
        lines.append(
            f"| {c['title']} | {c['n']:,} | {c['m']:,} | {theta:,} | {sec(c, 'gpu')} | {sec(c, 'cpu16')} | "
            f"{sec(c, 'cpu1')} | {f'{s1:.1f}x' if s1 else '-'} | {f'{s16:.1f}x' if s16 else '-'} | "
            f"{'yes' if ident else 'NO'} | {gp['imm_1thread']} / {gp['gim']} s = {gp['speedup']:.1f}x |"
        )
    if "mrim" in rep:
        m = rep["mrim"]
        lines += ["", f"MRIM (CR-NAIMM, k = 10, T = 5, eps = 0.1) on {m['graph']}: GPU {m['gpu']['seconds']:.3f}s, "
                      f"CPU 16T {m['cpu16']['seconds']:.2f}s"
                  + (f", CPU 1T {m['cpu1']['seconds']:.2f}s" if "cpu1" in m else "")
                  + f"; identical seeds: {m['identical']} (gIM Table 3, Epinions: 0.087 s GPU, 2.4 s CPU)"]
    lines += ["", f"Total benchmark time: {rep.get('total_seconds', 0):.0f} s.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
