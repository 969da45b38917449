"""gpucore info: print the statistics of a .gcsr file as JSON."""

from gpucore.commands.common import emit_json
from gpucore.graph.gcsr import read_header
from gpucore.graph.model import load_graph

HELP = "print the statistics of a .gcsr graph as JSON (--verify re-checks its content digest)"


def add_arguments(parser) -> None:
    parser.add_argument("graph", help=".gcsr file")
    parser.add_argument("--verify", action="store_true", help="recompute the SHA-256 of the arrays")


def run(args) -> int:
    header = read_header(args.graph)
    if args.verify:
        load_graph(args.graph, verify=True)
    info = dict(header["meta"])
    info.update(
        path=str(args.graph),
        format_version=header["version"],
        n=header["n"],
        m=header["m"],
        sha256=header["sha256"],
        verified=bool(args.verify),
        arrays={name: {"dtype": dt.str, "length": length} for name, (dt, _off, length) in header["arrays"].items()},
    )
    emit_json(info)
    return 0
