"""gpucore im: k seeds maximising expected spread (IMM with the gIM or the fused RR-set sampler), or MRIM with --rounds T."""

from __future__ import annotations

from gpucore.backend import set_cpu_threads
from gpucore.commands.common import (
    add_backend_option,
    add_graph_option,
    add_memory_option,
    add_model_option,
    add_output_option,
    add_sampler_options,
    add_seed_option,
    add_threads_option,
    emit_json,
    sampler_options,
)
from gpucore.errors import GpucoreError
from gpucore.im.sketch.driver import MAPPINGS
from gpucore.im.sketch.hashing import DEFAULT_SAMPLING, SAMPLINGS
from gpucore.im.sketch.split import DEFAULT_SPLIT, SPLITS

HELP = ("influence maximization: IMM (gIM or fused sampler, picked by a probe; GPU greedy), multi-round IM "
        "(--rounds T) or DiFuseR (--algorithm difuser); JSON result; over several GPUs with mpiexec -n N "
        "(the same answer)")


def add_arguments(parser) -> None:
    add_graph_option(parser)
    parser.add_argument("--algorithm", default="imm", choices=("imm", "difuser"),
                        help="imm (default) or difuser (sketch-based greedy, IC only; docs/difuser.md)")
    parser.add_argument("--k", type=int, required=True, help="seeds (per round with --rounds)")
    parser.add_argument("--eps", type=float, default=0.5,
                        help="approximation parameter epsilon in (0, 1) (0.5); RR sets grow as 1/eps^2. At 0.5 the "
                             "seeds reached 0.968-0.993 of the best reference spread in review (inherent to IMM at "
                             "that eps; the IM papers use 0.05-0.5): use 0.1 or 0.05 for closer seeds")
    add_model_option(parser)
    parser.add_argument("--rounds", type=int, default=1, help="T > 1: multi-round IM (CR-NAIMM), k seeds per round")
    parser.add_argument("--ell", type=float, default=1.0, help="IMM's ell: success probability 1 - 1/n^ell (1)")
    add_seed_option(parser, "run seed of the keyed sampling")
    add_backend_option(parser)
    add_sampler_options(parser)
    add_threads_option(parser)
    add_memory_option(parser, "the RR sets and the selection, or DiFuseR's registers (per rank under mpiexec)")
    group = parser.add_argument_group("DiFuseR (--algorithm difuser; docs/difuser.md)")
    group.add_argument("--registers", type=int, default=1024,
                       help="worlds = 8-bit registers per vertex, a multiple of 32 (1024)")
    group.add_argument("--rebuild-threshold", type=float, default=0.01,
                       help="rebuild the sketches when the spread grew by more than this since the last rebuild, "
                            "in [0, 1) (0.01)")
    group.add_argument("--refine", type=int, default=32, metavar="L",
                       help="pick each seed among the L best sketch scores by exact gains on the worlds; 0 = the "
                            "sketch score alone, as the paper (32)")
    group.add_argument("--sampling", default=DEFAULT_SAMPLING, choices=SAMPLINGS,
                       help=f"xor (the paper's hash-xor worlds) or keyed (independent coins; docs/difuser.md says "
                            f"why it is the default) ({DEFAULT_SAMPLING})")
    group.add_argument("--mapping", default="warp", choices=MAPPINGS,
                       help="layout of the CUDA kernels' work: warp (a warp per vertex and 32 worlds, work lists; "
                            "ours) or block (a block per vertex, the paper's); the same answer (warp)")
    group.add_argument("--world-split", default=DEFAULT_SPLIT, choices=SPLITS,
                       help=f"how the worlds are dealt to the ranks under mpiexec: fasst (by sorted world numbers: "
                            f"smaller local graphs) or naive (in draw order); the answer is the same "
                            f"({DEFAULT_SPLIT})")
    parser.add_argument("--verify", type=int, default=0, metavar="RUNS",
                        help="also estimate the seeds' spread with the independent oracle (RUNS Monte-Carlo runs)")
    add_seed_option(parser, "seed of the oracle's Monte-Carlo runs", flag="--verify-seed", default=1)
    add_output_option(parser)


def run(args) -> int:
    from gpucore.graph import load_graph
    from gpucore.im import imm

    set_cpu_threads(args.threads)
    if args.verify < 0:
        raise GpucoreError(f"--verify {args.verify}: must be >= 0 Monte-Carlo runs")
    options = sampler_options(args)
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
            memory_limit=args.memory_budget,
            sampler=args.sampler,
            sampler_options=options,
        )
    if args.verify:
        from gpucore.oracle.verify import verify_result

        result["verification"] = verify_result(result, graph, str(args.output or "result"), runs=args.verify,
                                               seed=args.verify_seed, backend=args.backend, threads=args.threads)
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
                   sampling=args.sampling, refine=args.refine, mapping=args.mapping, world_split=args.world_split,
                   seed=args.seed,
                   backend=args.backend, memory_limit=args.memory_budget)
