"""What the CLI commands share: the option groups, their parsers, and the JSON output.

Every command takes its common options from here, so one concept has one flag, one parser and one
message in every command:

========================  ==========================================  ==============================
group                     flags                                       commands
========================  ==========================================  ==============================
``add_graph_option``      ``--graph PATH`` (a ``.gcsr`` file)         amcss, im, verify
``add_scheme_options``    ``--weights``, ``--cost``                   preprocess, generate
``add_model_option``      ``--model IC|LT`` (any case)                amcss, im
``add_backend_option``    ``--backend auto|cpu|cuda``                 amcss, im, verify
``add_seed_option``       ``--seed S`` (a 64-bit word)                every command that draws
``add_threads_option``    ``--threads N`` (N >= 1; default all)       every command that computes
``add_memory_option``     ``--memory-budget SIZE`` (``parse_size``)   amcss, im
``add_sampler_options``   ``--sampler`` and the fused sampler's       im
                          ``--batch-width``, ``--order``,
                          ``--[no-]sorted-sources``, ``--tail``
                          (``sampler_options(args)``)
``add_output_option``     ``-o/--output PATH``                        every command that writes
========================  ==========================================  ==============================

The value parsers raise ``GpucoreError`` (not argparse's two-line usage error): ``gpucore.cli``
parses inside its error handler, so a bad value is one ``gpucore: error: --flag ...`` line, exit 2.
An output is checked before anything is computed: ``parse_output`` refuses a place that cannot be
written (a folder, a path under a file, no permission), and ``check_outputs`` (run by ``gpucore.cli``
on the parsed arguments) an output that is one of the command's inputs (``INPUT_ARGS``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from gpucore.atomic import why_unwritable, write_json
from gpucore.backend import BACKENDS
from gpucore.dist import current
from gpucore.errors import GpucoreError

MODELS = ("IC", "LT")
_U64 = (1 << 64) - 1
#: size suffixes of ``parse_size`` (case-insensitive): binary for K/M/G/T and KiB..., decimal for KB...
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 10**3, "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
          "g": 1 << 30, "gib": 1 << 30, "gb": 10**9, "t": 1 << 40, "tib": 1 << 40, "tb": 10**12}


# ---- value parsers (argparse ``type=`` callables) ------------------------------------------------


def parse_size(text: str, flag: str = "--memory-budget") -> int:
    """A positive byte count: '8GiB', '500M' (binary), '2GB' (decimal), '1000000' -> bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if not match or match.group(2).lower() not in _UNITS:
        raise GpucoreError(f"{flag} {text!r}: expected a size such as 8GiB, 500M or 1000000")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value <= 0:
        raise GpucoreError(f"{flag} {text!r}: must be positive")
    return value


def parse_model(text: str) -> str:
    """'ic' / 'IC' -> 'IC'; anything but IC or LT is refused."""
    model = str(text).upper()
    if model not in MODELS:
        raise GpucoreError(f"--model {text!r}: choose IC or LT")
    return model


def parse_backend(text: str) -> str:
    if text not in BACKENDS:
        raise GpucoreError(f"--backend {text!r}: choose {', '.join(BACKENDS)}")
    return text


def parse_threads(text: str) -> int:
    try:
        threads = int(text)
    except ValueError:
        raise GpucoreError(f"--threads {text!r}: expected a whole number of CPU threads") from None
    if threads < 1:
        raise GpucoreError(f"--threads {threads}: must be >= 1")
    return threads


def parse_batch_width(text: str) -> int:
    """A whole number of traversals per batch (the fused sampler says which widths it supports)."""
    try:
        return int(text)
    except ValueError:
        raise GpucoreError(f"--batch-width {text!r}: expected a whole number of traversals (32, 64, 128 or 256)") from None


def _seed_parser(flag: str):
    def parse_seed(text: str) -> int:
        try:
            seed = int(text)
        except ValueError:
            raise GpucoreError(f"{flag} {text!r}: expected an integer in [0, 2^64)") from None
        if not 0 <= seed <= _U64:
            raise GpucoreError(f"{flag} {seed}: must lie in [0, 2^64)")
        return seed

    return parse_seed


def parse_output(text: str) -> str:
    """An output path ``atomic_path`` can write: not a folder or a device, in a folder that exists or
    can be made, where a file can be created."""
    if not str(text).strip():
        raise GpucoreError("-o/--output: empty path")
    problem = why_unwritable(text)
    if problem:
        raise GpucoreError(f"-o {text}: {problem}")
    return text


#: argument names (``args.<name>``) of the commands' input files: no output may overwrite one
INPUT_ARGS = ("input", "graph", "result")


def written_files(output) -> list[Path]:
    """The files a command writes for ``-o output``: a ``.gcsr`` comes with its sidecar ``.gcsr.json``."""
    out = Path(output)
    return [out, out.with_name(out.name + ".json")] if out.suffix == ".gcsr" else [out]


