#!/usr/bin/env python3
"""Several GPUs against one (issue 17, item 8): IMM, structural diversity search and DiFuseR on 1 and 2
GPUs, a table keyed by solver.

    python3 benchmarks/bench_dist.py OUT [--parts imm,sds,difuser] [--graph livejournal] [--samplers gim,fused]
        [--models IC] [--k 50] [--eps 0.05] [--sds-graph livejournal] [--sds-models truss] [--sds-k 4]
        [--sds-t 100] [--stealing dynamic,exhausted,none] [--difuser-graph livejournal] [--difuser-setting p1]
        [--difuser-sampling xor] [--difuser-refine 0] [--registers 1024] [--world-splits fasst,naive]
        [--ranks 1,2] [--repeats 3] [--dense] [--budget 540] [--backend cuda] [--mpiexec PATH]
        [--mpiexec-args "..."] [--cache DIR]

Run it once, without a launcher. It builds the graph (``--graph``: a preferential-attachment
stand-in with the n and m of soc-LiveJournal1, 4,847,571 / 68,993,773, weighted cascade: the
graph ``bench_im.py`` calls ``livejournal``, cached in --cache), then runs itself once per rank
count R of --ranks: ``python3 bench_dist.py --worker ...`` for R = 1 (one process) and
``mpiexec -n R python3 bench_dist.py --worker ...`` for R > 1 (one rank per GPU; NCCL for the
device arrays). Every rank runs the same cells: per sampler (``gim``; ``fused`` when
``gpucore.im.fused`` is installed, else the cell says it is missing) and model, ``imm()`` on the
R ranks, --repeats times (the median kept), with ``--dense`` also the dense greedy (a full
all-reduce of the counts per pick, ``candidates=0``) on R > 1 ranks to compare with the certified
candidates. Rank 0 writes OUT/bench_dist-nR.json; the first run then merges them into
OUT/bench_dist.json and OUT/bench_dist.md (device, date, commit from GPUCORE_COMMIT when there is
no .git).

Structural diversity search (``--parts sds``): ``run_sds`` on the R-MAT stand-in of LiveJournal that
``bench_sds.py`` builds (``--sds-graph livejournal``: 3,997,962 vertices, 34,681,189 edge draws,
cached as ``sds-livejournal``), model truss, k = 4, t = 100: one cell on one GPU (the one-rank
search), and on R > 1 ranks one cell per stealing policy of --stealing (dynamic, exhausted, none),
each against the one-GPU time. Its per-rank record (vertices scored, estimated cost, busy and idle
seconds, steals made and suffered, bytes) is the load of each GPU under each policy.

What is timed ("solve"): for IMM, the sum of rank 0's ``seconds_by_phase`` (the IMM phases, and over
several ranks ``communication``: the collectives, the wait for the slowest rank included), as in
``bench_im.py``; engine set-up and warm-up (NCCL's start included) are outside it. For structural
diversity search, rank 0's whole ``run_sds`` (its ``seconds``: the graph on the device, supports,
bounds, over ranks the cost model and packing, the search, contexts), as in ``bench_sds.py``,
after an untimed solve on a small graph (kernels compiled, NCCL started). Per row: the
solve on each rank count, the speedup over one rank, the communication share, the collectives,
payload bytes and dense all-reduces of rank 0, the per-rank seconds per phase (the load balance),
and whether the answer (seeds, gains, theta, lower bound and its iterations, estimate) is
identical to the one-rank answer: it must be.

DiFuseR (``--parts difuser``): ``difuser()`` on a stand-in of ``bench_difuser.py`` (``--difuser-graph``:
livejournal, 4,847,571 / 68,993,773 arcs, or orkut, 3,072,441 / 117,185,083 edges undirected;
preferential attachment, seed 1, reciprocity 0.3), with the paper's weight setting ``--difuser-setting``
(p1: constant 0.1; p005, p01, n005, u01), built once and cached as ``difuser-GRAPH-SETTING.gcsr``; k =
--k, J = --registers worlds (1024), --difuser-sampling (xor: the paper's, where FASST matters),
--difuser-refine (0: the paper's selection by the sketch score). One cell on one GPU, and on R > 1
ranks one cell per split of --world-splits (fasst, naive), each against the one-GPU time. Its
per-rank record is each rank's local graph (worlds, arcs, vertices with a local arc): the paper's
Tables 5 and 7, naive against FASST; the answer (seeds, selection scores, spread after every seed,
rebuild points) must be the one-GPU answer for both splits. Timed ("solve"): the sum of rank 0's
``seconds_by_phase`` (local graph build, fill, simulate, cascade, select, refine, communication),
after an untimed solve on a small graph.

Budget: --budget seconds for everything (graph build included). Before each run, rank 0 projects
its time from the runs before it (a guess from the graph size for the first) and every rank skips
the run when it would end past the deadline; a cell that could not run once is marked skipped,
never cut. Rows of every solver go in the same table: ``cells()`` lists (solver, ...)
keys, ``run_cell()`` runs one; the merge is keyed by solver. ``--parts`` chooses the solvers (imm
and sds by default; a part that is not asked for builds no graph).

On a machine without mpi4py (the GPU machine), install the carried wheels first, for example
``pip install --no-index --find-links WHEELS --prefix /tmp/mpi mpi4py mpich`` and put
``/tmp/mpi/bin`` on PATH, ``/tmp/mpi/lib`` on LD_LIBRARY_PATH and the site-packages folder under
``/tmp/mpi/lib`` on PYTHONPATH (``docs/multigpu.md``).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import GRAPH_CACHE, build_graph, cpu_facts, git_commit  # noqa: E402
from benchmarks.bench_difuser import GRAPHS as DIFUSER_GRAPHS  # noqa: E402
from benchmarks.bench_difuser import SETTINGS as DIFUSER_SETTINGS  # noqa: E402
from benchmarks.bench_difuser import standin_csr, with_weights  # noqa: E402
from benchmarks.bench_im import GRAPHS  # noqa: E402
from benchmarks.bench_sds import GRAPHS as SDS_GRAPHS  # noqa: E402
from benchmarks.bench_sds import graph_path as sds_graph_path  # noqa: E402

#: graphs besides bench_im's and bench_sds's: small ones for a dry run of the orchestration
EXTRA_GRAPHS = {"smoke": {"title": "PA 20,000 / 200,000 (dry run)", "nodes": 20_000, "edges": 200_000}}
SDS_EXTRA = {"smoke": {"title": "R-MAT 20,000 / 200,000 (dry run)", "generator": "rmat", "nodes": 20_000,
                       "edges": 200_000, "undirected": True}}
#: result fields that must be identical on every rank count (and for every sampler)
SAME = ("seed_ids", "marginal_coverage", "theta", "lower_bound", "lb_iteration", "lb_sets", "lb_iterations",
        "covered", "estimated_spread", "estimate_sets", "rr_elements")
#: structural diversity search: result fields that must be identical on every rank count and policy
SDS_SAME = ("top", "t_score", "ties_at_t", "ties_in_top", "candidates", "must_score")
#: per-rank fields of an sds result kept in the record (the load of each GPU)
SDS_LOAD = ("scored", "sample_vertices", "chunks", "estimated_cost", "busy_seconds", "idle_seconds", "sample_seconds",
            "steals_made", "steals_suffered", "cost_stolen", "cost_lost", "initial_load", "communication")
#: DiFuseR: result fields that must be identical on every rank count and split
DIFUSER_SAME = ("seed_ids", "selection_scores", "spread_after_seed", "estimated_spread", "rebuild_rounds")
#: per-rank fields of a DiFuseR result kept in the record (the local graphs)
DIFUSER_LOAD = ("worlds", "local_arcs", "local_vertices", "build_sweeps", "seconds_by_phase", "peak_device_memory")
PARTS = ("imm", "sds", "difuser")
#: seconds after the deadline the worker may still take to exit (beyond it, it is stopped)
GRACE = 120.0


def log(msg: str) -> None:
    print(f"[bench_dist {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def arguments(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder (bench_dist.json, bench_dist.md, bench_dist-nR.json, logs)")
    p.add_argument("--parts", default="imm,sds", help="comma-separated solvers: imm, sds, difuser")
    p.add_argument("--graph", default="livejournal", choices=sorted({**GRAPHS, **EXTRA_GRAPHS}),
                   help="IMM graph (livejournal: LiveJournal-size PA stand-in)")
    p.add_argument("--data", default=None, help="folder of the SNAP files (for --graph epinions)")
    p.add_argument("--samplers", default="gim,fused", help="comma-separated samplers")
    p.add_argument("--models", default="IC", help="comma-separated models")
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--eps", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sds-graph", default="livejournal", choices=sorted({**SDS_GRAPHS, **SDS_EXTRA}),
                   help="structural diversity graph (livejournal: bench_sds's LiveJournal-size R-MAT)")
    p.add_argument("--sds-models", default="truss", help="comma-separated sds models (comp, core, truss)")
    p.add_argument("--sds-k", type=int, default=4)
    p.add_argument("--sds-t", type=int, default=100)
    p.add_argument("--stealing", default="dynamic,exhausted,none", help="comma-separated stealing policies (sds)")
    p.add_argument("--difuser-graph", default="livejournal", choices=sorted({**DIFUSER_GRAPHS, **EXTRA_GRAPHS}),
                   help="DiFuseR graph (bench_difuser's stand-ins: livejournal, orkut, ...)")
    p.add_argument("--difuser-setting", default="p1", choices=sorted(DIFUSER_SETTINGS),
                   help="DiFuseR edge weights: the paper's setting (p1: constant 0.1)")
    p.add_argument("--difuser-sampling", default="xor", choices=("xor", "keyed"))
    p.add_argument("--difuser-refine", type=int, default=0, help="DiFuseR --refine (0: the paper's selection)")
    p.add_argument("--registers", type=int, default=1024, help="DiFuseR worlds")
    p.add_argument("--rebuild-threshold", type=float, default=0.01, help="DiFuseR rebuild threshold")
    p.add_argument("--world-splits", default="fasst,naive", help="DiFuseR splits on several ranks")
    p.add_argument("--ranks", default="1,2", help="comma-separated rank counts (one GPU each)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dense", action="store_true", help="also the dense greedy (candidates=0) on several ranks")
    p.add_argument("--candidates", type=int, default=None, help="the greedy's candidates (default: imm's)")
    p.add_argument("--budget", type=float, default=540.0,
                   help="seconds for everything (runs that do not fit are skipped)")
    p.add_argument("--backend", default="cuda", choices=("cuda", "cpu"), help="cuda (cpu: a dry run of the script)")
    p.add_argument("--mpiexec", default=None, help="the launcher (default: beside this Python, else on PATH)")
    p.add_argument("--mpiexec-args", default="", help="extra launcher arguments, e.g. '-launcher fork'")
    p.add_argument("--cache", default=GRAPH_CACHE, help="folder for the built .gcsr graphs")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # the part file a rank-0 worker writes
    p.add_argument("--graph-path", default=None, help=argparse.SUPPRESS)
    p.add_argument("--sds-graph-path", default=None, help=argparse.SUPPRESS)
    p.add_argument("--difuser-graph-path", default=None, help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)  # epoch seconds
    p.add_argument("--hint", default=None, help=argparse.SUPPRESS)  # JSON: solver family -> seconds on fewer ranks
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# the worker: every rank runs this under the launcher


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def family_of(solver: str) -> str:
    return next((f for f in ("sds", "difuser") if solver.startswith(f)), "imm")


def difuser_cells(args, ranks: int) -> list[dict]:
    """DiFuseR: one cell on one rank; one per world split on several."""
    if "difuser" not in _list(args.parts):
        return []
    if ranks == 1:
        return [{"solver": "difuser", "model": "IC", "split": "fasst"}]
    return [{"solver": f"difuser-{split}", "model": "IC", "split": split, "reference": "difuser"}
            for split in _list(args.world_splits)]


def cells(args, ranks: int) -> list[dict]:
    """The cells of one rank count, in order: DiFuseR (solver, model, split), structural diversity search
    (solver, model, stealing), then IMM (solver, sampler, model, candidates)."""
    out = difuser_cells(args, ranks)
    if "sds" in _list(args.parts):
        for model in _list(args.sds_models):
            if ranks == 1:
                out.append({"solver": "sds", "model": model, "stealing": None})
            else:
                out += [{"solver": f"sds-{policy}", "model": model, "stealing": policy, "reference": "sds"}
                        for policy in _list(args.stealing)]
    if "imm" not in _list(args.parts):
        return out
    imm = []
    for sampler in [s.strip() for s in args.samplers.split(",") if s.strip()]:
        for model in [m.strip().upper() for m in args.models.split(",") if m.strip()]:
            base = {"solver": f"imm-{sampler}", "sampler": sampler, "model": model, "candidates": args.candidates}
            imm.append(base)
            if args.dense and ranks > 1:
                imm.append({**base, "solver": f"imm-{sampler}-dense", "candidates": 0, "reference": base["solver"]})
    return imm + out


def small_sds_graph():
    """Two K_5 sharing a vertex, and a path: the untimed warm-up of the sds kernels."""
    from gpucore.graph import from_arcs

    edges = [(a, b) for comp in ((0, 1, 2, 3, 4), (4, 5, 6, 7, 8)) for i, a in enumerate(comp) for b in comp[i + 1:]]
    edges += [(8, 9), (9, 10)]
    src, dst = zip(*edges)
    return from_arcs(11, src, dst, 0.1, directed=False, name="warm-up")


def sampler_missing(sampler: str) -> str | None:
    import importlib.util

    from gpucore.im.engine import SAMPLERS

    module = SAMPLERS.get(sampler, (None,))[0]
    if module is None:
        return f"unknown sampler {sampler!r}"
    return None if importlib.util.find_spec(module) else f"{module} is not installed"


def sds_answer(res) -> dict:
    """The fields of an sds result that every rank count and policy must reproduce, with the top t as (vertex,
    score) pairs and their contexts as one SHA-256 (the contexts of 100 tied vertices take megabytes of JSON)."""
    answer = {key: res[key] for key in SDS_SAME if key != "top"}
    answer["top"] = [[int(e["vertex"]), int(e["score"])] for e in res["top"]]
    contexts = json.dumps([e["contexts"] for e in res["top"]], sort_keys=True).encode()
    answer["contexts_sha256"] = hashlib.sha256(contexts).hexdigest()
    return answer


def run_sds_cell(graph, cell: dict, args, comm) -> dict:
    """One run_sds() of a cell on ``comm``: the answer, the times, the ranks' record (the GPUs' load)."""
    from gpucore.sds import run_sds

    options = {} if cell["stealing"] is None else {"stealing": cell["stealing"]}
    t = time.perf_counter()
    res = run_sds(graph, cell["model"], args.sds_k, args.sds_t, backend=args.backend, comm=comm, **options)
    wall = time.perf_counter() - t
    phases = res["seconds_by_phase"]
    return {
        "answer": sds_answer(res),
        "solve": res["seconds"],
        "wall_seconds": wall,
        "seconds_by_phase": phases,
        "communication_seconds": phases.get("communication", 0.0),
        "idle_seconds": phases.get("idle", 0.0),
        "per_rank": {key: res["per_rank"][key] for key in SDS_LOAD + ("seconds_by_phase",) if key in res["per_rank"]},
        "scored": res["scored"],
        "stop": res["stop"],
        "cost_model": res.get("cost_model"),
        "peak_device_memory": res["peak_device_memory"],
    }


def run_difuser_cell(graph, cell: dict, args, comm) -> dict:
    """One difuser() run of a cell on ``comm``: the answer, the times, the ranks' local graphs."""
    from gpucore.im.sketch import difuser
    from gpucore.timing import Phases

    clock = Phases(("wall",))
    with clock.phase("wall"):
        res = difuser(graph, args.k, registers=args.registers, rebuild_threshold=args.rebuild_threshold,
                      sampling=args.difuser_sampling, refine=args.difuser_refine, world_split=cell["split"],
                      seed=args.seed, backend=args.backend, comm=comm)
    phases = res["seconds_by_phase"]
    answer = {key: res[key] for key in DIFUSER_SAME}
    answer["rebuilds_after"] = [b["after_seed"] for b in res["builds"]]
    return {
        "answer": answer,
        "solve": sum(phases.values()),
        "wall_seconds": clock.seconds["wall"],
        "seconds_by_phase": phases,
        "communication_seconds": phases.get("communication", 0.0),
        "communication": res.get("communication"),
        "per_rank": {key: res["per_rank"][key] for key in DIFUSER_LOAD},
        "simulate_sweeps": res["simulate_sweeps"],
        "peak_device_memory": res["peak_device_memory"],
    }


