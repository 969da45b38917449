#!/usr/bin/env python
"""Benchmark MERIT-CPU (update) against PASTI (regenerate every round) on real and generated graphs.

For every graph x model x algorithm it runs ``gpucore amcss`` in a subprocess (one JSON per cell,
a wall-clock limit per cell) and writes, under ``--out``:

- ``graphs/*.gcsr``        the preprocessed graphs (reused when present),
- ``cells/*.json``         the full result of every cell (per realization and round: seeds, cost,
                           newly active, theta, seconds per phase),
- ``bench-amcss.json``     one row per cell + machine facts, and
- ``bench-amcss.md``       the table (times, speedup, costs, rounds, theta per round).

Typical use (this machine, then the 16-core GPU host, whose commands are limited to 10 minutes:
``--budget`` seconds for the whole run, cells that would start later are recorded as skipped)::

    python benchmarks/bench_amcss.py /tmp/bench-amcss --budget 0          # no time limit
    python3 benchmarks/bench_amcss.py "$OUT" --data .shared_data --threads 16 --budget 540

Graphs: the six small SNAP files of the reference mirror (``--data``: a folder holding the files
``config/reference-gpu.yaml`` lists) and a generated graph
(``--big-nodes``/``--big-edges``, preferential attachment, 1M nodes by default). Weighted cascade
p = 1/indeg, eps = 0.5 (the paper's setting); ``--costs degree,unit``: the paper's degree costs
c(u) = 0.01 + 0.01 outdeg and/or unit costs c(u) = 1 (where MERIT can lose: cheap hubs pollute many
sets), one graph file per scheme. ``--paired``: MERIT's cells measure every round both ways
(Update and regeneration on the same collection state, ``gpucore amcss --paired``) and the table
gains the per-round comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import cpu_model, git_commit  # noqa: E402

#: file, short name, undirected, default eta (about 5-10 % of n on the small graphs)
SNAP = [
    ("email-Eu-core.txt.gz", "email-Eu-core", False, 100),
    ("facebook_combined.txt.gz", "ego-Facebook", True, 400),
    ("ca-GrQc.txt.gz", "ca-GrQc", True, 400),
    ("wiki-Vote.txt.gz", "wiki-Vote", False, 500),
    ("nethept.txt.gz", "NetHEPT", True, 1000),
    ("soc-Epinions1.txt.gz", "soc-Epinions1", False, 2000),
]


def gpucore(args, timeout=None, env=None):
    return subprocess.run([sys.executable, "-m", "gpucore", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


#: --costs: cost scheme name -> gpucore preprocess / generate --cost
COSTS = {"degree": "degree", "unit": "const:1"}


def prepare_graphs(opts, out: Path) -> list[dict]:
    gdir = Path(opts.cache)
    gdir.mkdir(parents=True, exist_ok=True)
    graphs = []
    wanted = set(opts.graphs.split(",")) if opts.graphs else None
    costs = [c.strip() for c in opts.costs.split(",") if c.strip()]
    for c in costs:
        if c not in COSTS:
            raise SystemExit(f"bench_amcss: --costs {c!r}: choose from {', '.join(COSTS)}")
    for (fname, name, undirected, eta), cost in [(g, c) for g in SNAP for c in costs]:
        if wanted and name not in wanted:
            continue
        src = Path(opts.data) / fname
        if not src.is_file():
            print(f"skip {name}: {src} not found", file=sys.stderr)
            continue
        dst = gdir / (f"{name}.gcsr" if cost == "degree" else f"{name}-{cost}.gcsr")
        if not dst.is_file():
            args = ["preprocess", src, "-o", dst, "--undirected" if undirected else "--directed", "--cost", COSTS[cost]]
            proc = gpucore(args)
            if proc.returncode:
                raise SystemExit(f"preprocess {name} failed: {proc.stderr}")
        graphs.append({"name": name, "costs": cost, "path": dst, "eta": eta, "batch": opts.batch})
    if opts.big_nodes > 0 and (not wanted or "pa-1M" in wanted or "generated" in wanted):
        name = f"pa-{opts.big_nodes // 1_000_000}M" if opts.big_nodes >= 1_000_000 else f"pa-{opts.big_nodes}"
        for cost in costs:
            dst = gdir / (f"{name}.gcsr" if cost == "degree" else f"{name}-{cost}.gcsr")
            if not dst.is_file():
                proc = gpucore(["generate", "pa", "--nodes", opts.big_nodes, "--edges", opts.big_edges, "--seed", 1,
                                "--cost", COSTS[cost], "-o", dst])
                if proc.returncode:
                    raise SystemExit(f"generate {name} failed: {proc.stderr}")
            graphs.append({"name": name, "costs": cost, "path": dst, "eta": opts.big_eta, "batch": opts.big_batch})
    return graphs


def run_cell(opts, graph: dict, model: str, algorithm: str, out: Path, timeout: float) -> dict:
    cells = out / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    cell = cells / f"{graph['name']}-{graph['costs']}-{model}-{algorithm}.json"
    eta = opts.eta or graph["eta"]
    batch = graph["batch"] if model == "IC" else opts.lt_batch
    args = ["amcss", "--graph", graph["path"], "--model", model, "--eta", eta, "--batch", batch, "--eps", opts.eps,
            "--realizations", opts.realizations, "--seed", opts.seed, "--backend", opts.backend, "-o", cell]
    if algorithm != "MERIT":
        args.append("--no-update")
    elif opts.paired:
        args.append("--paired")
    if opts.threads:
        args += ["--threads", opts.threads]
    row = {"graph": graph["name"], "costs": graph["costs"], "model": model, "algorithm": algorithm, "eta": eta,
           "batch": batch}
    if cell.is_file() and not opts.force:
        result = json.loads(cell.read_text())
    else:
        t0 = time.perf_counter()
        try:
            proc = gpucore(args, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {**row, "status": f"timeout after {timeout:.0f} s"}
        if proc.returncode:
            return {**row, "status": "error", "error": proc.stderr.strip().splitlines()[-1:]}
        row["wall_seconds"] = time.perf_counter() - t0
        result = json.loads(cell.read_text())
    s = result["summary"]
    first = result["realizations"][0]["rounds"]
    row.update(
        status="ok",
        n=result["graph"]["n"], m=result["graph"]["m"],
        threads=result.get("threads"),
        seconds=s["total_seconds"], mean_seconds=s["mean_seconds"],
        seconds_by_phase=s["seconds_by_phase"],
        mean_cost=s["mean_total_cost"], mean_cost_normalized=s["mean_total_cost_normalized"],
        mean_rounds=s["mean_rounds"], reached_all=s["reached_all"], max_theta=s["max_theta"],
        theta_per_round=[rd["theta"] for rd in first],
        trials_per_round=[rd["trials"] for rd in first],
        cost_per_round=[round(rd["cost"], 4) for rd in first],
    )
    if result.get("paired"):
        from gpucore.amcss.paired import summarize

        totals = [summarize(r["rounds"]) for r in result["realizations"]]
        row["paired"] = {key: sum(t.get(key, 0) for t in totals) for key in (
            "rounds", "updated", "regenerated", "update_seconds", "regenerate_seconds", "update_faster")}
    return row


def machine() -> dict:
    mem = 0
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    return {"host": platform.node(), "cpu": cpu_model(), "cores": os.cpu_count(), "memory_gib": round(mem / 2**30, 1),
            "python": platform.python_version(), "commit": git_commit(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def write_markdown(path: Path, facts: dict, rows: list[dict], opts) -> None:
    lines = [
        "# AMCSS on the CPU: MERIT (update) vs PASTI (regenerate)",
        "",
        f"- date: {facts['date']}; commit: `{facts['commit']}`",
        f"- machine: {facts['cpu']}, {facts['cores']} cores, {facts['memory_gib']} GiB; threads used: "
        f"{opts.threads or 'all'}; backend: {opts.backend}",
        f"- setting: weighted cascade p = 1/indeg, costs degree c(u) = 0.01 + 0.01 outdeg or unit c(u) = 1, "
        f"eps = {opts.eps}, "
        f"{opts.realizations} realization(s), seed {opts.seed}; IC batch per graph, LT batch {opts.lt_batch}",
        "- seconds: total over the realizations (in-process, excluding start-up and the warm-up); cost: mean raw total cost",
        "  (normalised = / max cost); theta: collection size per round of realization 0",
        "",
        "- paired (`--paired`): MERIT's rounds after the first measured both ways on the same collection state: "
        "rounds updated / regenerated by MERIT's rule, Update s / regeneration s summed over them, rounds Update "
        "was faster (MERIT s then includes the way not taken)",
        "",
        "| graph | costs | n | m | model | eta | b | MERIT s | PASTI s | speedup | MERIT cost | PASTI cost | rounds M/P "
        "| MERIT update / generate s | paired: upd / regen rounds, Update s / regen s, Update faster | theta per round (MERIT) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by = {(r["graph"], r.get("costs", "degree"), r["model"], r["algorithm"]): r for r in rows}
    seen = []
    for r in rows:
        key = (r["graph"], r.get("costs", "degree"), r["model"])
        if key in seen:
            continue
        seen.append(key)
        m, p = by.get((*key, "MERIT"), {}), by.get((*key, "PASTI"), {})

        def sec(x):
            return f"{x['seconds']:.2f}" if x.get("status") == "ok" else x.get("status", "-")

        speed = f"{p['seconds'] / m['seconds']:.2f}x" if m.get("status") == p.get("status") == "ok" else "-"
        theta = m.get("theta_per_round", [])
        theta_s = ", ".join(str(t) for t in theta[:12]) + (" ..." if len(theta) > 12 else "")
        phases = m.get("seconds_by_phase", {})
        def num(name):
            value = m.get(name, p.get(name))
            return f"{value:,}" if isinstance(value, int) else "-"

        pr = m.get("paired")
        paired = (f"{pr['updated']} / {pr['regenerated']}, {pr['update_seconds']:.2f} / {pr['regenerate_seconds']:.2f}, "
                  f"{pr['update_faster']} of {pr['rounds']}" if pr and pr["rounds"] else "-")
        lines.append(
            f"| {key[0]} | {key[1]} | {num('n')} | {num('m')} | {key[2]} "
            f"| {m.get('eta', p.get('eta'))} | {m.get('batch', p.get('batch'))} | {sec(m)} | {sec(p)} | {speed} "
            f"| {m.get('mean_cost', float('nan')):.3f} | {p.get('mean_cost', float('nan')):.3f} "
            f"| {m.get('mean_rounds', '-')}/{p.get('mean_rounds', '-')} "
            f"| {phases.get('update', 0):.2f} / {phases.get('generate', 0):.2f} | {paired} | {theta_s} |"
        )
    lines += ["", "All cells reached eta on every realization: "
              + ("yes" if all(r.get("reached_all") for r in rows if r.get("status") == "ok") else "NO"), ""]
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=None, help="output folder")
    ap.add_argument("--out", dest="out_opt", default=None, help="output folder (same as the positional)")
    ap.add_argument("--data", default=None,
                    help="folder with the SNAP .txt.gz files config/reference-gpu.yaml lists "
                         "(default $GPUCORE_SHARED_DATA, else the reference mirror .shared_data)")
    ap.add_argument("--cache", default="/tmp/gpucore-bench-amcss", help="folder for the built .gcsr graphs")
    ap.add_argument("--budget", type=float, default=540.0,
                    help="seconds for the whole run; 0 = unlimited (default 540: the GPU host's 10-minute limit)")
    ap.add_argument("--graphs", default="", help="comma-separated subset of graph names (default all)")
    ap.add_argument("--models", default="IC,LT")
    ap.add_argument("--algorithms", default="MERIT,PASTI")
    ap.add_argument("--eta", type=int, default=None, help="override eta for every graph")
    ap.add_argument("--batch", type=int, default=4, help="IC batch on the SNAP graphs (default 4)")
    ap.add_argument("--lt-batch", type=int, default=4, help="LT batch (default 4, the paper's)")
    ap.add_argument("--eps", type=float, default=0.5)
    ap.add_argument("--realizations", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default all cores)")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--big-nodes", type=int, default=1_000_000, help="generated graph size (0: none)")
    ap.add_argument("--big-edges", type=int, default=6_000_000)
    ap.add_argument("--big-eta", type=int, default=2000)
    ap.add_argument("--big-batch", type=int, default=16, help="IC batch on the generated graph (paper: 16)")
    ap.add_argument("--cell-timeout", type=int, default=3600, help="seconds per cell")
    ap.add_argument("--force", action="store_true", help="rerun cells whose JSON exists")
    ap.add_argument("--costs", default="degree,unit", help="seed cost schemes: degree and/or unit (default both)")
    ap.add_argument("--paired", action="store_true",
                    help="MERIT cells: measure every round both ways (Update and regeneration, same collection state)")
    opts = ap.parse_args(argv)
    if not (opts.out or opts.out_opt):
        ap.error("give an output folder")
    out = Path(opts.out or opts.out_opt)
    if opts.data is None:
        env = os.environ.get("GPUCORE_SHARED_DATA")
        candidates = [Path(env)] if env else []
        candidates += [REPO / ".shared_data"]
        opts.data = str(next((c for c in candidates if c.is_dir()), candidates[0]))
    t_start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    facts = machine()
    graphs = prepare_graphs(opts, out)
    rows = []
    for graph in graphs:
        for model in opts.models.split(","):
            for algorithm in opts.algorithms.split(","):
                left = opts.budget - (time.perf_counter() - t_start) if opts.budget > 0 else float("inf")
                if left < 5:
                    row = {"graph": graph["name"], "costs": graph["costs"], "model": model, "algorithm": algorithm,
                           "eta": opts.eta or graph["eta"], "batch": graph["batch"] if model == "IC" else opts.lt_batch,
                           "status": "skipped (time budget)"}
                else:
                    row = run_cell(opts, graph, model, algorithm, out, min(opts.cell_timeout, left))
                rows.append(row)
                print(json.dumps({k: row.get(k) for k in ("graph", "model", "algorithm", "status", "seconds",
                                                          "mean_cost", "mean_rounds", "max_theta")}), flush=True)
                (out / "bench-amcss.json").write_text(json.dumps({"machine": facts, "cells": rows}, indent=2,
                                                                 default=str) + "\n")
                write_markdown(out / "bench-amcss.md", facts, rows, opts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
