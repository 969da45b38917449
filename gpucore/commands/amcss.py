"""gpucore amcss: adaptive minimum-cost seed selection (MERIT; --no-update: PASTI / ASTI)."""

from __future__ import annotations

import json
import re
import sys

from gpucore.amcss.driver import POLLUTION_LIMIT
from gpucore.commands.common import emit_json
from gpucore.errors import GpucoreError
from gpucore.graph.model import load_graph

HELP = "adaptive minimum-cost seed selection: MERIT (update) or PASTI/ASTI (--no-update), IC or LT"

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
          "g": 1024**3, "gb": 1000**3, "gib": 1024**3, "t": 1024**4, "tb": 1000**4, "tib": 1024**4}


def parse_size(text: str) -> int:
    """'4GiB', '500M', '123456' -> bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if not match or match.group(2).lower() not in _UNITS:
        raise GpucoreError(f"--memory-budget {text!r}: expected a size such as 8GiB, 500M or 1000000")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value <= 0:
        raise GpucoreError(f"--memory-budget {text!r}: must be positive")
    return value


def add_arguments(parser) -> None:
    parser.add_argument("--graph", required=True, help=".gcsr graph (with edge probabilities and seed costs)")
    parser.add_argument("--model", default="IC", help="diffusion model: IC or LT (default IC)")
    parser.add_argument("--eta", type=int, required=True, help="number of users to activate (1..n)")
    parser.add_argument("--batch", type=int, default=4, help="seeds per round b (default 4)")
    parser.add_argument("--eps", type=float, default=0.5, help="estimation error epsilon in (0, 1) (default 0.5)")
    parser.add_argument("--realizations", type=int, default=1, help="world realizations to run (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="run seed: worlds and samples derive from it (default 0)")
    parser.add_argument("--no-update", dest="update", action="store_false",
                        help="regenerate the mRR-sets every round (PASTI; ASTI with --threads 1)")
    parser.add_argument("--keep-all", dest="shrink", action="store_false",
                        help="MERIT: never drop sets when k_i grows (the paper's Algorithm 1; default: keep the "
                             "number of entries about constant, at least theta_0 sets)")
    parser.add_argument("--pollution-limit", type=float, default=POLLUTION_LIMIT, metavar="F",
                        help="MERIT: regenerate instead of updating a round whose sets are at least this fraction "
                             f"polluted (default {POLLUTION_LIMIT}; above 1: always update, the paper's Algorithm 1)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"), help="default auto")
    parser.add_argument("--memory-budget", default=None,
                        help="bytes the mRR-set collection and scratch may use, e.g. 8GiB (default 80%% of free memory)")
    parser.add_argument("--segments", type=int, default=None, help="segments of the collection (default 8 x threads)")
    parser.add_argument("--beta", type=int, default=None,
                        help="CUDA backend: Update load-balancing groups, 32 x beta threads per block "
                             "(1..16; default: per round, 1 below 2,048 roots per set, doubling up to 8; the CPU ignores it)")
    parser.add_argument("-o", "--output", default=None, help="result JSON (default: print it)")


def run(args) -> int:
    from gpucore.amcss import run_amcss

    model = str(args.model).upper()
    budget = parse_size(args.memory_budget) if args.memory_budget is not None else None
    if args.segments is not None and args.segments < 1:
        raise GpucoreError(f"--segments {args.segments}: must be >= 1")
    if not args.pollution_limit > 0:
        raise GpucoreError(f"--pollution-limit {args.pollution_limit}: must be > 0 (above 1: always update)")
    if args.threads is not None and args.threads < 1:
        raise GpucoreError(f"--threads {args.threads}: must be >= 1")
    graph = load_graph(args.graph)
    result = run_amcss(
        graph, model=model, eta=args.eta, batch=args.batch, eps=args.eps, realizations=args.realizations,
        seed=args.seed, update=args.update, threads=args.threads, backend=args.backend,
        memory_budget=budget, segments=args.segments, shrink=args.shrink, beta=args.beta,
        pollution_limit=args.pollution_limit,
    )
    if args.output:
        emit_json(result, args.output)
        summary = {"output": str(args.output), "algorithm": result["algorithm"], "backend": result["backend"],
                   **result["summary"]}
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        emit_json(result)
    return 0
