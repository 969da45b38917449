"""gpucore amcss: adaptive minimum-cost seed selection (MERIT; --no-update: PASTI / ASTI)."""

from __future__ import annotations

import json
import sys

from gpucore.amcss.driver import POLLUTION_LIMIT
from gpucore.commands.common import (
    add_backend_option,
    add_graph_option,
    add_memory_option,
    add_model_option,
    add_output_option,
    add_seed_option,
    add_threads_option,
    emit_json,
)
from gpucore.errors import GpucoreError
from gpucore.graph.model import load_graph

HELP = "adaptive minimum-cost seed selection: MERIT (update) or PASTI/ASTI (--no-update), IC or LT"


def add_arguments(parser) -> None:
    add_graph_option(parser, ".gcsr graph (with edge probabilities and seed costs)")
    add_model_option(parser)
    parser.add_argument("--eta", type=int, required=True, help="number of users to activate (1..n)")
    parser.add_argument("--batch", type=int, default=4, help="seeds per round b (default 4)")
    parser.add_argument("--eps", type=float, default=0.5, help="estimation error epsilon in (0, 1) (default 0.5)")
    parser.add_argument("--realizations", type=int, default=1, help="world realizations to run (default 1)")
    add_seed_option(parser, "run seed: worlds and samples derive from it")
    parser.add_argument("--no-update", dest="update", action="store_false",
                        help="regenerate the mRR-sets every round (PASTI; ASTI with --threads 1)")
    parser.add_argument("--keep-all", dest="shrink", action="store_false",
                        help="MERIT: never drop sets when k_i grows (the paper's Algorithm 1; default: keep the "
                             "number of entries about constant, at least theta_0 sets)")
    parser.add_argument("--pollution-limit", type=float, default=POLLUTION_LIMIT, metavar="F",
                        help="MERIT: regenerate instead of updating a round whose sets are at least this fraction "
                             f"polluted (default {POLLUTION_LIMIT}; above 1: always update, the paper's Algorithm 1)")
    parser.add_argument("--paired", action="store_true",
                        help="MERIT: also run every round the way the rule did not choose (Update or regeneration) "
                             "from a snapshot, timed, and record both (rounds' 'paired'; docs/amcss.md)")
    add_threads_option(parser)
    add_backend_option(parser)
    add_memory_option(parser, "the mRR-set collection and its scratch")
    parser.add_argument("--segments", type=int, default=None, help="segments of the collection (default 8 x threads)")
    parser.add_argument("--beta", type=int, default=None,
                        help="CUDA backend: Update load-balancing groups, 32 x beta threads per block "
                             "(1..16; default: per round, 1 below 2,048 roots per set, doubling up to 8; the CPU ignores it)")
    add_output_option(parser)


def run(args) -> int:
    from gpucore.amcss import run_amcss

    if args.segments is not None and args.segments < 1:
        raise GpucoreError(f"--segments {args.segments}: must be >= 1")
    if not args.pollution_limit >= 0:
        raise GpucoreError(f"--pollution-limit {args.pollution_limit}: must be >= 0 (0: always regenerate, as "
                           "PASTI; above 1: always update)")
    graph = load_graph(args.graph)
    result = run_amcss(
        graph, model=args.model, eta=args.eta, batch=args.batch, eps=args.eps, realizations=args.realizations,
        seed=args.seed, update=args.update, threads=args.threads, backend=args.backend,
        memory_budget=args.memory_budget, segments=args.segments, shrink=args.shrink, beta=args.beta,
        pollution_limit=args.pollution_limit, paired=args.paired,
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
