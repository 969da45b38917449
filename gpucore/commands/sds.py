"""gpucore sds: the top-t vertices by structural diversity (comp, core or truss contexts)."""

from __future__ import annotations

import json
import sys

from gpucore.commands.common import (
    add_backend_option,
    add_graph_option,
    add_memory_option,
    add_output_option,
    add_threads_option,
    emit_json,
)

HELP = ("structural diversity search: top-t vertices by social contexts in their ego-network (comp/core/truss); "
        "over several GPUs with mpiexec -n N (the same answer)")


def add_arguments(parser) -> None:
    add_graph_option(parser, ".gcsr graph (a directed graph is symmetrised)")
    parser.add_argument("--model", required=True, help="comp | core | truss (components of >= k vertices, "
                                                        "maximal connected k-cores, maximal connected k-trusses)")
    parser.add_argument("--k", type=int, default=4, help="the model's threshold k >= 1 (default 4)")
    parser.add_argument("--t", type=int, default=100, help="number of vertices to return, 1..n (default 100)")
    parser.add_argument("--bound", default="support", choices=("support", "degree"),
                        help="upper bound that prunes vertices: support (ego degrees, default) or degree "
                             "(the paper's |N(v)| / k)")
    add_backend_option(parser)
    add_threads_option(parser)
    add_memory_option(parser, "the graph, supports and ego-network buffers")
    parser.add_argument("--batch", type=int, default=None,
                        help="ego-networks in the first batch of a one-rank search (default: enough to fill the "
                             "device); later batches double")
    group = parser.add_argument_group("several ranks (mpiexec -n N: one GPU each)")
    group.add_argument("--stealing", default="dynamic", choices=("dynamic", "exhausted", "none"),
                       help="work stealing when a rank runs out: dynamic (half of the heaviest rank's remaining "
                            "work, default), exhausted (all of it), none (the static packing)")
    group.add_argument("--cost-model", default="fit", choices=("fit", "count"),
                       help="estimated cost of a vertex for the packing: fit (timed on a sample, least squares "
                            "on its ego-network's size, default) or count (every vertex alike)")
    group.add_argument("--cost-sample", type=float, default=0.01,
                       help="share of the candidates timed for the cost model, per degree stratum (0.01)")
    group.add_argument("--chunk-seconds", type=float, default=0.1,
                       help="largest chunk of work a rank claims at a time, in estimated seconds (0.1)")
    add_output_option(parser)


def run(args) -> int:
    from gpucore.graph import load_graph
    from gpucore.sds import run_sds

    graph = load_graph(args.graph)
    result = run_sds(graph, args.model, args.k, args.t, backend=args.backend, threads=args.threads,
                     memory_budget=args.memory_budget, bound=args.bound, first_batch=args.batch,
                     stealing=args.stealing, cost_model=args.cost_model, cost_sample=args.cost_sample,
                     chunk_seconds=args.chunk_seconds)
    emit_json(result, args.output)
    if args.output:
        summary = {key: result[key] for key in ("model", "k", "t", "t_score", "ties_at_t", "scored", "pruned",
                                                "seconds", "ranks")}
        summary.update(output=str(args.output), backend=result["backend"]["backend"])
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0