def check_outputs(args) -> None:
    """Refuse an ``-o`` that would overwrite one of the command's own inputs (e.g.
    ``gpucore preprocess g.txt -o g.txt``): the input would be lost, or read while it is replaced."""
    output = getattr(args, "output", None)
    if not output:
        return
    for name in INPUT_ARGS:
        source = getattr(args, name, None)
        if not source:
            continue
        for target in written_files(output):
            if _same_file(target, Path(source)):
                flag = " (--graph)" if name == "graph" else ""
                raise GpucoreError(f"-o {output}: would overwrite the input {source}{flag}; choose another output")


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


# ---- option groups -----------------------------------------------------------------------------


def add_graph_option(parser, help: str = ".gcsr graph (gpucore preprocess / generate)") -> None:
    parser.add_argument("--graph", required=True, help=help)


def add_scheme_options(parser) -> None:
    """--weights / --cost: the edge-probability and seed-cost schemes written into a .gcsr."""
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


def add_model_option(parser) -> None:
    parser.add_argument("--model", default="IC", type=parse_model, help="diffusion model: IC or LT (default IC)")


def add_backend_option(parser, what: str = "the solver") -> None:
    parser.add_argument("--backend", default="auto", type=parse_backend, metavar="{auto,cpu,cuda}",
                        help=f"where {what} runs: auto (cuda when CuPy sees a GPU), cpu or cuda (default auto)")


def add_seed_option(parser, help: str, flag: str = "--seed", default: int = 0) -> None:
    parser.add_argument(flag, type=_seed_parser(flag), default=default, help=f"{help} (default {default})")


def add_threads_option(parser) -> None:
    parser.add_argument("--threads", type=parse_threads, default=None, help="CPU threads (default: all cores)")


def add_memory_option(parser, what: str) -> None:
    """--memory-budget SIZE (bytes after ``parse_size``; None: the command's default share of free memory)."""
    parser.add_argument("--memory-budget", type=parse_size, default=None, metavar="SIZE",
                        help=f"bytes {what} may use, e.g. 8GiB or 500M (default: most of the free device memory / RAM)")


#: the sampler options of ``add_sampler_options``: (flag, key of the sampler's options) per sampler taking them
SAMPLER_FLAGS = {
    "fused": (("--batch-width", "batch_width"), ("--order", "order"), ("--[no-]sorted-sources", "sorted_sources"),
              ("--tail", "tail"), ("--evict", "evict")),
}


def add_sampler_options(parser) -> None:
    """--sampler NAME and the options of the samplers that take some (None when not given: the
    sampler's defaults apply). The samplers check the values (one line each); ``sampler_options``
    collects the given ones and refuses those the chosen sampler does not take."""
    parser.add_argument("--sampler", default="auto", metavar="{auto,gim,fused}",
                        help="RR-set sampler: gim (gIM's, one traversal per warp), fused (FuseIM: many traversals "
                             "share one frontier of bit masks) or auto (default): a probe of up to 512 throw-away "
                             "sets measures the elements per traversal, and IC runs on a GPU where the mean "
                             "reaches 64 use fused at width 256, the others gim (H100 and H200 "
                             "measurements, docs/im.md). Both draw the same sets: the choice changes time, never "
                             "the answer. The result records it (sampler, sampler_choice)")
    group = parser.add_argument_group("fused sampler (--sampler fused; docs/fuseim.md)")
    group.add_argument("--batch-width", type=parse_batch_width, default=None, metavar="B",
                       help="traversals per batch: 32 | 64 | 128 | 256 (default 64)")
    group.add_argument("--order", default=None, help="vertex order of the traversals: none | rcm | community "
                                                     "(default none)")
    group.add_argument("--sorted-sources", action=argparse.BooleanOptionalAction, default=None,
                       help="draw a piece's roots first and batch them in sorted order (default: sorted)")
    group.add_argument("--tail", default=None, help="batch tail: none (reload when all ended) | refill (reload "
                                                    "ended slots once a quarter ended) (default refill)")
    group.add_argument("--evict", default=None, help="CUDA, IC: hand traversals that run long in their batch to a "
                                                     "team pass, a block per traversal: auto (where traversals are "
                                                     "expected below n / 64 elements) | never | always (default auto; "
                                                     "the CPU sampler evicts nothing)")


def sampler_options(args) -> dict:
    """The sampler options given on the command line, as the sampler factory's keyword arguments; an
    option of another sampler than ``args.sampler`` is refused (one line)."""
    options = {}
    for sampler, flags in SAMPLER_FLAGS.items():
        for flag, key in flags:
            value = getattr(args, key)
            if value is None:
                continue
            if args.sampler != sampler:
                raise GpucoreError(f"{flag}: an option of --sampler {sampler}, not of --sampler {args.sampler}")
            options[key] = value
    return options


def add_output_option(parser, help: str = "result JSON (default: standard output)", required: bool = False) -> None:
    parser.add_argument("-o", "--output", type=parse_output, required=required, default=None, help=help)


# ---- output ------------------------------------------------------------------------------------


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
