#!/usr/bin/env python3
"""IMM benchmark: seconds per phase of `gpucore im` on the GPU (and the CPU twin), per sampler setting.

    python3 benchmarks/bench_im.py OUT --data .shared_data [--graphs epinions,pa1m,pokec,livejournal]
        [--models IC,LT] [--eps 0.05,0.5] [--k 50] [--samplers gim,fused,auto] [--warps-per-block 2]
        [--modes gpu,cpu16] [--repeats 3] [--budget 540]

What is timed ("solve"): the sum of the result's ``seconds_by_phase`` (lb_sampling, lb_selection,
final_sampling, final_selection, estimate; ``docs/im.md``), which is what the gIM comparison kit
compares with gIM's own timer. Not in it, and reported beside it: the engine set-up (graph copy to
the device, kernel loading, per-warp buffers), the warm-up run and auto's probe (``warm_up_seconds``), so
``imm_seconds`` (the whole ``imm()`` call) is larger. One process runs every cell, so kernels are
compiled once (a warm-up cell on a tiny graph first).

Graphs (weighted cascade, as gIM's Table 2): soc-Epinions1 from the --data folder (also at constant
p = 0.02 and 0.05: ``epinions-p02``, ``epinions-p05``, where ``--samplers gim,fused,auto`` shows auto's
pick against both samplers), and
preferential-attachment graphs made with ``gpucore generate pa`` (cached in --cache): ``go-p01`` and
``bs-p005`` (bench_fuseim's web-Google- and web-BerkStan-size stand-ins at constant p = 0.1 and 0.05: a large
mean set from a few giant ones, auto's other condition), ``pa1m``
(1,000,000 / 15,400,000: the size of the comparison kit's BA graph), ``pokec`` (1,632,803 /
30,622,564) and ``livejournal`` (4,847,571 / 68,993,773). GPU cells are repeated (median kept,
all recorded). Each (sampler, warps per block) setting is one row (an auto row shows its pick and
records ``sampler_choice``), so the settings compare on the
same graph in the same run; the seeds must be identical across settings and backends (recorded).
A cell whose projected time (from the previous cells of its graph, or a guess from its size)
exceeds the remaining --budget is skipped and marked, never cut. Writes OUT/bench_im.json and
OUT/bench_im.md with device, date and commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import GRAPH_CACHE, build_graph, cpu_facts, git_commit  # noqa: E402

GRAPHS = {
    "epinions": {"title": "soc-Epinions1", "file": "soc-Epinions1.txt.gz"},
    # constant p: RR sets of a mean 74 (p = 0.02, near auto's threshold of 64) and 696 (p = 0.05) elements
    "epinions-p02": {"title": "soc-Epinions1, p = 0.02", "file": "soc-Epinions1.txt.gz", "weights": "const:0.02"},
    "epinions-p05": {"title": "soc-Epinions1, p = 0.05", "file": "soc-Epinions1.txt.gz", "weights": "const:0.05"},
    "pa1m": {"title": "PA 1,000,000 / 15,400,000", "nodes": 1_000_000, "edges": 15_400_000},
    # constant p on the web-Google / web-BerkStan-size PA stand-ins of bench_fuseim: a large mean from a few giant
    # sets (2.1 % and 1.6 % of them), where auto's share-of-large-sets condition picks gim (docs/im.md)
    "go-p01": {"title": "web-Google-size PA, p = 0.1", "nodes": 875_713, "edges": 5_105_039, "weights": "const:0.1"},
    "bs-p005": {"title": "web-BerkStan-size PA, p = 0.05", "nodes": 685_230, "edges": 7_600_595,
                "weights": "const:0.05"},
    "pokec": {"title": "Pokec-size PA (1,632,803 / 30,622,564)", "nodes": 1_632_803, "edges": 30_622_564},
    "livejournal": {"title": "LiveJournal-size PA (4,847,571 / 68,993,773)", "nodes": 4_847_571,
                    "edges": 68_993_773},
}
KEEP = ("theta", "lower_bound", "lb_iteration", "lb_sets", "estimated_spread", "estimated_spread_stderr",
        "selection_spread", "rr_elements", "rr_mean_size", "seconds", "seconds_by_phase", "warm_up_seconds",
        "peak_device_memory", "memory_projected", "seed_ids", "sampler", "sampler_options", "sampler_choice")


def log(msg: str) -> None:
    print(f"[bench_im {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_once(graph, backend: str, model: str, k: int, eps: float, seed: int, sampler: str, options: dict,
             threads: int | None = None) -> dict:
    """One imm() call: the kept result fields, ``solve`` (sum of the phases) and ``imm_seconds``."""
    import numba

    from gpucore.im import imm

    if threads is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    t = time.perf_counter()
    res = imm(graph, k, eps, model, seed=seed, backend=backend, sampler=sampler, sampler_options=options)
    wall = time.perf_counter() - t
    out = {key: res[key] for key in KEEP}
    out["solve"] = sum(res["seconds_by_phase"].values())
    out["imm_seconds"] = wall
    out["threads"] = numba.get_num_threads() if backend == "cpu" else None
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder (bench_im.json, bench_im.md)")
    p.add_argument("--data", default=None, help="folder with soc-Epinions1.txt.gz")
    p.add_argument("--graphs", default="epinions,pa1m,pokec,livejournal")
    p.add_argument("--models", default="IC,LT")
    p.add_argument("--eps", default="0.05,0.5", help="comma-separated epsilons")
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samplers", default="gim", help="comma-separated samplers (gim, fused, auto: the probe picks one; "
                                                     "the row records the sampler used)")
    p.add_argument("--warps-per-block", default="2", help="gim sampler on the GPU: comma-separated settings")
    p.add_argument("--modes", default="gpu,cpu16", help="gpu, cpu16 (--cpu-threads threads), cpu1")
    p.add_argument("--cpu-threads", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--budget", type=float, default=540.0, help="seconds for the whole run (later cells skipped)")
    p.add_argument("--cache", default=GRAPH_CACHE, help="folder for the built .gcsr graphs")
    args = p.parse_args(argv)
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GPUCORE_PROGRESS", "0")

    from gpucore.backend import cuda_available, get_backend
    from gpucore.errors import OutOfMemoryError
    from gpucore.graph import from_arcs, load_graph

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    has_gpu = cuda_available()
    if "gpu" in modes and not has_gpu:
        log("no CUDA device: GPU cells skipped")
        modes.remove("gpu")
    eps_list = [float(e) for e in args.eps.split(",") if e.strip()]
    models = [m.strip().upper() for m in args.models.split(",") if m.strip()]
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    widths = [int(w) for w in args.warps_per_block.split(",") if w.strip()]
    rows = []  # (mode, sampler, options) of each table row
    for mode in modes:
        for sampler in samplers:
            if mode == "gpu" and sampler == "gim":
                rows += [(mode, sampler, {"warps_per_block": w}) for w in widths]
            else:
                rows.append((mode, sampler, {}))
    report = {
        "benchmark": "bench_im", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": git_commit(), "device": get_backend("cuda").device_info() if has_gpu else None,
        "host": {**cpu_facts(), **get_backend("cpu").device_info()},
        "timed": "solve = sum of seconds_by_phase (lb_sampling, lb_selection, final_sampling, final_selection, "
                 "estimate); engine set-up and warm-up excluded (imm_seconds includes them)",
        "parameters": {"k": args.k, "eps": eps_list, "models": models, "seed": args.seed,
                       "repeats": args.repeats, "budget": args.budget, "cpu_threads": args.cpu_threads},
        "cells": [],
    }
    shared = Path(args.data) if args.data else None

    def save():
        report["total_seconds"] = time.perf_counter() - started
        (out / "bench_im.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
        (out / "bench_im.md").write_text(markdown(report))

    tiny = from_arcs(64, list(range(63)), list(range(1, 64)), 0.5)  # compile every kernel once
    for mode, sampler, options in rows:
        for model in models:
            run_once(tiny, "cuda" if mode == "gpu" else "cpu", model, 2, 0.5, 0, sampler, options)

    def remaining():
        return args.budget - (time.perf_counter() - started)

    for key in [g.strip() for g in args.graphs.split(",") if g.strip()]:
        if remaining() <= 0:
            report["cells"].append({"graph": key, "skipped": "budget spent"})
            continue
        try:
            path = build_graph(key, GRAPHS[key], shared, Path(args.cache), log)
        except Exception as exc:  # noqa: BLE001 - recorded, the other graphs still run
            log(f"{key}: cannot build ({exc})")
            report["cells"].append({"graph": key, "error": str(exc)})
            continue
        graph = load_graph(path)
        guess = {"gpu": 2.0 + graph.m / 2e7, "cpu16": 5.0 + graph.m / 5e5, "cpu1": 20.0 + graph.m / 3e4}
        for model in models:
            for eps in eps_list:
                seeds = None
                for mode, sampler, options in rows:
                    cell = {"graph": key, "title": GRAPHS[key]["title"], "n": graph.n, "m": graph.m, "model": model,
                            "weights": GRAPHS[key].get("weights", "wc"), "eps": eps, "mode": mode, "sampler": sampler,
                            "options": options}
                    report["cells"].append(cell)
                    reps = args.repeats if mode == "gpu" else 1
                    scale = 1.0 if eps >= 0.5 else (0.5 / eps) ** 2 / 20  # theta ~ 1/eps^2, after fixed costs
                    projected = guess[mode] * max(1.0, scale) * reps
                    if projected > remaining():
                        cell["skipped"] = f"projected {projected:.0f}s exceeds the remaining {max(0, remaining()):.0f}s"
                        log(f"{key} {model} eps {eps} {mode} {sampler} {options}: {cell['skipped']}")
                        save()
                        continue
                    threads = {"cpu16": args.cpu_threads, "cpu1": 1}.get(mode)
                    try:
                        runs = [run_once(graph, "cuda" if mode == "gpu" else "cpu", model, args.k, eps, args.seed,
                                         sampler, options, threads) for _ in range(reps)]
                    except OutOfMemoryError as exc:  # recorded with the bytes it needed; the next cells still run
                        cell["out_of_memory"] = str(exc)
                        log(f"{key} {model} eps {eps} {mode} {sampler} {options}: {exc}")
                        save()
                        continue
                    best = sorted(runs, key=lambda r: r["solve"])[len(runs) // 2]
                    cell.update({k2: v for k2, v in best.items() if k2 != "seed_ids"})
                    cell["solve_all"] = [r["solve"] for r in runs]
                    seeds = seeds if seeds is not None else best["seed_ids"]
                    cell["same_seeds"] = best["seed_ids"] == seeds
                    guess[mode] = max(best["imm_seconds"], 0.5 * guess[mode]) / max(1.0, scale)
                    log(f"{key} {model} eps {eps} {mode} {sampler} {options}: solve {best['solve']:.3f}s "
                        f"(phases {', '.join(f'{n} {v:.3f}' for n, v in best['seconds_by_phase'].items())}) "
                        f"theta {best['theta']:,}")
                    save()
    save()
    log(f"wrote {out / 'bench_im.json'} and {out / 'bench_im.md'} ({report['total_seconds']:.0f}s)")
    return 0


def markdown(rep: dict) -> str:
    dev = rep.get("device") or {}
    host = rep["host"]
    pr = rep["parameters"]
    lines = [
        "# IMM benchmark: seconds per phase",
        "",
        f"- date: {rep['date']}; commit: {rep.get('commit')}",
        f"- GPU: {dev.get('device', 'none')} ({dev.get('sm_count', '?')} SMs), CUDA runtime "
        f"{dev.get('runtime_version')}, CuPy {dev.get('cupy')}; CPU: {host.get('cpu_model')} "
        f"({host.get('cpu_count')} cores), Numba {host.get('numba')}",
        f"- k = {pr['k']}, WC weights unless the graph names p, run seed {pr['seed']}; GPU: median of "
        f"{pr['repeats']} runs",
        f"- timed: {rep['timed']}",
        "",
        "| graph | model | eps | mode | sampler | options | solve s | LB sampling | LB selection | final sampling "
        "| final selection | estimate | theta (from the search) | estimate +- SE | same seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in rep["cells"]:
        if "error" in c or "solve" not in c:
            why = c.get("error") or c.get("out_of_memory") or c.get("skipped", "")
            lines.append(f"| {c['graph']} | {c.get('model', '')} | {c.get('eps', '')} | {c.get('mode', '')} | "
                         f"{c.get('sampler', '')} | {c.get('options', '')} | {why} |  |  |  |  |  |  |  |  |")
            continue
        ph = c["seconds_by_phase"]
        auto = (c.get("sampler_choice") or {}).get("mode") == "auto"
        sampler = f"auto: {c['sampler']} {c['sampler_options'] or ''}".strip() if auto else c["sampler"]
        lines.append(
            f"| {c['title']} | {c['model']} | {c['eps']} | {c['mode']} | {sampler} | {c['options'] or ''} | "
            f"{c['solve']:.3f} | {ph['lb_sampling']:.3f} | {ph['lb_selection']:.3f} | {ph['final_sampling']:.3f} | "
            f"{ph['final_selection']:.3f} | {ph['estimate']:.3f} | {c['theta']:,} ({c['lb_sets']:,}) | "
            f"{c['estimated_spread']:.1f} +- {c['estimated_spread_stderr']:.1f} | {'yes' if c['same_seeds'] else 'NO'} |"
        )
    lines += ["", f"Total benchmark time: {rep.get('total_seconds', 0):.0f} s.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
