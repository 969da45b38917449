"""gpucore verify: check a solver result with the independent oracle (exit 1 when it fails)."""

import json
from pathlib import Path

from gpucore.backend import get_backend, set_cpu_threads
from gpucore.commands.common import (
    add_backend_option,
    add_graph_option,
    add_output_option,
    add_seed_option,
    add_threads_option,
    emit_json,
)
from gpucore.errors import GpucoreError
from gpucore.graph import load_graph

HELP = "verify a result: AMCSS -> replay every realization; IM -> Monte-Carlo spread with CI (exit 1 if it fails)"


def add_arguments(parser) -> None:
    parser.add_argument("result", help="result JSON of gpucore amcss / gpucore im")
    add_graph_option(parser, "the .gcsr graph the result was computed on")
    parser.add_argument("--runs", type=int, default=10000, help="IM: Monte-Carlo runs (default 10000)")
    add_seed_option(parser, "IM: seed of the Monte-Carlo worlds")
    parser.add_argument("--tolerance", type=float, default=0.1,
                        help="IM: relative slack around the CI for the solver's estimate (default 0.1)")
    parser.add_argument("--confidence", type=float, default=0.95, help="IM: CI level (default 0.95)")
    add_backend_option(parser, "the oracle's Monte-Carlo")
    add_threads_option(parser)
    add_output_option(parser, "write the report here (default: standard output)")


def run(args) -> int:
    from gpucore.oracle.verify import verify_result

    set_cpu_threads(args.threads)
    path = Path(args.result)
    try:
        result = json.loads(path.read_text())
    except FileNotFoundError:
        raise GpucoreError(f"{path}: no such result file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GpucoreError(f"{path}: not a readable JSON result ({type(exc).__name__}: {exc})") from None
    if args.runs < 2:
        raise GpucoreError(f"--runs must be >= 2, got {args.runs}")
    graph = load_graph(args.graph)
    backend = get_backend(args.backend)
    report = verify_result(result, graph, str(path), runs=args.runs, seed=args.seed, backend=backend,
                           tolerance=args.tolerance, confidence=args.confidence, threads=args.threads)
    report["oracle"] = backend.device_info()
    emit_json(report, args.output)
    if args.output:
        verdict = "passed" if report["passed"] else f"FAILED: {report['failures'][0]}"
        print(f"gpucore verify {path.name} ({report['checked']}): {verdict}")
    return 0 if report["passed"] else 1
