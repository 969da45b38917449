#!/usr/bin/env python3
"""Benchmark of issue 15, item 7: DiFuseR vs our IMM on the GPU in the shape of the paper's Table 3.

    python3 benchmarks/bench_difuser.py OUT [--graphs youtube,pokec,livejournal,orkut]
        [--settings p005,p01,p1,n005,u01] [--parts difuser,imm] [--samplings xor,keyed] [--refines 32]
        [--mappings warp,block] [--budget 540] [--k 50] [--registers 1024] [--imm-eps 0.5] [--oracle-runs 2000]
        [--custom NODES,EDGES[,undirected]] [--generator pa|rmat] [--gim PATH/TO/gIM]

Graphs: generated stand-ins of the sizes of the paper's YouTube, Pokec, LiveJournal and Orkut (SNAP's
n and m; YouTube and Orkut undirected, both arcs stored), preferential-attachment graphs with seed 1
and reciprocity 0.3 (``gpucore.graph.generators``), or with ``--generator rmat`` R-MAT graphs (seed 1,
a = 0.57, b = c = 0.19): PA's hubs are mild (at YouTube size the largest in-degree is 912 and a reverse
traversal at p = 0.1 holds 3 vertices on average), R-MAT's are not (15,369; about 24,000 on average over
300 traversals, 15 % of them large, up to 160,000), which is the regime of the paper's real graphs (its YouTube spread at p = 0.1 is
131,365); built in memory (no text files) once per call;
``--custom`` adds one more (the largest graph that fits is found by trying sizes). Weight settings
(the paper's section 5): constant 0.005, 0.01, 0.1; N(0.05, 0.025) clipped to [0, 1]; U(0, 0.1),
drawn by ``gpucore.graph.weights`` with seed 1.

Per cell (graph, setting): DiFuseR on the GPU for every --samplings and --refines (k = 50, J = 1024,
threshold 0.01, the default estimator; refine 0 is the paper's selection by the sketch score
alone), IMM on the GPU at eps = 0.5 (the paper's setting for gIM); the seeds of each are scored by
the oracle on the GPU (--oracle-runs Monte-Carlo runs, the same worlds for every seed set).
With ``--gim`` (an executable of the public gIM code, LIS-Laboratory/gim, built for example by the
im-vs-gim kit's ``gim/build.sh``) gIM runs too, at the same eps, on the same arcs and float32
probabilities (``benchmarks/gim_peer.py`` writes its text input): its time is its own CUDA-event
timer around the solve (no parsing, CSR build or copies; ``wall`` has them), its seeds are scored
by the same oracle, and a run that fails (out of memory, the paper's "-") is recorded with why.
``--backend cpu`` runs the same on the CPU: a smoke test of this script on small --custom graphs.
Times are whole solver calls (host-to-device copies included) after a warm-up that compiles the
kernels; peak device memory from CuPy's pool. An out-of-memory IMM is recorded as such
(the paper's "-"). Budget: a solve whose predicted time (the longest solve of that solver on that
graph so far, times 1.5; the first one of a graph needs 120 s left) exceeds what is left of
--budget is skipped and marked, never cut. Writes OUT/bench_difuser.json and OUT/bench_difuser.md
after every cell (device, date, commit from GPUCORE_COMMIT when there is no .git).
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

GRAPHS = {  # the title's generator name is --generator's
    "youtube": {"title": "YouTube-size PA", "nodes": 1_134_890, "edges": 2_987_624, "undirected": True},
    "pokec": {"title": "Pokec-size PA", "nodes": 1_632_803, "edges": 30_622_564, "undirected": False},
    "livejournal": {"title": "LiveJournal-size PA", "nodes": 4_847_571, "edges": 68_993_773, "undirected": False},
    "orkut": {"title": "Orkut-size PA", "nodes": 3_072_441, "edges": 117_185_083, "undirected": True},
}
SETTINGS = {"p005": "const:0.005", "p01": "const:0.01", "p1": "const:0.1", "n005": "normal:0.05,0.025",
            "u01": "uniform:0,0.1"}
#: Table 3 of the paper (1 A100): DiFuseR seconds, gIM seconds, DiFuseR score, gIM score (None: out of memory)
PAPER = {
    ("youtube", "p005"): (6.44, 13.25, 1299, 1141), ("youtube", "p01"): (6.71, 10.16, 3175, 2865),
    ("youtube", "p1"): (3.15, 7.75, 131365, 130372), ("youtube", "n005"): (5.30, 9.94, 54384, 54097),
    ("youtube", "u01"): (5.81, 10.05, 53934, 53822),
    ("pokec", "p005"): (33.61, None, 601, None), ("pokec", "p01"): (33.92, None, 1788, None),
    ("pokec", "p1"): (3.35, 26.72, 775088, 774365), ("pokec", "n005"): (3.95, 29.64, 464404, 463059),
    ("pokec", "u01"): (4.17, 29.61, 462174, 460907),
    ("livejournal", "p005"): (78.86, None, 6022, None), ("livejournal", "p01"): (13.26, None, 48555, None),
    ("livejournal", "p1"): (10.08, 49.58, 1700220, 1695947), ("livejournal", "n005"): (11.47, 52.29, 931219, 925726),
    ("livejournal", "u01"): (10.76, 52.27, 926163, 920881),
    ("orkut", "p005"): (122.69, None, 23025, None), ("orkut", "p01"): (129.33, 113.68, 119506, 120913),
    ("orkut", "p1"): (17.97, 77.85, 2257592, 2251873), ("orkut", "n005"): (29.84, 83.74, 1493737, 1472394),
    ("orkut", "u01"): (34.03, 83.90, 1487416, 1466698),
}


def log(msg: str) -> None:
    print(f"[bench_difuser {time.strftime('%H:%M:%S')}] {msg}", flush=True)


#: --generator: the stand-ins' model and its options (``gpucore.graph.generators``)
GENERATORS = {"pa": {"reciprocity": 0.3}, "rmat": {}}


def standin_csr(nodes: int, edges: int, undirected: bool, generator: str = "pa"):
    """Both CSRs of a stand-in (``generator``, seed 1), canonical as after preprocessing."""
    import numpy as np

    from gpucore.graph.csr import build_csr
    from gpucore.graph.generators import generate

    src, dst = generate(generator, nodes, edges, seed=1, **GENERATORS[generator])
    csr = build_csr(src.astype(np.int32), dst.astype(np.int32), nodes, undirected)
    del src, dst
    return csr


def with_weights(csr, name: str, setting: str, undirected: bool):
    """An in-memory ``Graph`` of ``csr`` with the setting's weights (seed 1) and zero costs."""
    import numpy as np

    from gpucore.graph import Graph
    from gpucore.graph.weights import edge_probabilities

    out_prob = edge_probabilities(SETTINGS[setting], csr.out_dst, csr.in_indptr, 1)
    return Graph(path=Path(f"<{name}-{setting}>"), n=csr.n, m=csr.m, directed=not undirected, cost_scale=1.0,
                 sha256=f"standin-{name}-{setting}", meta={"weights": SETTINGS[setting]},
                 out_indptr=csr.out_indptr, out_dst=csr.out_dst, out_prob=out_prob, in_indptr=csr.in_indptr,
                 in_src=csr.in_src, in_eid=csr.in_eid, in_prob=out_prob[csr.in_eid],
                 cost=np.zeros(csr.n, dtype=np.float32), original_id=np.arange(csr.n, dtype=np.int64))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder (bench_difuser.json, bench_difuser.md)")
    p.add_argument("--graphs", default="youtube,pokec,livejournal,orkut")
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--parts", default="difuser,imm", help="solvers to run: difuser, imm (and gim with --gim)")
    p.add_argument("--gim", default=None, help="gIM's executable: adds the solver gim")
    p.add_argument("--samplings", default="xor,keyed")
    p.add_argument("--refines", default="32", help="DiFuseR --refine values (0: the paper's selection)")
    p.add_argument("--mappings", default="warp",
                   help="DiFuseR's CUDA kernel layouts: warp (ours), block (the paper's); solver names of block "
                        "runs end in -block")
    p.add_argument("--budget", type=float, default=540.0,
                   help="seconds for the whole run (solves predicted beyond it are skipped)")
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--registers", type=int, default=1024)
    p.add_argument("--rebuild-threshold", type=float, default=0.01)
    p.add_argument("--imm-eps", type=float, default=0.5)
    p.add_argument("--oracle-runs", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--generator", default="pa", choices=tuple(GENERATORS),
                   help="the stand-ins' model: pa (preferential attachment, reciprocity 0.3) or rmat (R-MAT, "
                        "a = 0.57, b = c = 0.19: hubs of far higher degree, so spreads nearer the real graphs')")
    p.add_argument("--custom", default=None, help="NODES,EDGES[,undirected]: one more PA graph ('custom')")
    p.add_argument("--backend", default="cuda", choices=("cuda", "cpu"), help="cpu: a smoke test of this script")
    args = p.parse_args(argv)
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GPUCORE_PROGRESS", "0")

    from gpucore.backend import cuda_available, get_backend
    from gpucore.errors import OutOfMemoryError
    from gpucore.graph import from_arcs
    from gpucore.im import imm
    from gpucore.im.sketch import difuser
    from gpucore.oracle import spread

    be = args.backend
    if be == "cuda" and not cuda_available():
        log("no CUDA device: nothing to measure (--backend cpu runs a smoke test)")
        return 2
    name = args.generator.upper() if args.generator == "pa" else "R-MAT"
    graphs = {key: {**spec, "title": spec["title"].replace("PA", name)} for key, spec in GRAPHS.items()}
    if args.custom:
        parts = args.custom.split(",")
        graphs["custom"] = {"title": f"{name} {int(parts[0]):,} / {int(parts[1]):,}", "nodes": int(parts[0]),
                            "edges": int(parts[1]), "undirected": len(parts) > 2 and parts[2] == "undirected"}
    report = {
        "benchmark": "bench_difuser", "issue": 15, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": git_commit(), "device": get_backend(be).device_info(), "host": cpu_facts(),
        "parameters": {k: getattr(args, k) for k in ("k", "registers", "rebuild_threshold", "imm_eps",
                                                     "oracle_runs", "seed", "samplings", "refines", "mappings",
                                                     "parts", "gim", "generator")},
        "cells": [],
    }
    solvers = [s.strip() for s in args.parts.split(",") if s.strip()] + (["gim"] if args.gim else [])
    samplings = [s.strip() for s in args.samplings.split(",") if s.strip()]
    refines = [int(r) for r in args.refines.split(",") if r.strip()]
    mappings = [m.strip() for m in args.mappings.split(",") if m.strip()]

    def remaining() -> float:
        return args.budget - (time.perf_counter() - started)

    def save() -> None:
        report["total_seconds"] = time.perf_counter() - started
        (out / "bench_difuser.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
        (out / "bench_difuser.md").write_text(markdown(report))

    tiny = from_arcs(64, list(range(63)), list(range(1, 64)), 0.5)  # warm-up: compile every kernel once
    for sampling in samplings:  # at the cells' J: arrays sized by the worlds then have their size already
        for mapping in mappings:
            difuser(tiny, 2, registers=args.registers, sampling=sampling, mapping=mapping, backend=be)
    imm(tiny, 2, 0.5, "IC", backend=be)
    spread(tiny, [0], "IC", runs=10, backend=be)

    for key in [g.strip() for g in args.graphs.split(",") if g.strip()]:
        spec = graphs[key]
        if remaining() < 60:
            report["cells"].append({"graph": key, "skipped": f"{max(0.0, remaining()):.0f}s left"})
            continue
        t = time.perf_counter()
        csr = standin_csr(spec["nodes"], spec["edges"], spec["undirected"], args.generator)
        log(f"built {key}: n={csr.n:,} m={csr.m:,} in {time.perf_counter() - t:.1f}s")
        longest: dict[str, float] = {}
        for setting in [s.strip() for s in args.settings.split(",") if s.strip()]:
            graph = with_weights(csr, key, setting, spec["undirected"])
            paper = PAPER.get((key, setting))
            cell = {"graph": key, "title": spec["title"], "setting": setting, "weights": SETTINGS[setting],
                    "n": graph.n, "m": graph.m, "paper": None if paper is None else dict(
                        zip(("difuser_seconds", "gim_seconds", "difuser_score", "gim_score"), paper))}
            report["cells"].append(cell)
            runs = [(f"difuser-{s}-refine{r}" + ("-block" if m == "block" else ""), s, r, m)
                    for s in samplings for r in refines for m in mappings if "difuser" in solvers]
            runs += [("imm", None, None, None)] if "imm" in solvers else []
            runs += [("gim", None, None, None)] if "gim" in solvers else []
            for name, sampling, refine, mapping in runs:
                solver = name if not sampling else ("difuser-block" if mapping == "block" else "difuser")
                need = longest[solver] * 1.5 if solver in longest else 120.0
                if need > remaining():
                    cell[name] = {"skipped": f"predicted {need:.0f}s, {max(0.0, remaining()):.0f}s left"}
                    log(f"{key} {setting} {name}: {cell[name]['skipped']}")
                    continue
                try:
                    if sampling:
                        res = difuser(graph, args.k, registers=args.registers, sampling=sampling, seed=args.seed,
                                      rebuild_threshold=args.rebuild_threshold, refine=refine, mapping=mapping,
                                      backend=be)
                        row = {k: res[k] for k in ("seconds", "seconds_by_phase", "estimated_spread",
                                                   "rebuild_rounds", "simulate_sweeps", "refine_probes", "mapping", "live_bits",
                                                   "peak_device_memory", "register_bytes", "seed_ids")}
                    elif name == "gim":
                        row = run_gim(graph, out / "gim-input.txt", args, remaining())
                        if "failed" in row:
                            cell[name] = row
                            log(f"{key} {setting} gim: failed ({row['failed']}): {' | '.join(row['tail'])}")
                            longest[solver] = max(longest.get(solver, 0.0), row["wall"])
                            continue
                    else:
                        res = imm(graph, args.k, args.imm_eps, "IC", seed=args.seed, backend=be)
                        row = {k: res[k] for k in ("seconds", "seconds_by_phase", "warm_up_seconds",
                                                   "estimated_spread", "theta", "sampler", "peak_device_memory",
                                                   "seed_ids")}
                except OutOfMemoryError as exc:
                    cell[name] = {"out_of_memory": str(exc)}
                    log(f"{key} {setting} {name}: out of memory ({exc})")
                    continue
                longest[solver] = max(longest.get(solver, 0.0), row.get("wall", row["seconds"]))
                sp = spread(graph, row.pop("seed_ids"), "IC", runs=args.oracle_runs, seed=7, backend=be)
                row.update(oracle=sp.mean, oracle_stderr=sp.stderr, oracle_seconds=sp.seconds,
                           bias=row["estimated_spread"] / sp.mean - 1.0 if sp.mean else None)
                cell[name] = row
                log(f"{key} {setting} {name}: {row['seconds']:.2f}s est {row['estimated_spread']:.0f} "
                    f"oracle {sp.mean:.0f}")
                save()
            for ref in ("imm", "gim"):
                base = cell.get(ref, {})
                for name, *_ in runs:
                    r = cell.get(name, {})
                    if name != ref and "oracle" in r and "oracle" in base:
                        r[f"speedup_vs_{ref}"] = base["seconds"] / r["seconds"]
                        r[f"score_vs_{ref}"] = r["oracle"] / base["oracle"]
            save()
        del csr
    save()
    log(f"wrote {out / 'bench_difuser.json'} ({report['total_seconds']:.0f}s)")
    return 0


def run_gim(graph, path: Path, args, left: float) -> dict:
    """gIM on ``graph`` (IC, --k, --imm-eps) through its text input; the input is removed after."""
    from benchmarks import gim_peer

    try:
        gim_peer.write_input(graph, path)
        rec = gim_peer.run(args.gim, path, args.k, args.imm_eps, "IC", timeout=max(1.0, left))
        seeds = rec.get("seed_ids", [])
        if "failed" not in rec and (len(set(seeds)) != args.k or not all(0 <= v < graph.n for v in seeds)):
            rec = {"failed": f"not {args.k} distinct vertices of the graph: {seeds[:8]}...", "tail": [],
                   "wall": rec["wall"]}
        return rec
    finally:
        path.unlink(missing_ok=True)


def _fmt(r: dict | None, key: str, spec: str) -> str:
    if not r:
        return "-"
    if "skipped" in r:
        return "skipped"
    if "out_of_memory" in r:
        return "OOM"
    if "failed" in r:
        return "OOM" if r["failed"].startswith("out of memory") else "failed"
    return format(r[key], spec) if r.get(key) is not None else "-"


def markdown(rep: dict) -> str:
    dev = rep.get("device") or {}
    pr = rep["parameters"]
    lines = [
        "# DiFuseR vs IMM (and gIM) on the GPU (issue 15, item 7; the shape of the paper's Table 3)",
        "",
        f"- date: {rep['date']}; commit: {rep.get('commit')}",
        f"- GPU: {dev.get('device', 'none')} ({dev.get('sm_count', '?')} SMs, "
        f"{dev.get('device_memory_bytes', 0) / 2**30:.0f} GiB), CuPy {dev.get('cupy')}",
        f"- DiFuseR: k = {pr['k']}, J = {pr['registers']} registers (worlds), rebuild threshold "
        f"{pr['rebuild_threshold']}; IMM: eps = {pr['imm_eps']}; oracle: {pr['oracle_runs']} runs on the GPU, "
        "the same worlds for every seed set; seconds = the whole solver call (gIM: its own timer around its solve, "
        "without reading its text input; wall s in the JSON)",
        "- est = the solver's own spread estimate; bias = est / oracle - 1; paper = Table 3 (1 A100): DiFuseR s / "
        "gIM s, DiFuseR score / gIM score",
        "",
        "| graph | n | m | weights | solver | seconds | peak GiB | est | oracle | bias | speedup vs IMM | "
        "score vs IMM | speedup vs gIM | score vs gIM | paper |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in rep["cells"]:
        if "setting" not in c:
            lines.append(f"| {c['graph']} | skipped ({c.get('skipped')}) |" + " |" * 13)
            continue
        pa = c.get("paper")
        paper = "-" if not pa else (f"{pa['difuser_seconds']} / {pa['gim_seconds'] or 'OOM'} s, "
                                    f"{pa['difuser_score']} / {pa['gim_score'] or 'OOM'}")
        for name in [k for k in c if k.startswith("difuser-") or k in ("imm", "gim")]:
            r = c[name]
            peak = f"{r['peak_device_memory'] / 2**30:.2f}" if "peak_device_memory" in r else "-"
            lines.append(
                f"| {c['title']} | {c['n']:,} | {c['m']:,} | {c['weights']} | {name} | {_fmt(r, 'seconds', '.2f')} | "
                f"{peak} | {_fmt(r, 'estimated_spread', '.0f')} | {_fmt(r, 'oracle', '.0f')} | "
                f"{_fmt(r, 'bias', '+.3f')} | {_fmt(r, 'speedup_vs_imm', '.2f')} | {_fmt(r, 'score_vs_imm', '.4f')} | "
                f"{_fmt(r, 'speedup_vs_gim', '.2f')} | {_fmt(r, 'score_vs_gim', '.4f')} | {paper} |")
    lines += ["", f"Total benchmark time: {rep.get('total_seconds', 0):.0f} s.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
