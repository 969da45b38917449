"""A failing rank ends every rank: never a hang in a collective it will not reach.

``same_everywhere(comm, solve, facts)`` comes first in a distributed solve: ranks called with
different arguments would fail or branch on some ranks only; instead every rank raises the same
``GpucoreError`` naming what differs (one all-gather).

``run_guarded(comm, fn)`` runs ``fn()`` (it returns an exit status). On a user error
(``GpucoreError``) the rank prints ``gpucore: error: [rank r] <message>`` and the exit status is 2;
on Ctrl-C, 130; on any other exception (a bug) its traceback and status 1. In a world of one rank
the message has no ``[rank r]`` and the status is returned (a bug's traceback propagates, as in
any Python program). With more ranks the failing rank calls ``comm.abort(status)`` (``MPI_Abort``):
the launcher ends every rank, including those waiting in a collective, and exits non-zero.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Callable

from gpucore.dist.comm import Communicator
from gpucore.errors import GpucoreError


#: seconds a failing rank waits between writing its report and ending every rank
ABORT_GRACE = 0.5


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
        time.sleep(ABORT_GRACE)  # the launcher forwards the report before the abort ends its streams
        comm.abort(status)
    return status


def same_everywhere(comm: Communicator, solve: str, facts: dict) -> None:
    """Raise the same GpucoreError on every rank when some of ``facts`` (JSON-able values, compared
    as sorted JSON) differ between ranks (collective)."""
    everyone = comm.allgather({key: json.dumps(value, sort_keys=True, default=repr) for key, value in facts.items()})
    differ = [key for key in facts if any(other[key] != everyone[0][key] for other in everyone)]
    if differ:
        raise GpucoreError(f"the {comm.size} ranks of this {solve} run disagree on {', '.join(differ)}: every rank "
                           "must run the same solve")
