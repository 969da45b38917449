#!/usr/bin/env python
"""The reuse bias (issue 13, docs/amcss.md "The reuse bias"): MERIT's cost against PASTI's over
paired worlds.

Realization r of every algorithm runs on the same world (``world_seed_of(seed, r)``) with the same
sample seed, so round 1 is the same for all and the difference of total cost per world removes the
world's own variation. For each graph and each variant it reports the mean relative difference
(MERIT - PASTI) / mean PASTI cost over the worlds both ran, its standard error, the 95 % interval and
the two-sided one-sample t-test p-value, with the seconds of each. Variants: ``MERIT`` (default
settings), ``KEEPALL`` (the paper's Algorithm 1: ``--keep-all`` and no regenerated round,
``--pollution-limit 2``), ``PASTI``.

Worlds are run in chunks of ``--chunk`` per algorithm, in-process, and appended to
``OUT/worlds.jsonl`` (one line per world and algorithm); a rerun resumes where it stopped. Under
``--budget`` seconds a chunk that would not fit (forecast from the last one) is not started:
skipped, never cut. Outputs: ``OUT/bench-merit-bias.{json,md}`` (machine, date, commit).

Graphs: ``ca-GrQc`` (the co-authorship SNAP graph, undirected) and ``wiki-Vote`` (eta 712, 10 % of n),
under ``--data`` and skipped when the file is absent, and ``pa3k`` (a generated 3,000-node
preferential-attachment graph); weighted cascade; ``--costs degree,unit``: the paper's degree costs
and/or unit costs (where MERIT can lose: cheap hubs pollute many sets), one graph file per scheme::

    python benchmarks/bench_merit_bias.py /tmp/bias --data DIR --graphs ca-GrQc --worlds 160 --budget 0
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_amcss import COSTS, machine  # noqa: E402
from benchmarks.bench_common import build_graph  # noqa: E402

#: name -> (build_graph spec, eta, batch)
GRAPHS = {
    "ca-GrQc": ({"file": "ca-GrQc.txt.gz", "undirected": True}, 120, 4),
    "wiki-Vote": ({"file": "wiki-Vote.txt.gz"}, 712, 4),
    "pa3k": ({"nodes": 3000, "edges": 15000}, 100, 4),
}
VARIANTS = {"MERIT": {}, "KEEPALL": {"shrink": False, "pollution_limit": 2.0}, "PASTI": {"update": False}}


def paired_difference(cost: np.ndarray, base: np.ndarray) -> dict:
    """Mean relative cost difference of paired worlds, (cost - base) / mean(base), with its standard
    error, 95 % interval (normal) and two-sided t-test p-value."""
    from scipy import stats

    cost, base = np.asarray(cost, dtype=np.float64), np.asarray(base, dtype=np.float64)
    d = (cost - base) / base.mean()
    mean = float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
    p = float(stats.ttest_1samp(d, 0.0).pvalue) if d.size > 1 and se > 0 else (1.0 if se == 0 else float("nan"))
    return {"worlds": int(d.size), "diff": mean, "se": se, "ci95": [mean - 1.96 * se, mean + 1.96 * se],
            "sd": float(d.std(ddof=1)) if d.size > 1 else float("nan"), "p": p}


def load_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_chunk(graph, name: str, costs: str, variant: str, model: str, eta: int, batch: int, first: int, count: int,
              seed: int, warm_up: bool) -> list[dict]:
    from gpucore.amcss import run_amcss

    res = run_amcss(graph, model=model, eta=eta, batch=batch, eps=0.5, realizations=count, seed=seed,
                    first_realization=first, warm_up=warm_up, **VARIANTS[variant])
    return [{"graph": name, "costs": costs, "model": model, "eta": eta, "batch": batch, "seed": seed, "variant": variant,
             "realization": x["realization"], "cost": x["total_cost"], "seconds": x["seconds"],
             "rounds": len(x["rounds"]), "regenerated": sum(1 for rd in x["rounds"] if rd.get("regenerated"))}
            for x in res["realizations"]]


def summarize(rows: list[dict]) -> list[dict]:
    """One row per (graph, model, variant other than PASTI): the paired difference against PASTI."""
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["graph"], r.get("costs", "degree"), r["model"], r["eta"], r["batch"]), {}).setdefault(r["variant"], {})[
            r["realization"]] = r
    out = []
    for (graph, costs, model, eta, batch), by in cells.items():
        base = by.get("PASTI", {})
        for variant, worlds in by.items():
            ids = sorted(set(worlds) & set(base))
            if variant == "PASTI" or len(ids) < 2:
                continue
            stats = paired_difference([worlds[i]["cost"] for i in ids], [base[i]["cost"] for i in ids])
            out.append({"graph": graph, "costs": costs, "model": model, "eta": eta, "batch": batch, "variant": variant, **stats,
                        "mean_cost": float(np.mean([worlds[i]["cost"] for i in ids])),
                        "pasti_cost": float(np.mean([base[i]["cost"] for i in ids])),
                        "seconds": float(sum(worlds[i]["seconds"] for i in ids)),
                        "pasti_seconds": float(sum(base[i]["seconds"] for i in ids)),
                        "rounds": int(sum(worlds[i]["rounds"] for i in ids)),
                        "regenerated": int(sum(worlds[i]["regenerated"] for i in ids))})
    return out


def write_report(out: Path, facts: dict, summary: list[dict], skipped: list[str]) -> None:
    from gpucore.atomic import atomic_path, write_json

    write_json(out / "bench-merit-bias.json", {"machine": facts, "cells": summary, "skipped": skipped})
    lines = [
        "# The reuse bias: MERIT's cost against PASTI's over paired worlds",
        "",
        f"- date: {facts['date']}; commit: `{facts['commit']}`; machine: {facts['cpu']}, {facts['cores']} cores",
        "- realization r of each algorithm on the same world and sample seed; diff = mean over worlds of "
        "(cost - PASTI cost) / mean PASTI cost; 95 % interval = diff +- 1.96 se; p: two-sided t-test",
        "- weighted cascade, eps 0.5, degree costs c(u) = 0.01 + 0.01 outdeg or unit costs c(u) = 1; seconds: sum over the worlds (in-process, after the warm-up)",
        "",
        "| graph | costs | model | eta | b | variant | worlds | cost | PASTI cost | diff | 95 % interval | sd per world | p "
        "| seconds | PASTI seconds | speed-up | rounds regenerated |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in summary:
        lines.append(
            f"| {c['graph']} | {c['costs']} | {c['model']} | {c['eta']} | {c['batch']} | {c['variant']} | {c['worlds']} "
            f"| {c['mean_cost']:.4f} | {c['pasti_cost']:.4f} | {100 * c['diff']:+.2f} % "
            f"| [{100 * c['ci95'][0]:+.2f}, {100 * c['ci95'][1]:+.2f}] % | {100 * c['sd']:.1f} % | {c['p']:.3g} "
            f"| {c['seconds']:.1f} | {c['pasti_seconds']:.1f} | {c['pasti_seconds'] / c['seconds']:.2f}x "
            f"| {c['regenerated']} of {c['rounds']} |")
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped)]
    with atomic_path(out / "bench-merit-bias.md") as tmp:
        Path(tmp).write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    from gpucore.graph import load_graph
    from gpucore.timing import Phases

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="output folder (worlds.jsonl is resumed)")
    ap.add_argument("--data", default=None, help="folder holding ca-GrQc.txt.gz (the graph is skipped without it)")
    ap.add_argument("--cache", default="/tmp/gpucore-bench-graphs", help="folder for the built graphs")
    ap.add_argument("--graphs", default="ca-GrQc,pa3k")
    ap.add_argument("--variants", default="MERIT,PASTI", help=f"comma-separated, of {','.join(VARIANTS)}")
    ap.add_argument("--model", default="IC")
    ap.add_argument("--costs", default="degree", help="seed cost schemes, comma-separated: degree and/or unit")
    ap.add_argument("--worlds", type=int, default=80)
    ap.add_argument("--chunk", type=int, default=10, help="worlds per run_amcss call")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=0.0, help="seconds for the whole run (0: no limit)")
    opts = ap.parse_args(argv)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "worlds.jsonl"
    variants = [v for v in opts.variants.split(",") if v]
    bad = ([v for v in variants if v not in VARIANTS] + [g for g in opts.graphs.split(",") if g not in GRAPHS]
           + [c for c in opts.costs.split(",") if c not in COSTS])
    if bad:
        ap.error(f"unknown variant, graph or cost scheme: {', '.join(bad)}")
    spent = Phases(("chunks",))  # seconds of the chunks run so far (graph builds are not counted)
    skipped, last_chunk = [], 0.0
    for name, costs in [(g, c) for g in opts.graphs.split(",") for c in opts.costs.split(",")]:
        spec, eta, batch = GRAPHS[name]
        try:
            path = build_graph(name if costs == "degree" else f"{name}-{costs}", {**spec, "cost": COSTS[costs]},
                               Path(opts.data) if opts.data else None, Path(opts.cache))
        except FileNotFoundError as exc:
            skipped.append(f"{name}: {exc}")
            print(f"skip {name}: {exc}", flush=True)
            continue
        graph = load_graph(path)
        warm = True
        for first in range(0, opts.worlds, opts.chunk):
            for variant in variants:
                done = {r["realization"] for r in load_rows(log) if (r["graph"], r.get("costs", "degree"), r["model"],
                                                                     r["variant"], r["seed"])
                        == (name, costs, opts.model, variant, opts.seed)}
                todo = [r for r in range(first, min(first + opts.chunk, opts.worlds)) if r not in done]
                if not todo:
                    continue
                if opts.budget and spent.total + last_chunk > opts.budget:
                    skipped.append(f"{name} {costs} {variant} worlds {todo[0]}-{todo[-1]} (budget)")
                    continue
                before = spent.total
                with spent.phase("chunks"):
                    rows = run_chunk(graph, name, costs, variant, opts.model, eta, batch, todo[0], len(todo), opts.seed,
                                     warm)
                warm = False
                last_chunk = max(last_chunk, spent.total - before)
                with log.open("a") as f:
                    f.writelines(json.dumps(r) + "\n" for r in rows)
                print(f"{name} {costs} {variant} worlds {todo[0]}-{todo[-1]}: {spent.total - before:.1f}s", flush=True)
    summary = summarize(load_rows(log))
    write_report(out, machine(), summary, skipped)
    print((out / "bench-merit-bias.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
