#!/usr/bin/env python3
"""Benchmark of issue 5: MERIT on the GPU vs 16-core PASTI vs GPU regeneration, beta sweep, scale run.

    python3 benchmarks/bench_merit_gpu.py OUT --data .shared_data [--parts compare,beta,scale]
        [--graphs email-Eu-core,...,dblp,youtube,livejournal] [--models IC,LT] [--budget 480]
        [--pasti-budget 300] [--threads 16] [--etas IC=5000:25000,LT=2500:12500]

Parts (each designed to fit one 10-minute command on a 16-core GPU host; ``--budget`` seconds for
the whole invocation, cells that would start later are recorded as skipped):

- ``compare``: per graph and model, GPU MERIT (update), GPU regenerate-every-round (``--no-update``,
  the GAMCSS stand-in) and PASTI on ``--threads`` CPU cores (a subprocess with a time limit: a
  PASTI cell over its limit is marked skipped, and the speedup reported only as the lower bound
  limit / MERIT time, never extrapolated). Same run seed everywhere: the GPU regeneration must
  select exactly PASTI's seeds (``identical``), being the same computation on another backend.
  ``--etas`` replaces each graph's eta by a list per model (compare and beta: one row per eta; e.g. the paper's range
  at LiveJournal size, 5K..25K IC and 2.5K..12.5K LT); ``--pasti-budget 0`` leaves PASTI out.
- ``beta``: GPU MERIT at beta = 1, 2, 4, 8, 16 (paper Figures 9-10), results must not change.
- ``scale`` (``scale-ic``, ``scale-lt``; run first): LiveJournal-size IC eta=25000 b=16 and LT eta=12500 b=4,
  one realization each, with a 64 GiB memory budget (what an 80 GB H100 offers), peak device
  memory reported and every round replayed by the oracle (``gpucore.oracle.replay``).

Per GPU cell: seconds (the solve, graph already on the device), the breakdown generate / update /
other (paper Figures 11-12), arcs probed by Generate + Update (IC: coins drawn, LT: choices drawn)
per second of those phases next to the device's measured copy bandwidth (a 1 GiB device-to-device
copy, bytes read + written), peak device memory, rounds, cost. Graphs: the SNAP files of
``--data`` (the reference mirror, config/reference-gpu.yaml) and preferential-attachment graphs of DBLP size (317,080 nodes, 1,049,866
undirected edges), YouTube size (1,134,890 / 2,987,624 undirected) and LiveJournal size (4,847,571 /
68,993,773 directed arcs), weighted cascade, c(u) = 0.01 + 0.01 outdeg, cached in ``--cache``.
Writes OUT/bench-merit-gpu.json and .md after every cell (a run cut at the command limit keeps
what finished), plus each cell's full result under OUT/cells/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import GRAPH_CACHE, build_graph, cpu_facts, git_commit  # noqa: E402

#: name -> spec; SNAP files (directed as in bench_amcss) and generated graphs
GRAPHS = {
    "email-Eu-core": {"file": "email-Eu-core.txt.gz", "undirected": False, "eta": {"IC": 100, "LT": 100}, "b": 4},
    "ego-Facebook": {"file": "facebook_combined.txt.gz", "undirected": True, "eta": {"IC": 400, "LT": 400}, "b": 4},
    "ca-GrQc": {"file": "ca-GrQc.txt.gz", "undirected": True, "eta": {"IC": 400, "LT": 400}, "b": 4},
    "wiki-Vote": {"file": "wiki-Vote.txt.gz", "undirected": False, "eta": {"IC": 500, "LT": 500}, "b": 4},
    "NetHEPT": {"file": "nethept.txt.gz", "undirected": True, "eta": {"IC": 1000, "LT": 1000}, "b": 4},
    "soc-Epinions1": {"file": "soc-Epinions1.txt.gz", "undirected": False, "eta": {"IC": 2000, "LT": 2000}, "b": 4},
    "dblp": {"title": "DBLP-size PA (317,080 / 1,049,866 undirected)", "nodes": 317_080, "edges": 1_049_866,
             "undirected": True, "eta": {"IC": 1000, "LT": 1000}, "b": 4},
    "youtube": {"title": "YouTube-size PA (1,134,890 / 2,987,624 undirected)", "nodes": 1_134_890,
                "edges": 2_987_624, "undirected": True, "eta": {"IC": 1000, "LT": 1000}, "b": 16},
    "livejournal": {"title": "LiveJournal-size PA (4,847,571 / 68,993,773)", "nodes": 4_847_571,
                    "edges": 68_993_773, "undirected": False, "eta": {"IC": 5000, "LT": 2500}, "b": 16},
}
LT_BATCH = 4
SCALE = {"IC": {"eta": 25000, "b": 16}, "LT": {"eta": 12500, "b": 4}}
SCALE_BUDGET = 64 << 30
BETAS = (1, 2, 4, 8, 16)


def log(msg: str) -> None:
    print(f"[bench_merit_gpu {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def copy_bandwidth() -> dict:
    """Device-to-device copy of 1 GiB, 10 times after a warm-up: bytes read + written per second."""
    import cupy as cp

    n = 1 << 28  # float32 elements = 1 GiB
    a = cp.random.random(n, dtype=cp.float32)
    b = cp.empty_like(a)
    b[...] = a
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    reps = 10
    start.record()
    for _ in range(reps):
        b[...] = a
    stop.record()
    stop.synchronize()
    ms = cp.cuda.get_elapsed_time(start, stop)
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return {"bytes": 2 * 4 * n, "seconds": ms / 1e3 / reps, "gb_per_s": 2 * 4 * n * reps / (ms / 1e3) / 1e9}


def gpu_cell(graph, model: str, eta: int, b: int, update: bool, beta: int | None, args,
             memory_budget: int | None = None, check_replay: bool = False) -> dict:
    from gpucore.amcss import make_primitives, run_amcss

    t = time.perf_counter()
    prims = make_primitives(graph, model, "cuda", memory_budget=memory_budget, beta=beta)
    setup = time.perf_counter() - t
    res = run_amcss(graph, model=model, eta=eta, batch=b, eps=args.eps, realizations=args.realizations, seed=args.seed,
                    update=update, primitives=prims)
    s = res["summary"]
    phases = s["seconds_by_phase"]
    total = s["total_seconds"]
    arcs = prims.arcs_probed()
    sampling = phases["generate"] + phases["update"]
    rec = res["realizations"][0]
    row = {
        "status": "ok", "algorithm": res["algorithm"], "seconds": total, "setup_seconds": setup,
        "generate": phases["generate"], "update": phases["update"],
        "other": max(0.0, total - phases["generate"] - phases["update"]), "select": phases["select"],
        "diffuse": phases["diffuse"], "discover": phases["discover"],
        "cost": s["mean_total_cost"], "cost_normalized": s["mean_total_cost_normalized"],
        "realizations": len(res["realizations"]), "rounds_per_realization": [len(r["rounds"]) for r in res["realizations"]],
        "rounds": len(rec["rounds"]), "seeds": rec["seeds_count"], "active": rec["active"], "reached": rec["reached"],
        "theta_per_round": [rd["theta"] for rd in rec["rounds"]],
        "regenerated_rounds": sum(bool(rd.get("regenerated")) for rd in rec["rounds"][1:]),
        "pollution_per_round": [rd.get("pollution") for rd in rec["rounds"]],
        # the counters cover the last realization only (they restart with each world)
        "arcs_probed": arcs, "arcs_per_second": (arcs["generate"] + arcs["update"]) / sampling
        if sampling > 0 and len(res["realizations"]) == 1 else None,
        "device_memory": res.get("device_memory"), "beta": res.get("beta"), "segments": res.get("segments"),
        "seed_ids": [rd["seed_ids"] for rd in rec["rounds"]],
        "relayouts": prims.stats.get("relayouts"),
    }
    if check_replay:
        from gpucore.oracle import replay

        t = time.perf_counter()
        reps = [replay(graph, r["rounds"], model, r["world_seed"], eta) for r in res["realizations"]]
        bad = [rep for rep in reps if not rep.passed]
        row["replay"] = {"passed": not bad, "realizations": len(reps), "total_active": int(reps[0].total_active),
                         "seconds": time.perf_counter() - t,
                         "first_mismatch": str(bad[0].first_mismatch) if bad else None}
    del prims
    _free_pool()
    return row, res


def _free_pool() -> None:
    try:
        import cupy as cp

        cp.get_default_memory_pool().free_all_blocks()
    except Exception:
        pass


def pasti_cell(path: Path, model: str, eta: int, b: int, args, out: Path, name: str, timeout: float) -> dict:
    cell = out / "cells" / f"{name}-{model}-eta{eta}-PASTI{args.threads}.json"
    if args.pasti_budget <= 0:
        return {"status": "not run (--pasti-budget 0)"}
    cmd = [sys.executable, "-m", "gpucore", "amcss", "--graph", str(path), "--model", model, "--eta", str(eta),
           "--batch", str(b), "--eps", str(args.eps), "--realizations", str(args.realizations), "--seed", str(args.seed),
           "--backend", "cpu", "--no-update", "--threads", str(args.threads), "-o", str(cell)]
    if timeout < 5:
        return {"status": "skipped (time budget)", "limit_seconds": timeout}
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": f"{REPO}:{os.environ.get('PYTHONPATH', '')}"})
    except subprocess.TimeoutExpired:
        return {"status": f"skipped (over its {timeout:.0f} s limit)", "limit_seconds": timeout}
    if proc.returncode:
        return {"status": "error", "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    res = json.loads(cell.read_text())
    s = res["summary"]
    phases = s["seconds_by_phase"]
    rec = res["realizations"][0]
    return {"status": "ok", "algorithm": res["algorithm"], "seconds": s["total_seconds"],
            "wall_seconds": time.perf_counter() - t, "generate": phases["generate"], "update": phases["update"],
            "other": max(0.0, s["total_seconds"] - phases["generate"] - phases["update"]),
            "cost": s["mean_total_cost"], "rounds": len(rec["rounds"]), "reached": rec["reached"],
            "threads": res.get("threads"), "seed_ids": [rd["seed_ids"] for rd in rec["rounds"]]}


class Report:
    def __init__(self, out: Path, facts: dict):
        self.out = out
        self.facts = facts
        self.compare: list[dict] = []
        self.beta: list[dict] = []
        self.scale: list[dict] = []

    def save(self) -> None:
        data = {"facts": self.facts, "compare": self.compare, "beta": self.beta, "scale": self.scale}
        tmp = self.out / "bench-merit-gpu.json.tmp"
        tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
        tmp.replace(self.out / "bench-merit-gpu.json")
        tmp = self.out / "bench-merit-gpu.md.tmp"
        tmp.write_text(self.markdown())
        tmp.replace(self.out / "bench-merit-gpu.md")

    @staticmethod
    def _s(cell: dict | None) -> str:
        if not cell:
            return "-"
        if cell.get("status") != "ok":
            return cell.get("status", "-")
        return f"{cell['seconds']:.2f}"

    @staticmethod
    def _mem(cell: dict | None) -> str:
        dm = (cell or {}).get("device_memory") or {}
        return f"{dm['peak_bytes'] / 2**30:.2f} GiB" if dm.get("peak_bytes") else "-"

    def markdown(self) -> str:
        f = self.facts
        dev = f.get("device", {})
        bw = f.get("copy_bandwidth", {})
        lines = [
            "# MERIT on the GPU (issue 5): GPU MERIT vs PASTI on the CPU vs GPU regeneration",
            "",
            f"- date: {f['date']}; commit: `{f['commit']}`",
            f"- GPU: {dev.get('device', '?')} ({dev.get('sm_count', '?')} SMs, "
            f"{dev.get('device_memory_bytes', 0) / 2**30:.0f} GiB), CUDA runtime {dev.get('runtime_version', '?')}, "
            f"CuPy {dev.get('cupy', '?')}; measured device copy bandwidth {bw.get('gb_per_s', float('nan')):.0f} GB/s "
            "(1 GiB device-to-device, read + write)",
            f"- CPU: {f['cpu_model']} ({f['cpu_count']} cores); PASTI with {f['threads']} threads, Numba {dev.get('numba', '?')}",
            f"- setting: weighted cascade p = 1/indeg, c(u) = 0.01 + 0.01 outdeg, eps = {f['eps']}, "
            f"{f.get('realizations', 1)} realization(s) per cell (scale: each replayed), "
            f"run seed {f['seed']}; seconds = the solve (graph loaded, kernels compiled by a warm-up); "
            "other = select + diffuse + discover + bookkeeping",
            "- arcs/s: arcs probed by Generate + Update (IC: coins drawn, LT: choices drawn) over the seconds of "
            "those two phases",
            "",
        ]
        if self.compare:
            lines += [
                "## GPU MERIT vs PASTI vs GPU regenerate",
                "",
                "| graph | n | m | model | eta | b | MERIT s (gen / upd / other) | regen s (gen / other) | PASTI s "
                "| MERIT vs PASTI | MERIT vs regen | regen == PASTI seeds | cost M / R / P | rounds M / R / P "
                "| MERIT rounds regenerated (pollution limit) | arcs/s (MERIT) | peak mem |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for row in self.compare:
                m, r, p = row.get("merit"), row.get("regen"), row.get("pasti")
                ms = f"{m['seconds']:.2f} ({m['generate']:.2f} / {m['update']:.2f} / {m['other']:.2f})" if m and m.get(
                    "status") == "ok" else self._s(m)
                rs = f"{r['seconds']:.2f} ({r['generate']:.2f} / {r['other']:.2f})" if r and r.get(
                    "status") == "ok" else self._s(r)
                if m and p and m.get("status") == "ok" and p.get("status") == "ok":
                    sp = f"{p['seconds'] / m['seconds']:.1f}x"
                elif m and p and m.get("status") == "ok" and p.get("limit_seconds"):
                    sp = f">= {p['limit_seconds'] / m['seconds']:.1f}x (PASTI over its limit)"
                else:
                    sp = "-"
                sr = f"{r['seconds'] / m['seconds']:.1f}x" if m and r and m.get("status") == r.get("status") == "ok" else "-"
                ident = {True: "yes", False: "NO", None: "-"}[row.get("identical")]
                cost = " / ".join(f"{c['cost']:.2f}" if c and c.get("status") == "ok" else "-" for c in (m, r, p))
                rounds = " / ".join(str(c["rounds"]) if c and c.get("status") == "ok" else "-" for c in (m, r, p))
                aps = f"{m['arcs_per_second'] / 1e9:.2f} G" if m and m.get("arcs_per_second") else "-"
                regen_rounds = (f"{m['regenerated_rounds']} of {m['rounds'] - 1}" if m and m.get("status") == "ok"
                                else "-")
                lines.append(f"| {row['graph']} | {row['n']:,} | {row['m']:,} | {row['model']} | {row['eta']} | {row['b']} "
                             f"| {ms} | {rs} | {self._s(p)} | {sp} | {sr} | {ident} | {cost} | {rounds} | {regen_rounds} | {aps} "
                             f"| {self._mem(m)} |")
            lines.append("")
        if self.beta:
            lines += ["## beta sweep (GPU MERIT; Update in beta groups of 32 x beta threads per block)", "",
                      "| graph | model | eta | b | beta | seconds | update s | generate s | other s | same seeds as beta 8 |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for row in self.beta:
                c = row["cell"]
                if c.get("status") == "ok":
                    lines.append(f"| {row['graph']} | {row['model']} | {row['eta']} | {row['b']} | {row['beta']} "
                                 f"| {c['seconds']:.2f} | {c['update']:.2f} | {c['generate']:.2f} | {c['other']:.2f} "
                                 f"| {({True: 'yes', False: 'NO', None: '-'})[row.get('identical')]} |")
                else:
                    lines.append(f"| {row['graph']} | {row['model']} | {row['eta']} | {row['b']} | {row['beta']} "
                                 f"| {c.get('status')} | - | - | - | - |")
            lines.append("")
        if self.scale:
            lines += ["## Scale (issue 5, item 4): LiveJournal size, one realization, 64 GiB budget", "",
                      "| graph | model | eta | b | seconds (gen / upd / other) | rounds | seeds | active | reached "
                      "| oracle replay | peak device memory | budget | cost |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for row in self.scale:
                c = row["cell"]
                if c.get("status") == "ok":
                    rep = c.get("replay") or {}
                    dm = c.get("device_memory") or {}
                    lines.append(
                        f"| {row['graph']} | {row['model']} | {row['eta']} | {row['b']} | {c['seconds']:.2f} "
                        f"({c['generate']:.2f} / {c['update']:.2f} / {c['other']:.2f}) | {c['rounds']} | {c['seeds']} "
                        f"| {c['active']:,} | {c['reached']} | {'passed' if rep.get('passed') else rep or '-'} "
                        f"| {self._mem(c)} | {dm.get('budget_bytes', 0) / 2**30:.0f} GiB | {c['cost']:.2f} |")
                else:
                    lines.append(f"| {row['graph']} | {row['model']} | {row['eta']} | {row['b']} | {c.get('status')} "
                                 "| - | - | - | - | - | - | - | - |")
            lines.append("")
        return "\n".join(lines) + "\n"


def parse_etas(text: str | None) -> dict[str, list[int]]:
    """``IC=5000:25000,LT=2500`` -> {"IC": [5000, 25000], "LT": [2500]} (empty: each graph's own eta)."""
    out: dict[str, list[int]] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        model, _, values = item.partition("=")
        if model.strip().upper() not in ("IC", "LT") or not values:
            raise SystemExit(f"bench_merit_gpu: --etas item {item!r} is not MODEL=ETA[:ETA...]")
        out[model.strip().upper()] = [int(v) for v in values.split(":")]
    return out


def warm_up() -> None:
    """Compile the kernels and the host diffusion once, so that no cell pays for it."""
    from gpucore.amcss import run_amcss
    from tests.test_amcss_ref import pa_graph

    g = pa_graph(2000, 12000, seed=1)
    for model in ("IC", "LT"):
        for update in (True, False):
            run_amcss(g, model=model, eta=100, batch=4, eps=0.5, realizations=1, seed=0, update=update, backend="cuda")
    _free_pool()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder")
    p.add_argument("--data", default=None,
                   help="folder with the SNAP .txt.gz files config/reference-gpu.yaml lists (default .shared_data)")
    p.add_argument("--cache", default=GRAPH_CACHE, help="folder for the built .gcsr graphs")
    p.add_argument("--parts", default="compare,beta,scale", help="compare, beta, scale (= scale-ic,scale-lt)")
    p.add_argument("--graphs", default=",".join(GRAPHS), help="compare: comma-separated graph names")
    p.add_argument("--beta-graphs", default="youtube,livejournal", help="beta: graphs of the sweep")
    p.add_argument("--models", default="IC,LT")
    p.add_argument("--budget", type=float, default=480.0, help="seconds for this invocation (0: unlimited)")
    p.add_argument("--pasti-budget", type=float, default=300.0, help="seconds per PASTI cell at most")
    p.add_argument("--threads", type=int, default=16, help="PASTI's CPU threads")
    p.add_argument("--etas", default=None, help="compare and beta: eta lists per model, e.g. IC=5000:25000,LT=2500:12500")
    p.add_argument("--eps", type=float, default=0.5)
    p.add_argument("--realizations", type=int, default=1,
                   help="GPU cells: worlds per run (seconds and cost cover all; rounds and seeds are the first's)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    out = Path(args.out)
    (out / "cells").mkdir(parents=True, exist_ok=True)
    shared = Path(args.data) if args.data else None
    if shared is None:
        for cand in (os.environ.get("GPUCORE_SHARED_DATA"), REPO / ".shared_data"):
            if cand and Path(cand).is_dir():
                shared = Path(cand)
                break
    parts = set()
    for part in args.parts.split(","):
        parts |= {"scale-ic", "scale-lt"} if part == "scale" else {part}

    def left() -> float:
        return args.budget - (time.perf_counter() - t0) if args.budget > 0 else float("inf")

    from gpucore.backend import get_backend
    from gpucore.graph import load_graph

    be = get_backend("cuda")
    facts = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": git_commit(),
             "device": be.device_info(), **cpu_facts(), "threads": args.threads, "eps": args.eps, "seed": args.seed,
             "realizations": args.realizations,
             "parts": sorted(parts), "budget_seconds": args.budget}
    facts["copy_bandwidth"] = copy_bandwidth()
    log(f"device {facts['device'].get('device')}: copy bandwidth {facts['copy_bandwidth']['gb_per_s']:.0f} GB/s")
    report = Report(out, facts)
    report.save()
    warm_up()
    log(f"warm-up done at {time.perf_counter() - t0:.0f}s")
    models = [m.strip().upper() for m in args.models.split(",") if m.strip()]
    etas = parse_etas(args.etas)
    cache = Path(args.cache)

    def cell_io(name, model, tag, res):
        (out / "cells" / f"{name}-{model}-{tag}.json").write_text(json.dumps(res, default=str) + "\n")

    # scale first: the cells the issue requires, before the open-ended comparisons
    for model in ("IC", "LT"):
        if f"scale-{model.lower()}" not in parts:
            continue
        name = "livejournal"
        spec = SCALE[model]
        row = {"graph": GRAPHS[name]["title"], "model": model, "eta": spec["eta"], "b": spec["b"]}
        if left() < 30:
            row["cell"] = {"status": "skipped (time budget)"}
        else:
            path = build_graph(name, GRAPHS[name], shared, cache, log)
            graph = load_graph(path)
            try:
                row["cell"], res = gpu_cell(graph, model, spec["eta"], spec["b"], True, None, args,
                                            memory_budget=SCALE_BUDGET, check_replay=True)
                cell_io(name, model, "scale", res)
            except Exception as exc:
                row["cell"] = {"status": f"error: {type(exc).__name__}: {str(exc)[:300]}"}
                _free_pool()
            del graph
        report.scale.append(row)
        log(f"scale {model}: {report._s(row['cell'])}")
        report.save()

    if "compare" in parts:
        for name in [g.strip() for g in args.graphs.split(",") if g.strip()]:
            if left() < 20:
                report.compare.append({"graph": name, "model": "-", "eta": "-", "b": "-", "n": 0, "m": 0,
                                       "merit": {"status": "skipped (time budget)"}})
                report.save()
                continue
            try:
                path = build_graph(name, GRAPHS[name], shared, cache, log)
            except FileNotFoundError as exc:
                log(f"skip {name}: {exc}")
                continue
            graph = load_graph(path)
            for model, eta in [(mo, e) for mo in models for e in etas.get(mo, [GRAPHS[name]["eta"][mo]])]:
                spec = GRAPHS[name]
                b = spec["b"] if model == "IC" else LT_BATCH
                row = {"graph": spec.get("title", name), "key": name, "model": model, "eta": eta, "b": b,
                       "n": int(graph.n), "m": int(graph.m)}
                report.compare.append(row)
                for tag, update in (("merit", True), ("regen", False)):
                    if left() < 10:
                        row[tag] = {"status": "skipped (time budget)"}
                        continue
                    try:
                        row[tag], res = gpu_cell(graph, model, eta, b, update, None, args)
                        cell_io(name, model, f"eta{eta}-gpu-{tag}", res)
                    except Exception as exc:  # keep the other cells
                        row[tag] = {"status": f"error: {type(exc).__name__}: {str(exc)[:300]}"}
                        _free_pool()
                    log(f"{name} {model} {tag}: {report._s(row[tag])}")
                    report.save()
                row["pasti"] = pasti_cell(path, model, eta, b, args, out, name, min(args.pasti_budget, left() - 5))
                r, pa = row.get("regen") or {}, row["pasti"]
                row["identical"] = (r.get("seed_ids") == pa.get("seed_ids")) if (
                    r.get("status") == pa.get("status") == "ok") else None
                log(f"{name} {model} pasti: {report._s(pa)}; identical: {row['identical']}")
                report.save()
            del graph

    if "beta" in parts:
        for name in [g.strip() for g in args.beta_graphs.split(",") if g.strip()]:
            path = build_graph(name, GRAPHS[name], shared, cache, log)
            graph = load_graph(path)
            for model, eta in [(mo, e) for mo in models for e in etas.get(mo, [GRAPHS[name]["eta"][mo]])]:
                spec = GRAPHS[name]
                b = spec["b"] if model == "IC" else LT_BATCH
                ref = None
                for beta in (8, 1, 2, 4, 16):
                    row = {"graph": spec.get("title", name), "model": model, "eta": eta, "b": b, "beta": beta}
                    if left() < 15:
                        row["cell"] = {"status": "skipped (time budget)"}
                    else:
                        try:
                            row["cell"], _res = gpu_cell(graph, model, eta, b, True, beta, args)
                        except Exception as exc:
                            row["cell"] = {"status": f"error: {type(exc).__name__}: {str(exc)[:300]}"}
                            _free_pool()
                    c = row["cell"]
                    if c.get("status") == "ok":
                        ref = c["seed_ids"] if beta == 8 else ref
                        row["identical"] = None if ref is None else c["seed_ids"] == ref
                    report.beta.append(row)
                    log(f"beta {name} {model} {beta}: {report._s(c)}")
                    report.save()
            del graph

    log(f"done in {time.perf_counter() - t0:.0f}s")
    print(report.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
