"""Benchmark of the oracle (issue 3, item 9): forward IC simulations per second, GPU vs 16-core CPU.

    python benchmarks/bench_oracle.py OUTDIR [--work DIR] [--runs 10000] [--num-seeds 50] [--sweep]

Builds (or reuses, in --work) the generated social graph of LiveJournal's size,
``gpucore generate pa --nodes 4847571 --edges 68993773`` (weighted cascade p = 1/indeg(v)), takes
the 50 users of largest out-degree as seeds, and runs the same 10,000 Monte-Carlo worlds
(world s = mix(seed, ORACLE, s)) on the GPU kernels and on the Numba CPU oracle with every core of
the same machine, in the same process. Per-world activated-set sizes must be identical (checked
and recorded). The CPU side runs all worlds unless its estimated time exceeds --cpu-budget
seconds; then it runs the first N worlds and the rate is over those. Writes OUTDIR/bench_oracle.json
and OUTDIR/bench_oracle.md with device facts, date and commit. Target: GPU >= 50x the CPU.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpucore.atomic import atomic_path, write_json  # noqa: E402
from gpucore.backend import cuda_available, get_backend  # noqa: E402
from gpucore.cli import main as gpucore_main  # noqa: E402
from gpucore.graph import load_graph  # noqa: E402
from gpucore.oracle import mc_world_seeds  # noqa: E402
from gpucore.oracle.cpu import counts_cpu  # noqa: E402
from gpucore.oracle.gpu import GROUP, LIGHT_MAX, cuda_engine, ic_counts_gpu, lt_counts_gpu  # noqa: E402

TARGET = 50.0


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "gpucore", "benchmarks"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("GPUCORE_COMMIT", "unknown")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build_graph(args) -> tuple[Path, float]:
    if args.graph:
        return Path(args.graph), 0.0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"pa_{args.nodes}_{args.edges}_s{args.graph_seed}.gcsr"
    if path.exists():
        return path, 0.0
    t0 = time.perf_counter()
    code = gpucore_main(["generate", "pa", "--nodes", str(args.nodes), "--edges", str(args.edges), "--seed",
                         str(args.graph_seed), "--weights", "wc", "-o", str(path)])
    if code != 0:
        raise SystemExit(f"graph generation failed (exit {code})")
    return path, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("outdir")
    ap.add_argument("--work", default="/tmp/gpucore-bench", help="where the generated graph is cached")
    ap.add_argument("--graph", help="use this .gcsr instead of generating one")
    ap.add_argument("--nodes", type=int, default=4847571)
    ap.add_argument("--edges", type=int, default=68993773)
    ap.add_argument("--graph-seed", type=int, default=0)
    ap.add_argument("--model", choices=("IC", "LT"), default="IC")
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--num-seeds", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0, help="Monte-Carlo seed (worlds mix(seed, ORACLE, s))")
    ap.add_argument("--cpu-threads", type=int, default=None, help="default: all cores")
    ap.add_argument("--cpu-budget", type=float, default=240.0, help="seconds the CPU side may take")
    ap.add_argument("--gpu-repeats", type=int, default=3)
    ap.add_argument("--sweep", action="store_true", help="also time other GPU work splits (results must agree)")
    args = ap.parse_args(argv)

    import numba

    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    report = {"benchmark": "oracle forward Monte-Carlo", "model": args.model, "runs": args.runs,
              "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "commit": git_commit(),
              "target_speedup": TARGET}
    path, gen_s = build_graph(args)
    g = load_graph(path)
    deg = np.diff(g.out_indptr)
    seeds = np.argsort(-deg, kind="stable")[: args.num_seeds].astype(np.int64)
    report["graph"] = {"path": str(path), "n": g.n, "m": g.m, "sha256": g.sha256, "weights": g.meta.get("weights"),
                       "generator": None if args.graph else f"gpucore generate pa --nodes {args.nodes} --edges "
                       f"{args.edges} --seed {args.graph_seed} --weights wc", "generate_seconds": gen_s,
                       "max_out_degree": int(deg.max())}
    report["seeds"] = {"rule": f"the {args.num_seeds} largest out-degrees (ties: smaller id)",
                       "ids": seeds.tolist(), "out_degree_sum": int(deg[seeds].sum())}
    weights = np.ascontiguousarray(g.edge_probabilities(args.model)[1])
    worlds = mc_world_seeds(args.seed, args.runs)

    # ---------------- GPU
    gpu_counts = None
    if cuda_available():
        backend = get_backend("cuda")
        eng = cuda_engine(backend)
        run = ic_counts_gpu if args.model == "IC" else lt_counts_gpu
        t0 = time.perf_counter()
        names = ("out_indptr", "out_dst", "out_prob" if args.model == "IC" else "lt_out_weights")
        d = g.device_arrays(backend, names)
        arrays = tuple(d[k] for k in names)
        backend.synchronize()
        upload = time.perf_counter() - t0
        run(eng, g.out_indptr, g.out_dst, weights, seeds, worlds[:64], arrays=arrays)  # NVRTC compile, warm-up
        backend.synchronize()
        times, stats = [], {}
        for rep in range(args.gpu_repeats):
            backend.reset_peak()
            backend.synchronize()
            t0 = time.perf_counter()
            st = {}
            counts, _ = run(eng, g.out_indptr, g.out_dst, weights, seeds, worlds, arrays=arrays, stats=st)
            backend.synchronize()
            times.append(time.perf_counter() - t0)
            if gpu_counts is None:
                gpu_counts, stats = counts, st
            elif not np.array_equal(counts, gpu_counts):
                raise SystemExit("GPU repetitions disagree: non-deterministic kernel")
        sec = statistics.median(times)
        report["gpu"] = {"device": backend.device_info(), "seconds": sec, "seconds_all": times,
                         "sims_per_second": args.runs / sec, "graph_upload_seconds": upload,
                         "peak_pool_bytes": backend.peak_memory(), "batches": stats.get("batches"),
                         "units_per_batch": stats.get("units"), "levels": stats.get("levels"),
                         "light_max": LIGHT_MAX, "group": GROUP, "mean_spread": float(gpu_counts.mean()),
                         "stderr": float(gpu_counts.std(ddof=1) / np.sqrt(args.runs))}
        if args.sweep and args.model == "IC":
            sweep = []
            for kw in ({"group": 4}, {"group": 16}, {"group": 32}, {"light_max": 64}, {"light_max": 1024}):
                t0 = time.perf_counter()
                counts, _ = run(eng, g.out_indptr, g.out_dst, weights, seeds, worlds, arrays=arrays, **kw)
                backend.synchronize()
                s = time.perf_counter() - t0
                sweep.append(dict(kw, seconds=s, sims_per_second=args.runs / s,
                                  identical=bool(np.array_equal(counts, gpu_counts))))
            report["gpu"]["sweep"] = sweep
            if not all(x["identical"] for x in sweep):
                raise SystemExit("GPU work splits disagree")
    else:
        report["gpu"] = None

    # ---------------- CPU (same machine, all cores)
    threads = args.cpu_threads or os.cpu_count()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    threads = numba.get_num_threads()
    warm = min(args.runs, 2 * threads)
    counts_cpu(g.out_indptr, g.out_dst, weights, seeds, worlds[:threads], args.model, threads)  # JIT / page-in
    t0 = time.perf_counter()
    counts_cpu(g.out_indptr, g.out_dst, weights, seeds, worlds[:warm], args.model, threads)
    per_world = (time.perf_counter() - t0) / warm
    cpu_runs = args.runs
    if per_world * args.runs > args.cpu_budget:
        cpu_runs = max(warm, min(args.runs, int(args.cpu_budget / per_world) // threads * threads))
    t0 = time.perf_counter()
    cpu_counts = counts_cpu(g.out_indptr, g.out_dst, weights, seeds, worlds[:cpu_runs], args.model, threads)
    sec = time.perf_counter() - t0
    # one thread on a few worlds: how well the all-core rate scales (memory-latency bound traversal)
    numba.set_num_threads(1)
    one = min(args.runs, max(4, threads))
    t0 = time.perf_counter()
    counts_cpu(g.out_indptr, g.out_dst, weights, seeds, worlds[:one], args.model, 1)
    single = one / (time.perf_counter() - t0)
    numba.set_num_threads(threads)
    cpu_info = get_backend("cpu").device_info()
    cpu_info.update(cpu_model=cpu_model(), numba_threads=threads, threading_layer=numba.threading_layer())
    report["cpu"] = {"device": cpu_info, "runs": cpu_runs, "seconds": sec, "sims_per_second": cpu_runs / sec,
                     "mean_spread": float(cpu_counts.mean()), "subset": cpu_runs < args.runs,
                     "single_thread_sims_per_second": single, "single_thread_runs": one,
                     "parallel_efficiency": (cpu_runs / sec) / (single * threads)}
    if gpu_counts is not None:
        same = bool(np.array_equal(cpu_counts, gpu_counts[:cpu_runs]))
        report["identical_counts"] = same
        report["speedup"] = report["gpu"]["sims_per_second"] / report["cpu"]["sims_per_second"]
        report["target_met"] = report["speedup"] >= TARGET and same
    write_json(outdir / "bench_oracle.json", report)
    md = render_markdown(report)
    with atomic_path(outdir / "bench_oracle.md") as tmp:
        tmp.write_text(md)
    print(md)
    return 0 if report.get("identical_counts", True) else 1


def render_markdown(r: dict) -> str:
    g, cpu, gpu = r["graph"], r["cpu"], r["gpu"]
    lines = [
        f"# Oracle benchmark: {r['runs']:,} forward {r['model']} simulations",
        "",
        f"- date (UTC): {r['date_utc']}, commit `{r['commit']}`",
        f"- graph: n = {g['n']:,}, m = {g['m']:,} (`{g['generator'] or g['path']}`), sha256 `{g['sha256'][:16]}...`",
        f"- seeds: {r['seeds']['rule']} (out-degree sum {r['seeds']['out_degree_sum']:,})",
        "",
        "| side | device | simulations | seconds | simulations/s | mean spread |",
        "|---|---|---:|---:|---:|---:|",
    ]
    if gpu:
        dev = gpu["device"]
        lines.append(f"| GPU | {dev.get('device')} (CC {dev.get('compute_capability')}, {dev.get('sm_count')} SMs) | "
                     f"{r['runs']:,} | {gpu['seconds']:.3f} | {gpu['sims_per_second']:,.0f} | {gpu['mean_spread']:.1f} |")
    d = cpu["device"]
    lines.append(f"| CPU | {d.get('cpu_model')}, {d.get('numba_threads')} threads ({d.get('threading_layer')}) | "
                 f"{cpu['runs']:,} | {cpu['seconds']:.3f} | {cpu['sims_per_second']:,.1f} | {cpu['mean_spread']:.1f} |")
    lines.append("")
    if gpu:
        lines += [
            f"**Speed-up GPU / CPU: {r['speedup']:.1f}x** (target >= {r['target_speedup']:.0f}x: "
            f"{'met' if r['target_met'] else 'NOT met'}). Per-world activated-set sizes identical on both sides: "
            f"{r['identical_counts']}.",
            "",
            f"GPU: {gpu['batches']} batch(es) of {gpu['units_per_batch']} words x 64 simulations, {gpu['levels']} levels, "
            f"graph upload {gpu['graph_upload_seconds']:.2f} s (not timed), peak pool {gpu['peak_pool_bytes'] / 2**30:.2f} GiB, "
            f"repetitions {', '.join(f'{t:.3f}' for t in gpu['seconds_all'])} s (median reported).",
        ]
        if gpu.get("sweep"):
            lines += ["", "| work split | seconds | simulations/s | identical |", "|---|---:|---:|---|"]
            lines.append(f"| group {gpu['group']}, light_max {gpu['light_max']} (default) | {gpu['seconds']:.3f} | "
                         f"{gpu['sims_per_second']:,.0f} | - |")
            for s in gpu["sweep"]:
                name = ", ".join(f"{k} {v}" for k, v in s.items() if k in ("group", "light_max"))
                lines.append(f"| {name} | {s['seconds']:.3f} | {s['sims_per_second']:,.0f} | {s['identical']} |")
    else:
        lines.append("No GPU visible: CPU side only.")
    lines += ["", f"CPU scaling: one thread {cpu['single_thread_sims_per_second']:,.1f} simulations/s over "
              f"{cpu['single_thread_runs']} worlds; {d.get('numba_threads')} threads reach "
              f"{cpu['parallel_efficiency']:.0%} of {d.get('numba_threads')} x that."]
    if cpu["subset"]:
        lines += ["", f"The CPU ran the first {cpu['runs']:,} of the same worlds (time budget); its rate is over those."]
    lines += ["", "CPU oracle: Numba, one world per worker at a time (per-world BFS, the reference implementation). "
              "GPU oracle: 64 worlds per 64-bit word, all words of a batch expanded together (docs/oracle.md)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
