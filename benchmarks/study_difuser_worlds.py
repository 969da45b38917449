#!/usr/bin/env python3
"""Where does DiFuseR lose spread: its R worlds, or its choice on them? (issue 15, item 6)

    python3 benchmarks/study_difuser_worlds.py OUT [--graph youtube|pokec|livejournal|orkut|custom]
        [--custom NODES,EDGES[,undirected]] [--setting p1] [--refines 0,32,256] [--k 50]
        [--registers 1024] [--sampling keyed] [--imm-eps 0.5] [--oracle-runs 2000] [--backend cuda]

On one stand-in graph of ``bench_difuser.py`` and one weight setting, DiFuseR runs once per
--refines value and IMM once. Every seed set is then scored twice:

- on **DiFuseR's own worlds** (the same registers, keys and seed as its runs): a fresh engine,
  a cascade from each seed in turn, the -1 registers over the worlds. For DiFuseR's own seeds this
  must equal its internal estimate, and the script checks that it does;
- by the **oracle** (Monte-Carlo, common worlds for every seed set).

If IMM's seeds score higher than DiFuseR's on DiFuseR's own worlds, the greedy on those worlds
missed a better set (its candidate filter); if they do not, the worlds themselves are the limit.
Writes OUT/study_difuser_worlds.json and .md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import git_commit  # noqa: E402
from benchmarks.bench_difuser import GRAPHS, SETTINGS, standin_csr, with_weights  # noqa: E402


def spread_on_worlds(graph, seeds, registers: int, sampling: str, seed: int, backend) -> float:
    """The spread of ``seeds`` on DiFuseR's worlds for (registers, sampling, seed): one process, all worlds."""
    from gpucore.im.sketch.driver import make_engine
    from gpucore.im.sketch.hashing import world_keys
    from gpucore.im.sketch.split import DEFAULT_SPLIT, rank_worlds, world_order

    ids = rank_worlds(world_order(seed, registers, sampling, True, DEFAULT_SPLIT), 1, 0)
    engine = make_engine(graph, world_keys(seed, registers, ids, sampling, True), seed, backend)
    engine.fill()
    for s in seeds:
        engine.cascade(int(s))
    return engine.visited_count() / registers


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--graph", default="youtube", choices=(*GRAPHS, "custom"))
    p.add_argument("--custom", default=None, help="NODES,EDGES[,undirected] for --graph custom")
    p.add_argument("--setting", default="p1", choices=tuple(SETTINGS))
    p.add_argument("--refines", default="0,32,256")
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--registers", type=int, default=1024)
    p.add_argument("--sampling", default="keyed", choices=("keyed", "xor"))
    p.add_argument("--imm-eps", type=float, default=0.5)
    p.add_argument("--oracle-runs", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="cuda", choices=("cuda", "cpu"))
    args = p.parse_args(argv)
    os.environ.setdefault("GPUCORE_PROGRESS", "0")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from gpucore.backend import get_backend
    from gpucore.im import imm
    from gpucore.im.sketch import difuser
    from gpucore.oracle import spread

    if args.graph == "custom":
        if not args.custom:
            p.error("--graph custom needs --custom NODES,EDGES[,undirected]")
        parts = args.custom.split(",")
        spec = {"nodes": int(parts[0]), "edges": int(parts[1]), "undirected": parts[2:] == ["undirected"]}
    else:
        spec = GRAPHS[args.graph]
    graph = with_weights(standin_csr(spec["nodes"], spec["edges"], spec["undirected"]), args.graph, args.setting,
                         spec["undirected"])
    be = get_backend(args.backend)
    rows = []
    for refine in [int(r) for r in args.refines.split(",") if r.strip()]:
        res = difuser(graph, args.k, registers=args.registers, sampling=args.sampling, seed=args.seed,
                      refine=refine, backend=be)
        rows.append({"solver": f"difuser-{args.sampling}-refine{refine}", "seconds": res["seconds"],
                     "estimated_spread": res["estimated_spread"], "seed_ids": res["seed_ids"],
                     "refine_probes": res["refine_probes"], "refine_seconds": res["seconds_by_phase"]["refine"]})
    res = imm(graph, args.k, args.imm_eps, "IC", seed=args.seed, backend=be)
    rows.append({"solver": f"imm-eps{args.imm_eps}", "seconds": res["seconds"],
                 "estimated_spread": res["estimated_spread"], "seed_ids": res["seed_ids"]})
    for row in rows:
        row["on_difuser_worlds"] = spread_on_worlds(graph, row["seed_ids"], args.registers, args.sampling,
                                                    args.seed, be)
        sp = spread(graph, row["seed_ids"], "IC", runs=args.oracle_runs, seed=7, backend=be)
        row.update(oracle=sp.mean, oracle_stderr=sp.stderr)
        if row["solver"].startswith("difuser") and not np.isclose(row["on_difuser_worlds"],
                                                                   row["estimated_spread"], rtol=1e-9):
            raise SystemExit(f"study_difuser_worlds: {row['solver']}: its seeds score {row['on_difuser_worlds']} "
                             f"on its worlds, but it estimated {row['estimated_spread']}: not the same worlds")
    report = {"study": "difuser_worlds", "issue": 15, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "commit": git_commit(), "device": be.device_info(), "graph": {"key": args.graph, **spec,
                                                                             "n": graph.n, "m": graph.m},
              "setting": SETTINGS[args.setting], "parameters": vars(args), "rows": rows}
    (out / "study_difuser_worlds.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    lines = [f"# DiFuseR's worlds or its choice? {args.graph} (n {graph.n:,}, m {graph.m:,}), "
             f"{SETTINGS[args.setting]}, k = {args.k}, J = {args.registers}, {args.sampling}",
             "", f"- date {report['date']}; commit {report['commit']}; backend {be.name}; oracle "
             f"{args.oracle_runs} runs", "",
             "| solver | seconds | refine probes (s) | own estimate | on DiFuseR's worlds | oracle |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        probes = f"{r['refine_probes']:,} ({r['refine_seconds']:.1f})" if "refine_probes" in r else "-"
        lines.append(f"| {r['solver']} | {r['seconds']:.2f} | {probes} | {r['estimated_spread']:,.1f} | "
                     f"{r['on_difuser_worlds']:,.1f} | {r['oracle']:,.1f} ± {1.96 * r['oracle_stderr']:,.1f} |")
    (out / "study_difuser_worlds.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
