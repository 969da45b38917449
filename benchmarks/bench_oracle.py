"""Benchmark of the oracle (issue 3, item 9): forward IC simulations per second, GPU vs 16-core CPU.

    python benchmarks/bench_oracle.py OUTDIR [--work DIR] [--runs 10000] [--num-seeds 50] [--variant V] [--sweep]

Builds (or reuses, in --work) the generated social graph of LiveJournal's size,
``gpucore generate pa --nodes 4847571 --edges 68993773`` (weighted cascade p = 1/indeg(v)), takes
the 50 users of largest out-degree as seeds, and runs the same 10,000 Monte-Carlo worlds
(world s = mix(seed, ORACLE, s)) on the GPU kernels and on the Numba CPU oracle with every core of
the same machine, in the same process. Per-world activated-set sizes must be identical (checked
and recorded). The CPU side runs all worlds unless its estimated time exceeds --cpu-budget
seconds; then it runs the first N worlds and the rate is over those. Writes OUTDIR/bench_oracle.json
and OUTDIR/bench_oracle.md with device facts, date and commit (GPUCORE_COMMIT when set, else git).
Target: GPU >= 50x the CPU.

The headline GPU figure is the IC kernel --variant (default: the driver's default,
gpucore.oracle.cuda.IC_VARIANT). --sweep also times every other IC variant the same way
(warm-up, --gpu-repeats repetitions, median) and a few work-split settings, checks that every one
gives the same per-world sizes, and reports each with its speed-up over the CPU; a variant that
fails is recorded with its error and the others still run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import cpu_model, git_commit  # noqa: E402
from gpucore.atomic import atomic_path, write_json  # noqa: E402
from gpucore.backend import cuda_available, get_backend  # noqa: E402
from gpucore.cli import main as gpucore_main  # noqa: E402
from gpucore.graph import load_graph  # noqa: E402
from gpucore.oracle import mc_world_seeds  # noqa: E402
from gpucore.oracle.cpu import counts_cpu  # noqa: E402
from gpucore.oracle.cuda import (  # noqa: E402
    GROUP,
    IC_VARIANT,
    IC_VARIANTS,
    LIGHT_MAX,
    QUEUE_CAPACITY,
    SEED_BITS,
    cuda_engine,
    ic_counts_gpu,
    lt_counts_gpu,
)

TARGET = 50.0


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
    ap.add_argument("--variant", choices=IC_VARIANTS, default=None,
                    help=f"IC GPU kernel of the headline figure (default: the driver's default, {IC_VARIANT})")
    ap.add_argument("--sweep", action="store_true",
                    help="also time every other IC variant and some work splits (results must agree)")
    args = ap.parse_args(argv)
    if args.variant is None:
        args.variant = IC_VARIANT

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
        t0 = time.perf_counter()
        names = ("out_indptr", "out_dst", "out_prob" if args.model == "IC" else "lt_out_weights")
        d = g.device_arrays(backend, names)
        arrays = tuple(d[k] for k in names)
        backend.synchronize()
        upload = time.perf_counter() - t0

        def gpu_run(kw: dict, repeats: int) -> dict:
            """Warm-up on 64 worlds (NVRTC compile), then ``repeats`` timed runs of all worlds."""
            run = ic_counts_gpu if args.model == "IC" else lt_counts_gpu
            out = dict(kw)
            try:
                run(eng, g.out_indptr, g.out_dst, weights, seeds, worlds[:64], arrays=arrays, **kw)
                backend.synchronize()
                times, counts, stats, peak = [], None, {}, 0
                for _ in range(repeats):
                    backend.reset_peak()
                    backend.synchronize()
                    st = {}
                    t0 = time.perf_counter()
                    got, _ = run(eng, g.out_indptr, g.out_dst, weights, seeds, worlds, arrays=arrays, stats=st, **kw)
                    backend.synchronize()
                    times.append(time.perf_counter() - t0)
                    peak = max(peak, backend.peak_memory())
                    if counts is None:
                        counts, stats = got, st
                    elif not np.array_equal(got, counts):
                        raise RuntimeError("repetitions disagree: non-deterministic kernel")
            except Exception as exc:  # recorded, the other variants still run
                try:
                    backend.synchronize()
                except Exception:  # a sticky CUDA error: the later GPU runs will record it too
                    pass
                out.update(error=f"{type(exc).__name__}: {str(exc)[:500]}")
                print(f"GPU {kw}: {out['error']}", flush=True)
                return out
            sec = statistics.median(times)
            out.update(seconds=sec, seconds_all=times, sims_per_second=args.runs / sec, peak_pool_bytes=peak,
                       stats=stats, counts=counts)
            print(f"GPU {kw}: {sec:.3f} s ({', '.join(f'{t:.3f}' for t in times)}), {stats}", flush=True)
            return out

        main_kw = {"variant": args.variant} if args.model == "IC" else {}
        main_run = gpu_run(main_kw, args.gpu_repeats)
        if "error" in main_run:
            raise SystemExit(f"GPU run failed: {main_run['error']}")
        gpu_counts = main_run.pop("counts")
        stats = main_run["stats"]
        report["gpu"] = {"device": backend.device_info(), "variant": main_kw.get("variant"),
                         "seconds": main_run["seconds"], "seconds_all": main_run["seconds_all"],
                         "sims_per_second": main_run["sims_per_second"], "graph_upload_seconds": upload,
                         "peak_pool_bytes": main_run["peak_pool_bytes"], "batches": stats.get("batches"),
                         "units_per_batch": stats.get("units"), "levels": stats.get("levels"), "stats": stats,
                         "light_max": LIGHT_MAX, "group": GROUP, "queue_capacity_max": QUEUE_CAPACITY,
                         "seed_bits": SEED_BITS, "activations": int(gpu_counts.sum()),
                         "mean_spread": float(gpu_counts.mean()),
                         "stderr": float(gpu_counts.std(ddof=1) / np.sqrt(args.runs))}
        if args.sweep and args.model == "IC":
            variants = [dict(main_run, variant=args.variant, counts=gpu_counts)]
            for v in IC_VARIANTS:
                if v != args.variant:
                    variants.append(gpu_run({"variant": v}, args.gpu_repeats))
            sweep = []
            for kw in ({"variant": "level", "group": 16}, {"variant": "level", "light_max": 64},
                       {"variant": "async", "seed_bits": 1}, {"variant": "async", "seed_bits": 64},
                       {"variant": "async", "queue_capacity": 1 << 26}, {"variant": "async", "async_spin": (32, 1024)},
                       {"variant": "async", "async_spin": (512, 32768)}, {"variant": "warp", "max_words": 40}):
                sweep.append(gpu_run(kw, 1))
            for item in variants + sweep:
                got = item.pop("counts", None)
                item["identical"] = None if got is None else bool(np.array_equal(got, gpu_counts))
            report["gpu"]["variants"] = variants
            report["gpu"]["sweep"] = sweep
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
        cpu_rate = report["cpu"]["sims_per_second"]
        report["speedup"] = report["gpu"]["sims_per_second"] / cpu_rate
        report["target_met"] = report["speedup"] >= TARGET and same
        ok = [v for v in report["gpu"].get("variants", []) if "error" not in v]
        for item in report["gpu"].get("variants", []) + report["gpu"].get("sweep", []):
            if "error" not in item:
                item["speedup"] = item["sims_per_second"] / cpu_rate
        if ok:
            best = min(ok, key=lambda v: v["seconds"])
            report["best_variant"] = {"variant": best["variant"], "seconds": best["seconds"],
                                      "speedup": best["speedup"], "identical": best["identical"] and same,
                                      "target_met": best["speedup"] >= TARGET and bool(best["identical"]) and same}
            tried = report["gpu"]["variants"] + report["gpu"]["sweep"]
            report["all_variants_identical"] = same and all(v["identical"] for v in tried if "error" not in v)
            report["failed_gpu_runs"] = [{k: v for k, v in t.items() if k != "error"} | {"error": t["error"]}
                                         for t in tried if "error" in t]
    write_json(outdir / "bench_oracle.json", report)
    md = render_markdown(report)
    with atomic_path(outdir / "bench_oracle.md") as tmp:
        tmp.write_text(md)
    print(md)
    if not report.get("identical_counts", True) or report.get("all_variants_identical") is False:
        return 1
    if report.get("failed_gpu_runs"):
        return 3
    return 0


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
        kernel = f", variant {gpu['variant']}" if gpu.get("variant") else ""
        lines.append(f"| GPU | {dev.get('device')} (CC {dev.get('compute_capability')}, {dev.get('sm_count')} SMs{kernel}) | "
                     f"{r['runs']:,} | {gpu['seconds']:.3f} | {gpu['sims_per_second']:,.0f} | {gpu['mean_spread']:.1f} |")
    d = cpu["device"]
    lines.append(f"| CPU | {d.get('cpu_model')}, {d.get('numba_threads')} threads ({d.get('threading_layer')}) | "
                 f"{cpu['runs']:,} | {cpu['seconds']:.3f} | {cpu['sims_per_second']:,.1f} | {cpu['mean_spread']:.1f} |")
    lines.append("")
    if gpu:
        st = gpu.get("stats") or {}
        shape = (f"{gpu['levels']} levels" if gpu.get("variant") not in ("async", "async8")
                 else f"{st.get('launches')} launch(es), {st.get('refills')} refill(s), {st.get('entries'):,} queue "
                      f"entries for {gpu['activations']:,} activations (capacity {st.get('queue_capacity'):,})")
        lines += [
            f"**Speed-up GPU / CPU: {r['speedup']:.1f}x** (variant {gpu.get('variant')}; target >= "
            f"{r['target_speedup']:.0f}x: {'met' if r['target_met'] else 'NOT met'}). Per-world activated-set sizes "
            f"identical on both sides: {r['identical_counts']}.",
            "",
            f"GPU: {gpu['batches']} batch(es) of {gpu['units_per_batch']} words x 64 simulations, {shape}, "
            f"graph upload {gpu['graph_upload_seconds']:.2f} s (not timed), peak pool {gpu['peak_pool_bytes'] / 2**30:.2f} GiB, "
            f"repetitions {', '.join(f'{t:.3f}' for t in gpu['seconds_all'])} s (median reported).",
        ]
        if gpu.get("variants"):
            best = r.get("best_variant")
            if best:
                failed = r.get("failed_gpu_runs") or []
                lines += ["", f"**Fastest IC variant: {best['variant']}, {best['seconds']:.3f} s, {best['speedup']:.1f}x** "
                          f"(target {'met' if best['target_met'] else 'NOT met'}); every variant and setting that ran "
                          f"gave identical sizes: {r.get('all_variants_identical')}"
                          + (f"; {len(failed)} run(s) FAILED (see below)." if failed else ".")]
            lines += ["", "| IC variant | seconds (median) | repetitions | simulations/s | speed-up | shape | peak pool GiB | identical |",
                      "|---|---:|---|---:|---:|---|---:|---|"]
            for v in gpu["variants"]:
                lines.append(_variant_row(v, v["variant"]))
        if gpu.get("sweep"):
            lines += ["", "| work split (one run) | seconds | simulations/s | speed-up | shape | peak pool GiB | identical |",
                      "|---|---:|---:|---:|---|---:|---|"]
            for s in gpu["sweep"]:
                name = ", ".join(f"{k} {v}" for k, v in s.items()
                                 if k in ("variant", "group", "light_max", "seed_bits", "queue_capacity", "max_words",
                                          "async_spin"))
                lines.append(_variant_row(s, name, repetitions=False))
    else:
        lines.append("No GPU visible: CPU side only.")
    lines += ["", f"CPU scaling: one thread {cpu['single_thread_sims_per_second']:,.1f} simulations/s over "
              f"{cpu['single_thread_runs']} worlds; {d.get('numba_threads')} threads reach "
              f"{cpu['parallel_efficiency']:.0%} of {d.get('numba_threads')} x that."]
    if cpu["subset"]:
        lines += ["", f"The CPU ran the first {cpu['runs']:,} of the same worlds (time budget); its rate is over those."]
    lines += ["", "CPU oracle: Numba, one world per worker at a time (per-world BFS, the reference implementation). "
              "GPU oracle: 64 worlds per 64-bit word, all words of a batch expanded together; IC variants "
              "level / warp / warp8 (level-synchronous) and async / async8 (persistent work queue) (docs/oracle.md)."]
    return "\n".join(lines) + "\n"


def _variant_row(v: dict, name: str, repetitions: bool = True) -> str:
    if "error" in v:
        return f"| {name} | failed: {v['error'][:160]} |" + " |" * (6 if repetitions else 5)
    st = v.get("stats") or {}
    if st.get("variant") in ("async", "async8"):
        shape = f"{st.get('launches')} launch(es), {st.get('refills')} refill(s), {st.get('entries', 0):,} entries"
    else:
        shape = f"{st.get('levels')} levels, {st.get('batches')} batch(es)"
    speed = f"{v['speedup']:.1f}x" if "speedup" in v else "-"
    reps = f" {', '.join(f'{t:.3f}' for t in v['seconds_all'])} |" if repetitions else ""
    return (f"| {name} | {v['seconds']:.3f} |{reps} {v['sims_per_second']:,.0f} | {speed} | {shape} | "
            f"{v['peak_pool_bytes'] / 2**30:.2f} | {v.get('identical')} |")


if __name__ == "__main__":
    sys.exit(main())
