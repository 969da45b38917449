"""gpucore preprocess: an edge list (SNAP or KONECT; plain, gz, bz2) to a .gcsr file + sidecar."""

from gpucore.backend import set_cpu_threads
from gpucore.commands.common import (
    add_output_option,
    add_scheme_options,
    add_seed_option,
    add_threads_option,
    emit_json,
)
from gpucore.graph.preprocess import preprocess

HELP = "turn a SNAP/KONECT edge list into a .gcsr binary graph (and its .json statistics)"


def add_arguments(parser) -> None:
    parser.add_argument("input", help="edge list file (.txt, .gz, .bz2, KONECT out.*)")
    add_output_option(parser, "output .gcsr path", required=True)
    direction = parser.add_mutually_exclusive_group()
    direction.add_argument("--undirected", dest="undirected", action="store_true", default=None,
                           help="store both arcs of every line")
    direction.add_argument("--directed", dest="undirected", action="store_false",
                           help="lines are arcs (default, unless a KONECT header says 'sym')")
    add_scheme_options(parser)
    add_seed_option(parser, "seed of the hash-drawn weights and costs")
    add_threads_option(parser)


def run(args) -> int:
    set_cpu_threads(args.threads)
    stats = preprocess(
        args.input,
        args.output,
        undirected=args.undirected,
        weights=args.weights,
        cost=args.cost,
        seed=args.seed,
        threads=args.threads,
    )
    emit_json(stats)
    return 0
