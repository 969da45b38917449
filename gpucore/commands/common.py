"""Small helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys

from gpucore.atomic import write_json
from gpucore.dist import current


def emit_json(obj, output=None) -> None:
    """Write ``obj`` to ``output`` atomically, or print it to standard output; over several MPI
    ranks, rank 0 alone does (the others hold the same result and write nothing)."""
    if not current().is_root:
        return
    if output:
        write_json(output, obj)
    else:
        json.dump(obj, sys.stdout, indent=2)
        sys.stdout.write("\n")


def add_graph_options(parser) -> None:
    """--weights / --cost / --seed / --undirected, as taken by preprocess and generate."""
    parser.add_argument(
        "--weights",
        default="wc",
        help="edge probabilities: wc | const:P | trivalency | uniform:A,B | normal:M,S (default wc)",
    )
    parser.add_argument(
        "--cost",
        default="degree",
        help="seed costs: degree[:C0,ALPHA] (c0 + alpha*outdeg, default 0.01,0.01) | const:C | uniform:A,B | file:PATH",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the hash-drawn weights and costs (default 0)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
