"""gpucore im: k seeds maximising expected spread (IMM with gIM's sampler), or MRIM with --rounds T."""

from __future__ import annotations

import re

from gpucore.backend import BACKENDS, set_cpu_threads
from gpucore.commands.common import emit_json
from gpucore.errors import GpucoreError
from gpucore.im.sketch.hashing import DEFAULT_SAMPLING, SAMPLINGS

HELP = ("influence maximization: IMM (gIM sampler + GPU greedy), multi-round IM (--rounds T) or DiFuseR "
        "(--algorithm difuser); JSON result")

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6, "mib": 1 << 20,
          "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40, "tb": 10**12, "tib": 1 << 40}


def parse_size(text: str | None) -> int | None:
    """'2GiB', '500MB', '123' -> bytes (None stays None)."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise GpucoreError(f"--memory-limit {text!r}: expected a size such as 512MiB, 8GB or 1073741824")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def add_arguments(parser) -> None:
    parser.add_argument("--graph", required=True, help=".gcsr graph (gpucore preprocess)")
    parser.add_argument("--algorithm", default="imm", choices=("imm", "difuser"),
                        help="imm (default) or difuser (sketch-based greedy, IC only; docs/difuser.md)")
    parser.add_argument("--k", type=int, required=True, help="seeds (per round with --rounds)")
    parser.add_argument("--eps", type=float, default=0.5, help="approximation parameter epsilon in (0, 1) (0.5)")
    parser.add_argument("--model", default="IC", type=str.upper, choices=("IC", "LT"), help="diffusion model (IC)")
    parser.add_argument("--rounds", type=int, default=1, help="T > 1: multi-round IM (CR-NAIMM), k seeds per round")
    parser.add_argument("--ell", type=float, default=1.0, help="IMM's ell: success probability 1 - 1/n^ell (1)")
    parser.add_argument("--seed", type=int, default=0, help="run seed of the keyed sampling (0)")
    parser.add_argument("--backend", default="auto", choices=BACKENDS, help="auto | cpu | cuda (auto)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--memory-limit", default=None,
                        help="bytes the RR sets may take (e.g. 8GiB; default: free device memory / RAM)")
    parser.add_argument("--registers", type=int, default=1024,
                        help="difuser: worlds = 8-bit registers per vertex, a multiple of 32 (1024)")
    parser.add_argument("--rebuild-threshold", type=float, default=0.01,
                        help="difuser: rebuild the sketches when the spread grew by more than this since the "
                             "last rebuild, in [0, 1) (0.01)")
    parser.add_argument("--refine", type=int, default=32, metavar="L",
                        help="difuser: pick each seed among the L best sketch scores by exact gains on the worlds; "
                             "0 = the sketch score alone, as the paper (32)")
    parser.add_argument("--sampling", default=DEFAULT_SAMPLING, choices=SAMPLINGS,
                        help=f"difuser: xor (the paper's hash-xor worlds) or keyed (independent coins; "
                             f"docs/difuser.md says why it is the default) ({DEFAULT_SAMPLING})")
    parser.add_argument("--verify", type=int, default=0, metavar="RUNS",
                        help="also estimate the seeds' spread with the independent oracle (RUNS Monte-Carlo runs)")
    parser.add_argument("--verify-seed", type=int, default=1, help="seed of the oracle's runs (1)")
    parser.add_argument("-o", "--output", default=None, help="result JSON (default: standard output)")


def run(args) -> int:
    from gpucore.graph import load_graph
    from gpucore.im import imm

    set_cpu_threads(args.threads)
    if args.verify < 0:
        raise GpucoreError(f"--verify {args.verify}: must be >= 0 Monte-Carlo runs")
    graph = load_graph(args.graph)
    if args.algorithm == "difuser":
        result = run_difuser(graph, args)
    else:
        result = imm(
            graph,
            args.k,
            args.eps,
            args.model,
            rounds=args.rounds,
            ell=args.ell,
            seed=args.seed,
            backend=args.backend,
            memory_limit=parse_size(args.memory_limit),
        )
    if args.verify:
        from gpucore.im.verify import verify_result

        result["verification"] = verify_result(graph, result, runs=args.verify, seed=args.verify_seed)
    emit_json(result, args.output)
    return 0


def run_difuser(graph, args) -> dict:
    """``--algorithm difuser``: DiFuseR (gpucore.im.sketch); IC and one round only, --eps is not used."""
    from gpucore.im.sketch import difuser

    if args.model != "IC":
        raise GpucoreError(f"--model {args.model}: DiFuseR runs the IC model only")
    if args.rounds != 1:
        raise GpucoreError(f"--rounds {args.rounds}: DiFuseR selects one round of seeds")
    return difuser(graph, args.k, registers=args.registers, rebuild_threshold=args.rebuild_threshold,
                   sampling=args.sampling, refine=args.refine, seed=args.seed, backend=args.backend,
                   memory_limit=parse_size(args.memory_limit))
