"""Several ranks, one answer: the communicator layer for multi-GPU and multi-node solves.

The rule (``docs/multigpu.md``): every random key is global (sample id, world id, run index), so
rank r owns a slice of the keys (``partition``) and collectives combine per-element integer counts;
the answer never depends on the number of ranks. One rank per GPU, started by ``mpiexec`` or
``srun``; NCCL for device buffers, MPI for host data.

- ``init()`` / ``current()``: this process's ``Communicator`` (``runtime``): ``SingleComm`` without a
  launcher (no MPI import), ``MPIComm`` (mpi4py) under one, ``NCCLComm`` when ranks have GPUs
- ``Communicator``: rank, size, barrier, bcast, bcast_array, allreduce, reduce, allgather,
  allgather_array, abort; point to point send, recv (``Received``), iprobe (contract in ``comm``)
- ``detect()`` / ``Launch``: the launcher's world from its environment variables (``launch``)
- ``partition``, ``pack_greedy``: key ranges and weighted packing (``partition``)
- ``greedy_max_cover``, ``LocalCover``, ``CoverResult``: distributed greedy max-cover (``cover``)
- ``run_guarded``: a failing rank ends every rank with its message; ``same_everywhere``: ranks with
  different arguments all stop with one message (``failure``)
- ``TimedComm``, ``NestedPhases``: collectives timed as a solve's ``communication`` phase (``timed``)
- ``WorkTable``: lists of weighted items claimed in chunks, with dynamic / exhausted / no work
  stealing (``stealing``); ``Service``: rank 0 answers every rank's requests to such a table from a
  thread, over point-to-point messages (``service``)
"""

from gpucore.dist.comm import Communicator, Received, SingleComm
from gpucore.dist.cover import CoverResult, LocalCover, greedy_max_cover
from gpucore.dist.failure import run_guarded, same_everywhere
from gpucore.dist.launch import Launch, detect
from gpucore.dist.partition import pack_greedy, partition
from gpucore.dist.runtime import current, init
from gpucore.dist.service import Service
from gpucore.dist.stealing import POLICIES, WorkTable
from gpucore.dist.timed import NestedPhases, TimedComm

__all__ = [
    "Communicator",
    "CoverResult",
    "Launch",
    "LocalCover",
    "NestedPhases",
    "POLICIES",
    "Received",
    "Service",
    "SingleComm",
    "TimedComm",
    "WorkTable",
    "current",
    "detect",
    "greedy_max_cover",
    "init",
    "pack_greedy",
    "partition",
    "run_guarded",
    "same_everywhere",
]
