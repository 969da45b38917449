"""A failing rank ends every rank: never a hang in a collective it will not reach.

``run_guarded(comm, fn)`` runs ``fn()`` (it returns an exit status). On a user error
(``GpucoreError``) the rank prints ``gpucore: error: [rank r] <message>`` and the exit status is 2;
on Ctrl-C, 130; on any other exception (a bug) its traceback and status 1. In a world of one rank
the message has no ``[rank r]`` and the status is returned (a bug's traceback propagates, as in
any Python program). With more ranks the failing rank calls ``comm.abort(status)`` (``MPI_Abort``):
the launcher ends every rank, including those waiting in a collective, and exits non-zero.
"""

from __future__ import annotations

import sys
import traceback
from typing import Callable

from gpucore.dist.comm import Communicator
from gpucore.errors import GpucoreError


def run_guarded(comm: Communicator, fn: Callable[[], int]) -> int:
    """``fn()``'s exit status; a failure is reported and, over several ranks, ends all of them."""
    where = f"[rank {comm.rank}] " if comm.size > 1 else ""
    try:
        return fn()
    except GpucoreError as exc:
        report, status = f"gpucore: error: {where}{exc}", 2
    except KeyboardInterrupt:
        report, status = f"gpucore: {where}interrupted", 130
    except Exception as exc:
        if comm.size == 1:
            raise
        report = f"{traceback.format_exc()}gpucore: error: {where}internal error: {type(exc).__name__}: {exc}"
        status = 1
    # one write: the launcher then forwards the whole report before it ends the ranks
    sys.stderr.write(report + "\n")
    sys.stderr.flush()
    if comm.size > 1:
        comm.abort(status)
    return status