def run_cell(graph, cell: dict, args, comm) -> dict:
    """One imm() run of a cell on ``comm``: the answer, the times, the ranks' record."""
    from gpucore.im import imm

    options = {} if cell["candidates"] is None else {"candidates": cell["candidates"]}
    t = time.perf_counter()
    res = imm(graph, args.k, args.eps, cell["model"], seed=args.seed, backend=args.backend, sampler=cell["sampler"],
              comm=comm, **options)
    wall = time.perf_counter() - t
    phases = res["seconds_by_phase"]
    return {
        "answer": {key: res[key] for key in SAME},
        "solve": sum(phases.values()),
        "wall_seconds": wall,
        "warm_up_seconds": res["warm_up_seconds"],
        "seconds_by_phase": phases,
        "communication_seconds": phases.get("communication", 0.0),
        "communication": res.get("communication"),
        "per_rank": res["per_rank"],
        "estimated_spread_stderr": res["estimated_spread_stderr"],
        "peak_device_memory": res["peak_device_memory"],
    }


def worker(args) -> int:
    from gpucore.dist import init

    comm = init()  # first: each rank takes its GPU before any CuPy work
    from gpucore.atomic import write_json
    from gpucore.backend import get_backend
    from gpucore.graph import from_arcs, load_graph

    be = get_backend(args.backend)
    graphs = {"imm": load_graph(args.graph_path) if args.graph_path else None,
              "sds": load_graph(args.sds_graph_path) if args.sds_graph_path else None,
              "difuser": load_graph(args.difuser_graph_path) if args.difuser_graph_path else None}
    devices = comm.allgather(be.device_info())
    part = {"ranks": comm.size, "devices": devices, "cells": []}

    def save():
        if comm.is_root:
            write_json(args.worker, part)

    def fits(seconds: float) -> bool:  # rank 0 decides for every rank
        return bool(comm.bcast(time.time() + seconds <= args.deadline if comm.is_root else None))

    chain = from_arcs(64, list(range(63)), list(range(1, 64)), 0.5)
    tiny = {"imm": chain, "sds": small_sds_graph(), "difuser": chain}
    runners = {"imm": run_cell, "sds": run_sds_cell, "difuser": run_difuser_cell}
    last_wall = json.loads(args.hint) if args.hint else {}  # per solver family: the longest run on fewer ranks
    for cell in cells(args, comm.size):
        family = family_of(cell["solver"])
        graph, run = graphs[family], runners[family]
        first_guess = 20.0 + graph.m / (2e6 if family == "imm" else 1e6)  # the first run: set-up, warm-up, solve
        record = dict(cell)
        part["cells"].append(record)
        missing = sampler_missing(cell["sampler"]) if family == "imm" else None
        if missing:
            record["skipped"] = missing
            save()
            continue
        runs = []
        for _ in range(args.repeats):
            need = 1.2 * (runs[-1]["wall_seconds"] if runs else (last_wall.get(family) or first_guess))
            if not fits(need):
                break
            if not runs:  # kernels compiled, NCCL started: untimed
                run(tiny[family], cell, argparse.Namespace(**dict(args.__dict__, k=2, eps=0.5, sds_k=3, sds_t=5)),
                    comm)
            runs.append(run(graph, cell, args, comm))
        if not runs:
            record["skipped"] = "the budget could not hold one run"
        else:
            last_wall[family] = runs[-1]["wall_seconds"]
            best = sorted(runs, key=lambda r: r["solve"])[(len(runs) - 1) // 2]  # of two runs, the faster
            record.update(best)
            record["solve_all"] = [r["solve"] for r in runs]
            record["repeats"] = len(runs)
            record["same_answer_in_repeats"] = all(r["answer"] == runs[0]["answer"] for r in runs)
            if comm.is_root:
                what = {"imm": lambda: f"theta {best['answer']['theta']:,}",
                        "sds": lambda: f"t-th score {best['answer']['t_score']}, scored {best['scored']:,}",
                        "difuser": lambda: f"spread {best['answer']['estimated_spread']:.1f}, local arcs "
                                           f"{best['per_rank']['local_arcs']}"}[family]()
                log(f"{comm.size} rank(s) {cell['solver']} {cell['model']}: solve {best['solve']:.3f}s "
                    f"(communication {best['communication_seconds']:.3f}s), {what}")
        save()
    save()
    return 0


# ---------------------------------------------------------------------------------------------
# the driver: builds the graph, starts the workers, merges their parts


def find_mpiexec(given: str | None) -> str | None:
    if given:
        return given
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def launch(args, ranks: int, paths: dict, part: Path, deadline: float, out: Path, hint: dict) -> str | None:
    """Run the worker on ``ranks`` ranks; None, or why its part is missing."""
    cmd = [sys.executable, str(Path(__file__).resolve()), str(out), "--worker", str(part), "--deadline", repr(deadline)]
    for family, flag in (("imm", "--graph-path"), ("sds", "--sds-graph-path"), ("difuser", "--difuser-graph-path")):
        if paths.get(family):
            cmd += [flag, str(paths[family])]
    if hint:
        cmd += ["--hint", json.dumps(hint)]
    for name in ("parts", "samplers", "models", "k", "eps", "seed", "sds_models", "sds_k", "sds_t", "stealing",
                 "difuser_sampling", "difuser_refine", "registers", "rebuild_threshold", "world_splits", "repeats",
                 "backend"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.dense:
        cmd.append("--dense")
    if args.candidates is not None:
        cmd += ["--candidates", str(args.candidates)]
    if ranks > 1:
        mpiexec = find_mpiexec(args.mpiexec)
        if mpiexec is None:
            return "no mpiexec (install mpi4py and mpich, or pass --mpiexec)"
        cmd = [mpiexec, *shlex.split(args.mpiexec_args), "-n", str(ranks), *cmd]
    env = {**os.environ, "GPUCORE_PROGRESS": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    logfile = out / f"bench_dist-n{ranks}.log"
    log(f"{ranks} rank(s): {' '.join(cmd)} (log {logfile.name})")
    with open(logfile, "w") as fh:
        try:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                  timeout=max(10.0, deadline - time.time() + GRACE))
        except subprocess.TimeoutExpired:
            return f"stopped {GRACE:.0f}s after the deadline (see {logfile.name})"
    if proc.returncode != 0:
        tail = logfile.read_text().strip().splitlines()[-3:]
        return f"exit {proc.returncode}: {' / '.join(tail)}"
    return None if part.exists() else "the worker wrote no result"


def _describe(cell: dict) -> dict:
    """What a row of this solver shows besides its times."""
    if cell["solver"].startswith("sds"):
        return {"family": "sds", "stealing": cell["stealing"]}
    if cell["solver"].startswith("difuser"):
        return {"family": "difuser", "split": cell["split"]}
    return {"family": "imm", "sampler": cell["sampler"],
            "greedy": "dense all-reduce per pick" if cell["candidates"] == 0 else "certified candidates"}


def merge(args, parts: dict[int, dict], failures: dict[int, str], graphs: dict) -> dict:
    """One row per (solver, model): each rank count's record, the speedups and the identity checks."""
    rows = {}
    for ranks, part in sorted(parts.items()):
        for cell in part["cells"]:
            row = rows.setdefault((cell["solver"], cell["model"]), {
                "solver": cell["solver"], "model": cell["model"], "reference": cell.get("reference", cell["solver"]),
                **_describe(cell), "by_ranks": {}})
            row["by_ranks"][str(ranks)] = {k: v for k, v in cell.items()
                                           if k not in ("solver", "sampler", "model", "reference", "stealing", "split")}
    gim_answers = {}
    for (solver, model), row in rows.items():
        base = next((r["by_ranks"].get("1") for (s, m), r in rows.items() if s == row["reference"] and m == model),
                    None)
        for ranks, rec in row["by_ranks"].items():
            if base is None or "answer" not in base or "answer" not in rec:
                continue
            rec["speedup"] = base["solve"] / rec["solve"] if rec["solve"] > 0 else None
            rec["communication_share"] = rec["communication_seconds"] / rec["solve"] if rec["solve"] > 0 else None
            rec["identical_to_one_rank"] = rec["answer"] == base["answer"]
        if row.get("sampler") == "gim" and "1" in row["by_ranks"] and "answer" in row["by_ranks"]["1"]:
            gim_answers[model] = row["by_ranks"]["1"]["answer"]
    for (solver, model), row in rows.items():
        rec = row["by_ranks"].get("1") or {}
        if row["family"] == "imm" and row["sampler"] != "gim" and "answer" in rec and model in gim_answers:
            row["identical_to_gim"] = rec["answer"] == gim_answers[model]
    rep = {
        "benchmark": "bench_dist", "issue": "17 (items 3, 4, 5 and 8)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "commit": git_commit(),
        "devices": {str(r): p.get("devices") for r, p in parts.items()}, "host": cpu_facts(),
        "parameters": {"parts": args.parts, "k": args.k, "eps": args.eps, "seed": args.seed,
                       "repeats": args.repeats, "ranks": args.ranks, "budget": args.budget, "backend": args.backend,
                       "candidates": args.candidates, "sds_k": args.sds_k, "sds_t": args.sds_t,
                       "stealing": args.stealing, "registers": args.registers,
                       "difuser_sampling": args.difuser_sampling, "difuser_refine": args.difuser_refine,
                       "rebuild_threshold": args.rebuild_threshold, "world_splits": args.world_splits},
        "timed": {"imm": "solve = sum of rank 0's seconds_by_phase (IMM phases + communication); set-up and warm-up "
                         "excluded",
                  "difuser": "solve = sum of rank 0's seconds_by_phase (local graph, fill, simulate, cascade, select, "
                             "refine, communication); warm-up on a small graph excluded",
                  "sds": "solve = rank 0's run_sds seconds (graph on the device, supports, bounds, cost model and "
                         "packing over ranks, search, contexts); warm-up on a small graph excluded"},
        "failures": {str(r): why for r, why in failures.items()},
        "rows": list(rows.values()),
    }
    if graphs.get("imm") is not None:
        g = graphs["imm"]
        rep["graph"] = {"name": args.graph, "title": {**GRAPHS, **EXTRA_GRAPHS}[args.graph]["title"], "n": g.n,
                        "m": g.m, "weights": "wc"}
    if graphs.get("difuser") is not None:
        g = graphs["difuser"]
        rep["difuser_graph"] = {"name": args.difuser_graph,
                                "title": {**DIFUSER_GRAPHS, **EXTRA_GRAPHS}[args.difuser_graph]["title"],
                                "n": g.n, "m": g.m, "weights": DIFUSER_SETTINGS[args.difuser_setting]}
    if graphs.get("sds") is not None:
        g = graphs["sds"]
        rep["sds_graph"] = {"name": args.sds_graph, "title": {**SDS_GRAPHS, **SDS_EXTRA}[args.sds_graph]["title"],
                            "n": g.n,
                            "undirected_edges": g.m // 2}
    return rep


def _fmt(x, spec: str, missing: str = "-") -> str:
    return missing if x is None else format(x, spec)


def _gpu_columns(counts: list[int]) -> str:
    return " | ".join(f"{r} GPU{'s' if r > 1 else ''} s" for r in counts)


def _times(recs: dict, counts: list[int]) -> list[str]:
    return [(_fmt(recs[str(r)].get("solve"), ".3f", recs[str(r)].get("skipped", "-")) if str(r) in recs else "")
            for r in counts]


def _identical(row: dict) -> str:
    recs = row["by_ranks"]
    ident = [recs[r].get("identical_to_one_rank") for r in recs if r != "1"]
    if "identical_to_gim" in row:
        ident.append(row["identical_to_gim"])
    return "-" if not ident or None in ident else ("yes" if all(ident) else "NO")


def markdown(rep: dict) -> str:
    counts = sorted({int(r) for row in rep["rows"] for r in row["by_ranks"]}) or [1]
    widest = max(rep["devices"].items(), key=lambda item: int(item[0]), default=("0", [{}]))[1] or [{}]
    dev = widest[0]
    where = ", ".join(f"rank {r}: device {d.get('device_id', '-')}" for r, d in enumerate(widest))
    pr = rep["parameters"]
    lines = [
        f"# Several GPUs: IMM, structural diversity search and DiFuseR on {', '.join(map(str, counts))} GPUs "
        "(issues 17 and 18)",
        "",
        f"- date: {rep['date']}; commit: {rep['commit']}",
        f"- device: {dev.get('device', dev.get('backend'))} ({where}; CuPy {dev.get('cupy', '-')}); "
        f"host: {rep['host']['cpu_model']} ({rep['host']['cpu_count']} cores); median of up to {pr['repeats']} runs",
    ]
    imm = [row for row in rep["rows"] if row["family"] == "imm"]
    if imm:
        g = rep["graph"]
        lines += [
            "", "## IMM", "",
            f"- graph: {g['title']} (n = {g['n']:,}, m = {g['m']:,}, weighted cascade); k = {pr['k']}, "
            f"eps = {pr['eps']}, run seed {pr['seed']}",
            f"- timed: {rep['timed']['imm']}",
            "",
            "| solver | model | greedy | theta | " + _gpu_columns(counts)
            + f" | speedup ({counts[-1]} vs 1) | communication share | dense all-reduces / picks "
            "| payload bytes (rank 0) | identical |",
            "|---|---|---|---|" + "---|" * len(counts) + "---|---|---|---|---|",
        ]
        for row in imm:
            recs = row["by_ranks"]
            top = recs.get(str(counts[-1]), {})
            theta = next((r["answer"]["theta"] for r in recs.values() if "answer" in r), None)
            comm = top.get("communication") or {}
            lines.append(
                f"| {row['solver']} | {row['model']} | {row['greedy']} | {_fmt(theta, ',')} | "
                + " | ".join(_times(recs, counts))
                + f" | {_fmt(top.get('speedup'), '.2f')} | {_fmt(top.get('communication_share'), '.1%')} | "
                f"{comm.get('dense_reductions', '-')} / {comm.get('picks', '-')} | {_fmt(comm.get('bytes'), ',')} | "
                f"{_identical(row)} |")
        lines += ["", "Seconds per phase of each rank (median run; the spread between ranks is the load imbalance):",
                  "", "| solver | model | ranks | rank | " + " | ".join(PHASE_NAMES) + " | RR sets held |",
                  "|---|---|---|---|" + "---|" * (len(PHASE_NAMES) + 1)]
        for row in imm:
            for ranks, rec in sorted(row["by_ranks"].items()):
                per = rec.get("per_rank")
                if not per:
                    continue
                for r, (secs, sets) in enumerate(zip(per["seconds_by_phase"], per["selection_sets"])):
                    lines.append(f"| {row['solver']} | {row['model']} | {ranks} | {r} | "
                                 + " | ".join(f"{secs.get(p, 0.0):.3f}" for p in PHASE_NAMES) + f" | {sets:,} |")
    sds = [row for row in rep["rows"] if row["family"] == "sds"]
    if sds:
        lines += _sds_markdown(rep, sds, counts)
    difuser = [row for row in rep["rows"] if row["family"] == "difuser"]
    if difuser:
        lines += _difuser_markdown(rep, difuser, counts)
    if rep["failures"]:
        lines += ["", "Runs that did not complete: "
                  + "; ".join(f"{r} rank(s): {why}" for r, why in rep["failures"].items())]
    lines += ["", f"Total benchmark time: {rep.get('total_seconds', 0):.0f} s.", ""]
    return "\n".join(lines)


def _sds_markdown(rep: dict, rows: list[dict], counts: list[int]) -> list[str]:
    g, pr = rep["sds_graph"], rep["parameters"]
    lines = [
        "", f"## Structural diversity search (k = {pr['sds_k']}, t = {pr['sds_t']})", "",
        f"- graph: {g['title']} (n = {g['n']:,}, {g['undirected_edges']:,} undirected edges)",
        f"- timed: {rep['timed']['sds']}",
        "- one GPU: the one-rank search (batches in bound order); several: cost model, packing, chunks claimed from "
        "rank 0's table under the stealing policy",
        "",
        "| model | stealing | " + _gpu_columns(counts)
        + f" | speedup ({counts[-1]} vs 1) | communication share | idle (rank 0 / others) s | steals | scored | "
        "t-th score | identical |",
        "|---|---|" + "---|" * len(counts) + "---|---|---|---|---|---|---|",
    ]
    for row in rows:
        recs = row["by_ranks"]
        top = recs.get(str(counts[-1]), {}) if row["stealing"] else recs.get("1", {})
        per = top.get("per_rank") or {}
        idle = per.get("idle_seconds") or []
        steals = sum(per.get("steals_made") or [0])
        t_score = next((r["answer"]["t_score"] for r in recs.values() if "answer" in r), None)
        lines.append(
            f"| {row['model']} | {row['stealing'] or '(one rank)'} | " + " | ".join(_times(recs, counts))
            + f" | {_fmt(top.get('speedup'), '.2f')} | {_fmt(top.get('communication_share'), '.1%')} | "
            f"{' / '.join(f'{x:.2f}' for x in idle) or '-'} | {steals} | {_fmt(top.get('scored'), ',')} | "
            f"{_fmt(t_score, 'd')} | {_identical(row)} |")
    lines += ["", "Load of each GPU (median run): vertices scored (the cost-model sample among them), chunks claimed, "
              "estimated cost of the initial packing and of what the rank claimed, seconds busy scoring, seconds idle "
              "at the end, steals, bytes sent and received:", "",
              "| model | stealing | ranks | rank | scored (sample) | chunks | packed est. s | claimed est. s | busy s "
              "| idle s | steals made / suffered | bytes |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for ranks, rec in sorted(row["by_ranks"].items()):
            per = rec.get("per_rank")
            if not per:
                continue
            for r in range(len(per["scored"])):
                def get(key, spec, r=r, per=per):
                    values = per.get(key)
                    return _fmt(values[r] if values else None, spec)

                comm = (per.get("communication") or [{}] * len(per["scored"]))[r]
                lines.append(
                    f"| {row['model']} | {row['stealing'] or '-'} | {ranks} | {r} | {get('scored', ',')} "
                    f"({get('sample_vertices', ',')}) | {get('chunks', ',')} | {get('initial_load', '.2f')} | "
                    f"{get('estimated_cost', '.2f')} | {get('busy_seconds', '.3f')} | {get('idle_seconds', '.3f')} | "
                    f"{get('steals_made', 'd')} / {get('steals_suffered', 'd')} | {_fmt(comm.get('bytes'), ',')} |")
    model = next((rec.get("cost_model") for row in rows for rec in row["by_ranks"].values() if rec.get("cost_model")),
                 None)
    if model:
        lines += ["", f"Cost model (rank 0's fit, {model['sample_vertices']:,} vertices in {model['sample_batches']} "
                      f"timed batches, {model['sample_seconds']:.2f} s): c(v) = "
                  + " + ".join(f"{c:.3g} {name}" for name, c in model["coefficients"].items())
                  + f" s, per batch {model['intercept_per_batch']:.3g} s, R^2 = {_fmt(model['r2'], '.3f')}"
                  + (f" ({'; '.join(model['notes'])})" if model["notes"] else "")]
    return lines


def _difuser_markdown(rep: dict, rows: list[dict], counts: list[int]) -> list[str]:
    g, pr = rep["difuser_graph"], rep["parameters"]
    lines = [
        "", "## DiFuseR", "",
        f"- graph: {g['title']} (n = {g['n']:,}, m = {g['m']:,} arcs, weights {g['weights']}); k = {pr['k']}, "
        f"J = {pr['registers']} worlds, {pr['difuser_sampling']} sampling, refine {pr['difuser_refine']}, rebuild "
        f"threshold {pr['rebuild_threshold']}, run seed {pr['seed']}",
        f"- timed: {rep['timed']['difuser']}",
        "- split: how the worlds are dealt to the ranks (fasst: by sorted world numbers; naive: in draw order); "
        "the answer must not change",
        "",
        "| split | " + _gpu_columns(counts) + f" | speedup ({counts[-1]} vs 1) | communication share | collectives "
        "| payload bytes (rank 0) | spread | largest local graph (share of m) | arc copies | arcs on 0 / 1 / 2 GPUs "
        "| identical |",
        "|---|" + "---|" * len(counts) + "---|---|---|---|---|---|---|---|---|",
    ]
    one = next((r["by_ranks"].get("1", {}).get("per_rank") for r in rows if r["solver"] == "difuser"), None)
    union = one["local_arcs"][0] if one else None  # arcs live in at least one world: on some rank
    for row in rows:
        recs = row["by_ranks"]
        top = recs.get(str(counts[-1]), {}) if row["solver"] != "difuser" else recs.get("1", {})
        comm = top.get("communication") or {}
        arcs = (top.get("per_rank") or {}).get("local_arcs") or []
        spread = next((r["answer"]["estimated_spread"] for r in recs.values() if "answer" in r), None)
        copies = "-"
        if len(arcs) == 2 and union is not None:  # the paper's Table 5 on two ranks, from the union's size
            twice = sum(arcs) - union
            copies = " / ".join(f"{x / g['m']:.0%}" for x in (g["m"] - union, union - twice, twice))
        lines.append(
            f"| {row['split'] if row['solver'] != 'difuser' else '(one rank)'} | " + " | ".join(_times(recs, counts))
            + f" | {_fmt(top.get('speedup'), '.2f')} | {_fmt(top.get('communication_share'), '.1%')} | "
            f"{comm.get('collectives', '-')} | {_fmt(comm.get('bytes'), ',')} | {_fmt(spread, '.1f')} | "
            f"{_fmt(max(arcs) / g['m'] if arcs else None, '.1%')} | {_fmt(sum(arcs) / g['m'] if arcs else None, '.2f')} "
            f"| {copies} | {_identical(row)} |")
    lines += ["", "Arc copies: the ranks' local arcs over m (the paper's Table 5 averages); arcs on 0 / 1 / 2 GPUs: "
              "the share of m on no rank (live in no world: m minus the one-rank local graph), on one, on both "
              "(the paper's Table 5 for two devices); largest local graph: its Table 7.",
              "", "Local graph of each rank (the paper's Tables 5 and 7: arcs live in at least one of the rank's "
              "worlds; vertices with a local arc, in or out) and its seconds per phase:", "",
              "| split | ranks | rank | worlds | local arcs | share of m | local vertices | "
              + " | ".join(DIFUSER_PHASES) + " |",
              "|---|---|---|---|---|---|---|" + "---|" * len(DIFUSER_PHASES)]
    for row in rows:
        for ranks, rec in sorted(row["by_ranks"].items()):
            per = rec.get("per_rank")
            if not per:
                continue
            for r, (worlds, arcs, verts, secs) in enumerate(zip(per["worlds"], per["local_arcs"],
                                                                per["local_vertices"], per["seconds_by_phase"])):
                lines.append(f"| {row['split'] if ranks != '1' else '-'} | {ranks} | {r} | {worlds} | {arcs:,} | "
                             f"{arcs / g['m']:.1%} | {verts:,} | "
                             + " | ".join(f"{secs.get(p, 0.0):.3f}" for p in DIFUSER_PHASES) + " |")
    return lines


DIFUSER_PHASES = ("local_graph", "fill", "simulate", "cascade", "select", "refine", "communication")
PHASE_NAMES = ("lb_sampling", "lb_selection", "final_sampling", "final_selection", "estimate", "communication")


def difuser_graph_path(name: str, setting: str, cache: Path) -> Path:
    """``cache/difuser-NAME-SETTING.gcsr``, built once: bench_difuser's stand-in with the setting's weights."""
    from gpucore.graph.gcsr import ARRAY_ORDER, write_gcsr
    from gpucore.timing import Phases

    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"difuser-{name}-{setting}.gcsr"
    if out.exists():
        return out
    spec = {**DIFUSER_GRAPHS, **EXTRA_GRAPHS}[name]
    undirected = bool(spec.get("undirected", False))
    clock = Phases(("build",))
    with clock.phase("build"):
        graph = with_weights(standin_csr(spec["nodes"], spec["edges"], undirected), name, setting, undirected)
        write_gcsr(out, graph.n, graph.m, {key: getattr(graph, key) for key in ARRAY_ORDER}, dict(graph.meta),
                   directed=graph.directed, cost_scale=graph.cost_scale)
    log(f"built {out.name} ({graph.n:,} nodes, {graph.m:,} arcs) in {clock.seconds['build']:.1f}s")
    return out


def driver(args) -> int:
    started = time.time()
    deadline = started + args.budget
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GPUCORE_PROGRESS", "0")
    from gpucore.atomic import atomic_path, write_json
    from gpucore.graph import load_graph

    asked = _list(args.parts)
    if not asked or set(asked) - set(PARTS):
        raise SystemExit(f"--parts {args.parts!r}: choose among {', '.join(PARTS)}")
    shared = Path(args.data) if args.data else None
    paths = {}
    if "imm" in asked:
        paths["imm"] = build_graph(args.graph, {**GRAPHS, **EXTRA_GRAPHS}[args.graph], shared, Path(args.cache), log)
    if "sds" in asked:
        paths["sds"] = sds_graph_path(args.sds_graph, shared, Path(args.cache), log, {**SDS_GRAPHS, **SDS_EXTRA})
    if "difuser" in asked:
        paths["difuser"] = difuser_graph_path(args.difuser_graph, args.difuser_setting, Path(args.cache))
    graphs = {family: load_graph(path) for family, path in paths.items()}
    parts, failures, hint = {}, {}, {}
    for ranks in [int(r) for r in args.ranks.split(",") if r.strip()]:
        part = out / f"bench_dist-n{ranks}.json"
        part.unlink(missing_ok=True)
        if time.time() >= deadline:
            failures[ranks] = "budget spent before it started"
            continue
        why = launch(args, ranks, paths, part, deadline, out, hint)
        if part.exists():
            parts[ranks] = json.loads(part.read_text())
            for cell in parts[ranks]["cells"]:
                if "wall_seconds" in cell:
                    family = family_of(cell["solver"])
                    hint[family] = max(hint.get(family, 0.0), cell["wall_seconds"])
        if why:
            failures[ranks] = why
            log(f"{ranks} rank(s): {why}")
    rep = merge(args, parts, failures, graphs)
    rep["total_seconds"] = time.time() - started
    write_json(out / "bench_dist.json", rep)
    with atomic_path(out / "bench_dist.md") as tmp:
        tmp.write_text(markdown(rep))
    log(f"wrote {out / 'bench_dist.json'} and {out / 'bench_dist.md'} ({rep['total_seconds']:.0f}s)")
    return 0 if not failures else 1


def main(argv=None) -> int:
    args = arguments(argv)
    return worker(args) if args.worker else driver(args)


if __name__ == "__main__":
    sys.exit(main())
