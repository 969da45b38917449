"""gpucore generate: a deterministic synthetic graph as an edge list or directly as .gcsr."""

import tempfile
from pathlib import Path

from gpucore.backend import set_cpu_threads
from gpucore.commands.common import (
    add_output_option,
    add_scheme_options,
    add_seed_option,
    add_threads_option,
    emit_json,
)
from gpucore.errors import GpucoreError
from gpucore.graph.generators import GENERATORS, generate, write_edge_list
from gpucore.graph.preprocess import preprocess

HELP = "generate an R-MAT or preferential-attachment graph (.txt/.txt.gz edge list, or .gcsr)"


def _abcd(text):
    try:
        values = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise GpucoreError(f"--abcd {text!r}: expected four comma-separated numbers") from None
    if len(values) != 4:
        raise GpucoreError(f"--abcd {text!r}: expected four comma-separated numbers")
    return values


def add_arguments(parser) -> None:
    parser.add_argument("kind", choices=GENERATORS, help="rmat (R-MAT/Kronecker) or pa (preferential attachment)")
    parser.add_argument("--nodes", type=int, required=True, help="number of vertices (id space)")
    parser.add_argument("--edges", type=int, required=True, help="number of arcs to draw")
    parser.add_argument("--reciprocity", type=float, default=0.3, help="pa: probability of a back-link (0.3)")
    parser.add_argument("--abcd", default="0.57,0.19,0.19,0.05", help="rmat: quadrant probabilities")
    add_output_option(parser, "output: .txt, .txt.gz (edge list) or .gcsr", required=True)
    add_scheme_options(parser)
    add_seed_option(parser, "seed of the graph and of its hash-drawn weights and costs")
    add_threads_option(parser)


def run(args) -> int:
    set_cpu_threads(args.threads)
    src, dst = generate(args.kind, args.nodes, args.edges, seed=args.seed, reciprocity=args.reciprocity,
                        abcd=_abcd(args.abcd))
    out = Path(args.output)
    comment = f"gpucore generate {args.kind} --nodes {args.nodes} --edges {args.edges} --seed {args.seed}"
    if out.suffix != ".gcsr":
        write_edge_list(out, src, dst, comment)
        emit_json({"output": str(out), "kind": args.kind, "arcs": int(src.size)})
        return 0
    with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None) as tmp:
        text = Path(tmp) / f"{out.stem}.txt"
        write_edge_list(text, src, dst, comment)
        del src, dst
        stats = preprocess(text, out, undirected=False, weights=args.weights, cost=args.cost, seed=args.seed,
                           threads=args.threads)
    emit_json(stats)
    return 0
