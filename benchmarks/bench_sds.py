#!/usr/bin/env python3
"""Benchmark of issue 16, item 6: structural diversity search, sequential CPU / parallel CPU / one GPU.

    python3 benchmarks/bench_sds.py OUT --data .shared_data [--graphs wiki-vote,epinions,gowalla,
        livejournal,orkut] [--parts table2,k,t] [--models comp,core,truss] [--modes gpu,cpu,cpu1]
        [--budget 540] [--cpu-threads 16]

Parts:
- ``table2``: the paper's Table 2 (k = 4, t = 100; comp, core, truss) on wiki-Vote and soc-Epinions1
  (from --data, symmetrised) and undirected R-MAT graphs of the sizes of Gowalla
  (196,591 / 950,327), LiveJournal (3,997,962 / 34,681,189) and Orkut (3,072,441 / 117,185,083):
  ``gpucore generate rmat`` (a = 0.57, b = c = 0.19, seed 1) and ``gpucore preprocess --undirected``,
  cached in --cache as ``sds-<name>`` (vertices that draw no edge are dropped, so n is below the requested size;
  duplicate draws are dropped, so m is too). Triangle counts are reported beside the paper's.
- ``k``: time against k = 2..6 (t = 100), ``t``: against t = 10, 100, 1000 (k = 3), the paper's
  Exp-7, on --figure-graphs (default epinions, livejournal), GPU and parallel CPU.

Modes: ``gpu`` (one GPU), ``cpu`` (the CPU backend on --cpu-threads threads), ``cpu1`` (the same code
on one thread: the sequential CPU). Timing: ``seconds`` is the whole ``run_sds()`` call (simple
graph, host-to-device copies, supports, bounds, batches, contexts), after a warm-up that compiles
Numba and the kernels. GPU cells are repeated (--repeats, median). The answers (vertices, scores,
contexts) of every mode must be identical (``identical``). A cell whose projected time (from the
cells measured so far) exceeds the remaining --budget is skipped and marked so, never cut or
extrapolated. Results are written after every cell: OUT/bench_sds.json and OUT/bench_sds.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import GRAPH_CACHE, build_graph, cpu_facts, git_commit  # noqa: E402

MODELS = ("comp", "core", "truss")
#: the paper's Table 2 (seconds): CPU-Div, MCPU-Div (6 threads), GPU-Div (1 V100), MGPU-Div-D (4 V100)
PAPER = {
    "wiki-vote": {"comp": (2.93, 2.08, 1.95, 1.81), "core": (3.54, 2.93, 2.88, 2.57),
                  "truss": (8.91, 6.78, 4.75, 3.38)},
    "epinions": {"comp": (9.79, 7.59, 5.83, 3.92), "core": (16.43, 12.34, 10.38, 7.54),
                 "truss": (34.83, 25.27, 19.69, 12.31)},
    "gowalla": {"comp": (17.99, 12.32, 8.21, 3.63), "core": (25.9, 14.5, 9.7, 3.92), "truss": (54.7, 38.4, 28.9, 16.5)},
    "livejournal": {"comp": (1243.71, 746.93, 637.82, 275.71), "core": (1732.1, 994.6, 672.2, 267.5),
                    "truss": (10302.8, 6590.5, 6321.2, 3669.9)},
    "orkut": {"comp": (8682.24, 4863.72, 3839.56, 1870.30), "core": (10609.2, 5473.7, 4965.4, 2284.2),
              "truss": (19023.6, 12082.7, 11243.8, 6590.6)},
}
GRAPHS = {
    "wiki-vote": {"title": "wiki-Vote", "file": "wiki-Vote.txt.gz", "paper_triangles": 608_389},
    "epinions": {"title": "soc-Epinions1", "file": "soc-Epinions1.txt.gz", "paper_triangles": 1_624_481},
    "gowalla": {"title": "Gowalla-size R-MAT", "generator": "rmat", "nodes": 196_591, "edges": 950_327,
                "undirected": True, "paper_triangles": 2_273_138},
    "livejournal": {"title": "LiveJournal-size R-MAT", "generator": "rmat", "nodes": 3_997_962,
                    "edges": 34_681_189, "undirected": True, "paper_triangles": 177_820_130},
    "orkut": {"title": "Orkut-size R-MAT", "generator": "rmat", "nodes": 3_072_441, "edges": 117_185_083,
              "undirected": True, "paper_triangles": 412_002_900},
}
#: never assume a parallel efficiency better than this when projecting 1-thread times
MIN_EFFICIENCY = 0.75
#: never assume the parallel CPU less than this many times slower than the GPU when projecting
CPU_OVER_GPU = 5.0


def log(msg: str) -> None:
    print(f"[bench_sds {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def answer(res: dict) -> list:
    return [(e["vertex"], e["score"], e["contexts"]) for e in res["top"]]


def run_cell(graph, mode: str, model: str, k: int, t: int, args) -> tuple[dict, list]:
    """One timed run_sds call; (record, answer)."""
    import numba

    from gpucore.sds import run_sds

    backend = "cuda" if mode == "gpu" else "cpu"
    if backend == "cpu":
        numba.set_num_threads(1 if mode == "cpu1" else min(args.cpu_threads, numba.config.NUMBA_NUM_THREADS))
    t0 = time.perf_counter()
    res = run_sds(graph, model, k, t, backend=backend)
    wall = time.perf_counter() - t0
    keep = {key: res[key] for key in ("seconds", "seconds_by_phase", "t_score", "ties_at_t", "scored", "pruned",
                                      "candidates", "degree_bound_candidates", "batches", "peak_device_memory")}
    keep.update(wall=wall, threads=numba.get_num_threads() if backend == "cpu" else None)
    return keep, answer(res)


class Bench:
    def __init__(self, args, out: Path):
        from gpucore.backend import cuda_available, get_backend

        self.args = args
        self.out = out
        self.started = time.perf_counter()
        self.has_gpu = cuda_available()
        self.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        if "gpu" in self.modes and not self.has_gpu:
            log("no CUDA device: GPU cells skipped")
            self.modes.remove("gpu")
        self.report = {
            "benchmark": "bench_sds", "issue": 16, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "commit": git_commit(), "device": get_backend("cuda").device_info() if self.has_gpu else None,
            "host": {**cpu_facts(), **get_backend("cpu").device_info()},
            "parameters": {"cpu_threads": args.cpu_threads, "repeats": args.repeats, "budget": args.budget,
                           "bound": "support", "generator": "rmat a=0.57 b=c=0.19 seed 1, undirected"},
            "graphs": {}, "cells": [],
        }
        self.ratio = {}  # (from, to) -> largest time ratio measured so far

    def remaining(self) -> float:
        return self.args.budget - (time.perf_counter() - self.started)

    def save(self) -> None:
        from gpucore.atomic import write_json

        self.report["total_seconds"] = time.perf_counter() - self.started
        write_json(self.out / "bench_sds.json", self.report)
        (self.out / "bench_sds.md").write_text(markdown(self.report))

    def projected(self, cell: dict, mode: str) -> float | None:
        """Projected seconds of ``mode`` from the cell's faster modes and the ratios seen so far."""
        base = {"cpu": "gpu", "cpu1": "cpu"}.get(mode)
        if base is None or "seconds" not in cell.get(base, {}):
            return None
        floor = CPU_OVER_GPU if mode == "cpu" else MIN_EFFICIENCY * self.args.cpu_threads
        return cell[base]["seconds"] * max(self.ratio.get((base, mode), floor), floor)

    def cell(self, part: str, key: str, graph, model: str, k: int, t: int, modes) -> dict:
        cell = {"part": part, "graph": key, "model": model, "k": k, "t": t}
        self.report["cells"].append(cell)
        answers = {}
        for mode in modes:
            projected = self.projected(cell, mode)
            if projected is not None and projected > self.remaining():
                cell[mode] = {"skipped": f"projected {projected:.0f}s exceeds the remaining budget "
                                         f"{max(0.0, self.remaining()):.0f}s"}
                log(f"{key} {model} k={k} t={t} {mode}: {cell[mode]['skipped']}")
                continue
            runs = []
            for _ in range(self.args.repeats if mode == "gpu" else 1):
                rec, answers[mode] = run_cell(graph, mode, model, k, t, self.args)
                runs.append(rec)
            cell[mode] = runs[0] | {"seconds": statistics.median(r["seconds"] for r in runs),
                                    "seconds_all": [r["seconds"] for r in runs]}
            log(f"{key} {model} k={k} t={t} {mode}: {cell[mode]['seconds']:.3f}s (scored {rec['scored']:,}, "
                f"t-th score {rec['t_score']})")
            base = {"cpu": "gpu", "cpu1": "cpu"}.get(mode)
            if base in cell and "seconds" in cell[base]:
                r = cell[mode]["seconds"] / max(cell[base]["seconds"], 1e-9)
                self.ratio[(base, mode)] = max(self.ratio.get((base, mode), 0.0), r)
            self.save()
        ref = next(iter(answers.values()), None)
        cell["identical"] = all(a == ref for a in answers.values())
        if "seconds" in cell.get("gpu", {}):
            for mode in ("cpu", "cpu1"):
                if "seconds" in cell.get(mode, {}):
                    cell[f"speedup_vs_{mode}"] = cell[mode]["seconds"] / cell["gpu"]["seconds"]
        self.save()
        return cell


