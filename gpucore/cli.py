"""The ``gpucore`` command: one subcommand per module in ``gpucore/commands``.

Each command module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Errors that users can fix (``GpucoreError``) print one line, ``gpucore: error: ...``, and exit 2.

Under ``mpiexec -n N`` or ``srun`` every rank runs the command (``gpucore.dist``): rank 0 alone
prints and writes results (the other ranks' standard output goes nowhere and their progress bars
are off), and a rank that fails prints ``gpucore: error: [rank r] ...`` and ends every rank.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys

import gpucore
from gpucore import dist
from gpucore.commands.common import check_outputs
from gpucore.errors import GpucoreError

#: subcommand -> module under gpucore.commands (imported only when that command runs)
COMMANDS = {
    "preprocess": "preprocess",
    "info": "info",
    "generate": "generate",
    "im": "im",
    "amcss": "amcss",
    "sds": "sds",
    "verify": "verify",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpucore", description="GPU influence-analysis solvers and their oracle.")
    parser.add_argument("--version", action="version", version=f"gpucore {gpucore.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(f"gpucore.commands.{module_name}")
        cmd = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def _quiet_unless_root(comm) -> None:
    """Ranks other than 0 print nothing on standard output and show no progress bars."""
    if not comm.is_root:
        sys.stdout = open(os.devnull, "w")
        os.environ["GPUCORE_PROGRESS"] = "0"


def _run(args) -> int:
    try:
        return int(args._run(args) or 0)
    except BrokenPipeError:  # e.g. `gpucore info g.gcsr | head`
        sys.stdout = open(os.devnull, "w")
        return 141


def main(argv=None) -> int:
    parser = build_parser()
    try:  # the option parsers of gpucore.commands.common raise GpucoreError: one line, exit 2
        args = parser.parse_args(argv)
        check_outputs(args)
        comm = dist.init()
    except GpucoreError as exc:
        print(f"gpucore: error: {exc}", file=sys.stderr)
        return 2
    _quiet_unless_root(comm)
    status = dist.run_guarded(comm, lambda: _run(args))
    if argv is None:  # the program itself (not a test calling main): it is about to exit
        # Python's teardown would collect every object of Numba and LLVM, about 0.7 s; frozen objects are
        # left to the operating system, so the program ends as soon as its work does (and after a Ctrl-C)
        gc.freeze()
    return status


if __name__ == "__main__":
    sys.exit(main())
