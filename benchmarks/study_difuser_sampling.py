#!/usr/bin/env python3
"""The sampling question of issue 15 (item 3), on the CPU: xor worlds vs independent keyed coins.

    python3 benchmarks/study_difuser_sampling.py OUT --data DATA_FOLDER
        [--graphs nethept,wiki-vote,pa20k] [--settings p005,p01,p1,n005,u01] [--k 20] [--registers 1024]
        [--estimators log] [--refines 0,32] [--runs 10000] [--budget 3600]

For every graph and weight setting of the paper (constant 0.005, 0.01, 0.1; N(0.05, 0.025) clipped to
[0, 1]; U(0, 0.1)) it runs DiFuseR with ``--sampling xor`` and ``--sampling keyed`` (same run seed,
same registers; for every --estimators and --refines: 0 is the paper's selection by the sketch score
alone, L > 1 picks among the L best by exact gains on the worlds) and our IMM at eps = 0.05 as the
reference, then scores every seed set with the
independent oracle (``gpucore.oracle.spread``, the same Monte-Carlo worlds for every seed set).
Reported per cell: DiFuseR's time, its internal estimate (the -1 registers over the worlds), the
oracle spread of its seeds, the bias (estimate / oracle - 1), and the oracle spread relative to
IMM's seeds. A cell whose projected time exceeds the remaining --budget is skipped and marked so.
Writes OUT/study_difuser_sampling.json and .md (commit, CPU, date).
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

from benchmarks.bench_common import cpu_facts, git_commit  # noqa: E402

SETTINGS = {"p005": "const:0.005", "p01": "const:0.01", "p1": "const:0.1", "n005": "normal:0.05,0.025",
            "u01": "uniform:0,0.1"}
GRAPHS = {
    "nethept": {"file": "nethept.txt.gz", "undirected": True},
    "wiki-vote": {"file": "wiki-Vote.txt.gz"},
    "epinions": {"file": "soc-Epinions1.txt.gz"},
    "pa20k": {"nodes": 20_000, "edges": 120_000},
}


def log(msg: str) -> None:
    print(f"[study {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def build(name: str, setting: str, shared: Path | None, cache: Path) -> Path:
    """``cache/name-setting.gcsr`` from the SNAP file or a PA graph (seed 1), weights drawn with seed 1."""
    from gpucore.graph import preprocess
    from gpucore.graph.generators import generate, write_edge_list

    spec = GRAPHS[name]
    out = cache / f"{name}-{setting}.gcsr"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    if "file" in spec:
        if shared is None or not (shared / spec["file"]).is_file():
            raise FileNotFoundError(f"{spec['file']} not found under --shared-data {shared}")
        preprocess(shared / spec["file"], out, undirected=spec.get("undirected", False), weights=SETTINGS[setting],
                   seed=1, show_progress=False)
    else:
        text = cache / f"{name}.txt"
        if not text.exists():
            src, dst = generate("pa", spec["nodes"], spec["edges"], seed=1, reciprocity=0.3)
            write_edge_list(text, src, dst)
        preprocess(text, out, weights=SETTINGS[setting], seed=1, show_progress=False)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--data", default=None)
    p.add_argument("--graphs", default="nethept,wiki-vote,pa20k")
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--registers", type=int, default=1024)
    p.add_argument("--estimators", default="log")
    p.add_argument("--refines", default="0,32")
    p.add_argument("--runs", type=int, default=10000)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--budget", type=float, default=3600.0)
    p.add_argument("--cache", default="/tmp/gpucore-study-graphs")
    args = p.parse_args(argv)
    os.environ.setdefault("GPUCORE_PROGRESS", "0")
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from gpucore.backend import get_backend
    from gpucore.graph import load_graph
    from gpucore.im import imm
    from gpucore.im.sketch import difuser
    from gpucore.oracle import spread

    report = {"study": "difuser_sampling", "issue": 15,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "commit": git_commit(), "host": {**cpu_facts(), **get_backend("cpu").device_info()},
              "parameters": {k: getattr(args, k) for k in ("k", "registers", "runs", "seed", "estimators", "refines")},
              "cells": []}
    shared = Path(args.data) if args.data else None
    last_cell = 0.0
    for name in args.graphs.split(","):
        for setting in args.settings.split(","):
            remaining = args.budget - (time.perf_counter() - started)
            if last_cell > remaining:
                report["cells"].append({"graph": name, "setting": setting, "skipped": f"{remaining:.0f}s left"})
                continue
            t_cell = time.perf_counter()
            g = load_graph(build(name, setting, shared, Path(args.cache)))
            cell = {"graph": name, "setting": setting, "weights": SETTINGS[setting], "n": g.n, "m": g.m}
            ref = imm(g, args.k, 0.05, "IC", seed=args.seed, backend="cpu")
            base = spread(g, ref["seed_ids"], "IC", runs=args.runs, seed=11, backend="cpu")
            cell["imm"] = {"seconds": ref["seconds"], "estimate": ref["estimated_spread"], "oracle": base.mean,
                           "stderr": base.stderr}
            for estimator, refine, sampling in [(e, int(r), s) for e in args.estimators.split(",")
                                            for r in args.refines.split(",") for s in ("xor", "keyed")]:
                res = difuser(g, args.k, registers=args.registers, sampling=sampling, seed=args.seed,
                              backend="cpu", estimator=estimator, refine=refine)
                sp = spread(g, res["seed_ids"], "IC", runs=args.runs, seed=11, backend="cpu")
                cell[f"{sampling}/{estimator}/refine {refine}"] = {
                    "seconds": res["seconds"], "estimate": res["estimated_spread"], "oracle": sp.mean,
                    "stderr": sp.stderr, "bias": res["estimated_spread"] / sp.mean - 1.0,
                    "vs_imm": sp.mean / base.mean, "rebuilds": res["rebuild_rounds"],
                    "sweeps": res["simulate_sweeps"]}
                log(f"{name} {setting} {sampling}/{estimator}/refine {refine}: {res['seconds']:.1f}s est "
                    f"{res['estimated_spread']:.1f} oracle {sp.mean:.1f} vs IMM {sp.mean / base.mean:.4f}")
            report["cells"].append(cell)
            last_cell = time.perf_counter() - t_cell
            report["total_seconds"] = time.perf_counter() - started
            (out / "study_difuser_sampling.json").write_text(json.dumps(report, indent=2) + "\n")
            (out / "study_difuser_sampling.md").write_text(markdown(report))
    return 0


def markdown(rep: dict) -> str:
    pr = rep["parameters"]
    lines = [
        "# DiFuseR sampling study: xor worlds vs keyed coins (CPU)",
        "",
        f"- date: {rep['date']}; commit: {rep['commit']}; CPU: {rep['host'].get('cpu_model')} "
        f"({rep['host'].get('numba_threads')} Numba threads)",
        f"- k = {pr['k']}, registers (worlds) = {pr['registers']}, run seed {pr['seed']}, oracle runs {pr['runs']} "
        "(the same worlds for every seed set); IMM at eps = 0.05 is the reference",
        "- est: DiFuseR's internal estimate; oracle: the oracle spread of its seeds (+- one standard error); "
        "bias = est / oracle - 1; vs IMM = oracle / oracle of IMM's seeds",
        "",
        "| graph | weights | IMM oracle | scheme | seconds | est | oracle | bias | vs IMM |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in rep["cells"]:
        if "skipped" in c:
            lines.append(f"| {c['graph']} | {c['setting']} | skipped ({c['skipped']}) |  |  |  |  |  |  |")
            continue
        for scheme, r in c.items():
            if not isinstance(r, dict) or "bias" not in r:
                continue
            lines.append(f"| {c['graph']} | {c['weights']} | {c['imm']['oracle']:.1f} | {scheme} | "
                         f"{r['seconds']:.1f} | "
                         f"{r['estimate']:.1f} | {r['oracle']:.1f} +- {r['stderr']:.1f} | {r['bias']:+.3f} | "
                         f"{r['vs_imm']:.4f} |")
    lines += ["", f"Total: {rep.get('total_seconds', 0):.0f} s.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