def graph_path(key: str, shared: Path | None, cache: Path, log=print, specs: dict | None = None) -> Path:
    """The .gcsr of ``(specs or GRAPHS)[key]``, built once into ``cache``; the generated ones are cached
    as ``sds-<key>`` (``bench_im.py``'s ``livejournal`` is another graph)."""
    spec = (specs or GRAPHS)[key]
    return build_graph(f"sds-{key}" if "generator" in spec else key, spec, shared, cache, log)


def graph_facts(graph, spec: dict) -> dict:
    from gpucore.sds import make_engine, simple_graph

    sg = simple_graph(graph)
    eng = make_engine(sg, "cuda" if _has_gpu() else "cpu")
    eng.prepare()
    d, e = eng.ego_sizes()
    return {"title": spec["title"], "n": int(graph.n), "undirected_edges": int(sg.m), "max_degree": int(d.max()),
            "triangles": int(e.sum() // 3), "max_ego_edges": int(e.max()), "paper_triangles": spec["paper_triangles"],
            "symmetrised": bool(sg.symmetrised)}


def _has_gpu() -> bool:
    from gpucore.backend import cuda_available

    return cuda_available()


def warm_up(has_gpu: bool) -> None:
    """Compile Numba and the kernels outside every timed cell."""
    from gpucore.graph import from_arcs
    from gpucore.sds import run_sds

    src, dst = zip(*[(a, b) for a in range(12) for b in range(a + 1, 12) if (a * b) % 5])
    tiny = from_arcs(12, src, dst, 0.1, directed=False)
    for model in MODELS:
        run_sds(tiny, model, 3, 2, backend="cpu")
        if has_gpu:
            run_sds(tiny, model, 3, 2, backend="cuda")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder (bench_sds.json, bench_sds.md)")
    p.add_argument("--data", default=None, help="folder with wiki-Vote.txt.gz, soc-Epinions1.txt.gz")
    p.add_argument("--graphs", default="wiki-vote,epinions,gowalla,livejournal,orkut")
    p.add_argument("--figure-graphs", default="epinions,livejournal", help="graphs of the k and t parts")
    p.add_argument("--parts", default="table2,k,t", help="table2, k, t")
    p.add_argument("--models", default=",".join(MODELS), help="comp, core, truss (a subset reruns only those cells)")
    p.add_argument("--modes", default="gpu,cpu,cpu1", help="gpu, cpu (--cpu-threads), cpu1 (sequential)")
    p.add_argument("--budget", type=float, default=540.0, help="seconds for the whole run (cells beyond it skipped)")
    p.add_argument("--cpu-threads", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3, help="GPU runs per cell (median)")
    p.add_argument("--cache", default=GRAPH_CACHE, help="folder for the built .gcsr graphs")
    args = p.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if unknown := set(models) - set(MODELS):  # before the warm-up, which takes a while
        p.error(f"--models: unknown {sorted(unknown)}; choose from {', '.join(MODELS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GPUCORE_PROGRESS", "0")
    from gpucore.graph import load_graph

    bench = Bench(args, out)
    warm_up(bench.has_gpu)
    shared = Path(args.data) if args.data else None
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    figure = [g.strip() for g in args.figure_graphs.split(",") if g.strip()]
    keys = [g.strip() for g in args.graphs.split(",") if g.strip()]
    loaded = {}

    def graph_of(key):
        if key not in loaded:
            try:
                path = graph_path(key, shared, Path(args.cache), log)
            except Exception as exc:  # noqa: BLE001 - recorded, the other graphs still run
                log(f"{key}: cannot build ({exc})")
                bench.report["graphs"][key] = {"error": str(exc)}
                loaded[key] = None
                return None
            loaded[key] = load_graph(path)
            bench.report["graphs"][key] = graph_facts(loaded[key], GRAPHS[key])
            log(f"{key}: {bench.report['graphs'][key]}")
            bench.save()
        return loaded[key]

    modes = bench.modes
    if "table2" in parts:
        for key in keys:
            graph = graph_of(key)
            if graph is None:
                continue
            for model in models:
                cell = bench.cell("table2", key, graph, model, 4, 100, modes)
                cell["paper"] = dict(zip(("cpu_div", "mcpu_div_6t", "gpu_div_1v100", "mgpu_div_d_4v100"),
                                         PAPER[key][model]))
    for part, values in (("k", [(k, 100) for k in (2, 3, 4, 5, 6)]), ("t", [(3, t) for t in (10, 100, 1000)])):
        if part not in parts:
            continue
        for key in figure:
            graph = graph_of(key)
            if graph is None:
                continue
            for model in models:
                for k, t in values:
                    bench.cell(part, key, graph, model, k, t, [m for m in modes if m != "cpu1"])
    bench.save()
    log(f"wrote {out / 'bench_sds.json'} and {out / 'bench_sds.md'} ({time.perf_counter() - bench.started:.0f}s)")
    return 0


def markdown(rep: dict) -> str:
    dev = rep.get("device") or {}
    host = rep["host"]
    pr = rep["parameters"]
    lines = [
        "# Structural diversity search benchmark (issue 16, item 6)",
        "",
        f"- date: {rep['date']}; commit: {rep.get('commit')}",
        f"- GPU: {dev.get('device', 'none')} ({dev.get('sm_count', '?')} SMs, "
        f"{dev.get('device_memory_bytes', 0) / 2**30:.0f} GiB), CUDA runtime {dev.get('runtime_version')}, "
        f"CuPy {dev.get('cupy')}",
        f"- CPU: {host.get('cpu_model')} ({host.get('cpu_count')} cores), Numba {host.get('numba')}; parallel CPU = "
        f"{pr['cpu_threads']} threads, sequential CPU = the same code on 1 thread",
        f"- whole run_sds() call (graph, copies, supports, bounds, batches, contexts); GPU = median of "
        f"{pr['repeats']} runs; bound: {pr['bound']}; generated graphs: {pr['generator']}",
        "",
        "## Graphs",
        "",
        "| graph | n | undirected edges | max degree | triangles | paper's triangles | max ego-network edges |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, g in rep["graphs"].items():
        if "error" in g:
            lines.append(f"| {key} | error: {g['error']} |")
            continue
        lines.append(f"| {g['title']} | {g['n']:,} | {g['undirected_edges']:,} | {g['max_degree']:,} | "
                     f"{g['triangles']:,} | {g['paper_triangles']:,} | {g['max_ego_edges']:,} |")

    def sec(cell, mode):
        c = cell.get(mode)
        if not c:
            return "-"
        return "skipped" if "skipped" in c else f"{c['seconds']:.3f}"

    def num(x):
        return f"{x:,}" if isinstance(x, int) else str(x)

    def speed(cell, mode):
        s = cell.get(f"speedup_vs_{mode}")
        return f"{s:.1f}x" if s else "-"

    lines += ["", "## Table 2 (k = 4, t = 100), seconds", "",
              "| model | graph | CPU 1T | CPU parallel | GPU | GPU vs 1T | GPU vs parallel | scored | t-th score "
              "| identical | paper CPU / MCPU / GPU / 4 GPUs |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in rep["cells"]:
        if c["part"] != "table2":
            continue
        any_run = next((c[m] for m in ("gpu", "cpu", "cpu1") if "seconds" in c.get(m, {})), {})
        paper = " / ".join(str(x) for x in c.get("paper", {}).values())
        lines.append(f"| {c['model']} | {rep['graphs'][c['graph']].get('title', c['graph'])} | {sec(c, 'cpu1')} | "
                     f"{sec(c, 'cpu')} | {sec(c, 'gpu')} | {speed(c, 'cpu1')} | {speed(c, 'cpu')} | "
                     f"{num(any_run.get('scored', '-'))} | {any_run.get('t_score', '-')} | "
                     f"{ {True: 'yes', False: 'NO'}.get(c.get('identical'), '-')} | {paper} |")
    for part, title in (("k", "Time against k (t = 100)"), ("t", "Time against t (k = 3)")):
        rows = [c for c in rep["cells"] if c["part"] == part]
        if not rows:
            continue
        lines += ["", f"## {title}, seconds", "", "| graph | model | k | t | CPU parallel | GPU | speedup | scored |",
                  "|---|---|---|---|---|---|---|---|"]
        for c in rows:
            any_run = next((c[m] for m in ("gpu", "cpu") if "seconds" in c.get(m, {})), {})
            lines.append(f"| {c['graph']} | {c['model']} | {c['k']} | {c['t']} | {sec(c, 'cpu')} | {sec(c, 'gpu')} | "
                         f"{speed(c, 'cpu')} | {num(any_run.get('scored', '-'))} |")
    lines += ["", f"Total benchmark time: {rep.get('total_seconds', 0):.0f} s.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
